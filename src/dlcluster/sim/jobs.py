"""Per-job inputs and run state of one simulation (plain lists indexed by job number), and what happened to them."""

from __future__ import annotations

from array import array
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from dlcluster.sim.cluster import Allocation


def checkpoint_overhead(gpus: int) -> int:
    """Seconds a preempted job loses to checkpoint/restore: 7 s (1 GPU), 30 s (2–8), 60 s (more)."""
    return 7 if gpus <= 1 else 30 if gpus <= 8 else 60


class Jobs:
    """Every simulated job (numbered VC by VC, arrival order within a VC); run state is the simulator's, policies read.

    ``remaining`` is work left (seconds at full speed) as of ``progress_at``; a running job
    makes ``rate`` seconds of work per second (1 unless a speed model says otherwise; then
    it ends at ``end_at``). ``job_id``, ``user``, ``vc`` and ``name`` are there for
    fairness-aware policies and estimators.
    """

    __slots__ = ("gpu", "submit", "duration", "estimate", "cpu", "group", "remaining", "rate", "progress_at",
                 "started_at", "end_at", "held", "retries", "retry_work", "_labels", "_label_cache")

    def __init__(
        self,
        gpu: list[int],
        submit: list[int],
        duration: list[int],
        estimate: list[float] | None = None,
        cpu: list[int] | None = None,
        group: list[int] | None = None,
        labels: Callable[[str], Sequence[str | None] | None] | None = None,
    ) -> None:
        n = len(gpu)
        self.gpu, self.submit, self.duration = gpu, submit, duration
        self.estimate = estimate  # predicted duration (s); observers may set it at submission
        self.cpu = cpu if cpu else [0] * n  # CPUs asked when the VC models CPUs (0: none)
        self.group = group if group is not None else [0] * n  # index of the job's simulation group (VC)
        self.remaining: list[Any] = list(duration)  # int seconds; float once a speed model changes a rate
        self.rate: list[float] = [1] * n
        self.started_at = [-1] * n  # start of the current run segment (-1 when not running)
        # at full speed work is counted from the start: the same list; a speed model gets its own (track_rates)
        self.progress_at = self.started_at
        self.end_at: list[int] = []  # end of the current run segment (kept under a speed model only)
        self.held = [0] * n  # seconds on GPUs in finished run segments (checkpoints included)
        # with failures replayed: by job, the attempts still to come; a retry redoes the first attempt's work
        # (``duration``) unless ``retry_work`` holds the work of the job's recorded attempts, the next one last
        self.retries: list[int] | None = None
        self.retry_work: dict[int, list[int]] = {}
        self._labels = labels  # column name -> values, read only when a policy or observer asks
        self._label_cache: dict[str, list[str | None]] = {}

    def track_rates(self) -> None:
        """Keep the moment work was last counted and the scheduled end apart: rates may now change mid-run."""
        self.progress_at = [-1] * len(self.gpu)
        self.end_at = [-1] * len(self.gpu)

    def __len__(self) -> int:
        return len(self.gpu)

    def _label(self, key: str) -> list[str | None]:
        if key not in self._label_cache:
            values = self._labels(key) if self._labels is not None else None
            self._label_cache[key] = list(values) if values is not None else [None] * len(self.gpu)
        return self._label_cache[key]

    @property
    def job_id(self) -> list[str | None]:
        """Each job's id in the trace."""
        return self._label("job_id")

    @property
    def user(self) -> list[str | None]:
        """Each job's user (None where the trace has none)."""
        return self._label("user")

    @property
    def vc(self) -> list[str | None]:
        """Each job's VC."""
        return self._label("vc")

    @property
    def name(self) -> list[str | None]:
        """Each job's name (None where the trace has none)."""
        return self._label("name")

    def remaining_at(self, job: int, now: int) -> float:
        """Work left for ``job`` at ``now`` (seconds at full speed)."""
        if self.started_at[job] < 0:
            return cast(float, self.remaining[job])
        return cast(float, self.remaining[job] - (now - self.progress_at[job]) * self.rate[job])

    def attained_at(self, job: int, now: int) -> int:
        """GPU-seconds ``job`` has held up to ``now`` (its attained service, for LAS and Tiresias)."""
        started = self.started_at[job]
        return self.gpu[job] * (self.held[job] + (now - started if started >= 0 else 0))

    def expected(self, job: int) -> float:
        """The job's predicted duration when estimates are loaded, else its true duration (oracle)."""
        return self.estimate[job] if self.estimate is not None else self.duration[job]

    def expected_ends(self, running: Iterable[int], now: int) -> list[tuple[float, int]]:
        """``(expected_end(j, now), j)`` of each of the ``running`` jobs."""
        # (inline: EASY asks at every pass that cannot start its head job)
        if not self.end_at:  # no speed model: every rate is 1, expected_end's first case
            started, expected = self.started_at, self.estimate if self.estimate is not None else self.duration
            return [(max(now, started[j] + expected[j]), j) for j in running]
        return [(self.expected_end(j, now), j) for j in running]

    def expected_end(self, job: int, now: int) -> float:
        """When running ``job`` should end by its expected duration (now, if it is already past it)."""
        if self.rate[job] == 1:
            return max(now, self.started_at[job] + self.expected(job))
        done = self.duration[job] - self.remaining_at(job, now)
        return now + max(0.0, self.expected(job) - done) / self.rate[job]


@dataclass(slots=True)
class Segments:
    """The run segments of one simulation group, in the order they closed; flat arrays of 64-bit ints for cheap
    appends (kept as values, not int objects; read as NumPy arrays without a copy).

    Kept per group so that the result tables, which are per group, need no sort to split them. A segment on
    one node (the common case) is recorded by that node alone: its job holds all its GPUs there. A segment
    across several nodes has node -1 and lists its nodes and their GPUs in the ``span_*`` lists.
    """

    # per segment
    job: array[int] = field(default_factory=lambda: array("q"))
    start: array[int] = field(default_factory=lambda: array("q"))
    end: array[int] = field(default_factory=lambda: array("q"))
    node: array[int] = field(default_factory=lambda: array("q"))
    # per (segment, node) of the segments across several nodes, in segment order
    span_segment: list[int] = field(default_factory=list)
    span_node: list[int] = field(default_factory=list)
    span_gpus: list[int] = field(default_factory=list)

    def close(self, job: int, start: int, end: int, alloc: Allocation) -> None:
        """Record that ``job`` held ``alloc`` over [start, end)."""
        self.job.append(job)
        self.start.append(start)
        self.end.append(end)
        if len(alloc) == 1:
            self.node.append(alloc[0][0])
            return
        segment = len(self.node)
        self.node.append(-1)
        for node, gpus in alloc:
            self.span_segment.append(segment)
            self.span_node.append(node)
            self.span_gpus.append(gpus)


@dataclass(slots=True)
class Record:
    """What happened to the jobs of one simulation (indexed by job number), and each group's run segments."""

    start: list[int]
    end: list[int]
    queue: list[int]
    preemptions: list[int]
    nodes: list[int]
    segments: list[Segments]  # per group (index as the simulation's groups)
    # node-state changes: (time, group, node, state)
    node_states: list[tuple[int, int, int, str]] = field(default_factory=list)
    attempts: list[int] = field(default_factory=list)  # per job, attempts started (kept with failures replayed only)

    @classmethod
    def empty(cls, n: int, groups: int = 1) -> Record:
        """A record for ``n`` jobs, none started, in ``groups`` groups."""
        return cls([-1] * n, [-1] * n, [0] * n, [0] * n, [0] * n, [Segments() for _ in range(groups)])
