"""A canonical trace: the job table plus what travels with it."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path

import polars as pl

from dlcluster.cluster import ClusterSpec


def local_datetime(epochs: pl.Expr, timezone: str) -> pl.Expr:
    """UTC epoch seconds as wall-clock datetimes of ``timezone``."""
    return pl.from_epoch(epochs, time_unit="s").dt.replace_time_zone("UTC").dt.convert_time_zone(timezone)


@dataclass
class Trace:
    """A job table in the canonical schema, with its source format and time zone.

    ``timezone`` is the IANA zone of the source's wall clock, used only for calendar
    features (hour of day, day of week); every time in ``jobs`` is UTC epoch seconds.
    ``dropped`` counts rows a lenient read left out, by reason. ``zoneless``: some times were
    wall-clock text that named no zone, read as ``timezone`` (UTC unless the user gave one).
    """

    jobs: pl.DataFrame
    format: str
    timezone: str = "UTC"
    attempts: pl.DataFrame | None = None
    cluster: ClusterSpec | None = None
    source: str = ""
    dropped: Counter[str] = field(default_factory=Counter)
    utilization: object | None = None  # lazy handle on per-minute utilisation files, where the source has them
    zoneless: bool = False

    @property
    def gpu_jobs(self) -> pl.DataFrame:
        """Jobs that asked for at least one GPU."""
        return self.jobs.filter(pl.col("gpu_num") > 0)

    def with_jobs(self, jobs: pl.DataFrame) -> Trace:
        """A copy of this trace with another job table."""
        return replace(self, jobs=jobs, dropped=Counter(self.dropped))

    def local_times(self, column: str = "submit_time") -> pl.Expr:
        """Expression turning an epoch-seconds column into the source's local wall-clock datetime."""
        return local_datetime(pl.col(column), self.timezone)

    @property
    def name(self) -> str:
        """A short label for reports."""
        return Path(self.source).name or self.format
