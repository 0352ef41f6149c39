"""Best-fit consolidation: a job that fits one node never spans two."""

from __future__ import annotations

from typing import ClassVar

from mypy_extensions import mypyc_attr

from dlcluster.sim.cluster import Allocation, VCState


def _best_fit(free: list[int], gpus: int, largest: int) -> int:
    """Index of the node with the fewest free GPUs that still has ``gpus`` (lowest index on ties), or -1."""
    for f in range(gpus, largest + 1):
        if f in free:  # a C-level scan of a short list beats a Python loop
            return free.index(f)
    return -1


def best_fit_node(state: VCState, gpus: int, largest: int) -> Allocation | None:
    """Best fit of a job without CPUs on one node of ``state`` (``gpus`` at most ``largest``, the largest node), by
    the VC's free-GPU counts: one call per placement, the hot path of every consolidated run."""
    if state.free_total < gpus:
        return None
    by_free, counts = state.by_free, state.free_bytes or state.free  # (the same index, by memchr)
    if by_free[gpus]:  # an exact fit (the common case under preemption: the GPUs a victim freed)
        return [(counts.index(gpus), gpus)]
    for f in range(gpus + 1, largest + 1):
        if by_free[f]:
            return [(counts.index(f), gpus)]
    return None


def consolidate_on(free: list[int], sizes: tuple[int, ...], gpus: int, largest: int) -> Allocation | None:
    """The consolidate rule on nodes with ``free`` GPUs (of ``sizes``): best fit on one node when the job fits the
    largest; else whole free nodes (largest first) and the remainder on the best-fitting node, or spread over the
    emptiest nodes if none holds it."""
    if gpus <= largest:
        node = _best_fit(free, gpus, largest)
        return None if node < 0 else [(node, gpus)]
    if sum(free) < gpus:
        return None
    rest = list(free)
    alloc: Allocation = []
    need = gpus
    for node in sorted((n for n, f in enumerate(free) if f == sizes[n] and f > 0), key=lambda n: -sizes[n]):
        if sizes[node] <= need:
            alloc.append((node, sizes[node]))
            need -= sizes[node]
            rest[node] = 0
    if need == 0:
        return alloc
    node = _best_fit(rest, need, largest)
    if node >= 0:
        return [*alloc, (node, need)]
    for node in sorted(range(len(rest)), key=lambda n: -rest[n]):
        if need == 0 or rest[node] == 0:
            break
        take = min(need, rest[node])
        alloc.append((node, take))
        need -= take
    return alloc if need == 0 else None


@mypyc_attr(allow_interpreted_subclasses=True)  # (compiled by setup.py; plug-ins may subclass it)
class Consolidate:
    """Best fit on one node when the job fits the largest node; else whole free nodes plus a best-fit remainder."""

    name: ClassVar[str] = "consolidate"
    sized: ClassVar[bool] = True  # the answer depends only on the free GPUs per node and the job's size
    one_node: ClassVar[bool] = True  # a job that fits a node goes on one node with room for it
    help: ClassVar[str] = ("best fit on one node; larger jobs take whole free nodes (largest first) and best-fit "
                           "the rest")

    def place(self, state: VCState, gpus: int, waited: int = 0, cpus: int = 0) -> Allocation | None:
        """Consolidated gang placement or None."""
        sizes, largest = state.sizes, state.largest
        if not cpus and gpus <= largest:  # the common case (a preemptive pass places once per preemption)
            return best_fit_node(state, gpus, largest)
        free = state.usable(gpus, cpus)
        return None if free is None else consolidate_on(free, sizes, gpus, largest)


@mypyc_attr(allow_interpreted_subclasses=True)
class ArtifactConsolidate:
    """The Helios artifact's consolidate placer, rule for rule (homogeneous nodes)."""

    name: ClassVar[str] = "consolidate"
    sized: ClassVar[bool] = True  # the answer depends only on the free GPUs per node and the job's size
    help: ClassVar[str] = "the SC'21 artifact's consolidate placer (compatibility mode)"

    def place(self, state: VCState, gpus: int, waited: int = 0, cpus: int = 0) -> Allocation | None:
        """The artifact's placement or None."""
        size = state.sizes[0]
        if not cpus and gpus <= size:  # (every node has this size: the VC's free-GPU counts give the best fit)
            return best_fit_node(state, gpus, size)
        free = state.usable(gpus, cpus)
        if free is None:
            return None
        if gpus <= size:
            node = _best_fit(free, gpus, size)
            return None if node < 0 else [(node, gpus)]
        # candidates: nodes with a free GPU, most free first, node index breaking ties
        order = sorted((n for n, f in enumerate(free) if f > 0), key=lambda n: -free[n])
        whole, rem = divmod(gpus, size)
        needed = whole + (1 if rem else 0)
        alloc: Allocation = []
        for node in order:
            if len(alloc) == needed - 1 and rem:
                return [*alloc, (node, rem)] if free[node] >= rem else None
            if free[node] < size:
                return None
            alloc.append((node, size))
            if len(alloc) == needed:
                return alloc
        return None
