"""Prediction: job-duration estimators whose output drives estimate-based policies (QSSF, EASY)."""

from dlcluster.predict.duration import (
    ESTIMATORS,
    accuracy,
    estimate_durations,
    history_estimates,
    oracle_estimates,
)

__all__ = ["ESTIMATORS", "accuracy", "estimate_durations", "history_estimates", "oracle_estimates"]
