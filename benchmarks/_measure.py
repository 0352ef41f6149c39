"""Measure a whole child process: wall seconds and peak resident memory."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
WORK = ROOT / "bench-out"
os.environ.setdefault("POLARS_MAX_THREADS", "2")  # the 2-core machine the targets are set for


def dlcluster(*args: str) -> list[str]:
    """Command line running the installed dlcluster with this interpreter."""
    return [sys.executable, "-m", "dlcluster", *args]


def command_measured(cmd: list[str]) -> tuple[float, float, str]:
    """Whole-process wall seconds, peak RSS (MiB) and stdout of one command.

    ``os.wait4`` returns the resource usage of that one child, so figures stay independent
    of every process measured before it.
    """
    with tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err, text=True)
        out = proc.stdout.read() if proc.stdout else ""
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here: Popen must not wait again
        if proc.returncode:
            err.seek(0)
            raise RuntimeError(f"{' '.join(cmd)} failed ({proc.returncode}): {err.read().decode(errors='replace')}")
    return wall, usage.ru_maxrss / 1024, out


def python_snippet_measured(code: str) -> tuple[float, float, str]:
    """:func:`command_measured` for a Python snippet run by this interpreter."""
    return command_measured([sys.executable, "-c", code])


def ensure(path: Path, make: list[str]) -> Path:
    """Create ``path`` by running ``make`` unless it already exists."""
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(make, check=True, stdout=subprocess.DEVNULL)
    return path



def saturn_parquet(days: int = 183) -> Path:
    """The cached Helios Saturn look-alike of ``days`` days (seed 7), shared by every benchmark."""
    out = WORK / f"saturn-{days}d.parquet"
    return ensure(out, dlcluster("synth", "--preset", "helios-saturn", "--days", str(days), "--seed", "7",
                                 "--format", "parquet", "-o", str(out)))
