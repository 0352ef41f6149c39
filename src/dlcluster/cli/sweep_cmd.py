"""``dlcluster sweep``: run every cell of an experiment file, resuming where an earlier run stopped."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, cast

import click
from rich.progress import TextColumn, TimeRemainingColumn

from dlcluster.cli import app, err_console
from dlcluster.cli.long_runs import progress_bar
from dlcluster.cli.options import PATH, output_folder
from dlcluster.errors import ConfigError, DlclusterError, InputError

if TYPE_CHECKING:
    from dlcluster.sweep.experiment import Experiment


@app.command()
@click.argument("experiment", type=PATH)
@click.option("--output", "-o", type=PATH, required=True, help="Results folder (created; re-running resumes).")
@click.option("--executor", default="local", show_default=True, help="local (a process pool) or ray (RAY_ADDRESS, "
              "else a local Ray instance).")
@click.option("--workers", type=int, help="Parallel cells (default: the machine's cores; never more than the cells, "
              "at most 1,024).")
def sweep(experiment: Path, output: Path, executor: str, workers: int | None) -> None:
    """Run a parameter sweep: every cell is one `simulate` run; results.parquet collects them.

    EXPERIMENT: the experiment file (TOML): traces, fixed options, grid, cases (see docs/sweeps.md).
    """
    from dlcluster.sweep.executors import make_executor
    from dlcluster.sweep.experiment import read_experiment
    from dlcluster.sweep.run import run_sweep
    from dlcluster.sweep.simulate_options import check_cell, checks

    output_folder(output)
    runner = make_executor(executor, workers)
    try:
        exp = read_experiment(experiment, checks(), check_cell)
        runner.start(len(exp.cells))  # the workers start up while the traces are read and made
        _check_windows(exp, _trace_zones(exp))
        bar = progress_bar(err_console, TextColumn("[red]{task.fields[failed]} failed"), TimeRemainingColumn())
        with bar:
            task = bar.add_task(f"sweep {exp.name}", total=len(exp.cells), failed=0)

            def progress(done: int, failed: int, total: int) -> None:
                bar.update(task, completed=done, failed=failed)

            try:
                report = run_sweep(exp, output, runner, progress)
            except KeyboardInterrupt:
                cells = output / "cells"
                kept = f"the finished cells are kept in {cells}" if _holds_cells(cells) else "no cell had finished"
                err_console.print(f"sweep {exp.name}: stopped; {kept}, and running the same command again runs only "
                                  "the others", soft_wrap=True)
                raise
    finally:
        runner.stop()
    err_console.print(f"sweep {exp.name}: {report.total} cells, {report.skipped} already done, {report.ran} run now, "
                      f"{report.failed} failed -> {report.results}", soft_wrap=True)
    if report.failed:
        err_console.print(f"first failure: {report.first_error}", soft_wrap=True)
        err_console.print(f"failed cells are listed in {output / 'failed'}; re-running the sweep tries them again",
                          style="yellow", soft_wrap=True)
        # the table is written, but a script must not take a sweep with holes for a whole one (status 1 is for bugs)
        raise click.exceptions.Exit(3)


def _holds_cells(cells: Path) -> bool:
    """Whether the sweep's ``cells/`` folder holds a finished cell (not only the hidden folders of cells being written)."""
    try:
        return any(not entry.name.startswith(".") for entry in cells.iterdir())
    except OSError:  # not created yet
        return False


def _trace_zones(exp: Experiment) -> dict[str, str]:
    """The time zone of every trace of ``exp``, by name: a preset's, or the file's as read once with its options, so
    that a bad option or row is one error before any cell runs (each cell would fail on it)."""
    from dlcluster.cli.options import load
    from dlcluster.synth import load_preset

    zones = {}
    for i, source in enumerate(exp.traces):
        if source.file is None:
            zones[source.name] = load_preset(cast(str, source.preset)).timezone
            continue
        opts = dict(source.read_options)
        try:
            trace = load(source.file, cast("str | None", opts.get("format")),
                         lenient=bool(opts.get("lenient", False)), mapping=cast("str | None", opts.get("map")),
                         time_unit=cast("str | None", opts.get("time_unit")), tz=cast("str | None", opts.get("tz")),
                         format_option="format = NAME in its [[trace]] table")
        except ConfigError as exc:  # (a bad option: the experiment file's, not the trace's)
            raise InputError(str(exc), path=exp.path, field=f"trace[{i}]") from None
        zones[source.name] = trace.timezone
    return zones


def _check_windows(exp: Experiment, zones: dict[str, str]) -> None:
    """Place each cell's ``start`` and ``end`` in its trace's time zone (``zones``, by trace name) as ``simulate``
    does: a time that zone skips, or cannot convert, is then one error before any cell runs, not every cell's."""
    from dlcluster.cli.long_runs import submit_window
    from dlcluster.sweep.simulate_options import parsed

    for cell in exp.cells:
        if "start" in cell.params or "end" in cell.params:
            o = parsed(cell.params, exp.path.parent)
            try:
                submit_window(o["start"], o["end"], zones[cell.trace.name], o["compat"] is not None)
            except DlclusterError as exc:
                raise cell.error(exc, exp.path) from None
