"""Node power: states a power manager uses, a per-node power model, and the energy of a run.

A node is ``off``, ``booting`` or ``on`` (idle or busy: the job table tells which); only an
``on`` node hosts jobs (see :mod:`dlcluster.sim.cluster`). Energy is exact over the run's
window, from the first submit to the last end: every node's time in each state times that
state's power, plus every busy GPU-second times the extra power of a busy GPU.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

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
    path = Path(path)
    try:
        data: dict[str, Any] = tomllib.loads(path.read_text())
    except FileNotFoundError:
        raise InputError("no such file", path=path) from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise InputError(f"not a TOML file: {exc}", path=path) from None
    known = {f.name for f in fields(PowerModel)}
    for key in data:
        if key not in known:
            raise InputError(f"unknown setting (known: {', '.join(sorted(known))})", path=path, field=key)
    if boot_seconds is not None:
        data["boot_seconds"] = boot_seconds
    try:
        return PowerModel(**data)
    except ConfigError as exc:
        raise InputError(str(exc).removeprefix("power model: "), path=path) from None


def state_seconds(log: list[tuple[int, int, int, str]], start: int, end: int) -> dict[tuple[int, int], dict[str, int]]:
    """Per (group, node) that changed state: seconds spent in each state within [start, end) (``on`` before any
    change). ``log`` is the run's node-state record, (time, group, node, state) in time order."""
    per_node: dict[tuple[int, int], list[tuple[int, str]]] = {}
    for t, g, node, state in log:
        per_node.setdefault((g, node), []).append((t, state))
    out = {}
    for key, changes in per_node.items():
        spent: dict[str, int] = {}
        state, since = "on", start
        for t, new in changes:
            t = min(max(t, start), end)
            spent[state] = spent.get(state, 0) + t - since
            state, since = new, t
        spent[state] = spent.get(state, 0) + end - since
        out[key] = spent
    return out


def energy(model: PowerModel, sizes: list[tuple[int, ...]], log: list[tuple[int, int, int, str]],
           busy_gpu_seconds: float, start: int, end: int) -> dict[str, Any]:
    """Energy of a run over [start, end): the nodes ``sizes`` (per group, GPUs per node), their state ``log`` and
    the GPU-seconds jobs held; beside it the same run with every node always on."""
    window = max(0, end - start)
    changed = state_seconds(log, start, end)
    joules = busy_gpu_seconds * (model.gpu_busy_watts - model.gpu_idle_watts)
    always_on = joules
    seconds = {"on": 0, OFF: 0, BOOTING: 0}
    for g, nodes in enumerate(sizes):
        for node, gpus in enumerate(nodes):
            idle = model.idle_watts(gpus)
            always_on += idle * window
            spent = changed.get((g, node), {"on": window})
            for state, s in spent.items():
                seconds[state] = seconds.get(state, 0) + s
                joules += s * (model.off_watts if state == OFF else model.boot_watts if state == BOOTING else idle)
    wakeups = sum(1 for _, _, _, state in log if state == BOOTING)
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

