"""Built-in duration estimators (``history``, ``oracle``) and the registry of estimators by name.

``history`` is the Helios artifact's "naive" estimator made leak-free: a job's estimate is
the mean duration of earlier jobs that had *ended by its submission*, taken from the most
specific group that has any — same user, name and GPU count; same user and GPU count; same
user; everyone — and :data:`DEFAULT_SECONDS` when nothing has ended yet. ``oracle`` is the
true duration (an upper bound on what prediction can give). ``lgbm`` (LightGBM) lives in
:mod:`dlcluster.predict.lgbm` and is imported only when asked for.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable

import numpy as np
import polars as pl

from dlcluster.errors import ConfigError
from dlcluster.predict.estimator import Estimator, replay

DEFAULT_SECONDS = 3600.0  # the estimate before any job has ended: no history, no better guess
HISTORY_LEVELS = (("user", "name", "gpu_num"), ("user", "gpu_num"), ("user",), ())


class History(Estimator):
    """Mean duration of the most specific group (user+name+GPUs, user+GPUs, user, all) with an ended job."""

    name = "history"

    def attach(self, jobs: pl.DataFrame) -> None:
        """Keep the columns the groups are made of; start with no history."""
        self.user, self.job_name, self.gpu = (jobs[c].to_list() for c in ("user", "name", "gpu_num"))
        self.sums: list[dict[tuple[object, ...], list[float]]] = [{} for _ in HISTORY_LEVELS]

    def _keys(self, j: int) -> tuple[tuple[object, ...] | None, ...]:
        user, name, gpu = self.user[j], self.job_name[j], self.gpu[j]
        return ((user, name, gpu) if user is not None and name is not None else None,
                (user, gpu) if user is not None else None,
                (user,) if user is not None else None,
                ())

    def observe(self, job: int, end: int, duration: float, status: str | None) -> None:
        """Add the duration to each of the job's groups."""
        for sums, key in zip(self.sums, self._keys(job), strict=True):
            if key is not None:
                total = sums.get(key)
                if total is None:
                    sums[key] = [duration, 1.0]
                else:
                    total[0] += duration
                    total[1] += 1.0

    def predict(self, job: int, now: int) -> float:
        """The most specific group's mean, else :data:`DEFAULT_SECONDS`."""
        for sums, key in zip(self.sums, self._keys(job), strict=True):
            if key is not None:
                total = sums.get(key)
                if total is not None:
                    return total[0] / total[1]
        return DEFAULT_SECONDS


class Oracle(Estimator):
    """The true duration: what perfect prediction would give."""

    name = "oracle"
    needs_truth = True

    def attach_truth(self, durations: np.ndarray) -> None:
        """Keep every true duration (0 where unknown)."""
        self.truth = np.nan_to_num(durations, nan=0.0).tolist()

    def observe(self, job: int, end: int, duration: float, status: str | None) -> None:
        """Nothing to learn."""

    def predict(self, job: int, now: int) -> float:
        """The true duration."""
        return float(self.truth[job])


def _lgbm() -> Estimator:
    module = importlib.import_module("dlcluster.predict.lgbm")  # LightGBM is imported only when used
    return module.LgbmEstimator()  # type: ignore[no-any-return]


# name -> a new estimator of that kind
ESTIMATORS: dict[str, Callable[[], Estimator]] = {"history": History, "oracle": Oracle, "lgbm": _lgbm}


def make_estimator(name: str) -> Estimator:
    """A new built-in estimator by name."""
    if name not in ESTIMATORS:
        raise ConfigError(f"unknown estimator {name!r}; choose one of: {', '.join(ESTIMATORS)}")
    return ESTIMATORS[name]()


def estimate_durations(jobs: pl.DataFrame, estimator: str) -> pl.DataFrame:
    """Run a built-in estimator along the trace's recorded timeline: ``job_id, estimate`` for jobs with a duration."""
    values, _ = replay(make_estimator(estimator), jobs)
    return pl.DataFrame({"job_id": jobs["job_id"], "estimate": values}).filter(pl.col("estimate").is_not_nan())


def history_estimates(jobs: pl.DataFrame) -> pl.DataFrame:
    """The ``history`` estimator on the recorded timeline (``job_id, estimate``)."""
    return estimate_durations(jobs, "history")


def oracle_estimates(jobs: pl.DataFrame) -> pl.DataFrame:
    """The true duration of every job (``job_id, estimate``)."""
    return jobs.filter(pl.col("duration").is_not_null()).select(
        "job_id", pl.col("duration").cast(pl.Float64).alias("estimate"))
