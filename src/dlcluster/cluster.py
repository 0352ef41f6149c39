"""Cluster spec: virtual clusters, each a list of nodes with a GPU (and CPU) count."""

from __future__ import annotations

from dataclasses import dataclass, field

import polars as pl

from dlcluster.errors import ConfigError


@dataclass(frozen=True)
class ClusterSpec:
    """Virtual clusters → node GPU counts (heterogeneous sizes allowed).

    ``vcs`` maps a VC name to a tuple with one entry per node: that node's GPU count.
    ``cpus_per_gpu`` optionally models CPUs (nodes get ``gpus * cpus_per_gpu`` cores).
    """

    vcs: dict[str, tuple[int, ...]]
    cpus_per_gpu: int | None = None
    source: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        for vc, nodes in self.vcs.items():
            if any(g < 0 for g in nodes):
                raise ConfigError(f"cluster spec {self.source or ''}: VC {vc!r} has a node with a negative GPU count")

    @classmethod
    def uniform(cls, nodes_per_vc: dict[str, int], gpus_per_node: int = 8, source: str = "") -> ClusterSpec:
        """Build a spec where every node has ``gpus_per_node`` GPUs."""
        return cls({vc: (gpus_per_node,) * int(n) for vc, n in nodes_per_vc.items()}, source=source)

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

    def largest_node(self, vc: str) -> int:
        """GPU count of the VC's largest node (0 for an empty VC)."""
        return max(self.vcs[vc], default=0)

    def pooled(self, name: str = "all") -> ClusterSpec:
        """The whole cluster as one shared VC (no isolation between VCs)."""
        nodes = tuple(g for vc in sorted(self.vcs) for g in self.vcs[vc])
        return ClusterSpec({name: nodes}, self.cpus_per_gpu, self.source)

    def to_frame(self) -> pl.DataFrame:
        """One row per node: ``vc, node, gpus``."""
        rows = [(vc, i, g) for vc, nodes in self.vcs.items() for i, g in enumerate(nodes)]
        return pl.DataFrame(rows, schema={"vc": pl.String, "node": pl.Int32, "gpus": pl.Int32}, orient="row")
