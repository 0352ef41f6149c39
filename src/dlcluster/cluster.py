"""Cluster spec: virtual clusters, each a list of nodes with a GPU (and optionally CPU) count."""

from __future__ import annotations

from dataclasses import dataclass, field

import polars as pl

from dlcluster.errors import ConfigError

# the largest cluster dlcluster builds (docs/errors.md, "Limits"): checked before any node is built
MAX_NODES = 100_000
MAX_GPUS_PER_NODE = 1_024
MAX_CPUS_PER_NODE = 1_000_000


@dataclass(frozen=True)
class ClusterSpec:
    """Virtual clusters → node GPU counts (heterogeneous sizes allowed), and optionally node CPU counts.

    ``vcs`` maps a VC name to a tuple with one entry per node: that node's GPU count.
    ``cpus``, when known, has the same shape: each node's CPU count (None: CPUs not modelled).
    """

    vcs: dict[str, tuple[int, ...]]
    cpus: dict[str, tuple[int, ...]] | None = None
    source: str = field(default="", compare=False)
    # VCs the source names without GPUs (a Helios day's 0), left out of ``vcs``: their jobs are told so
    empty: frozenset[str] = field(default=frozenset(), compare=False)

    def __post_init__(self) -> None:
        where = f"cluster spec {self.source}" if self.source else "cluster spec"
        for vc, nodes in self.vcs.items():
            if any(g < 0 for g in nodes):
                raise ConfigError(f"{where}: VC {vc!r} has a node with a negative GPU count")
        if self.cpus is None:
            return
        if set(self.cpus) != set(self.vcs):
            raise ConfigError(f"{where}: CPU counts are given for VCs {sorted(self.cpus)}, GPUs for {sorted(self.vcs)}")
        # same VC order as ``vcs``, so that per-node tables line up
        object.__setattr__(self, "cpus", {vc: tuple(self.cpus[vc]) for vc in self.vcs})
        for vc, cpus in self.cpus.items():
            if len(cpus) != len(self.vcs[vc]):
                raise ConfigError(f"{where}: VC {vc!r} has {len(self.vcs[vc])} nodes but {len(cpus)} CPU counts")
            if any(c < 0 for c in cpus):
                raise ConfigError(f"{where}: VC {vc!r} has a node with a negative CPU count")

    @classmethod
    def uniform(cls, nodes_per_vc: dict[str, int], gpus_per_node: int = 8, source: str = "") -> ClusterSpec:
        """Build a spec where every node has ``gpus_per_node`` GPUs."""
        return cls({vc: (gpus_per_node,) * int(n) for vc, n in nodes_per_vc.items()}, source=source)

    def with_cpus_per_gpu(self, cpus_per_gpu: int) -> ClusterSpec:
        """The same nodes, each with ``cpus_per_gpu`` × its GPUs CPUs."""
        if cpus_per_gpu < 0:
            raise ConfigError(f"CPUs per GPU must not be negative, got {cpus_per_gpu}")
        largest = max((g for nodes in self.vcs.values() for g in nodes), default=0)
        if largest * cpus_per_gpu > MAX_CPUS_PER_NODE:
            raise ConfigError(f"--cpus-per-gpu {cpus_per_gpu:,}: a node of {largest} GPUs would have "
                              f"{largest * cpus_per_gpu:,} CPUs; at most {MAX_CPUS_PER_NODE:,} are supported")
        cpus = {vc: tuple(g * cpus_per_gpu for g in nodes) for vc, nodes in self.vcs.items()}
        return ClusterSpec(self.vcs, cpus, self.source, self.empty)

    def gpus(self, vc: str) -> int:
        """Total GPUs of one VC."""
        return sum(self.vcs[vc])

    @property
    def total_gpus(self) -> int:
        """Total GPUs over all VCs."""
        return sum(sum(n) for n in self.vcs.values())

    @property
    def total_nodes(self) -> int:
        """Total nodes over all VCs."""
        return sum(len(n) for n in self.vcs.values())

    def pooled(self, name: str = "all") -> ClusterSpec:
        """The whole cluster as one shared VC (no isolation between VCs)."""
        order = sorted(self.vcs)
        nodes = tuple(g for vc in order for g in self.vcs[vc])
        cpus = None if self.cpus is None else {name: tuple(c for vc in order for c in self.cpus[vc])}
        return ClusterSpec({name: nodes}, cpus, self.source)

    def to_frame(self) -> pl.DataFrame:
        """One row per node: ``vc, node, gpus`` (and ``cpus`` when known)."""
        rows = [(vc, i, g) for vc, nodes in self.vcs.items() for i, g in enumerate(nodes)]
        frame = pl.DataFrame(rows, schema={"vc": pl.String, "node": pl.Int32, "gpus": pl.Int32}, orient="row")
        if self.cpus is None:
            return frame
        return frame.with_columns(pl.Series("cpus", [c for cpus in self.cpus.values() for c in cpus], pl.Int32))
