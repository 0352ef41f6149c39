"""Assemble the whole characterisation report for one or more traces."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl

from dlcluster.analysis.gpu_util import MEMORY_LIMIT
from dlcluster.analysis.queueing import PLACEMENT_COLUMNS, check_sim_jobs
from dlcluster.cluster import ClusterSpec
from dlcluster.errors import InputError
from dlcluster.report import sections
from dlcluster.report.html import write_report
from dlcluster.report.inputs import Input
from dlcluster.report.runs import check_summary
from dlcluster.text import count
from dlcluster.trace import Trace


def _names(traces: list[Trace]) -> list[str]:
    names = [t.name for t in traces]
    return [f"{n} ({i + 1})" if names.count(n) > 1 else n for i, n in enumerate(names)]


def _read_parquet(path: str | Path) -> pl.DataFrame:
    try:
        return pl.read_parquet(path)
    except Exception as exc:  # polars raises several types for a damaged or non-Parquet file
        raise InputError(f"not a readable Parquet file ({exc})", path=path) from exc


def read_sim_jobs(path: str | Path) -> pl.DataFrame:
    """The simulator's per-job Parquet (``job_id, vc, gpu_num, submit, start, end``), checked."""
    return check_sim_jobs(_read_parquet(path), str(path))


def read_sim_placements(jobs_path: str | Path) -> pl.DataFrame | None:
    """The ``placements.parquet`` the simulator wrote beside ``jobs_path`` (per-node segments), if any."""
    path = Path(jobs_path).with_name("placements.parquet")
    if not path.is_file():
        return None
    segs = _read_parquet(path)
    missing = [c for c in PLACEMENT_COLUMNS if c not in segs.columns]
    if missing:
        raise InputError(f"missing column '{missing[0]}' (need {', '.join(PLACEMENT_COLUMNS)})", path=path)
    return segs


def read_sim_summary(jobs_path: str | Path) -> dict | None:
    """The ``summary.json`` the simulator wrote beside ``jobs_path``, if any."""
    path = Path(jobs_path).with_name("summary.json")
    if not path.is_file():
        return None
    try:
        summary = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InputError(f"not a readable JSON file ({exc})", path=path) from exc
    if not isinstance(summary, dict):
        raise InputError("expected a JSON object (the simulator's summary)", path=path)
    check_summary(summary, path)
    return summary


POOL = "all"  # the one VC of a pooled report (as simulate --pooled names it)


def build_report(traces: list[Trace], out: str | Path, *, cluster: ClusterSpec | None = None,
                 sim_jobs: pl.DataFrame | None = None, sim_placements: pl.DataFrame | None = None,
                 sim_name: str = "simulation", memory_limit: str = MEMORY_LIMIT,
                 sim_summary: dict | None = None, pooled: bool = False) -> Path:
    """Write ``out/index.html`` plus figure and table files; return the page's path.

    ``cluster`` replaces every trace's own spec; without it each trace uses the spec it
    carries, if any. ``pooled`` makes each trace's whole cluster one VC, ``all``, and every job
    one of its (VC labels that are not the spec's, such as openb's QoS classes). ``sim_jobs``
    (the simulator's per-job table) feeds section 6, and ``sim_placements`` (its per-node
    segments) splits fragmentation from queue order there, by the placement rule its
    ``sim_summary`` (the run's summary.json) names.
    """
    out = Path(out)
    specs = [cluster or t.cluster for t in traces]
    if pooled:
        traces = [t.with_jobs(t.jobs.with_columns(pl.lit(POOL, pl.String).alias("vc"))) for t in traces]
        specs = [s.pooled(POOL) if s is not None else None for s in specs]
    inputs = [Input.of(n, t, s) for n, t, s in zip(_names(traces), traces, specs, strict=True)]
    sim_spec = cluster or next((t.cluster for t in traces if t.cluster is not None), None)
    parts = [
        sections.jobs_section(inputs),
        sections.cluster_section(inputs),
        sections.users_section(inputs),
        sections.locality_section(inputs, memory_limit),
        sections.failures_section(inputs),
        sections.queueing_section(sim_jobs, sim_spec, sim_name, sim_placements, sim_summary),
        sections.summary_section(inputs),
    ]
    subtitle = [f"{i.name}: {count(i.jobs.height, 'job')}, format {i.trace.format}, time zone {i.trace.timezone}"
                + (f", {count(i.total_gpus, 'GPU')} in the cluster spec" if i.spec is not None else ", no cluster spec")
                + (f" ({i.coverage})" if i.coverage else "")
                + (", pooled: every job in one VC, the whole cluster" if pooled else "") for i in inputs]
    return write_report(parts, out, "Workload characterisation: " + ", ".join(i.name for i in inputs), subtitle)
