"""Input preparation of the Helios SC'21 artifact: wall-clock seconds, window, time origin, tie order.

The artifact read naive wall-clock timestamps as UTC, sorted the whole trace by them
with pandas' default (non-stable) quicksort, filtered, shifted times so that the first
kept job is at 0, and sorted once more with the same quicksort. Every later sort in the
artifact is stable, so the order produced here is the final tie-breaker of every policy.
pandas' quicksort is NumPy's ``argsort(kind="quicksort")``: the first sort ran on
``datetime64[ns]``, the second on the integer seconds.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from dlcluster.trace import local_datetime


def wall_seconds(utc: pl.Expr, timezone: str) -> pl.Expr:
    """UTC epoch seconds → the source's wall clock, read as if it were UTC (what the artifact did)."""
    return local_datetime(utc, timezone).dt.replace_time_zone(None).dt.epoch("s")


def artifact_order(jobs: pl.DataFrame, keep: pl.Expr, window: tuple[int, int] | None) -> tuple[pl.DataFrame, int]:
    """Jobs the artifact simulates, in its internal arrival order, with ``submit`` from the origin.

    ``jobs`` holds the whole trace in file order with a wall-clock ``wall`` column (the
    first sort runs over every row, even those filtered away later); ``keep`` selects
    simulated rows (GPU jobs of known VCs); ``window`` is ``(start, end)`` in wall-clock
    seconds. Returns the ordered jobs and the origin (wall-clock seconds).
    """
    # the conversion to the artifact's input file was a stable sort by submit time
    stable = jobs.sort("wall", maintain_order=True)
    ns = stable["wall"].to_numpy().astype("datetime64[s]").astype("datetime64[ns]")
    shuffled = stable[np.argsort(ns, kind="quicksort")]
    if window is not None:
        keep = keep & (pl.col("wall") >= window[0])
    kept = shuffled.filter(keep)
    if kept.height == 0:
        return kept.with_columns(pl.col("wall").alias("submit")), 0
    origin = int(kept["wall"][0])
    kept = kept.with_columns((pl.col("wall") - origin).alias("submit"))
    if window is not None:
        kept = kept.filter(pl.col("submit").is_between(0, window[1] - window[0]))
    return kept[np.argsort(kept["submit"].to_numpy(), kind="quicksort")], origin
