"""The policy protocol and the scheduling cycle run at every event second of one VC.

A policy is a small class (see :class:`Policy`): a sort key ``priority(job, now)``
(smaller runs sooner; ties keep arrival order because every sort is stable), and two
flags. ``blocking`` policies stop a pass at the first queued job that does not fit
(head-of-line blocking); non-blocking ones skip it. ``preemptive`` policies rank queued
*and* running jobs together each pass; jobs are admitted in that order while their GPU
count fits the VC's GPU quota, running jobs left out are preempted (checkpoint overhead
added to their remaining time). Three optional hooks cover the rest: ``order`` (re-order the
queue in place, for rules that depend on more than one job), ``next_review`` (an extra
wake-up second) and ``reserve`` (EASY backfilling: a reservation for a blocked head job).
Policies read job data through :class:`Jobs` and ``self.running`` and never change state.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from dlcluster.sim.cluster import Allocation, VCState
from dlcluster.sim.engine import Engine

if TYPE_CHECKING:  # the placement package imports the policies, which import this module
    from dlcluster.sim.placement import Placement


def checkpoint_overhead(gpus: int) -> int:
    """Seconds a preempted job loses to checkpoint/restore: 7 s (1 GPU), 30 s (2–8), 60 s (more)."""
    return 7 if gpus <= 1 else 30 if gpus <= 8 else 60


@dataclass(slots=True)
class Jobs:
    """Per-job inputs and run state of one simulation, as plain lists indexed by job number."""

    gpu: list[int]
    submit: list[int]
    duration: list[int]  # run time the job needs (compat SRTF: recorded duration + 1)
    estimate: list[float] | None = None  # predicted duration (s), for estimate-driven policies
    cpu: list[int] = field(default_factory=list)  # CPUs asked when the VC models CPUs (0: none; empty: all 0)
    remaining: list[int] = field(init=False)  # work left, as of the last (re)start or preemption
    started_at: list[int] = field(init=False)  # start of the current run segment (-1 when not running)
    end_at: list[int] = field(init=False)  # end of the current run segment
    held: list[int] = field(init=False)  # seconds on GPUs in finished run segments (checkpoints included)

    def __post_init__(self) -> None:
        if not self.cpu:
            self.cpu = [0] * len(self.gpu)
        self.remaining = list(self.duration)
        self.started_at = [-1] * len(self.gpu)
        self.end_at = [-1] * len(self.gpu)
        self.held = [0] * len(self.gpu)

    def remaining_at(self, job: int, now: int) -> int:
        """Work left for ``job`` at ``now``."""
        return self.end_at[job] - now if self.started_at[job] >= 0 else self.remaining[job]

    def attained_at(self, job: int, now: int) -> int:
        """GPU-seconds ``job`` has held up to ``now`` (its attained service, for LAS and Tiresias)."""
        started = self.started_at[job]
        return self.gpu[job] * (self.held[job] + (now - started if started >= 0 else 0))

    def expected(self, job: int) -> float:
        """The job's predicted duration when estimates are loaded, else its true duration (oracle)."""
        return self.estimate[job] if self.estimate is not None else self.duration[job]


class Policy:
    """Base class of ordering policies: override ``priority`` (and the flags); hooks are optional."""

    name: ClassVar[str] = ""
    help: ClassVar[str] = ""
    preemptive: ClassVar[bool] = False
    blocking: ClassVar[bool] = True
    needs_estimates: ClassVar[bool] = False
    uses_estimates: ClassVar[bool] = False  # read estimates when given, the oracle duration otherwise
    # name of a numeric class attribute set by "name:VALUE" (e.g. "tiresias:7200"), and its meaning
    parameter: ClassVar[str | None] = None
    parameter_help: ClassVar[str] = ""
    parameter_min: ClassVar[int] = 1

    def __init__(self, jobs: Jobs, *, compat: bool = False) -> None:
        self.jobs = jobs
        self.compat = compat
        self.running: Mapping[int, Allocation] = {}  # the cycle's running jobs (read-only view)

    def priority(self, job: int, now: int) -> Any:
        """Sort key of ``job`` at ``now``: smaller runs sooner."""
        raise NotImplementedError

    def order(self, queue: list[int], now: int, arrived: int) -> None:
        """Sort ``queue`` in place (stable); ``arrived`` = how many of its jobs arrived at ``now``."""
        queue.sort(key=lambda j: self.priority(j, now))

    def next_review(self, queue: Sequence[int], now: int, arrived: int) -> int | None:
        """An extra second at which to run a pass although nothing arrives or ends (None: no need)."""
        return None

    def reserve(self, head: int, now: int, free: int) -> tuple[int, int] | None:
        """For a blocked head job: (reserved start, GPUs spare at it) so later jobs may backfill; None: block."""
        return None


@dataclass(slots=True)
class Record:
    """What happened to the jobs of one simulation (indexed by job number)."""

    start: list[int]
    end: list[int]
    queue: list[int]
    preemptions: list[int]
    nodes: list[int]
    # run segments, flat for cheap appends: per segment, and per (segment, node)
    seg_job: list[int] = field(default_factory=list)
    seg_start: list[int] = field(default_factory=list)
    seg_end: list[int] = field(default_factory=list)
    seg_gpus: list[int] = field(default_factory=list)
    node_job: list[int] = field(default_factory=list)
    node_id: list[int] = field(default_factory=list)
    node_gpus: list[int] = field(default_factory=list)
    node_start: list[int] = field(default_factory=list)
    node_end: list[int] = field(default_factory=list)

    def close_segment(self, job: int, start: int, end: int, alloc: Allocation, gpus: int) -> None:
        """Record that ``job`` held ``alloc`` (``gpus`` GPUs in all) over [start, end)."""
        self.seg_job.append(job)
        self.seg_start.append(start)
        self.seg_end.append(end)
        self.seg_gpus.append(gpus)
        for node, g in alloc:
            self.node_job.append(job)
            self.node_id.append(node)
            self.node_gpus.append(g)
            self.node_start.append(start)
            self.node_end.append(end)

    @classmethod
    def empty(cls, n: int) -> Record:
        """A record for ``n`` jobs, none started."""
        return cls([-1] * n, [-1] * n, [0] * n, [0] * n, [0] * n)


class Cycle:
    """The scheduling pass of one VC: ends, arrivals, ordering, placement (and preemption)."""

    def __init__(self, jobs: Jobs, policy: Policy, placement: Placement, state: VCState, engine: Engine) -> None:
        self.jobs, self.policy, self.place, self.state, self.engine = jobs, policy, placement.place, state, engine
        self.queue: list[int] = []
        self.running: dict[int, Allocation] = {}  # insertion order = start order
        policy.running = self.running
        self.waiting_since = list(jobs.submit)  # a job waits from its submit, and again from each preemption
        self.rec = Record.empty(len(jobs.gpu))
        self.step = self._preemptive if policy.preemptive else self._pass
        # a placement whose choice changes after a job has waited long enough needs a pass at that moment
        self.relax_after: int | None = getattr(placement, "relax_after", None)

    def _finish(self, ended: list[int]) -> None:
        jobs, rec = self.jobs, self.rec
        for j in ended:
            alloc = self.running.pop(j)
            self.state.release(alloc, jobs.gpu[j], jobs.cpu[j])
            rec.end[j] = jobs.end_at[j]
            rec.close_segment(j, jobs.started_at[j], jobs.end_at[j], alloc, jobs.gpu[j])
            jobs.remaining[j] = 0
            jobs.started_at[j] = -1

    def _start(self, j: int, now: int, alloc: Allocation) -> None:
        jobs, rec = self.jobs, self.rec
        self.state.allocate(alloc, jobs.gpu[j], jobs.cpu[j])
        self.running[j] = alloc
        if rec.start[j] < 0:
            rec.start[j] = now
        rec.queue[j] += now - self.waiting_since[j]
        rec.nodes[j] = len(alloc)
        jobs.started_at[j] = now
        jobs.end_at[j] = now + jobs.remaining[j]
        self.engine.finish_at(j, jobs.end_at[j])

    def _preempt(self, j: int, now: int) -> None:
        jobs = self.jobs
        alloc = self.running.pop(j)
        self.state.release(alloc, jobs.gpu[j], jobs.cpu[j])
        self.engine.cancel(j)
        self.rec.close_segment(j, jobs.started_at[j], now, alloc, jobs.gpu[j])
        self.rec.preemptions[j] += 1
        jobs.held[j] += now - jobs.started_at[j]
        jobs.remaining[j] = jobs.end_at[j] - now + checkpoint_overhead(jobs.gpu[j])
        jobs.started_at[j] = -1
        self.waiting_since[j] = now
        self.queue.append(j)

    def _pass(self, now: int, ended: list[int], arrived: list[int]) -> None:
        if ended:
            self._finish(ended)
        queue = self.queue
        queue.extend(arrived)
        if not queue:
            return
        policy, place, state, jobs = self.policy, self.place, self.state, self.jobs
        gpu, submit, cpu = jobs.gpu, jobs.submit, jobs.cpu
        policy.order(queue, now, len(arrived))
        kept: list[int] = []
        blocked = False
        for idx, j in enumerate(queue):
            alloc = place(state, gpu[j], now - submit[j], cpu[j])
            if alloc is not None:
                self._start(j, now, alloc)
            elif policy.blocking:
                # every job before the head started; the tail is left in place (no O(queue) copy per event)
                del queue[:idx]
                if len(queue) > 1 and state.free_total:
                    self._backfill(queue, now)
                blocked = True
                break
            else:
                kept.append(j)
        self.queue = queue if blocked else kept
        self._review(now, arrived)

    def _backfill(self, queue: list[int], now: int) -> None:
        """EASY: start jobs behind the blocked head ``queue[0]`` that fit now and do not delay its reservation."""
        state = self.state
        reservation = self.policy.reserve(queue[0], now, state.free_total)
        if reservation is None:
            return
        shadow, spare = reservation
        jobs, place = self.jobs, self.place
        gpu, submit, cpu, expected = jobs.gpu, jobs.submit, jobs.cpu, jobs.expected
        kept: list[int] = []
        for idx in range(1, len(queue)):
            j = queue[idx]
            g = gpu[j]
            short = now + expected(j) <= shadow
            alloc = place(state, g, now - submit[j], cpu[j]) if short or g <= spare else None
            if alloc is None:
                kept.append(j)
                continue
            if not short:
                spare -= g
            self._start(j, now, alloc)
            if state.free_total == 0:
                kept.extend(queue[idx + 1:])
                break
        queue[1:] = kept

    def _preemptive(self, now: int, ended: list[int], arrived: list[int]) -> None:
        if ended:
            self._finish(ended)
        queue = self.queue
        queue.extend(arrived)
        if queue:
            self._rank(queue, now)
        self._review(now, arrived)

    def _rank(self, queue: list[int], now: int) -> None:
        """Admit queued and running jobs by priority within the GPU quota; preempt running jobs left out."""
        policy, gpu, running = self.policy, self.jobs.gpu, self.running
        if sum(gpu[j] for j in queue) <= self.state.free_total:
            # every job fits the quota: nobody is preempted, queued jobs are placed in priority order
            queue.sort(key=lambda j: policy.priority(j, now))
            self._place_in_order(queue, now)
            return
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
        self._place_in_order(admitted, now)

    def _review(self, now: int, arrived: list[int]) -> None:
        wake = self.policy.next_review(self.queue, now, len(arrived))
        if wake is not None and wake > now:
            self.engine.wake_at(wake)
        if self.relax_after is not None:
            started, submit = self.jobs.started_at, self.jobs.submit
            for j in arrived:
                if started[j] < 0:
                    self.engine.wake_at(submit[j] + self.relax_after)

    def _place_in_order(self, admitted: list[int], now: int) -> None:
        """Start every admitted job that fits now, in order; the others stay queued."""
        started = set()
        place, state, jobs = self.place, self.state, self.jobs
        for j in admitted:
            alloc = place(state, jobs.gpu[j], now - jobs.submit[j], jobs.cpu[j])
            if alloc is not None:
                self._start(j, now, alloc)
                started.add(j)
        if started:
            self.queue = [j for j in self.queue if j not in started]
