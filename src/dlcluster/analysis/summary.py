"""Section 7: the per-trace summary row in the layout of the Helios artifact's ``cluster_summary.csv``.

Times in seconds. CPU jobs have ``gpu_num == 0``; run time = ``duration``;
queue time = ``queue_delay``; run times leave out jobs still running or pending and jobs
that never started; ``avg/med_gpu_num`` are over GPU jobs; rates are shares of
jobs with a final outcome, where ``timeout`` and ``node_fail`` count as failed; the
``*_gpu_time`` columns are GPU-seconds (GPUs × run time) of GPU jobs with that outcome
(empty, not 0, when no GPU job has a final status).
Means, medians and rates are rounded to 3 decimals, as in the artifact.
"""

from __future__ import annotations

import polars as pl

from dlcluster.analysis.common import gpu_seconds, outcome, run_time

COLUMNS = (
    "id", "gpu_num", "job_num", "cpu_job_num", "gpu_job_num", "avg_run_time_cpu", "avg_run_time_gpu",
    "avg_que_time_cpu", "avg_que_time_gpu", "avg_gpu_num", "med_run_time_cpu", "med_run_time_gpu",
    "med_que_time_cpu", "med_que_time_gpu", "med_gpu_num", "complete_rate", "cancel_rate", "fail_rate",
    "complete_rate_cpu", "cancel_rate_cpu", "fail_rate_cpu", "complete_rate_gpu", "cancel_rate_gpu",
    "fail_rate_gpu", "complete_gpu_time", "cancel_gpu_time", "fail_gpu_time",
)
_RATE = {"complete": "completed", "cancel": "cancelled", "fail": "failed"}


def cluster_summary(jobs: pl.DataFrame, name: str, total_gpus: int | None = None) -> pl.DataFrame:
    """One row of the Helios cluster summary for ``jobs`` (``gpu_num`` = cluster GPUs, null if unknown)."""
    cpu, gpu = pl.col("gpu_num") == 0, pl.col("gpu_num") > 0
    o = outcome()

    def rate(kind: str, where: pl.Expr) -> pl.Expr:
        return ((o == _RATE[kind]) & where).sum() / (o.is_not_null() & where).sum()

    exprs = [
        pl.lit(name).alias("id"), pl.lit(total_gpus, pl.Int64).alias("gpu_num"),
        pl.len().alias("job_num"), cpu.sum().alias("cpu_job_num"), gpu.sum().alias("gpu_job_num"),
        pl.col("run_time").filter(cpu).mean().alias("avg_run_time_cpu"),
        pl.col("run_time").filter(gpu).mean().alias("avg_run_time_gpu"),
        pl.col("queue_delay").filter(cpu).mean().alias("avg_que_time_cpu"),
        pl.col("queue_delay").filter(gpu).mean().alias("avg_que_time_gpu"),
        pl.col("gpu_num").filter(gpu).mean().alias("avg_gpu_num"),
        pl.col("run_time").filter(cpu).median().alias("med_run_time_cpu"),
        pl.col("run_time").filter(gpu).median().alias("med_run_time_gpu"),
        pl.col("queue_delay").filter(cpu).median().alias("med_que_time_cpu"),
        pl.col("queue_delay").filter(gpu).median().alias("med_que_time_gpu"),
        pl.col("gpu_num").filter(gpu).median().cast(pl.Float64).alias("med_gpu_num"),
    ]
    for suffix, where in (("", pl.lit(True)), ("_cpu", cpu), ("_gpu", gpu)):
        exprs += [rate(k, where).alias(f"{k}_rate{suffix}") for k in _RATE]
    # without any final status the GPU time per outcome is unknown, not zero
    known = (o.is_not_null() & gpu).any()
    exprs += [pl.when(known).then(gpu_seconds().filter(gpu & (o == v)).sum()).alias(f"{k}_gpu_time")
              for k, v in _RATE.items()]
    # an empty denominator (no CPU jobs, no outcomes) is unknown, not NaN
    row = jobs.with_columns(run_time(jobs).alias("run_time")).select(exprs).with_columns(
        pl.col(pl.Float64).fill_nan(None)).with_columns(pl.col(pl.Float64).exclude("^.*_gpu_time$").round(3))
    return row.with_columns(pl.col("job_num", "cpu_job_num", "gpu_job_num").cast(pl.Int64)).select(COLUMNS)
