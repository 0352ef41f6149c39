"""``dlcluster compare``: the comparison report of a sweep's results folder."""

from __future__ import annotations

from pathlib import Path

import typer

from dlcluster.cli import Console, app
from dlcluster.cli.options import report_folder


@app.command()
def compare(
    results: Path = typer.Argument(..., help="Results folder of dlcluster sweep (results.parquet, sweep.json, "
                                   "cells/)."),
    output: Path = typer.Option(..., "--output", "-o", help="Report folder (index.html, figures/, tables/)."),
) -> None:
    """Write a self-contained HTML report comparing a sweep's settings (95% intervals over seeds)."""
    from dlcluster.sweep.compare import build_compare_report

    report_folder(output, results)
    page = build_compare_report(results, output)
    Console(stderr=True).print(f"wrote {page}", soft_wrap=True)

