"""Section 6, queueing decomposition of a simulated run: why jobs waited (Philly Table 2).

For each VC the free GPUs form a step function. A waiting second of a job is
*fair-share* when the VC has fewer free GPUs than the job asks for. With the run's
placements (free GPUs per node) the rest splits into *fragmentation* — enough GPUs are
free but no node set can hold the job with its locality (a job up to the largest node's
size needs one node with enough free GPUs; a larger one needs completely free nodes plus
one node for the remainder) — and *queue order*: a placement existed but the policy started
other jobs first or held the queue (head-of-line blocking). Without placements, queue order
is counted as fragmentation. Each job with a positive wait is counted under the cause of
most of its waiting seconds.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from dlcluster.analysis.common import SIZE_BUCKETS, size_bucket
from dlcluster.analysis.load import integrate_steps, steps
from dlcluster.cluster import ClusterSpec
from dlcluster.errors import InputError

SIM_COLUMNS = ("job_id", "vc", "gpu_num", "submit", "start", "end")
CAUSES = ("fair-share", "fragmentation", "queue-order")
PLACEMENT_COLUMNS = ("vc", "node", "gpus", "start", "end")


def _seconds_column(cause: str) -> str:
    return f"{cause.replace('-', '_')}_s"


def check_sim_jobs(sim: pl.DataFrame, source: str = "<sim jobs>") -> pl.DataFrame:
    """Check the simulator's per-job table has the needed columns with integer times."""
    for col in SIM_COLUMNS:
        if col not in sim.columns:
            raise InputError(f"missing column '{col}' (need {', '.join(SIM_COLUMNS)})", path=source)
    for col in ("gpu_num", "submit", "start", "end"):
        if not sim.schema[col].is_integer():
            raise InputError(f"expected integers, found {sim.schema[col]}", path=source, field=col)
    return sim


def _node_free(segs: pl.DataFrame, nodes: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    """Event times and the free GPUs of every node from each event time on: ``(t[k], free[k, node])``."""
    start, end = segs["start"].to_numpy(), segs["end"].to_numpy()
    node, gpus = segs["node"].to_numpy(), segs["gpus"].to_numpy().astype(np.int32)
    t = np.unique(np.concatenate([start, end, [0]]))  # never empty: a VC whose jobs never ran is all free
    delta = np.zeros((len(t), len(nodes)), dtype=np.int32)
    np.add.at(delta, (np.searchsorted(t, start), node), -gpus)
    np.add.at(delta, (np.searchsorted(t, end), node), gpus)
    return t, np.asarray(nodes, dtype=np.int32) + np.cumsum(delta, axis=0)


def _placeable(free: np.ndarray, sizes: np.ndarray, gpus: int) -> np.ndarray:
    """Per event interval: could a consolidated placement of ``gpus`` GPUs be found in the free GPUs?"""
    if gpus <= sizes.max():
        return free.max(axis=1) >= gpus
    whole = free == sizes
    partial = np.where(whole, 0, free).max(axis=1)
    return (np.where(whole, sizes, 0).sum(axis=1) + partial) >= gpus


def _vc_causes(part: pl.DataFrame, segs: pl.DataFrame | None, nodes: tuple[int, ...]) -> list[pl.DataFrame]:
    """Waiting seconds by cause for the waiting jobs of one VC, one frame per GPU count."""
    cap = sum(nodes)
    if segs is not None:
        t, free = _node_free(segs, nodes)
        total = free.sum(axis=1)
    else:
        t, running = steps(part["start"].to_numpy(), part["end"].to_numpy(), part["gpu_num"].to_numpy())
        free, total = None, cap - running
    sizes = np.asarray(nodes)
    frames = []
    waiting = part.filter(pl.col("start") > pl.col("submit"))
    for (g,), jobs in waiting.partition_by("gpu_num", as_dict=True).items():
        lo, hi = jobs["submit"].to_numpy(), jobs["start"].to_numpy()
        short = total < g
        cols = {"fair_share_s": integrate_steps(t, short, float(cap < g), lo, hi)}
        if free is not None:
            fits = _placeable(free, sizes, int(g))
            cols["fragmentation_s"] = integrate_steps(t, ~short & ~fits, 0.0, lo, hi)
        frames.append(jobs.select("job_id", "vc", "gpu_num", (pl.col("start") - pl.col("submit")).alias("wait"))
                      .with_columns(*(pl.Series(k, v) for k, v in cols.items())))
    return frames


def wait_causes(sim: pl.DataFrame, spec: ClusterSpec, placements: pl.DataFrame | None = None) -> pl.DataFrame:
    """Per waiting job: ``job_id, vc, gpu_num, wait``, seconds per cause (``fair_share_s, ...``) and ``cause``.

    With ``placements`` (the simulator's per-node segments) the causes are fair-share,
    fragmentation and queue order; without, fair-share and fragmentation (which then
    includes queue order).
    """
    started = sim.filter(pl.col("start").is_not_null() & pl.col("end").is_not_null()
                         & pl.col("vc").is_in(list(spec.vcs)) & (pl.col("gpu_num") > 0))
    segs = placements.partition_by("vc", as_dict=True) if placements is not None else {}
    frames = []
    for (vc,), part in sorted(started.partition_by("vc", as_dict=True).items()):
        vc_segs = None if placements is None else segs.get((vc,), placements.clear())
        frames += _vc_causes(part, vc_segs, spec.vcs[vc])
    causes = CAUSES if placements is not None else CAUSES[:2]
    cols = [_seconds_column(c) for c in causes]
    if not frames:
        return pl.DataFrame(schema={"job_id": pl.String, "vc": pl.String, "gpu_num": pl.Int64, "wait": pl.Int64,
                                    **dict.fromkeys(cols, pl.Float64), "cause": pl.String})
    out = pl.concat(frames, how="vertical_relaxed").with_columns(
        (pl.col("wait") - pl.sum_horizontal(cols[:-1])).alias(cols[-1]))
    # the cause with most seconds; ties go to the earlier cause in CAUSES
    best = pl.concat_list(cols).list.arg_max()
    return (out.with_columns(best.replace_strict(dict(enumerate(causes)), return_dtype=pl.String).alias("cause"))
            .sort("vc", "job_id"))


def decomposition_table(causes: pl.DataFrame) -> pl.DataFrame:
    """Table 2: waiting jobs per size bucket and cause: ``bucket, cause, jobs, share, wait_hours``."""
    present = [c for c in CAUSES if _seconds_column(c) in causes.columns]
    grid = pl.DataFrame({"bucket": list(SIZE_BUCKETS)}).join(pl.DataFrame({"cause": present}), how="cross")
    counts = (causes.with_columns(size_bucket().cast(pl.String).alias("bucket"))
              .group_by("bucket", "cause").agg(pl.len().alias("jobs"), (pl.col("wait").sum() / 3600).alias("wait_hours")))
    return (grid.join(counts, on=["bucket", "cause"], how="left")
            .with_columns(pl.col("jobs").fill_null(0).cast(pl.Int64), pl.col("wait_hours").fill_null(0.0))
            .with_columns((pl.col("jobs") / pl.col("jobs").sum().over("bucket")).fill_nan(None).alias("share"))
            .select("bucket", "cause", "jobs", "share", "wait_hours"))
