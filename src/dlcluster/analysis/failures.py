"""Section 5, failures (Philly-style proxies from job status and attempts)."""

from __future__ import annotations

import polars as pl

from dlcluster.analysis.common import cdf_by_size, gpu_seconds, outcome, run_time, size_bucket

EARLY = 300  # seconds: a failure before this much run time counts as early (user/programming errors)


def attempts_per_job(attempts: pl.DataFrame, jobs: pl.DataFrame) -> pl.DataFrame:
    """Jobs by number of scheduling attempts and outcome: ``attempts, outcome, jobs``."""
    counts = attempts.group_by("job_id").agg(pl.len().alias("attempts"))
    j = jobs.select("job_id", outcome().cast(pl.String).fill_null("other").alias("outcome"))
    return (j.join(counts, on="job_id", how="left")
            .with_columns(pl.col("attempts").fill_null(0).clip(upper_bound=10))
            .group_by("attempts", "outcome").agg(pl.len().alias("jobs")).sort("attempts", "outcome"))


def time_to_failure_cdf(jobs: pl.DataFrame) -> pl.DataFrame:
    """CDF of run time (s) before failure of failed GPU jobs, per size bucket: ``bucket, duration, p``."""
    return cdf_by_size(jobs.with_columns(run_time(jobs)).filter(outcome() == "failed"), "duration")


def lost_gpu_time(jobs: pl.DataFrame) -> pl.DataFrame:
    """GPU time by outcome and its share of all GPU time: ``outcome, jobs, gpu_hours, share``."""
    g = jobs.filter(pl.col("gpu_num") > 0).select(outcome().cast(pl.String).fill_null("other").alias("outcome"),
                                                  gpu_seconds().alias("gs"))
    # (GPU-seconds are whole numbers, so their sums are exact in any order; sums of hours were not)
    return (g.group_by("outcome").agg(pl.len().alias("jobs"), pl.col("gs").sum())
            .select("outcome", "jobs", (pl.col("gs") / 3600).alias("gpu_hours"),
                    (pl.col("gs") / pl.col("gs").sum()).fill_nan(None).alias("share"))
            .sort("outcome"))


def early_late_failures(jobs: pl.DataFrame, early: int = EARLY) -> pl.DataFrame:
    """Failed GPU jobs per size bucket split at ``early`` seconds of run time: ``bucket, when, jobs, share, gpu_hours``."""
    f = jobs.with_columns(run_time(jobs)).filter((pl.col("gpu_num") > 0) & (outcome() == "failed")
                                                 & pl.col("duration").is_not_null())
    return (f.select(size_bucket().cast(pl.String).alias("bucket"),
                     pl.when(pl.col("duration") < early).then(pl.lit("early")).otherwise(pl.lit("late")).alias("when"),
                     gpu_seconds().alias("gs"))
            .group_by("bucket", "when").agg(pl.len().alias("jobs"), (pl.col("gs").sum() / 3600).alias("gpu_hours"))
            .with_columns((pl.col("jobs") / pl.col("jobs").sum().over("bucket")).alias("share"))
            .select("bucket", "when", "jobs", "share", "gpu_hours").sort("bucket", "when"))


def repeat_failures(jobs: pl.DataFrame) -> pl.DataFrame:
    """Users by number of failed jobs (capped at 100+): ``failed_jobs, users, failures_share``.

    ``failures_share`` is the share of all failures owned by users with that many failures.
    """
    per_user = (jobs.filter(pl.col("user").is_not_null() & (outcome() == "failed"))
                .group_by("user").agg(pl.len().alias("n")))
    return (per_user.with_columns(pl.col("n").clip(upper_bound=100).alias("failed_jobs"))
            .group_by("failed_jobs").agg(pl.len().alias("users"), pl.col("n").sum().alias("f"))
            .with_columns((pl.col("f") / pl.col("f").sum()).alias("failures_share"))
            .select("failed_jobs", "users", "failures_share").sort("failed_jobs"))
