"""Open loop: replay a demand series through a node controller, with forecasts that use only the past.

The forecaster is trained on the series before the test period; at each test step ``i``
the controller's forecasts come from the values known at ``i``. Nodes wake instantly here
(there is no job to delay): a step whose demand exceeds the nodes powered before it is a
*shortage*. The simulator's power manager is the closed-loop counterpart.
"""

from __future__ import annotations

import math

from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from dlcluster.errors import ConfigError, InputError
from dlcluster.predict.forecast import DAY, MIN_TRAIN_DAYS, Calendar, DemandForecaster, baselines, horizon, outcomes
from dlcluster.services.ces.rules import Controller
from dlcluster.services.ces.stats import controller_stats, forecast_errors

TEST_DAYS = 14  # days replayed by default (the artifact's test window is 14 days)

REPORTED_HORIZONS = (1, 6, 18, 36)  # steps ahead whose forecast errors are reported (10 min, 1 h, 3 h, 6 h)


@dataclass
class OpenLoopRun:
    """Per-step table (time, used, total, forecast, active, change, lack), figures, and forecast errors."""

    steps: pl.DataFrame
    stats: dict[str, Any]
    horizons: pl.DataFrame  # per forecast target: model and baseline RMSE / sMAPE over the test period
    days: float


def _errors(actual: np.ndarray, forecast: np.ndarray) -> tuple[float | None, float | None]:
    known = ~(np.isnan(actual) | np.isnan(forecast))
    if not known.any():
        return None, None
    return forecast_errors(actual[known], forecast[known])


def horizon_errors(forecaster: DemandForecaster, y: list[float], origins: range) -> pl.DataFrame:
    """RMSE and sMAPE of each of ``forecaster``'s targets and of the naive baselines, over ``origins``."""
    predicted = forecaster.forecast_all(origins)
    at = slice(origins.start, origins.stop)
    rows = []
    for k, target in enumerate(forecaster.targets):
        actual = outcomes(y, target)[at]
        row: dict[str, Any] = {"target": target.label, "steps_ahead": target.stop - 1}
        row["rmse"], row["smape"] = _errors(actual, predicted[:, k])
        for name, guess in baselines(y, forecaster.step, target).items():
            row[f"rmse_{name}"], row[f"smape_{name}"] = _errors(actual, guess[at])
        rows.append(row)
    return pl.DataFrame(rows)


def check_test_days(test_days: float, step: int) -> None:
    """Refuse test days that are not a positive number of days, or hold no whole ``step``-second step."""
    if not (math.isfinite(test_days) and test_days > 0):
        raise ConfigError(f"--test-days must be a positive number of days, got {test_days:g}")
    if test_days * (DAY // step) < 0.5:  # (rounded, no step)
        raise ConfigError(f"--test-days must cover at least one step, got {test_days:g}")


def open_loop(series: pl.DataFrame, controller: Controller, *, step: int, test_days: float = TEST_DAYS,
              calendar: Calendar | None = None) -> OpenLoopRun:
    """Train on all but the last ``test_days`` of ``series`` (regular, ``step`` seconds), then replay the rest."""
    calendar = calendar or Calendar()
    per_day = DAY // step
    n = series.height
    check_test_days(test_days, step)
    test = max(1, int(round(min(test_days * per_day, n + 1))))  # (more than the series holds: refused below)
    first = n - test
    if first < MIN_TRAIN_DAYS * per_day:
        # a series that holds no more than the training days leaves no test day whatever --test-days says
        advice = "lower --test-days" if n > MIN_TRAIN_DAYS * per_day else \
            f"the series is too short: it needs more than the {MIN_TRAIN_DAYS} training days"
        raise InputError(f"the series has {n * step / DAY:.2f} days; training needs at least {MIN_TRAIN_DAYS} days "
                         f"before the {test_days:g} test days ({advice})")
    ahead = max(t.stop for t in (*controller.targets, *(horizon(h) for h in REPORTED_HORIZONS)))
    if first < ahead:  # (the days are enough, but at a long step they hold few steps)
        raise ConfigError(f"--step {step}: the {first} steps before the test days are too few to train forecasts "
                          f"{ahead} steps ahead (use a shorter --step or fewer --test-days)")
    y = series["used"].cast(pl.Float64).to_list()
    total = series["total"].to_list()
    t0 = int(series["time"][0])
    origins = range(first, n)

    control = DemandForecaster(step, t0, controller.targets, calendar, quantile=controller.quantile)
    control.extend(y)
    control.fit(until=first)
    forecasts = control.forecast_all(origins)

    active = np.empty(test, dtype=np.int64)
    powered = controller.initial(y[first], total[first])
    lack = np.zeros(test, dtype=np.int64)
    change = np.zeros(test, dtype=np.int64)
    before = powered
    for k, i in enumerate(origins):
        lack[k] = max(0, int(np.ceil(y[i])) - before)
        row: list[float] = forecasts[k].tolist()
        powered = controller.step(i, y, before, total[i], lambda: row)  # noqa: B023 - called before the next row
        active[k] = powered
        change[k] = powered - before if k else 0
        before = powered
    steps = series.slice(first).select("time", "used", "total").with_columns(
        pl.Series("forecast", forecasts[:, 0]), pl.Series("active", active),
        pl.Series("change", change), pl.Series("lack", lack))
    days = test / per_day
    report = DemandForecaster(step, t0, tuple(horizon(h) for h in REPORTED_HORIZONS), calendar)
    report.extend(y)
    report.fit(until=first)
    horizons = horizon_errors(report, y, origins)
    # the headline error is the next step's, the analogue of the study's (its model forecasts each step's value)
    stats = {**controller_stats(steps, days), "rmse": horizons["rmse"][0], "smape": horizons["smape"][0]}
    return OpenLoopRun(steps, stats, horizons, days)
