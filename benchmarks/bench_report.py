"""Characterisation benchmarks (issue 4): the full report of a 1.75M-job Helios Saturn look-alike, and
the Philly utilisation join on a generated 1-month, 500-server per-minute ``cluster_gpu_util`` file.

Run: ``.venv/bin/python -m benchmarks.bench_report``. Inputs are cached in ``bench-out/``. Each
figure is one fresh process: CPU seconds (user + sys, every thread) first, wall seconds second,
peak RSS (DuckDB's own memory limit is 1 GB), and jobs per CPU second; for the join also the
join alone, timed inside the process.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import polars as pl

from benchmarks._measure import (
    FIGURES,
    WORK,
    Table,
    command_measured,
    dlcluster,
    figures,
    python_snippet_measured,
    saturn_parquet,
)
from dlcluster.atomic import atomic_path, write_atomic

SERVERS, DAYS, START = 500, 30, 1_506_816_000  # 2017-10-01 00:00 UTC: crosses no DST change
JOIN = (
    "import json, time, polars as pl\n"
    "from dlcluster.analysis.gpu_util import job_gpu_utilization\n"
    "att = pl.read_parquet({attempts!r})\n"
    "t, c = time.perf_counter(), time.process_time()\n"
    "out = job_gpu_utilization(att, {util!r}, memory_limit='1GB')\n"
    "print(json.dumps({{'jobs': out.height, 'join_cpu_s': time.process_time() - c,\n"
    "                   'join_s': time.perf_counter() - t}}))\n"
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
    jobs = pl.scan_parquet(saturn).select(pl.len()).collect().item()
    table = Table(("command", 34), ("jobs", 11, ",d"), *FIGURES, ("join CPU s", 12, ".1f"), ("join wall s", 13, ".1f"),
                  ("target", 20))
    rep = command_measured(dlcluster("characterize", str(saturn), "-o", str(WORK / "saturn-report")))
    table.row("characterize, Saturn look-alike", jobs, *figures(rep, jobs), None, None, "< 60 s, < 3072 MiB")
    util_dir = WORK / "philly-util-1m"
    util_dir.mkdir(parents=True, exist_ok=True)
    util = util_dir / "cluster_gpu_util"
    if not util.exists():
        write_gpu_util(util)
    attempts = util_dir / "attempts.parquet"
    if not attempts.exists():
        write_attempts(attempts)
    join = python_snippet_measured(JOIN.format(attempts=str(attempts), util=str(util)))
    res = json.loads(join.out.strip().splitlines()[-1])
    table.row("Philly GPU-utilisation join", res["jobs"], *figures(join, res["jobs"]), res["join_cpu_s"],
              res["join_s"], "DuckDB limit 1 GB")
    size = util.stat().st_size / 2**30
    print(f"  join input: {SERVERS} servers x {DAYS} days per minute, {size:.1f} GiB CSV", flush=True)
    return [{"label": "report", "cpu": rep.cpu, "wall": rep.wall, "peak_mib": rep.peak_mib},
            {"label": "util-join", **res, "process_cpu_s": join.cpu, "process_s": join.wall, "peak_mib": join.peak_mib}]


if __name__ == "__main__":
    main()
