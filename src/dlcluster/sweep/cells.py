"""One cell of a sweep: its content hash, and running it (``dlcluster simulate`` in the worker's process).

A worker runs a cell into a private temporary folder and hands back the files it wrote, so the driver alone
writes the results folder (atomically, cell by cell) whether the worker is a local process or a Ray task on
another machine.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HASH_CHARS = 16


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
    """What a worker needs to run one cell: the trace file, ``simulate``'s other arguments."""

    index: int
    cell_id: str
    trace: str  # path of the trace file (on the worker)
    args: tuple[str, ...]


@dataclass
class CellOutcome:
    """What a worker hands back: the files ``simulate`` wrote (name → bytes), or the error it reported."""

    index: int
    cell_id: str
    files: dict[str, bytes]
    error: str | None
    wall_seconds: float


def run_cell(task: CellTask) -> CellOutcome:
    """Run ``dlcluster simulate`` for ``task`` in this process; never raises for a cell's own error."""
    from dlcluster.cli import main
    from dlcluster.cli.options import keep_traces

    keep_traces()  # a worker reads each trace once, not once per cell
    began = time.perf_counter()
    err = io.StringIO()
    with tempfile.TemporaryDirectory(prefix="dlcluster-cell-") as tmp:
        out = Path(tmp) / "run"
        code: Any = 0
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
            try:
                main(["simulate", task.trace, *task.args, "-o", str(out)])
            except SystemExit as exc:
                code = exc.code
            except Exception as exc:  # an internal error of one cell must not stop the sweep
                code, _ = 1, err.write(f"internal error: {type(exc).__name__}: {exc}\n")
        wall = time.perf_counter() - began
        if code:
            lines = [line for line in err.getvalue().splitlines() if line.strip()]
            message = lines[-1].removeprefix("error: ") if lines else f"simulate exited with status {code}"
            return CellOutcome(task.index, task.cell_id, {}, message, wall)
        files = {p.name: p.read_bytes() for p in sorted(out.iterdir()) if p.is_file()}
    return CellOutcome(task.index, task.cell_id, files, None, wall)
