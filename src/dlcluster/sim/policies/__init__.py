"""Ordering policies by name. A new policy is a :class:`~dlcluster.sim.framework.Policy` subclass added here.

A policy with a ``parameter`` also answers to ``name:VALUE`` (e.g. ``tiresias:7200``): a
subclass with that class attribute set to the number.
"""

from __future__ import annotations

from collections.abc import Callable
from importlib.metadata import entry_points
from typing import Any

from dlcluster.errors import ConfigError
from dlcluster.sim.framework import Policy
from dlcluster.sim.policies.easy import FifoEasy, QssfEasy
from dlcluster.sim.policies.fifo import Fifo
from dlcluster.sim.policies.las import Las
from dlcluster.sim.policies.qssf import Qssf
from dlcluster.sim.policies.sjf import Sjf
from dlcluster.sim.policies.srtf import Srtf
from dlcluster.sim.policies.tiresias import Tiresias

POLICIES: dict[str, type[Policy]] = {p.name: p for p in (Fifo, Sjf, Qssf, Srtf, Las, Tiresias, FifoEasy, QssfEasy)}


def register_policy(cls: type[Policy]) -> type[Policy]:
    """Add a policy class to the registry under ``cls.name`` (usable as a decorator)."""
    if not cls.name:
        raise ConfigError(f"policy class {cls.__name__} has no name")
    POLICIES[cls.name] = cls
    return cls


def positive_seconds(text: str, what: str, minimum: int = 1) -> int:
    """A whole number of seconds (at least ``minimum``) from ``name:VALUE`` text, or a ConfigError."""
    try:
        value = int(text)
    except ValueError:
        raise ConfigError(f"{what}: expected a whole number of seconds, got {text!r}") from None
    if value < minimum:
        raise ConfigError(f"{what}: expected at least {minimum} s, got {value}")
    return value


_LOADED: set[str] = set()


def load_plugins(group: str, register: Callable[[Any], Any]) -> None:
    """Register every class that installed packages offer under the entry-point ``group`` (once per process)."""
    if group in _LOADED:
        return
    _LOADED.add(group)
    for entry in sorted(entry_points(group=group), key=lambda e: e.name):
        try:
            register(entry.load())
        except Exception as exc:  # a broken plug-in is named, not a traceback
            raise ConfigError(f"entry point {entry.name!r} ({entry.value}) of group {group}: {exc}") from None


def get_policy(name: str) -> type[Policy]:
    """The policy class registered as ``name``, or ``base:VALUE`` for a policy with a parameter."""
    base, sep, arg = name.partition(":")
    if base not in POLICIES:
        load_plugins("dlcluster.policies", register_policy)
    if base not in POLICIES:
        raise ConfigError(f"unknown policy {base!r}; choose one of: {', '.join(POLICIES)}")
    cls = POLICIES[base]
    if not sep:
        return cls
    if cls.parameter is None:
        raise ConfigError(f"policy {base!r} takes no parameter (got {name!r})")
    value = positive_seconds(arg, f"policy {name!r} ({cls.parameter})", cls.parameter_min)
    return type(cls.__name__, (cls,), {cls.parameter: value, "name": f"{base}:{value}", "__doc__": cls.__doc__})
