"""LAS, Tiresias and EASY backfilling: hand-checked scenarios, invariants, and the documented notebook example."""

from __future__ import annotations

import re
from pathlib import Path

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_sim_helpers import (
    assert_work_conserving,
    by_id,
    check_invariants,
    estimates_for,
    jobs,
    scenarios,
    spec,
)

from dlcluster.errors import ConfigError
from dlcluster.sim import POLICIES, SimResult, simulate
from dlcluster.sim.jobs import checkpoint_overhead
from dlcluster.sim.policies import get_policy
from dlcluster.sim.policies.tiresias import Tiresias

NEW = ("las", "las:100", "tiresias", "tiresias:100", "fifo-easy", "qssf-easy")
DOC = Path(__file__).resolve().parents[1] / "docs" / "simulator.md"


def starts(result: SimResult) -> dict[str, int]:
    return {k: v["start"] for k, v in by_id(result.jobs).items()}


def test_las_preempts_for_the_job_with_least_attained_service() -> None:
    t = jobs(("A", "v", 1, 0, 100), ("B", "v", 1, 10, 20))
    r = by_id(simulate(t, spec(v=(1,)), "las").jobs)
    # at 10 A has 10 GPU·s, B none: A is preempted (90 left + 7 s checkpoint) and resumes when B ends at 30
    assert (r["B"]["start"], r["B"]["end"]) == (10, 30)
    assert (r["A"]["end"], r["A"]["preemptions"], r["A"]["queue_delay"]) == (127, 1, 20)


def test_las_rotates_every_quantum_while_jobs_wait() -> None:
    t = jobs(("A", "v", 1, 0, 150), ("B", "v", 1, 0, 150))
    r = by_id(simulate(t, spec(v=(1,)), "las:100").jobs)
    # 0: A (arrival order); 100: B (0 GPU·s beats 100) preempts A, which has 57 s left (50 + 7); 200: a tie at
    # 100 GPU·s, and ties never preempt; B ends at 250 before the review at 300, then A resumes → 307
    assert (r["A"]["start"], r["A"]["end"], r["A"]["queue_delay"]) == (0, 307, 150)
    assert (r["B"]["start"], r["B"]["end"], r["B"]["queue_delay"]) == (100, 250, 100)
    assert (r["A"]["preemptions"], r["B"]["preemptions"]) == (1, 0)


def test_las_counts_gpu_seconds_not_seconds() -> None:
    # at 20, A (2 GPUs × 20 s = 40) has more service than B (1 GPU × 30 s... not started, 0) and C
    t = jobs(("A", "v", 2, 0, 100), ("B", "v", 1, 0, 100), ("C", "v", 1, 20, 10))
    r = by_id(simulate(t, spec(v=(3,)), "las").jobs)
    # at 20: A holds 40 GPU·s, B 20, C 0; quota 3 admits C then B (2 GPUs used), A (2) no longer fits
    assert (r["C"]["start"], r["C"]["end"]) == (20, 30)
    assert r["A"]["preemptions"] == 1 and r["B"]["preemptions"] == 0


def test_tiresias_demotes_at_the_threshold_without_any_other_event() -> None:
    t = jobs(("A", "v", 2, 0, 200), ("B", "v", 1, 10, 30), ("C", "v", 1, 20, 30))
    r = by_id(simulate(t, spec(v=(2,)), "tiresias:100").jobs)
    # A (2 GPUs) reaches 100 GPU·s at 50, drops to queue 1 and is preempted for B and C (queue 0, FIFO);
    # it resumes at 80 with 150 s + 30 s checkpoint left
    assert (r["B"]["start"], r["B"]["end"], r["C"]["start"], r["C"]["end"]) == (50, 80, 50, 80)
    assert (r["A"]["start"], r["A"]["end"], r["A"]["preemptions"]) == (0, 260, 1)


def test_tiresias_is_fifo_within_a_queue() -> None:
    # both stay in queue 0 (threshold far away): the earlier job keeps the GPU, no preemption
    t = jobs(("A", "v", 1, 0, 50), ("B", "v", 1, 5, 10))
    r = by_id(simulate(t, spec(v=(1,)), "tiresias").jobs)
    assert (r["A"]["end"], r["B"]["start"], r["A"]["preemptions"]) == (50, 50, 0)
    assert Tiresias.threshold == 3600


def test_policy_parameters() -> None:
    assert get_policy("tiresias:7200").threshold == 7200 and get_policy("tiresias:7200").name == "tiresias:7200"
    assert get_policy("las:90").quantum == 90 and POLICIES["las"].quantum == 600
    with pytest.raises(ConfigError, match="policy 'fifo' takes no parameter"):
        get_policy("fifo:3")
    with pytest.raises(ConfigError, match="expected at least 61 s, got 60"):
        get_policy("las:60")  # no longer than a checkpoint: a job could be preempted forever
    with pytest.raises(ConfigError, match="expected at least 1 s, got 0"):
        get_policy("tiresias:0")
    with pytest.raises(ConfigError, match="expected a whole number of seconds, got 'x'"):
        get_policy("tiresias:x")


# one 8-GPU node; A holds 6 GPUs over [0, 100); B (8 GPUs) is the blocked head, reserved for 100
EASY = jobs(("A", "v", 6, 0, 100), ("B", "v", 8, 1, 50), ("C", "v", 2, 2, 90), ("D", "v", 1, 3, 200))


def test_fifo_easy_backfills_a_short_job_and_keeps_the_head_reservation() -> None:
    fifo = starts(simulate(EASY, spec(v=(8,)), "fifo"))
    easy = starts(simulate(EASY, spec(v=(8,)), "fifo-easy"))
    assert fifo == {"A": 0, "B": 100, "C": 150, "D": 150}
    # C ends (92) before B's reservation; D (200 s) would not, and B needs every GPU
    assert easy == {"A": 0, "B": 100, "C": 2, "D": 150}


def test_fifo_easy_backfills_on_gpus_the_reservation_does_not_need() -> None:
    # B (6) needs 6 of the 8 GPUs free at 100: C (2 GPUs, long) may take the spare 2; D then may not
    t = jobs(("A", "v", 4, 0, 100), ("B", "v", 6, 1, 50), ("C", "v", 2, 2, 500), ("D", "v", 2, 3, 500))
    assert starts(simulate(t, spec(v=(8,)), "fifo")) == {"A": 0, "B": 100, "C": 100, "D": 150}
    assert starts(simulate(t, spec(v=(8,)), "fifo-easy")) == {"A": 0, "B": 100, "C": 2, "D": 150}


def test_fifo_easy_uses_estimates_when_given() -> None:
    # C is predicted to end by 100 but runs 300 s: backfilled on the wrong belief, it delays B to 302
    t = EASY.with_columns(pl.when(pl.col("job_id") == "C").then(300).otherwise(pl.col("duration")).alias("duration"))
    est = pl.DataFrame({"job_id": ["A", "B", "C", "D"], "estimate": [100.0, 50.0, 90.0, 200.0]})
    assert starts(simulate(t, spec(v=(8,)), "fifo-easy", estimates=est)) == {"A": 0, "B": 302, "C": 2, "D": 352}
    # with the oracle, C (300 s) cannot backfill
    assert starts(simulate(t, spec(v=(8,)), "fifo-easy"))["C"] == 150


def test_qssf_easy_reserves_from_estimates() -> None:
    # order B (4 × 50) before C (1 × 1000); B waits for A (estimated end 100), C uses a spare GPU at once
    t = jobs(("A", "v", 6, 0, 100), ("B", "v", 4, 1, 50), ("C", "v", 1, 1, 1000))
    est = pl.DataFrame({"job_id": ["A", "B", "C"], "estimate": [100.0, 50.0, 1000.0]})
    assert starts(simulate(t, spec(v=(8,)), "qssf", estimates=est)) == {"A": 0, "B": 100, "C": 100}
    assert starts(simulate(t, spec(v=(8,)), "qssf-easy", estimates=est)) == {"A": 0, "B": 100, "C": 1}
    with pytest.raises(ConfigError, match="needs duration estimates"):
        simulate(t, spec(v=(8,)), "qssf-easy")


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios(), st.sampled_from(NEW), st.sampled_from(["consolidate", "first-fit", "random", "relax:15"]))
def test_invariants_of_new_policies_and_placements(scenario, policy: str, placement: str) -> None:
    table, cluster = scenario
    result = simulate(table, cluster, policy, placement=placement, estimates=estimates_for(table), seed=3)
    check_invariants(table, cluster, result)
    done = result.jobs.filter(pl.col("status") == "completed")
    for r in done.iter_rows(named=True):
        assert r["end"] - r["submit"] == r["queue_delay"] + r["duration"] + r["preemptions"] * checkpoint_overhead(
            r["gpu_num"])
    if not get_policy(policy).preemptive:
        assert done["preemptions"].sum() == 0


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios(one_gpu=True), st.sampled_from(["las", "las:100", "tiresias:10"]))
def test_las_and_tiresias_are_work_conserving_for_one_gpu_jobs(scenario, policy: str) -> None:
    table, cluster = scenario
    assert_work_conserving(simulate(table, cluster, policy, placement="spread"), cluster)


def test_documented_notebook_example_runs() -> None:
    text = DOC.read_text()
    block = re.search(r"<!-- tested in tests/test_sim_extra_policies.py -->\n```python\n(.*?)```", text, re.DOTALL)
    assert block is not None, "the worked example is missing from docs/simulator.md"
    code = block.group(1)
    assert len([line for line in code.splitlines() if line.strip() and not line.startswith(("#", "from"))]) == 3
    trace = type("T", (), {"jobs": jobs(("a", "v", 8, 0, 5), ("b", "v", 4, 1, 1), ("c", "v", 2, 1, 3))})()
    scope = {"trace": trace, "spec": spec(v=(8,))}
    try:
        exec(code, scope)  # noqa: S102 - the documentation's own example
        assert starts(scope["result"]) == {"a": 0, "c": 5, "b": 5}
    finally:
        POLICIES.pop("smallest-gpu-first", None)
