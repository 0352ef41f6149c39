"""Section 2, cluster: daily and weekly patterns in local time, monthly trends, VC utilisation, load vs wait."""

from __future__ import annotations

from collections.abc import Callable
from typing import cast

import numpy as np
import polars as pl

from dlcluster.analysis.common import gpu_seconds, ordered_mean
from dlcluster.analysis.load import hourly_running, last_recorded, running_at
from dlcluster.cluster import ClusterSpec

LocalTime = Callable[[str], pl.Expr]  # epoch-seconds column name → local datetime (Trace.local_times)
WEEKDAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
HOURLY = ["submissions", "gpu_submissions", "running_gpus"]


def _hourly(jobs: pl.DataFrame, local: LocalTime) -> pl.DataFrame:
    """Per UTC hour up to the last submission: submissions, running GPUs, and the hour's local calendar fields."""
    running = hourly_running(jobs)
    # no start/end times: running GPUs are unknown, not zero
    known = running.height > 0
    subs = jobs.group_by((pl.col("submit_time") // 3600 * 3600).alias("hour_start")).agg(
        pl.len().alias("submissions"), (pl.col("gpu_num") > 0).sum().alias("gpu_submissions"))
    # the observation window ends with the last submission: averaging in the hours where
    # only long jobs drain (months, for a short generated window) would dilute every mean
    lo = min(running["hour_start"].min(), subs["hour_start"].min()) if known else subs["hour_start"].min()
    span = pl.DataFrame({"hour_start": np.arange(lo, subs["hour_start"].max() + 1, 3600, dtype=np.int64)})
    return (
        span.join(running, on="hour_start", how="left").join(subs, on="hour_start", how="left")
        .with_columns(pl.col("submissions", "gpu_submissions").fill_null(0),
                      pl.col("running_gpus").fill_null(pl.lit(0.0 if known else None, pl.Float64)))
        .with_columns(local("hour_start").alias("local"))
        .with_columns(pl.col("local").dt.hour().alias("hour"), pl.col("local").dt.weekday().alias("weekday"),
                      pl.col("local").dt.strftime("%Y-%m").alias("month"))
    )


def _means(columns: list[str]) -> list[pl.Expr]:
    return [ordered_mean(c).alias(c) for c in columns]


def _with_util(df: pl.DataFrame, total_gpus: int | None) -> pl.DataFrame:
    util = pl.col("running_gpus") / total_gpus if total_gpus else pl.lit(None, pl.Float64)
    return df.with_columns(util.alias("utilization"))


def daily_pattern(jobs: pl.DataFrame, local: LocalTime, total_gpus: int | None = None) -> pl.DataFrame:
    """Mean per local hour of day: ``hour, submissions, gpu_submissions, running_gpus, utilization``."""
    h = _hourly(jobs, local)
    out = h.group_by("hour").agg(*_means(HOURLY)).sort("hour")
    return _with_util(out, total_gpus)


def weekly_pattern(jobs: pl.DataFrame, local: LocalTime, total_gpus: int | None = None) -> pl.DataFrame:
    """Mean per local day of week (1 = Monday), per hour: ``weekday, day, submissions, gpu_submissions, running_gpus, utilization``."""
    h = _hourly(jobs, local)
    out = (h.group_by("weekday").agg(*_means(HOURLY))
           .sort("weekday").with_columns(
               pl.col("weekday").replace_strict(dict(enumerate(WEEKDAYS, 1)), return_dtype=pl.String).alias("day")))
    return _with_util(out.select("weekday", "day", "submissions", "gpu_submissions", "running_gpus"), total_gpus)


def monthly_trend(jobs: pl.DataFrame, local: LocalTime, total_gpus: int | None = None) -> pl.DataFrame:
    """Per local calendar month: ``month, month_index`` (1 = the trace's first), ``jobs, gpu_jobs,
    gpu_hours_submitted, running_gpus, utilization``."""
    h = _hourly(jobs, local).group_by("month").agg(*_means(["running_gpus"]))
    subs = (jobs.with_columns(local("submit_time").dt.strftime("%Y-%m").alias("month"))
            .group_by("month").agg(pl.len().alias("jobs"), (pl.col("gpu_num") > 0).sum().alias("gpu_jobs"),
                                    (gpu_seconds().sum() / 3600).alias("gpu_hours_submitted")))
    out = subs.join(h, on="month", how="full", coalesce=True).sort("month").with_columns(
        pl.col("jobs", "gpu_jobs").fill_null(0))
    out = out.with_columns(pl.col("month").rank("dense").cast(pl.Int32).alias("month_index"))
    return _with_util(out.select("month", "month_index", "jobs", "gpu_jobs", "gpu_hours_submitted", "running_gpus"),
                      total_gpus)


def vc_utilization(jobs: pl.DataFrame, spec: ClusterSpec) -> pl.DataFrame:
    """Distribution over hours of each VC's utilisation (running GPUs / VC GPUs): ``vc, gpus, hours, p5..p95, mean``."""
    caps = pl.DataFrame({"vc": list(spec.vcs), "gpus": [spec.gpus(v) for v in spec.vcs]}).filter(pl.col("gpus") > 0)
    running = hourly_running(jobs.filter(pl.col("vc").is_in(caps["vc"].implode())), by_vc=True,
                             until=last_recorded(jobs))
    if running.height == 0:
        return pl.DataFrame(schema={"vc": pl.String, "gpus": pl.Int64, "hours": pl.UInt32, **{
            k: pl.Float64 for k in ("p5", "p25", "p50", "p75", "p95", "mean")}})
    # every hour of the trace, from its first submission to its last, counts for every VC, idle hours included (not
    # only the hours some job ran: a VC idle for days was 100% busy)
    first, last = (int(cast(int, v)) // 3600 * 3600 for v in (jobs["submit_time"].min(), jobs["submit_time"].max()))
    hours = pl.DataFrame({"hour_start": pl.int_range(first, last + 3600, 3600, eager=True, dtype=pl.Int64)})
    full = caps.join(hours, how="cross").join(running, on=["vc", "hour_start"], how="left").with_columns(
        (pl.col("running_gpus").fill_null(0.0) / pl.col("gpus")).alias("u"))
    u = pl.col("u")
    return (full.group_by("vc", "gpus").agg(
        pl.len().alias("hours"), *(u.quantile(q / 100, "linear").alias(f"p{q}") for q in (5, 25, 50, 75, 95)),
        ordered_mean("u").alias("mean")).sort("vc"))


def queue_vs_load(jobs: pl.DataFrame, total_gpus: int | None = None, bins: int = 10) -> pl.DataFrame:
    """Queueing delay of GPU jobs by cluster load at submission: ``load_bin, load_lo, jobs, mean, p50, p90, waited``.

    Load = GPUs held by running jobs at the submit instant, the job's own left out (one that starts at once is
    running then) / cluster GPUs (the spec's total, else the trace's peak running GPUs).
    """
    g = jobs.filter((pl.col("gpu_num") > 0) & pl.col("queue_delay").is_not_null())
    started_at_once = (pl.col("start_time") == pl.col("submit_time")) & (pl.col("end_time") > pl.col("start_time"))
    own = g.select(pl.when(started_at_once).then(pl.col("gpu_num")).otherwise(0)).to_series().to_numpy()
    running = running_at(jobs, g["submit_time"].to_numpy()) - own
    cap = total_gpus or int(running_at(jobs, jobs["start_time"].drop_nulls().to_numpy()).max(initial=0))
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
