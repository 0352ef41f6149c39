"""Tiresias (NSDI'19): discretised two-queue LAS on attained GPU-service, FIFO within a queue, preemptive."""

from __future__ import annotations

from collections.abc import Sequence

from dlcluster.sim.framework import Policy


class Tiresias(Policy):
    """Queue 0 below ``threshold`` GPU-seconds of attained service, queue 1 above; queue 0 first, FIFO within."""

    name = "tiresias"
    help = ("two-queue discretised LAS (Tiresias): jobs below the threshold of attained GPU-seconds first, "
            "FIFO within a queue, preemptive (tiresias:GPU_SECONDS, default 3600)")
    preemptive = True
    static = True  # a waiting job's key does not change; running jobs are re-ranked when it matters
    blocking = False
    parameter = "threshold"
    parameter_help = "attained GPU-seconds at which a job is demoted to the second queue"
    threshold: int = 3600  # one GPU-hour

    def priority(self, job: int, now: int) -> tuple[int, int]:
        """(queue, submit time)."""
        jobs = self.jobs
        started = jobs.started_at[job]
        # Jobs.attained_at inline: every running job is ranked in a pass that needs a victim
        attained = jobs.gpu[job] * (jobs.held[job] + (now - started if started >= 0 else 0))
        return (attained >= self.threshold, jobs.submit[job])

    def next_review(self, queue: Sequence[int], now: int, arrived: int) -> int | None:
        """While jobs wait: the first second a running queue-0 job reaches the threshold (its demotion)."""
        if not queue:
            return None
        jobs, wake, threshold = self.jobs, None, self.threshold
        gpu, held, started = jobs.gpu, jobs.held, jobs.started_at
        for j in self.running:  # (Jobs.attained_at inline, of running jobs: this runs at every pass while jobs wait)
            left = threshold - gpu[j] * (held[j] + now - started[j])
            if left > 0:
                at = now - (-left // gpu[j])  # first whole second at which it is demoted
                wake = at if wake is None or at < wake else wake
        return wake
