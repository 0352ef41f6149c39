"""CPU modelling in the simulator: CPUs proportional to GPUs per node, checked by every placement."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_sim_helpers import by_id, check_invariants, cli, jobs, scenarios, write_trace

from dlcluster.cluster import ClusterSpec
from dlcluster.errors import InputError
from dlcluster.io.cluster_spec import write_cluster_spec
from dlcluster.sim import simulate


def with_cpus(table: pl.DataFrame, *cpus: int | None) -> pl.DataFrame:
    """The job table with a ``cpu_num`` column (one value per row)."""
    return table.with_columns(pl.Series("cpu_num", cpus, pl.Int32))


def cells(result, job: str) -> list[tuple[int, int, int]]:
    """(node, GPUs, CPUs) rows of ``job``'s placements, by start then node."""
    rows = result.placements.filter(pl.col("job_id") == job).sort("start", "node")
    return list(zip(rows["node"], rows["gpus"], rows["cpus"], strict=True))


@pytest.mark.parametrize("placement", ["consolidate", "first-fit", "random", "relax"])
def test_job_waits_for_cpus_although_gpus_are_free(placement: str) -> None:
    t = with_cpus(jobs(("a", "v", 1, 0, 100), ("b", "v", 1, 5, 10)), 8, 1)
    cluster = ClusterSpec({"v": (8,)}, {"v": (8,)})
    r = by_id(simulate(t, cluster, "fifo", placement=placement).jobs)
    assert r["b"]["start"] == 100  # 7 GPUs were free at 5, but no CPU
    r = by_id(simulate(t, ClusterSpec({"v": (8,)}), "fifo", placement=placement).jobs)
    assert r["b"]["start"] == 5


def test_consolidate_picks_the_node_with_cpus_left() -> None:
    t = with_cpus(jobs(("a", "v", 2, 0, 100), ("b", "v", 2, 1, 100)), 30, 4)
    r = simulate(t, ClusterSpec({"v": (4, 4)}, {"v": (32, 32)}), "fifo")
    assert cells(r, "a") == [(0, 2, 30)]
    assert cells(r, "b") == [(1, 2, 4)]  # best fit by GPUs alone would be node 0, which has 2 CPUs left


def test_cpus_split_in_proportion_to_gpus_rounded_up() -> None:
    t = with_cpus(jobs(("a", "v", 3, 0, 10)), 10)
    r = simulate(t, ClusterSpec({"v": (2, 1)}, {"v": (7, 4)}), "fifo", placement="first-fit")
    assert cells(r, "a") == [(0, 2, 7), (1, 1, 4)]  # ceil(10·2/3), ceil(10·1/3)
    r = simulate(t, ClusterSpec({"v": (2, 1)}, {"v": (6, 4)}), "fifo", placement="first-fit")
    assert by_id(r.jobs)["a"]["status"] == "unschedulable"


def test_few_cpus_on_a_node_cap_the_gpus_taken_there() -> None:
    t = with_cpus(jobs(("a", "v", 4, 0, 10)), 8)
    r = simulate(t, ClusterSpec({"v": (4, 4)}, {"v": (4, 16)}), "fifo", placement="first-fit")
    assert cells(r, "a") == [(0, 2, 4), (1, 2, 4)]


def test_null_cpu_num_needs_no_cpus() -> None:
    t = with_cpus(jobs(("a", "v", 1, 0, 100), ("b", "v", 1, 5, 10)), 8, None)
    r = simulate(t, ClusterSpec({"v": (8,)}, {"v": (8,)}), "fifo")
    assert by_id(r.jobs)["b"]["start"] == 5 and cells(r, "b") == [(0, 1, 0)]


def test_unschedulable_by_cpus_with_reasons() -> None:
    t = with_cpus(jobs(("big", "v", 1, 0, 10), ("wide", "v", 2, 0, 10), ("ok", "v", 2, 1, 10)), 17, 12, 8)
    cluster = ClusterSpec({"v": (4, 4)}, {"v": (8, 8)})
    r = simulate(t, cluster, "fifo")
    assert r.summary["unschedulable_jobs"] == [
        {"job_id": "big", "vc": "v", "reason": "needs 17 CPUs, its VC has 16"},
        {"job_id": "wide", "vc": "v",
         "reason": "needs 2 GPUs with 12 CPUs: no consolidate placement fits them even on its empty VC"},
    ]
    assert r.summary["vcs"]["v"]["unschedulable"] == 2 and by_id(r.jobs)["ok"]["start"] == 1
    # a split placement can give "wide" 1 GPU and 6 CPUs on each node; relax does so once it has waited
    r = simulate(t, cluster, "fifo", placement="first-fit")
    assert cells(r, "wide") == [(0, 1, 6), (1, 1, 6)]
    r = simulate(t, cluster, "fifo", placement="relax:30")
    assert by_id(r.jobs)["wide"]["start"] == 30 and cells(r, "wide") == [(0, 1, 6), (1, 1, 6)]


def test_negative_cpu_num_is_an_error() -> None:
    t = with_cpus(jobs(("a", "v", 1, 0, 10)), -2)
    with pytest.raises(InputError) as err:
        simulate(t, ClusterSpec({"v": (8,)}, {"v": (8,)}), "fifo")
    assert str(err.value) == "<jobs>, field 'cpu_num': job 'a' asks for a negative number of CPUs"
    assert simulate(t, ClusterSpec({"v": (8,)}), "fifo").jobs["start"].to_list() == [0]  # CPUs not modelled


def test_preemption_releases_cpus() -> None:
    t = with_cpus(jobs(("long", "v", 2, 0, 100), ("short", "v", 1, 5, 10)), 8, 4)
    r = simulate(t, ClusterSpec({"v": (2,)}, {"v": (8,)}), "srtf")
    out = by_id(r.jobs)
    assert out["short"]["start"] == 5 and out["long"]["preemptions"] == 1
    assert cells(r, "long") == [(0, 2, 8), (0, 2, 8)]


@pytest.mark.parametrize("placement", ["consolidate", "first-fit", "random", "relax"])
@pytest.mark.parametrize("policy", ["srtf", "las"])
def test_a_job_short_only_of_cpus_waits_and_preempts_nobody(policy: str, placement: str) -> None:
    # at 2, c (2 GPUs, 4 CPUs) finds 3 free GPUs on each node but 2 free CPUs: on one node it waits for a's (100);
    # split, 1 GPU and 2 CPUs on each node, it starts at once
    t = with_cpus(jobs(("a", "v", 1, 0, 100), ("b", "v", 1, 1, 200), ("c", "v", 2, 2, 50)), 6, 6, 4)
    r = simulate(t, ClusterSpec({"v": (4, 4)}, {"v": (8, 8)}), policy, placement=placement)
    out = by_id(r.jobs)
    assert [out[j]["preemptions"] for j in "abc"] == [0, 0, 0]
    assert out["c"]["start"] == (2 if placement in ("first-fit", "random") else 100) and out["b"]["end"] == 201
    # short of GPUs too, it still preempts (and the victim's CPUs go with its GPUs)
    t = with_cpus(jobs(("a", "v", 4, 0, 100), ("b", "v", 4, 1, 200), ("c", "v", 2, 2, 50)), 6, 6, 4)
    out = by_id(simulate(t, ClusterSpec({"v": (4, 4)}, {"v": (8, 8)}), policy, placement=placement).jobs)
    assert out["c"]["start"] == 2 and out["a"]["preemptions"] + out["b"]["preemptions"] == 1


def test_compat_placer_checks_cpus() -> None:
    t = with_cpus(jobs(("a", "v", 2, 0, 100), ("b", "v", 2, 1, 10), ("c", "v", 6, 2, 10)), 16, 16, 6)
    r = simulate(t, ClusterSpec({"v": (4, 4)}, {"v": (16, 16)}), "fifo", compat="helios-artifact")
    assert cells(r, "b") == [(1, 2, 16)]
    assert by_id(r.jobs)["c"]["start"] == 100  # a's node has GPUs but no CPUs left until a ends
    r = simulate(t, ClusterSpec({"v": (4, 4)}), "fifo", compat="helios-artifact")
    assert by_id(r.jobs)["c"]["start"] == 11


def test_without_cpus_outputs_are_unchanged() -> None:
    t = jobs(("a", "v", 2, 0, 100), ("b", "v", 4, 1, 10), ("c", "v", 3, 2, 50))
    plain = simulate(t, ClusterSpec({"v": (4, 4)}), "fifo")
    cpus = ClusterSpec({"v": (4, 4)}, {"v": (1, 1)})
    no_column = simulate(t, cpus, "fifo")  # the trace asks for no CPUs: nothing to model
    assert no_column.placements.equals(plain.placements) and no_column.timeline.equals(plain.timeline)
    assert "cpu_utilization" not in no_column.summary["overall"]
    nulls = simulate(with_cpus(t, None, None, None), cpus, "fifo")
    assert nulls.jobs.equals(plain.jobs)
    assert nulls.placements.drop("cpus").equals(plain.placements) and (nulls.placements["cpus"] == 0).all()
    assert (nulls.timeline["idle_cpus"] == 2).all()


def test_cpu_timeline_and_utilization() -> None:
    t = with_cpus(jobs(("a", "v", 1, 0, 120), ("b", "v", 1, 60, 60)), 3, 2)
    r = simulate(t, ClusterSpec({"v": (2, 2)}, {"v": (4, 4)}), "fifo")
    assert r.timeline["total_cpus"].to_list() == [8, 8, 8]
    assert r.timeline["idle_cpus"].to_list() == [5, 3, 8]
    assert r.summary["overall"]["cpus"] == 8
    assert r.summary["overall"]["cpu_utilization"] == pytest.approx((3 * 120 + 2 * 60) / (8 * 120))
    assert r.summary["vcs"]["v"]["cpu_utilization"] == r.summary["overall"]["cpu_utilization"]


def test_pooled_keeps_node_cpus() -> None:
    t = with_cpus(jobs(("a", "w", 1, 0, 10), ("b", "v", 1, 0, 10)), 5, 5)
    r = simulate(t, ClusterSpec({"w": (1,), "v": (1,)}, {"w": (4,), "v": (8,)}), "fifo", pooled=True)
    assert cells(r, "a") == [(0, 1, 5)]  # the pooled node order is v, w: only v's node has 5 CPUs
    assert by_id(r.jobs)["b"]["start"] == 10


# --- properties ---------------------------------------------------------------------------------

def _feasible_alone(sizes: tuple[int, ...], cpus: tuple[int, ...], gpus: int, need: int, split: bool) -> bool:
    """Whether a job fits the empty VC: on one node, or split with ceil-proportional CPUs per node."""
    if not split and gpus <= max(sizes):
        return any(s >= gpus and c >= need for s, c in zip(sizes, cpus, strict=True))
    return sum(min(s, c * gpus // need) for s, c in zip(sizes, cpus, strict=True)) >= gpus


@st.composite
def cpu_scenarios(draw: st.DrawFn, uniform: bool = False):
    table, cluster = draw(scenarios(uniform=uniform))
    cpus = {vc: tuple(draw(st.integers(0, 4)) * g for g in nodes) for vc, nodes in cluster.vcs.items()}
    asked = draw(st.lists(st.one_of(st.none(), st.integers(0, 40)), min_size=table.height, max_size=table.height))
    return with_cpus(table, *asked), ClusterSpec(cluster.vcs, cpus)


def check_cpu_invariants(table: pl.DataFrame, cluster: ClusterSpec, result, split: bool) -> None:
    """GPU invariants on the jobs that fit, the CPU misfits exactly those no placement fits, no CPU over-allocated."""
    gpu_total = {vc: sum(n) for vc, n in cluster.vcs.items()}
    misfit = {r["job_id"] for r in table.iter_rows(named=True)
              if r["gpu_num"] <= gpu_total[r["vc"]] and r["cpu_num"]
              and not _feasible_alone(cluster.vcs[r["vc"]], cluster.cpus[r["vc"]], r["gpu_num"], r["cpu_num"], split)}
    keep = ~pl.col("job_id").is_in(list(misfit))
    assert set(result.jobs.filter(pl.col("status") == "unschedulable")["job_id"]) >= misfit
    check_invariants(table.filter(keep), cluster,
                     SimpleNamespace(jobs=result.jobs.filter(keep), placements=result.placements))
    placed = result.placements.join(table.select("job_id", "gpu_num", "cpu_num"), on="job_id")
    expected = (-(-placed["cpu_num"].fill_null(0) * placed["gpus"] // placed["gpu_num"])).cast(pl.Int32)
    assert placed["cpus"].equals(expected, check_names=False)
    for (vc, node), part in result.placements.group_by("vc", "node"):
        times = np.concatenate([part["start"].to_numpy(), part["end"].to_numpy()])
        delta = np.concatenate([part["cpus"].to_numpy(), -part["cpus"].to_numpy()])
        order = np.lexsort((delta, times))  # releases before allocations at the same second
        assert np.cumsum(delta[order]).max() <= cluster.cpus[vc][node]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cpu_scenarios(), st.sampled_from(["fifo", "sjf", "srtf", "fifo-easy"]),
       st.sampled_from(["consolidate", "first-fit", "random"]))
def test_cpu_invariants(scenario, policy: str, placement: str) -> None:
    table, cluster = scenario
    result = simulate(table, cluster, policy, placement=placement)
    check_cpu_invariants(table, cluster, result, split=placement != "consolidate")


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cpu_scenarios(uniform=True), st.sampled_from(["fifo", "srtf"]))
def test_cpu_invariants_compat(scenario, policy: str) -> None:
    table, cluster = scenario
    result = simulate(table, cluster, policy, compat="helios-artifact")
    assert set(result.placements.columns) >= {"cpus"}
    for (vc, node), part in result.placements.group_by("vc", "node"):
        times = np.concatenate([part["start"].to_numpy(), part["end"].to_numpy()])
        delta = np.concatenate([part["cpus"].to_numpy(), -part["cpus"].to_numpy()])
        order = np.lexsort((delta, times))
        assert np.cumsum(delta[order]).max() <= cluster.cpus[vc][node]
    assert result.jobs.filter(pl.col("status") == "completed")["end"].null_count() == 0


# --- command line -------------------------------------------------------------------------------

def _trace(tmp_path: Path) -> Path:
    table = with_cpus(jobs(("a", "v", 4, 1000, 100), ("b", "v", 2, 1010, 10)), 12, 8)
    return write_trace(tmp_path / "t.parquet", table, ClusterSpec({"v": (8,)}))


def test_cli_cpus_per_gpu(tmp_path: Path) -> None:
    trace, out = _trace(tmp_path), tmp_path / "out"
    res = cli("simulate", str(trace), "--cpus-per-gpu", "2", "-o", str(out))
    assert res.returncode == 0, res.stderr
    starts = pl.read_parquet(out / "jobs.parquet").select("job_id", "start").rows()
    assert starts == [("a", 1000), ("b", 1100)]  # 4 GPUs free at 1010, but only 4 of 16 CPUs
    assert pl.read_parquet(out / "placements.parquet")["cpus"].to_list() == [12, 8]
    assert pl.read_parquet(out / "timeline.parquet")["total_cpus"].unique().to_list() == [16]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["overall"]["cpu_utilization"] == pytest.approx((12 * 100 + 8 * 10) / (16 * 110))
    fifo = [line.split() for line in res.stdout.splitlines() if line.startswith("fifo ")]
    assert "CPU" in res.stdout and [f"{summary['overall']['cpu_utilization']:.3f}"] in [row[-1:] for row in fifo]
    res = cli("simulate", str(trace), "-o", str(tmp_path / "plain"))
    assert res.returncode == 0 and "cpus" not in pl.read_parquet(tmp_path / "plain/placements.parquet").columns


def test_cli_cpus_per_gpu_refuses_a_spec_with_cpus(tmp_path: Path) -> None:
    spec = write_cluster_spec(ClusterSpec({"v": (8,)}, {"v": (32,)}), tmp_path / "spec.csv")
    res = cli("simulate", str(_trace(tmp_path)), "--cluster", str(spec), "--cpus-per-gpu", "2", "-o",
               str(tmp_path / "out"))
    assert res.returncode == 2
    assert res.stderr.strip() == f"error: --cpus-per-gpu: the cluster spec ({spec}) already gives CPUs per node"
    res = cli("simulate", str(_trace(tmp_path)), "--cluster", str(spec), "-o", str(tmp_path / "out"))
    assert res.returncode == 0, res.stderr
    assert pl.read_parquet(tmp_path / "out/jobs.parquet")["start"].to_list() == [1000, 1010]


def test_the_overall_cpus_count_every_listed_vc_one_whose_jobs_were_all_too_big_too() -> None:
    # (docs/simulator.md: the overall CPU capacity is the CPUs of every VC in ``vcs``; w's one job needs 16 GPUs)
    t = with_cpus(jobs(("a", "v", 1, 0, 10), ("b", "w", 16, 0, 10)), 4, 4)
    r = simulate(t, ClusterSpec({"v": (8,), "w": (4,)}, {"v": (32,), "w": (16,)}), "fifo")
    assert list(r.summary["vcs"]) == ["v", "w"] and r.summary["vcs"]["w"]["jobs"] == 0
    overall = r.summary["overall"]
    assert overall["cpus"] == 48 and overall["cpu_utilization"] == pytest.approx(4 * 10 / (48 * 10))
