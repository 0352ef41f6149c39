"""Locality relaxation (delay scheduling): wait up to T seconds for a consolidated placement, then split."""

from __future__ import annotations

from dlcluster.sim.cluster import Allocation, VCState
from dlcluster.sim.placement.consolidate import Consolidate
from dlcluster.sim.placement.spread import FirstFit

DEFAULT_RELAX_AFTER = 600  # seconds


class Relax:
    """Consolidate while the job has waited less than ``relax_after`` seconds since submit; then first fit too."""

    name = "relax"
    help = (f"consolidate; a job that has waited T s since submit also accepts a split first-fit placement "
            f"(relax:T, default {DEFAULT_RELAX_AFTER})")

    def __init__(self, relax_after: int = DEFAULT_RELAX_AFTER) -> None:
        # the scheduling cycle reads this to wake up at submit + relax_after
        self.relax_after = relax_after
        self.name = f"relax:{relax_after}"
        # relax:0 is consolidate-else-first-fit, whatever the wait: its answer depends only on free GPUs and size
        self.sized = relax_after == 0
        self._tight, self._loose = Consolidate().place, FirstFit().place

    def place(self, state: VCState, gpus: int, waited: int = 0, cpus: int = 0) -> Allocation | None:
        """Consolidated placement, or after the wait any placement."""
        alloc = self._tight(state, gpus, 0, cpus)
        if alloc is None and waited >= self.relax_after:
            return self._loose(state, gpus, 0, cpus)
        return alloc
