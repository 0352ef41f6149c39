"""Compatibility with the Helios SC'21 artifact: every quirk in one place (:data:`HELIOS_ARTIFACT`).

Input preparation: wall-clock seconds, window, time origin, tie order.

The artifact read naive wall-clock timestamps as UTC, sorted the whole trace by them
with pandas' default (non-stable) quicksort, filtered, shifted times so that the first
kept job is at 0, and sorted once more with the same quicksort. Every later sort in the
artifact is stable, so the order produced here is the final tie-breaker of every policy.
pandas' quicksort is NumPy's ``argsort(kind="quicksort")``: the first sort ran on
``datetime64[ns]``, the second on the integer seconds.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

from dlcluster.cluster import ClusterSpec
from dlcluster.errors import ConfigError
from dlcluster.sim.framework import Order
from dlcluster.sim.jobs import Jobs
from dlcluster.trace import local_datetime


def wall_seconds(utc: pl.Expr, timezone: str) -> pl.Expr:
    """UTC epoch seconds → the source's wall clock, read as if it were UTC (what the artifact did)."""
    return local_datetime(utc, timezone).dt.replace_time_zone(None).dt.epoch("s")


def artifact_order(jobs: pl.DataFrame, keep: pl.Expr, window: tuple[int, int] | None) -> tuple[pl.DataFrame, int]:
    """Jobs the artifact simulates, in its internal arrival order, with ``submit`` from the origin.

    ``jobs`` holds the whole trace in file order with a wall-clock ``wall`` column (the
    first sort runs over every row, even those filtered away later); ``keep`` selects
    simulated rows (GPU jobs of known VCs); ``window`` is ``(start, end)`` in wall-clock
    seconds. Returns the ordered jobs and the origin (wall-clock seconds).
    """
    # the conversion to the artifact's input file was a stable sort by submit time
    stable = jobs.sort("wall", maintain_order=True)
    ns = stable["wall"].to_numpy().astype("datetime64[s]").astype("datetime64[ns]")
    shuffled = stable[np.argsort(ns, kind="quicksort")]
    if window is not None:
        keep = keep & (pl.col("wall") >= window[0])
    kept = shuffled.filter(keep)
    if kept.height == 0:
        return kept.with_columns(pl.col("wall").alias("submit")), 0
    origin = int(kept["wall"][0])
    kept = kept.with_columns((pl.col("wall") - origin).alias("submit"))
    if window is not None:
        kept = kept.filter(pl.col("submit").is_between(0, window[1] - window[0]))
    return kept[np.argsort(kept["submit"].to_numpy(), kind="quicksort")], origin


def _quasi_order(key: list[float], gpu: list[int]) -> Order:
    """QSSF's "quasi" order: by GPU count, re-sorted by estimated GPU time only when older jobs wait too."""

    def order(queue: list[int], now: int, arrived: int) -> None:
        queue.sort(key=gpu.__getitem__)
        if len(queue) > arrived:
            queue.sort(key=key.__getitem__)

    return order


@dataclass(frozen=True)
class ArtifactProfile:
    """The artifact's behaviour, apart from input preparation (above) and its consolidate placer (placement).

    - policies: only the four it implements;
    - SRTF ends every job one second late (its tick loop): one more second of work;
    - QSSF sorts by GPU count, and by estimated GPU time only when jobs older than this second wait;
    - preemption admits jobs by priority within the VC's GPU count, ignoring placement;
    - VCs are whole nodes of one size (``GPUs // 8``): smaller remainder nodes do not exist.
    """

    name: str = "helios-artifact"
    policies: tuple[str, ...] = ("fifo", "sjf", "qssf", "srtf")

    def check(self, policy: str) -> None:
        """Reject a policy the artifact does not have."""
        if policy not in self.policies:
            raise ConfigError(f"policy {policy!r} does not exist in compatibility mode {self.name}; "
                              f"choose one of: {', '.join(self.policies)}")

    def extra_seconds(self, policy: str) -> int:
        """Seconds added to every job's work."""
        return 1 if policy == "srtf" else 0

    def order(self, policy: str, jobs: Jobs) -> Order | None:
        """The queue order that replaces the policy's own, or None."""
        if policy != "qssf":
            return None
        assert jobs.estimate is not None
        return _quasi_order([e * g for e, g in zip(jobs.estimate, jobs.gpu, strict=True)], jobs.gpu)

    @staticmethod
    def whole_nodes(spec: ClusterSpec) -> ClusterSpec:
        """Keep only the nodes of the largest size in every VC (the artifact's ``GPUs // 8``)."""
        size = max((g for nodes in spec.vcs.values() for g in nodes), default=0)
        whole = {vc: [n for n, g in enumerate(nodes) if g == size] for vc, nodes in spec.vcs.items()}
        return ClusterSpec({vc: tuple(spec.vcs[vc][n] for n in keep) for vc, keep in whole.items()},
                           None if spec.cpus is None else {vc: tuple(spec.cpus[vc][n] for n in keep)
                                                           for vc, keep in whole.items()}, spec.source)


HELIOS_ARTIFACT = ArtifactProfile()
COMPAT_MODES = {HELIOS_ARTIFACT.name: HELIOS_ARTIFACT}
