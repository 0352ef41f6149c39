"""What commands that run for a while share: wall-clock options as instants, a progress bar, Ctrl-C deferral."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager

import polars as pl
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from dlcluster.errors import ConfigError


def wall_instant(text: str, option: str, timezone: str, wall: bool) -> int:
    """A ``YYYY-MM-DD[ HH:MM:SS]`` wall-clock time → epoch seconds (UTC, or the naive wall clock if ``wall``)."""
    try:
        parsed = pl.Series([text.strip()]).str.to_datetime(strict=True, time_unit="us")
    except pl.exceptions.PolarsError as exc:
        raise ConfigError(f"{option} {text!r}: expected a time like 2017-10-01 00:00:00") from exc
    if not wall:
        parsed = parsed.dt.replace_time_zone(timezone, ambiguous="earliest", non_existent="raise")
    return int(parsed.dt.epoch("s")[0])


def progress_bar(console: Console) -> Progress:
    """A transient bar with a count and the elapsed time, shown only when ``console`` is a terminal."""
    # a bar that cannot redraw (stderr piped) only leaves a stray blank line before errors
    return Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                    console=console, transient=True, disable=not console.is_terminal)


@contextmanager
def deferring_interrupts() -> Iterator[None]:
    """Hold a Ctrl-C back until the block ends, then raise it: the block's files are written all or none."""
    caught: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: caught.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
    if caught:
        raise KeyboardInterrupt
