"""Section 2, cluster: daily and weekly patterns in local time, monthly trends, VC utilisation, load vs wait."""

from __future__ import annotations

import math
from collections.abc import Callable, Collection
from typing import cast

import numpy as np
import polars as pl

from dlcluster.analysis.common import gpu_seconds, ordered_mean
from dlcluster.analysis.load import HOUR, held_until, hourly_running, last_recorded, running_at
from dlcluster.cluster import ClusterSpec

LocalTime = Callable[[str], pl.Expr]  # epoch-seconds column name → local datetime (Trace.local_times)
WEEKDAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
HOURLY = ["submissions", "gpu_submissions", "running_gpus", "spec_gpus"]


def _local_step(lo: int, hi: int, local: LocalTime) -> int:
    """The longest bin (seconds, dividing an hour) on whose grid every local hour between ``lo`` and ``hi`` starts:
    an hour, but 30 or 15 minutes in zones such as Asia/Kolkata or Asia/Kathmandu."""
    hours = pl.DataFrame({"t": np.arange(lo // HOUR * HOUR, hi + HOUR, HOUR, dtype=np.int64)})
    offsets = hours.select(_offset(local).unique())["offset"].to_list()
    return math.gcd(HOUR, *offsets)


def _hour_of(t: int, local: LocalTime) -> int:
    """The first UTC second of the local hour holding instant ``t``."""
    return int(pl.DataFrame({"t": [t]}).select(pl.col("t") - (pl.col("t") + _offset(local)) % HOUR).item())


def _offset(local: LocalTime, column: str = "t") -> pl.Expr:
    """Seconds the local wall clock is ahead of UTC at each instant of ``column``."""
    return (local(column).dt.replace_time_zone(None).dt.epoch("s") - pl.col(column)).alias("offset")


def _hourly(jobs: pl.DataFrame, local: LocalTime, vcs: Collection[str] | None = None) -> pl.DataFrame:
    """Per local hour up to the last submission: submissions, running GPUs (``spec_gpus``: those of ``vcs``' jobs,
    when given), and the hour's local calendar fields; ``hour_start`` is the hour's first UTC second."""
    first, last = (int(cast(int, jobs["submit_time"].min())), int(cast(int, jobs["submit_time"].max())))
    # bins on which local hours start (a UTC hour straddles two local ones in a zone of a half-hour offset)
    step = _local_step(first, last, local)
    # whole local hours, from the one of the first submission (no job starts before it) to the one of the last
    lo, upto = _hour_of(first, local), _hour_of(last, local) + HOUR
    running = hourly_running(jobs, step=step, upto=upto)
    # no start/end times: running GPUs are unknown, not zero
    known = running.height > 0
    unknown = pl.lit(0.0 if known else None, pl.Float64)
    if vcs is not None and known and not jobs["vc"].is_in(list(vcs)).all():
        covered = hourly_running(jobs.filter(pl.col("vc").is_in(list(vcs))), step=step, upto=upto,
                                 until=last_recorded(jobs)).rename({"running_gpus": "spec_gpus"})
        running = running.join(covered, on="hour_start", how="left").with_columns(pl.col("spec_gpus").fill_null(0.0))
    else:
        running = running.with_columns(pl.col("running_gpus").alias("spec_gpus"))
    subs = jobs.group_by((pl.col("submit_time") // step * step).alias("t")).agg(
        pl.len().alias("submissions"), (pl.col("gpu_num") > 0).sum().alias("gpu_submissions"))
    # the observation window ends with the last submission: averaging in the hours where
    # only long jobs drain (months, for a short generated window) would dilute every mean
    bins = (pl.DataFrame({"t": np.arange(lo, upto, step, dtype=np.int64)})
            .join(running.rename({"hour_start": "t"}), on="t", how="left").join(subs, on="t", how="left")
            .with_columns(pl.col("submissions", "gpu_submissions").fill_null(0),
                          pl.col("running_gpus", "spec_gpus").fill_null(unknown), _offset(local)))
    # each bin into its local hour (named by the hour's first UTC second: a repeated hour at the end of daylight
    # saving is two hours); its bins are of equal length, so their mean is the hour's time average
    return (
        bins.group_by((pl.col("t") - (pl.col("t") + pl.col("offset")) % HOUR).alias("hour_start"))
        .agg(pl.col("submissions", "gpu_submissions").sum(), *_means(["running_gpus", "spec_gpus"]))
        .sort("hour_start")
        .with_columns(local("hour_start").alias("local"))
        .with_columns(pl.col("local").dt.hour().alias("hour"), pl.col("local").dt.weekday().alias("weekday"),
                      pl.col("local").dt.strftime("%Y-%m").alias("month"))
    )


def _means(columns: list[str]) -> list[pl.Expr]:
    return [ordered_mean(c).alias(c) for c in columns]


def _with_util(df: pl.DataFrame, total_gpus: int | None) -> pl.DataFrame:
    # the spec's VCs' jobs over the spec's GPUs: jobs of VCs it lacks count in GPUs in use, not in utilisation
    util = pl.col("spec_gpus") / total_gpus if total_gpus else pl.lit(None, pl.Float64)
    return df.with_columns(util.alias("utilization")).drop("spec_gpus")


def daily_pattern(jobs: pl.DataFrame, local: LocalTime, total_gpus: int | None = None,
                  vcs: Collection[str] | None = None) -> pl.DataFrame:
    """Mean per local hour of day: ``hour, submissions, gpu_submissions, running_gpus, utilization`` (utilisation:
    GPUs held by the jobs of ``vcs``, the spec's VCs, over their ``total_gpus``)."""
    h = _hourly(jobs, local, vcs)
    out = h.group_by("hour").agg(*_means(HOURLY)).sort("hour")
    return _with_util(out, total_gpus)


def weekly_pattern(jobs: pl.DataFrame, local: LocalTime, total_gpus: int | None = None,
                   vcs: Collection[str] | None = None) -> pl.DataFrame:
    """Mean per local day of week (1 = Monday), per hour: ``weekday, day, submissions, gpu_submissions, running_gpus,
    utilization`` (as in :func:`daily_pattern`)."""
    h = _hourly(jobs, local, vcs)
    out = (h.group_by("weekday").agg(*_means(HOURLY))
           .sort("weekday").with_columns(
               pl.col("weekday").replace_strict(dict(enumerate(WEEKDAYS, 1)), return_dtype=pl.String).alias("day")))
    return _with_util(out.select("weekday", "day", *HOURLY), total_gpus)


def monthly_trend(jobs: pl.DataFrame, local: LocalTime, total_gpus: int | None = None,
                  vcs: Collection[str] | None = None) -> pl.DataFrame:
    """Per local calendar month: ``month, month_index`` (1 = the trace's first), ``jobs, gpu_jobs,
    gpu_hours_submitted, running_gpus, utilization`` (as in :func:`daily_pattern`)."""
    h = _hourly(jobs, local, vcs).group_by("month").agg(*_means(["running_gpus", "spec_gpus"]))
    subs = (jobs.with_columns(local("submit_time").dt.strftime("%Y-%m").alias("month"))
            .group_by("month").agg(pl.len().alias("jobs"), (pl.col("gpu_num") > 0).sum().alias("gpu_jobs"),
                                    (gpu_seconds().sum() / HOUR).alias("gpu_hours_submitted")))
    # a month without submissions had none of their GPU-hours either (left empty, its line bridged the month)
    out = subs.join(h, on="month", how="full", coalesce=True).sort("month").with_columns(
        pl.col("jobs", "gpu_jobs").fill_null(0), pl.col("gpu_hours_submitted").fill_null(0.0))
    out = out.with_columns(pl.col("month").rank("dense").cast(pl.Int32).alias("month_index"))
    return _with_util(out.select("month", "month_index", "jobs", "gpu_jobs", "gpu_hours_submitted", "running_gpus",
                                 "spec_gpus"), total_gpus)


def vc_utilization(jobs: pl.DataFrame, spec: ClusterSpec) -> pl.DataFrame:
    """Distribution over hours of each VC's utilisation (running GPUs / VC GPUs): ``vc, gpus, hours, p5..p95, mean``."""
    caps = pl.DataFrame({"vc": list(spec.vcs), "gpus": [spec.gpus(v) for v in spec.vcs]}).filter(pl.col("gpus") > 0)
    # every hour of the trace, from its first submission to its last, counts for every VC, idle hours included (not
    # only the hours some job ran: a VC idle for days was 100% busy)
    first, last = (int(cast(int, v)) // HOUR * HOUR for v in (jobs["submit_time"].min(), jobs["submit_time"].max()))
    running = hourly_running(jobs.filter(pl.col("vc").is_in(caps["vc"].implode())), by_vc=True,
                             until=last_recorded(jobs), upto=last + HOUR)
    if running.height == 0:
        return pl.DataFrame(schema={"vc": pl.String, "gpus": pl.Int64, "hours": pl.UInt32, **{
            k: pl.Float64 for k in ("p5", "p25", "p50", "p75", "p95", "mean")}})
    hours = pl.DataFrame({"hour_start": pl.int_range(first, last + HOUR, HOUR, eager=True, dtype=pl.Int64)})
    full = caps.join(hours, how="cross").join(running, on=["vc", "hour_start"], how="left").with_columns(
        (pl.col("running_gpus").fill_null(0.0) / pl.col("gpus")).alias("u"))
    u = pl.col("u")
    return (full.group_by("vc", "gpus").agg(
        pl.len().alias("hours"), *(u.quantile(q / 100, "linear").alias(f"p{q}") for q in (5, 25, 50, 75, 95)),
        ordered_mean("u").alias("mean")).sort("vc"))


def queue_vs_load(jobs: pl.DataFrame, total_gpus: int | None = None, bins: int = 10,
                  vcs: Collection[str] | None = None) -> pl.DataFrame:
    """Queueing delay of GPU jobs by cluster load at submission: ``load_bin, load_lo, jobs, mean, p50, p90, waited``.

    Load = GPUs held by running jobs at the submit instant, the job's own left out (one that starts at once is
    running then) / cluster GPUs (the spec's total, else the trace's peak running GPUs). ``vcs``: the spec's VCs,
    whose jobs alone are counted (others have no capacity to load).
    """
    last = last_recorded(jobs)  # (a job still running holds its GPUs until then, its own submission included)
    if vcs is not None:
        jobs = jobs.filter(pl.col("vc").is_in(list(vcs)))
    g = jobs.filter((pl.col("gpu_num") > 0) & pl.col("queue_delay").is_not_null())
    started_at_once = (pl.col("start_time") == pl.col("submit_time")) & (held_until(last) > pl.col("start_time"))
    own = g.select(pl.when(started_at_once).then(pl.col("gpu_num")).otherwise(0)).to_series().to_numpy()
    running = running_at(jobs, g["submit_time"].to_numpy(), last) - own
    cap = total_gpus or int(running_at(jobs, jobs["start_time"].drop_nulls().to_numpy(), last).max(initial=0))
    if g.height == 0 or cap <= 0:
        return pl.DataFrame(schema={"load_bin": pl.Int64, "load_lo": pl.Float64, "jobs": pl.UInt32,
                                    "mean": pl.Float64, "p50": pl.Float64, "p90": pl.Float64, "waited": pl.Float64})
    q = pl.col("queue_delay")
    return (
        g.with_columns(pl.Series("load", running / cap))
        .with_columns(pl.col("load").mul(bins).floor().clip(0, bins - 1).cast(pl.Int64).alias("load_bin"))
        .group_by("load_bin").agg(pl.len().alias("jobs"), q.mean().alias("mean"), q.median().alias("p50"),
                                  q.quantile(0.9, "linear").alias("p90"), (q > 0).mean().alias("waited"))
        .with_columns((pl.col("load_bin") / bins).alias("load_lo"))
        .select("load_bin", "load_lo", "jobs", "mean", "p50", "p90", "waited").sort("load_bin")
    )
