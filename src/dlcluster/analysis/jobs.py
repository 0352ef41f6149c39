"""Section 1, jobs: durations, size mix, outcomes by size, queueing delay (pure table → table)."""

from __future__ import annotations

import polars as pl

from dlcluster.analysis.common import (
    cdf_by_size,
    cdf_points,
    gpu_seconds,
    outcome,
    run_time,
    size_bucket,
)


def duration_cdf(jobs: pl.DataFrame) -> pl.DataFrame:
    """CDF of run time (s) for GPU jobs and CPU jobs: ``kind, duration, p``."""
    kind = pl.when(pl.col("gpu_num") > 0).then(pl.lit("GPU jobs")).otherwise(pl.lit("CPU jobs")).alias("kind")
    return cdf_points(jobs.select(kind, run_time(jobs)), "duration", ["kind"])


def size_mix(jobs: pl.DataFrame) -> pl.DataFrame:
    """Share of GPU jobs and of GPU time per GPU count: ``gpu_num, jobs, job_share, gpu_time_share``."""
    g = jobs.filter(pl.col("gpu_num") > 0)
    return (
        g.group_by("gpu_num")
        .agg(pl.len().alias("jobs"), gpu_seconds().sum().alias("gpu_seconds"))
        .with_columns(
            (pl.col("jobs") / pl.col("jobs").sum()).alias("job_share"),
            # no GPU time at all (every job ran 0 s): no share, not NaN
            (pl.col("gpu_seconds") / pl.col("gpu_seconds").sum()).fill_nan(None).alias("gpu_time_share"),
        )
        .sort("gpu_num")
    )


def outcome_by_size(jobs: pl.DataFrame) -> pl.DataFrame:
    """Outcome shares per size bucket, by job count and by GPU time: ``bucket, outcome, jobs, job_share, gpu_time_share``."""
    g = jobs.filter(pl.col("gpu_num") > 0).select(
        size_bucket().alias("bucket"), outcome().alias("outcome"), gpu_seconds().alias("gs")
    ).drop_nulls("outcome")
    both = pl.concat([g, g.with_columns(pl.lit("all").alias("bucket"))], how="vertical_relaxed")
    return (
        both.with_columns(pl.col("bucket").cast(pl.String))
        .group_by("bucket", "outcome")
        .agg(pl.len().alias("jobs"), pl.col("gs").sum().alias("gpu_seconds"))
        .with_columns(
            (pl.col("jobs") / pl.col("jobs").sum().over("bucket")).alias("job_share"),
            (pl.col("gpu_seconds") / pl.col("gpu_seconds").sum().over("bucket")).fill_nan(None).alias("gpu_time_share"),
        )
        .sort("bucket", "outcome")
    )


def duration_by_size(jobs: pl.DataFrame) -> pl.DataFrame:
    """Run time (s) percentiles of GPU jobs per size bucket: ``bucket, jobs, p10, p50, p90, mean``."""
    d = pl.col("duration")
    return (
        jobs.with_columns(run_time(jobs)).filter(pl.col("gpu_num") > 0).drop_nulls("duration")
        .group_by(size_bucket().alias("bucket"))
        .agg(pl.len().alias("jobs"), d.quantile(0.1, "linear").alias("p10"), d.median().alias("p50"),
             d.quantile(0.9, "linear").alias("p90"), d.mean().alias("mean"))
        .sort("bucket")
    )


def median_duration_by_gpus(jobs: pl.DataFrame) -> pl.DataFrame:
    """Median run time (s) per exact GPU count: ``gpu_num, jobs, median``."""
    return (
        jobs.with_columns(run_time(jobs)).filter(pl.col("gpu_num") > 0).drop_nulls("duration")
        .group_by("gpu_num").agg(pl.len().alias("jobs"), pl.col("duration").median().alias("median"))
        .sort("gpu_num")
    )


def duration_cdf_by_size(jobs: pl.DataFrame) -> pl.DataFrame:
    """CDF of GPU-job run time (s) per size bucket: ``bucket, duration, p``."""
    return cdf_by_size(jobs.with_columns(run_time(jobs)), "duration")


def queue_cdf_by_size(jobs: pl.DataFrame) -> pl.DataFrame:
    """CDF of queueing delay (s) of GPU jobs per size bucket: ``bucket, queue_delay, p``."""
    return cdf_by_size(jobs, "queue_delay")


def queue_cdf_by_vc(jobs: pl.DataFrame, top: int = 8) -> pl.DataFrame:
    """CDF of queueing delay (s) of GPU jobs for the ``top`` VCs by GPU-job count: ``vc, queue_delay, p``."""
    g = jobs.filter((pl.col("gpu_num") > 0) & pl.col("queue_delay").is_not_null())
    busiest = g.group_by("vc").len().sort(["len", "vc"], descending=[True, False]).head(top).get_column("vc")
    return cdf_points(g.filter(pl.col("vc").is_in(busiest.implode())).select("vc", "queue_delay"), "queue_delay", ["vc"])
