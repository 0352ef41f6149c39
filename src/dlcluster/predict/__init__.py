"""Prediction: job-duration estimators whose output drives estimate-based policies (QSSF, EASY)."""

from dlcluster.predict.duration import (
    ESTIMATORS,
    estimate_durations,
    history_estimates,
    make_estimator,
    oracle_estimates,
)
from dlcluster.predict.estimates import estimates_quality, is_estimator_name, read_estimates
from dlcluster.predict.estimator import Driver, Estimator, replay
from dlcluster.predict.metrics import prediction_metrics

__all__ = ["ESTIMATORS", "Driver", "Estimator", "estimate_durations", "estimates_quality", "history_estimates",
           "is_estimator_name", "make_estimator", "oracle_estimates", "prediction_metrics", "read_estimates", "replay"]
