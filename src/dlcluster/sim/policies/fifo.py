"""First in, first out, with head-of-line blocking."""

from __future__ import annotations

from dlcluster.sim.framework import Policy


class Fifo(Policy):
    """Submit order; the pass stops at the first job that does not fit."""

    name = "fifo"
    help = "first come, first served; head-of-line blocking (no backfill)"
    static = True

    def priority(self, job: int, now: int) -> int:
        """Submit time (ties keep arrival order)."""
        return self.jobs.submit[job]
