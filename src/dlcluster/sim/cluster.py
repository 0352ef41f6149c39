"""Per-VC state: free GPUs (and, when modelled, free CPUs) per node as plain integer lists, and node states.

A node is usable (state ``on``) or not (``off``, ``booting``, ``down``, or any other name a
controller uses); an unusable node shows no free GPUs, so placements never see it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final

Allocation = list[tuple[int, int]]  # (node index, GPUs taken on it)
ON: Final = "on"


def cpu_share(cpus: int, gpus_on_node: int, gpus: int) -> int:
    """CPUs a job of ``gpus`` GPUs and ``cpus`` CPUs holds on a node where it takes ``gpus_on_node`` GPUs."""
    return -(-cpus * gpus_on_node // gpus)


@dataclass(slots=True)
class VCState:
    """Free GPUs of every node of one VC (and free CPUs if ``cpus`` is given), and each node's state."""

    sizes: tuple[int, ...]
    cpus: tuple[int, ...] | None = None
    total: int = field(init=False)  # GPUs of the VC
    largest: int = field(init=False)  # GPUs of its largest node
    free: list[int] = field(init=False)
    free_total: int = field(init=False)
    free_cpus: list[int] = field(init=False)
    states: list[str] = field(init=False)
    by_free: list[int] = field(init=False)  # by_free[f]: how many usable nodes have exactly f free GPUs
    # ``free`` as bytes when every node has under 256 GPUs (else empty): its index() is a memchr, for best fit
    free_bytes: bytearray = field(init=False)
    # times GPUs were given back (a release, a node turning on): a gang that did not fit can fit only after it moves
    gains: int = field(init=False, default=0)
    unusable: int = field(init=False, default=0)  # nodes not ``on``
    # per node, how many jobs of more than one GPU hold GPUs there; kept only once track_multi() was called (for a
    # placement that isolates such jobs), else empty, so other runs pay one truth test per allocation
    multi: list[int] = field(init=False, default_factory=list)

    def __post_init__(self) -> None:
        self.total = self.free_total = sum(self.sizes)
        self.largest = max(self.sizes, default=0)
        self.free = list(self.sizes)
        self.free_cpus = list(self.cpus) if self.cpus is not None else []
        self.states = [ON] * len(self.sizes)
        self.by_free = [0] * (self.largest + 1)
        for f in self.free:
            self.by_free[f] += 1
        self.free_bytes = bytearray(self.free) if self.largest < 256 else bytearray()

    def track_multi(self) -> None:
        """Count, from now on, the multi-GPU jobs on every node (``multi``); the VC must hold no job yet."""
        if any(f != size for f, size, st in zip(self.free, self.sizes, self.states, strict=True) if st == ON):
            raise ValueError("multi-GPU jobs can only be counted from an empty VC")
        self.multi = [0] * len(self.sizes)

    def usable(self, gpus: int, cpus: int) -> list[int] | None:
        """Per node, the GPUs a job of ``gpus`` GPUs and ``cpus`` CPUs could take now; None if too few in all."""
        if not cpus:
            return self.free if self.free_total >= gpus else None
        # cpu_share(cpus, g, gpus) <= c  ⇔  g <= c·gpus / cpus
        usable = [min(f, c * gpus // cpus) for f, c in zip(self.free, self.free_cpus, strict=True)]
        return usable if sum(usable) >= gpus else None

    def set_state(self, node: int, state: str) -> None:
        """Make ``node`` usable (``on``) or not; only an idle node may stop being usable."""
        was = self.states[node]
        if was == state:
            return
        if was == ON:
            if self.free[node] != self.sizes[node]:
                raise ValueError(f"node {node} runs jobs; only an idle node can become {state!r}")
            self.unusable += 1
            self.by_free[self.sizes[node]] -= 1
            self.by_free[0] += 1
            self.free[node] = 0
            if self.free_bytes:
                self.free_bytes[node] = 0
            self.free_total -= self.sizes[node]
        elif state == ON:
            self.unusable -= 1
            self.gains += 1
            self.by_free[0] -= 1
            self.by_free[self.sizes[node]] += 1
            self.free[node] = self.sizes[node]
            if self.free_bytes:
                self.free_bytes[node] = self.sizes[node]
            self.free_total += self.sizes[node]
        self.states[node] = state

    def allocate(self, alloc: Allocation, gpus: int, cpus: int) -> None:
        """Take every GPU of ``alloc`` and, when the job has any, its CPUs (placements only return feasible ones)."""
        free, by_free, fb = self.free, self.by_free, self.free_bytes
        for node, g in alloc:
            f = free[node]
            by_free[f] -= 1
            by_free[f - g] += 1
            free[node] = f - g
            if fb:
                fb[node] = f - g
        self.free_total -= gpus
        if gpus > 1 and self.multi:
            multi = self.multi
            for node, _ in alloc:
                multi[node] += 1
        if cpus:
            self._move_cpus(alloc, gpus, cpus, -1)

    def release(self, alloc: Allocation, gpus: int, cpus: int) -> None:
        """Give back every GPU of ``alloc`` and the job's CPUs."""
        free, by_free, fb = self.free, self.by_free, self.free_bytes
        for node, g in alloc:
            f = free[node]
            by_free[f] -= 1
            by_free[f + g] += 1
            free[node] = f + g
            if fb:
                fb[node] = f + g
        self.free_total += gpus
        self.gains += 1
        if gpus > 1 and self.multi:
            multi = self.multi
            for node, _ in alloc:
                multi[node] -= 1
        if cpus:
            self._move_cpus(alloc, gpus, cpus, 1)

    def hand_over(self, node: int, freed: int, taken: int) -> None:
        """A job holding ``freed`` GPUs on ``node`` alone (and no CPUs) gives them back and another job takes
        ``taken`` of them: :meth:`release`, then :meth:`allocate`, in one update."""
        f = self.free[node]
        g = f + freed - taken
        self.by_free[f] -= 1
        self.by_free[g] += 1
        self.free[node] = g
        if self.free_bytes:
            self.free_bytes[node] = g
        self.free_total += freed - taken
        self.gains += 1
        if self.multi:
            self.multi[node] += (taken > 1) - (freed > 1)

    def _move_cpus(self, alloc: Allocation, gpus: int, cpus: int, sign: int) -> None:
        """Take (``sign`` -1) or give back (+1) the CPUs of a job of ``gpus`` GPUs and ``cpus`` CPUs held on ``alloc``."""
        free_cpus = self.free_cpus
        for node, g in alloc:
            free_cpus[node] += sign * cpu_share(cpus, g, gpus)
