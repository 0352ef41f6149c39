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


def arrival_clock(starts: np.ndarray, exposure: np.ndarray, expected: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Knots (wall time, clock time) of a clock that runs at each hour bin's ``expected`` arrivals over the mean: a
    window's hours hold as many clock seconds as wall seconds, a quiet hour fewer (map with ``np.interp``).

    Past the window both run alike; a bin expecting nothing still ticks (at 1/1000 of the mean) so that clock time
    maps back to one wall time.
    """
    seconds = exposure * HOUR
    mean = expected.sum() / seconds.sum() if seconds.sum() > 0 else 0.0
    speed = np.ones(len(starts))
    if mean > 0:
        speed = np.maximum(expected / np.where(seconds > 0, seconds, 1.0) / mean, 1e-3)
    wall = np.append(starts, starts[-1] + seconds[-1]) if len(starts) else np.zeros(1, dtype=np.int64)
    clock = np.concatenate([[0.0], np.cumsum(speed * seconds)]) + float(wall[0])
    far = 100 * 365 * DAY  # (a session's later batches may run past the window's end: they are cut there)
    return np.append(wall, wall[-1] + far).astype(float), np.append(clock, clock[-1] + far)
