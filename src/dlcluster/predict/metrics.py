"""How good duration predictions are: errors, the Helios paper's accuracy bands, rank correlation of GPU time."""

from __future__ import annotations

from typing import Any

import numpy as np

BANDS = (10, 50, 100, 1000)  # percent: the Helios paper's error bands ±10 / 50 / 100 / 1000%
METRIC_KEYS = ("jobs", "mae", "mdape", *(f"within_{b}" for b in BANDS), "spearman", "kendall")


def prediction_metrics(estimate: np.ndarray, duration: np.ndarray, gpus: np.ndarray, *, kendall: bool = True
                       ) -> dict[str, Any]:
    """Metrics over jobs with a positive true duration and a finite estimate.

    ``mae``: mean absolute error (s); ``mdape``: median absolute percentage error (a share);
    ``within_B``: share of jobs within ±B% of the truth; ``spearman``, ``kendall``: rank
    correlation of predicted against true GPU time (duration × GPUs), what QSSF orders by
    (None when either side is constant, or fewer than two jobs). Kendall needs SciPy, whose
    import alone costs ~0.4 s of CPU: ``kendall=False`` leaves it None.
    """
    est, dur, g = (np.asarray(a, dtype=np.float64) for a in (estimate, duration, gpus))
    keep = (dur > 0) & np.isfinite(est)
    est, dur, g = est[keep], dur[keep], g[keep]
    out: dict[str, Any] = dict.fromkeys(METRIC_KEYS)
    out["jobs"] = int(keep.sum())
    if not out["jobs"]:
        return out
    abs_err = np.abs(est - dur)
    rel = abs_err / dur
    out["mae"] = float(abs_err.mean())
    out["mdape"] = float(np.median(rel))
    for b in BANDS:
        out[f"within_{b}"] = float((rel <= b / 100).mean())
    pred_gpu_time, true_gpu_time = est * g, dur * g
    if len(est) > 1 and np.ptp(pred_gpu_time) > 0 and np.ptp(true_gpu_time) > 0:
        # (rounded: a perfect ranking is 1, not 0.9999999999999999 from the correlation's floating-point sums)
        out["spearman"] = round(float(np.corrcoef(_average_ranks(pred_gpu_time), _average_ranks(true_gpu_time))[0, 1]),
                                12)
        if kendall:
            from scipy.stats import kendalltau

            out["kendall"] = round(float(kendalltau(pred_gpu_time, true_gpu_time).statistic), 12)
    return out


def _average_ranks(x: np.ndarray) -> np.ndarray:
    """Ranks from 1, ties sharing their mean rank, as SciPy's ``rankdata`` (without SciPy's ~0.1 s import; in a
    third of the time Polars' ``rank`` took on one simulation's jobs)."""
    order = np.argsort(x)  # (any sort: tied values get one rank whatever their order)
    sorted_x = x[order]
    starts = np.flatnonzero(np.r_[True, sorted_x[1:] != sorted_x[:-1]])
    counts = np.diff(np.r_[starts, len(x)])
    ranks = np.empty(len(x))
    ranks[order] = np.repeat(starts + (counts + 1) / 2, counts)
    return ranks
