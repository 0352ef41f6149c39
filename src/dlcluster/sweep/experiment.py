"""An experiment file (TOML): traces × settings → the list of cells a sweep runs, validated before anything runs.

::

    [[trace]]                 # a generator preset (reseeded by a swept ``seed``) ...
    preset = "helios-venus"
    days = 7
    seed = 1
    [[trace]]                 # ... or a file, with the input options of ``simulate``
    file = "jobs.csv"
    map = "submit_time=submitted,duration=runtime_s,gpu_num=gpus"
    [simulate]                # options every cell shares (``simulate``'s long option names)
    placement = "consolidate"
    [grid]                    # every combination of these values
    policy = ["fifo", "sjf"]
    load = [1.0, 2.0]
    seed = [1, 2]
    [[case]]                  # explicit settings, each crossed with the grid (optional)
    estimates = "lgbm"

Cells run in the order traces × cases × grid (the grid's last key varies fastest).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dlcluster.config_file import read_toml
from dlcluster.errors import DlclusterError, InputError
from dlcluster.sweep.simulate_options import flag_of

Scalar = str | int | float | bool
TOP_KEYS = ("name", "metrics", "trace", "simulate", "grid", "case")
GENERATED_KEYS = ("name", "preset", "days", "seed", "load")
FILE_KEYS = ("name", "file", "format", "map", "tz", "time_unit", "lenient")
# ``simulate`` options a sweep sets itself (the trace's input options belong to its [[trace]] table)
NOT_SWEPT = ("output", "format", "lenient", "map", "tz", "time_unit", "csv")


@dataclass(frozen=True)
class TraceSource:
    """One ``[[trace]]``: a generator preset (``preset``, ``days``, ``seed``, ``load``) or a ``file`` with its
    input options."""

    name: str
    preset: str | None = None
    days: float | None = None
    seed: int = 0
    load: float = 1.0
    file: Path | None = None
    read_options: tuple[tuple[str, Scalar], ...] = ()

    def seeded(self, seed: int | None) -> TraceSource:
        """This source with a cell's ``seed`` (it reseeds generated traces; a file stays as it is)."""
        if self.preset is None or seed is None or seed == self.seed:
            return self
        return TraceSource(self.name, self.preset, self.days, seed, self.load)

    @property
    def key(self) -> str:
        """A file name for this source's trace (generated ones differ by seed)."""
        return f"{self.name}-seed{self.seed}" if self.preset is not None else self.name


@dataclass(frozen=True)
class Cell:
    """One simulation of a sweep: a trace and ``simulate`` options (``params``: name → value, in column order;
    ``keys``: name → the key of the experiment file that sets it, ``grid.load``)."""

    index: int
    trace: TraceSource
    params: dict[str, Scalar]
    keys: dict[str, str] = field(default_factory=dict)

    def error(self, exc: DlclusterError, path: Path) -> InputError:
        """``exc``, found checking this cell, as an error of the experiment file ``path`` at the key of the option
        its message names first (``--seed`` → ``grid.seed``), else at the cell."""
        setting = ", ".join(f"{k}={v}" for k, v in self.params.items())
        return at_key(exc, path, self.keys, f"cell {self.index} ({setting})")


def at_key(exc: DlclusterError, path: Path, keys: dict[str, str], fallback: str) -> InputError:
    """``exc`` as an error of the experiment file ``path`` at the key (``keys``: option name → key) of the option
    whose flag its message names first, else at ``fallback``: the checks it comes from speak of flags."""
    message = str(exc)
    named = {m.start(): key for key in keys
             if (m := re.search(re.escape(flag_of(key)) + r"(?![\w-])", message))}
    return InputError(message, path=path, field=keys[named[min(named)]] if named else fallback)


def _keys(where: str, table: dict[str, Any]) -> dict[str, str]:
    """Option name → the key of the table at ``where`` that sets it, as the file spells it (``grid.ces-rule``)."""
    return {raw.replace("-", "_"): f"{where}.{raw}" for raw in table}


@dataclass
class Experiment:
    """A validated experiment file and its cells."""

    path: Path
    name: str
    traces: list[TraceSource]
    parameters: list[str]  # every option name any cell sets, in file order: the results' parameter columns
    cells: list[Cell] = field(default_factory=list)
    metrics: list[str] | None = None


def _scalar(value: Any, path: Path, where: str) -> Scalar:
    if isinstance(value, bool | int | float | str):
        return value
    raise InputError(f"expected a single value (text, number or true/false), got {value!r}", path=path, field=where)


def _distinct(values: list[Scalar], path: Path, where: str) -> None:
    """Refuse a grid list that names one value twice (1 and 1.0 are one load: two cells would run one simulation)."""
    seen: dict[tuple[str, Scalar], Scalar] = {}
    for v in values:
        key = ("bool", v) if isinstance(v, bool) else ("number", float(v)) if isinstance(v, int | float) else ("text", v)
        if key in seen:
            same = f"{seen[key]!r} and {v!r}" if repr(seen[key]) != repr(v) else f"{v!r} twice"
            raise InputError(f"lists one value twice ({same}): give each value once", path=path, field=where)
        seen[key] = v


def _options(table: Any, path: Path, where: str, options: dict[str, Any], grid: bool = False) -> dict[str, Any]:
    """A table of ``simulate`` options with names normalised to underscores; values checked by ``options``."""
    if not isinstance(table, dict):
        raise InputError("expected a table of simulate options", path=path, field=where)
    out: dict[str, Any] = {}
    for raw, value in table.items():
        key = raw.replace("-", "_")
        at = f"{where}.{raw}"
        if key in out:  # (TOML keeps both spellings: one would win silently)
            raise InputError(f"the same option as {next(r for r in table if r.replace('-', '_') == key)!r}: give it "
                             "once", path=path, field=at)
        if key in NOT_SWEPT:
            raise InputError("set by the sweep itself or by a [[trace]] table, not here", path=path, field=at)
        if key not in options:
            sweepable = sorted(set(options) - set(NOT_SWEPT))
            raise InputError(f"not an option of `dlcluster simulate` (options: {', '.join(sweepable)})",
                             path=path, field=at)
        if grid:
            if not isinstance(value, list) or not value:
                raise InputError("a grid entry is a non-empty list of values, e.g. [1.0, 2.0]", path=path, field=at)
            out[key] = [_scalar(v, path, at) for v in value]
            _distinct(out[key], path, at)
        else:
            out[key] = _scalar(value, path, at)
    return out


def _trace(raw: Any, path: Path, i: int) -> TraceSource:
    where = f"trace[{i}]"
    if not isinstance(raw, dict):
        raise InputError("expected a table ([[trace]])", path=path, field=where)
    if ("preset" in raw) == ("file" in raw):
        raise InputError("give exactly one of preset = NAME or file = PATH", path=path, field=where)
    known = GENERATED_KEYS if "preset" in raw else FILE_KEYS
    for key in raw:
        if key not in known:
            raise InputError(f"unknown key (known: {', '.join(known)})", path=path, field=f"{where}.{key}")
    name = raw.get("name")
    if "preset" in raw:
        from dlcluster.synth import preset_names

        preset = raw["preset"]
        if preset not in preset_names():
            raise InputError(f"unknown preset {preset!r} (presets: {', '.join(preset_names())})",
                             path=path, field=f"{where}.preset")
        days, seed, load = raw.get("days"), raw.get("seed", 0), raw.get("load", 1.0)
        if days is not None and (isinstance(days, bool) or not isinstance(days, int | float) or not days > 0):
            raise InputError(f"expected a positive number of days, got {days!r}", path=path, field=f"{where}.days")
        if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
            raise InputError(f"expected a whole number ≥ 0, got {seed!r}", path=path, field=f"{where}.seed")
        if isinstance(load, bool) or not isinstance(load, int | float) or not load > 0:
            raise InputError(f"expected a positive number, got {load!r}", path=path, field=f"{where}.load")
        from dlcluster.synth import load_preset
        from dlcluster.synth.generate import check_jobs, check_scale

        try:  # the generator's limits (100 years, a load of 1e9, 50,000,000 jobs), before the trace is made
            check_scale(days, float(load), seed)
            check_jobs(load_preset(preset), days, float(load))
        except DlclusterError as exc:  # (at the key of the first option named that the table sets)
            keys = {k: f"{where}.{k}" for k in ("days", "load", "seed") if k in raw}
            raise at_key(exc, path, keys, where) from None
        default = f"{preset}-{days:g}d" if days is not None else preset
        return TraceSource(str(name or default), preset=preset, days=days, seed=seed, load=float(load))
    file = Path(raw["file"])
    if not file.is_absolute():
        file = path.parent / file  # relative to the experiment file, not to where the sweep is started
    if not file.exists():
        raise InputError(f"no such trace file: {file}", path=path, field=f"{where}.file")
    opts = tuple((k, _scalar(raw[k], path, f"{where}.{k}")) for k in FILE_KEYS[2:] if k in raw)
    return TraceSource(str(name or file.stem), file=file, read_options=opts)


def read_experiment(path: str | Path, options: dict[str, Any],
                    check_cell: Callable[[dict[str, Scalar], Path], None] | None = None) -> Experiment:
    """Read and validate the experiment file ``path``; ``options``: ``simulate``'s option names → value checker.

    A checker is called as ``check(value, path, where)`` and raises an :class:`InputError` for a bad value;
    ``check_cell(params, path)``, if given, checks each distinct setting's options together and raises the
    :class:`DlclusterError` ``simulate`` would (reported at the key of the option it names).
    """
    path = Path(path)
    data = read_toml(path, TOP_KEYS)
    raw_traces = data.get("trace")
    if not isinstance(raw_traces, list) or not raw_traces:
        raise InputError("needs at least one [[trace]] table", path=path, field="trace")
    traces = [_trace(t, path, i) for i, t in enumerate(raw_traces)]
    names = [t.name for t in traces]
    if len(set(names)) != len(names):
        dup = next(n for n in names if names.count(n) > 1)
        raise InputError(f"two traces are named {dup!r}: give them distinct names", path=path, field="trace")
    fixed = _options(data.get("simulate", {}), path, "simulate", options)
    grid = _options(data.get("grid", {}), path, "grid", options, grid=True)
    raw_cases = data.get("case", [{}])
    if not isinstance(raw_cases, list) or not raw_cases:
        raise InputError("expected one or more [[case]] tables", path=path, field="case")
    cases = [_options(c, path, f"case[{i}]", options) for i, c in enumerate(raw_cases)]
    fixed_at, grid_at = _keys("simulate", data.get("simulate", {})), _keys("grid", data.get("grid", {}))
    cases_at = [_keys(f"case[{i}]", c) for i, c in enumerate(raw_cases)]
    # an option set in two tables would take one of its values silently: the cells would not be what the file says
    for key, value in fixed.items():
        if key in grid:
            raise InputError("also swept in [grid]: set it in one place", path=path, field=fixed_at[key])
        options[key](value, path, fixed_at[key])
    for key, values in grid.items():
        for value in values:
            options[key](value, path, grid_at[key])
    for case, case_at in zip(cases, cases_at, strict=True):
        for key, value in case.items():
            if key in grid or key in fixed:
                raise InputError(f"also {'swept in [grid]' if key in grid else 'set in [simulate]'}: set it in one "
                                 "place", path=path, field=case_at[key])
            options[key](value, path, case_at[key])
    metrics = data.get("metrics")
    if metrics is not None and (not isinstance(metrics, list) or not all(isinstance(m, str) for m in metrics)):
        raise InputError("expected a list of metric names", path=path, field="metrics")
    from dlcluster.sweep.results import METRICS  # (results reads experiments: imported here, not at the top)

    unknown = [m for m in metrics or () if m not in METRICS]
    if unknown:
        raise InputError(f"unknown metric {unknown[0]!r} (known: {', '.join(METRICS)})", path=path, field="metrics")
    name = data.get("name", path.stem)
    if not isinstance(name, str) or not name.strip():
        raise InputError(f"expected a name (text), got {name!r}", path=path, field="name")
    parameters = list(dict.fromkeys([*fixed, *(k for c in cases for k in c), *grid]))
    exp = Experiment(path, name, traces, parameters, metrics=metrics)
    combos = list(itertools.product(*grid.values()))
    for trace in traces:
        for case, case_at in zip(cases, cases_at, strict=True):
            keys = {**fixed_at, **case_at, **grid_at}
            for combo in combos:
                params = {**fixed, **case, **dict(zip(grid, combo, strict=True))}
                seed = params.get("seed")
                cell_trace = trace.seeded(seed if isinstance(seed, int) and not isinstance(seed, bool) else None)
                exp.cells.append(Cell(len(exp.cells), cell_trace, {k: params[k] for k in parameters if k in params},
                                      keys))
    if check_cell is not None:
        seen = set()
        for cell in exp.cells:
            setting = tuple(cell.params.items())
            if setting not in seen:  # traces aside, settings repeat
                seen.add(setting)
                try:
                    check_cell(cell.params, path)
                except DlclusterError as exc:
                    raise cell.error(exc, path) from None
    return exp
