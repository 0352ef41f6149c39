"""Compatibility mode: the Helios SC'21 artifact's CES open loop, step for step.

A port of ``framework/CES Service/CES_Philly.py`` and ``CES_Helios.py``: resample the
minute series of busy nodes to 10-minute maxima, forecast it with the artifact's LightGBM
model over the test window, floor the forecast and replay the artifact's node controller
on it. Its defects are kept on purpose (see ``reference/helios-artifact-semantics.md``,
section 4): the lag features of the test window are built from the actual test series (so
forecasts more than one hour ahead leak), wake-ups are instantaneous, the first hour ignores
the cluster size and the recorded change of a wake-up ignores the cap at it. Even pandas'
floating-point rounding of the rolling std is reproduced, because the model depends on it.
The project's own open loop fixes the defects; this one exists to be compared with the
published numbers (measured agreement: docs, CES compatibility mode).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import Literal

import holidays
import numpy as np
import numpy.typing as npt
import polars as pl

from dlcluster.errors import ConfigError, InputError
from dlcluster.predict.lightgbm_import import lightgbm as lgb
from dlcluster.services.ces.params import PRESETS, RuleParams
from dlcluster.services.ces.stats import controller_stats, forecast_errors

STEP = 600  # seconds per controller step: the artifact resamples to "10min"
PERIOD = 144  # steps per day; the artifact derives every lag from it
WARMUP = 6  # the controller's first hour: active = used + buffer, nothing else

# the artifact's initial `stable_pred` per cluster. It has no effect (it only matters for
# steps before 1, which the warm-up skips) but is kept as the scripts set it
STABLE_PRED0: dict[str, int] = {"philly": 0, "venus": 0, "earth": 1, "saturn": 0, "uranus": 1}

# CES_Helios.py: the 10 days before each of these deadlines are "event" days
EVENTS = (date(2020, 3, 6), date(2020, 6, 6), date(2020, 9, 10))
EVENT_DAYS = 10

LGB_PARAMS: dict[str, object] = {
    "metric": "rmse", "bagging_fraction": 0.85, "bagging_freq": 1,  # the artifact's parameters
    # added for repeatable runs. No `seed`: it would replace LightGBM's default bagging seed and
    # change the model. One thread and fixed histograms: on the Philly study the forecast is the
    # same with the library's default threading (checked), but only this is guaranteed
    "num_threads": 1, "deterministic": True, "force_col_wise": True, "verbosity": -1,
}
EARLY_STOPPING = 200
MAX_ROUNDS = 10_000


def _epoch(text: str) -> int:
    return int((datetime.fromisoformat(text) - datetime(1970, 1, 1)).total_seconds())


@dataclass(frozen=True, slots=True)
class ArtifactStudy:
    """Windows of one of the artifact's two scripts (times are UTC epoch seconds of bin starts)."""

    test_start: int  # first bin of the test window; the training frame is every bin before it
    test_end: int  # bins starting before this are tested (the scripts' exclusive upper bound)
    val_month: int  # months < val_month train the model, this month validates it
    first_day: date  # the controller runs over test bins dated first_day .. last_day
    last_day: date
    calendar: bool  # Helios adds holiday and event features


PHILLY = ArtifactStudy(_epoch("2017-12-01 00:00:00"), _epoch("2017-12-14 23:59:00"), 11,
                       date(2017, 12, 1), date(2017, 12, 14), calendar=False)
HELIOS = ArtifactStudy(_epoch("2020-09-01 00:00:00"), _epoch("2020-09-22 00:00:00"), 8,
                       date(2020, 9, 1), date(2020, 9, 21), calendar=True)
STUDIES: dict[str, ArtifactStudy] = {"philly": PHILLY, "venus": HELIOS, "earth": HELIOS,
                                     "saturn": HELIOS, "uranus": HELIOS}


@dataclass(frozen=True, slots=True)
class ArtifactRun:
    """One compat-mode run: the controller's steps, the printed figures and the period they cover."""

    steps: pl.DataFrame  # time, used, total, forecast (floored), active, change, lack; Int64
    stats: dict[str, float | int | None]  # controller_stats plus rmse and smape of the raw forecast
    days: int  # calendar days the controller ran over (the per-day rates' denominator)
    best_iteration: int = 0  # boosting rounds the early-stopped model kept


def resample_10min(minutes: pl.DataFrame) -> pl.DataFrame:
    """Ten-minute maxima of used and total, on every bin from the first to the last (empty bins null)."""
    # pandas' resample("10min") bins from midnight of the first day; 600 divides a day, so
    # flooring epoch seconds to 600 gives the same bins, labelled by their start
    binned = (
        minutes.lazy()
        .group_by((pl.col("time") // STEP * STEP).alias("time"))
        .agg(pl.col("used").max(), pl.col("total").max())
    ).collect()
    first, last = binned.get_column("time").min(), binned.get_column("time").max()
    assert isinstance(first, int) and isinstance(last, int)
    grid = pl.DataFrame({"time": pl.int_range(first, last + STEP, STEP, dtype=pl.Int64, eager=True)})
    # pandas gives an empty bin NaN and keeps it: it stays in the training frame as a row with
    # a missing label and missing lags (dropping such rows changes the Philly model)
    return grid.join(binned, on="time", how="left")


def _holiday_dates(first: date, last: date) -> list[date]:
    """Days chinese_calendar.is_holiday calls holidays, approximated by the `holidays` China calendar."""
    cal = holidays.China(years=range(first.year, last.year + 1))
    span = (last - first).days + 1
    # not a working day = a public holiday or day off in lieu, or a weekend that is not a make-up workday
    return [d for d in (first + timedelta(days=k) for k in range(span)) if not cal.is_working_day(d)]


def _event_dates() -> list[date]:
    return [day - timedelta(days=k) for day in EVENTS for k in range(1, EVENT_DAYS + 1)]


_INV_COND_TOL = float(np.finfo(np.float64).eps) * 1e3  # pandas' threshold for restarting a window's sums


def pandas_rolling_std(values: npt.ArrayLike, window: int) -> npt.NDArray[np.float64]:
    """pandas 3 Series.rolling(window).std() (ddof 1, min_periods = window), to the last bit; NaN is missing."""
    # pandas/_libs/window/aggregations.pyx roll_var: Welford's running mean and sum of squared
    # deviations with Kahan-compensated updates, a value added at the window's end and removed
    # at its start, and a fresh pass over the window when a removal may have cancelled
    x = [float(v) for v in np.asarray(values, dtype=np.float64)]
    n = len(x)
    out = np.full(n, np.nan)
    nobs = mean = m2 = comp_add = comp_remove = 0.0
    unstable = False

    def add(v: float, comp: float) -> float:
        nonlocal nobs, mean, m2, unstable
        prev_m2 = m2
        nobs += 1
        prev_mean = mean - comp
        y = v - comp
        t = y - mean
        comp = t + mean - y
        mean = mean + t / nobs
        m2 = m2 + (v - prev_mean) * (v - mean)
        if prev_m2 * _INV_COND_TOL > m2:
            unstable = True
        return comp

    def remove(v: float, comp: float) -> float:
        nonlocal nobs, mean, m2, unstable
        prev_m2 = m2
        nobs -= 1
        if not nobs:
            mean = m2 = 0.0
            unstable = False
            return comp
        prev_mean = mean - comp
        y = v - comp
        t = y - mean
        comp = t + mean - y
        mean = mean - t / nobs
        m2 = m2 - (v - prev_mean) * (v - mean)
        if prev_m2 * _INV_COND_TOL > m2:
            unstable = True
        return comp

    for i in range(n):
        start = max(0, i + 1 - window)
        restart = i == 0 or start >= i
        if not restart:
            for j in range(max(0, i - window), start):
                if x[j] == x[j]:
                    comp_remove = remove(x[j], comp_remove)
            if x[i] == x[i]:
                comp_add = add(x[i], comp_add)
        if restart or unstable:
            nobs = mean = m2 = comp_add = comp_remove = 0.0
            for j in range(start, i + 1):
                if x[j] == x[j]:
                    comp_add = add(x[j], comp_add)
            unstable = False
        if nobs >= window and nobs > 1:
            var = m2 / (nobs - 1)
            out[i] = math.sqrt(var) if var > 0 else 0.0  # pandas' zsqrt: a negative variance is 0
    return out


def feature_names(calendar: bool) -> list[str]:
    """The model's columns in the artifact's order (its frame's columns from index 2 on)."""
    names = ["year", "month", "day", "hour", "minute", "dayofweek", "dayofyear", "week"]
    for p in (PERIOD // 48, PERIOD // 24):
        names += [f"rolling_day_mean_{p}", f"rolling_day_median_{p}", f"rolling_day_std_{p}"]
    names += ["3h_ago", "3h_ago_soft"]
    return names + (["holiday", "event"] if calendar else [])


def artifact_features(frame: pl.DataFrame, calendar: bool) -> pl.DataFrame:
    """The artifact's feature_engineering on one frame (time epoch s, value): lags restart at its first row."""
    ts = pl.from_epoch(pl.col("time"), time_unit="s")
    value = pl.col("value").cast(pl.Float64)
    lagged = value.shift(PERIOD // 24)
    exprs: list[pl.Expr] = [
        ts.dt.year().cast(pl.Int16).alias("year"),
        ts.dt.month().cast(pl.Int16).alias("month"),
        ts.dt.day().cast(pl.Int16).alias("day"),
        ts.dt.hour().cast(pl.Int16).alias("hour"),
        ts.dt.minute().cast(pl.Int16).alias("minute"),
        (ts.dt.weekday() - 1).cast(pl.Int16).alias("dayofweek"),  # pandas: Monday = 0
        ts.dt.ordinal_day().cast(pl.Int16).alias("dayofyear"),
        ts.dt.week().cast(pl.Int16).alias("week"),  # ISO week, as isocalendar().week
    ]
    for p in (PERIOD // 48, PERIOD // 24):
        # a window with a missing value is missing, as in pandas (min_periods = window)
        exprs += [
            lagged.rolling_mean(p).alias(f"rolling_day_mean_{p}"),
            lagged.rolling_median(p).alias(f"rolling_day_median_{p}"),
        ]
    ago = PERIOD // 8
    exprs += [
        value.shift(ago).alias("3h_ago"),
        # same operations in the same order as the script's soft_avg, so the floats agree
        (0.5 * value.shift(ago) + 0.25 * (value.shift(ago + 1) + value.shift(ago - 1))).alias("3h_ago_soft"),
    ]
    out = frame.select(exprs)
    # Polars' rolling std differs from pandas' in the last digits (up to 1e-5 here, as pandas
    # carries running sums along the series), and LightGBM's bins see those digits: with Polars'
    # the Philly model stops at 33 rounds instead of 31 and every printed figure moves
    lag = frame.select(lagged).to_series().to_numpy()
    out = out.with_columns(
        pl.Series(f"rolling_day_std_{p}", pandas_rolling_std(lag, p)).fill_nan(None)
        for p in (PERIOD // 48, PERIOD // 24)
    )
    if calendar:
        days = frame.select(ts.dt.date().alias("d")).get_column("d")
        if days.len():
            first, last = days.min(), days.max()
            assert isinstance(first, date) and isinstance(last, date)
            off = _holiday_dates(first, last)
        else:
            off = []
        out = out.with_columns(
            days.is_in(pl.Series(off, dtype=pl.Date).implode()).cast(pl.Int64).alias("holiday"),
            days.is_in(pl.Series(_event_dates(), dtype=pl.Date).implode()).cast(pl.Int64).alias("event"),
        )
    return out.select(feature_names(calendar))


def _matrix(features: pl.DataFrame) -> npt.NDArray[np.float64]:
    # LightGBM's pandas path turns the artifact's int16/float64 frame into float64, NaN for missing
    return features.select(pl.all().cast(pl.Float64)).to_numpy().astype(np.float64, copy=False)


def _labels(series: pl.Series) -> npt.NDArray[np.float64]:
    return series.cast(pl.Float64).to_numpy().astype(np.float64, copy=False)


def artifact_forecast(
    train: pl.DataFrame, test: pl.DataFrame, study: ArtifactStudy
) -> tuple[npt.NDArray[np.float64], int]:
    """Fit the artifact's model on the training frame (time, value) and forecast the test frame; and its rounds."""
    names = feature_names(study.calendar)
    train_x = artifact_features(train, study.calendar)
    test_x = artifact_features(test, study.calendar)
    month = train_x.get_column("month")
    fit = (month < study.val_month).to_numpy()
    val = (month == study.val_month).to_numpy()
    x, y = _matrix(train_x), _labels(train.get_column("value"))
    categorical: list[str] | Literal["auto"] = ["event", "holiday"] if study.calendar else "auto"
    train_set = lgb.Dataset(x[fit], y[fit], feature_name=names, categorical_feature=categorical)
    val_set = lgb.Dataset(x[val], y[val], feature_name=names, categorical_feature=categorical,
                          reference=train_set)
    model = lgb.train(
        dict(LGB_PARAMS), train_set, num_boost_round=MAX_ROUNDS, valid_sets=[val_set],
        callbacks=[lgb.early_stopping(EARLY_STOPPING, verbose=False), lgb.log_evaluation(0)],
    )
    # predict uses the early-stopped best iteration, as the artifact's did
    prediction = np.asarray(model.predict(_matrix(test_x)), dtype=np.float64)
    return prediction, int(model.best_iteration)


def _mean(prefix: list[int], n: int, start: int, stop: int) -> float:
    """np.mean of a positional pandas slice [start:stop] of a length-n integer series (NaN if empty)."""
    s = range(n)[start:stop]  # Python slice rules, as pandas' positional slicing
    if len(s) == 0:
        return math.nan
    # integer sums are exact, so sum / count rounds exactly as np.mean does
    return (prefix[s.stop] - prefix[s.start]) / len(s)


def artifact_controller(
    used: npt.ArrayLike, total: npt.ArrayLike, forecast: npt.ArrayLike, params: RuleParams, stable_pred0: int = 0
) -> dict[str, npt.NDArray[np.int64]]:
    """The artifact's node-controller loop on integer series; returns active, change and lack per step."""
    u = [int(v) for v in np.asarray(used, dtype=np.int64)]
    t = [int(v) for v in np.asarray(total, dtype=np.int64)]
    p = [int(v) for v in np.asarray(forecast, dtype=np.int64)]
    n = len(u)
    if len(t) != n or len(p) != n:
        raise ValueError(f"artifact_controller: series of lengths {n}, {len(t)}, {len(p)}")
    pu, pp = [0], [0]
    for k in range(n):
        pu.append(pu[-1] + u[k])
        pp.append(pp[-1] + p[k])
    b, keep, fut = params.buffer, params.keep, params.future
    active, change, lack = [0] * n, [0] * n, [0] * n
    stable = stable_pred0
    for i in range(n):
        if i < WARMUP:
            active[i] = u[i] + b  # not capped at the total: the script does not cap here
            continue
        a = active[i - 1]
        if a < u[i]:  # shortage: wake nodes at once, then hold for `keep` steps
            lack[i] = u[i] - a
            a = u[i] + b
            change[i] = a - active[i - 1]  # recorded before the cap below, which can lower `a`
            stable = i + keep
        if a > t[i]:
            # the cap leaves `change` alone: a capped wake-up records more nodes than it powered,
            # and the cap of the uncapped warm-up at step 6 records no change at all
            a = t[i]
        active[i] = a
        history_trend = _mean(pu, n, i - params.history, i) - u[i]
        near = _mean(pp, n, i, i + fut)  # slices run short at the end of the series, as in pandas
        if not (history_trend >= params.his_threshold and u[i] - near >= params.fut_threshold):
            continue
        if i < stable:
            continue
        stable = i
        if near < _mean(pp, n, i, i + 2 * fut):  # demand forecast to rise again: keep the nodes
            continue
        target = min(a, u[i] + b)
        if a - target >= params.de_threshold:
            active[i] = target
            change[i] = target - active[i - 1]
    return {
        "active": np.array(active, dtype=np.int64),
        "change": np.array(change, dtype=np.int64),
        "lack": np.array(lack, dtype=np.int64),
    }


def _day(epoch: int) -> str:
    return (datetime(1970, 1, 1) + timedelta(seconds=epoch)).strftime("%Y-%m-%d %H:%M")


def _check_input(minutes: pl.DataFrame) -> pl.DataFrame:
    missing = [c for c in ("time", "used", "total") if c not in minutes.columns]
    if missing:
        raise InputError(f"the node series lacks column(s) {', '.join(missing)}", field=missing[0])
    try:
        out = minutes.select(pl.col("time", "used", "total").cast(pl.Int64))
    except pl.exceptions.PolarsError as exc:
        raise InputError(f"time, used and total must be integers ({type(exc).__name__})") from None
    if out.height == 0:
        raise InputError("the node series is empty")
    for c in ("time", "used", "total"):
        if out.get_column(c).null_count():
            raise InputError(f"the node series has {out.get_column(c).null_count()} missing value(s)", field=c)
    return out


def _check_windows(bins: pl.DataFrame, study: ArtifactStudy, preset: str) -> None:
    month = pl.from_epoch(pl.col("time"), time_unit="s").dt.month()
    train = bins.filter(pl.col("time") < study.test_start, pl.col("used").is_not_null())
    n_fit = train.filter(month < study.val_month).height
    n_val = train.filter(month == study.val_month).height
    if n_fit == 0 or n_val == 0:
        raise InputError(
            f"the node series does not cover the {preset} study's training data: it needs 10-minute bins "
            f"before {_day(study.test_start)} UTC in months < {study.val_month} (has {n_fit}) "
            f"and in month {study.val_month} (has {n_val})"
        )
    expected = -(-(study.test_end - study.test_start) // STEP)
    have = bins.filter(
        pl.col("time") >= study.test_start, pl.col("time") < study.test_end,
        pl.col("used").is_not_null(), pl.col("total").is_not_null(),
    ).height
    if have != expected:
        raise InputError(
            f"the node series does not cover the {preset} study's test window {_day(study.test_start)} .. "
            f"{_day(study.test_end)} UTC: {have} of its {expected} 10-minute bins have data"
        )


def artifact_open_loop(minutes: pl.DataFrame, preset: str) -> ArtifactRun:
    """Run the artifact's CES study (forecast, floor, controller) on a minute series of busy and total nodes."""
    if preset not in STUDIES:
        raise ConfigError(f"unknown CES preset '{preset}' (choose one of {', '.join(STUDIES)})")
    study, params = STUDIES[preset], PRESETS[preset]
    bins = resample_10min(_check_input(minutes))
    _check_windows(bins, study, preset)

    frame = bins.select("time", pl.col("used").alias("value"))
    train = frame.filter(pl.col("time") < study.test_start)
    in_test = (pl.col("time") >= study.test_start) & (pl.col("time") < study.test_end)
    test = frame.filter(in_test)
    prediction, rounds = artifact_forecast(train, test, study)
    actual = test.get_column("value").cast(pl.Float64).to_numpy()
    rmse, smape = forecast_errors(actual, prediction)

    # sim.apply(np.floor).astype(int): the controller sees the forecast floored
    sim = bins.filter(in_test).with_columns(forecast=pl.Series(np.floor(prediction).astype(np.int64)))
    day = pl.from_epoch(pl.col("time"), time_unit="s").dt.date()
    sim = sim.filter(day >= study.first_day, day <= study.last_day)
    days = (study.last_day - study.first_day).days + 1
    ctl = artifact_controller(sim.get_column("used").to_numpy(), sim.get_column("total").to_numpy(),
                              sim.get_column("forecast").to_numpy(), params, STABLE_PRED0[preset])
    steps = sim.select(
        pl.col("time", "used", "total", "forecast").cast(pl.Int64),
        pl.Series("active", ctl["active"]), pl.Series("change", ctl["change"]), pl.Series("lack", ctl["lack"]),
    )
    stats = controller_stats(steps, days)
    stats.update(rmse=rmse, smape=smape)
    return ArtifactRun(steps=steps, stats=stats, days=days, best_iteration=rounds)
