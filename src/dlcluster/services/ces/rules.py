"""Node controllers: given the demand so far and forecasts, how many nodes to keep powered at each step.

A controller sees, at step ``i``, the busy nodes ``used[0..i]`` and the nodes powered now; it
may ask for its forecasts (computed only when asked, from the demand known at ``i``) and
answers the nodes to keep powered from now on. The same controllers drive the open-loop
replay of a demand series and the simulator's power manager.

- :class:`HeliosRule` is the Helios study's rule (see ``helios-artifact-semantics.md`` §4):
  power nodes off when demand has dropped below its recent mean and is forecast to stay
  low; wake them only when demand exceeds the powered nodes.
- :class:`QuantileRule` is dlcluster's: keep powered the ``1 - risk`` quantile of the
  forecast *peak* demand over the next ``lookahead`` steps plus a small margin, and wake
  nodes *before* the forecast peak rather than after a shortage.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Protocol

from dlcluster.errors import ConfigError
from dlcluster.predict.forecast import Target
from dlcluster.services.ces.params import PRESETS, RuleParams

Forecast = Callable[[], Sequence[float]]  # the controller's targets, forecast at the current step
MIN_RISK = 1e-6  # LightGBM refuses quantiles nearer 0 or 1 than about 1e-8 (its alpha goes through a short string)


class Controller(Protocol):
    """A node controller (see the module docstring)."""

    targets: tuple[Target, ...]  # what it forecasts
    quantile: float | None  # the quantile its forecasts are of (None: their expectation)

    def initial(self, used: float, total: int) -> int:
        """Nodes to power when control starts with demand ``used``."""
        ...

    def describe(self) -> dict[str, object]:
        """The rule's name and settings (for a run's summary)."""
        ...

    def step(self, i: int, used: Sequence[float], powered: int, total: int, forecast: Forecast) -> int:
        """Nodes to keep powered from step ``i`` on, given the demand ``used[0..i]`` and ``powered`` nodes now."""
        ...


@dataclass
class HeliosRule:
    """The study's rule with its per-cluster hyperparameters; forecasts are of the demand's mean over the next
    ``future`` and ``2 × future`` steps (the origin's known value included, as in the artifact)."""

    params: RuleParams
    quantile: float | None = None
    targets: tuple[Target, ...] = field(init=False)
    stable_until: int = field(default=0, init=False)

    def __post_init__(self) -> None:
        f = self.params.future
        self.targets = (Target(0, f), Target(0, 2 * f))

    def initial(self, used: float, total: int) -> int:
        """Demand plus the buffer (as the artifact's first steps)."""
        return min(total, math.ceil(used) + self.params.buffer)

    def describe(self) -> dict[str, object]:
        """``helios`` and its hyperparameters."""
        return {"rule": "helios", **asdict(self.params)}

    def step(self, i: int, used: Sequence[float], powered: int, total: int, forecast: Forecast) -> int:
        """One step of the rule (see the module docstring)."""
        p, u = self.params, used[i]
        if i < p.history:  # too little history to judge a trend
            return self.initial(u, total)
        active = powered
        if active < u:  # a shortage: wake up to demand plus the buffer, and hold for ``keep`` steps
            active = math.ceil(u) + p.buffer
            self.stable_until = i + p.keep
        active = min(active, total)
        dropped = sum(used[i - p.history: i]) / p.history - u
        if dropped >= p.his_threshold and i >= self.stable_until:
            near, far = forecast()
            # demand is forecast to stay low, and not to rise again later
            if u - near >= p.fut_threshold and not near < far:
                target = min(active, math.ceil(u) + p.buffer)
                if active - target >= p.de_threshold:
                    active = target
        return active


@dataclass
class QuantileRule:
    """Keep powered the ``1 - risk`` quantile of the forecast peak over the next ``lookahead`` steps plus ``margin``.

    Wakes nodes as soon as that level rises (nodes boot before the peak, not after a shortage); powers nodes off
    when it is at least ``de_threshold`` below the powered nodes, but not within ``keep`` steps of a wake-up.
    """

    risk: float = 0.01
    lookahead: int = 6
    margin: int = 2
    de_threshold: int = 8
    keep: int = 12
    headroom: int = 4  # extra nodes woken with every wake-up (fewer, larger wake-ups)
    targets: tuple[Target, ...] = field(init=False)
    quantile: float | None = field(init=False)
    stable_until: int = field(default=0, init=False)

    def __post_init__(self) -> None:
        if not MIN_RISK <= self.risk <= 1 - MIN_RISK:
            raise ConfigError(f"--risk must be from {MIN_RISK:g} to {1 - MIN_RISK:g} (a probability of shortage), "
                              f"got {self.risk}")
        if self.lookahead < 1 or self.margin < 0 or self.keep < 0 or self.de_threshold < 1:
            raise ConfigError("lookahead and de_threshold must be at least 1, margin and keep at least 0")
        self.targets = (Target(1, self.lookahead + 1, "max"),)
        self.quantile = 1 - self.risk

    def initial(self, used: float, total: int) -> int:
        """Demand plus the margin."""
        return min(total, math.ceil(used) + self.margin)

    def describe(self) -> dict[str, object]:
        """``quantile`` and its settings."""
        return {"rule": "quantile", **{k: getattr(self, k) for k in (
            "risk", "lookahead", "margin", "de_threshold", "keep", "headroom")}}

    def step(self, i: int, used: Sequence[float], powered: int, total: int, forecast: Forecast) -> int:
        """One step of the rule (see the class docstring)."""
        u = math.ceil(used[i])
        (peak,) = forecast()
        need = min(total, max(u, math.ceil(peak - 1e-9)) + self.margin)
        if need > powered:
            self.stable_until = i + self.keep
            return min(total, need + self.headroom)
        if powered - need >= self.de_threshold and i >= self.stable_until:
            return need
        return min(powered, total)


def make_controller(name: str, preset: str | None = None, *, buffer: int | None = None, risk: float | None = None,
                    preset_flag: str = "--ces-preset", rule_flag: str = "--ces-rule") -> Controller:
    """``helios`` (the study's rule with ``preset``'s hyperparameters, default philly, ``buffer`` overriding its
    buffer) or ``quantile`` (dlcluster's rule, shortage risk ``risk``). An option of the other rule is refused, not
    ignored (``preset_flag``, ``rule_flag``: the command's names for ``preset`` and ``name``)."""
    if name not in ("helios", "quantile"):  # (exact names, as every choice of the command line)
        raise ConfigError(f"{rule_flag} {name!r}: choose helios or quantile")
    if name == "helios" and risk is not None:
        raise ConfigError("--risk is an option of the quantile rule; the helios rule keeps --buffer idle nodes")
    if name == "quantile" and buffer is not None:
        raise ConfigError("--buffer is an option of the helios rule; the quantile rule sizes its margin by --risk")
    if name == "quantile" and preset is not None:
        raise ConfigError(f"{preset_flag} is an option of the helios rule (its hyperparameters); the quantile rule "
                          "sizes its margin by --risk")
    if name == "helios":
        if (preset or "philly") not in PRESETS:
            raise ConfigError(f"unknown cluster preset {preset!r}; choose one of: {', '.join(PRESETS)}")
        params = PRESETS[preset or "philly"]
        if buffer is not None:
            if buffer < 0:
                raise ConfigError(f"--buffer must be at least 0, got {buffer}")
            params = RuleParams(**{**asdict(params), "buffer": buffer})
        return HeliosRule(params)
    return QuantileRule() if risk is None else QuantileRule(risk=risk)
