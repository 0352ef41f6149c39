"""Prediction: job-duration estimators whose output drives estimate-based policies (QSSF, EASY)."""

from dlcluster.predict.duration import (
    ESTIMATORS,
    accuracy,
    estimate_durations,
    history_estimates,
    oracle_estimates,
)
from dlcluster.predict.estimates import estimates_from, read_estimates

__all__ = ["ESTIMATORS", "accuracy", "estimate_durations", "estimates_from", "history_estimates", "oracle_estimates",
           "read_estimates"]
