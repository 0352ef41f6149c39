"""Whole-process timing of ``dlcluster simulate``: the Philly window, a Helios Saturn look-alike, and scaling.

Run from the project root: ``.venv/bin/python -m benchmarks.bench_sim``.

1. Philly window in Helios-artifact compatibility mode (needs ``../shared``): wall seconds,
   jobs/s and peak memory per policy, and the four-policy comparison in one invocation,
   next to the artifact's own times (one core, 1-s tick loop).
2. A generated Saturn look-alike (``dlcluster synth --preset helios-saturn --days 183
   --seed 7``, ≈700k GPU jobs, 2,080 GPUs; cached in ``bench-out/``): FIFO, QSSF (on a
   noisy oracle: true duration × lognormal(0, 0.5), seeded), and their EASY variants, at
   the trace's own load and at half of it, with queueing figures to show how loaded it is.
3. Scaling: FIFO on 45, 90 and 180 days of Saturn: jobs/s and time growth (whole process
   and engine only; the whole-process figure includes a fixed start-up cost).
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

import numpy as np
import polars as pl

from benchmarks._measure import (
    SHARED,
    WORK,
    command_measured,
    dlcluster,
    saturn_parquet,
)

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


def _noisy_estimates(trace: Path) -> Path:
    """A noisy oracle for QSSF: true duration × lognormal(0, 0.5), seed 7, as ``job_id,duration``."""
    out = WORK / f"{trace.stem}-estimates.csv"
    if not out.exists():
        jobs = pl.read_parquet(trace, columns=["job_id", "gpu_num", "duration"]).filter(pl.col("gpu_num") > 0)
        noise = np.random.default_rng(7).lognormal(0.0, 0.5, jobs.height)
        jobs.select("job_id", (pl.col("duration") * noise).round(1).alias("duration")).write_csv(out)
    return out


def _simulate(trace: Path, policy: str, *extra: str) -> tuple[float, float, dict]:
    """Whole-process wall seconds, peak MiB and summary of one ``dlcluster simulate`` run."""
    with tempfile.TemporaryDirectory() as tmp:
        wall, rss, _ = command_measured(dlcluster("simulate", str(trace), "-p", policy, "-o", tmp, *extra))
        return wall, rss, json.loads((Path(tmp) / "summary.json").read_text())


def saturn() -> None:
    """Saturn look-alike: FIFO, QSSF and EASY variants at load 1 and 0.5 (targets: < 60 s, < 3 GB each)."""
    trace = saturn_parquet(183)
    est = _noisy_estimates(trace)
    print(f"Saturn look-alike, 183 days ({trace.name}; QSSF estimates: {est.name})")
    head = ("policy", "load", "wall s", "engine s", "jobs/s", "peak MiB", "util", "mean queue h", "p99 queue h")
    print(f"{head[0]:<11}" + "".join(f"{h:>{w}}" for h, w in zip(head[1:], (6, 8, 10, 9, 10, 7, 14, 13), strict=True)))
    for load in ("1", "0.5"):
        for policy in ("fifo", "qssf", "fifo-easy", "qssf-easy"):
            wall, rss, s = _simulate(trace, policy, "--estimates", str(est), "--load", load)
            o = s["overall"]
            print(f"{policy:<11}{load:>6}{wall:>8.1f}{s['wall_seconds']:>10.1f}{o['jobs'] / wall:>9,.0f}{rss:>10.0f}"
                  f"{o['utilization']:>7.2f}{o['mean_queue_delay'] / 3600:>14.1f}{o['p99_queue_delay'] / 3600:>13.1f}")


def scaling() -> None:
    """FIFO on 1×, 2×, 4× trace length: jobs/s and growth of time with length."""
    print("Scaling: FIFO on Saturn, 45 / 90 / 180 days")
    head = ("days", "jobs", "wall s", "engine s", "jobs/s", "× wall", "× engine", "× jobs")
    print(f"{head[0]:<6}" + "".join(f"{h:>{w}}" for h, w in zip(head[1:], (10, 8, 10, 9, 8, 10, 8), strict=True)))
    base: tuple[float, float, int] | None = None
    for days in (45, 90, 180):
        wall, _, s = _simulate(saturn_parquet(days), "fifo")
        jobs, engine = s["overall"]["jobs"], s["wall_seconds"]
        base = base or (wall, engine, jobs)
        print(f"{days:<6}{jobs:>10,}{wall:>8.1f}{engine:>10.1f}{jobs / wall:>9,.0f}{wall / base[0]:>8.2f}"
              f"{engine / base[1]:>10.2f}{jobs / base[2]:>8.2f}")


def philly() -> None:
    """Philly window in compatibility mode, each policy and all four in one process."""
    if not (SHARED / "data/philly/jobs_processed.csv").exists():
        print("../shared/data/philly is not available: Philly figures skipped")
        return
    header = ("policy", "wall s", "jobs/s", "engine ev/s", "peak MiB", "artifact s", "speed-up")
    print(f"{header[0]:<22}" + "".join(f"{h:>{w}}" for h, w in zip(header[1:], (8, 10, 13, 10, 12, 10), strict=True)))
    with tempfile.TemporaryDirectory() as tmp:
        for policy in POLICIES:
            out = Path(tmp) / policy
            wall, rss, _ = command_measured(_command(policy, out))
            summary = json.loads((out / "summary.json").read_text())
            jobs = summary["overall"]["jobs"]
            print(f"{policy:<22}{wall:>8.2f}{jobs / wall:>10,.0f}{summary['overall']['events_per_second']:>13,.0f}"
                  f"{rss:>10.0f}{ARTIFACT_WALL[policy]:>12.1f}{ARTIFACT_WALL[policy] / wall:>9.0f}×")
        wall, rss, _ = command_measured(_command(",".join(POLICIES), Path(tmp) / "all"))
        total = sum(ARTIFACT_WALL.values())
        print(f"{'all four, one process':<22}{wall:>8.2f}{4 * jobs / wall:>10,.0f}{'':>13}{rss:>10.0f}"
              f"{total:>12.1f}{total / wall:>9.0f}×")


def main() -> None:
    """Run the three benchmarks and print their figures."""
    philly()
    saturn()
    scaling()


if __name__ == "__main__":
    main()
