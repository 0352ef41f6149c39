"""Node power: states a power manager uses, a per-node power model, and the energy of a run.

A node is ``off``, ``booting`` or ``on`` (idle or busy: the job table tells which); only an
``on`` node hosts jobs (see :mod:`dlcluster.sim.cluster`). Energy is exact over the run's
window, from the first submit to the last end: every node's time in each state times that
state's power, plus every busy GPU-second times the extra power of a busy GPU.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import polars as pl

from dlcluster.cluster import ClusterSpec
from dlcluster.config_file import read_toml
from dlcluster.errors import ConfigError, InputError
from dlcluster.sim.cluster import ON

OFF, BOOTING = "off", "booting"
JOULES_PER_KWH = 3.6e6


MAX_BOOT_SECONDS = 86_400
MAX_WATTS = 1_000_000  # a megawatt per node or GPU and state: far above any server, and energy stays finite


@dataclass(frozen=True, slots=True)
class PowerModel:
    """Watts of one node by state (defaults: an 8×V100 server, see docs/ces.md, "Power model and energy") and its
    boot time.

    An ``on`` node draws ``node_watts`` plus ``gpu_idle_watts`` per GPU, and ``gpu_busy_watts - gpu_idle_watts``
    more per GPU a job holds.
    """

    node_watts: float = 500.0  # chassis, CPUs, memory, fans, network of a powered node
    gpu_idle_watts: float = 50.0
    gpu_busy_watts: float = 300.0  # a V100 SXM2 at its TDP: an upper bound for training
    off_watts: float = 20.0  # the management controller of a node that is off
    boot_watts: float = 900.0  # CPUs busy, GPUs initialising
    boot_seconds: int = 300  # from power-on to accepting jobs (firmware, OS, health checks, scheduler)

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, bool) or not (isinstance(value, int | float) and 0 <= value < math.inf):
                raise ConfigError(f"power model: {f.name} must be a finite number >= 0, got {value!r}")
            if f.name.endswith("_watts") and value > MAX_WATTS:  # (a finite but huge value overflows the energy)
                raise ConfigError(f"power model: {f.name} must be at most {MAX_WATTS:,} W, got {value!r}")
        if not isinstance(self.boot_seconds, int):  # (the clock counts whole seconds)
            raise ConfigError(f"power model: boot_seconds must be a whole number of seconds, got {self.boot_seconds!r}")
        if self.gpu_busy_watts < self.gpu_idle_watts:
            raise ConfigError("power model: gpu_busy_watts must be at least gpu_idle_watts")
        if self.boot_seconds > MAX_BOOT_SECONDS:  # a controller keeps ticking until every boot is over
            raise ConfigError(f"power model: boot_seconds must be at most {MAX_BOOT_SECONDS:,} (one day), "
                              f"got {self.boot_seconds:,}")

    def idle_watts(self, gpus: int) -> float:
        """Power of an idle ``on`` node with ``gpus`` GPUs."""
        return self.node_watts + gpus * self.gpu_idle_watts


def read_power_model(path: str | Path, boot_seconds: int | None = None) -> PowerModel:
    """A power model from a TOML file of :class:`PowerModel` fields (missing ones keep their defaults)."""
    data = read_toml(path, (f.name for f in fields(PowerModel)))
    if boot_seconds is not None:
        data["boot_seconds"] = boot_seconds
    try:
        return PowerModel(**data)
    except ConfigError as exc:
        raise InputError(str(exc).removeprefix("power model: "), path=path) from None


NEVER, EVER = -(2**62), 2**62  # before a node's first change, and after its last
NODE_STATES_SCHEMA = {"time": pl.Int64, "vc": pl.String, "node": pl.Int32, "state": pl.String}


def node_spans(log: pl.DataFrame) -> pl.DataFrame:
    """Each state of each node that changed state (``log``: ``time, vc, node, state`` in the order the changes
    happened), held from ``time`` until the node's next change (``until``; EVER after its last). Before its first
    change a node was on: a span from NEVER."""
    # a stable sort keeps the changes of one second in order, so the last of them holds
    held = log.sort("vc", "node", maintain_order=True).with_columns(
        pl.col("time").shift(-1).over("vc", "node").fill_null(EVER).alias("until"))
    first = held.group_by("vc", "node", maintain_order=True).agg(pl.col("time").min().alias("until")).with_columns(
        pl.lit(NEVER).alias("time"), pl.lit(ON).alias("state"))
    return pl.concat([held, first.select(held.columns)])


def energy(model: PowerModel, cluster: ClusterSpec, spans: pl.DataFrame, busy_gpu_seconds: float, start: int,
           end: int) -> dict[str, Any]:
    """Energy of a run over [start, end): the nodes of ``cluster``, the state ``spans`` of those that changed state
    (:func:`node_spans`) and the GPU-seconds jobs held; beside it the same run with every node always on."""
    window = max(0, end - start)
    nodes = cluster.to_frame().select("vc", "node", (model.node_watts + pl.col("gpus") * model.gpu_idle_watts)
                                      .alias("idle_watts"))
    always_on = busy_gpu_seconds * (model.gpu_busy_watts - model.gpu_idle_watts) + window * float(
        nodes["idle_watts"].sum())
    # each span's seconds within the window; joules = always on, minus the idle power of every off or booting
    # span, plus its own (any other state draws idle power, as ``always_on`` counts it)
    held = spans.with_columns((pl.min_horizontal("until", end) - pl.max_horizontal("time", start)).clip(0)
                              .alias("seconds")).join(nodes, on=["vc", "node"], how="left")
    watts = pl.when(pl.col("state") == OFF).then(model.off_watts).when(pl.col("state") == BOOTING) \
        .then(model.boot_watts).otherwise(pl.col("idle_watts"))
    extra = float(held.select(((watts - pl.col("idle_watts")) * pl.col("seconds")).sum()).item() or 0.0)
    joules = always_on + extra
    seconds = dict(held.group_by("state").agg(pl.col("seconds").sum()).iter_rows())
    changed = held.select("vc", "node").n_unique() if held.height else 0
    seconds[ON] = seconds.get(ON, 0) + window * (nodes.height - changed)  # nodes that never changed state
    return {
        "energy_kwh": joules / JOULES_PER_KWH,
        "always_on_kwh": always_on / JOULES_PER_KWH,
        "saved_pct": 100.0 * (1 - joules / always_on) if always_on > 0 else None,
        "node_hours_on": seconds[ON] / 3600,
        "node_hours_off": seconds.get(OFF, 0) / 3600,
        "node_hours_booting": seconds.get(BOOTING, 0) / 3600,
        "wakeups": spans.filter(pl.col("state") == BOOTING).height,
        "mean_powered_nodes": (seconds[ON] + seconds.get(BOOTING, 0)) / window if window else None,
        "model": {f.name: getattr(model, f.name) for f in fields(model)},
        "window_seconds": window,
    }
