"""Options shared by several commands."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from dlcluster.errors import ConfigError

FormatOpt = typer.Option(None, "--format", "-f", help="Force the input format (default: auto-detect).")
LenientOpt = typer.Option(False, "--lenient", help="Drop malformed rows (counted by reason) instead of failing.")
MapOpt = typer.Option(None, "--map", help="Column mapping for --format csv: canonical=source,... "
                      "(e.g. submit_time=submitted,duration=runtime_s,gpu_num=gpus).")
TimeUnitOpt = typer.Option(None, "--time-unit", help="For --format csv: unit of numeric times (s, ms, us).")
TzOpt = typer.Option(None, "--tz", help="IANA time zone of the source's wall-clock times (e.g. Asia/Shanghai).")


def parse_mapping(spec: str | None) -> dict[str, str] | None:
    """Parse ``a=b,c=d`` into a dict, with a clear error for a malformed item."""
    if not spec:
        return None
    out: dict[str, str] = {}
    for item in spec.split(","):
        key, sep, value = item.partition("=")
        if not sep or not key.strip() or not value.strip():
            raise ConfigError(f"--map: expected canonical=source, got {item!r}")
        out[key.strip()] = value.strip()
    return out


def reader_options(lenient: bool, mapping: str | None, time_unit: str | None, tz: str | None) -> dict[str, Any]:
    """Keyword options for :func:`dlcluster.io.read_trace` from CLI flags (only those given)."""
    opts: dict[str, Any] = {"lenient": lenient}
    if mapping:
        opts["mapping"] = parse_mapping(mapping)
    if time_unit:
        opts["time_unit"] = time_unit
    if tz:
        opts["timezone"] = tz
    return opts


def load(path: Path, fmt: str | None, **opts: Any):  # noqa: ANN201
    """Read a trace and report lenient drops on stderr."""
    from dlcluster.cli import err_console
    from dlcluster.io import read_trace

    trace = read_trace(path, format=fmt, **opts)
    if trace.dropped:
        total = sum(trace.dropped.values())
        reasons = ", ".join(f"{n} {r}" for r, n in sorted(trace.dropped.items()))
        err_console.print(f"[yellow]dropped {total} malformed row(s):[/] {reasons}")
    return trace
