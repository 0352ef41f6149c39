"""Placements that split jobs freely: first fit in node order, and first fit in a seeded random node order."""

from __future__ import annotations

import random

from dlcluster.sim.cluster import Allocation, VCState


def fill(free: list[int], order: list[int] | range, gpus: int) -> Allocation:
    """Take free GPUs node by node in ``order`` until ``gpus`` are held (the caller checked they exist)."""
    alloc: Allocation = []
    for node in order:
        f = free[node]
        if f:
            take = min(gpus, f)
            alloc.append((node, take))
            gpus -= take
            if gpus == 0:
                break
    return alloc


class FirstFit:
    """The first nodes in index order with free GPUs, splitting the job across them as needed."""

    name = "first-fit"
    sized = True  # the answer depends only on the free GPUs per node and the job's size
    help = "first nodes (index order) with free GPUs; jobs are split across nodes freely"

    def place(self, state: VCState, gpus: int, waited: int = 0, cpus: int = 0) -> Allocation | None:
        """First-fit gang placement or None."""
        free = state.usable(gpus, cpus)
        return None if free is None else fill(free, range(len(free)), gpus)


class RandomFit:
    """Free GPUs taken node by node in a random node order drawn for each placement (seeded)."""

    name = "random"
    sized = True  # the answer depends only on the free GPUs per node and the job's size
    help = "nodes in a random order (seeded by --seed), split freely; same seed, same placements"

    def __init__(self, seed: str) -> None:
        # a str seed is hashed with SHA-512 by `random`, so it does not depend on PYTHONHASHSEED
        self.rng = random.Random(seed)

    def place(self, state: VCState, gpus: int, waited: int = 0, cpus: int = 0) -> Allocation | None:
        """Random-order gang placement or None."""
        free = state.usable(gpus, cpus)
        if free is None:
            return None
        nodes = [n for n, f in enumerate(free) if f]
        self.rng.shuffle(nodes)
        return fill(free, nodes, gpus)

    def gpus_fit(self, state: VCState, gpus: int, waited: int = 0) -> bool:
        """Whether :meth:`place` would place ``gpus`` GPUs (CPUs not counted), without drawing from the seed."""
        return state.usable(gpus, 0) is not None
