"""One run of the whole cluster on one clock: routes each second's events to the groups and the observers."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from dlcluster.errors import ConfigError
from dlcluster.sim.cycle import Cycle
from dlcluster.sim.engine import Engine, NodeChange
from dlcluster.sim.jobs import Jobs
from dlcluster.sim.observers import Control, Observer

Progress = Callable[[str, int, int], None]  # (what, done, total)


class Simulation:
    """The engine's handler: the fixed order of work within a second (see :mod:`dlcluster.sim.observers`)."""

    def __init__(self, jobs: Jobs, names: list[str], cycles: list[Cycle], engine: Engine, arrivals: list[int],
                 observers: Sequence[Observer] = (), progress: Progress | None = None,
                 outcome: list[str] | None = None, origin: int = 0) -> None:
        self.jobs, self.names, self.cycles, self.engine = jobs, names, cycles, engine
        self.origin = origin  # the epoch second of simulated second 0 (see Control.origin)
        self.arrivals = arrivals  # job numbers in arrival order: the engine's i-th arrival is job arrivals[i]
        self.outcome = outcome  # with failures replayed: each job's final outcome, for on_finish
        self.by_name = {n: c for n, c in zip(names, cycles, strict=True)}
        self.observers = list(observers)
        self.tickers: list[Observer] = []
        self.waiters = [o for o in self.observers if type(o).on_waiting is not Observer.on_waiting]
        self.now = jobs.submit[arrivals[0]] if arrivals else 0
        self.left = len(jobs)  # jobs not ended yet
        self.progress = progress
        self._step = max(1, len(jobs) // 100)
        # progress is reported when ``left`` drops to this multiple of the step (never, without a callback)
        self._report_at = self._next_report() if progress is not None else -1
        self._dirty: list[int] = []  # groups that need a pass this second
        control = Control(self)
        for o in self.observers:
            if o.tick is not None:
                if not (isinstance(o.tick, int) and o.tick > 0):
                    raise ConfigError(f"observer {type(o).__name__}: tick must be a positive whole number of "
                                      f"seconds, got {o.tick!r}")
                engine.every(o.tick, self.now)
                self.tickers.append(o)
            o.attach(control)

    def cycle(self, group: str) -> Cycle:
        """The scheduling cycle of ``group``."""
        if group not in self.by_name:
            raise ValueError(f"no group {group!r}; groups: {', '.join(self.names)}")
        return self.by_name[group]

    def node_state(self, group: str, node: int, state: str, at: int | None) -> None:
        """Change a node's state now (and schedule a pass of its group) or at ``at``."""
        cycle = self.cycle(group)
        if not 0 <= node < len(cycle.state.sizes):
            raise ValueError(f"group {group!r} has no node {node}")
        if at is not None and at > self.now:
            self.engine.node_at(at, cycle.index, node, state)
            return
        cycle.set_node_state(node, state, self.now)
        if cycle.index not in self._dirty:
            self._dirty.append(cycle.index)

    def unfinished(self) -> bool:
        """Whether some job has not ended yet."""
        return self.left > 0

    def second(self, now: int, ended: list[int], first: int, last: int, woken: list[int],
               nodes: list[NodeChange], ticks: list[int]) -> None:
        """Handle every event of second ``now`` in the documented order, then run the touched groups' passes."""
        self.now = now
        cycles, group, observers = self.cycles, self.jobs.group, self.observers
        dirty = self._dirty
        for g, node, state in nodes:
            cycles[g].set_node_state(node, state, now)
            if g not in dirty:
                dirty.append(g)
        if ended:
            done = 0
            for j in ended:
                g = group[j]
                if g not in dirty:
                    dirty.append(g)
                if not cycles[g].finish(j, now):  # an attempt failed; the job waits for its next one
                    continue
                done += 1
                if observers:
                    for o in observers:
                        o.on_finish(j, now, self.outcome[j] if self.outcome is not None else "completed")
            self.left -= done
            if self.left <= self._report_at:
                self._report()
        for j in self.arrivals[first:last]:
            if observers:
                for o in observers:
                    o.on_submit(j, now)
            g = group[j]
            cycles[g].arrivals.append(j)
            if g not in dirty:
                dirty.append(g)
        for sub in ticks:
            self.tickers[sub].on_tick(now)
        for g in woken:
            if g not in dirty:
                dirty.append(g)
        self._passes(now)

    def ticks(self, now: int, due: list[int]) -> None:
        """The ``due`` ticks are the only events of second ``now`` (most of a controller's steps)."""
        self.now = now
        for sub in due:
            self.tickers[sub].on_tick(now)
        if self._dirty:  # the controller changed node states: their groups need a pass now
            self._passes(now)

    def _passes(self, now: int) -> None:
        """Run the pass of every group touched this second, in cluster-spec order, until none is left."""
        cycles, dirty = self.cycles, self._dirty
        while dirty:  # a pass whose observers change node states touches that group again
            if len(dirty) > 1:
                dirty.sort()
            todo = dirty[:]
            dirty.clear()
            for g in todo:
                cycles[g].run_pass(now)
            if self.waiters:
                for g in todo:
                    self._tell_waiting(g, now)

    def _tell_waiting(self, g: int, now: int) -> None:
        """``on_waiting`` if group ``g``'s pass left jobs waiting while some of its nodes are not on."""
        cycle = self.cycles[g]
        if cycle.state.unusable and cycle.queued():
            for o in self.waiters:
                o.on_waiting(self.names[g], now)

    @property
    def single_events(self) -> bool:
        """Unless an observer hears of submissions or ends, a second with one event concerns one group only: the
        shortcuts below apply."""
        return not any(type(o).on_submit is not Observer.on_submit or type(o).on_finish is not Observer.on_finish
                       for o in self.observers)

    def one_end(self, now: int, job: int) -> None:
        """The end of ``job`` is the only event of second ``now``."""
        self.now = now
        g = self.jobs.group[job]
        cycle = self.cycles[g]
        if cycle.finish(job, now):
            self.left -= 1
            if self.left <= self._report_at:
                self._report()
        cycle.run_pass(now)
        # (the test of _tell_waiting first, inline: with nodes off this follows nearly every pass, and most leave
        # nothing waiting)
        if self.waiters and cycle.state.unusable and cycle.queued():
            self._tell_waiting(g, now)
        if self._dirty:  # observers changed node states during the pass: their groups need a pass now
            self._passes(now)

    def one_arrival(self, now: int, arrival: int) -> None:
        """The ``arrival``-th arrival is the only event of second ``now``."""
        self.now = now
        job = self.arrivals[arrival]
        g = self.jobs.group[job]
        cycle = self.cycles[g]
        cycle.arrivals.append(job)
        cycle.run_pass(now)
        if self.waiters and cycle.state.unusable and cycle.queued():
            self._tell_waiting(g, now)  # (tested inline first: as in one_end)
        if self._dirty:  # observers changed node states during the pass: their groups need a pass now
            self._passes(now)

    def _report(self) -> None:
        assert self.progress is not None
        total = len(self.jobs)
        self.progress("jobs", total - self.left, total)
        self._report_at = self._next_report()

    def _next_report(self) -> int:
        return (self.left - 1) // self._step * self._step if self.left > 0 else -1
