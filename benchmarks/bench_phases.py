"""Where a `dlcluster simulate` process spends its CPU seconds, phase by phase (Philly window, compatibility mode).

Run from the project root: ``.venv/bin/python -m benchmarks.bench_phases [POLICY ...]`` (default: fifo srtf).
Needs ``../shared``. ``bench_phases guidelines``: FIFO on the 180-day Saturn look-alike, plain and with the speed
model, failures and 2 retries (bench_guidelines' run), to see which phases the features make heavier. Each policy
runs in a fresh child process that times the command's
phases with ``time.process_time`` (CPU seconds of every thread of the process) by wrapping
the library functions of each phase; the whole process's CPU seconds (user + sys, from
``os.wait4``) are printed beside them, and "other" is the difference: interpreter start,
argument parsing, the comparison table.
"""

from __future__ import annotations

import json
import sys

from benchmarks._measure import SHARED, estimates_for, python_snippet_measured, saturn_parquet

CHILD = r"""
import json, os, sys, time
T0 = time.process_time()
import dlcluster.cli.simulate_cmd as cmd
import dlcluster.sim.run as run
import dlcluster.sim.engine as engine
from dlcluster.cli import main
phases = {"imports": time.process_time() - T0}

def timed(owner, name, phase):
    inner = getattr(owner, name)
    def wrapper(*args, **kwargs):
        start = time.process_time()
        try:
            return inner(*args, **kwargs)
        finally:
            phases[phase] = phases.get(phase, 0.0) + time.process_time() - start
    setattr(owner, name, wrapper)

timed(cmd, "load", "read trace")
timed(cmd, "read_estimates", "read estimates")
timed(run, "prepare", "prepare")
timed(engine.Engine, "run", "event loop")
timed(run, "build_results", "result tables")
timed(cmd, "_write_outputs", "write outputs")
sys.argv = ["dlcluster", *ARGS]
try:
    main()
except SystemExit as exc:
    if exc.code:
        raise
print(json.dumps(phases), flush=True)
os._exit(0)  # as the dlcluster command does (dlcluster.cli.run): no interpreter teardown
"""


PHASES = ("imports", "read trace", "read estimates", "prepare", "event loop", "result tables", "write outputs")
FEATURES = ["--speed-model", "philly", "--failures", "replay", "--retries", "2"]  # bench_guidelines' run


def _row(label: str, args: list[str]) -> None:
    """One child process of ``simulate ARGS``: its whole CPU seconds, and per phase."""
    _, _, out, cpu = python_snippet_measured(CHILD.replace("ARGS", repr(["simulate", *args])))
    measured = json.loads(out.strip().splitlines()[-1])
    other = cpu - sum(measured.values())
    print(f"{label:8} {cpu:11.2f} " + " ".join(f"{measured.get(p, 0.0):14.3f}" for p in PHASES) + f" {other:14.3f}")


def main(policies: list[str] | None = None) -> None:
    """Print CPU seconds per phase for each policy (or, given ``guidelines``, for the plain and featured run)."""
    print(f"{'run':8} {'whole CPU s':>11} " + " ".join(f"{p:>14}" for p in (*PHASES, "other")))
    if policies == ["guidelines"]:
        saturn = str(saturn_parquet(180))
        _row("plain", [saturn, "-p", "fifo", "-o", "bench-out/phases-plain"])
        _row("features", [saturn, "-p", "fifo", *FEATURES, "-o", "bench-out/phases-features"])
        return
    data = SHARED / "data/philly"
    if not data.exists():
        print("skipped: ../shared not available")
        return
    for policy in policies or ["fifo", "srtf"]:
        _row(policy, [str(data / "jobs_processed.csv"), "--cluster", str(data / "vc_nodes.csv"), "--compat",
                      "helios-artifact", "--start", "2017-10-01 00:00:00", "--end", "2017-11-30 23:59:00",
                      "--skip-unknown-vcs",
                      *estimates_for(policy, SHARED / "reference/philly-artifact/inputs/Philly_lgb.csv.gz"),
                      "-p", policy, "-o", f"bench-out/phases-{policy}"])


if __name__ == "__main__":
    main(sys.argv[1:] or None)
