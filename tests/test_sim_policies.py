"""Hand-checked scenarios for each policy, placement and mode of the simulator."""

from __future__ import annotations

import polars as pl
import pytest
from test_sim_helpers import by_id, jobs, spec

from dlcluster.errors import ConfigError, InputError
from dlcluster.sim import Policy, SimResult, simulate

# one 8-GPU node: A holds 6 GPUs over [0, 10); B (4 GPUs) cannot fit before 10; C (1 GPU) could
HOL = jobs(("A", "v", 6, 0, 10), ("B", "v", 4, 1, 5), ("C", "v", 1, 2, 1))


def starts(result: SimResult) -> dict[str, int]:
    return {k: v["start"] for k, v in by_id(result.jobs).items()}


def test_fifo_blocks_behind_the_head_job() -> None:
    r = simulate(HOL, spec(v=(8,)), "fifo")
    assert starts(r) == {"A": 0, "B": 10, "C": 10}
    row = by_id(r.jobs)["C"]
    assert (row["queue_delay"], row["jct"], row["end"]) == (8, 9, 11)


def test_sjf_lets_the_short_job_go_first() -> None:
    r = simulate(HOL, spec(v=(8,)), "sjf")
    assert starts(r) == {"A": 0, "B": 10, "C": 2}


def test_qssf_orders_by_estimate_times_gpus() -> None:
    # B: 4 GPUs × 100 s = 400 beats C: 1 GPU × 500 s = 500, so B stays ahead and blocks C
    est = pl.DataFrame({"job_id": ["A", "B", "C"], "estimate": [1.0, 100.0, 500.0]})
    assert starts(simulate(HOL, spec(v=(8,)), "qssf", estimates=est)) == {"A": 0, "B": 10, "C": 10}
    est = est.with_columns(pl.Series("estimate", [1.0, 100.0, 300.0]))
    assert starts(simulate(HOL, spec(v=(8,)), "qssf", estimates=est)) == {"A": 0, "B": 10, "C": 2}


def test_qssf_without_estimates_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="needs duration estimates"):
        simulate(HOL, spec(v=(8,)), "qssf")
    with pytest.raises(InputError, match="no duration estimate for job 'C'"):
        simulate(HOL, spec(v=(8,)), "qssf", estimates=pl.DataFrame({"job_id": ["A", "B"], "estimate": [1.0, 2.0]}))


def test_qssf_compat_ranks_same_second_arrivals_by_gpu_count() -> None:
    # both arrive at 0 on an empty node: the artifact puts the 2-GPU job first (no estimates yet)
    t = jobs(("B", "v", 2, 0, 100), ("C", "v", 8, 0, 10))
    est = pl.DataFrame({"job_id": ["B", "C"], "estimate": [1000.0, 1.0]})
    assert starts(simulate(t, spec(v=(8,)), "qssf", estimates=est, compat="helios-artifact")) == {"B": 0, "C": 100}
    assert starts(simulate(t, spec(v=(8,)), "qssf", estimates=est)) == {"C": 0, "B": 10}


def test_srtf_preempts_with_checkpoint_overhead() -> None:
    t = jobs(("A", "v", 1, 0, 100), ("B", "v", 1, 10, 5))
    r = by_id(simulate(t, spec(v=(1,)), "srtf").jobs)
    # A ran 10 s, is preempted at 10 (90 left + 7 s checkpoint), resumes at 15 when B ends
    assert (r["B"]["start"], r["B"]["end"]) == (10, 15)
    assert (r["A"]["start"], r["A"]["end"], r["A"]["preemptions"], r["A"]["queue_delay"]) == (0, 112, 1, 5)


@pytest.mark.parametrize("policy", ["srtf", "las"])
def test_a_zero_second_job_preempts_and_its_victims_pay_their_checkpoint(policy: str) -> None:
    # (docs/simulator.md: it ends in the second it starts, after the pass; jobs after it see its GPUs as taken)
    t = jobs(("R1", "v", 4, 0, 1000), ("R2", "v", 4, 0, 1000), ("Z", "v", 4, 100, 0), ("Y", "v", 4, 100, 10))
    r = by_id(simulate(t, spec(v=(8,)), policy).jobs)
    assert (r["Z"]["start"], r["Z"]["end"]) == (100, 100)
    assert (r["Y"]["start"], r["Y"]["end"]) == (100, 110)
    # both running jobs were preempted at 100 (30 s checkpoint each): one restarts at once on Z's GPUs, the other
    # when Y ends
    assert sorted((r[k]["preemptions"], r[k]["end"]) for k in ("R1", "R2")) == [(1, 1030), (1, 1040)]


def test_las_preempts_at_the_grid_point_after_a_start_even_before_a_checkpoint_is_made_up() -> None:
    # (docs/simulator.md: the quantum is a grid in absolute time) D ran 0-10 and C 10-15, each preempted by a newer
    # job; when A ends at 590, C (10 GPU-seconds) resumes before D (20); at 600, the grid point, C has 30 and D takes
    # the GPUs back: C ran 10 s and pays a 30 s checkpoint for them
    t = jobs(("D", "v", 2, 0, 200), ("C", "v", 2, 10, 200), ("A", "v", 2, 15, 575))
    r = simulate(t, spec(v=(2,)), "las")
    assert r.placements.sort("start").select("job_id", "start", "end").rows() == [
        ("D", 0, 10), ("C", 10, 15), ("A", 15, 590), ("C", 590, 600), ("D", 600, 820), ("C", 820, 1065)]
    assert by_id(r.jobs)["C"]["preemptions"] == 2


def test_srtf_compat_adds_the_artifacts_extra_second() -> None:
    t = jobs(("A", "v", 1, 0, 100), ("B", "v", 1, 10, 5))
    r = by_id(simulate(t, spec(v=(1,)), "srtf", compat="helios-artifact").jobs)
    # the artifact's identity: jct = queue + duration + preemptions × overhead + 1
    assert r["B"]["jct"] == 0 + 5 + 1
    assert r["A"]["jct"] == r["A"]["queue_delay"] + 100 + 7 + 1 == 114


def test_srtf_skips_a_job_that_does_not_fit() -> None:
    # nodes 4+4+2: X and Y (3 GPUs each) leave 1+1+2 free; Z (3 GPUs) fits no node and no running job is
    # worse than it (49 and 59 s left against its 65), so W (1 GPU) behind it starts at once; Z starts when X
    # frees node 0
    t = jobs(("X", "v", 3, 0, 50), ("Y", "v", 3, 0, 60), ("Z", "v", 3, 1, 65), ("W", "v", 1, 2, 200))
    s = starts(simulate(t, spec(v=(4, 4, 2)), "srtf"))
    assert (s["W"], s["Z"]) == (2, 50)


def test_consolidate_is_best_fit_and_never_splits_a_small_job() -> None:
    # node 0 has 8 free, node 1 has 3 free after P; Q (3 GPUs) goes to node 1 (best fit); R (6) must wait
    t = jobs(("P", "v", 5, 0, 100), ("Q", "v", 3, 1, 100), ("R", "v", 6, 2, 10))
    r = by_id(simulate(t, spec(v=(8, 8)), "fifo").jobs)
    assert r["R"]["start"] == 2 and r["Q"]["nodes_spanned"] == 1
    t = jobs(("P", "v", 5, 0, 100), ("P2", "v", 5, 0, 100), ("R", "v", 6, 2, 10))
    r = by_id(simulate(t, spec(v=(8, 8)), "fifo").jobs)
    assert r["R"]["start"] == 100  # 6 GPUs are free in all, but on two nodes


def test_multi_node_jobs_take_whole_nodes() -> None:
    # S leaves node 0 with 5 free; M (12 GPUs) takes node 1 whole plus 4 GPUs elsewhere
    t = jobs(("S", "v", 3, 0, 100), ("M", "v", 12, 1, 10), ("N", "v", 8, 2, 10))
    r = by_id(simulate(t, spec(v=(8, 8, 8)), "fifo").jobs)
    # default: the remainder best-fits node 0, so node 2 stays whole for N
    assert (r["M"]["start"], r["M"]["nodes_spanned"], r["N"]["start"]) == (1, 2, 2)
    # artifact: the remainder goes to the next most-free node (node 2), so N waits for M
    r = by_id(simulate(t, spec(v=(8, 8, 8)), "fifo", compat="helios-artifact").jobs)
    assert (r["M"]["start"], r["N"]["start"]) == (1, 11)


def test_oversized_job_is_counted_not_a_hang() -> None:
    t = jobs(("big", "v", 24, 0, 10), ("ok", "v", 8, 0, 10))
    r = simulate(t, spec(v=(8, 8)), "fifo")
    row = by_id(r.jobs)
    assert row["big"]["status"] == "unschedulable" and row["big"]["start"] is None
    assert row["ok"]["start"] == 0
    assert r.summary["overall"]["unschedulable"] == 1 and r.summary["vcs"]["v"]["unschedulable"] == 1
    assert r.summary["unschedulable_jobs"] == [{"job_id": "big", "vc": "v", "reason": "needs 24 GPUs, its VC has 16"}]


def test_missing_vc_is_one_line_error_or_counted() -> None:
    t = jobs(("a", "v", 1, 0, 10), ("b", "w", 1, 0, 10))
    with pytest.raises(InputError) as exc:
        simulate(t, spec(v=(8,)), "fifo", source="t.csv")
    assert str(exc.value) == "t.csv, field 'vc': VC 'w' of job 'b' is not in the cluster spec (known: v)"
    r = simulate(t, spec(v=(8,)), "fifo", unknown_vc="unschedulable")
    assert by_id(r.jobs)["b"]["status"] == "unschedulable" and r.summary["overall"]["jobs"] == 1


def test_unknown_policy_and_placement() -> None:
    with pytest.raises(ConfigError, match="unknown policy 'lottery'; choose one of: fifo, sjf, qssf, srtf"):
        simulate(HOL, spec(v=(8,)), "lottery")
    with pytest.raises(ConfigError, match="unknown placement 'scatter'"):
        simulate(HOL, spec(v=(8,)), "fifo", placement="scatter")


def test_cpu_jobs_are_excluded_and_missing_duration_is_an_error() -> None:
    t = jobs(("a", "v", 0, 0, 10), ("b", "v", 1, 0, 10))
    assert simulate(t, spec(v=(8,)), "fifo").jobs["job_id"].to_list() == ["b"]
    t = t.with_columns(pl.when(pl.col("job_id") == "b").then(None).otherwise(pl.col("duration")).alias("duration"))
    with pytest.raises(InputError, match="job 'b' has no duration"):
        simulate(t, spec(v=(8,)), "fifo")


def test_vcs_are_isolated_unless_pooled() -> None:
    t = jobs(("a", "v", 8, 0, 10), ("b", "v", 8, 0, 10), ("c", "w", 1, 0, 10))
    assert starts(simulate(t, spec(v=(8,), w=(8,)), "fifo"))["b"] == 10
    pooled = simulate(t, spec(v=(8,), w=(8,)), "fifo", pooled=True)
    assert starts(pooled)["b"] == 0 and list(pooled.summary["vcs"]) == ["all"]
    assert by_id(pooled.jobs)["c"]["vc"] == "w"  # the job keeps its own VC in the jobs table
    big = jobs(("x", "v", 24, 0, 10), ("y", "w", 1, 0, 10))
    assert simulate(big, spec(v=(8,), w=(8,)), "fifo", pooled=True).summary["vcs"]["all"]["unschedulable"] == 1


def test_load_divides_inter_arrival_times() -> None:
    t = jobs(("a", "v", 1, 100, 10), ("b", "v", 1, 110, 10), ("c", "v", 1, 131, 10))
    r = simulate(t, spec(v=(8,)), "fifo", load=2.0)
    assert r.jobs["submit"].to_list() == [100, 105, 115]
    assert r.jobs["duration"].to_list() == [10, 10, 10]


def test_custom_policy_is_a_small_class() -> None:
    class LongestFirst(Policy):
        name = "longest"

        def priority(self, job: int, now: int) -> int:
            return -self.jobs.duration[job]

    t = jobs(("a", "v", 8, 0, 5), ("b", "v", 8, 1, 1), ("c", "v", 8, 1, 3))
    assert starts(simulate(t, spec(v=(8,)), LongestFirst)) == {"a": 0, "c": 5, "b": 8}


def test_a_queue_of_whole_number_keys_takes_a_fractional_key_mid_run() -> None:
    """The queue packs whole-number keys with their job into one number; a fractional key arriving at a queue of
    packed ones must still be ordered by key, ties by arrival."""
    class HalfForFour(Policy):
        name = "half-for-four"
        static = True

        def priority(self, job: int, now: int) -> float:
            duration = self.jobs.duration[job]
            return duration + 0.5 if duration == 4 else duration

    t = jobs(("a", "v", 1, 0, 10), ("b", "v", 1, 1, 6), ("c", "v", 1, 2, 3), ("d", "v", 1, 3, 5),
             ("f", "v", 1, 4, 4), ("e", "v", 1, 5, 3))
    # keys b 6, c 3, d 5, f 4.5, e 3: after a, c and e (tie: arrival order), f, d, b
    assert starts(simulate(t, spec(v=(1,)), HalfForFour)) == {"a": 0, "c": 10, "e": 13, "f": 16, "d": 20, "b": 25}


def test_next_review_hook_wakes_a_time_dependent_policy() -> None:
    class Alternate(Policy):
        """Preemptive toy: the favoured job flips every 10 s until t = 20."""

        name = "alternate"
        preemptive = True

        def priority(self, job: int, now: int) -> int:
            return (job + now // 10) % 2

        def next_review(self, queue: list[int], now: int, arrived: int) -> int | None:
            return now + 10 if now < 20 else None

    t = jobs(("a", "v", 1, 0, 30), ("b", "v", 1, 0, 30))
    r = by_id(simulate(t, spec(v=(1,)), Alternate).jobs)
    # 10: a preempted (20 left + 7); 20: b preempted (20 + 7), a back until 47; b resumes 47–74
    assert (r["a"]["start"], r["a"]["end"], r["a"]["preemptions"], r["a"]["queue_delay"]) == (0, 47, 1, 10)
    assert (r["b"]["start"], r["b"]["end"], r["b"]["preemptions"], r["b"]["queue_delay"]) == (10, 74, 1, 37)


def test_metrics_follow_their_definitions() -> None:
    t = jobs(("a", "v", 2, 0, 4, "u1"), ("b", "v", 2, 0, 20, "u2"), ("c", "v", 1, 1, 10, "u2"))
    r = simulate(t, spec(v=(2,)), "fifo")
    row = by_id(r.jobs)
    # a 0–4, b 4–24, c 24–34 (FIFO on a 2-GPU VC)
    assert [row[k]["jct"] for k in "abc"] == [4, 24, 33]
    assert row["c"]["slowdown"] == pytest.approx(3.3) and row["a"]["bounded_slowdown"] == 1.0
    assert row["b"]["bounded_slowdown"] == pytest.approx(24 / 20)
    s = r.summary["vcs"]["v"]
    assert s["makespan"] == 34
    assert s["utilization"] == pytest.approx((2 * 4 + 2 * 20 + 1 * 10) / (2 * 34))
    u1, u2 = 1.0, (24 / 20 + 3.3) / 2
    assert s["fairness"] == pytest.approx((u1 + u2) ** 2 / (2 * (u1**2 + u2**2)))
    assert s["mean_queue_delay"] == pytest.approx((0 + 4 + 23) / 3)


def test_timeline_counts_gpus_jobs_and_nodes() -> None:
    t = jobs(("a", "v", 1, 0, 130), ("b", "v", 1, 0, 70), ("c", "v", 8, 10, 60))
    r = simulate(t, spec(v=(8, 8)), "fifo")
    tl = r.timeline
    assert tl["time"].to_list() == [0, 60, 120]  # every 60 s up to the last end (130)
    # a, b share node 0 from 0; c (8 GPUs) runs on node 1 over [10, 70); b ends at 70
    assert tl["running_jobs"].to_list() == [2, 3, 1]
    assert tl["idle_gpus"].to_list() == [14, 6, 15]
    assert tl["nodes_busy"].to_list() == [1, 2, 1]
    assert tl["nodes_shared"].to_list() == [1, 1, 0]
    assert tl["pending_jobs"].to_list() == [0, 0, 0]


def test_timeline_counts_pending_work() -> None:
    t = jobs(("a", "v", 8, 0, 100), ("b", "v", 4, 30, 10), ("c", "v", 2, 50, 10))
    tl = simulate(t, spec(v=(8,)), "fifo").timeline
    assert tl["time"].to_list() == [0, 60]  # last end: 110
    assert tl["pending_jobs"].to_list() == [0, 2]
    assert tl["pending_gpus"].to_list() == [0, 6]


def test_compat_mode_keeps_only_whole_nodes() -> None:
    # the artifact sizes a VC as GPUs // 8 nodes: a 4-GPU remainder node does not exist there
    t = jobs(("a", "v", 20, 0, 10), ("b", "v", 16, 0, 10))
    r = simulate(t, spec(v=(8, 8, 4)), "fifo", compat="helios-artifact")
    assert by_id(r.jobs)["a"]["status"] == "unschedulable" and by_id(r.jobs)["b"]["start"] == 0
    assert by_id(simulate(t, spec(v=(8, 8, 4)), "fifo").jobs)["a"]["status"] == "completed"


def test_estimates_files_in_both_layouts(tmp_path) -> None:
    from dlcluster.predict import read_estimates

    (tmp_path / "a.csv").write_text("job_id,duration\nx,10\ny,2.5\n")
    (tmp_path / "b.csv").write_text("jobname,priority\n7,100\n")
    assert read_estimates(tmp_path / "a.csv").rows() == [("x", 10.0), ("y", 2.5)]
    assert read_estimates(tmp_path / "b.csv").rows() == [("7", 100.0)]
    (tmp_path / "c.csv").write_text("job_id,duration\nx,10\nx,11\n")
    with pytest.raises(InputError, match=r"c.csv, line 3, field 'job_id': job 'x' has a second estimate"):
        read_estimates(tmp_path / "c.csv")
    (tmp_path / "d.csv").write_text("id,guess\nx,10\n")
    with pytest.raises(InputError, match="expected columns job_id,duration"):
        read_estimates(tmp_path / "d.csv")


def test_second_estimate_error_names_the_repeating_line(tmp_path) -> None:
    from dlcluster.predict import read_estimates

    # x repeats at line 5, but y already repeated at line 4 (line 3 is y's first estimate)
    (tmp_path / "e.csv").write_text("job_id,duration\nx,1\ny,2\ny,3\nx,4\n")
    with pytest.raises(InputError) as err:
        read_estimates(tmp_path / "e.csv")
    assert str(err.value) == f"{tmp_path / 'e.csv'}, line 4, field 'job_id': job 'y' has a second estimate"


def test_registered_policy_runs_by_name() -> None:
    from dlcluster.sim.policies import POLICIES, register_policy

    @register_policy
    class FewestGpusFirst(Policy):
        name = "fewest-gpus-test"

        def priority(self, job: int, now: int) -> int:
            return self.jobs.gpu[job]

    try:
        t = jobs(("a", "v", 8, 0, 5), ("b", "v", 4, 1, 1), ("c", "v", 2, 1, 3))
        assert starts(simulate(t, spec(v=(8,)), "fewest-gpus-test")) == {"a": 0, "c": 5, "b": 5}
    finally:
        del POLICIES["fewest-gpus-test"]
