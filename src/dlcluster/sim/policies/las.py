"""Least attained service: the job that has held the fewest GPU-seconds runs first, preemptively."""

from __future__ import annotations

import math
from collections.abc import Sequence

from dlcluster.errors import ConfigError
from dlcluster.sim.framework import Policy
from dlcluster.sim.jobs import checkpoint_overhead

LARGEST_OVERHEAD = checkpoint_overhead(2**31)  # seconds: the checkpoint of the largest jobs


class Las(Policy):
    """Attained GPU-service ascending over queued and running jobs; re-ranked every ``quantum`` s while jobs wait."""

    name = "las"
    help = ("least attained GPU-service (GPU-seconds held) first, preemptive with checkpoint overhead; "
            "re-ranks every quantum s while jobs wait (las:SECONDS, default 600)")
    preemptive = True
    static = True  # a waiting job's key does not change; running jobs are re-ranked when it matters
    blocking = False
    parameter = "quantum"
    parameter_help = "seconds between re-rankings while jobs wait"
    # a quantum no longer than the largest checkpoint overhead could preempt a job before it
    # makes progress, forever
    parameter_min = LARGEST_OVERHEAD + 1
    # without a quantum, a running job's priority worsens continuously and LAS degenerates into
    # processor sharing with a checkpoint at every second
    quantum: int = 600

    @classmethod
    def check_speed(cls, slowest: float) -> None:
        """A quantum must buy more work than a preemption costs, at the slowest rate too: two slowed jobs that
        preempt each other every quantum would otherwise each lose more to checkpoints than they gain, forever."""
        if cls.quantum * slowest <= LARGEST_OVERHEAD:
            least = math.floor(LARGEST_OVERHEAD / slowest) + 1
            raise ConfigError(f"policy {cls.name!r} with this speed model: a job may run at {slowest:.3g} of full "
                              f"speed, so a {cls.quantum} s quantum may do no more work than the {LARGEST_OVERHEAD} s "
                              f"a preemption costs, and jobs could preempt each other forever; use a quantum of at "
                              f"least {least} s (las:{least})")

    def priority(self, job: int, now: int) -> int:
        """GPU-seconds held so far."""
        jobs = self.jobs
        started = jobs.started_at[job]
        # Jobs.attained_at inline: once per preemption
        return jobs.gpu[job] * (jobs.held[job] + (now - started if started >= 0 else 0))

    def linear_key(self, job: int) -> tuple[int, int]:
        """While it runs a job gains its GPU count in attained service every second."""
        jobs = self.jobs
        g = jobs.gpu[job]
        return g, g * (jobs.held[job] - jobs.started_at[job])

    def next_review(self, queue: Sequence[int], now: int, arrived: int) -> int | None:
        """The next multiple of the quantum while any job waits (a fixed grid: at most one review per quantum)."""
        return (now // self.quantum + 1) * self.quantum if queue else None
