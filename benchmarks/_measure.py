"""Measure a whole child process: wall seconds and peak resident memory."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
WORK = ROOT / "bench-out"


def dlcluster(*args: str) -> list[str]:
    """Command line running the installed dlcluster with this interpreter."""
    return [sys.executable, "-m", "dlcluster", *args]


def python_snippet_measured(code: str) -> tuple[float, float, str]:
    """Run a Python snippet in a fresh process and return (wall seconds, peak RSS MiB, stdout).

    RUSAGE_CHILDREN is a running maximum over all children, so each measurement runs
    in its own intermediate process to keep figures independent.
    """
    wrapper = (
        "import resource, subprocess, sys, time, json\n"
        "t = time.perf_counter()\n"
        f"p = subprocess.run([sys.executable, '-c', {code!r}], capture_output=True, text=True)\n"
        "w = time.perf_counter() - t\n"
        "if p.returncode: sys.stderr.write(p.stderr); sys.exit(p.returncode)\n"
        "print(json.dumps({'wall': w, 'rss': resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024, "
        "'out': p.stdout}))\n"
    )
    proc = subprocess.run([sys.executable, "-c", wrapper], capture_output=True, text=True)
    if proc.returncode:
        raise RuntimeError(proc.stderr)
    res = json.loads(proc.stdout)
    return res["wall"], res["rss"], res["out"]


def command_measured(cmd: list[str]) -> tuple[float, float, str]:
    """Whole-process wall seconds and peak RSS of one command, isolated from earlier children."""
    return python_snippet_measured(
        "import subprocess, sys\n"
        f"p = subprocess.run({cmd!r}, capture_output=True, text=True)\n"
        "sys.stdout.write(p.stdout)\n"
        "sys.exit(p.returncode)\n"
    )


def ensure(path: Path, make: list[str]) -> Path:
    """Create ``path`` by running ``make`` unless it already exists."""
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(make, check=True, stdout=subprocess.DEVNULL)
    return path


os.environ.setdefault("POLARS_MAX_THREADS", "2")


def saturn_parquet(days: int = 183) -> Path:
    """The cached Helios Saturn look-alike of ``days`` days (seed 7), shared by every benchmark."""
    out = WORK / f"saturn-{days}d.parquet"
    return ensure(out, dlcluster("synth", "--preset", "helios-saturn", "--days", str(days), "--seed", "7",
                                 "--format", "parquet", "-o", str(out)))
