"""Characterisation benchmarks (issue 4): the full report of a 1.75M-job Helios Saturn look-alike, and
the Philly utilisation join on a generated 1-month, 500-server per-minute ``cluster_gpu_util`` file.

Run: ``.venv/bin/python -m benchmarks.bench_report``. Inputs are cached in ``bench-out/``. Each
figure is one fresh process: wall seconds and peak RSS (DuckDB's own memory limit is 1 GB).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import polars as pl

from benchmarks._measure import (
    WORK,
    command_measured,
    dlcluster,
    python_snippet_measured,
    saturn_parquet,
)
from dlcluster.atomic import atomic_path, write_atomic

SERVERS, DAYS, START = 500, 30, 1_506_816_000  # 2017-10-01 00:00 UTC: crosses no DST change
JOIN = (
    "import json, time, polars as pl\n"
    "from dlcluster.analysis.gpu_util import job_gpu_utilization\n"
    "att = pl.read_parquet({attempts!r})\n"
    "t = time.perf_counter()\n"
    "out = job_gpu_utilization(att, {util!r}, memory_limit='1GB')\n"
    "print(json.dumps({{'jobs': out.height, 'join_s': time.perf_counter() - t}}))\n"
)


def write_gpu_util(path: Path, servers: int = SERVERS, days: int = DAYS, seed: int = 0) -> Path:
    """A per-minute ``cluster_gpu_util`` in the real file's format (PDT suffix, ``NA``, trailing comma)."""
    rng = np.random.default_rng(seed)
    machines = pl.Series([f"m{m:04d}" for m in range(servers)])
    # several GB written day by day: atomic, so an interrupted run is not taken for a cached input
    with atomic_path(path) as tmp, tmp.open("w", encoding="utf-8") as fh:
        fh.write("time,machineId," + ",".join(f"gpu{g}_util" for g in range(8)) + "\n")
        for day in range(days):
            minutes = START + day * 86400 + 60 * np.arange(1440)
            stamp = (pl.from_epoch(pl.Series(minutes), time_unit="s").dt.replace_time_zone("UTC")
                     .dt.convert_time_zone("America/Los_Angeles").dt.strftime("%Y-%m-%d %H:%M:%S") + " PDT")
            n = 1440 * servers
            vals = rng.integers(0, 101, size=(n, 8)).astype(str)
            vals[rng.random((n, 8)) < 0.05] = "NA"
            frame = pl.DataFrame({"time": stamp.gather(np.repeat(np.arange(1440), servers)),
                                  "machineId": machines.gather(np.tile(np.arange(servers), 1440)),
                                  **{f"gpu{g}_util": vals[:, g] for g in range(8)}, "_": pl.repeat("", n, eager=True)})
            fh.write(frame.write_csv(include_header=False, quote_style="never"))
    return path


def write_attempts(path: Path, jobs: int = 20_000, seed: int = 0) -> Path:
    """Attempts over the month: 1-4 servers each, runs of minutes to days."""
    rng = np.random.default_rng(seed)
    start = START + rng.integers(0, DAYS * 86400, jobs)
    end = np.minimum(start + np.exp(rng.uniform(np.log(60), np.log(3 * 86400), jobs)).astype(np.int64),
                     START + DAYS * 86400)
    width = rng.choice([1, 1, 1, 2, 4], jobs)
    first = rng.integers(0, SERVERS, jobs)
    servers = pl.int_ranges(first, first + width, eager=True).list.eval(
        pl.format("m{}", (pl.element() % SERVERS).cast(pl.String).str.zfill(4)))
    frame = pl.DataFrame({"job_id": pl.int_range(jobs, eager=True).cast(pl.String),
                          "attempt": np.zeros(jobs, np.int32), "start_time": start, "end_time": end,
                          "servers": servers, "gpus": (width * 8).astype(np.int32)})
    return write_atomic(path, frame.write_parquet)


def main() -> list[dict]:
    """Generate the inputs once, then measure the report and the join."""
    saturn = saturn_parquet()
    wall, rss, _ = command_measured(dlcluster("characterize", str(saturn), "-o", str(WORK / "saturn-report")))
    jobs = pl.scan_parquet(saturn).select(pl.len()).collect().item()
    print(f"characterize, Helios Saturn look-alike ({jobs:,} jobs): {wall:.1f} s, peak RSS {rss:,.0f} MiB  "
          "[target < 60 s, < 3072 MiB]", flush=True)
    util_dir = WORK / "philly-util-1m"
    util_dir.mkdir(parents=True, exist_ok=True)
    util = util_dir / "cluster_gpu_util"
    if not util.exists():
        write_gpu_util(util)
    attempts = util_dir / "attempts.parquet"
    if not attempts.exists():
        write_attempts(attempts)
    jwall, jrss, out = python_snippet_measured(JOIN.format(attempts=str(attempts), util=str(util)))
    res = json.loads(out.strip().splitlines()[-1])
    size = util.stat().st_size / 2**30
    print(f"Philly GPU-utilisation join, {SERVERS} servers x {DAYS} days per minute ({size:.1f} GiB CSV), "
          f"{res['jobs']:,} jobs: join {res['join_s']:.1f} s (process {jwall:.1f} s), peak RSS {jrss:,.0f} MiB "
          "[DuckDB memory_limit 1 GB]", flush=True)
    return [{"label": "report", "wall": wall, "peak_mib": rss},
            {"label": "util-join", **res, "process_s": jwall, "peak_mib": jrss}]


if __name__ == "__main__":
    main()
