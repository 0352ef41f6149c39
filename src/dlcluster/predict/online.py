"""An estimator inside the simulator: each job is predicted at its *simulated* submission.

:class:`OnlineEstimates` is a simulator observer. It learns from the jobs that have ended in
the simulation by then (their simulated ends, not the trace's) and retrains on the simulated
clock, so a prediction never uses what the simulated cluster could not have known — under
``--load``, or under a policy that changes when jobs end.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import polars as pl

from dlcluster.predict.estimator import SUBMIT_SCHEMA, UNFINISHED, Driver, Estimator, status_column, submit_table
from dlcluster.predict.metrics import prediction_metrics
from dlcluster.sim.observers import Control, Observer


class OnlineEstimates(Observer):
    """Predict every job at its simulated submission with ``estimator``; feed it each simulated end."""

    def __init__(self, estimator: Estimator, trace: pl.DataFrame) -> None:
        self.estimator = estimator
        self.trace = trace  # the canonical job table the simulated jobs come from (fields known at submission)
        self.driver = Driver(estimator)

    def attach(self, control: Control) -> None:
        """Line the trace's submission-time fields up with the simulator's job numbers."""
        self.control = control
        jobs = control.jobs
        # epoch seconds: lgbm's hour and weekday and its daily retrains are UTC (a compatibility mode's clock counts
        # from its first job on the trace's wall clock: they are that wall clock's)
        self.origin = control.origin
        ids = pl.DataFrame({"job_id": jobs.job_id, "submit": jobs.submit}, schema={"job_id": pl.String,
                                                                                  "submit": pl.Int64})
        ids = ids.with_columns(pl.col("submit") + self.origin)
        # the simulated submit (the simulator's clock) replaces the trace's
        fields = submit_table(self.trace).drop("submit").with_columns(status_column(self.trace))
        table = ids.join(fields, on="job_id", how="left", maintain_order="left")
        self.status: list[str | None] = table["status"].to_list()
        self.duration = jobs.duration
        self.estimator.attach(table.select(*SUBMIT_SCHEMA))
        if self.estimator.needs_truth:
            self.estimator.attach_truth(np.asarray(jobs.duration, dtype=np.float64))
        self.predicted = [math.nan] * len(jobs)

    def on_submit(self, job: int, now: int) -> None:
        """Predict ``job`` from what has ended so far and hand the estimate to the scheduler."""
        value = self.driver.predict(job, now + self.origin)
        self.predicted[job] = value
        self.control.set_estimate(job, value)

    def on_finish(self, job: int, now: int, outcome: str) -> None:
        """Tell the estimator how long ``job`` ran (its work in the trace) now that it has ended; not a job that was
        still running or pending in the trace, whose time so far is not what it would run (as in ``predict``)."""
        if self.status[job] not in UNFINISHED:
            self.driver.ended(job, now + self.origin, float(self.duration[job]), self.status[job])

    def summary(self) -> dict[str, Any]:
        """Which estimator ran, its retrains and CPU seconds, and how good its predictions were (jobs still running
        or pending in the trace not scored)."""
        jobs = self.control.jobs
        truth = np.asarray(jobs.duration, dtype=np.float64)
        truth[np.isin(np.asarray(self.status, dtype=object), UNFINISHED)] = np.nan
        return {**self.driver.stats(), **prediction_metrics(np.asarray(self.predicted), truth, np.asarray(jobs.gpu))}
