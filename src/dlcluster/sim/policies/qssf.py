"""Quasi-shortest-service-first (Helios): predicted GPU time = estimated duration × GPUs."""

from __future__ import annotations

from dlcluster.sim.framework import Policy


class Qssf(Policy):
    """Estimated GPU time ascending; head-of-line blocking.

    The estimate is read when the job joins the queue, so an estimator observer may set it
    at the job's submission. (The artifact's "quasi" order lives in its compatibility
    profile, :mod:`dlcluster.sim.compat`.)
    """

    name = "qssf"
    help = "smallest estimated GPU time (estimate × GPUs) first; needs duration estimates"
    needs_estimates = True
    static = True

    def priority(self, job: int, now: int) -> float:
        """Estimated duration × GPUs."""
        estimate = self.jobs.estimate
        assert estimate is not None
        return estimate[job] * self.jobs.gpu[job]
