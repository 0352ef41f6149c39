"""``dlcluster report``: the report of simulation runs (the folders ``dlcluster simulate -o`` writes)."""

from __future__ import annotations

from pathlib import Path

import typer

from dlcluster.cli import Console, app
from dlcluster.cli.options import FormatOpt, LenientOpt, MapOpt, TimeUnitOpt, TzOpt, load, report_folder


@app.command()
def report(
    runs: list[Path] = typer.Argument(..., help="Run folders written by dlcluster simulate -o (or a folder "
                                      "holding several, one per policy)."),
    output: Path = typer.Option(..., "--output", "-o", help="Report folder (index.html, figures/, tables/)."),
    trace: Path = typer.Option(None, "--trace", help="The trace the runs replayed: its recorded queueing is "
                               "compared with each run's, per VC."),
    fmt: str = FormatOpt,
    lenient: bool = LenientOpt,
    mapping: str = MapOpt,
    time_unit: str = TimeUnitOpt,
    tz: str = TzOpt,
) -> None:
    """Write a self-contained HTML report comparing simulation runs (figures also as SVG/PNG, tables as CSV)."""
    from dlcluster.report.runs import read_runs
    from dlcluster.report.sim_build import build_sim_report

    report_folder(output)
    sims = read_runs(runs)
    observed = (load(trace, fmt, lenient=lenient, mapping=mapping, time_unit=time_unit, tz=tz)
                if trace is not None else None)
    page = build_sim_report(sims, output, observed)
    Console(stderr=True).print(f"wrote {page}", soft_wrap=True)
