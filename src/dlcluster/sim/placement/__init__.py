"""Placements: where a job's GPUs go. Registry by name.

A placement is an object with ``name``, a one-line ``help`` and
``place(state, gpus) -> Allocation | None``: a feasible gang allocation on the
:class:`~dlcluster.sim.cluster.VCState` (it must not modify the state) or ``None`` when
the job does not fit now. Placements may assume ``gpus <= state.total``: jobs that could
never fit are excluded before the run.
"""

from __future__ import annotations

from typing import Protocol

from dlcluster.errors import ConfigError
from dlcluster.sim.cluster import Allocation, VCState
from dlcluster.sim.placement.consolidate import ArtifactConsolidate, Consolidate


class Placement(Protocol):
    """Where a job runs."""

    name: str
    help: str

    def place(self, state: VCState, gpus: int) -> Allocation | None:
        """A feasible allocation of ``gpus`` GPUs, or None."""
        ...


PLACEMENTS: dict[str, type] = {"consolidate": Consolidate}
COMPAT_PLACEMENTS: dict[str, type] = {"consolidate": ArtifactConsolidate}


def get_placement(name: str, *, compat: bool = False) -> Placement:
    """A fresh placement by name (the artifact's variant in compatibility mode)."""
    table = COMPAT_PLACEMENTS if compat else PLACEMENTS
    if name not in table:
        raise ConfigError(f"unknown placement {name!r}{' in compatibility mode' if compat else ''}; "
                          f"choose one of: {', '.join(table)}")
    return table[name]()
