"""Measure a whole child process: CPU seconds (user + sys), wall seconds and peak resident memory.

CPU seconds are the primary figure (the machine is shared; wall seconds depend on what else
runs). They come from ``os.wait4``, i.e. the child's own user + sys time, every thread, plus
that of any process it started and waited for.
"""

from __future__ import annotations

import compileall
import json
import os
import resource
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import NamedTuple, TypeVar

T = TypeVar("T")

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
WORK = ROOT / "bench-out"
os.environ.setdefault("POLARS_MAX_THREADS", "2")  # the 2-core machine the targets are set for
# Byte-compile dlcluster's sources once, as installing a package does: with PYTHONDONTWRITEBYTECODE set (as on
# the development machine) an editable install would otherwise recompile every module in every measured process.
compileall.compile_dir(ROOT / "src", quiet=1)


class Measured(NamedTuple):
    """One measured process. Unpacks as ``wall, peak_mib, out, cpu``."""

    wall: float  # seconds
    peak_mib: float  # peak resident set size
    out: str  # stdout
    cpu: float  # user + sys seconds of the whole process


class TimedOut(RuntimeError):
    """The command ran past its timeout and was killed; ``measured`` holds its figures up to then."""

    def __init__(self, cmd: Sequence[str], timeout: float, measured: Measured) -> None:
        super().__init__(f"{' '.join(cmd)}: killed after {timeout:g} s")
        self.measured = measured


def dlcluster(*args: str) -> list[str]:
    """Command line running the installed dlcluster with this interpreter."""
    return [sys.executable, "-m", "dlcluster", *args]


# ``python -c PURE_PYTHON SIM_FOLDER ARGS...``: the command line with dlcluster.sim's modules imported from their
# Python sources, not the modules setup.py compiled (SIM_FOLDER: the folder of dlcluster.sim)
PURE_PYTHON = """
import sys, importlib.machinery as machinery
sim = sys.argv.pop(1)

def source_only(path):
    if path == sim or path.startswith(sim + "/"):
        return machinery.FileFinder(path, (machinery.SourceFileLoader, machinery.SOURCE_SUFFIXES))
    raise ImportError(path)

sys.path_hooks.insert(0, source_only)
sys.path_importer_cache.clear()
import dlcluster.sim.cycle
assert dlcluster.sim.cycle.__file__.endswith(".py"), dlcluster.sim.cycle.__file__
from dlcluster.cli import run
sys.argv[0] = "dlcluster"
run()
"""


def dlcluster_pure(*args: str) -> list[str]:
    """:func:`dlcluster` with the simulator's modules run from their Python sources, compiled or not."""
    import dlcluster.sim

    return [sys.executable, "-c", PURE_PYTHON, str(Path(dlcluster.sim.__file__).parent), *args]


def compiled_sim() -> bool:
    """Whether the installed simulator core is compiled (see setup.py)."""
    import dlcluster.sim.cycle

    return not dlcluster.sim.cycle.__file__.endswith(".py")


def command_measured(cmd: list[str], timeout: float | None = None) -> Measured:
    """Whole-process wall and CPU seconds, peak RSS (MiB) and stdout of one command.

    ``os.wait4`` returns the resource usage of that one child, so figures stay independent
    of every process measured before it. With ``timeout`` (wall seconds) the child runs in
    its own process group, which is killed when the time is up: :class:`TimedOut` is raised.
    """
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, start_new_session=timeout is not None)
        reaped: list[tuple[int, int, resource.struct_rusage]] = []
        waiter = threading.Thread(target=lambda: reaped.append(os.wait4(proc.pid, 0)), daemon=True)
        waiter.start()
        try:
            waiter.join(timeout)
            killed = waiter.is_alive()
        finally:  # time is up, or Ctrl-C: do not leave the child (or its own children) running
            if waiter.is_alive():
                _kill(proc.pid, group=timeout is not None)
                waiter.join()
        wall = time.perf_counter() - start
        _, status, usage = reaped[0]
        proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here: Popen must not wait again
        out.seek(0)
        cpu = usage.ru_utime + usage.ru_stime
        res = Measured(wall, usage.ru_maxrss / 1024, out.read().decode(errors="replace"), cpu)
        if killed:
            raise TimedOut(cmd, timeout or 0.0, res)
        if proc.returncode:
            err.seek(0)
            raise RuntimeError(f"{' '.join(cmd)} failed ({proc.returncode}): {err.read().decode(errors='replace')}")
    return res


def _kill(pid: int, *, group: bool) -> None:
    try:
        if group:
            os.killpg(pid, signal.SIGKILL)  # the child leads its own group (start_new_session)
        else:
            os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:  # ended meanwhile
        pass


def python_snippet_measured(code: str, timeout: float | None = None) -> Measured:
    """:func:`command_measured` for a Python snippet run by this interpreter."""
    return command_measured([sys.executable, "-c", code], timeout)


class Table:
    """A compact fixed-width table printed row by row: ``Table(("policy", 10), ("CPU s", 8, ".1f"), ...)``.

    The first column is left-aligned, the others right-aligned. A cell that is a string or
    None (printed as ``-``) is printed as is, whatever the column's number format.
    """

    def __init__(self, *columns: tuple[str, int] | tuple[str, int, str]) -> None:
        self.columns = [(c[0], c[1], c[2] if len(c) > 2 else "") for c in columns]
        print(self._line([name for name, _, _ in self.columns]), flush=True)

    def row(self, *cells: object) -> None:
        """Print one row; missing trailing cells are left blank."""
        print(self._line(list(cells)), flush=True)

    def _line(self, cells: list[object]) -> str:
        parts = []
        for i, (_, width, fmt) in enumerate(self.columns):
            cell = cells[i] if i < len(cells) else ""
            text = "-" if cell is None else cell if isinstance(cell, str) else format(cell, fmt)
            parts.append(f"{text:<{width}}" if i == 0 else f"{text:>{width}}")
        return "".join(parts).rstrip()


# the standard figures of one measured process: CPU seconds first, then wall seconds, then jobs per CPU second
FIGURES: tuple[tuple[str, int, str], ...] = (("CPU s", 8, ".2f"), ("wall s", 8, ".2f"), ("peak MiB", 10, ",.0f"),
                                             ("jobs/CPU s", 12, ",.0f"))


def figures(m: Measured, jobs: int | None = None) -> tuple[object, ...]:
    """Cells for :data:`FIGURES`: CPU s, wall s, peak MiB and (when ``jobs`` is known) jobs per CPU second."""
    return m.cpu, m.wall, m.peak_mib, (jobs / m.cpu if jobs is not None and m.cpu > 0 else None)


def ensure(path: Path, make: list[str]) -> Path:
    """Create ``path`` by running ``make`` unless it already exists."""
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(make, check=True, stdout=subprocess.DEVNULL)
    return path



def run_cases(cases: dict[str, Callable[[], None]], names: Sequence[str] | None) -> None:
    """Run the named cases of a benchmark module (default: all), its inputs' folder made first."""
    WORK.mkdir(exist_ok=True)
    for name in names or list(cases):
        if name not in cases:
            raise SystemExit(f"unknown case {name!r}; cases: {', '.join(cases)}")
        cases[name]()


def in_turn(runs: int, settings: dict[str, Callable[[], T]]) -> dict[str, list[T]]:
    """Each setting ``runs`` times, the settings in turn (a slow spell of the shared machine then hits every
    setting, not one): per setting, its results in run order."""
    out: dict[str, list[T]] = {label: [] for label in settings}
    for _ in range(runs):
        for label, measure in settings.items():
            out[label].append(measure())
    return out


def spread(values: Sequence[float], fmt: str = ".2f") -> str:
    """``min–max`` of ``values``, for a column beside their median."""
    return f"{min(values):{fmt}}–{max(values):{fmt}}"


def simulate_measured(args: Sequence[str], command: Callable[..., list[str]] = dlcluster) -> tuple[Measured, dict]:
    """One ``dlcluster simulate`` process into a temporary folder: its figures and its ``summary.json`` (``command``:
    :func:`dlcluster`, or :func:`dlcluster_pure`)."""
    with tempfile.TemporaryDirectory(dir=WORK) as tmp:
        m = command_measured(command("simulate", *args, "-o", tmp))
        return m, json.loads((Path(tmp) / "summary.json").read_text())


def estimates_for(policies: str, estimates: str | Path) -> list[str]:
    """``--estimates FILE`` when one of the comma-separated ``policies`` reads duration estimates, else nothing (the
    command refuses estimates that no policy reads)."""
    from dlcluster.sim.policies import get_policy

    reads = any(c.needs_estimates or c.uses_estimates for c in map(get_policy, policies.split(",")))
    return ["--estimates", str(estimates)] if reads else []


def philly_window_args() -> list[str] | None:
    """``simulate`` arguments of the Philly window (Oct–Nov 2017, the artifact's VCs), or None without ../shared."""
    philly = SHARED / "data/philly"
    if not (philly / "jobs_processed.csv").exists():
        return None
    return [str(philly / "jobs_processed.csv"), "--cluster", str(philly / "vc_nodes.csv"), "--start",
            "2017-10-01 00:00:00", "--end", "2017-11-30 23:59:00", "--skip-unknown-vcs"]


def saturn_parquet(days: int = 183) -> Path:
    """The cached Helios Saturn look-alike of ``days`` days (seed 7), shared by every benchmark."""
    out = WORK / f"saturn-{days}d.parquet"
    return ensure(out, dlcluster("synth", "--preset", "helios-saturn", "--days", str(days), "--seed", "7",
                                 "--format", "parquet", "-o", str(out)))
