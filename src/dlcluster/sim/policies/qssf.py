"""Quasi-shortest-service-first (Helios): predicted GPU time = estimated duration × GPUs."""

from __future__ import annotations

from dlcluster.sim.framework import Jobs, Policy


class Qssf(Policy):
    """Estimated GPU time ascending; head-of-line blocking.

    In compatibility mode it follows the artifact's "quasi" rule: the queue is sorted by
    GPU count, and re-sorted by estimated GPU time only when it holds jobs that were
    already waiting before this second. (The artifact also re-sorts at the next second, but
    a smallest-GPU-first head that does not fit means no GPU is free for any job, so that
    pass cannot start anything; the next event re-sorts by estimate anyway.)
    """

    name = "qssf"
    help = "smallest estimated GPU time (estimate × GPUs) first; needs duration estimates"
    needs_estimates = True

    def __init__(self, jobs: Jobs, *, compat: bool = False) -> None:
        super().__init__(jobs, compat=compat)
        assert jobs.estimate is not None
        # keys never change: a list lookup keeps the per-event sort in C
        self._key = [e * g for e, g in zip(jobs.estimate, jobs.gpu, strict=True)]

    def priority(self, job: int, now: int) -> float:
        """Estimated duration × GPUs."""
        return self._key[job]

    def order(self, queue: list[int], now: int, arrived: int) -> None:
        """Stable sort by estimated GPU time (compat: GPU count first, estimates only with older jobs waiting)."""
        if not self.compat:
            if arrived:  # a pass keeps the queue's order, so only arrivals can unsort it
                queue.sort(key=self._key.__getitem__)
            return
        queue.sort(key=self.jobs.gpu.__getitem__)
        if len(queue) > arrived:
            queue.sort(key=self._key.__getitem__)
