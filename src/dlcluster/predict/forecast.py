"""Node-demand forecasting on a regular step: LightGBM direct models and the naive baselines they must beat.

A forecast is made at an *origin* step ``i`` from the demand known then, ``y[0..i]``, and
nothing later: each :class:`Target` (the mean or the maximum of ``y[i+start : i+stop]``)
has its own direct model, so no forecast is built on other forecasts or on future values.
The model learns the change from ``y[i]``, which keeps it right when the level drifts
beyond the range it was trained on (trees cannot extrapolate).

:class:`DemandForecaster` is online: :meth:`~DemandForecaster.extend` appends demand; each
origin's feature row is computed from the values known at that origin when a fit first needs
it, and stored. Rows are computed in blocks, vectorised, or one at a time when only a few are
new, with the same arithmetic in the same order, so both ways give the same bits. A forecast
at a new origin computes that row alone and stores nothing: the next fit computes the rows it
lacks in one block. The same rows serve the open loop (all at once) and the simulator (one
step at a time).
"""

from __future__ import annotations

import datetime
import functools
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dlcluster.errors import ConfigError

DAY = 86_400
MIN_TRAIN_DAYS = 2  # the least history a demand model is trained on
_BLOCK = 32  # new origins from which their rows are computed as one vectorised block
_FULL_FROM = 6  # the first origin whose last-6 window is whole (earlier ones are computed one by one)
_EPOCH = datetime.date(1970, 1, 1)


@dataclass(frozen=True, slots=True)
class Target:
    """What one model forecasts at origin i: ``stat`` (mean or max) of y over steps ``i+start .. i+stop-1``."""

    start: int
    stop: int
    stat: str = "mean"

    def __post_init__(self) -> None:
        if not 0 <= self.start < self.stop or self.stat not in ("mean", "max"):
            raise ValueError(f"bad forecast target {self}")

    @property
    def label(self) -> str:
        """A short name: ``+h`` for one step ``h`` ahead, else ``mean[a,b)`` or ``max[a,b)``."""
        return f"+{self.start}" if self.stop == self.start + 1 else f"{self.stat}[{self.start},{self.stop})"


def horizon(h: int) -> Target:
    """The demand exactly ``h`` steps after the origin."""
    return Target(h, h + 1)


@functools.lru_cache(maxsize=16)
def _holidays(country: str, first: int, last: int) -> frozenset[int]:
    """Epoch day numbers of ``country``'s public holidays in years ``first..last``."""
    import holidays  # imported here: only forecasts with a country need it

    try:
        known = holidays.country_holidays(country, years=range(first, last + 1))
    except NotImplementedError:
        raise ConfigError(f"no public-holiday calendar for country {country!r} (the holidays library knows "
                          "ISO codes such as US, CN, GB)") from None
    return frozenset((d - _EPOCH).days for d in known)


@dataclass(frozen=True, slots=True)
class Calendar:
    """Calendar flags: public holidays of ``country`` (ISO code) and the ``event_days`` days before each event."""

    country: str | None = None
    events: tuple[datetime.date, ...] = ()
    event_days: int = 10

    def __post_init__(self) -> None:
        if self.country is not None:
            # ISO codes, in any case: the holidays library knows them in upper case only (us -> US)
            object.__setattr__(self, "country", self.country.upper())
            _holidays(self.country, 2000, 2000)  # an unknown country is refused now, not at the first retrain

    def holiday(self, day: int) -> float:
        """1.0 if epoch day ``day`` is a public holiday, else 0.0."""
        if self.country is None:
            return 0.0
        year = (_EPOCH + datetime.timedelta(days=day)).year
        return float(day in _holidays(self.country, year - 1, year + 1))

    def event(self, day: int) -> float:
        """1.0 if epoch day ``day`` is within the ``event_days`` days before an event, else 0.0."""
        return float(any(0 < (e - _EPOCH).days - day <= self.event_days for e in self.events))


def parse_events(text: str | None, option: str = "--events") -> tuple[datetime.date, ...]:
    """Event dates from ``YYYY-MM-DD[,YYYY-MM-DD...]`` (None or empty: none)."""
    events = []
    for part in (text or "").split(","):
        if part.strip():
            try:
                events.append(datetime.date.fromisoformat(part.strip()))
            except ValueError:
                raise ConfigError(f"{option}: {part.strip()!r} is not a date YYYY-MM-DD") from None
    return tuple(events)


# the model's features, in column order (see DemandForecaster._shared and _specific). Day of the year and ISO week are left out on
# purpose: with less than a year of history they index time rather than season, and a tree cannot extrapolate them
FEATURES = ("now", "delta_1", "delta_6", "mean_6", "max_6", "std_6", "mean_36", "max_36", "mean_day",
            "yesterday", "last_week", "hour", "weekday", "holiday", "event", "origin_hour")
def outcomes(y: Sequence[float] | np.ndarray, target: Target) -> np.ndarray:
    """Per origin i of ``y``, the actual value of ``target`` (NaN where the series ends before its window does)."""
    y = np.asarray(y, dtype=np.float64)
    out = np.full(len(y), np.nan)
    full = len(y) - target.stop + 1  # origins whose whole window is in the series
    if full > 0:
        windows = np.lib.stride_tricks.sliding_window_view(y[target.start:], target.stop - target.start)[:full]
        out[:full] = windows.mean(axis=1) if target.stat == "mean" else windows.max(axis=1)
    return out


BASELINES = ("last", "yesterday", "last_week")


def baselines(y: Sequence[float] | np.ndarray, step: int, target: Target) -> dict[str, np.ndarray]:
    """Per origin, each naive forecast of ``target``: ``last`` (the origin's value), ``yesterday`` and ``last_week``
    (the same window then; NaN where that window is not over by the origin, or starts before the series)."""
    y = np.asarray(y, dtype=np.float64)
    actual = outcomes(y, target)
    out = {"last": y.copy()}
    for name, lag in (("yesterday", DAY // step), ("last_week", 7 * DAY // step)):
        then = np.full(len(y), np.nan)
        if target.stop - 1 <= lag:
            then[lag:] = actual[: max(0, len(y) - lag)]
        out[name] = then
    return out


@dataclass
class DemandForecaster:
    """Direct LightGBM models, one per :class:`Target`, trained online on a demand series (``quantile``: that
    quantile of each target instead of its expectation)."""

    step: int
    t0: int  # time of step 0, UTC epoch seconds
    targets: Sequence[Target]
    calendar: Calendar = field(default_factory=Calendar)
    quantile: float | None = None
    trees: int = 30
    leaves: int = 4
    history_days: int = 56  # train on the origins of at most this many most recent days (whatever the step)
    seed: int = 0
    y: list[float] = field(default_factory=list, init=False)
    models_: list[Any] | None = field(default=None, init=False)
    trained_until_: int = field(default=0, init=False)  # origins before this one had their outcome known at fit
    _rows: list[np.ndarray] = field(default_factory=list, init=False)  # per target: feature rows, by origin
    _filled: int = field(default=0, init=False)  # origins before this one have their rows
    # y[:_copied] and its running sums as arrays, for blocks of rows (see _arrays)
    _y_array: np.ndarray = field(default_factory=lambda: np.empty(0), init=False)
    _cum_array: np.ndarray = field(default_factory=lambda: np.zeros(1), init=False)
    _copied: int = field(default=0, init=False)
    _cum: list[float] = field(default_factory=lambda: [0.0], init=False)  # running sums of y, for window means
    _flags: dict[int, tuple[float, float]] = field(default_factory=dict, init=False)  # calendar flags by day
    _fast: list[Any] = field(default_factory=list, init=False)
    _buffers: list[np.ndarray] = field(default_factory=list, init=False)

    def __post_init__(self) -> None:
        if self.quantile is not None and not 0 < self.quantile < 1:
            raise ConfigError(f"the forecast quantile must be between 0 and 1, got {self.quantile}")
        self._rows = [np.empty((1024, len(FEATURES))) for _ in self.targets]

    def extend(self, values: Iterable[float]) -> None:
        """Append demand values (their origins' feature rows are computed when first needed)."""
        y, cum = self.y, self._cum
        for v in values:
            y.append(float(v))
            cum.append(cum[-1] + y[-1])

    def _fill(self, upto: int) -> None:
        """Compute the feature rows of every origin before ``upto`` that has none yet."""
        lo = self._filled
        if upto <= lo:
            return
        if upto > len(self._rows[0]):
            size = max(upto, 2 * len(self._rows[0]))
            self._rows = [np.concatenate([r, np.empty((size - len(r), r.shape[1]))]) for r in self._rows]
        # a block's fixed cost is that of a few dozen rows one by one; the first origins' windows are clipped
        one_by_one = range(lo, upto) if upto - lo < _BLOCK else range(lo, max(lo, min(upto, _FULL_FROM)))
        for i in one_by_one:
            shared = self._shared(i)
            for k, target in enumerate(self.targets):
                self._rows[k][i] = shared + self._specific(i, target)
        if one_by_one.stop < upto:
            self._fill_block(one_by_one.stop, upto)
        self._filled = upto

    def _fill_block(self, lo: int, hi: int) -> None:
        """The rows of origins ``lo .. hi-1`` (``lo`` ≥ 6), vectorised; the arithmetic of :meth:`_shared` and
        :meth:`_specific`, in the same order, on the series up to ``hi - 1`` only."""
        y, cum = self._arrays(hi)
        i = np.arange(lo, hi)
        now = y[lo:hi]

        def window_mean(first: np.ndarray, last: np.ndarray) -> np.ndarray:
            first = np.maximum(first, 0)
            out: np.ndarray = (cum[last + 1] - cum[first]) / (last + 1 - first)
            return out

        def window_max(last: np.ndarray, length: int) -> np.ndarray:
            """max(y[max(0, last - length + 1) .. last]) per ``last`` (consecutive, the last one in the series;
            -inf for a window that ends before it)."""
            first = int(last[0]) - length + 1
            part = y[max(0, first): int(last[-1]) + 1]
            if first < 0:
                part = np.concatenate([np.full(-first, -np.inf), part])
            out: np.ndarray = np.lib.stride_tricks.sliding_window_view(part, length).max(axis=1)
            return out

        last6 = [y[lo - 5 + d: hi - 5 + d] for d in range(6)]  # y[i-5], ..., y[i]
        total = last6[0].copy()
        for v in last6[1:]:
            total += v
        mean6 = total / 6
        spread = np.zeros(len(i))
        for v in last6:  # (squares as products: pow(x, 2) may differ from x * x in the last bit)
            d = v - mean6
            spread += d * d
        shared = [now, now - y[lo - 1: hi - 1], now - y[lo - 6: hi - 6], mean6 - now, window_max(i, 6) - now,
                  np.sqrt(spread / 6), window_mean(i - 35, i) - now, window_max(i, 36) - now,
                  window_mean(i - DAY // self.step + 1, i) - now]
        per_day = DAY // self.step
        origin_s = self.t0 + i * self.step
        for k, target in enumerate(self.targets):
            seen = []
            for lag in (per_day, 7 * per_day):
                first, last = i + target.start - lag, i + target.stop - 1 - lag
                valid = last >= 0  # (last <= i always: a window ending after its origin is never known)
                if target.stop - 1 > lag or not valid.any():
                    seen.append(np.full(len(i), math.nan))
                    continue
                safe = np.maximum(last, 0)
                value = window_mean(first, safe) if target.stat == "mean" else \
                    window_max(last, target.stop - target.start)
                seen.append(np.where(valid, value - now, math.nan))
            mid = origin_s + (target.start + target.stop - 1) * self.step // 2
            day = mid // DAY
            days, which = np.unique(day, return_inverse=True)
            flags = np.array([self._day_flags(int(d)) for d in days])
            self._rows[k][lo:hi] = np.column_stack(
                [*shared, *seen, (mid % DAY) / 3600, ((day + 3) % 7).astype(np.float64),
                 flags[which, 0], flags[which, 1], (origin_s % DAY) / 3600])

    def _mean(self, lo: int, hi: int) -> float:
        """Mean of y[lo .. hi] (inclusive, lo clipped at 0), from the running sums."""
        lo = max(0, lo)
        return (self._cum[hi + 1] - self._cum[lo]) / (hi + 1 - lo)

    def _arrays(self, hi: int) -> tuple[np.ndarray, np.ndarray]:
        """y[:hi] and its running sums (with the leading 0) as arrays, copied from the lists only where new."""
        done = self._copied
        if hi > done:
            if hi >= len(self._y_array):  # doubling: each value is copied a bounded number of times
                size = 2 * hi
                self._y_array = np.concatenate([self._y_array[:done], np.empty(size - done)])
                self._cum_array = np.concatenate([self._cum_array[: done + 1], np.empty(size - done)])
            self._y_array[done:hi] = self.y[done:hi]
            self._cum_array[done + 1: hi + 1] = self._cum[done + 1: hi + 1]
            self._copied = hi
        return self._y_array[:hi], self._cum_array[: hi + 1]

    def _shared(self, i: int) -> list[float]:
        y, nan, mean = self.y, math.nan, self._mean
        now = y[i]
        last6 = y[max(0, i - 5): i + 1]
        # sums as loops, left to right, as _fill_block adds them (sum() of floats is compensated from Python 3.12 on,
        # which would make the two ways differ in the last bit)
        total = last6[0]
        for v in last6[1:]:
            total += v
        mean6 = total / len(last6)
        spread = 0.0
        for v in last6:
            d = v - mean6
            spread += d * d  # (d * d: see _fill_block)
        return [now, now - y[i - 1] if i >= 1 else nan, now - y[i - 6] if i >= 6 else nan,
                mean6 - now, max(last6) - now, math.sqrt(spread / len(last6)),
                mean(i - 35, i) - now, max(y[max(0, i - 35): i + 1]) - now, mean(i - DAY // self.step + 1, i) - now]

    def _specific(self, i: int, target: Target) -> list[float]:
        y, step, now = self.y, self.step, self.y[i]
        per_day = DAY // step
        seen = []
        for lag in (per_day, 7 * per_day):
            lo, hi = i + target.start - lag, i + target.stop - 1 - lag
            if not 0 <= hi <= i:
                seen.append(math.nan)
            elif target.stat == "mean":
                seen.append(self._mean(lo, hi) - now)
            else:
                seen.append(max(y[max(0, lo): hi + 1]) - now)
        origin_s = self.t0 + i * step
        mid = origin_s + (target.start + target.stop - 1) * step // 2
        day = mid // DAY
        return [*seen, (mid % DAY) / 3600, float((day + 3) % 7),  # 1970-01-01 was a Thursday: Monday is 0
                *self._day_flags(day), (origin_s % DAY) / 3600]

    def _latest_rows(self, i: int) -> list[list[float]]:
        """Per target, the row of origin ``i``: :meth:`_shared` and :meth:`_specific`, with the same arithmetic in
        the same order, unrolled where every window lies within the series (nearly every origin of a long run,
        where a controller asks for them at every step)."""
        y, step = self.y, self.step
        per_day = DAY // step
        if i < 7 * per_day or i < 35 or any(t.stop > per_day for t in self.targets):
            shared = self._shared(i)
            return [shared + self._specific(i, t) for t in self.targets]
        cum = self._cum
        a, b, c, d, e, now = y[i - 5: i + 1]
        mean6 = (a + b + c + d + e + now) / 6
        da, db, dc, dd, de, dn = a - mean6, b - mean6, c - mean6, d - mean6, e - mean6, now - mean6
        shared = [now, now - e, now - y[i - 6], mean6 - now, max(a, b, c, d, e, now) - now,
                  math.sqrt((da * da + db * db + dc * dc + dd * dd + de * de + dn * dn) / 6),
                  (cum[i + 1] - cum[i - 35]) / 36 - now, max(y[i - 35: i + 1]) - now,
                  (cum[i + 1] - cum[i + 1 - per_day]) / per_day - now]
        origin_s = self.t0 + i * step
        rows = []
        for t in self.targets:
            # the target's window a day and a week before: [first, stop), whole and known
            first, stop = i + t.start - per_day, i + t.stop - per_day
            if t.stat == "mean":
                width = t.stop - t.start
                seen = [(cum[stop] - cum[first]) / width - now,
                        (cum[stop - 6 * per_day] - cum[first - 6 * per_day]) / width - now]
            else:
                seen = [max(y[first: stop]) - now, max(y[first - 6 * per_day: stop - 6 * per_day]) - now]
            mid = origin_s + (t.start + t.stop - 1) * step // 2
            day = mid // DAY
            rows.append([*shared, *seen, (mid % DAY) / 3600, float((day + 3) % 7), *self._day_flags(day),
                         (origin_s % DAY) / 3600])
        return rows

    def _day_flags(self, day: int) -> tuple[float, float]:
        """(holiday, event) of epoch day ``day``, cached."""
        flags = self._flags.get(day)
        if flags is None:
            flags = self._flags[day] = (self.calendar.holiday(day), self.calendar.event(day))
        return flags

    def fit(self, until: int | None = None) -> DemandForecaster:
        """Train on the origins whose outcome was known at step ``until`` (default: now), of the last ``history_days``."""
        from dlcluster.predict.lightgbm_capi import train
        from dlcluster.predict.single_row import single_row_predictor

        known = len(self.y) if until is None else min(until, len(self.y))
        params: dict[str, Any] = {
            "objective": "quantile" if self.quantile is not None else "regression",
            "num_leaves": self.leaves, "learning_rate": 0.1, "min_data_in_leaf": 20, "max_bin": 63,
            # byte-identical models for identical input
            "num_threads": 1, "deterministic": True, "force_row_wise": True, "seed": self.seed, "verbosity": -1}
        if self.quantile is not None:
            params["alpha"] = self.quantile
        self._fill(known)
        y = self._arrays(known)[0]
        models, fast, buffers = [], [], []
        for k, target in enumerate(self.targets):
            last = known - target.stop  # the last origin whose whole target window is known
            if last < 0:
                raise ValueError(f"{known} steps are too few to train a forecast of {target.label}")
            first = max(0, last + 1 - self.history_days * DAY // self.step)
            outcome = outcomes(y, target)[first: last + 1]
            model = train(params, self._rows[k][first: last + 1], outcome - y[first: last + 1], FEATURES, self.trees)
            models.append(model)
            buffers.append(np.zeros((1, len(FEATURES))))
            fast.append(single_row_predictor(model, buffers[-1]))
        self.models_, self._fast, self._buffers, self.trained_until_ = models, fast, buffers, known
        return self

    def forecast(self) -> list[float]:
        """Forecasts of every target at the latest origin (from the series so far), at least 0 each."""
        if self.models_ is None:
            raise RuntimeError("DemandForecaster is not fitted: call fit() first")
        i = len(self.y) - 1
        if i >= self._filled:
            # this row alone, not stored: the next fit computes every row it lacks in one block, which costs about
            # as much as a few dozen rows one by one (storing rows here would pay that every few dozen steps)
            for k, row in enumerate(self._latest_rows(i)):
                self._buffers[k][0] = row
        else:
            for k in range(len(self.targets)):
                self._buffers[k][0] = self._rows[k][i]
        now = self.y[i]
        return [max(0.0, now + predict(0)) for predict in self._fast]

    def forecast_all(self, origins: Sequence[int] | np.ndarray) -> np.ndarray:
        """Forecasts at many origins at once (rows: origins, columns: targets), each from its own stored row."""
        if self.models_ is None:
            raise RuntimeError("DemandForecaster is not fitted: call fit() first")
        idx = np.asarray(origins, dtype=np.int64)
        if len(idx):
            self._fill(int(idx.max()) + 1)
        now = np.asarray(self.y)[idx]
        cols = [now + m.predict(self._rows[k][idx], num_threads=1) for k, m in enumerate(self.models_)]
        out: np.ndarray = np.maximum(np.column_stack(cols), 0.0)
        return out

