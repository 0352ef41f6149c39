"""The duration-estimator interface, and the driver that feeds one along a timeline.

An estimator is told a job's submission-time fields when the job is submitted
(:meth:`Estimator.predict`), its duration only when it ends (:meth:`Estimator.observe`), and
is retrained (:meth:`Estimator.fit`) on a fixed grid of instants: every ``retrain_every``
seconds, on multiples of it counted from the Unix epoch (daily: midnight UTC), on the jobs
that had ended by that instant. The grid does not depend on where a trace starts, so
deleting later jobs changes no earlier decision.

The same :class:`Driver` runs an estimator on a trace's recorded timeline
(:func:`replay`, used by ``dlcluster predict``) and inside the simulator on the simulated
clock (:mod:`dlcluster.predict.online`): same code, same rules, in both places.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from bisect import bisect_right
from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np
import polars as pl

# what is known of a job at its submission; ``submit`` is in seconds on the replayed clock (UTC epoch seconds,
# or the simulated clock, which starts at the trace's first submission)
SUBMIT_SCHEMA: dict[str, Any] = {"job_id": pl.String, "user": pl.String, "vc": pl.String, "name": pl.String,
                                 "gpu_num": pl.Int64, "cpu_num": pl.Int64, "node_num": pl.Int64, "submit": pl.Int64}


class Estimator(ABC):
    """Predicts a job's duration at its submission from what has ended before.

    Jobs are numbered 0 .. n-1 (rows of the table given to :meth:`attach`). An estimator
    reads row ``j`` of that table only in ``predict(j, ...)``: rows of jobs not yet
    submitted are the future.
    """

    name: ClassVar[str]
    retrain_every: int | None = None  # seconds between retrains (None: never retrained)
    needs_truth: ClassVar[bool] = False  # only the oracle: it is given every true duration up front

    def attach(self, jobs: pl.DataFrame) -> None:
        """Before the first event: every job's submission-time fields (:data:`SUBMIT_SCHEMA`), row = job number."""
        self.jobs = jobs

    def attach_truth(self, durations: np.ndarray) -> None:
        """Every job's true duration (called only when :attr:`needs_truth`)."""

    def fit(self, finished: np.ndarray, now: int) -> None:
        """Retrain on the jobs (numbers, in end order) that had ended by the grid instant ``now``."""

    @abstractmethod
    def observe(self, job: int, end: int, duration: float, status: str | None) -> None:
        """``job`` ended at ``end`` after running ``duration`` seconds with ``status`` (cheap, incremental)."""

    @abstractmethod
    def predict(self, job: int, now: int) -> float:
        """The predicted duration (seconds, ≥ 0) of ``job``, submitted at ``now``."""


class Driver:
    """Feeds an estimator its events in time order and retrains it on the grid; times what it does."""

    def __init__(self, estimator: Estimator) -> None:
        self.estimator = estimator
        self.finished: list[int] = []  # job numbers in end order
        self.ends: list[int] = []  # their end times (non-decreasing)
        self._fitted_at: float = -np.inf  # the grid instant of the last retrain
        self._fitted_jobs = 0  # how many finished jobs it saw
        self.retrains = 0
        self.fit_seconds = 0.0
        self.predict_seconds = 0.0
        self.predictions = 0

    def ended(self, job: int, end: int, duration: float, status: str | None) -> None:
        """``job`` ended at ``end`` (ends must come in time order, before the submissions of the same second)."""
        self.finished.append(job)
        self.ends.append(end)
        self.estimator.observe(job, end, duration, status)

    def predict(self, job: int, now: int) -> float:
        """Retrain if a grid instant has passed since the last retrain (and jobs ended since), then predict ``job``."""
        est = self.estimator
        every = est.retrain_every
        if every:
            instant = now // every * every
            if instant > self._fitted_at:
                known = bisect_right(self.ends, instant)
                if known > self._fitted_jobs:
                    start = time.process_time()
                    est.fit(np.asarray(self.finished[:known], dtype=np.int64), instant)
                    self.fit_seconds += time.process_time() - start
                    self.retrains += 1
                    self._fitted_jobs = known
                self._fitted_at = instant
        start = time.process_time()
        value = float(est.predict(job, now))
        self.predict_seconds += time.process_time() - start
        self.predictions += 1
        if not (value >= 0 and np.isfinite(value)):
            raise ValueError(f"estimator {est.name!r} predicted {value} s for job {job}; "
                             "a prediction must be a finite number of seconds >= 0")
        return value

    def stats(self) -> dict[str, Any]:
        """Retrains and CPU seconds spent training and predicting (for ``summary.json``)."""
        return {"estimator": self.estimator.name, "retrains": self.retrains,
                "train_seconds": self.fit_seconds, "predict_seconds": self.predict_seconds,
                "predict_us_per_job": 1e6 * self.predict_seconds / self.predictions if self.predictions else None}


def submit_table(jobs: pl.DataFrame) -> pl.DataFrame:
    """The :data:`SUBMIT_SCHEMA` columns of a canonical job table (missing optional ones null), ``submit`` its time."""
    return jobs.select(
        *((pl.col(c) if c in jobs.columns else pl.lit(None)).cast(t).alias(c)
          for c, t in SUBMIT_SCHEMA.items() if c != "submit"),
        pl.col("submit_time").cast(pl.Int64).alias("submit"),
    )


def status_column(jobs: pl.DataFrame) -> pl.Series:
    """Each job's status as text (null throughout when the table has none)."""
    if "status" in jobs.columns:
        return jobs["status"].cast(pl.String)
    return pl.Series("status", [None] * jobs.height, dtype=pl.String)


UNFINISHED = ("running", "pending")  # a job with such a status has run only so far: its duration is not its own


def recorded_durations(jobs: pl.DataFrame) -> np.ndarray:
    """Each job's recorded duration in seconds (NaN: none)."""
    return jobs["duration"].cast(pl.Float64).fill_null(np.nan).to_numpy().copy()


def final_durations(jobs: pl.DataFrame) -> np.ndarray:
    """:func:`recorded_durations`, NaN also where the job was still running or pending when the trace was taken (its
    time so far is not what it would run: never learnt from, never scored)."""
    out = recorded_durations(jobs)
    out[status_column(jobs).is_in(UNFINISHED).fill_null(False).to_numpy()] = np.nan
    return out


# when a job's duration became known on its recorded timeline: its end, else submit + wait + run
KNOWN_END = pl.coalesce(pl.col("end_time"), pl.col("submit_time") + pl.col("queue_delay").fill_null(0)
                        + pl.col("duration"))


def replay(estimator: Estimator, jobs: pl.DataFrame, progress: Callable[[int, int], None] | None = None
           ) -> tuple[np.ndarray, Driver]:
    """Predict every job of a canonical table at its recorded submission from the jobs ended by then.

    Returns the predictions (row order of ``jobs``; NaN for jobs without a duration) and the
    driver (retrains, timings). Jobs ending in the same second as a submission are known to
    it if they were submitted before that second (a job that ends in the second it was
    submitted, as the simulator sees it, is learnt only after that second's submissions, its
    own included); same-second events go in ``job_id`` order, so the table's row order changes
    nothing.
    Jobs without a duration are predicted but never end (and get NaN); so are jobs still running or
    pending when the trace was taken, but they keep their prediction (their time so far may be
    simulated). ``progress(done, total)`` is called after every further 1% of the predictions.
    """
    table = submit_table(jobs)
    recorded, duration = recorded_durations(jobs), final_durations(jobs)
    status = status_column(jobs).to_list()
    ends = jobs.select(KNOWN_END.cast(pl.Float64)).to_series().to_numpy()
    estimator.attach(table)
    if estimator.needs_truth:  # (the oracle knows what a job still running will be simulated with)
        estimator.attach_truth(recorded)
    driver = Driver(estimator)
    by_id = np.argsort(table["job_id"].to_numpy(), kind="stable")  # ties in time go in job_id order
    submits = table["submit"].to_numpy()
    ended = by_id[~np.isnan(duration[by_id]) & ~np.isnan(ends[by_id])]
    # when each end becomes known: its second, or just after that second's submissions for a job submitted in it
    known = ends[ended] + np.where(submits[ended] >= ends[ended], 0.5, 0.0)
    order_of_ends = np.argsort(known, kind="stable")
    end_rows, known_at = ended[order_of_ends], known[order_of_ends].tolist()
    end_times = ends[end_rows].astype(np.int64).tolist()
    order = by_id[np.argsort(submits[by_id], kind="stable")]
    out = np.full(jobs.height, np.nan)
    k, n_ends = 0, len(end_rows)
    end_list = end_rows.tolist()
    total = len(order)
    step = max(1, total // 100)
    for done, (j, now) in enumerate(zip(order.tolist(), submits[order].tolist(), strict=True), 1):
        while k < n_ends and known_at[k] <= now:
            e = end_list[k]
            driver.ended(e, end_times[k], duration[e], status[e])
            k += 1
        out[j] = driver.predict(j, now)
        if progress is not None and (done % step == 0 or done == total):
            progress(done, total)
    out[np.isnan(recorded)] = np.nan  # (a job still running is predicted: it may be simulated)
    return out, driver
