"""Failures replayed in the simulator: outcomes, retries, the no-retry rule, early validation."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_sim_helpers import by_id, cli, jobs, scenarios, spec, write_trace

from dlcluster.errors import ConfigError, InputError
from dlcluster.sim import simulate
from dlcluster.sim.failures import FailureModel, attempt_plan
from dlcluster.sim.speed import speed_model

# ok: 8 GPUs, 1000 s; bad: 8 GPUs, fails after 120 s; late: 4 GPUs, fails after 3000 s; c: cancelled after 50 s
TRACE = jobs(("ok", "v", 8, 0, 1000), ("bad", "v", 8, 10, 120), ("late", "v", 4, 20, 3000),
             ("c", "v", 1, 30, 50)).with_columns(pl.Series("status", ["completed", "failed", "failed", "cancelled"]))
CLUSTER = spec(v=(8, 8))


def _rows(result) -> dict[str, tuple]:
    return {r["job_id"]: (r["start"], r["end"], r["queue_delay"], r["status"], r["attempts"])
            for r in result.jobs.iter_rows(named=True)}


def test_outcomes_replayed_without_retries_change_no_time() -> None:
    plain = simulate(TRACE, CLUSTER, "fifo")
    replayed = simulate(TRACE, CLUSTER, "fifo", failures=FailureModel())
    assert plain.jobs.select("job_id", "start", "end").equals(replayed.jobs.select("job_id", "start", "end"))
    assert dict(replayed.jobs.select("job_id", "status").iter_rows()) == {
        "ok": "completed", "bad": "failed", "late": "failed", "c": "cancelled"}
    f = replayed.summary["failures"]
    assert f["failed_gpu_hours"] == pytest.approx((8 * 120 + 4 * 3000) / 3600)
    assert f["failed_gpu_hours_early"] == pytest.approx(8 * 120 / 3600) and f["retries"] == 0


def test_retry_counts_and_lost_gpu_time_add_up() -> None:
    r = simulate(TRACE, CLUSTER, "fifo", failures=FailureModel(retries=2))
    # bad fails three times on node 1 (10-130-250-370; a retry keeps its place in FIFO); late waits for it (FIFO),
    # then fails three times (370 + 3 x 3000); c runs beside late
    assert _rows(r) == {"ok": (0, 1000, 0, "completed", 1), "bad": (10, 370, 0, "failed", 3),
                        "late": (370, 9370, 350, "failed", 3), "c": (370, 420, 340, "cancelled", 1)}
    # slowdown is against the work replayed: bad's three 120 s attempts ran back to back (it was 3.0 against 120 s)
    slowdown = dict(r.jobs.select("job_id", "slowdown").iter_rows())
    assert slowdown["bad"] == 1.0 and slowdown["late"] == pytest.approx(9350 / 9000) and slowdown["c"] == 7.8
    f = r.summary["failures"]
    assert f["retries"] == 4 and f["failed_jobs"] == 2
    assert f["failed_gpu_hours"] == pytest.approx((3 * 8 * 120 + 3 * 4 * 3000) / 3600)
    # every attempt is a run segment on the cluster
    assert r.placements.filter(pl.col("job_id") == "bad").height == 3


def test_no_retry_after_an_early_failure() -> None:
    r = simulate(TRACE, CLUSTER, "fifo", failures=FailureModel(retries=2, no_retry_within=300))
    rows = _rows(r)
    assert rows["bad"] == (10, 130, 0, "failed", 1)  # failed after 2 minutes: not retried
    assert rows["late"][4] == 3  # failed after 50 minutes: retried
    assert r.summary["failures"]["retries"] == 2


def test_a_job_failing_at_minute_two_never_occupies_the_main_cluster() -> None:
    model = FailureModel(retries=2, validation_seconds=300, validation_gpus=2)
    r = simulate(TRACE, CLUSTER, "fifo", failures=model)
    rows = _rows(r)
    assert "bad" not in set(r.placements["job_id"])
    assert rows["bad"] == (10, 130, 0, "failed", 1)  # it failed on the pool, 2 minutes after it started there
    # ok validated 0-300, then runs at once; late waits for a pool GPU until 130, validates until 430
    assert rows["ok"][:2] == (300, 1300) and rows["late"][:3] == (430, 430 + 3 * 3000, 110)
    f = r.summary["failures"]
    assert f["validation_caught"] == 1
    # bad (caught on the pool) and late (failed on the cluster) both failed, at their first and last attempts
    assert f["failed_jobs"] == 2 and f["first_attempt_failed_jobs"] == 2
    assert f["validation_gpu_hours_saved"] == pytest.approx(3 * 8 * 120 / 3600)  # three attempts on 8 GPUs
    assert f["validation_pool_gpu_hours"] == pytest.approx((300 + 120 + 300 + 50) / 3600)
    assert dict(r.jobs.select("job_id", "validation_wait").iter_rows()) == {"ok": 0, "bad": 0, "late": 110, "c": 270}


def test_with_validation_the_jobs_table_keeps_the_order_of_a_run_without_it() -> None:
    # two VCs, each with a job that validation catches: those are listed where a run without validation lists
    # them (VC by VC, by submission), not after the jobs that reached the main cluster
    t = pl.concat([TRACE, TRACE.with_columns(pl.lit("w").alias("vc"), pl.col("job_id") + "2")])
    both = spec(v=(8, 8), w=(8, 8))
    model = FailureModel(validation_seconds=300, validation_gpus=2)
    validated = simulate(t, both, "fifo", failures=model).jobs
    assert set(validated.filter(pl.col("validation_wait").is_not_null() & (pl.col("status") == "failed")
                                & (pl.col("attempts") == 1))["job_id"]) >= {"bad", "bad2"}
    assert list(validated["job_id"]) == list(simulate(t, both, "fifo").jobs["job_id"]) \
        == ["ok", "bad", "late", "c", "ok2", "bad2", "late2", "c2"]


def test_validation_can_keep_progress() -> None:
    model = FailureModel(validation_seconds=300, validation_gpus=4, keep_progress=True)
    rows = _rows(simulate(TRACE, CLUSTER, "fifo", failures=model))
    assert rows["ok"][:2] == (300, 1000)  # 300 s done on the pool, 700 s left


def test_a_job_that_validation_runs_to_the_end_keeping_progress_ends_on_the_pool() -> None:
    # (c did all its 50 s on the pool, then waited for its 4-GPU gang and "ran" 0 s on it at 330)
    t = jobs(("a", "v", 2, 0, 30), ("b", "v", 2, 0, 300), ("c", "v", 4, 10, 50)).with_columns(
        pl.Series("status", ["failed", "completed", "completed"]))
    model = FailureModel(validation_seconds=60, validation_gpus=1, keep_progress=True)
    r = simulate(t, spec(v=(4,)), "fifo", failures=model)
    # one pool GPU: a fails there 0-30 (caught), b validates 30-90, c runs 90-140: done
    rows = _rows(r)
    assert rows["c"] == (90, 140, 80, "completed", 1) and rows["b"][:2] == (90, 330)
    assert set(r.placements["job_id"]) == {"b"}
    f = r.summary["failures"]
    assert (f["validation_caught"], f["failed_jobs"], f["completed_jobs"]) == (1, 1, 2)
    assert f["validation_pool_gpu_hours"] == pytest.approx((30 + 60 + 50) / 3600)
    assert f["validation_mean_wait"] == pytest.approx((0 + 30 + 80) / 3)
    # without keeping progress, c starts over on the cluster after its pool run
    r = simulate(t, spec(v=(4,)), "fifo", failures=FailureModel(validation_seconds=60, validation_gpus=1))
    assert _rows(r)["c"][:2] == (390, 440)  # after b (90-390)


@pytest.mark.parametrize("keep_progress", [False, True])
def test_a_vc_whose_every_job_ended_on_the_pool_keeps_its_summary_and_its_gpus(keep_progress: bool) -> None:
    # (VC a vanished from the summary's vcs, and the overall utilisation counted only VC b's GPUs)
    t = jobs(("a1", "a", 8, 0, 60), ("b1", "b", 8, 0, 3600)).with_columns(
        pl.Series("status", ["completed" if keep_progress else "failed", "completed"]))
    model = FailureModel(validation_seconds=300, validation_gpus=2, keep_progress=keep_progress)
    r = simulate(t, spec(a=(8,), b=(8,)), "fifo", failures=model)
    assert set(r.placements["job_id"]) == {"b1"}  # a1 ended on the pool: 60 s done (or failed) there
    vcs, overall = r.summary["vcs"], r.summary["overall"]
    assert list(vcs) == ["a", "b"]
    assert (vcs["a"]["jobs"], vcs["a"]["mean_jct"], vcs["a"]["utilization"], vcs["a"]["gpus"]) == (1, 60, 0.0, 8)
    assert sum(v["jobs"] for v in vcs.values()) == overall["jobs"] == 2
    # b1 validated 0-300 on the pool, then ran its 3,600 s (3,300 s keeping progress) on 8 of the 16 GPUs
    ran = 3300 if keep_progress else 3600
    assert overall["gpus"] == 16 and overall["utilization"] == pytest.approx(8 * ran / (16 * (300 + ran)))


def test_a_retry_after_validation_kept_progress_redoes_the_whole_attempt() -> None:
    model = FailureModel(retries=2, validation_seconds=300, validation_gpus=4, keep_progress=True)
    r = simulate(TRACE, CLUSTER, "fifo", failures=model)
    # late validates 20-320, fails 2,700 s later on the main cluster (its first attempt went on from the pool's
    # 300 s), then twice after a whole 3,000 s each; the summary counts the same three attempts, the first one's
    # 300 s on the one pool GPU it ran on (they were counted on the 4-GPU gang)
    assert _rows(r)["late"][:2] == (320, 320 + 2_700 + 2 * 3_000)
    f = r.summary["failures"]
    assert f["failed_gpu_hours_late"] == pytest.approx((4 * (2_700 + 2 * 3_000) + 1 * 300) / 3600)
    held = r.placements.filter(pl.col("job_id") == "late").select((pl.col("end") - pl.col("start")) * pl.col("gpus"))
    assert f["failed_gpu_hours_late"] == pytest.approx((held.sum().item() + 300) / 3600)  # the cluster's, the pool's


def test_recorded_attempts_are_replayed_and_capped() -> None:
    t = jobs(("a", "v", 2, 0, 600), ("b", "v", 1, 0, 40)).with_columns(pl.Series("status", ["completed", "failed"]))
    attempts = pl.DataFrame({"job_id": ["a", "a", "a"], "attempt": [0, 1, 2], "start_time": [0, 100, 300],
                             "end_time": [60, 200, 700], "gpus": [2, 2, 2]})
    plan, recorded = attempt_plan(t, attempts, FailureModel(retries=1))
    assert recorded == {"a": [60, 100]}
    assert plan.select("first", "tries", "outcome", "failed_early", "work_total").rows() == [
        (60, 2, "failed", 160, 160), (40, 2, "failed", 80, 80)]
    plan, recorded = attempt_plan(t, attempts, FailureModel(retries=5))
    assert recorded == {"a": [60, 100, 400]}
    assert plan.select("tries", "outcome", "failed_early", "work_total").rows() == [
        (3, "completed", 160, 560), (6, "failed", 240, 240)]
    r = _rows(simulate(t, spec(v=(2,)), "fifo", failures=FailureModel(retries=5), attempts=attempts))
    assert r["a"] == (0, 560, 0, "completed", 3)
    # without retries a job Philly retried fails after its first attempt: 60 s, against which its slowdown counts
    # (not its recorded 700 s: a slowdown of 0.09)
    r = simulate(t, spec(v=(2,)), "fifo", failures=FailureModel(), attempts=attempts)
    assert _rows(r)["a"] == (0, 60, 0, "failed", 1) and by_id(r.jobs)["a"]["slowdown"] == 1.0
    assert r.summary["overall"]["mean_slowdown"] >= 1


def test_a_recorded_attempt_without_a_start_time_is_skipped() -> None:
    # Philly's raw log writes a missing time "None" (the reader keeps the attempt with a null start): it has no run
    # time to replay, so it is skipped like one without an end (this crashed with a TypeError under --retries)
    t = jobs(("a", "v", 1, 0, 4000)).with_columns(pl.Series("status", ["failed"]))
    attempts = pl.DataFrame({"job_id": ["a", "a", "a"], "attempt": [0, 1, 2], "start_time": [0, None, 2000],
                             "end_time": [1000, 3000, 4000], "gpus": [1, 1, 1]})
    plan, recorded = attempt_plan(t, attempts, FailureModel(retries=3, no_retry_within=60))
    assert recorded == {"a": [1000, 2000]}
    assert plan.select("first", "tries", "outcome", "failed_late", "work_total").rows() == [
        (1000, 2, "failed", 3000, 3000)]
    r = _rows(simulate(t, spec(v=(1,)), "fifo", failures=FailureModel(retries=1), attempts=attempts))
    assert r["a"] == (0, 3000, 0, "failed", 2)


def test_every_attempt_runs_on_the_job_s_gpus_not_its_recorded_count() -> None:
    # as docs/guidelines.md says: the raw log's per-attempt GPU counts (16, then 4) are not used; a retry holds the
    # job's gpu_num (the first attempt's) and failed_gpu_hours counts it
    t = jobs(("a", "v", 16, 0, 2000)).with_columns(pl.Series("status", ["failed"]))
    attempts = pl.DataFrame({"job_id": ["a", "a"], "attempt": [0, 1], "start_time": [0, 1000],
                             "end_time": [1000, 2000], "gpus": [16, 4]})
    r = simulate(t, spec(v=(8, 8)), "fifo", failures=FailureModel(retries=1), attempts=attempts)
    assert r.placements.group_by("start").agg(pl.col("gpus").sum()).sort("start").rows() == [(0, 16), (1000, 16)]
    assert r.summary["failures"]["failed_gpu_hours"] == pytest.approx(2 * 16 * 1000 / 3600)
    text = " ".join((Path(__file__).resolve().parents[1] / "docs/guidelines.md").read_text().split())
    assert "Every attempt, a retry too, runs on the job's GPUs" in text and "the simulator does not use it" in text


def test_a_retry_past_its_locality_wait_never_turns_the_clock_back() -> None:
    # EASY + relax:10 + a retry: j1's retry asked for its locality wake-up at second 37, at second 173; the clock went
    # back, j1 started a second time while its first attempt ran, and a 4-GPU node held 8 GPUs
    table = jobs(("j0", "a", 1, 5, 152), ("j2", "a", 8, 8, 50), ("j1", "a", 4, 27, 136)).with_columns(
        pl.lit("failed").alias("status"))
    result = simulate(table, spec(a=(4, 4)), "fifo-easy", placement="relax:10", failures=FailureModel(retries=1),
                      estimates=table.select("job_id", pl.col("duration").cast(pl.Float64).alias("estimate")))
    out = result.jobs
    assert (out["start"] >= out["submit"]).all() and (out["queue_delay"] >= 0).all(), out
    held = result.placements.sort("start")
    for (node,), part in held.group_by("node"):
        for t in part["start"].to_list():
            busy = part.filter((pl.col("start") <= t) & (pl.col("end") > t))["gpus"].sum()
            assert busy <= 4, (node, t, busy)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
# (las:143: the least quantum the philly speed model allows, see test_sim_speed)
@given(scenarios(), st.data(), st.integers(0, 3), st.sampled_from(["fifo", "sjf", "srtf", "las:143", "fifo-easy"]))
def test_invariants_hold_with_retries_validation_and_the_speed_model(scenario, data: st.DataObject, retries: int, policy: str) -> None:
    table, cluster = scenario
    status = data.draw(st.lists(st.sampled_from(["completed", "failed", "cancelled", "node_fail"]),
                                min_size=table.height, max_size=table.height))
    table = table.with_columns(pl.Series("status", status))
    validate = data.draw(st.booleans())
    model = FailureModel(retries=retries, validation_seconds=20 if validate else None,
                         validation_gpus=data.draw(st.integers(1, 3)) if validate else 0)
    estimates = table.select("job_id", pl.col("duration").cast(pl.Float64).alias("estimate"))
    # (relax:T asks a wake-up T after a job's submission: a retry past it once asked for a second already gone)
    placement = data.draw(st.sampled_from(["consolidate", "relax:0", "relax:10", "relax:60"]))
    result = simulate(table, cluster, policy, failures=model, unknown_vc="unschedulable", placement=placement,
                      estimates=estimates if policy == "fifo-easy" else None,
                      speed=speed_model("philly") if data.draw(st.booleans()) else None)
    out = result.jobs
    sizes = {vc: sum(n) for vc, n in cluster.vcs.items()}
    big = {r["job_id"] for r in table.iter_rows(named=True) if r["gpu_num"] > sizes[r["vc"]]}
    ran = out.filter(pl.col("status") != "unschedulable")
    assert set(out.filter(pl.col("status") == "unschedulable")["job_id"]) == big
    assert ran["job_id"].n_unique() == ran.height == table.height - len(big)  # each job ends exactly once
    assert (ran["start"] >= ran["submit"]).all() and (ran["end"] >= ran["start"]).all()
    assert (ran["attempts"] >= 1).all() and (ran["attempts"] <= retries + 1).all()
    p = result.placements
    # gangs whole, every attempt (attempts of 0 s may share their second: they hold nothing)
    seg = p.filter(pl.col("end") > pl.col("start")).group_by("job_id", "start").agg(pl.col("gpus").sum()) \
        .join(ran.select("job_id", "gpu_num"), on="job_id")
    assert (seg["gpus"] == seg["gpu_num"]).all()
    for (vc, node), part in p.group_by("vc", "node"):  # no GPU given twice
        times = np.concatenate([part["start"].to_numpy(), part["end"].to_numpy()])
        delta = np.concatenate([part["gpus"].to_numpy(), -part["gpus"].to_numpy()])
        order = np.lexsort((delta, times))
        assert np.cumsum(delta[order]).max() <= cluster.vcs[vc][node]
    # a job's run segments on the cluster: as many as its attempts, unless preemption split them (attempts of
    # 0 seconds share their second: only jobs with work are counted)
    runs = p.group_by("job_id").agg(pl.col("start").n_unique().alias("n")).join(
        ran.filter(pl.col("duration") > 0).select("job_id", "attempts", "preemptions"), on="job_id")
    assert (runs["n"] == runs["attempts"] + runs["preemptions"]).all()


def test_failures_none_changes_nothing_and_errors_are_one_line(tmp_path: Path) -> None:
    trace = write_trace(tmp_path / "t.parquet", TRACE.drop("status"), CLUSTER)
    a, b = tmp_path / "a", tmp_path / "b"
    assert cli("simulate", str(trace), "-o", str(a)).returncode == 0
    assert cli("simulate", str(trace), "-o", str(b), "--failures", "none").returncode == 0
    for f in ("jobs.parquet", "timeline.parquet", "placements.parquet"):
        assert (a / f).read_bytes() == (b / f).read_bytes()
    for args, message in ((("--retries", "2"), "--retries needs --failures replay"),
                          (("--failures", "replay", "--validation-minutes", "5"), "needs both --validation-minutes"),
                          (("--failures", "sometimes"), "choose none or replay"),
                          (("--failures", "replay", "--compat", "helios-artifact"), "replays no failures"),
                          # (refused as "must be positive", which it is: it rounds to 0 s)
                          (("--failures", "replay", "--validation-minutes", "0.001", "--validation-gpus", "1"),
                           "--validation-minutes 0.001 is less than a second, and the clock counts whole seconds")):
        run = cli("simulate", str(trace), "-o", str(tmp_path / "o"), *args)
        assert run.returncode == 2 and message in run.stderr and "Traceback" not in run.stderr, run.stderr


def test_an_unschedulable_job_keeps_its_user() -> None:
    table = jobs(("big", "a", 16, 0, 60, "alice"), ("ok", "a", 1, 0, 60, "bob"), ("lost", "z", 1, 5, 60, "carol"))
    out = simulate(table, spec(a=(8,)), "fifo", unknown_vc="unschedulable").jobs
    assert dict(out.select("job_id", "user").iter_rows()) == {"big": "alice", "ok": "bob", "lost": "carol"}


def test_bad_models_and_missing_status() -> None:
    with pytest.raises(ConfigError):
        FailureModel(retries=-1)
    with pytest.raises(ConfigError):
        FailureModel(validation_seconds=60)
    with pytest.raises(InputError, match="no status column"):
        simulate(TRACE.drop("status"), CLUSTER, "fifo", failures=FailureModel())
    with pytest.raises(ConfigError, match="replays no failures"):
        simulate(TRACE, CLUSTER, "fifo", compat="helios-artifact", failures=FailureModel())


def test_failed_gpu_hours_count_work_at_full_speed_not_gpu_time_held() -> None:
    # docs/guidelines.md: an attempt's run time at full speed on its GPUs; slowdown is not in it. f shares its node
    # with g, so it runs at the colocated rate and holds its 4 GPUs longer than its 100 s of work
    t = jobs(("f", "v", 4, 0, 100), ("g", "v", 4, 0, 1000)).with_columns(pl.Series("status", ["failed", "completed"]))
    r = simulate(t, spec(v=(8,)), "fifo", failures=FailureModel(retries=1), speed=speed_model("philly"))
    held = r.placements.filter(pl.col("job_id") == "f").select((pl.col("end") - pl.col("start")) * pl.col("gpus"))
    assert held.sum().item() > 4 * 2 * 100
    assert r.summary["failures"]["failed_gpu_hours"] == 4 * 2 * 100 / 3600
    assert r.summary["overall"]["slowdown_gpu_hours"] > 0
