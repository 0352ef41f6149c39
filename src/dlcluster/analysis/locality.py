"""Section 4, locality: servers spanned by multi-GPU jobs versus how long they waited (Philly Figure 4)."""

from __future__ import annotations

import polars as pl

from dlcluster.analysis.common import size_bucket


def first_attempts(attempts: pl.DataFrame) -> pl.DataFrame:
    """Each job's first attempt: ``job_id, gpus, servers_spanned``."""
    return (attempts.sort("job_id", "attempt").group_by("job_id", maintain_order=True).first()
            .select("job_id", "gpus", pl.col("servers").list.n_unique().alias("servers_spanned")))


def servers_vs_queue(attempts: pl.DataFrame, jobs: pl.DataFrame, min_gpus: int = 5) -> pl.DataFrame:
    """Queueing delay (s) of jobs with >= ``min_gpus`` GPUs by servers their first attempt spanned.

    Columns ``bucket, servers_spanned, jobs, p50, p90, mean``.
    """
    q = pl.col("queue_delay")
    return (
        first_attempts(attempts).filter(pl.col("gpus") >= min_gpus)
        .join(jobs.select("job_id", "queue_delay"), on="job_id").drop_nulls("queue_delay")
        .group_by(size_bucket("gpus").cast(pl.String).alias("bucket"), "servers_spanned")
        .agg(pl.len().alias("jobs"), q.median().alias("p50"), q.quantile(0.9, "linear").alias("p90"),
             q.mean().alias("mean"))
        .sort("bucket", "servers_spanned")
    )
