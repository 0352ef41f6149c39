"""The derived Philly job table (``jobs_processed.csv``, from the Pollux artifact).

Columns ``timestamp, duration, num_gpus, gpu_time, cluster``: submit time as naive
America/Los_Angeles wall clock, duration in seconds (sum of attempts), GPUs, GPU time,
and the VC id. It has no user, status, start or attempts; ``job_id`` is the 0-based data
row index in file order, as a string.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from dlcluster.io._common import (
    ROW,
    apply_checks,
    count_limit,
    header_has,
    negative,
    parse_datetime,
    parse_int,
    read_csv_text,
    require_columns,
    required_value,
    seconds_limit,
    skipped_time,
    time_limit,
    trimmed_text,
    unparsable,
)
from dlcluster.schema import conform
from dlcluster.trace import Trace

TIMEZONE = "America/Los_Angeles"
COLUMNS = ("timestamp", "duration", "num_gpus", "cluster")


def sniff(path: Path) -> bool:
    """A CSV whose header has the derived table's columns."""
    return header_has(path, COLUMNS)


def read(path: Path, *, lenient: bool = False, timezone: str = TIMEZONE) -> Trace:
    """Read the derived Philly job table into the canonical schema."""
    raw = read_csv_text(path)
    require_columns(raw, COLUMNS, path)
    df = raw.with_columns(
        pl.int_range(pl.len()).cast(pl.String).alias("job_id"),  # (data rows: a blank line is none, nor counted)
        parse_datetime("timestamp", "%Y-%m-%d %H:%M:%S", timezone).alias("submit_time"),
        parse_int("duration").alias("duration_"),
        parse_int("num_gpus").alias("gpu_num"),
        trimmed_text("cluster").alias("vc"),  # (only spaces: no value, as the canonical CSV reads)
    )
    checks = [
        time_limit("timestamp", pl.col("submit_time")),
        seconds_limit("duration"),
        count_limit("num_gpus"),
        skipped_time("timestamp", "submit_time", "%Y-%m-%d %H:%M:%S", timezone),
        unparsable("timestamp", "submit_time", "a time (YYYY-MM-DD HH:MM:SS)"),
        required_value("submit_time", "timestamp"),
        unparsable("duration", "duration_", "a whole number of seconds"),
        negative("duration_", "duration"),
        unparsable("num_gpus", "gpu_num", "a whole number of GPUs"),
        required_value("gpu_num", "num_gpus"),
        negative("gpu_num", "num_gpus"),
        required_value("vc", "cluster"),
    ]
    df, dropped = apply_checks(df, checks, path=path, lenient=lenient)
    jobs = conform(
        df.with_columns(
            pl.lit("philly").alias("cluster"),
            pl.col("duration_").alias("duration"),
            pl.lit("other").alias("status"),
        )
    )
    return Trace(jobs, format="philly-jobs", timezone=timezone, source=str(path), dropped=dropped)
