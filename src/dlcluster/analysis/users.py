"""Section 3, users: how few users consume most resources, how long each user waits, who completes."""

from __future__ import annotations

import polars as pl

from dlcluster.analysis.common import cdf_points, gpu_seconds, outcome


def resource_concentration(jobs: pl.DataFrame) -> pl.DataFrame:
    """Share of GPU and CPU time used by the top x of users: ``resource, user_share, resource_share``.

    Users are ranked by their own total (largest first); ``user_share`` is the fraction of
    users with any use of that resource, ``resource_share`` their cumulative share of it.
    GPU time = GPUs × run time; CPU time = CPU cores × run time (jobs with a CPU count).
    """
    per_user = jobs.filter(pl.col("user").is_not_null()).group_by("user").agg(*_resources())
    long = per_user.unpivot(index="user", variable_name="resource", value_name="used").filter(pl.col("used") > 0)
    return (
        long.sort(["resource", "used", "user"], descending=[False, True, False])
        .with_columns(
            ((pl.int_range(pl.len()).over("resource") + 1) / pl.len().over("resource")).alias("user_share"),
            (pl.col("used").cum_sum().over("resource") / pl.col("used").sum().over("resource")).alias("resource_share"),
        )
        .select("resource", "user_share", "resource_share")
    )


def _resources() -> list[pl.Expr]:
    return [gpu_seconds().sum().alias("GPU time"),
            (pl.col("cpu_num").cast(pl.Float64) * pl.col("duration").cast(pl.Float64)).sum().alias("CPU time")]


def without_user(jobs: pl.DataFrame) -> dict[str, float]:
    """Per resource (GPU time, CPU time) the share of it used by jobs without a user, where some is."""
    total, anonymous = (jobs.filter(f).select(*_resources()).row(0, named=True)
                        for f in (pl.lit(True), pl.col("user").is_null()))
    return {r: (anonymous[r] or 0.0) / total[r] for r in total if total[r] and anonymous[r]}


def user_queue_cdf(jobs: pl.DataFrame) -> pl.DataFrame:
    """CDF over users of each user's mean queueing delay (s) of GPU jobs: ``mean_queue_delay, p``."""
    per_user = (jobs.filter((pl.col("gpu_num") > 0) & pl.col("user").is_not_null())
                .group_by("user").agg(pl.col("queue_delay").mean().alias("mean_queue_delay")))
    return cdf_points(per_user, "mean_queue_delay")


def user_completion_cdf(jobs: pl.DataFrame) -> pl.DataFrame:
    """CDF over users of their completion ratio (completed / finished GPU jobs): ``completion_ratio, p``."""
    per_user = (jobs.filter((pl.col("gpu_num") > 0) & pl.col("user").is_not_null())
                .with_columns(outcome().alias("o")).drop_nulls("o")
                .group_by("user").agg((pl.col("o") == "completed").mean().alias("completion_ratio")))
    return cdf_points(per_user, "completion_ratio")
