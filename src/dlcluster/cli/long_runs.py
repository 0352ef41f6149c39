"""What commands that run for a while share: wall-clock options as instants, a progress bar."""

from __future__ import annotations

import datetime
import math
from zoneinfo import ZoneInfo

import polars as pl
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, ProgressColumn, TextColumn, TimeElapsedColumn

from dlcluster.errors import ConfigError


def wall_instant(text: str, option: str, timezone: str, wall: bool, first: bool = False) -> int:
    """A ``YYYY-MM-DD[ HH:MM:SS]`` wall-clock time → epoch seconds (UTC, or the naive wall clock if ``wall``).

    A time with an explicit offset (``Z``, ``+05:00``) is that instant, whatever ``timezone``; a wall-clock
    time in the repeated hour of a daylight-saving change is its earlier instant, and one in the skipped
    hour is an error. A fraction of a second rounds down, or up when ``first`` (the first whole second at or
    after the time: a window "from" 12:30:00.5 holds no submission of 12:30:00).
    """
    given = _parse_time(text, option)
    try:
        instant = _instant(given, text, option, ZoneInfo(timezone), wall)
        return instant + 1 if first and given.microsecond else instant
    except OverflowError:  # (the conversion to or from the zone left years 1..9999)
        raise ConfigError(f"{option} {text!r}: too near the ends of the calendar (years 1 and 9999) to convert; "
                          "give a time within the trace's span") from None


def _instant(given: datetime.datetime, text: str, option: str, zone: ZoneInfo, wall: bool) -> int:
    """:func:`wall_instant` of the parsed time ``given``."""
    timezone = zone.key
    if given.tzinfo is not None:
        if not wall:
            return math.floor(given.timestamp())
        given = given.astimezone(zone).replace(tzinfo=None)
    if wall:
        return math.floor(given.replace(tzinfo=datetime.UTC).timestamp())
    local = given.replace(tzinfo=zone, fold=0)
    if local.astimezone(datetime.UTC).astimezone(zone).replace(tzinfo=None) != given:
        raise ConfigError(f"{option} {text!r}: no such time in {timezone} (the clocks skip it when daylight saving "
                          "time begins); give a time outside the gap or with an offset like +01:00")
    return math.floor(local.timestamp())


def _parse_time(text: str, option: str) -> datetime.datetime:
    try:
        return datetime.datetime.fromisoformat(text.strip())
    except ValueError:
        pass
    try:  # the other layouts Polars recognises, as before
        parsed = pl.Series([text.strip()]).str.to_datetime(strict=True, time_unit="us")
        value = parsed[0]
    except (pl.exceptions.PolarsError, OverflowError, ValueError) as exc:
        raise ConfigError(f"{option} {text!r}: expected a time like 2017-10-01 00:00:00") from exc
    if not isinstance(value, datetime.datetime):
        raise ConfigError(f"{option} {text!r}: expected a time like 2017-10-01 00:00:00")
    return value


def submit_window(start: str | None, end: str | None, timezone: str, wall: bool) -> tuple[int, int] | None:
    """The ``--start``/``--end`` window of submit times as epoch seconds (None when neither is given)."""
    if start is None and end is None:
        return None
    # (an empty value, e.g. ``--start=`` from an unset shell variable, is refused as a bad time, not ignored)
    lo = wall_instant(start, "--start", timezone, wall, first=True) if start is not None else -(2**62)
    hi = wall_instant(end, "--end", timezone, wall) if end is not None else 2**62
    if lo > hi:
        raise ConfigError(f"--start {start!r} is after --end {end!r}: the window holds no time")
    return lo, hi


def progress_bar(console: Console, *more: ProgressColumn) -> Progress:
    """A transient bar with a count, the elapsed time and ``more`` columns, shown only when ``console`` is a
    terminal."""
    # a bar that cannot redraw (stderr piped) only leaves a stray blank line before errors
    return Progress(TextColumn("{task.description}", markup=False), BarColumn(), MofNCompleteColumn(),
                    TimeElapsedColumn(), *more, console=console, transient=True, disable=not console.is_terminal)
