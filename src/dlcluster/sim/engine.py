"""The discrete-event core: one integer clock for the whole cluster, typed event queues; knows no policy.

Events are arrivals (a cursor over jobs in arrival order), job ends, wake-ups of one
simulation group (a VC, or the pooled cluster), node-state changes, and periodic ticks.
The clock jumps from one event second to the next and hands everything due at that
second to the handler at once, so the order of work within a second is the handler's
(see :class:`~dlcluster.sim.simulation.Simulation`), never a race between heaps. Heap
entries carry a sequence number, so same-second events keep the order they were
scheduled in and runs repeat exactly.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Protocol

from dlcluster.errors import ConfigError

NodeChange = tuple[int, int, str]  # (group, node, new state)
NONE: Final[list[Any]] = []  # shared empty list for seconds without such events (never appended to)
NEVER: Final = 2**63  # an integer "never": the clock stays an int
# periodic ticks a run may need at least: the span from its first arrival to the earliest its last job can end,
# over the shortest period (ticks go on while any job runs, not only while jobs arrive)
MAX_TICKS: Final = 5_000_000


class Handler(Protocol):
    """What the engine drives: one call per event second."""

    def second(self, now: int, ended: list[int], first: int, last: int, woken: list[int],
               nodes: list[NodeChange], ticks: list[int]) -> None:
        """Handle second ``now``: ``ended`` jobs, the arrivals numbered ``first..last-1``, woken groups, node
        changes, due ticks."""
        ...

    def unfinished(self) -> bool:
        """Whether some admitted job has not ended yet (ticks keep the clock going only then)."""
        ...

    def one_end(self, now: int, job: int) -> None:
        """Shortcut for a second whose only event is the end of ``job`` (used when ``single_events`` is true)."""
        ...

    def one_arrival(self, now: int, arrival: int) -> None:
        """Shortcut for a second whose only event is the ``arrival``-th arrival (when ``single_events`` is true)."""
        ...

    def ticks(self, now: int, due: list[int]) -> None:
        """Shortcut for a second whose only events are the ``due`` ticks."""
        ...

    @property
    def single_events(self) -> bool:
        """Whether a second with a single event may go to :meth:`one_end` / :meth:`one_arrival`."""
        ...


@dataclass(slots=True)
class Engine:
    """Event queues and the run loop."""

    jobs: int = 0  # how many jobs there are (numbered 0 .. jobs - 1)
    # scheduled ends, time << _bits | job (one int: heap operations compare ints, not (time, job) pairs; the same order)
    _ends: list[int] = field(default_factory=list)
    _live: list[int] = field(init=False)  # per job its scheduled end, or -1 (heap entries that disagree are stale)
    _bits: int = field(init=False)  # bits of a job number in an entry of _ends
    _mask: int = field(init=False)
    _cancelled: int = 0  # ends cancelled or moved since the heap was last cleared of stale entries
    _wakes: list[tuple[int, int]] = field(default_factory=list)
    _wake_set: set[tuple[int, int]] = field(default_factory=set)  # merges duplicate wake-ups
    _nodes: list[tuple[int, int, int, int, str]] = field(default_factory=list)  # (time, seq, group, node, state)
    _ticks: list[tuple[int, int]] = field(default_factory=list)  # (time, subscriber)
    _periods: list[int] = field(default_factory=list)
    _seq: int = 0
    _soon: int = NEVER  # the soonest wake-up, node change or tick (NEVER: none)
    stall_limit: int = 10_000  # consecutive ticks with nothing else to do before the run gives up

    def __post_init__(self) -> None:
        self._live = [-1] * self.jobs
        self._bits = max(1, (self.jobs - 1).bit_length())
        self._mask = (1 << self._bits) - 1

    def finish_at(self, job: int, time: int) -> None:
        """Schedule ``job`` to end at ``time`` (replacing any end scheduled before)."""
        live = self._live
        if live[job] >= 0:  # a speed change moved its end: the entry of the old one is stale now (as in cancel)
            self._cancelled += 1
            if 3 * self._cancelled > 2 * len(self._ends):
                self._drop_stale()
        live[job] = time
        heapq.heappush(self._ends, time << self._bits | job)

    def cancel(self, job: int) -> None:
        """Forget ``job``'s scheduled end (it was preempted): one more stale entry in the heap, which is cleared of
        them once they make up two thirds of it (this runs once per preemption: no further call)."""
        self._live[job] = -1
        self._cancelled += 1
        if 3 * self._cancelled > 2 * len(self._ends):
            self._drop_stale()

    def _drop_stale(self) -> None:
        """Rebuild the ends heap from its live entries: under heavy preemption stale ends (far in the future, popped
        only when the clock reaches them) would otherwise pile up and make every push and pop slower; so would the
        old entries of ends a speed change moved.

        Pops come in (time, job) order whatever the heap's shape, so the run is unchanged. Called after at least
        two thirds of the heap's size in cancelled or moved ends, so its cost is constant per cancellation.
        """
        live, bits, mask = self._live, self._bits, self._mask
        self._ends[:] = [e for e in self._ends if live[e & mask] == e >> bits]
        heapq.heapify(self._ends)
        self._cancelled = 0

    def scheduled(self, job: int) -> bool:
        """Whether ``job`` has an end scheduled."""
        return self._live[job] >= 0

    def wake_at(self, time: int, group: int) -> None:
        """Ask for a scheduling pass of ``group`` at ``time`` (not before the second being handled) even if nothing
        arrives or ends there."""
        key = (time, group)
        if key not in self._wake_set:
            self._wake_set.add(key)
            heapq.heappush(self._wakes, key)
            if time < self._soon:
                self._soon = time

    def node_at(self, time: int, group: int, node: int, state: str) -> None:
        """Schedule ``node`` of ``group`` to enter ``state`` at ``time``."""
        self._seq += 1
        heapq.heappush(self._nodes, (time, self._seq, group, node, state))
        if time < self._soon:
            self._soon = time

    def every(self, period: int, start: int) -> int:
        """Subscribe to ticks every ``period`` seconds from ``start``; returns the subscriber number."""
        self._periods.append(period)
        heapq.heappush(self._ticks, (start, len(self._periods) - 1))
        self._soon = min(self._soon, start)
        return len(self._periods) - 1

    def _wakes_due(self, now: int) -> list[int]:
        """Pop the wake-ups due at ``now``: the groups to pass."""
        wakes, pop = self._wakes, heapq.heappop
        woken = []
        while wakes and wakes[0][0] == now:
            key = pop(wakes)
            self._wake_set.discard(key)
            woken.append(key[1])
        return woken

    def run(self, times: Sequence[int], handler: Handler, until: int | None = None) -> None:
        """Feed arrivals (``times`` non-decreasing: the ``i``-th arrives at ``times[i]``) until nothing is left.
        ``until``: a second no run can end before (its jobs' earliest ends), which bounds the ticks too.

        Most seconds have only arrivals and ends, even in a run with a controller that ticks every few minutes:
        until the soonest wake-up, node change or tick (``_soon``, kept by the methods that schedule them), the
        loop takes a lean path for them, with a shortcut for a second of one event when the handler allows it.
        """
        if self._ticks and len(times):
            span = max(int(times[-1]), until if until is not None else -NEVER) - int(times[0])
            if span // min(self._periods) > MAX_TICKS:
                raise ConfigError(f"a periodic controller (such as --power ces) would step more than {MAX_TICKS:,} "
                                  f"times over the {span:,} s from the first arrival to the earliest the last job "
                                  "can end; shorten the trace or its longest jobs, or raise --load")
        ends, live, wakes, nodes, ticks = self._ends, self._live, self._wakes, self._nodes, self._ticks
        # (a list is indexed natively once compiled, a Sequence is not; the simulation passes a list)
        arrive: list[int] = times if isinstance(times, list) else list(times)
        pop, inf, bits, mask = heapq.heappop, NEVER, self._bits, self._mask
        single = handler.single_events
        second, one_end, one_arrival, ticks_only = handler.second, handler.one_end, handler.one_arrival, handler.ticks
        i, n = 0, len(times)
        stalled = 0
        last = -NEVER  # the second handled last
        self._soon = self._soonest()
        while True:
            now = arrive[i] if i < n else inf
            if ends and ends[0] >> bits < now:
                now = ends[0] >> bits
            lean = now < self._soon  # only ends and arrivals are due
            if lean:
                stalled = 0
            else:
                if wakes and wakes[0][0] < now:
                    now = wakes[0][0]
                if nodes and nodes[0][0] < now:
                    now = nodes[0][0]
                if now < last:  # (a wake-up or node change asked for a second already past)
                    raise ValueError(f"an event at second {now} was scheduled after second {last}: the clock "
                                     "cannot go back")
                if now == inf:
                    if not ticks or not handler.unfinished() or stalled >= self.stall_limit:
                        break
                    stalled += 1
                    now = ticks[0][0]
                elif ticks and ticks[0][0] < now:
                    now = ticks[0][0]
                else:
                    stalled = 0
            # the ends due now whose end is still live, in pop order (most seconds end no job: those share the
            # empty NONE)
            ended = NONE
            if ends and ends[0] >> bits == now:
                ended = []
                while ends and ends[0] >> bits == now:
                    job = pop(ends) & mask
                    if live[job] == now:
                        live[job] = -1
                        ended.append(job)
            first = i
            while i < n and arrive[i] == now:
                i += 1
            last = now
            if lean:
                if single and first == i:
                    if len(ended) == 1:
                        one_end(now, ended[0])
                    elif ended:
                        second(now, ended, first, i, NONE, NONE, NONE)
                elif single and not ended and i == first + 1:
                    one_arrival(now, first)
                elif ended or first < i:
                    second(now, ended, first, i, NONE, NONE, NONE)
                continue
            woken = self._wakes_due(now) if wakes and wakes[0][0] == now else NONE
            changed: list[NodeChange] = NONE
            if nodes and nodes[0][0] == now:
                changed = []
                while nodes and nodes[0][0] == now:
                    _, _, group, node, state = pop(nodes)
                    changed.append((group, node, state))
            due: list[int] = NONE
            if ticks and ticks[0][0] == now:
                due = []
                while ticks and ticks[0][0] == now:
                    _, sub = pop(ticks)
                    due.append(sub)
                    heapq.heappush(ticks, (now + self._periods[sub], sub))
            if ended or first < i or woken or changed:
                second(now, ended, first, i, woken, changed, due)
            elif due:
                ticks_only(now, due)
            self._soon = self._soonest()

    def _soonest(self) -> int:
        """The second of the soonest wake-up, node change or tick (NEVER: none is scheduled)."""
        return min(self._wakes[0][0] if self._wakes else NEVER, self._nodes[0][0] if self._nodes else NEVER,
                   self._ticks[0][0] if self._ticks else NEVER)
