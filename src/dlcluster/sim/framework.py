"""The policy plug-in interface: a sort key, three flags, and optional hooks with fixed rules for combining them.

A policy is a small class (see :class:`Policy`): a sort key ``priority(job, now)``
(smaller runs sooner; ties keep arrival order because every sort is stable).

- ``static``: a job's key never changes while it waits (FIFO, SJF, QSSF; SRTF, LAS and
  Tiresias too, whose keys change only while a job runs). The queue is then kept sorted
  incrementally (each job's key is computed when it joins the queue: at its arrival, or
  after a preemption), instead of being re-sorted at every event.
- ``blocking``: a pass stops at the first queued job that cannot be placed (head-of-line
  blocking); a non-blocking pass skips it and tries the next.
- ``preemptive``: running jobs can be preempted for a queued job of *strictly* better
  priority, but only when that lets the queued job be placed at once (a dry run, a
  trial on the VC's state, undone afterwards, picks the victims; ties never preempt).

Hooks: ``order`` (re-order the queue in place each pass, for rules that depend on more
than one job; not with ``static``), ``next_review`` (an extra wake-up second),
``reserve`` (EASY backfilling: a reservation for the blocked head; blocking,
non-preemptive policies only), ``victims`` (which running jobs to preempt first;
preemptive policies only) and ``linear_key`` (a running job's key as a line in time, so
the cycle keeps running jobs ranked instead of re-ranking them at every pass; preemptive
policies only). A combination that would be silently ignored is rejected when
the class is defined. Policies read job data through :class:`~dlcluster.sim.jobs.Jobs`
and ``self.running`` and never change simulator state.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar

from dlcluster.errors import ConfigError
from dlcluster.sim.cluster import Allocation
from dlcluster.sim.jobs import Jobs

Order = Callable[[list[int], int, int], None]  # (queue, now, arrived): re-order the queue in place

# hook -> (allowed when, what the class must be)
_HOOK_RULES = {
    "order": (lambda c: not c.static, "cannot be static (a static queue is never re-ordered)"),
    "reserve": (lambda c: c.blocking and not c.preemptive, "must be blocking and not preemptive"),
    "victims": (lambda c: c.preemptive, "must be preemptive"),
    "linear_key": (lambda c: c.preemptive, "must be preemptive"),
}


class Policy:
    """Base class of ordering policies: override ``priority`` (and the flags); hooks are optional."""

    name: ClassVar[str] = ""
    help: ClassVar[str] = ""
    static: ClassVar[bool] = False
    preemptive: ClassVar[bool] = False
    blocking: ClassVar[bool] = True
    needs_estimates: ClassVar[bool] = False
    uses_estimates: ClassVar[bool] = False  # read estimates when given, the oracle duration otherwise
    # name of a numeric class attribute set by "name:VALUE" (e.g. "tiresias:7200"), and its meaning
    parameter: ClassVar[str | None] = None
    parameter_help: ClassVar[str] = ""
    parameter_min: ClassVar[int] = 1

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        for hook, (allowed, rule) in _HOOK_RULES.items():
            if getattr(cls, hook) is not getattr(Policy, hook) and not allowed(cls):
                raise ConfigError(f"policy class {cls.__name__} defines {hook}() but {rule}; "
                                  f"the hook would never be called")

    def __init__(self, jobs: Jobs) -> None:
        self.jobs = jobs
        self.running: Mapping[int, Allocation] = {}  # the group's running jobs (read-only view)

    def priority(self, job: int, now: int) -> Any:
        """Sort key of ``job`` at ``now``: smaller runs sooner."""
        raise NotImplementedError

    def order(self, queue: list[int], now: int, arrived: int) -> None:
        """Sort ``queue`` in place (stable); ``arrived`` = how many of its jobs arrived at ``now``."""
        queue.sort(key=lambda j: self.priority(j, now))

    def next_review(self, queue: Sequence[int], now: int, arrived: int) -> int | None:
        """An extra second at which to run a pass although nothing arrives or ends (None: no need)."""
        return None

    @classmethod
    def check_speed(cls, slowest: float) -> None:
        """Refuse a speed model under which this policy could preempt jobs forever (``slowest``: its lowest rate)."""

    def reserve(self, head: int, now: int, free: int) -> tuple[int, int] | None:
        """For a blocked head job: (reserved start, GPUs spare at it) so later jobs may backfill; None: block."""
        return None

    def victims(self, job: int, candidates: list[int], now: int) -> list[int]:
        """Running jobs ``job`` may preempt, most expendable first (``candidates``: worst priority first)."""
        return candidates

    def linear_key(self, job: int) -> tuple[int, int] | None:
        """For a job that has just started: ``(slope, base)`` with ``priority(job, now) == base + slope * now``
        at every second until it stops running (None: its key is not such a line)."""
        return None
