"""Whole-process timing of ``dlcluster simulate`` on the Philly window in Helios-artifact compatibility mode.

Run from the project root: ``.venv/bin/python -m benchmarks.bench_sim``. Needs ``../shared``;
prints wall seconds, jobs/s and peak memory per policy, and the four-policy comparison in
one invocation, next to the artifact's own times (one core, 1-s tick loop).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
ARTIFACT_WALL = {"fifo": 213.1, "sjf": 202.6, "qssf": 205.2, "srtf": 754.7}  # seconds, reference README
POLICIES = ("fifo", "sjf", "srtf", "qssf")


def _command(policy: str, out: Path) -> list[str]:
    data, ref = SHARED / "data/philly", SHARED / "reference/philly-artifact"
    return [
        sys.executable, "-m", "dlcluster", "simulate", str(data / "jobs_processed.csv"),
        "--cluster", str(data / "vc_nodes.csv"), "--compat", "helios-artifact",
        "--start", "2017-10-01 00:00:00", "--end", "2017-11-30 23:59:00", "--skip-unknown-vcs",
        "--estimates", str(ref / "inputs/Philly_lgb.csv.gz"), "--policy", policy, "-o", str(out),
    ]


def _timed(cmd: list[str]) -> tuple[float, float]:
    """Wall seconds and peak RSS (MiB) of one child process."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    if status != 0:
        raise SystemExit(f"failed: {' '.join(cmd)}\n{proc.stderr.read().decode() if proc.stderr else ''}")
    return wall, usage.ru_maxrss / 1024


def main() -> None:
    """Run the benchmark and print its figures."""
    if not (SHARED / "data/philly/jobs_processed.csv").exists():
        raise SystemExit("../shared/data/philly is not available: nothing to benchmark")
    header = ("policy", "wall s", "jobs/s", "engine ev/s", "peak MiB", "artifact s", "speed-up")
    print(f"{header[0]:<22}" + "".join(f"{h:>{w}}" for h, w in zip(header[1:], (8, 10, 13, 10, 12, 10), strict=True)))
    with tempfile.TemporaryDirectory() as tmp:
        for policy in POLICIES:
            out = Path(tmp) / policy
            wall, rss = _timed(_command(policy, out))
            summary = json.loads((out / "summary.json").read_text())
            jobs = summary["overall"]["jobs"]
            print(f"{policy:<22}{wall:>8.2f}{jobs / wall:>10,.0f}{summary['overall']['events_per_second']:>13,.0f}"
                  f"{rss:>10.0f}{ARTIFACT_WALL[policy]:>12.1f}{ARTIFACT_WALL[policy] / wall:>9.0f}×")
        wall, rss = _timed(_command(",".join(POLICIES), Path(tmp) / "all"))
        total = sum(ARTIFACT_WALL.values())
        print(f"{'all four, one process':<22}{wall:>8.2f}{4 * jobs / wall:>10,.0f}{'':>13}{rss:>10.0f}"
              f"{total:>12.1f}{total / wall:>9.0f}×")


if __name__ == "__main__":
    main()
