"""Per-VC state: free GPUs (and, when modelled, free CPUs) per node as plain integer lists; allocate and release."""

from __future__ import annotations

from dataclasses import dataclass, field

Allocation = list[tuple[int, int]]  # (node index, GPUs taken on it)


def cpu_share(cpus: int, gpus_on_node: int, gpus: int) -> int:
    """CPUs a job of ``gpus`` GPUs and ``cpus`` CPUs holds on a node where it takes ``gpus_on_node`` GPUs."""
    return -(-cpus * gpus_on_node // gpus)


@dataclass(slots=True)
class VCState:
    """Free GPUs of every node of one VC, plus how many jobs each node hosts (and free CPUs if ``cpus`` is given)."""

    sizes: tuple[int, ...]
    cpus: tuple[int, ...] | None = None
    free: list[int] = field(init=False)
    jobs_on: list[int] = field(init=False)
    free_total: int = field(init=False)
    free_cpus: list[int] = field(init=False)

    def __post_init__(self) -> None:
        self.free = list(self.sizes)
        self.jobs_on = [0] * len(self.sizes)
        self.free_total = sum(self.sizes)
        self.free_cpus = list(self.cpus) if self.cpus is not None else []

    @property
    def total(self) -> int:
        """GPUs of the VC."""
        return sum(self.sizes)

    def usable(self, gpus: int, cpus: int) -> list[int]:
        """Per node, the GPUs a job of ``gpus`` GPUs and ``cpus`` CPUs could take there now (free GPUs and CPUs)."""
        # cpu_share(cpus, g, gpus) <= c  ⇔  g <= c·gpus / cpus
        return [min(f, c * gpus // cpus) for f, c in zip(self.free, self.free_cpus, strict=True)]

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

    def move_cpus(self, alloc: Allocation, gpus: int, cpus: int, sign: int) -> None:
        """Take (``sign`` -1) or give back (+1) the CPUs of a job of ``gpus`` GPUs and ``cpus`` CPUs held on ``alloc``."""
        free_cpus = self.free_cpus
        for node, g in alloc:
            free_cpus[node] += sign * cpu_share(cpus, g, gpus)
