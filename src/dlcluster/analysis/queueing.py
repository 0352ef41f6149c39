"""Section 6, queueing decomposition of a simulated run: fair-share versus fragmentation (Philly Table 2).

For each VC the free GPUs form a step function (VC GPUs minus GPUs of running jobs). A
waiting second of a job is *fair-share* when the VC has fewer free GPUs than the job
asks for, and *fragmentation* otherwise: enough GPUs are free but the job was not
placed (no node set with the required locality, or an earlier job holds the queue).
Each job with a positive wait is counted under the cause of most of its waiting seconds.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from dlcluster.analysis.common import SIZE_BUCKETS, size_bucket
from dlcluster.analysis.load import steps
from dlcluster.cluster import ClusterSpec
from dlcluster.errors import InputError

SIM_COLUMNS = ("job_id", "vc", "gpu_num", "submit", "start", "end")
CAUSES = ("fair-share", "fragmentation")


def check_sim_jobs(sim: pl.DataFrame, source: str = "<sim jobs>") -> pl.DataFrame:
    """Check the simulator's per-job table has the needed columns with integer times."""
    for col in SIM_COLUMNS:
        if col not in sim.columns:
            raise InputError(f"missing column '{col}' (need {', '.join(SIM_COLUMNS)})", path=source)
    for col in ("gpu_num", "submit", "start", "end"):
        if not sim.schema[col].is_integer():
            raise InputError(f"expected integers, found {sim.schema[col]}", path=source, field=col)
    return sim


def _fair_seconds(free_t: np.ndarray, free: np.ndarray, cap: int, gpus: int,
                  lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Seconds within each ``[lo, hi)`` during which fewer than ``gpus`` GPUs were free."""
    short = (free < gpus).astype(np.float64)
    # the step function holds ``cap`` free GPUs before its first event and after its last one
    t = np.concatenate([[min(free_t[0], lo.min()) - 1], free_t, [max(free_t[-1], hi.max()) + 1]])
    s = np.concatenate([[float(cap < gpus)], short, [float(cap < gpus)]])
    cum = np.concatenate([[0.0], np.cumsum(s[:-1] * np.diff(t))])
    return np.interp(hi, t, cum) - np.interp(lo, t, cum)


def wait_causes(sim: pl.DataFrame, spec: ClusterSpec) -> pl.DataFrame:
    """Per waiting job: ``job_id, vc, gpu_num, wait, fair_share_s, fragmentation_s, cause``."""
    started = sim.filter(pl.col("start").is_not_null() & pl.col("end").is_not_null()
                         & pl.col("vc").is_in(list(spec.vcs)) & (pl.col("gpu_num") > 0))
    frames = []
    for (vc,), part in sorted(started.partition_by("vc", as_dict=True).items()):
        t, running = steps(part["start"].to_numpy(), part["end"].to_numpy(), part["gpu_num"].to_numpy())
        cap = spec.gpus(vc)
        waiting = part.filter(pl.col("start") > pl.col("submit"))
        for (g,), jobs in waiting.partition_by("gpu_num", as_dict=True).items():
            fair = _fair_seconds(t, cap - running, cap, int(g), jobs["submit"].to_numpy(), jobs["start"].to_numpy())
            frames.append(jobs.select("job_id", "vc", "gpu_num", (pl.col("start") - pl.col("submit")).alias("wait"))
                          .with_columns(pl.Series("fair_share_s", fair)))
    if not frames:
        return pl.DataFrame(schema={"job_id": pl.String, "vc": pl.String, "gpu_num": pl.Int64, "wait": pl.Int64,
                                    "fair_share_s": pl.Float64, "fragmentation_s": pl.Float64, "cause": pl.String})
    return (pl.concat(frames, how="vertical_relaxed")
            .with_columns((pl.col("wait") - pl.col("fair_share_s")).alias("fragmentation_s"))
            .with_columns(pl.when(pl.col("fair_share_s") >= pl.col("fragmentation_s")).then(pl.lit(CAUSES[0]))
                          .otherwise(pl.lit(CAUSES[1])).alias("cause"))
            .sort("vc", "job_id"))


def decomposition_table(causes: pl.DataFrame) -> pl.DataFrame:
    """Table 2: waiting jobs per size bucket and cause: ``bucket, cause, jobs, share, wait_hours``."""
    grid = pl.DataFrame({"bucket": list(SIZE_BUCKETS)}).join(pl.DataFrame({"cause": list(CAUSES)}), how="cross")
    counts = (causes.with_columns(size_bucket().cast(pl.String).alias("bucket"))
              .group_by("bucket", "cause").agg(pl.len().alias("jobs"), (pl.col("wait").sum() / 3600).alias("wait_hours")))
    return (grid.join(counts, on=["bucket", "cause"], how="left")
            .with_columns(pl.col("jobs").fill_null(0).cast(pl.Int64), pl.col("wait_hours").fill_null(0.0))
            .with_columns((pl.col("jobs") / pl.col("jobs").sum().over("bucket")).fill_nan(None).alias("share"))
            .select("bucket", "cause", "jobs", "share", "wait_hours"))
