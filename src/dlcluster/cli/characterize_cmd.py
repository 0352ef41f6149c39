"""``dlcluster characterize``: the workload characterisation report of one or more traces."""

from __future__ import annotations

import re
from pathlib import Path

import click

from dlcluster.cli import app, err_console
from dlcluster.cli.options import PATH, load, report_folder, trace_options
from dlcluster.errors import ConfigError

MEMORY = re.compile(r"\d+(\.\d+)?\s*[KMGT]?i?B", re.IGNORECASE)  # the sizes DuckDB's memory_limit accepts


@app.command()
@click.argument("paths", nargs=-1, required=True, type=PATH)
@click.option("--output", "-o", type=PATH, required=True, help="Report folder (index.html, figures/, tables/).")
@click.option("--cluster", type=PATH, help="Cluster spec file for every trace (Helios cluster_gpu_number.csv, "
              "Philly machine list or vc,nodes CSV).")
@click.option("--cluster-date", help="Day of a Helios GPU-count file to use as spec (default: its last day).")
@click.option("--sim-jobs", type=PATH, help="Simulator per-job Parquet for the queueing decomposition (job_id, vc, "
              "gpu_num, submit, start, end); a placements.parquet beside it adds the fragmentation / queue-order split.")
@click.option("--memory-limit", default="1GB", show_default=True, help="DuckDB memory limit for the utilisation join.")
@click.option("--pooled", is_flag=True, help="Count every job against the whole cluster as one VC, `all` (for VC "
              "labels that are not the spec's, such as openb's QoS classes).")
@trace_options
def characterize(paths: tuple[Path, ...], output: Path, cluster: Path | None, cluster_date: str | None,
                 sim_jobs: Path | None, memory_limit: str, pooled: bool, fmt: str | None, lenient: bool,
                 mapping: str | None, time_unit: str | None, tz: str | None) -> None:
    """Write a self-contained HTML characterisation report (figures also as SVG/PNG, tables as CSV).

    PATHS: one or more trace files or folders, overlaid in every figure.
    """
    from dlcluster.io.cluster_spec import read_cluster_spec
    from dlcluster.report import build_report
    from dlcluster.report.build import read_sim_jobs, read_sim_placements, read_sim_summary

    report_folder(output, inputs=(*paths, cluster, sim_jobs))
    if not MEMORY.fullmatch(memory_limit):
        raise ConfigError(f"--memory-limit {memory_limit!r}: expected a size such as 1GB, 512MB or 2GiB")
    if cluster_date is not None and cluster is None:
        raise ConfigError("--cluster-date picks a day of the --cluster file: give --cluster too")
    spec = read_cluster_spec(cluster, cluster_date) if cluster is not None else None
    sim = read_sim_jobs(sim_jobs) if sim_jobs is not None else None
    placements = read_sim_placements(sim_jobs) if sim_jobs is not None else None
    summary = read_sim_summary(sim_jobs) if sim_jobs is not None else None
    traces = [load(p, fmt, lenient=lenient, mapping=mapping, time_unit=time_unit, tz=tz) for p in paths]
    from dlcluster.report.inputs import running_note

    for path, trace in zip(paths, traces, strict=True):
        if note := running_note(trace.jobs):
            err_console.print(f"note: {path}: {note}", soft_wrap=True)
    # a run's folder is named after its policy (dlcluster simulate -p a,b writes OUT/a, OUT/b)
    sim_name = f"{sim_jobs.parent.name or 'simulation'}/{sim_jobs.name}" if sim_jobs is not None else "simulation"
    page = build_report(traces, output, cluster=spec, sim_jobs=sim, sim_placements=placements, sim_name=sim_name,
                        memory_limit=memory_limit, sim_summary=summary, pooled=pooled)
    err_console.print(f"wrote {page}", soft_wrap=True)

