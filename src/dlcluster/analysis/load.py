"""Running GPUs over time, from the jobs' start/end intervals (a step function, integrated exactly)."""

from __future__ import annotations

import numpy as np
import polars as pl

HOUR = 3600


def _still_running() -> pl.Expr:
    """A GPU job still running when the trace was taken: status ``running``, a start and no end."""
    return ((pl.col("gpu_num") > 0) & (pl.col("status").cast(pl.String) == "running")
            & pl.col("start_time").is_not_null() & pl.col("end_time").is_null())


def last_recorded(jobs: pl.DataFrame) -> int | None:
    """The trace's last recorded time: its latest submit, start or end (null for an empty trace)."""
    last = jobs.select(pl.max_horizontal(pl.col("submit_time", "start_time", "end_time").max())).item()
    return None if last is None else int(last)


def still_running(jobs: pl.DataFrame) -> tuple[int, int | None]:
    """How many GPU jobs were still running (a start, no end), and the last recorded time they are held until."""
    n = int(jobs.select(_still_running().sum()).item())
    return n, last_recorded(jobs) if n else None


def held_until(last: int | None) -> pl.Expr:
    """Each job's end, and for a GPU job still running ``last``, the trace's last recorded time (the latest moment
    the trace knows of: it ran at least that long, not zero)."""
    return pl.when(_still_running()).then(pl.lit(last, pl.Int64)).otherwise(pl.col("end_time"))


def _intervals(jobs: pl.DataFrame, until: int | None = None) -> pl.DataFrame:
    # ``until``: the last recorded time, when ``jobs`` is part of the trace
    last = until if until is not None else last_recorded(jobs) if jobs.height else None
    return jobs.with_columns(held_until(last).alias("end_time")).filter(
        (pl.col("gpu_num") > 0) & pl.col("start_time").is_not_null() & pl.col("end_time").is_not_null()
        & (pl.col("end_time") >= pl.col("start_time"))
    ).select("vc", "gpu_num", "start_time", "end_time")


def steps(starts: np.ndarray, ends: np.ndarray, gpus: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Event times and the running GPUs from each event time on (ties merged)."""
    times = np.concatenate([starts, ends])
    delta = np.concatenate([gpus, -gpus]).astype(np.int64)
    order = np.argsort(times, kind="stable")
    times, running = times[order], np.cumsum(delta[order])
    last = np.r_[times[1:] != times[:-1], True]
    return times[last], running[last]


def integrate_steps(t: np.ndarray, values: np.ndarray, outside: float, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Integral over each ``[lo, hi)`` of the step function ``values[k]`` on ``[t[k], t[k+1])``.

    It is ``outside`` before ``t[0]`` and keeps ``values[-1]`` after the last event time.
    """
    tt = np.concatenate([[min(t[0], lo.min()) - 1], t, [max(t[-1], hi.max()) + 1]])
    v = np.concatenate([[outside], values.astype(np.float64)])
    cum = np.concatenate([[0.0], np.cumsum(v * np.diff(tt))])
    return np.interp(hi, tt, cum) - np.interp(lo, tt, cum)


def running_at(jobs: pl.DataFrame, instants: np.ndarray, until: int | None = None) -> np.ndarray:
    """GPUs held by running jobs at each instant (a job runs on ``[start, end)``; one still running until ``until``,
    default the last recorded time of ``jobs``)."""
    iv = _intervals(jobs, until)
    if iv.height == 0:
        return np.zeros(len(instants), dtype=np.int64)
    t, r = steps(iv["start_time"].to_numpy(), iv["end_time"].to_numpy(), iv["gpu_num"].to_numpy())
    idx = np.searchsorted(t, instants, side="right") - 1
    return np.where(idx >= 0, r[np.clip(idx, 0, None)], 0)


def hourly_running(jobs: pl.DataFrame, by_vc: bool = False, until: int | None = None, step: int = HOUR,
                   upto: int | None = None) -> pl.DataFrame:
    """Mean GPUs held by running jobs in each UTC hour (or ``step`` seconds): ``[vc,] hour_start, running_gpus``.

    The hours span the first start to the last end of the trace's GPU jobs (of each VC's, ``by_vc``), cut at
    ``upto`` when given; each value is the exact time average of the running-GPU step function over that hour. A
    job still running holds its GPUs until ``until`` (default: the last recorded time of ``jobs``).
    """
    iv = _intervals(jobs, until)
    schema = {**({"vc": pl.String} if by_vc else {}), "hour_start": pl.Int64, "running_gpus": pl.Float64}
    groups = iv.partition_by("vc", as_dict=True, maintain_order=True) if by_vc and iv.height else {("",): iv}
    frames = []
    for (vc,), part in sorted(groups.items()):
        if part.height == 0:
            continue
        # each VC its own span: one job with a far end (bad data, but within range) must not stretch every VC's
        lo = int(part["start_time"].min()) // step * step
        hi = max(-(-int(part["end_time"].max()) // step) * step, lo + step)
        if upto is not None:
            hi = min(hi, max(-(-upto // step) * step, lo + step))
        grid = np.arange(lo, hi + 1, step, dtype=np.int64)
        t, r = steps(part["start_time"].to_numpy(), part["end_time"].to_numpy(), part["gpu_num"].to_numpy())
        gpu_seconds = integrate_steps(t, r, 0.0, grid[:-1], grid[1:])
        frame = pl.DataFrame({"hour_start": grid[:-1], "running_gpus": gpu_seconds / step})
        frames.append(frame.with_columns(pl.lit(vc).alias("vc")).select(list(schema)) if by_vc else frame)
    return pl.concat(frames) if frames else pl.DataFrame(schema=schema)
