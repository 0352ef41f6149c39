"""The discrete-event core: integer clock, end-time heap, arrival cursor; knows no policy.

The engine jumps from one event second to the next (an arrival, a job end or a wake-up
requested by the scheduler) and calls ``step(now, ended, arrived)`` once per event
second. Within a second the scheduler sees every job that ended and every job that
arrived at that second, so "ends before arrivals before scheduling" is the caller's
order of work, not a race.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Sequence

Step = Callable[[int, list[int], list[int]], None]


class Engine:
    """Event heap and clock for one independent simulation (one VC or the pooled cluster)."""

    __slots__ = ("_ends", "_live", "_wakes")

    def __init__(self) -> None:
        self._ends: list[tuple[int, int]] = []
        self._live: dict[int, int] = {}  # job -> its current end time (heap entries that disagree are stale)
        self._wakes: list[int] = []

    def finish_at(self, job: int, time: int) -> None:
        """Schedule ``job`` to end at ``time``."""
        self._live[job] = time
        heapq.heappush(self._ends, (time, job))

    def cancel(self, job: int) -> None:
        """Forget ``job``'s scheduled end (it was preempted)."""
        del self._live[job]

    def wake_at(self, time: int) -> None:
        """Ask for a scheduling pass at ``time`` even if no job arrives or ends then."""
        heapq.heappush(self._wakes, time)

    def run(self, times: Sequence[int], jobs: Sequence[int], step: Step) -> int:
        """Feed arrivals (``times`` non-decreasing, ``jobs`` in arrival order) until nothing is left; return events."""
        ends, live, wakes = self._ends, self._live, self._wakes
        pop, inf = heapq.heappop, float("inf")
        i, n = 0, len(times)
        events = 0
        while True:
            now = times[i] if i < n else inf
            if ends and ends[0][0] < now:
                now = ends[0][0]
            if wakes and wakes[0] < now:
                now = wakes[0]
            if now == inf:
                break
            ended = []
            while ends and ends[0][0] == now:
                _, job = pop(ends)
                if live.get(job) == now:
                    del live[job]
                    ended.append(job)
            arrived = []
            while i < n and times[i] == now:
                arrived.append(jobs[i])
                i += 1
            woken = False
            while wakes and wakes[0] == now:
                pop(wakes)
                woken = True
            if ended or arrived or woken:
                step(now, ended, arrived)
                events += 1
        return events
