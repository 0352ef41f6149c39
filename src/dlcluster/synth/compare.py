"""How close a synthetic trace is to a reference: KS, total variation, rate error, profile correlation."""

from __future__ import annotations

import numpy as np
import polars as pl
from scipy.stats import ks_2samp

from dlcluster.synth.calendar import weekly_rates
from dlcluster.synth.fit import bucket_expr, window
from dlcluster.synth.model import BUCKETS
from dlcluster.trace import Trace


def _mix(jobs: pl.DataFrame, column: str) -> dict[object, float]:
    counts = jobs.group_by(column).agg(pl.len().alias("n"))
    return {k: n / jobs.height for k, n in counts.iter_rows()}


def total_variation(a: dict[object, float], b: dict[object, float]) -> float:
    """Total-variation distance of two discrete distributions given as ``{value: share}``."""
    return 0.5 * sum(abs(a.get(k, 0.0) - b.get(k, 0.0)) for k in set(a) | set(b))


def ks_distance(a: pl.Series, b: pl.Series) -> float:
    """Two-sample Kolmogorov–Smirnov statistic of two numeric columns (nulls ignored)."""
    x, y = a.drop_nulls().to_numpy(), b.drop_nulls().to_numpy()
    if len(x) == 0 or len(y) == 0:
        return float("nan")
    return float(ks_2samp(x, y).statistic)


def jobs_per_day(trace: Trace) -> float:
    """Submissions per day over the trace's window (first local midnight to the hour after the last submit)."""
    _, days = window(trace.jobs["submit_time"], trace.timezone)
    return trace.jobs.height / days


def _profiles(trace: Trace) -> tuple[np.ndarray, np.ndarray]:
    start, days = window(trace.jobs["submit_time"], trace.timezone)
    weekly = weekly_rates(trace.jobs["submit_time"], start, days, trace.timezone)
    return weekly, np.nanmean(weekly.reshape(7, 24), axis=0)


def _corr(a: np.ndarray, b: np.ndarray) -> float:
    ok = ~(np.isnan(a) | np.isnan(b))
    if ok.sum() < 3 or a[ok].std() == 0 or b[ok].std() == 0:
        return float("nan")
    return float(np.corrcoef(a[ok], b[ok])[0, 1])


def closeness(reference: Trace, candidate: Trace) -> dict[str, float]:
    """Distances of ``candidate`` from ``reference``: smaller is closer, except the correlations."""
    ref, cand = (t.jobs.with_columns(bucket_expr(), pl.col("status").cast(pl.String)) for t in (reference, candidate))
    out = {
        "ks_duration": ks_distance(ref["duration"], cand["duration"]),
        "tv_gpu_mix": total_variation(_mix(ref, "gpu_num"), _mix(cand, "gpu_num")),
        "tv_status_mix": total_variation(_mix(ref, "status"), _mix(cand, "status")),
        "job_rate_rel_error": jobs_per_day(candidate) / jobs_per_day(reference) - 1.0,
    }
    for label, _, _ in BUCKETS:
        a = ref.filter(pl.col("bucket") == label)["duration"]
        b = cand.filter(pl.col("bucket") == label)["duration"]
        if a.drop_nulls().len() and b.drop_nulls().len():
            out[f"ks_duration_{label}"] = ks_distance(a, b)
    (week_a, day_a), (week_b, day_b) = _profiles(reference), _profiles(candidate)
    out["weekly_profile_corr"] = _corr(week_a, week_b)
    out["daily_profile_corr"] = _corr(day_a, day_b)
    return out
