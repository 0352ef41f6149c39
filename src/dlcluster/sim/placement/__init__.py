"""Placements: where a job's GPUs go. Registry by name.

A placement is an object with ``name``, a one-line ``help`` and
``place(state, gpus, waited, cpus) -> Allocation | None``: a feasible gang allocation on the
:class:`~dlcluster.sim.cluster.VCState` (it must not modify the state) or ``None`` when
the job does not fit now; ``waited`` is the job's time since submit. ``cpus`` is the job's
CPU demand when the VC models CPUs (0 otherwise). A placement works on
``state.usable(gpus, cpus)``: per node, the GPUs the job could take now (free GPUs, capped
by free CPUs), or None when there are too few in all. Placements may assume the job fits
the empty VC: jobs that could never fit are excluded before the run. A placement whose
answer changes once a job has waited ``relax_after`` seconds sets that attribute, and the
cycle runs a pass at every such moment. A placement whose answer depends only on the free
GPUs per node and the job's GPU count sets ``sized = True``: a scheduling pass then tries
each size that failed only once. A sized placement that puts a job of at most the largest
node's GPUs on one node with room for it (so, when only one node has room, on that node) and
keeps no state of its own sets ``one_node = True``: a preemptive pass then places a job on
the node a single victim frees without calling it. A placement that needs to know which nodes hold multi-GPU
jobs sets ``isolates = True``: the VC then keeps ``VCState.multi`` (jobs of more than one
GPU per node) for it. A placement that keeps state of its own (a random one's seed) defines
``gpus_fit(state, gpus, waited) -> bool``, whether ``place`` would succeed with CPUs not
counted, without touching that state (else ``place`` is asked: a job short only of CPUs
preempts nobody).
"""

from __future__ import annotations

from typing import Protocol

from dlcluster.errors import ConfigError
from dlcluster.sim.cluster import Allocation, VCState
from dlcluster.sim.placement.consolidate import ArtifactConsolidate, Consolidate
from dlcluster.sim.placement.dedicated import Dedicated
from dlcluster.sim.placement.relax import Relax
from dlcluster.sim.placement.spread import FirstFit, RandomFit
from dlcluster.sim.policies import load_plugins, positive_seconds


class Placement(Protocol):
    """Where a job runs."""

    name: str
    help: str

    def place(self, state: VCState, gpus: int, waited: int = 0, cpus: int = 0) -> Allocation | None:
        """A feasible allocation of ``gpus`` GPUs (and their share of ``cpus`` CPUs), or None."""
        ...


PLACEMENTS: dict[str, type] = {"consolidate": Consolidate, "first-fit": FirstFit, "spread": FirstFit,
                               "random": RandomFit, "relax": Relax,
                               "dedicated": Dedicated}
COMPAT_PLACEMENTS: dict[str, type] = {"consolidate": ArtifactConsolidate}


def register_placement(cls: type) -> type:
    """Add a placement class (constructed without arguments) to the registry under ``cls.name``; a decorator."""
    name = getattr(cls, "name", "")
    if not name or not callable(getattr(cls, "place", None)):
        raise ConfigError(f"placement class {cls.__name__} needs a name and a place() method")
    PLACEMENTS[name] = cls
    return cls


def get_placement(name: str, *, compat: bool = False, seed: int = 0, group: str = "") -> Placement:
    """A fresh placement by name (``relax:T`` sets T; the artifact's variant in compatibility mode).

    ``seed`` and ``group`` seed a random placement, so every VC draws its own reproducible sequence.
    """
    table = COMPAT_PLACEMENTS if compat else PLACEMENTS
    base, sep, arg = name.partition(":")
    if base not in table and not compat:
        load_plugins("dlcluster.placements", register_placement)
    if base not in table:
        raise ConfigError(f"unknown placement {base!r}{' in compatibility mode' if compat else ''}; "
                          f"choose one of: {', '.join(table)}")
    cls = table[base]
    if sep and cls is not Relax:
        raise ConfigError(f"placement {base!r} takes no parameter (got {name!r})")
    if cls is Relax:
        # relax:0 splits at once when consolidation fails (and never needs a wake-up)
        return Relax(positive_seconds(arg, f"placement {name!r} (relax_after)", minimum=0)) if sep else Relax()
    if cls is RandomFit:
        return RandomFit(f"{seed}:{group}")
    placement: Placement = cls()
    return placement
