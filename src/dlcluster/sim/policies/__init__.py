"""Ordering policies by name. A new policy is a :class:`~dlcluster.sim.framework.Policy` subclass added here."""

from __future__ import annotations

from dlcluster.errors import ConfigError
from dlcluster.sim.framework import Policy
from dlcluster.sim.policies.fifo import Fifo
from dlcluster.sim.policies.qssf import Qssf
from dlcluster.sim.policies.sjf import Sjf
from dlcluster.sim.policies.srtf import Srtf

POLICIES: dict[str, type[Policy]] = {p.name: p for p in (Fifo, Sjf, Qssf, Srtf)}


def register_policy(cls: type[Policy]) -> type[Policy]:
    """Add a policy class to the registry under ``cls.name`` (usable as a decorator)."""
    if not cls.name:
        raise ConfigError(f"policy class {cls.__name__} has no name")
    POLICIES[cls.name] = cls
    return cls


def get_policy(name: str) -> type[Policy]:
    """The policy class registered as ``name``."""
    if name not in POLICIES:
        raise ConfigError(f"unknown policy {name!r}; choose one of: {', '.join(POLICIES)}")
    return POLICIES[name]
