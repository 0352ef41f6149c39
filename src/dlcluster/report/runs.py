"""Simulation run folders as the report reads them: ``jobs.parquet``, ``summary.json``, ``timeline.parquet``."""

from __future__ import annotations

import json
import math
import reprlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from dlcluster.analysis.simruns import ENERGY
from dlcluster.errors import InputError

JOB_COLUMNS = ("job_id", "vc", "gpu_num", "submit", "start", "end", "queue_delay", "jct")
TIMELINE_COLUMNS = ("time", "vc", "total_gpus", "idle_gpus", "pending_gpus", "running_jobs", "pending_jobs")
NODE_STATE_COLUMNS = ("time", "vc", "node", "state")
TEXT_FIELDS = ("policy", "placement", "compat")  # of a summary.json, read by the reports as names
WHOLE = 2**63  # a whole number beyond 64 bits fits no table column
TEXT_COLUMNS = ("job_id", "vc", "state")  # the run tables' columns that are not numbers
COUNTS = ("jobs", "unschedulable", "preemptions", "gpus", "events")  # summary figures that count things


@dataclass
class SimRun:
    """One simulated run: its display name, folder and tables (``timeline`` is None when absent)."""

    name: str
    folder: Path
    jobs: pl.DataFrame
    summary: dict
    timeline: pl.DataFrame | None
    node_states: pl.DataFrame | None = None  # node_states.parquet of a run that modelled power


RUN_FILES = ("summary.json", "jobs.parquet")


def _is_run(folder: Path) -> bool:
    """Whether ``folder`` holds a run; an error for one with only half its files (a damaged run is named, not left
    out)."""
    has = [(folder / name).is_file() for name in RUN_FILES]
    if any(has) and not all(has):
        raise InputError(f"a run folder without its {RUN_FILES[has.index(False)]} (written by dlcluster simulate -o)",
                         path=folder)
    return all(has)


def _runs_inside(folder: Path, depth: int) -> list[Path]:
    """The run folders inside ``folder`` (by name; hidden ones skipped), down to ``depth`` levels."""
    runs = []
    for sub in sorted(p for p in folder.iterdir() if p.is_dir() and not p.name.startswith(".")):
        if _is_run(sub):
            runs.append(sub)
        elif depth > 1:
            runs += _runs_inside(sub, depth - 1)
    return runs


def run_folders(paths: list[Path]) -> list[Path]:
    """Each path that is a run folder, or the run folders inside it: directly, or in a folder of runs one level
    further (``simulate -o OUT`` with several policies writes ``OUT/<policy>/``), in the order given."""
    found: list[Path] = []
    for path in paths:
        if not path.is_dir():
            raise InputError("not a folder (expected a folder that dlcluster simulate -o wrote)", path=path)
        inside = [path] if _is_run(path) else _runs_inside(path, 2)
        if not inside:
            raise InputError("no simulation run here: neither it nor a folder inside it holds summary.json and "
                             "jobs.parquet (written by dlcluster simulate -o)", path=path)
        found += inside
    return found


def _parquet(path: Path, needed: tuple[str, ...]) -> pl.DataFrame:
    try:
        df = pl.read_parquet(path)
    except Exception as exc:  # polars raises several types for a damaged or non-Parquet file
        raise InputError(f"not a readable Parquet file ({exc})", path=path) from exc
    if "nodes_on" in df.columns:  # a power run's timeline: the energy section counts its busy nodes too
        needed = (*needed, "nodes_on", "nodes_busy")
    missing = [c for c in needed if c not in df.columns]
    if missing:
        raise InputError(f"missing column '{missing[0]}' (need {', '.join(needed)})", path=path)
    wrong = next((c for c in needed if c not in TEXT_COLUMNS and not df.schema[c].is_numeric()
                  and df.schema[c] != pl.Null), None)
    if wrong is not None:
        raise InputError(f"column '{wrong}' holds {df.schema[wrong]}, not numbers", path=path, field=wrong)
    return df


def _object(value: Any, key: str, path: Path) -> dict[str, Any]:
    """``value`` when it is an object, {} when null (nothing to show), else an error at ``key``."""
    if value is not None and not isinstance(value, dict):
        raise InputError(f"expected an object, got {reprlib.repr(value)}", path=path, field=key)
    return value or {}


def _figures(summary: dict[str, Any], path: Path) -> Iterator[tuple[str, Any]]:
    """Each value the reports read from ``summary`` as a number, with its key (``vcs.a.utilization``): the
    run's ``load``, every figure of ``overall`` and of each VC, and the energy figures."""
    yield "load", summary.get("load")
    tables = [("overall", _object(summary.get("overall"), "overall", path))]
    tables += [(f"vcs.{vc}", _object(figures, f"vcs.{vc}", path))
               for vc, figures in _object(summary.get("vcs"), "vcs", path).items()]
    for where, table in tables:
        yield from ((f"{where}.{k}", v) for k, v in table.items())
    energy = _object(summary.get("energy"), "energy", path)
    yield from ((f"energy.{k}", energy.get(k)) for k, _ in ENERGY)


def check_summary(summary: dict[str, Any], path: Path) -> None:
    """Refuse a simulator's summary.json whose values the reports read have the wrong type: text (or null) for
    :data:`TEXT_FIELDS`, numbers (or null: not measured) for the figures."""
    for key in TEXT_FIELDS:
        if not isinstance(summary.get(key), str | None):
            raise InputError(f"expected text or null, got {reprlib.repr(summary[key])}", path=path, field=key)
    for key, value in _figures(summary, path):
        # (true and false are numbers to Python, not to the reader of a table)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int | float)):
            raise InputError(f"expected a number or null, got {reprlib.repr(value)}", path=path, field=key)
        if isinstance(value, float) and not math.isfinite(value):  # (Python's json reads NaN and Infinity)
            raise InputError(f"expected a finite number or null, got {value}", path=path, field=key)
        if isinstance(value, int) and not -WHOLE <= value < WHOLE:
            raise InputError(f"{reprlib.repr(value)} is out of range (a whole number within 64 bits)", path=path,
                             field=key)
        # (a count of 2.9 was shown as 2 per VC, and as 4.6 overall)
        if key.rpartition(".")[2] in COUNTS and value is not None and not (isinstance(value, int) and value >= 0):
            raise InputError(f"expected a count (a whole number, 0 or more), got {reprlib.repr(value)}", path=path,
                             field=key)


def read_run(folder: Path, name: str) -> SimRun:
    """The run in ``folder`` (checked), shown as ``name``."""
    path = folder / "summary.json"
    try:
        summary = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InputError(f"not a readable JSON file ({exc})", path=path) from exc
    if not isinstance(summary, dict) or not isinstance(summary.get("overall"), dict):
        raise InputError("expected the simulator's summary (a JSON object with 'overall')", path=path)
    check_summary(summary, path)
    jobs = _parquet(folder / "jobs.parquet", JOB_COLUMNS)
    timeline_path = folder / "timeline.parquet"
    timeline = _parquet(timeline_path, TIMELINE_COLUMNS) if timeline_path.is_file() else None
    states_path = folder / "node_states.parquet"
    states = _parquet(states_path, NODE_STATE_COLUMNS) if states_path.is_file() else None
    return SimRun(name, folder, jobs, summary, timeline, states)


def read_runs(paths: list[Path]) -> list[SimRun]:
    """Every run under ``paths``, named by its folder (with as many of its parents' names as tell it from the runs
    of the same name: ``expA/sim/fifo`` and ``expB/sim/fifo`` are ``expA/sim/fifo`` and ``expB/sim/fifo``)."""
    folders = run_folders(paths)
    where = [f.resolve() for f in folders]
    again = next((f for f, r in zip(folders, where, strict=True) if where.count(r) > 1), None)
    if again is not None:
        raise InputError("this run is given twice", path=again)
    return [read_run(f, n) for f, n in zip(folders, _distinct_names(where), strict=True)]


def _distinct_names(folders: list[Path]) -> list[str]:
    """Each folder's name, lengthened by its parents' names, one more at a time, while it is another's too."""
    depth = [1] * len(folders)
    while True:
        shown = ["/".join(f.parts[-d:]) for f, d in zip(folders, depth, strict=True)]
        clash = [i for i, s in enumerate(shown) if shown.count(s) > 1]
        if not clash:
            return shown
        for i in clash:
            depth[i] += 1
