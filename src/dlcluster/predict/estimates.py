"""Duration estimates from a file (`job_id,duration`, or the Helios artifact's `jobname,priority`) or by estimator name."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from dlcluster.errors import InputError
from dlcluster.io._common import (
    ROW,
    apply_checks,
    parse_float,
    read_csv_text,
    required_value,
    unparsable,
)
from dlcluster.predict.duration import ESTIMATORS, estimate_durations

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
    checks = [required_value("job_id", key), unparsable(value, "estimate", "a number of seconds"),
              required_value("estimate", value)]
    df, _ = apply_checks(df, checks, path=path, lenient=False)
    again = df.sort(ROW).filter(~pl.col("job_id").is_first_distinct())
    if again.height:
        first = again.row(0, named=True)
        raise InputError(f"job {first['job_id']!r} has a second estimate", path=path, row=first[ROW], field=key)
    return df.select("job_id", "estimate")


def estimates_from(source: str | Path, jobs: pl.DataFrame) -> pl.DataFrame:
    """A built-in estimator's predictions when ``source`` names one (and no such file exists), else the file's."""
    if str(source) in ESTIMATORS and not Path(source).exists():
        return estimate_durations(jobs, str(source))
    return read_estimates(source)
