"""Run a sweep: make its traces, skip the cells already done, run the rest on an executor, collect the results.

Layout of a results folder::

    experiment.toml        the experiment file, as run
    traces/NAME.parquet    generated traces (one per preset and seed)
    cells/CELL_ID/         each finished cell: what ``simulate -o`` writes, and cell.json (its parameters)
    failed/CELL_ID.json    each failed cell: its parameters and error (tried again on the next run)
    results.parquet        one row per cell, written when every cell has run
    sweep.json             the parameter and metric column names, the experiment's name, the cell count

A cell's folder name is the hash of its inputs (trace bytes, arguments, files they name, dlcluster's version),
so re-running the same file skips what is done, and a changed input runs again.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dlcluster.atomic import write_atomic, write_text_atomic
from dlcluster.errors import ConfigError
from dlcluster.sweep.cells import CellOutcome, CellTask, cell_id, file_digest, remove_staging
from dlcluster.sweep.executors import Executor
from dlcluster.sweep.experiment import Experiment, TraceSource
from dlcluster.sweep.results import metric_columns, table
from dlcluster.sweep.simulate_options import arguments, cell_meaning, flag_of, resolve

Progress = Callable[[int, int, int], None]  # (done, failed, total)


@dataclass
class SweepReport:
    """What a sweep did: how many cells ran now, were already done, failed; where the results are."""

    total: int
    skipped: int
    ran: int
    failed: int
    results: Path
    first_error: str | None = None  # the error of the first cell that failed now


def _trace_file(source: TraceSource, outdir: Path) -> Path:
    """The trace file of ``source``: the user's file as is, or the generated one (made once, kept for re-runs)."""
    if source.file is not None:
        return source.file
    target = outdir / "traces" / f"{source.key}.parquet"
    if not target.exists():
        from dlcluster.io import parquet
        from dlcluster.synth import generate, load_preset

        assert source.preset is not None
        trace = generate(load_preset(source.preset), days=source.days, load=source.load, seed=source.seed)
        target.parent.mkdir(parents=True, exist_ok=True)
        parquet.write(trace, target)
    return target


def _file_options(params: dict[str, Any]) -> dict[str, str]:
    """Digests of the files a cell's (resolved) options name: a changed estimates file or power model reruns it."""
    return {name: file_digest(Path(value)) for name, value in params.items()
            if isinstance(value, str) and Path(value).is_absolute() and Path(value).is_file()}


def plan(exp: Experiment, outdir: Path) -> list[CellTask]:
    """Every cell as a task (traces generated as needed), in cell order."""
    digests: dict[Path, str] = {}
    tasks = []
    meanings: dict[tuple[Any, ...], int] = {}  # (trace bytes, what the options mean) → the first cell that runs them
    for cell in exp.cells:
        # absolute: the cell's record and its worker (a Ray worker starts in its own folder) must not depend on
        # where the sweep was started
        path = _trace_file(cell.trace, outdir).resolve()
        if path not in digests:
            digests[path] = file_digest(path)
        # files named by options are read relative to the experiment file; the hash sees their bytes, not where
        # they are, so moving the experiment's folder keeps the finished cells
        resolved = {k: resolve(v, exp.path.parent) for k, v in cell.params.items()}
        reading = _read_arguments(cell.trace)
        args = [*reading, *arguments(resolved)]
        meaning = (digests[path], cell.trace.read_options, cell_meaning(resolved, exp.path.parent))
        if meaning in meanings:
            raise ConfigError(f"{exp.path}: cells {meanings[meaning]} and {cell.index} are the same simulation "
                              "(the same trace, and options that mean the same); remove the repeat")
        meanings[meaning] = cell.index
        key = cell_id(digests[path], [*reading, *arguments(cell.params)], _file_options(resolved))
        record = {"cell": cell.index, "cell_id": key, "trace": cell.trace.name, "trace_file": str(path),
                  "params": cell.params, "args": args}
        tasks.append(CellTask(cell.index, key, str(path), tuple(args), str(outdir.resolve() / "cells"), record))
    return tasks


def _read_arguments(source: TraceSource) -> list[str]:
    out: list[str] = []
    for key, value in source.read_options:
        if key == "lenient":
            out += ["--lenient"] if value else []
        else:
            out += [flag_of(key), str(value)]
    return out


def _record_failure(outcome: CellOutcome, task: CellTask, outdir: Path) -> None:
    failed = outdir / "failed"
    failed.mkdir(exist_ok=True)
    write_text_atomic(failed / f"{task.cell_id}.json", json.dumps(
        {**task.record, "wall_seconds": outcome.wall_seconds, "error": outcome.error}, indent=2) + "\n")


def _done(outdir: Path, task: CellTask) -> dict[str, Any] | None:
    folder = outdir / "cells" / task.cell_id
    if not (folder / "cell.json").is_file() or not (folder / "summary.json").is_file():
        return None
    record = json.loads((folder / "cell.json").read_text(encoding="utf-8"))
    summary = json.loads((folder / "summary.json").read_text(encoding="utf-8"))
    return {"cell_id": task.cell_id, "status": "ok", "error": None, "wall_seconds": record["wall_seconds"],
            "summary": summary}


def run_sweep(exp: Experiment, outdir: Path, executor: Executor, progress: Progress | None = None) -> SweepReport:
    """Run every cell of ``exp`` not yet done in ``outdir`` on ``executor``; write the results table at the end."""
    outdir.mkdir(parents=True, exist_ok=True)
    tasks = plan(exp, outdir)
    # (after the plan: an experiment it refuses must not replace the one a resumed folder's results came from)
    text = exp.path.read_text(encoding="utf-8")
    earlier = outdir / "experiment.toml"
    if earlier.is_file() and earlier.read_text(encoding="utf-8") != text:
        # the results of another experiment: gone before this one's file replaces its, so that an interrupted run
        # leaves no results table its experiment file does not describe
        for name in ("results.parquet", "sweep.json"):
            (outdir / name).unlink(missing_ok=True)
    write_text_atomic(earlier, text)
    outcomes: dict[int, dict[str, Any]] = {}
    todo = []
    for task in tasks:
        done = _done(outdir, task)
        if done is None:
            todo.append(task)
        else:
            outcomes[task.index] = done
    skipped, failed, total = len(outcomes), 0, len(tasks)
    if progress:
        progress(skipped, 0, total)
    (outdir / "cells").mkdir(exist_ok=True)
    # a results folder is written by one sweep at a time (as a cell's run replaces the cell's folders without asking
    # whether another sweep writes them), so a staging folder now is one an earlier run left, of a cell that is done,
    # will run again, or is in the experiment no more
    remove_staging(outdir / "cells")
    for outcome in executor.run(todo):
        task = tasks[outcome.index]
        if outcome.error is None:
            (outdir / "failed" / f"{task.cell_id}.json").unlink(missing_ok=True)
            outcomes[outcome.index] = {"cell_id": task.cell_id, "status": "ok", "error": None,
                                       "wall_seconds": outcome.wall_seconds, "summary": outcome.summary}
        else:
            _record_failure(outcome, task, outdir)
            failed += 1
            outcomes[outcome.index] = {"cell_id": task.cell_id, "status": "failed", "error": outcome.error,
                                       "wall_seconds": outcome.wall_seconds, "summary": None}
        if progress:
            progress(len(outcomes), failed, total)
    frame = table(exp, outcomes)
    results = outdir / "results.parquet"
    write_atomic(results, lambda p: frame.write_parquet(p))
    named = exp.metrics or []
    meta = {"experiment": exp.path.name, "name": exp.name, "cells": total, "parameters": exp.parameters,
            # the metrics the experiment names first, then every other the cells have
            "metrics": [*named, *(m for m in metric_columns(frame) if m not in named)]}
    write_text_atomic(outdir / "sweep.json", json.dumps(meta, indent=2) + "\n")
    first_error = next((o["error"] for _, o in sorted(outcomes.items()) if o["status"] == "failed"), None)
    return SweepReport(total, skipped, total - skipped, failed, results, first_error)
