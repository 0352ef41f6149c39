"""Empirical distributions of seconds as ``log1p`` quantiles (with a finer top percent)."""

from __future__ import annotations

import numpy as np
import polars as pl

from dlcluster.synth.model import TAIL_P, Dist

N_QUANTILES = 101
DIGITS = 4


def log_quantiles(values: pl.Series, n: int = N_QUANTILES) -> Dist:
    """Empirical quantiles of ``log1p(values)`` at ``n`` evenly spaced probabilities, and at ``TAIL_P``."""
    logs = np.log1p(values.cast(pl.Float64).to_numpy())
    q = np.maximum.accumulate(np.quantile(logs, np.linspace(0.0, 1.0, n)))
    tail = np.maximum.accumulate(np.clip(np.quantile(logs, TAIL_P), q[-2], q[-1]))
    return Dist(tuple(round(float(x), DIGITS) for x in q), tail=tuple(round(float(x), DIGITS) for x in tail))
