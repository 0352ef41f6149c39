"""Helpers for the simulator tests: hand-written traces, random scenarios, invariant checks, the CLI (no tests here)."""

from __future__ import annotations

import importlib.util
import signal
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import numpy as np
import polars as pl
from hypothesis import strategies as st

from dlcluster.cluster import ClusterSpec
from dlcluster.io.parquet import write
from dlcluster.schema import conform
from dlcluster.trace import Trace

# keys every summary (overall and per VC) must hold
SUMMARY_KEYS = {"jobs", "mean_jct", "mean_queue_delay", "p50_jct", "p99_jct", "p99_queue_delay", "utilization",
                "makespan", "unschedulable"}


def jobs(*rows: tuple) -> pl.DataFrame:
    """Rows ``(job_id, vc, gpu_num, submit, duration[, user])`` as a minimal canonical job table."""
    full = [r if len(r) == 6 else (*r, "u") for r in rows]
    return pl.DataFrame(
        full,
        schema={"job_id": pl.String, "vc": pl.String, "gpu_num": pl.Int32, "submit_time": pl.Int64,
                "duration": pl.Int64, "user": pl.String},
        orient="row",
    )


def spec(**vcs: tuple[int, ...]) -> ClusterSpec:
    """A cluster spec from ``vc=(gpus per node, ...)``."""
    return ClusterSpec({vc: tuple(nodes) for vc, nodes in vcs.items()})


def write_trace(path: Path, table: pl.DataFrame, cluster: ClusterSpec) -> Path:
    """``table`` (rows as from :func:`jobs`) as a canonical Parquet trace at ``path`` carrying ``cluster``."""
    table = conform(table.with_columns(pl.lit("test").alias("cluster"), pl.lit("completed").alias("status")))
    return write(Trace(table, "parquet", cluster=cluster), path)


def interruptible() -> None:
    """``preexec_fn`` for a child that a test interrupts: it starts as a shell starts a foreground job, with SIGINT (and
    SIGHUP, which ``nohup`` ignores) at its default and unblocked, whatever the test process inherited or an earlier
    test left (in two fresh-clone runs of the whole suite on every core such a child ran on after the signal; alone,
    the same tests pass)."""
    for sig in (signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, signal.SIGHUP})


def cli(*args: str) -> subprocess.CompletedProcess:
    """Run ``dlcluster ARGS`` in a child process, capturing its output."""
    return subprocess.run([sys.executable, "-m", "dlcluster", *args], check=False, capture_output=True, text=True)


def load_example(name: str) -> ModuleType:
    """The script ``examples/NAME.py`` as a module (the docs' tables are its output)."""
    spec = importlib.util.spec_from_file_location(name, Path(__file__).resolve().parents[1] / f"examples/{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def by_id(result_jobs: pl.DataFrame) -> dict[str, dict]:
    """Result rows keyed by job id."""
    return {r["job_id"]: r for r in result_jobs.iter_rows(named=True)}


@st.composite
def scenarios(draw: st.DrawFn, *, uniform: bool = False, max_gpus: int = 12, one_gpu: bool = False):
    """A small random (job table, cluster spec): 1-2 VCs of 1-3 nodes, up to 25 jobs."""
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


def estimates_for(table: pl.DataFrame) -> pl.DataFrame:
    """A deterministic, imperfect predictor: half or double the true duration, plus one second."""
    return table.select("job_id", estimate=(pl.col("duration") * pl.when(pl.col("gpu_num") % 2 == 0)
                                            .then(0.5).otherwise(2.0)).cast(pl.Float64) + 1)


def check_invariants(table: pl.DataFrame, cluster, result) -> None:
    """Every job ends once (or is unschedulable), start >= submit, gangs whole, no GPU given twice."""
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


def assert_work_conserving(result, cluster: ClusterSpec) -> None:
    """At every event instant each VC runs min(jobs present, its GPUs) 1-GPU jobs: no GPU idles while one waits."""
    done, segs_all = result.jobs, result.placements
    for (vc,), part in done.group_by("vc"):
        segs = segs_all.filter(pl.col("vc") == vc)
        instants = np.unique(np.concatenate([part["submit"].to_numpy(), segs["start"].to_numpy(),
                                             segs["end"].to_numpy()]))
        for t in instants:
            present = ((part["submit"] <= t) & (part["end"] > t)).sum()
            running = ((segs["start"] <= t) & (segs["end"] > t)).sum()
            assert running == min(present, sum(cluster.vcs[vc])), (vc, t)
