"""``dlcluster report``: the report of simulation runs (the folders ``dlcluster simulate -o`` writes)."""

from __future__ import annotations

from pathlib import Path

import click

from dlcluster.cli import Console, app
from dlcluster.cli.options import PATH, load, report_folder, trace_options


@app.command()
@click.argument("runs", nargs=-1, required=True, type=PATH)
@click.option("--output", "-o", type=PATH, required=True, help="Report folder (index.html, figures/, tables/).")
@click.option("--trace", type=PATH, help="The trace the runs replayed: its recorded queueing is compared with each "
              "run's, per VC.")
@trace_options
def report(runs: tuple[Path, ...], output: Path, trace: Path | None, fmt: str | None, lenient: bool,
           mapping: str | None, time_unit: str | None, tz: str | None) -> None:
    """Write a self-contained HTML report comparing simulation runs (figures also as SVG/PNG, tables as CSV).

    RUNS: run folders written by `dlcluster simulate -o`, or a folder holding several (one per policy).
    """
    from dlcluster.report.runs import read_runs
    from dlcluster.report.sim_build import build_sim_report

    report_folder(output, inputs=(trace,), reads=runs)
    sims = read_runs(list(runs))
    observed = (load(trace, fmt, lenient=lenient, mapping=mapping, time_unit=time_unit, tz=tz)
                if trace is not None else None)
    page = build_sim_report(sims, output, observed)
    Console(stderr=True).print(f"wrote {page}", soft_wrap=True)
