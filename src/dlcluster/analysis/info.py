"""The one-screen summary behind ``dlcluster info``."""

from __future__ import annotations

import datetime as dt
from typing import Any

import polars as pl

from dlcluster.analysis.common import gpu_seconds
from dlcluster.schema import STATUSES
from dlcluster.trace import Trace


def _iso(epoch: int | None) -> str | None:
    if epoch is None:
        return None
    return dt.datetime.fromtimestamp(int(epoch), tz=dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def trace_info(trace: Trace) -> dict[str, Any]:
    """Counts, span (UTC, ISO 8601), status counts and GPU-hours of a trace."""
    jobs = trace.jobs
    row = jobs.select(
        pl.len().alias("jobs"),
        (pl.col("gpu_num") > 0).sum().alias("gpu_jobs"),
        pl.col("vc").n_unique().alias("vcs"),
        pl.col("user").drop_nulls().n_unique().alias("users"),
        pl.col("submit_time").min().alias("start"),
        # (a trace with durations but no end times, such as the Philly table, still runs past its last submission)
        pl.max_horizontal(pl.col("end_time").max(),
                          (pl.coalesce("start_time", "submit_time") + pl.col("duration")).max(),
                          pl.col("submit_time").max()).alias("end"),
        gpu_seconds().sum().alias("gpu_seconds"),
    ).row(0, named=True)
    counts = dict(jobs.get_column("status").cast(pl.String).value_counts().iter_rows())
    return {
        "format": trace.format,
        "timezone": trace.timezone,
        "jobs": int(row["jobs"]),
        "gpu_jobs": int(row["gpu_jobs"] or 0),
        "vcs": int(row["vcs"]),
        "users": int(row["users"]),
        "start": _iso(row["start"]),
        "end": _iso(row["end"]),
        "status_counts": {s: int(counts[s]) for s in STATUSES if counts.get(s)},
        "gpu_hours": round(float(row["gpu_seconds"] or 0.0) / 3600.0, 1),
    }
