"""Duration estimates from a file (`job_id,duration`, or the Helios artifact's `jobname,priority`), and their quality."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl

from dlcluster.errors import InputError
from dlcluster.io._common import (
    ROW,
    apply_checks,
    negative,
    parse_float,
    read_csv_text,
    required_value,
    seconds_limit,
    unparsable,
)
from dlcluster.predict.duration import ESTIMATORS
from dlcluster.predict.estimator import UNFINISHED, status_column
from dlcluster.predict.metrics import prediction_metrics

LAYOUTS = (("job_id", "duration"), ("jobname", "priority"))  # the artifact's priority is a predicted duration


def read_estimates(path: str | Path) -> pl.DataFrame:
    """Read an estimates CSV (plain or gzip) into ``job_id: str, estimate: f64`` (predicted seconds)."""
    raw = read_csv_text(path)
    layout = next((cols for cols in LAYOUTS if all(c in raw.columns for c in cols)), None)
    if layout is None:
        have = ", ".join(c for c in raw.columns if c != ROW)
        raise InputError(f"expected columns job_id,duration (or jobname,priority); found: {have}", path=path)
    key, value = layout
    df = raw.with_columns(pl.col(key).str.strip_chars().alias("job_id"), parse_float(value).alias("estimate"))
    # (negative first: -inf is negative before it is out of range)
    checks = [required_value("job_id", key), negative("estimate", value), seconds_limit(value),
              unparsable(value, "estimate", "a number of seconds"), required_value("estimate", value)]
    df, _ = apply_checks(df, checks, path=path, lenient=False)
    again = df.sort(ROW).filter(~pl.col("job_id").is_first_distinct())
    if again.height:
        first = again.row(0, named=True)
        raise InputError(f"job {first['job_id']!r} has a second estimate", path=path, row=first[ROW], field=key)
    return df.select("job_id", "estimate")


def is_estimator_name(source: str | Path) -> bool:
    """Whether ``source`` names a built-in estimator (and no file of that name exists)."""
    return str(source) in ESTIMATORS and not Path(source).exists()


def estimates_quality(estimates: pl.DataFrame, jobs: pl.DataFrame, trace: pl.DataFrame) -> dict[str, Any]:
    """:func:`prediction_metrics` of ``estimates`` (``job_id, estimate``) over ``jobs`` (``job_id, duration, gpu_num``),
    but those still running or pending in ``trace`` (their time so far is not their run time, as in ``predict eval``).

    Without Kendall's tau: a run on fixed estimates should not pay SciPy's import (``predict eval`` reports it).
    """
    unfinished = trace.filter(status_column(trace).is_in(UNFINISHED).fill_null(False))["job_id"]
    d = (jobs.select("job_id", "duration", "gpu_num").filter(~pl.col("job_id").is_in(unfinished.implode()))
         .join(estimates, on="job_id", how="inner"))
    return prediction_metrics(d["estimate"].to_numpy(), d["duration"].to_numpy(), d["gpu_num"].to_numpy(),
                              kendall=False)
