"""``dlcluster compare``: the comparison report of a sweep's results folder."""

from __future__ import annotations

import os
from pathlib import Path

import typer
from rich.console import Console

from dlcluster.cli import app
from dlcluster.errors import ConfigError


@app.command()
def compare(
    results: Path = typer.Argument(..., help="Results folder of dlcluster sweep (results.parquet, sweep.json, "
                                   "cells/)."),
    output: Path = typer.Option(..., "--output", "-o", help="Report folder (index.html, figures/, tables/)."),
) -> None:
    """Write a self-contained HTML report comparing a sweep's settings (95% intervals over seeds)."""
    from dlcluster.sweep.compare import build_compare_report

    _check_output(output, results)
    page = build_compare_report(results, output)
    Console(stderr=True).print(f"wrote {page}", soft_wrap=True)


def _check_output(output: Path, results: Path) -> None:
    """Fail before any work when the report folder cannot be written or would land inside the results."""
    if output.exists() and not output.is_dir():
        raise ConfigError(f"-o {output}: is a file; the report is written as a folder")
    if output.resolve() == results.resolve():
        raise ConfigError(f"-o {output}: is the results folder itself; choose another folder for the report")
    base = next(p for p in (output, *output.absolute().parents) if p.exists())
    if not base.is_dir():
        raise ConfigError(f"-o {output}: {base} is a file, not a folder")
    if not os.access(base, os.W_OK | os.X_OK):
        raise ConfigError(f"-o {output}: {base} is not writable")
