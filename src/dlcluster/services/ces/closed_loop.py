"""Closed loop: a node controller powering nodes off and on inside the simulator, on the simulated clock.

:class:`PowerManager` is a simulator observer. Every ``step`` seconds it records the busy
nodes, extends its demand forecaster with that value (retraining it on the simulated past
only: from the second simulated day on, whenever that past has doubled since the last
retrain, and at least every ``retrain_every`` seconds) and asks its controller how many
nodes to keep powered; it then powers idle nodes off, or boots nodes, to match. Between
steps it reacts to jobs: when a pass leaves jobs waiting in a VC that has nodes off, it
boots enough of them for those jobs (a booting node hosts jobs only once it is on, after
``boot_seconds``).

Which nodes: a VC keeps at least its share of the idle nodes the controller keeps above
demand (at least ``min_idle``), never loses nodes while jobs wait in it, and gives up its
highest-numbered idle nodes first; boots go to the VCs furthest below their share.
"""

from __future__ import annotations

import heapq
from collections import deque
from dataclasses import dataclass, field

from dlcluster.predict.forecast import DAY, MIN_TRAIN_DAYS, Calendar, DemandForecaster
from dlcluster.sim.cluster import ON, VCState
from dlcluster.sim.observers import Control, Observer
from dlcluster.sim.power import BOOTING, OFF
from dlcluster.services.ces.rules import Controller


@dataclass(eq=False)
class PowerManager(Observer):
    """Closed-loop CES (see the module docstring)."""

    controller: Controller
    step: int = 600
    boot_seconds: int = 300
    retrain_every: int = 28 * DAY  # the longest time between retrains (early ones come sooner)
    calendar: Calendar = field(default_factory=Calendar)
    min_idle: int = 1
    retrains: int = field(default=0, init=False)

    def __post_init__(self) -> None:
        self.tick = self.step

    def attach(self, control: Control) -> None:
        """Every node starts on; the forecaster's steps start at the first submit."""
        self.control = control
        self.groups = control.groups
        self.index = {name: g for g, name in enumerate(self.groups)}
        self.states: list[VCState] = [control.state(g) for g in self.groups]
        # one size per VC lets busy nodes be read off the free-GPU histogram (else nodes are counted one by one)
        self.uniform = [len(set(s.sizes)) == 1 for s in self.states]
        # per group, its free-GPU histogram and node size when all its nodes have one size (its idle nodes are one
        # lookup), else None; the one-size VCs' idle nodes are read off their histograms together
        self._histogram = [(s.by_free, s.largest) if u and s.largest else None
                           for s, u in zip(self.states, self.uniform, strict=True)]
        self._one_size = [h for h in self._histogram if h is not None]
        self._mixed = [g for g, u in enumerate(self.uniform) if not u]
        self.nodes = [len(s.sizes) for s in self.states]
        self.total = sum(self.nodes)
        self.powered = self.total  # on or booting
        self.off: list[set[int]] = [set() for _ in self.groups]
        self.booting: list[int] = [0] * len(self.groups)
        # (second the boot ends, group, nodes) of every boot under way: all boots take as long, so in end order
        self._boots: deque[tuple[int, int, int]] = deque()
        self._settled: list[tuple[int, ...] | None] = [None] * len(self.groups)  # see on_waiting
        self.forecaster = DemandForecaster(self.step, control.now, self.controller.targets, self.calendar,
                                           quantile=self.controller.quantile)
        # until the first model, two simulated days in, the forecast is the current demand
        self.next_fit = control.now + MIN_TRAIN_DAYS * DAY

    def describe(self) -> dict[str, object]:
        """The controller and its settings, for the run's summary."""
        return {**self.controller.describe(), "step": self.step, "retrain_every": self.retrain_every,
                "retrains": self.retrains, "holidays": self.calendar.country,
                "events": [str(e) for e in self.calendar.events]}

    # ---- reading the cluster -------------------------------------------------------------------------------------

    def _idle(self, g: int) -> int:
        """Idle nodes of group ``g`` that are on."""
        hist = self._histogram[g]
        if hist is not None:
            return hist[0][hist[1]]
        if self.uniform[g]:  # (nodes without GPUs)
            return 0
        state = self.states[g]
        return sum(1 for f, s, st in zip(state.free, state.sizes, state.states, strict=True) if f == s and st == ON)

    # ---- acting ------------------------------------------------------------------------------------------------

    def _power_off(self, g: int, below: int) -> int:
        """Power off the highest-numbered idle node of group ``g`` numbered below ``below``; its number (-1: none)."""
        state = self.states[g]
        states, free, sizes = state.states, state.free, state.sizes
        for node in range(below - 1, -1, -1):
            if states[node] == ON and free[node] == sizes[node]:
                self.control.set_node_state(self.groups[g], node, OFF)
                self.off[g].add(node)
                self.powered -= 1
                return node
        return -1

    def _boot(self, g: int, chosen: list[int], now: int) -> int:
        """Boot the ``chosen`` nodes of group ``g`` (all off); how many boot."""
        name = self.groups[g]
        for node in chosen:
            self.off[g].discard(node)
            self.control.set_node_state(name, node, BOOTING)
            self.control.set_node_state(name, node, ON, at=now + self.boot_seconds)
        self.booting[g] += len(chosen)
        self._boots.append((now + self.boot_seconds, g, len(chosen)))
        self.powered += len(chosen)
        return len(chosen)

    def on_waiting(self, group: str, now: int) -> None:
        """Boot nodes for the jobs waiting in ``group`` if it has nodes off: each waiting job counted on its own nodes
        (over-booting costs minutes of idle power, under-booting a second boot delay), the largest nodes first, and
        one big enough for the largest job if no node that is on or booting is."""
        g = self.index[group]
        off = self.off[g]
        if not off:
            return
        state = self.states[g]
        # nothing changed since a call that booted nothing (no GPU given back or taken, no node on, no job more or
        # less waiting): the answer is the same
        queued = self.control.queued(group)
        seen = (state.gains, state.free_total, state.unusable, len(off), queued)
        if self._settled[g] == seen:
            return
        boot = self._boots_for(g, group, state, now, queued)
        if boot:
            self._boot(g, boot, now)
        self._settled[g] = None if boot else seen

    def _boots_for(self, g: int, group: str, state: VCState, now: int, queued: int) -> list[int]:
        """The nodes of group ``g`` to boot for its waiting jobs (see :meth:`on_waiting`)."""
        off = self.off[g]
        sizes, states, free, largest = state.sizes, state.states, state.free, state.largest or 1
        gpus = self.control.jobs.gpu
        if self.uniform[g] and state.largest:
            # one node size: what the general case below finds node by node, counted. Nodes idle or booting are the
            # histogram's idle ones and the boots under way, enough nodes are always enough GPUs, and the nodes
            # booted are the lowest-numbered that are off. Once the ``queued`` waiting jobs need every node (each
            # needs one at least), the rest of a long queue changes nothing (and fewer jobs than nodes are summed)
            if self._boots:
                self._settle(now)
            have = self._idle(g) + self.booting[g]
            if queued >= have + len(off):
                return sorted(off)
            need = sum([-(-gpus[j] // largest) for j in self.control.waiting(group)])
            return sorted(off)[: need - have] if need > have else []
        wanted = [gpus[j] for j in self.control.waiting(group)]
        if not wanted:
            return []
        need = sum(-(-w // largest) for w in wanted)
        need_gpus = sum(wanted)
        lit = [n for n in range(len(sizes)) if n not in off]  # on or booting
        ready = [n for n in lit if states[n] == BOOTING or free[n] == sizes[n]]  # idle, or soon to be
        have, have_gpus = len(ready), sum(sizes[n] for n in ready)
        boot = []
        big = max(wanted)
        if big <= largest and all(sizes[n] < big for n in lit):
            node = min((n for n in off if sizes[n] >= big), key=lambda n: (sizes[n], n))
            boot.append(node)
            have, have_gpus = have + 1, have_gpus + sizes[node]
        # enough nodes for the jobs counted apart, and enough GPUs (nodes may differ in size)
        for node in sorted(off - set(boot), key=lambda n: (-sizes[n], n)):
            if have >= need and have_gpus >= need_gpus:
                break
            boot.append(node)
            have, have_gpus = have + 1, have_gpus + sizes[node]
        return boot

    def on_tick(self, now: int) -> None:
        """One controller step: record demand, maybe retrain, and power nodes to the controller's answer."""
        if self._boots:
            self._settle(now)
        powered = self.powered
        idle = sum([by_free[size] for by_free, size in self._one_size])
        if self._mixed:
            idle += sum(self._idle(g) for g in self._mixed)
        used = powered - sum(self.booting) - idle
        fc = self.forecaster
        fc.extend((used,))
        if now >= self.next_fit:
            fc.fit()
            self.retrains += 1
            # a young model is retrained as soon as its history has doubled, an older one every retrain_every
            self.next_fit = now + min(now - fc.t0, self.retrain_every)  # (t0: the first step)
        fitted = fc.models_ is not None
        i = len(fc.y) - 1
        target = self.controller.step(i, fc.y, powered, self.total,
                                      fc.forecast if fitted else lambda: [float(used)] * len(self.controller.targets))
        if target == powered:
            return
        spare = max(0, target - used)  # idle nodes to keep, shared by VC size
        if target < powered:
            self._shed(powered - target, spare)
        else:
            self._wake(target - powered, spare, now)

    def _settle(self, now: int) -> None:
        """Count the boots that have finished (their nodes turned on at ``now`` or before: node changes come first
        in a second)."""
        boots = self._boots
        while boots and boots[0][0] <= now:
            _, g, count = boots.popleft()
            self.booting[g] -= count

    def _reserve(self, g: int, spare: int) -> int:
        """The idle nodes group ``g`` keeps: its share of the ``spare`` nodes kept above demand, at least min_idle."""
        return max(self.min_idle, spare * self.nodes[g] // self.total)

    def _shed(self, count: int, spare: int) -> None:
        """Power off ``count`` idle nodes, one at a time from the VC with the most idle nodes above its reserve
        (none from a VC where jobs wait)."""
        surplus = []
        # (this runs at most controller steps, nearly every one under the quantile rule: the histogram read inline)
        for g, hist in enumerate(self._histogram):
            idle = hist[0][hist[1]] if hist is not None else self._idle(g)
            if idle <= self.min_idle:  # (most VCs of a busy cluster: none to spare whatever the reserve)
                continue
            keep = self._reserve(g, spare)
            if idle > keep and not self.control.queued(self.groups[g]):
                surplus.append((keep - idle, g))
        heapq.heapify(surplus)
        # per group, the node last powered off: the nodes above it hold jobs or are off (nothing starts meanwhile),
        # so the next search starts below it
        below = [len(s.sizes) for s in self.states]
        while count > 0 and surplus:
            level, g = heapq.heappop(surplus)
            below[g] = self._power_off(g, below[g])
            if below[g] >= 0:
                count -= 1
                if level + 1 < 0:
                    heapq.heappush(surplus, (level + 1, g))

    def _wake(self, count: int, spare: int, now: int) -> None:
        """Boot ``count`` nodes, one at a time into the VC furthest below its reserve of idle nodes."""
        deficit = [(self._idle(g) + self.booting[g] - self._reserve(g, spare), g) for g in range(len(self.groups))
                   if self.off[g]]
        heapq.heapify(deficit)
        while count > 0 and deficit:
            level, g = heapq.heappop(deficit)
            count -= self._boot(g, [min(self.off[g])], now)  # the lowest-numbered node that is off
            if self.off[g]:
                heapq.heappush(deficit, (level + 1, g))
