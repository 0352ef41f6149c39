"""Shared vocabulary of the characterisation analyses: size buckets, outcomes, GPU time, CDF points."""

from __future__ import annotations

import polars as pl

# Philly's GPU-count buckets (the study's Tables 2 and 3 and its duration-by-size figure)
SIZE_BUCKETS = ("1", "2-4", "5-8", ">8")
SizeBucket = pl.Enum(list(SIZE_BUCKETS))
# final outcomes as counted by both studies: timeout and node failure are failures
OUTCOMES = ("completed", "cancelled", "failed")
Outcome = pl.Enum(list(OUTCOMES))
CDF_POINTS = 200


def size_bucket(column: str = "gpu_num") -> pl.Expr:
    """GPU-count bucket 1 / 2-4 / 5-8 / >8 (null for CPU-only jobs)."""
    g = pl.col(column)
    return (
        pl.when(g == 1).then(pl.lit("1"))
        .when(g.is_between(2, 4)).then(pl.lit("2-4"))
        .when(g.is_between(5, 8)).then(pl.lit("5-8"))
        .when(g > 8).then(pl.lit(">8"))
        .otherwise(None)
        .cast(SizeBucket)
    )


def outcome(column: str = "status") -> pl.Expr:
    """completed / cancelled / failed (failed, timeout, node_fail); null for running, pending, other."""
    s = pl.col(column).cast(pl.String)
    return (
        pl.when(s == "completed").then(pl.lit("completed"))
        .when(s == "cancelled").then(pl.lit("cancelled"))
        .when(s.is_in(["failed", "timeout", "node_fail"])).then(pl.lit("failed"))
        .otherwise(None)
        .cast(Outcome)
    )


def gpu_seconds() -> pl.Expr:
    """GPU time of a job: GPUs × run time, in GPU-seconds (float, so sums cannot overflow)."""
    return pl.col("gpu_num").cast(pl.Float64) * pl.col("duration").cast(pl.Float64)


def run_time(jobs: pl.DataFrame) -> pl.Expr:
    """``duration`` as a run time for run-time statistics: null for a job still running or pending (its time so
    far is not what it runs) and for one that never started (no start in a trace that records starts: a job
    cancelled in the queue ran 0 s only in the sense that it never ran)."""
    never = pl.col("start_time").is_null() if has_values(jobs, "start_time") else pl.lit(False)
    gone = pl.col("status").cast(pl.String).is_in(["running", "pending"]) | never
    return pl.when(gone).then(pl.lit(None, jobs.schema["duration"])).otherwise(pl.col("duration")).alias("duration")


def ordered_mean(column: str) -> pl.Expr:
    """Mean of a float column that does not depend on row order (nulls ignored, null when empty).

    Polars' parallel group-by adds floats in a varying order, so a plain ``mean()`` can
    change in the last bits from run to run; a cumulative sum over the sorted values is
    sequential, so the same input always gives the same bits.
    """
    x = pl.col(column).drop_nulls().sort()
    return x.cum_sum().last() / x.len()


def has_values(jobs: pl.DataFrame, column: str) -> bool:
    """Whether ``column`` holds at least one non-null value."""
    return jobs.get_column(column).null_count() < jobs.height


def has_outcomes(jobs: pl.DataFrame) -> bool:
    """Whether any job has a final outcome (traces without status are all ``other``)."""
    return jobs.select(outcome().is_not_null().any()).item()


def cdf_points(df: pl.DataFrame, value: str, by: list[str] | None = None, points: int = CDF_POINTS) -> pl.DataFrame:
    """Empirical CDF of ``value`` per group, thinned to about ``points`` steps: ``by..., value, p``.

    One row per distinct value, ``p`` the share of the group's non-null values that are <= ``value``; the thinning
    keeps the last value of each 1/points step, each group's least and greatest value and every value holding at
    least 1/points of the group's (a wait of 0 s for most jobs), so the curve is exact at the points it keeps.
    """
    by = by or []

    def per_group(e: pl.Expr) -> pl.Expr:
        return e.over(by) if by else e

    d = df.select([*by, value]).drop_nulls(value)
    if d.height == 0:
        return d.with_columns(pl.lit(None, pl.Float64).alias("p")).clear()
    d = d.group_by([*by, value]).agg(pl.len().alias("_k")).sort([*by, value])
    below, n = per_group(pl.col("_k").cum_sum()), per_group(pl.col("_k").sum())
    d = d.with_columns((below / n).alias("p"), (below * points // n).alias("_step"))
    last_of_step = (pl.col("_step") != per_group(pl.col("_step").shift(-1))).fill_null(True)
    first = per_group(pl.int_range(pl.len())) == 0
    return d.filter(last_of_step | first | (pl.col("_k") * points >= n)).drop("_step", "_k")


def cdf_by_size(jobs: pl.DataFrame, value: str) -> pl.DataFrame:
    """CDF of ``value`` over the GPU jobs of ``jobs`` per size bucket: ``bucket, value, p``."""
    g = jobs.filter(pl.col("gpu_num") > 0).select(size_bucket().cast(pl.String).alias("bucket"), value)
    return cdf_points(g, value, ["bucket"])
