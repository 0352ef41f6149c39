"""The Helios CES rule's hyperparameters, per cluster, as published with the SC'21 artifact."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class RuleParams:
    """The study's node-controller rule (windows in controller steps, thresholds in nodes)."""

    history: int  # steps of past demand the drop is measured against
    future: int  # steps of forecast the drop must persist over
    his_threshold: float  # minimum drop of demand versus its recent mean
    fut_threshold: float  # minimum margin of demand over its forecast mean
    de_threshold: int  # fewest nodes worth powering off at once
    buffer: int  # idle nodes kept powered above demand
    keep: int  # steps after a wake-up during which no node is powered off


PRESETS: dict[str, RuleParams] = {
    "venus": RuleParams(3, 18, 0.5, 1, 2, 5, 12),
    "earth": RuleParams(6, 18, 1, 1, 5, 5, 12),
    "saturn": RuleParams(6, 18, 1, 1, 1, 5, 12),
    "uranus": RuleParams(3, 18, 1, 1, 1, 7, 12),
    "philly": RuleParams(2, 30, 0.1, 0, 1, 20, 10),
}
