"""Node power: states a power manager uses, a per-node power model, and the energy of a run.

A node is ``off``, ``booting`` or ``on`` (idle or busy: the job table tells which); only an
``on`` node hosts jobs (see :mod:`dlcluster.sim.cluster`). Energy is exact over the run's
window, from the first submit to the last end: every node's time in each state times that
state's power, plus every busy GPU-second times the extra power of a busy GPU.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import numpy as np

from dlcluster.config_file import read_toml
from dlcluster.errors import ConfigError, InputError

OFF, BOOTING = "off", "booting"
JOULES_PER_KWH = 3.6e6


@dataclass(frozen=True, slots=True)
class PowerModel:
    """Watts of one node by state (defaults: an 8×V100 server, see docs/power.md) and its boot time.

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
            if not (isinstance(value, int | float) and value >= 0 and value == value):
                raise ConfigError(f"power model: {f.name} must be a number >= 0, got {value!r}")
        if self.gpu_busy_watts < self.gpu_idle_watts:
            raise ConfigError("power model: gpu_busy_watts must be at least gpu_idle_watts")

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


def energy(model: PowerModel, sizes: list[tuple[int, ...]], log: list[tuple[int, int, int, str]],
           busy_gpu_seconds: float, start: int, end: int) -> dict[str, Any]:
    """Energy of a run over [start, end): the nodes ``sizes`` (per group, GPUs per node), their state ``log`` and
    the GPU-seconds jobs held; beside it the same run with every node always on."""
    window = max(0, end - start)
    busy = busy_gpu_seconds * (model.gpu_busy_watts - model.gpu_idle_watts)
    idle = [[model.idle_watts(gpus) for gpus in nodes] for nodes in sizes]
    always_on = busy + window * sum(sum(w) for w in idle)
    seconds = {"on": float(window * sum(len(n) for n in sizes)), OFF: 0.0, BOOTING: 0.0}
    joules = always_on
    if log:
        # per node, each state lasts from its change to the node's next change (or the end); before its first
        # change the node was on. Joules = always on, minus the idle power of every non-on span, plus its own.
        times = np.clip(np.array([e[0] for e in log], dtype=np.int64), start, end)
        group = np.array([e[1] for e in log], dtype=np.int64)
        node = np.array([e[2] for e in log], dtype=np.int64)
        state = np.array([e[3] for e in log], dtype=object)
        order = np.lexsort((np.arange(len(log)), node, group))  # by node, in the order the changes happened
        times, group, node, state = times[order], group[order], node[order], state[order]
        same = np.append((group[1:] == group[:-1]) & (node[1:] == node[:-1]), False)
        until = np.where(same, np.append(times[1:], end), end)
        span = until - times
        seconds["on"] = float(window * sum(len(n) for n in sizes) - span.sum())  # the spans' own "on" comes below
        node_idle = np.array([idle[g][n] for g, n in zip(group.tolist(), node.tolist(), strict=True)])
        for name in np.unique(state).tolist():
            mine = state == name
            seconds[name] = seconds.get(name, 0.0) + float(span[mine].sum())
            if name in (OFF, BOOTING):  # any other state draws idle power, as counted in ``always_on``
                watts = model.off_watts if name == OFF else model.boot_watts
                joules += float((span[mine] * (watts - node_idle[mine])).sum())
    wakeups = sum(1 for entry in log if entry[3] == BOOTING)
    return {
        "energy_kwh": joules / JOULES_PER_KWH,
        "always_on_kwh": always_on / JOULES_PER_KWH,
        "saved_pct": 100.0 * (1 - joules / always_on) if always_on > 0 else None,
        "node_hours_on": seconds["on"] / 3600,
        "node_hours_off": seconds[OFF] / 3600,
        "node_hours_booting": seconds[BOOTING] / 3600,
        "wakeups": wakeups,
        "mean_powered_nodes": (seconds["on"] + seconds[BOOTING]) / window if window else None,
        "model": {f.name: getattr(model, f.name) for f in fields(model)},
        "window_seconds": window,
    }

