"""A sweep's settings are ``dlcluster simulate`` options: their names, their checks and their command lines."""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

import click

from dlcluster.errors import DlclusterError, InputError

Check = Callable[[Any, Path, str], None]


@cache
def _command() -> Any:
    """The ``simulate`` command as the CLI parses it."""
    import dlcluster.cli as cli

    cli._register(["simulate"])
    return cli.app.commands["simulate"]


@cache
def _context() -> Any:
    """A parsing context of ``simulate`` (made once: each value is then parsed by its own parameter alone)."""
    return _command().make_context("simulate", ["trace", "-o", "out"])


def _long_names() -> dict[str, Any]:
    """Option name (long flag without dashes, ``-`` → ``_``) → the CLI parameter."""
    out = {}
    for param in _command().params:
        longs = [o for o in param.opts if o.startswith("--")]
        if longs:
            out[longs[0][2:].replace("-", "_")] = param
    return out


def flag_of(name: str) -> str:
    """The command-line flag of option ``name`` (``ces_rule`` → ``--ces-rule``)."""
    return "--" + name.replace("_", "-")


def arguments(params: dict[str, Any]) -> list[str]:
    """``simulate`` arguments for a cell's options (a true flag is given, a false one left out)."""
    flags = _long_names()
    args: list[str] = []
    for name, value in params.items():
        if getattr(flags[name], "is_flag", False):
            if value:
                args.append(flag_of(name))
        else:
            args += [flag_of(name), str(value)]
    return args


def _parse(name: str, value: Any, path: Path, where: str) -> None:
    """Let the CLI itself parse ``--name value`` (types, ranges): its message becomes a one-line error."""
    param = _long_names()[name]
    if getattr(param, "is_flag", False):
        if not isinstance(value, bool):
            raise InputError(f"expected true or false, got {value!r}", path=path, field=where)
        return
    if isinstance(value, bool):  # (str(True) would reach the parser as the word "True")
        raise InputError(f"got {str(value).lower()}: true and false are only for on/off options", path=path,
                         field=where)
    try:
        param.process_value(_context(), str(value))
    except click.BadParameter as exc:
        message = exc.format_message()
        raise InputError(message, path=path, field=where) from None


def resolve(value: Any, base: Path) -> Any:
    """An option value naming a file relative to the experiment file's folder, made absolute (else unchanged)."""
    if isinstance(value, str) and value and not Path(value).is_absolute() and (base / value).is_file():
        return str((base / value).resolve())
    return value


def _semantic(name: str) -> Callable[[Any], object] | None:
    """The library check of option ``name``'s value, for options whose allowed values the library knows."""
    if name == "policy":
        from dlcluster.sim.policies import get_policy

        def policy(v: Any) -> None:
            if "," in str(v):
                raise InputError("one policy per cell: sweep several with policy = [\"fifo\", \"sjf\"]")
            get_policy(str(v))
        return policy
    if name == "load":
        from dlcluster.sim.prepare import check_load

        return lambda v: check_load(float(v))
    if name == "placement":
        from dlcluster.sim.placement import get_placement

        return lambda v: get_placement(str(v))
    if name == "cluster":
        def cluster(v: Any) -> None:
            if not Path(str(v)).is_file():
                raise InputError(f"no such cluster file: {v}")
        return cluster
    if name == "estimates":
        from dlcluster.predict import ESTIMATORS, is_estimator_name

        def estimates(v: Any) -> None:
            if not is_estimator_name(str(v)) and not Path(str(v)).is_file():
                raise InputError(f"{v!r} is neither an estimator ({', '.join(ESTIMATORS)}) nor an existing file")
        return estimates
    return None


def parsed(params: dict[str, Any], base: Path) -> dict[str, Any]:
    """Every ``simulate`` parameter's value as the command line makes it (its default where ``params`` sets none;
    file names relative to ``base``): settings spelt differently (``1`` and ``1.0``, a default given or not) that
    parse alike run the same simulation."""
    names, ctx = _long_names(), _context()
    values = dict(ctx.params)
    for name, value in params.items():
        param = names[name]
        values[param.name] = value if getattr(param, "is_flag", False) else \
            param.process_value(ctx, str(resolve(value, base)))
    return values


def cell_meaning(params: dict[str, Any], base: Path) -> tuple[tuple[str, Any], ...]:
    """What a cell's options make ``simulate`` run: :func:`parsed`, with the settings that two spellings can make
    alike in one form (``relax:T``, or ``relax`` and ``relax_after``; a CES rule's or power model's values left to
    their defaults or given them)."""
    from dataclasses import asdict

    from dlcluster.cli.simulate_cmd import settings

    values = parsed(params, base)
    made = settings(values)
    values.update(placement=made.placement, relax_after=None)
    if made.make_power is not None:
        manager, model = made.make_power()
        values.update(ces_rule=None, ces_preset=None, buffer=None, risk=None, boot_seconds=None,
                      made_power=(repr(manager.describe()) if manager else None, repr(asdict(model))))
    return tuple(values.items())


def check_cell(params: dict[str, Any], path: Path) -> None:
    """Check one cell's options together, as ``simulate`` does before it reads a trace (so combinations such as
    ``ces_rule`` without ``power = "ces"`` are refused before any cell runs); file names are relative to the
    experiment file ``path``."""
    from dlcluster.cli.simulate_cmd import settings

    settings(parsed(params, path.parent))


def checks() -> dict[str, Check]:
    """Every sweepable option name → its check (CLI parsing, then the library's own rule where there is one)."""
    out: dict[str, Check] = {}
    for name in _long_names():
        semantic = _semantic(name)

        def check(value: Any, path: Path, where: str, name: str = name, semantic: Any = semantic) -> None:
            _parse(name, value, path, where)
            if semantic is not None:
                try:
                    semantic(resolve(value, path.parent))
                except InputError as exc:
                    raise InputError(exc.detail, path=path, field=where) from None
                except DlclusterError as exc:
                    raise InputError(str(exc), path=path, field=where) from None
        out[name] = check
    return out
