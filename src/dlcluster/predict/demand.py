"""Node demand series: busy nodes (and GPUs) over time, from a ready CSV, a trace or a simulation's timeline.

A series is a table ``time`` (UTC epoch seconds), ``used`` (busy nodes), ``total`` (nodes),
optionally ``used_gpus`` and ``total_gpus``. :func:`resample` puts it on a controller's
regular step: the maximum over each step (the nodes needed at the busiest moment).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl

from dlcluster.cluster import MAX_NODES, ClusterSpec
from dlcluster.errors import InputError
from dlcluster.io._common import MAX_TIME, MIN_TIME, TIME_RANGE, decompressing, is_blank

SAMPLE = 60  # seconds between the samples of a series built here
MAX_DAYS = 3_652  # ten years: the longest series (held per minute, 5.3M samples, and per controller step)
# column names a ready series may use for busy nodes (the Helios artifact's Philly file says ``active``)
USED_NAMES = ("used", "active", "busy")


def read_series(path: str | Path) -> pl.DataFrame:
    """Read a CSV ``time, used|active, total`` (time as epoch seconds or naive UTC ``YYYY-MM-DD HH:MM:SS``)."""
    path = Path(path)
    if not path.is_file():
        raise InputError("no such file", path=path)
    try:
        with decompressing(path):
            raw = pl.read_csv(path, infer_schema=False, glob=False)  # a name with "*" is a name, not a pattern
    except (pl.exceptions.ComputeError, pl.exceptions.NoDataError) as exc:
        raise InputError(f"not a readable CSV ({str(exc).splitlines()[0]})", path=path) from None
    names = [c.strip() for c in raw.columns]  # ("time, active, total", as the docs write it)
    twice = next((c for c in names if names.count(c) > 1), None)
    if twice is not None:
        raise InputError(f"column {twice!r} appears twice", path=path)
    raw.columns = names
    used_name = next((c for c in USED_NAMES if c in raw.columns), None)
    for name, found in (("time", "time" in raw.columns), ("used (or active)", used_name), ("total", "total" in raw.columns)):
        if not found:
            raise InputError(f"missing column {name!r} (columns: {', '.join(raw.columns)})", path=path)
    assert used_name is not None
    text = raw["time"].str.strip_chars()
    time = text.cast(pl.Int64, strict=False)
    for layout in ("%Y-%m-%d %H:%M:%S", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M"):  # naive wall-clock text, as UTC
        time = time.fill_null(text.str.to_datetime(layout, strict=False, time_unit="us").dt.epoch("s"))
    table = pl.DataFrame({
        "time": time,
        "used": raw[used_name].str.strip_chars().cast(pl.Int64, strict=False),
        "total": raw["total"].str.strip_chars().cast(pl.Int64, strict=False),
    })
    for column, source in (("time", "time"), ("used", used_name), ("total", "total")):
        bad = table[column].is_null().arg_true()
        if bad.len():
            row = int(bad[0])
            value = raw[source][row]
            raise InputError("empty" if is_blank(value) else
                             f"not a {'time' if column == 'time' else 'whole number'}: {value!r}",
                             path=path, row=row + 2, field=source)
    outside = table.select(((pl.col("time") < MIN_TIME) | (pl.col("time") > MAX_TIME)).arg_true()).to_series()
    if outside.len():
        row = int(outside[0])
        value = int(table["time"][row])
        # (epoch milliseconds read as seconds fall tens of thousands of years ahead)
        hint = "; the times must be epoch seconds, not milliseconds" if MIN_TIME <= value // 1000 <= MAX_TIME else ""
        raise InputError(f"{value} is out of range (expected {TIME_RANGE}){hint}", path=path, row=row + 2,
                         field="time")
    _check(table, path, used_name)
    check_span(int(table["time"][0]), int(table["time"][-1]), path, "time")
    return table


def check_span(first: int, last: int, path: Path | str | None, field: str) -> None:
    """Refuse a series from ``first`` to ``last`` (epoch seconds) longer than ``MAX_DAYS``."""
    days = (last - first) / 86_400
    if days > MAX_DAYS:
        raise InputError(f"the demand series would span {days:,.0f} days; at most {MAX_DAYS:,} (ten years)",
                         path=path, field=field)


def _check(table: pl.DataFrame, path: Path | str, used_name: str = "used") -> None:
    """Times strictly increasing, 0 <= used <= total: the first row that breaks a rule is named."""
    checks = (
        (pl.col("time").diff() <= 0, "time", "times must increase from row to row"),
        (pl.col("used") < 0, used_name, "busy nodes must not be negative"),
        (pl.col("total") <= 0, "total", "total nodes must be positive"),
        # (as a cluster spec's; far larger counts would also lose their last digits as floats)
        (pl.col("total") > MAX_NODES, "total", f"at most {MAX_NODES:,} nodes are supported"),
        (pl.col("used") > pl.col("total"), used_name, "more busy nodes than total nodes"),
    )
    for rule, field, message in checks:
        bad = table.select(rule.fill_null(False).arg_true()).to_series()
        if bad.len():
            raise InputError(message, path=path, row=int(bad[0]) + 2, field=field)
    if table.height < 2:
        raise InputError(f"a demand series needs at least 2 rows, got {table.height}", path=path)


POOLED_VC = "all"  # the one VC of a pooled simulation's timeline


def from_timeline(timeline: pl.DataFrame, cluster: ClusterSpec | None = None, until: int | None = None,
                  ) -> pl.DataFrame:
    """The whole cluster's series from a simulation's ``timeline``, up to ``until``: busy nodes summed over VCs per
    sample (a VC whose timeline has ended, its last job done, counts as idle).

    Each VC's nodes come from the timeline's ``nodes_<state>`` columns (a run whose nodes changed power state),
    else from ``cluster`` (the run's spec; a pooled run's VC ``all`` has all of its nodes).
    """
    states = [c for c in timeline.columns if c.startswith("nodes_") and c not in ("nodes_busy", "nodes_shared")]
    per_vc = timeline.group_by("vc").agg(
        pl.col("total_gpus").max(), pl.col("nodes_busy").max().alias("busiest"),
        *([pl.sum_horizontal(states).max().alias("nodes")] if states else []))
    if not states:
        if cluster is None:
            raise InputError("the timeline records no node counts: give the run's cluster spec (--cluster FILE; "
                             "only a run whose nodes changed power state records them)", field="nodes_busy")
        nodes = {vc: len(sizes) for vc, sizes in cluster.vcs.items()}
        if per_vc["vc"].to_list() == [POOLED_VC] and POOLED_VC not in nodes:
            nodes[POOLED_VC] = cluster.total_nodes
        missing = per_vc.filter(~pl.col("vc").is_in(list(nodes)))["vc"]
        if missing.len():
            raise InputError(f"VC {missing.sort()[0]!r} of the timeline is not in the cluster spec", field="vc")
        per_vc = per_vc.with_columns(pl.col("vc").replace_strict(nodes, return_dtype=pl.Int64).alias("nodes"))
    over = per_vc.filter(pl.col("busiest") > pl.col("nodes")).sort("vc")
    if over.height:
        vc, busiest, nodes = over.select("vc", "busiest", "nodes").row(0)
        raise InputError(f"VC {vc!r} has {busiest:,} busy nodes at a time, but {nodes:,} node(s) in all: not the run's "
                         "cluster spec", field="nodes_busy")
    busy = timeline.lazy()
    if until is not None:
        busy = busy.filter(pl.col("time") <= until)
    series = busy.group_by("time").agg(
        pl.col("nodes_busy").sum().alias("used"),
        (pl.col("total_gpus") - pl.col("idle_gpus")).sum().alias("used_gpus"),
    ).sort("time").collect()
    if series.height == 0:
        raise InputError("the timeline has no sample before the last submission", field="time")
    return series.select("time", "used", pl.lit(int(per_vc["nodes"].sum()), pl.Int64).alias("total"), "used_gpus",
                         pl.lit(int(per_vc["total_gpus"].sum()), pl.Int64).alias("total_gpus"))


def from_trace(jobs: pl.DataFrame, cluster: ClusterSpec, sample: int = SAMPLE, until: int | None = None,
               ) -> tuple[pl.DataFrame, dict[str, tuple[int, int]]]:
    """Busy nodes per ``sample`` seconds from recorded start/end times, up to ``until`` (default: the last end): per
    VC, its busy GPUs packed onto its largest nodes (the fewest nodes that could hold them), at most the VC's nodes.
    Also, per VC that had more GPUs busy at a time than ``cluster`` gives it (a generated trace's drawn starts, a
    spec of another day): (the most busy, the spec's GPUs).

    A trace records no placement, so this is the demand of a consolidating scheduler (a lower bound on busy nodes).
    """
    if not jobs.select((pl.col("gpu_num") > 0).any()).item():
        raise InputError("no job of the trace uses a GPU: no demand to count", field="gpu_num")
    ran = jobs.filter(pl.col("start_time").is_not_null() & pl.col("end_time").is_not_null()
                      & (pl.col("end_time") > pl.col("start_time")) & (pl.col("gpu_num") > 0))
    if ran.height == 0:
        raise InputError("no GPU job of the trace has both a start and an end time: no demand to count",
                         field="start_time")
    t0 = int(ran["start_time"].min()) // sample * sample  # type: ignore[arg-type]
    last = int(ran["end_time"].max())  # type: ignore[arg-type]
    if until is not None:
        last = min(last, until)
    check_span(t0, last, None, "end_time")
    n = max(0, (last - t0) // sample + 1)  # (none when every start comes after ``until``)
    used = np.zeros(n, dtype=np.int64)
    used_gpus = np.zeros(n, dtype=np.int64)
    parts = {vc: part for (vc,), part in ran.partition_by("vc", as_dict=True).items()}
    capped: dict[str, tuple[int, int]] = {}
    for vc, sizes in cluster.vcs.items():
        part = parts.get(vc)
        if part is None or not sizes:
            continue
        gpus = _busy(part, t0, n, sample)
        if len(gpus) and gpus.max() > sum(sizes):
            capped[vc] = (int(gpus.max()), sum(sizes))
        used_gpus += gpus
        # the fewest nodes holding g GPUs: the largest nodes first
        capacity = np.cumsum(sorted(sizes, reverse=True))
        used += np.where(gpus > 0, np.minimum(np.searchsorted(capacity, gpus) + 1, len(sizes)), 0)
    total = cluster.total_nodes
    return pl.DataFrame({
        "time": np.arange(n, dtype=np.int64) * sample + t0,
        "used": used, "total": np.full(n, total, dtype=np.int64),
        "used_gpus": used_gpus, "total_gpus": np.full(n, cluster.total_gpus, dtype=np.int64),
    }), capped


def _busy(part: pl.DataFrame, t0: int, n: int, sample: int) -> np.ndarray:
    """GPUs busy at each sample t0 + sample·k, from intervals [start, end)."""
    # each time's first sample at or after it: ceil((t - t0) / sample), within [0, n]
    starts, ends = (np.clip(-((t0 - part[c].to_numpy()) // sample), 0, n) for c in ("start_time", "end_time"))
    weights = part["gpu_num"].to_numpy().astype(np.float64)
    diff = np.bincount(starts, weights, minlength=n + 1) - np.bincount(ends, weights, minlength=n + 1)
    return np.rint(np.cumsum(diff)[:n]).astype(np.int64)


def resample(series: pl.DataFrame, step: int) -> pl.DataFrame:
    """Maximum of every column over each ``step`` seconds (steps aligned to the epoch, labelled by their start).

    A step without samples takes the previous step's values (the series is regular afterwards).
    """
    if step <= 0:
        raise InputError(f"the step must be a positive number of seconds, got {step}")
    binned = series.with_columns((pl.col("time") // step * step).alias("time")).group_by("time").max().sort("time")
    start, end = binned["time"][0], binned["time"][-1]
    grid = pl.DataFrame({"time": np.arange(start, end + 1, step, dtype=np.int64)})
    return grid.join(binned, on="time", how="left").fill_null(strategy="forward")
