"""Shortest remaining time first on the true duration (an oracle), preemptive."""

from __future__ import annotations

from dlcluster.sim.framework import Policy


class Srtf(Policy):
    """Remaining time ascending over queued and running jobs; losers are preempted (checkpoint overhead)."""

    name = "srtf"
    help = "shortest remaining time first (oracle), preemptive with checkpoint overhead; skips jobs that do not fit"
    preemptive = True
    static = True  # a waiting job's key does not change; running jobs are re-ranked when it matters
    blocking = False

    def priority(self, job: int, now: int) -> float:
        """Work left at ``now``."""
        return self.jobs.remaining_at(job, now)
