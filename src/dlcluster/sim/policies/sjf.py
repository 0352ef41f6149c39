"""Shortest job first on the true duration (an oracle)."""

from __future__ import annotations

from dlcluster.sim.framework import Policy


class Sjf(Policy):
    """True duration ascending; head-of-line blocking like FIFO."""

    name = "sjf"
    help = "shortest job first on the true duration (oracle); non-preemptive, head-of-line blocking"
    static = True

    def priority(self, job: int, now: int) -> int:
        """The job's recorded duration."""
        return self.jobs.duration[job]
