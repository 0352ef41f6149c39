"""The figures the Helios CES study prints for a node controller run, and its forecast errors.

Both functions are generic: they take a per-step table (or two aligned series) and know
nothing of how the controller decided. The definitions are the SC'21 artifact's
(``framework/CES Service/CES_*.py`` and ``utils.smape``) so that compatibility mode and the
project's own open loop report comparable numbers:

- a *change* is a step whose recorded ``change`` is non-zero; a *wake-up* one where it is
  positive. The controller decides what it records (the artifact's, for instance, records
  the increase before capping it at the cluster size), these functions only count.
- utilisations are means over steps of per-step ratios (not ratios of sums), in percent.
- ``days`` is the length of the period the per-day rates are divided by, as given by the
  caller (the artifact passes the number of calendar days it selected).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
import polars as pl

STEP_COLUMNS = ("used", "total", "active", "change", "lack")

ArrayLike = npt.NDArray[np.generic] | pl.Series | Sequence[float]


def controller_stats(steps: pl.DataFrame, days: float) -> dict[str, float | int | None]:
    """The study's printed controller figures from a per-step table (used, total, active, change, lack)."""
    missing = [c for c in STEP_COLUMNS if c not in steps.columns]
    if missing:
        raise ValueError(f"controller_stats: the step table lacks column(s) {', '.join(missing)}")
    if not days > 0:
        raise ValueError(f"controller_stats: days must be positive, not {days}")
    col = {c: steps.get_column(c).cast(pl.Int64).to_numpy() for c in STEP_COLUMNS}
    used, total, active, change = (col[c].astype(np.float64) for c in ("used", "total", "active", "change"))
    moved = change[change != 0]
    woke = change[change > 0]
    return {
        "changes_per_day": moved.size / days,
        "wakeups_per_day": woke.size / days,
        "mean_wakeup_size": float(np.mean(woke)) if woke.size else None,
        "mean_abs_change": float(np.mean(np.abs(moved))) if moved.size else None,
        "median_abs_change": float(np.median(np.abs(moved))) if moved.size else None,
        "mean_off_nodes": float(np.mean(total - active)) if total.size else None,
        "utilization_total": _mean_percent(used, total),
        "utilization_powered": _mean_percent(used, active),
        "shortages": int(np.count_nonzero(col["lack"] > 0)),
    }


def _mean_percent(num: npt.NDArray[np.float64], den: npt.NDArray[np.float64]) -> float | None:
    """Mean of num/den*100 over steps, skipping 0/0 steps as pandas' mean skips NaN (x/0 stays inf)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        # num / den * 100 in this order: the artifact's expression, so the floats round alike
        rate = num / den * 100
    known = ~np.isnan(rate)
    count = int(np.count_nonzero(known))
    if count == 0:
        return None
    return float(np.sum(np.where(known, rate, 0.0)) / count)


def forecast_errors(actual: ArrayLike, forecast: ArrayLike) -> tuple[float, float]:
    """RMSE and sMAPE (percent, a step where both are 0 counts as 0) of a forecast against the actual series."""
    a = np.asarray(actual, dtype=np.float64)
    f = np.asarray(forecast, dtype=np.float64)
    if a.shape != f.shape or a.ndim != 1:
        raise ValueError(f"forecast_errors: series of different shapes {a.shape} and {f.shape}")
    if a.size == 0:
        raise ValueError("forecast_errors: empty series")
    rmse = float(np.sqrt(np.mean((a - f) ** 2)))
    num = np.abs(f - a)
    den = np.abs(f) + np.abs(a)
    # the artifact's utils.smape yields NaN on 0/0; a perfect forecast of an idle step is no error
    term = np.divide(num, den, out=np.zeros_like(num), where=den != 0)
    smape = float(2.0 * np.mean(term) * 100)
    return rmse, smape
