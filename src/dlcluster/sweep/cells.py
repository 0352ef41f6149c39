"""One cell of a sweep: its content hash, and running it (``dlcluster simulate`` in the worker's process).

A worker writes its cell's folder into the results folder itself (on a cluster of several machines, that
folder must be on a shared file system) and hands back the run's summary, or its error.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HASH_CHARS = 16
STAGING_SUFFIX = ".partial"


def file_digest(path: Path) -> str:
    """SHA-256 of a file's bytes (of every file under it, by relative name, for a folder)."""
    h = hashlib.sha256()
    files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
    for f in files:
        if path.is_dir():
            h.update(str(f.relative_to(path)).encode())
        with f.open("rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
    return h.hexdigest()


def cell_id(trace_digest: str, args: list[str], file_digests: dict[str, str]) -> str:
    """The content hash of a cell: its trace's bytes, its arguments, the bytes of files they name, the version."""
    from dlcluster import __version__

    payload = json.dumps({"trace": trace_digest, "args": args, "files": file_digests, "version": __version__},
                         sort_keys=True)
    return hashlib.sha256(payload.encode()).hexdigest()[:HASH_CHARS]


@dataclass(frozen=True)
class CellTask:
    """What a worker needs to run one cell: the trace file, ``simulate``'s other arguments, where the cell goes."""

    index: int
    cell_id: str
    trace: str  # path of the trace file (as the worker sees it)
    args: tuple[str, ...]
    cells: str  # the results folder's ``cells/``: the cell's folder is ``cells/CELL_ID``
    record: dict[str, Any]  # what ``cell.json`` says of the cell (its parameters)


@dataclass
class CellOutcome:
    """What a worker hands back: the run's summary, or the error ``simulate`` reported."""

    index: int
    cell_id: str
    summary: dict[str, Any] | None
    error: str | None
    wall_seconds: float


_running: list[Path] = []  # the staging folder of the cell this process runs now, if any


def stop_worker(signum: int, frame: object) -> None:
    """The SIGTERM handler of a sweep's local worker (its pool stopping it): remove the running cell's staging folder,
    then end at once, as the signal's default did (ending by an exception was seen to hang in the interpreter's
    teardown, and the pool waits for its workers)."""
    for folder in _running:
        shutil.rmtree(folder, ignore_errors=True)
    os._exit(128 + signum)


def staging_folder(cells: Path, key: str) -> Path:
    """Where the cell ``key`` is written before it is renamed into ``cells/KEY`` (hidden: never taken for a cell)."""
    return cells / f".{key}{STAGING_SUFFIX}"


def remove_staging(cells: Path) -> None:
    """Remove every staging folder in ``cells``: what runs that were killed, or stopped mid-cell by Ray, left."""
    for folder in cells.glob(f".*{STAGING_SUFFIX}"):
        shutil.rmtree(folder, ignore_errors=True)


def run_cell(task: CellTask) -> CellOutcome:
    """Run ``dlcluster simulate`` for ``task`` in this process into the cell's folder; never raises for a cell's
    own error.

    The run is written under a temporary name beside the cell's folder and renamed when whole, so a cell
    folder is either complete or absent, whatever stops the worker; an interrupted cell removes its temporary one.
    """
    from dlcluster.cli import main
    from dlcluster.cli.options import keep_traces

    keep_traces()  # a worker reads each trace once, not once per cell
    began = time.perf_counter()
    err = io.StringIO()
    cells = Path(task.cells)
    staging, final = staging_folder(cells, task.cell_id), cells / task.cell_id
    shutil.rmtree(staging, ignore_errors=True)
    code: Any = 0
    # named until the folder is renamed or removed: a SIGTERM between the run's end and the rename (the driver
    # gone) left the folder behind when the handler no longer knew of it
    _running[:] = [staging]
    try:
        # made now, not when the run writes its files: a staging folder exists exactly while its cell runs
        staging.mkdir(parents=True)
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
            try:
                main(["simulate", task.trace, *task.args, "-o", str(staging)])
            except SystemExit as exc:
                code = exc.code
            except Exception as exc:  # an internal error of one cell must not stop the sweep
                code, _ = 1, err.write(f"internal error: {type(exc).__name__}: {exc}\n")
        wall = time.perf_counter() - began
        if code:
            shutil.rmtree(staging, ignore_errors=True)
            lines = [line for line in err.getvalue().splitlines() if line.strip() and not line.startswith("note: ")]
            message = lines[-1].removeprefix("error: ") if lines else f"simulate exited with status {code}"
            return CellOutcome(task.index, task.cell_id, None, message, wall)
        summary = json.loads((staging / "summary.json").read_text(encoding="utf-8"))
        (staging / "cell.json").write_text(json.dumps({**task.record, "wall_seconds": wall}, indent=2) + "\n",
                                           encoding="utf-8")
        shutil.rmtree(final, ignore_errors=True)
        staging.rename(final)
        return CellOutcome(task.index, task.cell_id, summary, None, wall)
    except BaseException:  # stopped (a Ctrl-C): the unfinished cell leaves nothing behind
        shutil.rmtree(staging, ignore_errors=True)
        raise
    finally:
        _running.clear()
