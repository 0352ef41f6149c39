"""Observers: components that listen to a run (estimators, controllers) and act only through :class:`Control`.

An observer subclasses :class:`Observer` and overrides the callbacks it needs. Every
callback receives the simulated second ``now``; an observer never sees an event before
the clock reaches it. Order of work within one second (fixed, so runs repeat exactly):

1. node-state changes due now (e.g. a boot that finishes);
2. jobs ending now release their GPUs → ``on_finish`` (in the order their ends were scheduled);
3. jobs submitted now → ``on_submit`` (arrival order), then they join their group's queue;
4. ticks due now → ``on_tick`` (observers in the order given);
5. the scheduling pass of every group that had an event, in cluster-spec order
   → ``on_start`` / ``on_preempt`` as it starts and preempts jobs;
6. ``on_waiting`` for each group whose pass left jobs waiting while some of its nodes are not on.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterator

    from dlcluster.sim.cluster import VCState
    from dlcluster.sim.jobs import Jobs
    from dlcluster.sim.simulation import Simulation


class Observer:
    """Base class: every callback does nothing; ``tick`` (seconds) asks for ``on_tick`` at that period."""

    tick: int | None = None

    def attach(self, control: Control) -> None:
        """Called once before the run (``control.now`` is the first submit second)."""

    def on_submit(self, job: int, now: int) -> None:
        """``job`` was submitted at ``now`` (before it joins a queue: the moment to set its estimate)."""

    def on_start(self, job: int, now: int) -> None:
        """``job`` started (or restarted after a preemption) at ``now``."""

    def on_preempt(self, job: int, now: int) -> None:
        """``job`` was preempted at ``now``."""

    def on_finish(self, job: int, now: int, outcome: str) -> None:
        """``job`` ended at ``now`` with ``outcome`` (``completed``)."""

    def on_tick(self, now: int) -> None:
        """A periodic tick (every ``tick`` seconds from the first submit)."""

    def on_waiting(self, group: str, now: int) -> None:
        """A pass of ``group`` at ``now`` left jobs waiting while some of its nodes are not on (off, booting...)."""


class Control:
    """What observers may read and do: job data, node states, estimates. Nothing else changes the run."""

    def __init__(self, sim: Simulation) -> None:
        self._sim = sim

    @property
    def now(self) -> int:
        """The current simulated second."""
        return self._sim.now

    @property
    def origin(self) -> int:
        """The epoch second of simulated second 0: 0, simulated times being UTC epoch seconds; in a compatibility
        mode, whose clock counts from its first job on the trace's wall clock (as the artifact's), that job's
        wall-clock second read as if UTC."""
        return self._sim.origin

    @property
    def jobs(self) -> Jobs:
        """Job inputs and run state (read-only by convention: change estimates with :meth:`set_estimate`)."""
        return self._sim.jobs

    @property
    def groups(self) -> list[str]:
        """Names of the simulation groups (VCs, or ``all`` when pooled), in cluster-spec order."""
        return self._sim.names

    def group_of(self, job: int) -> str:
        """The group (VC) ``job`` runs in."""
        return self._sim.names[self._sim.jobs.group[job]]

    def nodes(self, group: str) -> list[tuple[int, int, str]]:
        """Per node of ``group``: (GPUs, free GPUs, state)."""
        state = self._sim.cycle(group).state
        return list(zip(state.sizes, state.free, state.states, strict=True))

    def queued(self, group: str) -> int:
        """Jobs waiting in ``group``."""
        return self._sim.cycle(group).queued()

    def waiting(self, group: str) -> Iterator[int]:
        """The jobs waiting in ``group`` (in no particular order)."""
        return self._sim.cycle(group).waiting()

    def state(self, group: str) -> VCState:
        """The live node state of ``group`` (read-only by convention: change it with :meth:`set_node_state`)."""
        return self._sim.cycle(group).state

    def set_estimate(self, job: int, seconds: float) -> None:
        """Set ``job``'s predicted duration (read by estimate-driven policies when it joins a queue)."""
        if not (seconds >= 0 and math.isfinite(seconds)):
            raise ValueError(f"estimate for job {job} must be a finite number of seconds >= 0, got {seconds}")
        jobs = self._sim.jobs
        if jobs.estimate is None:
            jobs.estimate = [math.nan] * len(jobs)
        jobs.estimate[job] = seconds

    def set_node_state(self, group: str, node: int, state: str, at: int | None = None) -> None:
        """Put ``node`` of ``group`` in ``state`` now, or at second ``at``; only an idle node may leave ``on``."""
        self._sim.node_state(group, node, state, at)
