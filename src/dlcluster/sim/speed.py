"""A placement-dependent speed model: jobs spread over more servers than needed, or sharing one, run slower.

Default factors come from the Philly study (Jeon et al., ATC'19; see docs/simulator.md, "Speed
model"): Table 4 (ResNet-50 images/s on one server, spread over servers, colocated with other
jobs, both) and Table 5 (mean GPU utilisation of 16-GPU jobs on 2, 4 and 8 servers).

A job spanning ``s`` servers whose GPUs need at least ``m`` servers (``ceil(gpus / largest
server of its VC)``) runs at ``spread(s) / spread(m)``: ``spread`` is a curve over server
counts with ``spread(1) = 1``, given at a few counts, linear in between, flat after the last
one. A job sharing a server with another job (``neighbours > 0``) is slowed once more: by
``colocated`` when it is on its fewest servers, by ``colocated_spread`` when it is spread beyond
them. A job on one server alone runs at 1.0.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

from mypy_extensions import mypyc_attr

from dlcluster.config_file import read_toml
from dlcluster.errors import ConfigError, InputError
from dlcluster.sim.cluster import Allocation
from dlcluster.sim.jobs import Jobs

# Table 4, ResNet-50 images/s: all GPUs on one server, spread over servers, colocated, spread and colocated
ONE_SERVER, SPREAD, COLOCATED, SPREAD_COLOCATED = 114.8, 98.0, 75.6, 74.1
# Table 5, mean GPU utilisation (%) of 16-GPU jobs by servers spanned
UTIL_16 = {2: 43.66, 4: 40.94, 8: 28.56}

# spread(2) from Table 4; spread(4) and spread(8) chain Table 5's ratios to 2 servers onto it
PHILLY_SPREAD: dict[int, float] = {s: SPREAD / ONE_SERVER * u / UTIL_16[2] for s, u in UTIL_16.items()}
PHILLY_COLOCATED = COLOCATED / ONE_SERVER  # 0.659: colocated, all GPUs on one server
PHILLY_COLOCATED_SPREAD = SPREAD_COLOCATED / SPREAD  # 0.756: colocated on top of being spread (74.1 of 98.0)

KEYS = ("spread", "colocated", "colocated_spread")


@mypyc_attr(allow_interpreted_subclasses=True)  # (compiled by setup.py; plug-ins may subclass it)
class PlacementSpeed:
    """Rate by servers spanned beyond the fewest possible and by sharing a server (a :class:`SpeedModel`)."""

    # the rate sees only whether a job has neighbours, not how many (see SpeedModel)
    any_neighbour: ClassVar[bool] = True

    def __init__(self, spread: Mapping[int, float] | None = None, colocated: float = PHILLY_COLOCATED,
                 colocated_spread: float = PHILLY_COLOCATED_SPREAD, name: str = "philly") -> None:
        points = dict(PHILLY_SPREAD if spread is None else spread)
        points[1] = 1.0
        self.spread = {s: points[s] for s in sorted(points) if s > 1}
        self.colocated, self.colocated_spread, self.name = colocated, colocated_spread, name
        # spread(s) for s = 0 .. last count given (index 0 unused); flat after it
        counts = sorted(points)
        curve = [1.0, 1.0]
        for lo, hi in zip(counts, counts[1:], strict=False):
            for s in range(lo + 1, hi + 1):
                curve.append(points[lo] + (points[hi] - points[lo]) * (s - lo) / (hi - lo))
        self._curve = curve
        self._last = len(curve) - 1
        self._largest: dict[int, tuple[tuple[int, ...], int]] = {}  # id(sizes) -> (sizes, largest node)

    def slowest(self) -> float:
        """The lowest rate any job can get: spread over the most servers the curve names, and colocated."""
        return min(self.colocated, self._curve[self._last] * self.colocated_spread)

    def factor(self, servers: int) -> float:
        """spread(servers): the speed of a job on ``servers`` servers relative to one server."""
        return self._curve[min(servers, self._last)]

    def rate(self, jobs: Jobs, job: int, alloc: Allocation, sizes: tuple[int, ...], neighbours: int) -> float:
        """Rate of ``job`` on ``alloc`` (nodes of ``sizes`` GPUs) next to ``neighbours`` other jobs."""
        servers = len(alloc)
        if servers == 1:  # the common case: on one server, it is on its fewest
            return self.colocated if neighbours else 1.0
        # a VC's sizes tuple lives as long as the run: its largest node is looked up by identity, not recomputed
        hit = self._largest.get(id(sizes))
        if hit is None or hit[0] is not sizes:
            hit = self._largest[id(sizes)] = (sizes, max(sizes))
        fewest = -(-jobs.gpu[job] // hit[1])
        if servers <= fewest:
            return self.colocated if neighbours else 1.0
        curve, last = self._curve, self._last
        rate = curve[servers if servers < last else last] / curve[fewest if fewest < last else last]
        return rate * self.colocated_spread if neighbours else rate

    def describe(self) -> dict[str, Any]:
        """The model's name and factors (for the run's summary)."""
        return {"name": self.name, "spread": {str(s): f for s, f in self.spread.items()},
                "colocated": self.colocated, "colocated_spread": self.colocated_spread}


# each factor at most 100 times slower, a job at most 10,000 (spread × colocated_spread; 1e-15 put jobs' ends beyond
# the simulator's clock)
MIN_FACTOR = 0.01
MAX_SERVERS = 10_000  # the largest server count a spread curve may name (the curve is a list up to it)


def _factor(value: object, path: Path, key: str) -> float:
    """A speed factor in [MIN_FACTOR, 1] from the file, or an InputError naming the key."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not MIN_FACTOR <= value <= 1:
        raise InputError(f"expected a number from {MIN_FACTOR:g} to 1, got {value!r}", path=path, field=key)
    return float(value)


def read_speed_model(path: str | Path) -> PlacementSpeed:
    """A :class:`PlacementSpeed` from a TOML file (``spread = {2 = 0.85, 4 = 0.8}``, ``colocated``, ...).

    Keys left out keep the Philly defaults; a ``spread`` table replaces the whole default curve.
    """
    path = Path(path)
    data = read_toml(path, KEYS)
    spread = None
    if "spread" in data:
        table = data["spread"]
        if not isinstance(table, dict):
            raise InputError("expected a table of server count = factor, e.g. {2 = 0.85, 4 = 0.8}",
                             path=path, field="spread")
        spread = {}
        for key, value in table.items():
            if not (key.isascii() and key.isdigit() and 2 <= int(key) <= MAX_SERVERS):
                raise InputError(f"server counts must be whole numbers from 2 (1 server is 1.0) to {MAX_SERVERS:,}",
                                 path=path, field=f"spread.{key}")
            if int(key) in spread:  # "2" and "02" are both valid TOML keys: one would silently win
                raise InputError(f"server count {int(key)} is given twice", path=path, field=f"spread.{key}")
            spread[int(key)] = _factor(value, path, f"spread.{key}")
        before, previous = 1, 1.0
        for count in sorted(spread):
            if spread[count] > previous:
                raise InputError(f"a job on more servers cannot run faster: {spread[count]} exceeds "
                                 f"{previous} at {before} server(s)", path=path, field=f"spread.{count}")
            before, previous = count, spread[count]
    factors = {key: _factor(data[key], path, key) for key in ("colocated", "colocated_spread") if key in data}
    return PlacementSpeed(spread, **factors, name=str(path))


def speed_model(name_or_path: str) -> PlacementSpeed | None:
    """None for ``none``, the Philly-derived default for ``philly``, else the model of that TOML file."""
    if name_or_path == "none":
        return None
    if name_or_path == "philly":
        return PlacementSpeed()
    if not Path(name_or_path).exists():
        raise ConfigError(f"--speed-model {name_or_path!r}: choose none, philly or a TOML file (no such file)")
    return read_speed_model(name_or_path)

