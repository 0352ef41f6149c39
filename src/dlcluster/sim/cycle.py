"""The scheduling pass of one simulation group (a VC, or the pooled cluster), and the only code that changes its state.

A pass runs at every second at which the group has an event: jobs that ended have
released their GPUs and jobs that arrived have joined the queue before it. The queue is
kept as the policy needs it: a heap of ``(key, job)`` for static, blocking policies
without backfilling (only the head matters; packed into one int per job while every key is
a whole number, and then the entries that come in ascending order, such as FIFO's arrivals,
kept in a list beside the heap); a heap of ``(key, insertion number, job)`` for static, preemptive ones
(popped in order while a pass walks it, the entries that did not start pushed back; packed
into one int the same way); a sorted container of ``(key, job)`` for other static policies
(walked from the head); a list that ``order`` re-sorts every pass otherwise. Ties keep arrival (or re-queueing) order.
"""

from __future__ import annotations

import math
from bisect import bisect_right, insort
from collections.abc import Callable, Iterator, Sequence
from heapq import heapify, heappop, heappush, heapreplace
from itertools import islice, repeat
from math import ceil
from typing import TYPE_CHECKING, Any, Final, Protocol, cast, overload

from sortedcontainers import SortedList

from dlcluster.sim.cluster import Allocation, VCState
from dlcluster.sim.engine import Engine
from dlcluster.sim.framework import Order, Policy
from dlcluster.sim.jobs import Jobs, Record, checkpoint_overhead
from dlcluster.sim.speed import PlacementSpeed

if TYPE_CHECKING:  # the placement package imports the policies, which import the framework
    from dlcluster.sim.observers import Observer
    from dlcluster.sim.placement import Placement

SEQ_BITS: Final = 40  # bits of a packed preemptive heap entry's insertion number (a run enqueues far fewer than 2**40)
SEQ_MASK: Final = (1 << SEQ_BITS) - 1
NO_JOBS: Final[list[int]] = []  # shared and never appended to: most starts and ends re-rate no other job


class SpeedModel(Protocol):
    """How fast a running job makes progress: 1.0 is full speed (work seconds per second).

    A model whose rate depends on ``neighbours`` only through whether it is 0 may set ``any_neighbour = True``:
    the cycle then does not ask again for jobs that had neighbours before a change and still have them.
    """

    def rate(self, jobs: Jobs, job: int, alloc: Allocation, sizes: tuple[int, ...], neighbours: int) -> float:
        """Rate of ``job`` placed on ``alloc`` (nodes of ``sizes`` GPUs) next to ``neighbours`` other jobs."""
        ...


class _Keys(Sequence[int]):
    """The jobs of a ``(key, ..., job)`` queue in order, as a read-only sequence for policy hooks.

    A heap is sorted only if a hook reads past its length (most hooks only ask whether jobs wait).
    """

    def __init__(self, entries: SortedList | list[Any], heap: bool = False, mask: int = 0) -> None:
        self._raw, self._heap = entries, heap
        self._mask = mask  # entries are packed ints, the job in these low bits (see Cycle._heap_pass); 0: tuples

    @property
    def _entries(self) -> SortedList | list[tuple[Any, ...]]:
        if self._heap:
            self._raw, self._heap = sorted(self._raw), False
        return self._raw

    def __len__(self) -> int:
        return len(self._raw)

    @overload
    def __getitem__(self, i: int) -> int: ...

    @overload
    def __getitem__(self, i: slice) -> Sequence[int]: ...

    def __getitem__(self, i: int | slice) -> int | Sequence[int]:
        if isinstance(i, slice):
            return [self._job(e) for e in self._entries[i]]
        return self._job(self._entries[i])

    def __iter__(self) -> Iterator[int]:
        return (self._job(e) for e in self._entries)

    def _job(self, entry: Any) -> int:
        return cast(int, entry & self._mask if self._mask else entry[-1])


class _Ranking:
    """Running jobs of one pass by priority, ascending (among equal keys the latest start last: preempted first)."""

    def __init__(self, policy: Policy, running: dict[int, Allocation], started: list[int], now: int) -> None:
        movable = [r for r in running if started[r] < now]  # a job that started this second is not preempted in it
        keys = [policy.priority(r, now) for r in movable]
        order = sorted(range(len(movable)), key=keys.__getitem__)
        self.keys = [keys[x] for x in order]
        self.jobs = [movable[x] for x in order]
        self.running = running

    def worst_above(self, key: Any) -> int | None:
        """The worst running job whose key is strictly greater than ``key`` (None: there is none)."""
        keys, jobs, running = self.keys, self.jobs, self.running
        while jobs and jobs[-1] not in running:  # preempted since the ranking was made
            jobs.pop()
            keys.pop()
        return jobs[-1] if jobs and keys[-1] > key else None

    def all_above(self, key: Any) -> list[int]:
        """Every running job whose key is strictly greater than ``key``, worst first."""
        cut = bisect_right(self.keys, key)
        return [r for r in reversed(self.jobs[cut:]) if r in self.running]


class _LinearRanks:
    """The running jobs of a group whose policy gives keys as lines in time (``linear_key``), kept ranked.

    Jobs of one slope keep their order while they run, so one sorted list per slope, kept across passes,
    replaces re-ranking every running job at every pass; a pass merges the few slopes (see
    :class:`_LinearRanking`). Entries are ``(base, seq, job, start)``, ascending, the worst last: ``seq``
    numbers starts in order, for the tie rule of :class:`_Ranking` (among equal keys the latest start is
    the worst). An entry is stale once its job stopped (``start`` no longer matches its start): stale
    entries at the end are dropped when looked at, all of them once they outnumber live ones. A job is
    ranked only in a pass after its start second (no job is preempted in the second it started).
    """

    def __init__(self, policy: Policy, started: list[int], running: dict[int, Allocation]) -> None:
        # (only built for a policy that overrides the hook, whose answer is then a pair)
        self.line = cast(Callable[[int], tuple[int, int]], policy.linear_key)
        self.started, self.running = started, running
        self.lists: dict[int, list[tuple[Any, int, int, int]]] = {}
        self.fresh: list[tuple[int, int]] = []  # (job, start second) not ranked yet, in start order
        self.seq = 0
        self.entries = 0  # in all lists, stale ones included

    def rank_fresh(self, now: int) -> None:
        """Rank the fresh jobs that started before ``now`` and still run (a prefix: ``fresh`` is in start order)."""
        fresh, started, lists, line = self.fresh, self.started, self.lists, self.line
        cut = len(fresh)
        while cut and fresh[cut - 1][1] >= now:
            cut -= 1
        if not cut:
            return
        seq = self.seq
        new: dict[int, list[tuple[Any, int, int, int]]] = {}
        for job, start in fresh[:cut]:
            if started[job] == start:
                slope, base = line(job)
                seq += 1
                entries = new.get(slope)
                if entries is None:
                    entries = new[slope] = []
                entries.append((base, seq, job, start))
        # a few new entries are inserted one by one into their slope's sorted list; many (a pass may start hundreds
        # of jobs) are merged by one sort, which costs about as much as 32 insertions (entries are distinct, so
        # either way gives the same order)
        for slope, entries in new.items():
            ranked = lists.get(slope)
            if ranked is None:
                lists[slope] = sorted(entries)
            elif 32 * len(entries) < len(ranked):
                for entry in entries:
                    insort(ranked, entry)
            else:
                ranked += entries
                ranked.sort()
        self.entries += seq - self.seq
        self.seq = seq
        del fresh[:cut]
        if self.entries > 2 * len(self.running) + 64:
            self.entries = 0
            for slope, ranked in lists.items():
                ranked[:] = [e for e in ranked if started[e[2]] == e[3]]
                self.entries += len(ranked)

    def last(self, ranked: list[tuple[Any, int, int, int]]) -> tuple[Any, int, int, int] | None:
        """The last live entry of a slope's list, dropping stale ones on the way (None: no live entry)."""
        started = self.started
        while ranked:
            top = ranked[-1]
            if started[top[2]] == top[3]:
                return top
            ranked.pop()
            self.entries -= 1
        return None


class _LinearRanking:
    """:class:`_Ranking`'s answers for one pass from :class:`_LinearRanks`.

    ``tops`` merges the slopes: per slope with a live job, ``(-key, -seq, slope)`` of its worst at ``now``,
    so that its first entry is the worst running job. A slope's worst only changes when it stops running
    (preempted in this pass), and is then replaced by the next live one.
    """

    def __init__(self, ranks: _LinearRanks, started: list[int], now: int) -> None:
        self.ranks, self.started, self.now = ranks, started, now
        ranks.rank_fresh(now)
        self.tops: list[tuple[Any, int, int]] = []
        for slope, ranked in ranks.lists.items():
            top = ranks.last(ranked)
            if top is not None:
                self.tops.append((-(top[0] + slope * now), -top[1], slope))
        heapify(self.tops)

    def worst_above(self, key: Any) -> int | None:
        """The worst running job whose key is strictly greater than ``key`` (None: there is none)."""
        tops, lists, started = self.tops, self.ranks.lists, self.started
        while tops:
            neg_key, _, slope = tops[0]
            ranked = lists[slope]
            top = ranked[-1]
            if started[top[2]] == top[3]:
                return top[2] if -neg_key > key else None
            ranked.pop()  # the worst of this slope stopped running (preempted in this pass): the next live one
            self.ranks.entries -= 1
            nxt = self.ranks.last(ranked)
            if nxt is None:
                heappop(tops)
            else:
                heapreplace(tops, (-(nxt[0] + slope * self.now), -nxt[1], slope))
        return None

    def all_above(self, key: Any) -> list[int]:
        """Every running job whose key is strictly greater than ``key``, worst first (key, then start, descending).

        Per slope, the jobs above ``key`` are a tail of its list (base + slope * now > key); only those are sorted.
        """
        now, started = self.now, self.started
        above: list[tuple[Any, int, int]] = []
        for slope, ranked in self.ranks.lists.items():
            shift = slope * now
            cut = bisect_right(ranked, key, key=lambda e: e[0] + shift)  # (the lambda is used at once)
            above.extend((base + shift, seq, job) for base, seq, job, start in ranked[cut:] if started[job] == start)
        above.sort(reverse=True)
        return [job for _, _, job in above]


class Cycle:
    """Queue, running jobs and node state of one group; starts, preempts and finishes its jobs."""

    def __init__(self, index: int, jobs: Jobs, policy: Policy, placement: Placement, state: VCState,
                 engine: Engine, rec: Record, waiting_since: list[int], observers: Sequence[Observer] = (), *,
                 order: Order | None = None, quota_preemption: bool = False, speed: SpeedModel | None = None,
                 estimates_required: bool = False) -> None:
        self.index, self.jobs, self.policy, self.state, self.engine, self.rec = index, jobs, policy, state, engine, rec
        self.segments = rec.segments[index]
        self.place = placement.place
        # whether a job's GPUs alone would be placed now (a job short only of CPUs waits: CPUs never preempt)
        self.gpus_fit: Callable[[VCState, int, int], bool] = getattr(placement, "gpus_fit", None) or (
            lambda state, gpus, waited: placement.place(state, gpus, waited) is not None)
        self.waiting_since = waiting_since  # a job waits from its submit, and again from each preemption
        self.observers = observers
        self.speed = speed
        # the built-in model (or a subclass) by its class: once compiled, a call through it is native, where one
        # through the SpeedModel protocol goes through Python's call machinery
        self.built_in_speed = speed if isinstance(speed, PlacementSpeed) else None
        # a model whose rates see only whether a job has neighbours (see SpeedModel) needs per node only how many
        # jobs it holds and the xor of their numbers (with one job left, the xor is that job); another, the jobs
        self.any_neighbour: bool = getattr(speed, "any_neighbour", False)
        counted = speed is not None and self.any_neighbour
        self.node_count: list[int] = [0] * len(state.sizes) if counted else []
        self.node_xor: list[int] = [0] * len(state.sizes) if counted else []
        self.node_jobs: list[set[int]] = [set() for _ in state.sizes] if speed is not None and not counted else []
        self.running: dict[int, Allocation] = {}  # insertion order = start order
        policy.running = self.running
        self.arrivals: list[int] = []
        self.events = 0
        # the artifact's preemption walks a plain list
        self.static = policy.static and order is None and not (quota_preemption and policy.preemptive)
        self.sorted = SortedList()  # static keys: (key, job)
        # static keys, blocking without backfilling: (key, job), or while every key is an int, key << bits | job
        # (one int: heap operations compare ints, about three times cheaper than pairs); preemptive:
        # (key, insertion number, job)
        self.heap: list[Any] = []
        # the heap pass's packed entries that came in ascending order (FIFO's fresh arrivals, say), from index
        # ``_tail_at`` on: appending and taking from the front is cheaper than a push and a pop of a long heap; the
        # queue's head is the smaller of both heads (empty once every entry in it was taken)
        self._tail: list[int] = []
        self._tail_at = 0
        self._bits = max(1, (len(jobs) - 1).bit_length())
        self._mask = (1 << self._bits) - 1  # 0 once a key was not an int: the heap holds pairs
        self.queue: list[int] = []
        self._victims: list[int] = []  # preempted in the current pass, to rejoin the queue after it
        self._seq = 0
        self.order: Order = order or policy.order
        self._overhead = [checkpoint_overhead(g) for g in range(state.total + 1)]  # by GPU count, for preemptions
        self.estimates_required = estimates_required  # estimates come from observers: check each at arrival
        self.reviews = type(policy).next_review is not Policy.next_review
        # a placement whose choice changes after a job has waited long enough needs a pass at that moment
        # (after a wait of 0 s the answer never changes: no wake-ups, and a blocked head stays blocked until GPUs free)
        self.relax_after: int | None = getattr(placement, "relax_after", None) or None
        self.asks_wakes = self.reviews or self.relax_after is not None  # a pass may ask for a later one (_review)
        if getattr(placement, "isolates", False):
            state.track_multi()
        # whether the placement's success depends only on the free GPUs and the job's size (see Placement)
        self.sized_placement: bool = getattr(placement, "sized", False)
        # ... and here only on the job's size (no CPUs modelled): within one walk of the queue a size that failed
        # fails for every later job (starts only take GPUs), so each size is tried once per walk
        self.size_decides = self.sized_placement and not state.free_cpus
        # whether it puts a job that fits a node on one node with room for it (see the placement package)
        self.one_node_placement: bool = getattr(placement, "one_node", False)
        # the heap's head that a sized placement could not place, and the VC's ``gains`` then: until GPUs are given
        # back it cannot fit (taking GPUs never makes a gang fit), so retrying it after mere arrivals is wasted work
        self.blocked, self.blocked_gains = -1, -1
        # running jobs ranked across passes when their keys are lines in time (else re-ranked in each pass)
        self._ranks = _LinearRanks(policy, jobs.started_at, self.running) \
            if policy.preemptive and type(policy).linear_key is not Policy.linear_key else None
        if policy.preemptive:
            self.run_pass = self._quota_pass if quota_preemption else self._preemptive_pass
        elif self.static:
            backfills = type(policy).reserve is not Policy.reserve
            self.run_pass = self._heap_pass if policy.blocking and not backfills else self._static_pass
        else:
            self.run_pass = self._pass
        # the passes that pack their heap's entries: the heap pass as key << bits | job, the preemptive one as
        # key << _kshift | insertion number << bits | job (the same order as the tuples, ints compare faster)
        self._kshift = self._bits + SEQ_BITS
        if self.run_pass != self._heap_pass and not (self.run_pass == self._preemptive_pass and self.static):
            self._mask = 0

    # ---- state changes -------------------------------------------------------------------------------------------

    def _start(self, j: int, now: int, alloc: Allocation, taken: bool = False) -> None:
        """Start ``j`` on ``alloc`` (``taken``: its GPUs are already taken off the VC's free ones)."""
        jobs, rec = self.jobs, self.rec
        if not taken:
            self.state.allocate(alloc, jobs.gpu[j], jobs.cpu[j])
        self.running[j] = alloc
        if rec.start[j] < 0:
            rec.start[j] = now
        rec.queue[j] += now - self.waiting_since[j]
        rec.nodes[j] = len(alloc)
        jobs.started_at[j] = now
        if self._ranks is not None:
            self._ranks.fresh.append((j, now))
        if self.speed is None:  # full speed always: the end is the work left from now
            self.engine.finish_at(j, now + jobs.remaining[j])
        else:
            jobs.progress_at[j] = now
            if self.any_neighbour:
                count, xor = self.node_count, self.node_xor
                neighbours, were_alone = 0, NO_JOBS
                for node, _ in alloc:
                    count[node] = c = count[node] + 1
                    xor[node] ^= j
                    if c > 1:
                        neighbours = 1
                        if c == 2:  # the job that had this node to itself has a neighbour now
                            if were_alone is NO_JOBS:
                                were_alone = []
                            were_alone.append(xor[node] ^ j)
                # (_rerate inline: a job that starts has no end scheduled and has done no work since progress_at)
                rate = self._rate(j, alloc, neighbours)
                left = jobs.remaining[j]
                if rate == 1 and type(left) is int:  # whole seconds at full speed: the ceiling below is ``left``
                    end = now + left
                elif rate > 0:  # (work left is never negative here, nor then the ceiling)
                    end = now + ceil(left / rate - 1e-9)
                else:
                    raise ValueError(f"speed model gave job {j} a rate of {rate}; rates must be positive")
                jobs.rate[j] = rate
                jobs.end_at[j] = end
                self.engine.finish_at(j, end)
                for k in were_alone:
                    self._recount(k, now)
            else:
                node_jobs = self.node_jobs
                alone = True
                for node, _ in alloc:
                    on = node_jobs[node]
                    on.add(j)
                    alone = alone and len(on) == 1
                if alone:  # nobody else to re-rate
                    self._rerate(j, self._rate(j, alloc, 0), now)
                else:
                    self._respeed(alloc, now)
        if self.observers:
            for o in self.observers:
                o.on_start(j, now)

    def finish(self, j: int, now: int) -> bool:
        """``j``'s run ended at ``now``: give back its resources and record its run segment. False if that was an
        attempt that failed and the job rejoins the queue for its next one (see :mod:`dlcluster.sim.failures`)."""
        jobs, rec = self.jobs, self.rec
        alloc = self.running.pop(j)
        self.state.release(alloc, jobs.gpu[j], jobs.cpu[j])
        rec.end[j] = now
        started = jobs.started_at[j]
        self.segments.close(j, started, now, alloc)
        jobs.started_at[j] = -1
        if self.speed is not None:
            self._leave(j, alloc, now)
        retries = jobs.retries
        if retries is not None and retries[j]:
            retries[j] -= 1
            recorded = jobs.retry_work.get(j)
            jobs.remaining[j] = recorded.pop() if recorded else jobs.duration[j]
            jobs.held[j] += now - started  # service attained, as after a preemption
            rec.attempts[j] += 1
            self.waiting_since[j] = now
            self.arrivals.append(j)
            return False
        jobs.remaining[j] = 0
        return True

    def _preempt(self, j: int, now: int, released: bool = False) -> None:
        jobs = self.jobs
        alloc = self.running.pop(j)
        gpus, started = jobs.gpu[j], jobs.started_at[j]
        if not released:  # (a dry run may have given its resources back already)
            self.state.release(alloc, gpus, jobs.cpu[j])
        self.engine.cancel(j)
        self.segments.close(j, started, now, alloc)
        self.rec.preemptions[j] += 1
        jobs.held[j] += now - started
        # at full speed the work left is counted from the start (see Jobs.remaining_at)
        left = jobs.remaining[j] - (now - started) if self.speed is None else jobs.remaining_at(j, now)
        jobs.remaining[j] = left + self._overhead[gpus]
        jobs.started_at[j] = -1
        self.waiting_since[j] = now
        self._victims.append(j)
        if self.speed is not None:
            self._leave(j, alloc, now)
        for o in self.observers:
            o.on_preempt(j, now)

    def _leave(self, j: int, alloc: Allocation, now: int) -> None:
        jobs = self.jobs
        jobs.rate[j] = 1
        jobs.end_at[j] = -1  # no end scheduled: a restart in this same second must not look as if it ends now
        if self.any_neighbour:
            count, xor = self.node_count, self.node_xor
            left_alone = NO_JOBS
            for node, _ in alloc:
                count[node] = c = count[node] - 1
                xor[node] ^= j
                if c == 1:  # the job left on this node has no neighbour there now
                    if left_alone is NO_JOBS:
                        left_alone = []
                    left_alone.append(xor[node])
            for k in left_alone:
                self._recount(k, now)
            return
        neighbours = False
        for node, _ in alloc:
            on = self.node_jobs[node]
            on.discard(j)
            neighbours = neighbours or bool(on)
        if neighbours:  # jobs left on these nodes may speed up
            self._respeed(alloc, now)

    def _respeed(self, alloc: Allocation, now: int) -> None:
        """Recompute the rate of every running job on ``alloc``'s nodes (a job just started on them, or left them);
        move the ends of those that changed."""
        node_jobs, running = self.node_jobs, self.running
        # (this runs at every start and end: a job on one node, the common case, needs no union of sets)
        affected = sorted(node_jobs[alloc[0][0]]) if len(alloc) == 1 else \
            sorted(set().union(*(node_jobs[n] for n, _ in alloc)))
        for k in affected:
            # it ends this very second, with no work left at any rate: its end is already scheduled or being
            # handled (a second end pushed now would end it twice; end_at is reset when a segment stops, so it is
            # this segment's even for a job that started this second)
            if self.jobs.end_at[k] == now:
                continue
            held = running[k]
            near = len(node_jobs[held[0][0]]) if len(held) == 1 else \
                len(set().union(*(node_jobs[n] for n, _ in held)))
            self._rerate(k, self._rate(k, held, near - 1), now)

    def _recount(self, k: int, now: int) -> None:
        """:meth:`_respeed` of one running job ``k`` when only having neighbours matters (nodes counted)."""
        if self.jobs.end_at[k] == now:  # (as in _respeed)
            return
        held, count = self.running[k], self.node_count
        neighbours = (1 if count[held[0][0]] > 1 else 0) if len(held) == 1 else \
            1 if any(count[n] > 1 for n, _ in held) else 0
        self._rerate(k, self._rate(k, held, neighbours), now)

    def _rate(self, k: int, alloc: Allocation, neighbours: int) -> float:
        """The speed model's rate of ``k`` on ``alloc`` next to ``neighbours`` other jobs."""
        built_in = self.built_in_speed
        if built_in is not None:
            return built_in.rate(self.jobs, k, alloc, self.state.sizes, neighbours)
        assert self.speed is not None
        return self.speed.rate(self.jobs, k, alloc, self.state.sizes, neighbours)

    def _rerate(self, k: int, rate: float, now: int) -> None:
        """Running job ``k`` runs at ``rate`` from ``now``: if that is new (or it has no end yet), its work left is
        counted at the old rate and its end moved (end = now + ⌈work left / rate⌉)."""
        if not rate > 0:
            raise ValueError(f"speed model gave job {k} a rate of {rate}; rates must be positive")
        jobs = self.jobs
        rates = jobs.rate
        if rate != rates[k] or not self.engine.scheduled(k):
            # the work left now (Jobs.remaining_at of a running job, inline)
            jobs.remaining[k] = left = jobs.remaining[k] - (now - jobs.progress_at[k]) * rates[k]
            jobs.progress_at[k] = now
            rates[k] = rate
            jobs.end_at[k] = end = now + max(0, math.ceil(left / rate - 1e-9))
            self.engine.finish_at(k, end)

    def set_node_state(self, node: int, state: str, now: int) -> None:
        """``node`` enters ``state`` at ``now`` (only an idle node may become unusable)."""
        try:
            self.state.set_state(node, state)
        except ValueError as exc:
            raise ValueError(f"group {self.index}: {exc}") from None
        self.rec.node_states.append((now, self.index, node, state))

    # ---- passes --------------------------------------------------------------------------------------------------

    def _take_arrivals(self, now: int) -> list[int]:
        arrived, self.arrivals = self.arrivals, []
        if self.estimates_required:
            self._check_estimates(arrived, now)
        return arrived

    def _check_estimates(self, arrived: list[int], now: int) -> None:
        est = self.jobs.estimate
        assert est is not None
        for j in arrived:
            if math.isnan(est[j]):
                raise ValueError(f"job {j} has no duration estimate at its submission (second {now}); "
                                 "an estimator must set one in on_submit")

    def _start_if_fits(self, j: int, now: int) -> bool:
        """Start ``j`` now if its placement succeeds; whether it did."""
        jobs = self.jobs
        alloc = self.place(self.state, jobs.gpu[j], now - jobs.submit[j], jobs.cpu[j])
        if alloc is None:
            return False
        self._start(j, now, alloc)
        return True

    def _heap_pass(self, now: int) -> None:
        """Static keys, blocking, no backfilling (FIFO, SJF, QSSF): a heap of ``(key, job)``; only its head matters."""
        self.events += 1
        arrived = self.arrivals
        heap = self.heap
        if arrived:
            self.arrivals = []
            if self.estimates_required:
                self._check_estimates(arrived, now)
            # the common case, one arrival to an empty queue, needs no queue at all
            if heap or self._tail or len(arrived) > 1 or not self._start_if_fits(arrived[0], now):
                priority, bits, tail = self.policy.priority, self._bits, self._tail
                for j in arrived:
                    key = priority(j, now)
                    if self._mask and type(key) is not int:
                        self._unpack()
                    if not self._mask:
                        heappush(heap, (key, j))
                        continue
                    entry = key << bits | j
                    if not tail or entry > tail[-1]:
                        tail.append(entry)
                    else:
                        heappush(heap, entry)
        elif not (heap or self._tail) or (self._head() == self.blocked and self.state.gains == self.blocked_gains
                                          and not self.asks_wakes):
            return
        place, state, jobs = self.place, self.state, self.jobs
        gpu, submit, cpu = jobs.gpu, jobs.submit, jobs.cpu
        mask, tail = self._mask, self._tail
        while heap or tail:
            j = self._head()
            if j == self.blocked and state.gains == self.blocked_gains:
                break
            alloc = place(state, gpu[j], now - submit[j], cpu[j]) if gpu[j] <= state.free_total else None
            if alloc is None:
                if self.sized_placement:
                    self.blocked, self.blocked_gains = j, state.gains
                break
            if tail and tail[self._tail_at] & mask == j:  # (a job is queued once: the tail's head was the head)
                self._take_tail()
            else:
                heappop(heap)
            self._start(j, now, alloc)
        if self.asks_wakes:
            self._review(now, arrived)

    def _head(self) -> int:
        """The job at the head of the heap pass's queue."""
        heap, tail = self.heap, self._tail
        if not self._mask:
            return cast(int, heap[0][-1])
        entry = tail[self._tail_at] if tail and (not heap or tail[self._tail_at] < heap[0]) else heap[0]
        return cast(int, entry & self._mask)

    def _take_tail(self) -> None:
        """Take the head of the ascending tail; clear it once empty, drop its taken part once that is most of it."""
        tail = self._tail
        self._tail_at = at = self._tail_at + 1
        if at == len(tail):
            tail.clear()
            self._tail_at = 0
        elif at >= 4096 and 2 * at >= len(tail):
            del tail[:at]
            self._tail_at = 0

    def _queue_heap(self) -> list[Any]:
        """The heap pass's whole queue as one heap (its tail pushed into the heap)."""
        if self._tail:
            for entry in self._tail[self._tail_at:]:
                heappush(self.heap, entry)
            self._tail.clear()
            self._tail_at = 0
        return self.heap

    def _unpack(self) -> None:
        """From now on the queue heap holds tuples (a key that is not an int cannot be packed): ``(key, job)``, or
        ``(key, insertion number, job)`` in the preemptive pass."""
        bits, mask, kshift = self._bits, self._mask, self._kshift
        if self.run_pass == self._heap_pass:
            self._queue_heap()
            self.heap[:] = [(e >> bits, e & mask) for e in self.heap]  # (in place: a pass holds the list)
        else:
            self.heap[:] = [(e >> kshift, e >> bits & SEQ_MASK, e & mask) for e in self.heap]
        heapify(self.heap)
        self._mask = 0

    def _static_pass(self, now: int) -> None:
        """Static keys: the sorted queue only gains arrivals; place from the head (skipping, if non-blocking)."""
        self.events += 1
        arrived = self.arrivals
        q = self.sorted
        if not arrived and not q:
            return
        policy, place, state, jobs = self.policy, self.place, self.state, self.jobs
        gpu, submit, cpu = jobs.gpu, jobs.submit, jobs.cpu
        if arrived:
            self.arrivals = []
            if self.estimates_required:
                self._check_estimates(arrived, now)
            # the common case, one arrival to an empty queue of a blocking policy, needs no queue at all
            if q or len(arrived) > 1 or not policy.blocking or not self._start_if_fits(arrived[0], now):
                q.update([(policy.priority(j, now), j) for j in arrived])
            if not q:
                if self.asks_wakes:
                    self._review(now, arrived)
                return
        if policy.blocking:
            while q:
                j = q[0][-1]
                alloc = place(state, gpu[j], now - submit[j], cpu[j])
                if alloc is None:
                    break
                q.pop(0)
                self._start(j, now, alloc)
            if len(q) > 1 and state.free_total:
                self._backfill(now)
        else:
            started = []
            for entry in q:
                if not state.free_total:
                    break
                j = entry[-1]
                alloc = place(state, gpu[j], now - submit[j], cpu[j])
                if alloc is not None:
                    self._start(j, now, alloc)
                    started.append(entry)
            for entry in started:
                q.remove(entry)
        self._review(now, arrived)

    def _backfill(self, now: int) -> None:
        """EASY: start jobs behind the blocked head that fit now and do not delay its reservation."""
        q, state = self.sorted, self.state
        reservation = self.policy.reserve(q[0][-1], now, state.free_total)
        if reservation is None:
            return
        shadow, spare = reservation
        jobs, place = self.jobs, self.place
        gpu, submit, cpu, expected = jobs.gpu, jobs.submit, jobs.cpu, jobs.expected
        started = []
        sized = self.size_decides  # (a long queue is walked without placing each job)
        unfit: set[int] = set()
        for entry in islice(q, 1, None):
            j = entry[-1]
            g = gpu[j]
            if sized and (g in unfit or g > state.free_total):
                continue
            short = now + expected(j) <= shadow
            tried = short or g <= spare
            alloc = place(state, g, now - submit[j], cpu[j]) if tried else None
            if alloc is None:
                if sized and tried:
                    unfit.add(g)
                continue
            if not short:
                spare -= g
            self._start(j, now, alloc)
            started.append(entry)
            if state.free_total == 0:
                break
        for entry in started:
            q.remove(entry)

    def _pass(self, now: int) -> None:
        """Dynamic keys: re-order the whole queue, then place in order."""
        self.events += 1
        arrived, queue = self.arrivals, self.queue
        if arrived:  # (_take_arrivals inline: this runs at every event)
            self.arrivals = []
            if self.estimates_required:
                self._check_estimates(arrived, now)
        elif not queue:
            return
        if not queue and len(arrived) == 1:  # the common case: one job needs no ordering
            if not self._start_if_fits(arrived[0], now):
                queue.append(arrived[0])
            if self.asks_wakes:
                self._review(now, arrived)
            return
        queue.extend(arrived)
        policy, place, state, jobs = self.policy, self.place, self.state, self.jobs
        gpu, submit, cpu = jobs.gpu, jobs.submit, jobs.cpu
        self.order(queue, now, len(arrived))
        kept: list[int] = []
        blocked = False
        for idx, j in enumerate(queue):
            alloc = place(state, gpu[j], now - submit[j], cpu[j])
            if alloc is not None:
                self._start(j, now, alloc)
            elif policy.blocking:
                del queue[:idx]  # every job before the head started; the tail stays in place
                if len(queue) > 1 and state.free_total:
                    self._backfill_list(now)
                blocked = True
                break
            else:
                kept.append(j)
        if not blocked:
            self.queue = kept
        if self.asks_wakes:
            self._review(now, arrived)

    def _backfill_list(self, now: int) -> None:
        """EASY on a re-ordered list queue: the same rule as :meth:`_backfill`."""
        entries = SortedList(enumerate(self.queue))
        self.sorted, saved = entries, self.sorted
        self._backfill(now)
        self.sorted = saved
        self.queue = [e[-1] for e in entries]

    def _preemptive_pass(self, now: int) -> None:
        """Place queued jobs in priority order; preempt strictly worse running jobs only where that lets one start."""
        self.events += 1
        arrived = self._take_arrivals(now)
        if self.static:
            q = self.heap
            self._enqueue(arrived, now)
            if q:
                self._walk_heap(now, preempt=True)
                if self._victims:
                    # the victims rejoin the queue; jobs that now fit the GPUs left over start too
                    self._enqueue(self._victims, now)
                    self._victims = []
                    self._walk_heap(now, preempt=False)
        else:
            queue = self.queue + arrived
            if queue:
                self.order(queue, now, len(arrived))
                self.queue = self._walk_list(queue, now, preempt=True)
                if self._victims:
                    self.queue += self._victims
                    self._victims = []
                    self.order(self.queue, now, 0)
                    self.queue = self._walk_list(self.queue, now, preempt=False)
        self._review(now, arrived)

    def _enqueue(self, waiting: list[int], now: int) -> None:
        """Add the ``waiting`` jobs to the queue heap with their keys now (constant while they wait); ties keep
        insertion order. (All at once: every victim of a preemptive pass rejoins here.)"""
        priority, heap, seq, kshift, bits = self.policy.priority, self.heap, self._seq, self._kshift, self._bits
        for j in waiting:
            seq += 1
            key = priority(j, now)
            if self._mask and type(key) is int:
                heappush(heap, key << kshift | seq << bits | j)
                continue
            if self._mask:
                self._unpack()  # (in place: ``heap`` is still the queue)
            heappush(heap, (key, seq, j))
        self._seq = seq

    def _walk_heap(self, now: int, *, preempt: bool) -> None:
        """Walk the queue heap in order, popping lazily; the entries looked at that did not start go back."""
        heap = self.heap
        passed: list[Any] = []
        # the heap does not grow during a walk (victims rejoin after it)
        self._place_preempting(map(heappop, repeat(heap, len(heap))), now, preempt, passed)
        for entry in passed:
            heappush(heap, entry)

    def _walk_list(self, queue: list[int], now: int, *, preempt: bool) -> list[int]:
        """Walk ``queue`` (in order); return the jobs still waiting, in order."""
        started = {e[-1] for e in self._place_preempting(((j,) for j in queue), now, preempt)}
        return [j for j in queue if j not in started] if started else queue

    def _place_preempting(self, entries: Iterator[Any], now: int, preempt: bool,
                          passed: list[Any] | None = None) -> list[Any]:
        """Start queued jobs (``entry[-1]``, or packed heap entries, in priority order) that fit, preempting where
        allowed; the started entries.

        ``passed``, if given, receives the entries looked at that did not start.
        """
        policy, place, state, jobs, running = self.policy, self.place, self.state, self.jobs, self.running
        gpu, submit, cpu = jobs.gpu, jobs.submit, jobs.cpu
        ranking: _Ranking | _LinearRanking | None = None
        static = self.static
        mask, kshift = (self._mask, self._kshift) if static else (0, 0)  # packed heap entries (see _enqueue)
        started: list[Any] = []
        # in priority order, once no running job is worse than a queued one, none is worse than those after it
        monotone = self.static or type(policy).order is Policy.order
        can_preempt = preempt and bool(running)
        custom_victims = type(policy).victims is not Policy.victims
        # a size that failed in this pass fails for every later job (unfit: as things stand; hopeless: even with
        # every worse job gone)
        sized = self.size_decides
        one_node = sized and self.one_node_placement
        unfit: set[int] = set()
        hopeless: set[int] = set()
        skip_hopeless, blocking = monotone and sized, policy.blocking
        # at full speed and unobserved, jobs start, and victims that hand their node over are preempted, inline
        # below (what _start and _preempt do in that case: under heavy preemption, such as LAS's, this is the hot path)
        inline = self.speed is None and not self.observers
        rec, engine, fresh = self.rec, self.engine, self._ranks.fresh if self._ranks is not None else None
        first_start, queued_for, nodes_held, preemptions = rec.start, rec.queue, rec.nodes, rec.preemptions
        cancel, finish_at, waiting_since = engine.cancel, engine.finish_at, self.waiting_since
        # a victim's run segment on its one node, recorded as Segments.close does (inline: once per preemption)
        seg = self.segments
        seg_job, seg_start, seg_end, seg_node = seg.job.append, seg.start.append, seg.end.append, seg.node.append
        held_for, remaining, started_at, overhead, victims = jobs.held, jobs.remaining, jobs.started_at, \
            self._overhead, self._victims
        for entry in entries:
            j = entry & mask if mask else entry[-1]
            need = gpu[j]
            alloc = None
            taken = False  # its GPUs already taken (handed over by a victim)
            if state.free_total >= need and need not in unfit:
                alloc = place(state, need, now - submit[j], cpu[j])
                if alloc is None and sized:
                    unfit.add(need)
            if alloc is None and can_preempt and not (skip_hopeless and need in hopeless) \
                    and not (cpu[j] and self.gpus_fit(state, need, now - submit[j])):
                if ranking is None:
                    ranking = _Ranking(policy, running, jobs.started_at, now) if self._ranks is None \
                        else _LinearRanking(self._ranks, jobs.started_at, now)
                # a static key is the one queued
                key = (entry >> kshift if mask else entry[0]) if static else policy.priority(j, now)
                worst = ranking.worst_above(key)
                can_preempt = worst is not None or not monotone
                if worst is not None:
                    if not custom_victims:
                        # the common case first, inline (the hot path under heavy preemption): the most expendable
                        # job alone makes room; if so its release stands, else it is taken back
                        held, w_gpus, w_cpus = running[worst], gpu[worst], cpu[worst]
                        if one_node and need <= w_gpus and len(held) == 1:
                            # no node had room for the job, so the node freed is the only one that has: where a
                            # one-node placement puts it, without asking; the GPUs change hands in one update
                            alloc = held if need == w_gpus else [(held[0][0], need)]
                            state.hand_over(held[0][0], w_gpus, need)
                            taken = True
                            if inline:  # (one_node: no CPUs to give back)
                                del running[worst]
                                cancel(worst)
                                since = started_at[worst]
                                seg_job(worst)
                                seg_start(since)
                                seg_end(now)
                                seg_node(held[0][0])
                                preemptions[worst] += 1
                                held_for[worst] += now - since
                                remaining[worst] += overhead[w_gpus] - (now - since)
                                started_at[worst] = -1
                                waiting_since[worst] = now
                                victims.append(worst)
                            else:
                                self._preempt(worst, now, True)
                        else:
                            state.release(held, w_gpus, w_cpus)
                            if state.free_total >= need:
                                alloc = place(state, need, now - submit[j], cpu[j])
                            if alloc is None:
                                state.allocate(held, w_gpus, w_cpus)
                            else:
                                self._preempt(worst, now, True)
                    if alloc is None:
                        alloc = self._preempt_worse(j, ranking, key, now, custom_victims,
                                                    None if custom_victims else worst)
                        if alloc is None:
                            hopeless.add(need)
                    if alloc is not None:
                        unfit.clear()  # GPUs were freed
            if alloc is not None:
                if inline:
                    if not taken:
                        state.allocate(alloc, need, cpu[j])
                    running[j] = alloc
                    if first_start[j] < 0:
                        first_start[j] = now
                    queued_for[j] += now - waiting_since[j]
                    nodes_held[j] = len(alloc)
                    started_at[j] = now
                    if fresh is not None:
                        fresh.append((j, now))
                    finish_at(j, now + remaining[j])
                else:
                    self._start(j, now, alloc, taken)
                started.append(entry)
            else:
                if passed is not None:
                    passed.append(entry)
                if blocking or (not can_preempt and not state.free_total):
                    break  # nothing later can start in this pass
        return started

    def _preempt_worse(self, j: int, ranking: _Ranking | _LinearRanking, key: Any, now: int,
                       custom_victims: bool, tried: int | None) -> Allocation | None:
        """Preempt the fewest running jobs worse than ``key`` that let ``j`` be placed; its allocation (None: none do).

        ``tried``: a running job already found not to make room alone (None: none tried).
        """
        gpu = self.jobs.gpu
        worse = ranking.all_above(key)
        if custom_victims:
            worse = self.policy.victims(j, worse, now)
        if not worse or self.state.free_total + sum(gpu[r] for r in worse) < gpu[j]:
            return None
        found = self._dry_run(j, worse, now, alone_failed=worse[0] == tried)
        if found is None:
            return None
        victims, alloc, released = found
        for v in victims:
            self._preempt(v, now, released)
        return alloc

    def _dry_run(self, job: int, candidates: list[int], now: int, *,
                 alone_failed: bool = False) -> tuple[list[int], Allocation, bool] | None:
        """The fewest of ``candidates`` (a shortest prefix, then reprieved best first) that let ``job`` be placed.

        Tried on the VC state itself (cheaper than copies): each trial releases or takes back only the jobs
        that differ from the previous trial's (the state depends only on which jobs are released, so these are
        the same trials as releasing each set afresh), and the victims found stay released: preempting them for
        real leaves the state exactly as in the last trial. Returns the victims, the job's allocation, and
        whether the victims' resources are already given back (always, now).
        ``alone_failed``: the caller already found that the first candidate alone does not make room.
        """
        jobs, running, place, state = self.jobs, self.running, self.place, self.state
        gpu, cpu = jobs.gpu, jobs.cpu
        need, waited, cpus = gpu[job], now - jobs.submit[job], cpu[job]
        prefix = 0  # how many of the candidates (from the first) are released on the state now

        def release(v: int) -> None:
            state.release(running[v], gpu[v], cpu[v])

        def take_back(v: int) -> None:
            state.allocate(running[v], gpu[v], cpu[v])

        def fits() -> Allocation | None:
            return place(state, need, waited, cpus) if state.free_total >= need else None

        def set_prefix(m: int) -> None:
            """Release exactly the first ``m`` candidates."""
            nonlocal prefix
            m = min(m, len(candidates))
            for v in candidates[prefix:m]:
                release(v)
            for v in candidates[m:prefix]:
                take_back(v)
            prefix = m

        def without_prefix(m: int) -> Allocation | None:
            set_prefix(m)
            return fits()

        if not alone_failed:  # the common case: the most expendable job alone makes room
            alloc = without_prefix(1)
            if alloc is not None:
                return [candidates[0]], alloc, True
        # the shortest prefix that suffices: double the prefix until one does, then bisect
        lo, hi = 2, 2
        while without_prefix(hi) is None:
            if hi >= len(candidates):
                set_prefix(0)
                return None
            lo, hi = hi + 1, min(2 * hi, len(candidates))
        while lo < hi:
            mid = (lo + hi) // 2
            if without_prefix(mid) is None:
                lo = mid + 1
            else:
                hi = mid
        chosen = candidates[:hi]
        alloc = without_prefix(hi)
        assert alloc is not None
        # reprieve: victims on nodes the job does not use keep running (its nodes keep their free GPUs); then the
        # others, best priority first, while the job still fits without them
        used = {n for n, _ in alloc}
        remaining = [v for v in chosen if not used.isdisjoint(n for n, _ in running[v])]
        kept = set(remaining)
        for v in chosen:
            if v not in kept:
                take_back(v)
        for v in reversed(list(remaining)):
            if len(remaining) > 1:  # the job still fits with v taken back: v keeps running
                take_back(v)
                if fits() is not None:
                    remaining = [r for r in remaining if r != v]
                else:
                    release(v)
        final = fits()  # with exactly the remaining victims released
        if final is None:  # a placement whose answer is not monotone in free GPUs: keep the plain prefix
            kept = set(remaining)
            for v in chosen:
                if v not in kept:
                    release(v)
            return chosen, alloc, True
        return remaining, final, True

    def _quota_pass(self, now: int) -> None:
        """The Helios artifact's preemption: admit by priority within the VC's GPU count, ignoring placement."""
        self.events += 1
        arrived = self._take_arrivals(now)
        queue = self.queue
        queue.extend(arrived)
        if queue:
            policy, gpu, running = self.policy, self.jobs.gpu, self.running
            if sum(gpu[j] for j in queue) <= self.state.free_total:
                # every job fits the quota: nobody is preempted, queued jobs are placed in priority order
                queue.sort(key=lambda j: policy.priority(j, now))
                self._place_only_all(queue, now)
            else:
                candidates = queue + list(running)
                candidates.sort(key=lambda j: policy.priority(j, now))
                quota = self.state.total
                admitted: list[int] = []
                victims: list[int] = []
                for j in candidates:
                    if gpu[j] <= quota:
                        quota -= gpu[j]
                        if j not in running:
                            admitted.append(j)
                    elif j in running:
                        victims.append(j)
                for j in victims:
                    self._preempt(j, now)
                self.queue += self._victims
                self._victims = []
                self._place_only_all(admitted, now)
        self._review(now, arrived)

    def _place_only_all(self, admitted: list[int], now: int) -> None:
        """Try every admitted job in order, whatever failed before (the artifact's placement loop)."""
        started = set()
        place, state, jobs = self.place, self.state, self.jobs
        for j in admitted:
            alloc = place(state, jobs.gpu[j], now - jobs.submit[j], jobs.cpu[j])
            if alloc is not None:
                self._start(j, now, alloc)
                started.add(j)
        if started:
            self.queue = [j for j in self.queue if j not in started]

    def _review(self, now: int, arrived: list[int]) -> None:
        if self.reviews:
            queue = (_Keys(self._queue_heap(), heap=True, mask=self._mask) if self.heap or self._tail
                     else _Keys(self.sorted)) \
                if self.static else self.queue
            wake = self.policy.next_review(queue, now, len(arrived))
            if wake is not None and wake > now:
                self.engine.wake_at(wake, self.index)
        if self.relax_after is not None:
            started, submit = self.jobs.started_at, self.jobs.submit
            for j in arrived:
                # (a retried job that has waited that long since its submission is relaxed already: a wake-up in
                # the past would turn the clock back)
                if started[j] < 0 and submit[j] + self.relax_after > now:
                    self.engine.wake_at(submit[j] + self.relax_after, self.index)

    def waiting(self) -> Iterator[int]:
        """The jobs waiting in this group, queue by queue."""
        mask = self._mask
        yield from (e & mask for e in self.heap) if mask else (e[-1] for e in self.heap)
        yield from (e & mask for e in self._tail[self._tail_at:])
        yield from (e[-1] for e in self.sorted)
        yield from self.queue
        yield from self.arrivals

    def queued(self) -> int:
        """Jobs waiting in this group."""
        return (len(self.sorted) + len(self.heap) + len(self._tail) - self._tail_at + len(self.queue)
                + len(self.arrivals))
