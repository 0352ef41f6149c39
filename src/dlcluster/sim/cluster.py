"""Per-VC GPU state: free GPUs per node as a plain integer list, gang allocate and release."""

from __future__ import annotations

from dataclasses import dataclass, field

Allocation = list[tuple[int, int]]  # (node index, GPUs taken on it)


@dataclass(slots=True)
class VCState:
    """Free GPUs of every node of one VC, plus how many jobs each node hosts."""

    sizes: tuple[int, ...]
    free: list[int] = field(init=False)
    jobs_on: list[int] = field(init=False)
    free_total: int = field(init=False)

    def __post_init__(self) -> None:
        self.free = list(self.sizes)
        self.jobs_on = [0] * len(self.sizes)
        self.free_total = sum(self.sizes)

    @property
    def total(self) -> int:
        """GPUs of the VC."""
        return sum(self.sizes)

    def allocate(self, alloc: Allocation) -> None:
        """Take every GPU of ``alloc`` (all or nothing: placements only return feasible ones)."""
        free, jobs_on = self.free, self.jobs_on
        for node, gpus in alloc:
            free[node] -= gpus
            jobs_on[node] += 1
            self.free_total -= gpus

    def release(self, alloc: Allocation) -> None:
        """Give back every GPU of ``alloc``."""
        free, jobs_on = self.free, self.jobs_on
        for node, gpus in alloc:
            free[node] += gpus
            jobs_on[node] -= 1
            self.free_total += gpus
