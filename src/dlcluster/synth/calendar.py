"""Hour bins of a time window and their local hour of week (Monday 00:00 = 0), time-zone exact."""

from __future__ import annotations

import numpy as np
import polars as pl

from dlcluster.trace import local_datetime

HOUR = 3600
DAY = 86400


def hour_of_week(epochs: pl.Expr, timezone: str) -> pl.Expr:
    """Local hour of week (0..167) of UTC epoch seconds in ``timezone``."""
    local = local_datetime(epochs, timezone)
    return ((local.dt.weekday().cast(pl.Int32) - 1) * 24 + local.dt.hour().cast(pl.Int32)).alias("how")


def _hours_of_week(epochs: np.ndarray | pl.Series, timezone: str) -> np.ndarray:
    return pl.DataFrame({"t": epochs}).select(hour_of_week(pl.col("t"), timezone))["how"].to_numpy()


def hour_bins(start: int, days: float, timezone: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Bin starts (UTC epoch), exposure (fraction of an hour inside the window), and local hour of week."""
    total = days * 24.0
    n = int(np.ceil(total - 1e-9))
    starts = start + HOUR * np.arange(n, dtype=np.int64)
    exposure = np.ones(n)
    if n:
        exposure[-1] = total - (n - 1)
    return starts, exposure, _hours_of_week(starts, timezone)


def local_midnight(epoch: int, timezone: str) -> int:
    """UTC epoch of the local midnight starting the day that contains ``epoch``."""
    return int(pl.select(local_datetime(pl.lit(epoch), timezone).dt.truncate("1d").dt.epoch("s")).item())


def weekly_rates(submits: pl.Series, start: int, days: float, timezone: str) -> np.ndarray:
    """Submissions per exposed hour for each local hour of week (NaN where the window never covers it)."""
    _, exposure, how = hour_bins(start, days, timezone)
    exposed = np.bincount(how, weights=exposure, minlength=168)
    counts = np.bincount(_hours_of_week(submits, timezone), minlength=168).astype(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(exposed > 0, counts / exposed, np.nan)
