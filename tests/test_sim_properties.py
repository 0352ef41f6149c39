"""Invariants of the simulator on random small traces and clusters (hypothesis)."""

from __future__ import annotations

import polars as pl
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_sim_helpers import (
    assert_work_conserving,
    check_invariants,
    estimates_for,
    scenarios,
)

from dlcluster.sim import simulate
from dlcluster.sim.jobs import checkpoint_overhead

POLICIES = ("fifo", "sjf", "qssf", "srtf")


def _segments_per_job(result) -> dict[str, int]:
    return dict(result.placements.group_by("job_id").agg(pl.col("start").n_unique()).iter_rows())


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios(), st.sampled_from(POLICIES))
def test_invariants_default_mode(scenario, policy: str) -> None:
    table, cluster = scenario
    result = simulate(table, cluster, policy, estimates=estimates_for(table))
    check_invariants(table, cluster, result)
    done = result.jobs.filter(pl.col("status") == "completed")
    runs = _segments_per_job(result)
    for r in done.iter_rows(named=True):
        assert runs[r["job_id"]] == r["preemptions"] + 1
        # wall time = wait + work + one checkpoint overhead per preemption
        assert r["end"] - r["submit"] == r["queue_delay"] + r["duration"] + r["preemptions"] * checkpoint_overhead(
            r["gpu_num"])
    if policy != "srtf":
        assert done["preemptions"].sum() == 0


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios(uniform=True), st.sampled_from(POLICIES))
def test_invariants_compat_mode(scenario, policy: str) -> None:
    table, cluster = scenario
    result = simulate(table, cluster, policy, estimates=estimates_for(table), compat="helios-artifact")
    check_invariants(table, cluster, result)
    done = result.jobs.filter(pl.col("status") == "completed")
    extra = 1 if policy == "srtf" else 0
    for r in done.iter_rows(named=True):
        assert r["jct"] == r["queue_delay"] + r["duration"] + extra + r["preemptions"] * checkpoint_overhead(
            r["gpu_num"])
    if policy == "fifo":
        # no job starts before a job submitted earlier to the same VC
        for _, part in done.group_by("vc"):
            part = part.sort("submit", "start")
            assert (part["start"].diff().drop_nulls() >= 0).all()


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios(one_gpu=True))
def test_srtf_is_work_conserving_for_one_gpu_jobs(scenario) -> None:
    table, cluster = scenario
    assert_work_conserving(simulate(table, cluster, "srtf"), cluster)


@settings(max_examples=15, deadline=None)
@given(scenarios(), st.sampled_from(POLICIES))
def test_same_input_same_output(scenario, policy: str) -> None:
    table, cluster = scenario
    a = simulate(table, cluster, policy, estimates=estimates_for(table))
    b = simulate(table, cluster, policy, estimates=estimates_for(table))
    assert a.jobs.equals(b.jobs) and a.timeline.equals(b.timeline) and a.placements.equals(b.placements)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios(), st.sampled_from(["las:61", "las:120", "tiresias"]))
def test_ranking_running_jobs_across_passes_changes_nothing(scenario, policy: str) -> None:
    # linear_key lets the cycle keep running jobs ranked between passes; without it they are re-ranked every pass
    from dlcluster.sim.framework import Policy
    from dlcluster.sim.policies import get_policy

    table, cluster = scenario
    fast = get_policy(policy)
    plain = type("Plain", (fast,), {"name": "plain", "linear_key": Policy.linear_key})
    a, b = simulate(table, cluster, fast), simulate(table, cluster, plain)
    assert a.jobs.equals(b.jobs) and a.placements.equals(b.placements)


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 400), st.lists(st.tuples(st.integers(0, 400), st.integers(0, 400), st.integers(1, 16)),
                                      max_size=30), st.booleans())
def test_timeline_counts_of_few_intervals_equal_a_direct_count(n: int, spans, weighted: bool) -> None:
    """The timeline's shortcut for few intervals over many samples counts what a sample-by-sample count does."""
    import numpy as np

    from dlcluster.sim.results import _sampled_sparse

    a = np.array([min(s, n) for s, _, _ in spans], dtype=np.int64)
    b = np.array([min(n, s + length) for s, length, _ in spans], dtype=np.int64)
    w = np.array([g for _, _, g in spans], dtype=np.float64)
    got = _sampled_sparse(a, b, n, w if weighted else None)
    direct = [sum((g if weighted else 1) for (s, e, g) in zip(a, b, w) if s <= k < e) for k in range(n)]
    assert got.dtype == np.int64 and got.tolist() == direct


def _key_variants(cls: type) -> tuple[type, type, type]:
    """``cls``, and subclasses giving its keys as floats (never packed), and as ints until the fifth job's key, then
    floats (the queue turns into tuples mid-run)."""
    class AsFloats(cls):  # type: ignore[misc, valid-type]
        def priority(self, job: int, now: int) -> float:
            return float(super().priority(job, now))

    class Mixed(cls):  # type: ignore[misc, valid-type]
        def priority(self, job: int, now: int) -> float:
            key = super().priority(job, now)
            return float(key) if job >= 4 else key

    return cls, AsFloats, Mixed


def _same_runs(table: pl.DataFrame, cluster, policies: tuple[type, ...]) -> None:
    runs = [simulate(table, cluster, p).jobs.drop("status") for p in policies]
    assert all(run.equals(runs[0]) for run in runs[1:])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios(), st.sampled_from(["srtf", "las:61"]))
def test_a_preemptive_queue_orders_the_same_whether_its_keys_pack_into_ints_or_not(scenario, base: str) -> None:
    """Whole-number keys are packed into one int per queue entry; a key of another type turns the queue back into
    tuples, mid-run: the three ways give the same run."""
    from dlcluster.sim.policies import get_policy

    table, cluster = scenario
    cls = get_policy(base)

    class Negated(cls):  # type: ignore[misc, valid-type]
        def priority(self, job: int, now: int) -> float:  # negative whole numbers pack too
            return -super().priority(job, now)

    class NegatedFloats(cls):  # type: ignore[misc, valid-type]
        def priority(self, job: int, now: int) -> float:
            return -float(super().priority(job, now))

    _same_runs(table, cluster, _key_variants(cls))
    _same_runs(table, cluster, (Negated, NegatedFloats))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios(), st.sampled_from(["fifo", "sjf"]), st.integers(1, 7))
def test_a_blocking_queue_orders_the_same_whether_its_keys_pack_into_ints_or_not(scenario, base: str,
                                                                                 modulus: int) -> None:
    """The heap pass keeps packed entries that come in ascending order in a list beside its heap (FIFO's arrivals),
    the others in the heap: keys in any order (here folded modulo a number, so that they also fall and tie), as
    packed ints, as tuples, or turning into tuples mid-run, give the same run."""
    from dlcluster.sim.policies import get_policy

    table, cluster = scenario
    cls = get_policy(base)

    class Folded(cls):  # type: ignore[misc, valid-type]
        def priority(self, job: int, now: int) -> int:
            return int(super().priority(job, now)) % modulus + (job % 3) * modulus

    _same_runs(table, cluster, _key_variants(cls))
    _same_runs(table, cluster, _key_variants(Folded))


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios(), st.sampled_from(["fifo-easy", "qssf-easy"]),
       st.sampled_from(["consolidate", "dedicated", "first-fit", "random"]), st.booleans())
def test_easy_backfill_skipping_sizes_that_failed_changes_nothing(scenario, policy: str, placement: str,
                                                                  speed: bool) -> None:
    """The EASY walk tries a size that failed only once (sized placements): the same run as placing every job."""
    from unittest import mock

    from dlcluster.sim.cycle import Cycle
    from dlcluster.sim.speed import PlacementSpeed

    table, cluster = scenario
    kwargs = {"placement": placement, "estimates": estimates_for(table), "speed": PlacementSpeed() if speed else None}
    fast = simulate(table, cluster, policy, **kwargs)
    init = Cycle.__init__

    def unsized(self, *args, **kw):  # type: ignore[no-untyped-def]
        init(self, *args, **kw)
        self.size_decides = False

    with mock.patch.object(Cycle, "__init__", unsized):
        slow = simulate(table, cluster, policy, **kwargs)
    assert fast.jobs.equals(slow.jobs) and fast.placements.equals(slow.placements)
    check_invariants(table, cluster, fast)
