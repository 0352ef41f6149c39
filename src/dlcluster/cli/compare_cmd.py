"""``dlcluster compare``: the comparison report of a sweep's results folder."""

from __future__ import annotations

from pathlib import Path

import click

from dlcluster.cli import Console, app
from dlcluster.cli.options import PATH, report_folder


@app.command()
@click.argument("results", type=PATH)
@click.option("--output", "-o", type=PATH, required=True, help="Report folder (index.html, figures/, tables/).")
def compare(results: Path, output: Path) -> None:
    """Write a self-contained HTML report comparing a sweep's settings (95% intervals over seeds).

    RESULTS: the results folder of `dlcluster sweep` (results.parquet, sweep.json, cells/).
    """
    from dlcluster.sweep.compare import build_compare_report

    report_folder(output, results)
    page = build_compare_report(results, output)
    Console(stderr=True).print(f"wrote {page}", soft_wrap=True)

