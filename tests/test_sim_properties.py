"""Invariants of the simulator on random small traces and clusters (hypothesis)."""

from __future__ import annotations

import numpy as np
import polars as pl
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_sim_helpers import jobs, spec

from dlcluster.sim import simulate
from dlcluster.sim.framework import checkpoint_overhead

POLICIES = ("fifo", "sjf", "qssf", "srtf")


@st.composite
def scenarios(draw: st.DrawFn, *, uniform: bool = False, max_gpus: int = 12, one_gpu: bool = False):  # noqa: ANN201
    n_vcs = draw(st.integers(1, 2))
    vcs = {}
    size = draw(st.sampled_from([1, 2, 4, 8]))
    for v in range(n_vcs):
        if uniform:
            vcs[f"vc{v}"] = (size,) * draw(st.integers(1, 3))
        else:
            vcs[f"vc{v}"] = tuple(draw(st.lists(st.sampled_from([1, 2, 4, 8]), min_size=1, max_size=3)))
    n = draw(st.integers(1, 25))
    rows = []
    for i in range(n):
        rows.append((
            f"j{i}", draw(st.sampled_from(sorted(vcs))), 1 if one_gpu else draw(st.integers(1, max_gpus)),
            draw(st.integers(0, 60)), draw(st.integers(0, 40)), draw(st.sampled_from(["u1", "u2", "u3"])),
        ))
    return jobs(*rows), spec(**vcs)


def _estimates(table: pl.DataFrame) -> pl.DataFrame:
    # a deterministic, imperfect predictor: half or double the true duration
    return table.select("job_id", estimate=(pl.col("duration") * pl.when(pl.col("gpu_num") % 2 == 0)
                                            .then(0.5).otherwise(2.0)).cast(pl.Float64) + 1)


def _check_common(table: pl.DataFrame, cluster, result) -> None:  # noqa: ANN001
    sizes = {vc: sum(n) for vc, n in cluster.vcs.items()}
    out = result.jobs
    assert out.height == table.height
    big = {r["job_id"] for r in table.iter_rows(named=True) if r["gpu_num"] > sizes[r["vc"]]}
    assert set(out.filter(pl.col("status") == "unschedulable")["job_id"]) == big
    done = out.filter(pl.col("status") == "completed")
    assert done["job_id"].n_unique() == done.height == table.height - len(big)  # each ends exactly once
    assert done["end"].null_count() == 0
    assert (done["start"] >= done["submit"]).all() and (done["end"] >= done["start"]).all()
    pl_ = result.placements
    # gang: every run segment holds exactly the job's GPU count
    seg = pl_.group_by("job_id", "start").agg(pl.col("gpus").sum()).join(done.select("job_id", "gpu_num"), on="job_id")
    assert (seg["gpus"] == seg["gpu_num"]).all()
    # no GPU is ever given twice: sweep each node's allocations over time
    for (vc, node), part in pl_.group_by("vc", "node"):
        times = np.concatenate([part["start"].to_numpy(), part["end"].to_numpy()])
        delta = np.concatenate([part["gpus"].to_numpy(), -part["gpus"].to_numpy()])
        order = np.lexsort((delta, times))  # releases before allocations at the same second
        assert np.cumsum(delta[order]).max() <= cluster.vcs[vc][node]


def _segments_per_job(result) -> dict[str, int]:  # noqa: ANN001
    return dict(result.placements.group_by("job_id").agg(pl.col("start").n_unique()).iter_rows())


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios(), st.sampled_from(POLICIES))
def test_invariants_default_mode(scenario, policy: str) -> None:  # noqa: ANN001
    table, cluster = scenario
    result = simulate(table, cluster, policy, estimates=_estimates(table))
    _check_common(table, cluster, result)
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
def test_invariants_compat_mode(scenario, policy: str) -> None:  # noqa: ANN001
    table, cluster = scenario
    result = simulate(table, cluster, policy, estimates=_estimates(table), compat="helios-artifact")
    _check_common(table, cluster, result)
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
def test_srtf_is_work_conserving_for_one_gpu_jobs(scenario) -> None:  # noqa: ANN001
    table, cluster = scenario
    result = simulate(table, cluster, "srtf")
    done, pl_ = result.jobs, result.placements
    for vc, part in done.group_by("vc"):
        vc = vc[0]
        segs = pl_.filter(pl.col("vc") == vc)
        instants = np.unique(np.concatenate([part["submit"].to_numpy(), segs["start"].to_numpy(),
                                             segs["end"].to_numpy()]))
        for t in instants:
            present = ((part["submit"] <= t) & (part["end"] > t)).sum()
            running = ((segs["start"] <= t) & (segs["end"] > t)).sum()
            assert running == min(present, sum(cluster.vcs[vc])), (vc, t)


@settings(max_examples=15, deadline=None)
@given(scenarios(), st.sampled_from(POLICIES))
def test_same_input_same_output(scenario, policy: str) -> None:  # noqa: ANN001
    table, cluster = scenario
    a = simulate(table, cluster, policy, estimates=_estimates(table))
    b = simulate(table, cluster, policy, estimates=_estimates(table))
    assert a.jobs.equals(b.jobs) and a.timeline.equals(b.timeline) and a.placements.equals(b.placements)
