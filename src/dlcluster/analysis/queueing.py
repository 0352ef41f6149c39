"""Section 6, queueing decomposition of a simulated run: why jobs waited (Philly Table 2).

For each VC the free GPUs form a step function. A waiting second of a job is
*fair-share* when the VC has fewer free GPUs than the job asks for. With the run's
placements (free GPUs per node) the rest splits into *fragmentation* — enough GPUs are
free but no node set can hold the job with its locality (a job up to the largest node's
size needs one node with enough free GPUs; a larger one needs completely free nodes plus
one node for the remainder) — and *queue order*: a placement existed but the policy started
other jobs first or held the queue (head-of-line blocking). "Could be placed" follows the
run's own placement rule (its summary.json): consolidate needs one node for a job up to the
largest node's size and any free GPUs for a larger one; the Helios artifact's consolidate
(compatibility mode, and the rule used when the run's placement is not known) needs whole
free nodes plus one node for the remainder; first-fit, spread and random split freely, so
they never fragment; relax consolidates until the job has waited its T seconds, then
splits; dedicated needs empty nodes for a multi-GPU job. Without placements, or with a
placement rule not listed here, queue order is counted as fragmentation. Each job with a
positive wait is counted under the cause of most of its waiting seconds.
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


RULES = ("consolidate", "artifact", "split", "dedicated")


def placement_rule(placement: str | None, compat: bool = False) -> tuple[str, int] | None:
    """The rule judging "could it be placed?" for a run's placement, and the wait after which a job may split.

    ``None`` placement (unknown run) gives the artifact's rule; a placement this module does
    not know gives ``None``.
    """
    if placement is None or (compat and placement == "consolidate"):
        return "artifact", -1
    base, _, arg = placement.partition(":")
    if base == "relax":
        return "consolidate", int(arg) if arg else 600  # the simulator's default relax_after
    rule = {"consolidate": "consolidate", "first-fit": "split", "spread": "split", "random": "split",
            "dedicated": "dedicated"}.get(base)
    return (rule, -1) if rule else None


def _placeable(free: np.ndarray, sizes: np.ndarray, gpus: int, rule: str = "artifact") -> np.ndarray:
    """Per event interval: could ``rule`` place a job of ``gpus`` GPUs on the nodes' free GPUs?"""
    fits_one = gpus <= sizes.max()
    whole = free == sizes
    if rule == "split" or (rule == "consolidate" and not fits_one) or (rule == "dedicated" and gpus == 1):
        return free.sum(axis=1) >= gpus
    if rule == "dedicated":
        return (whole & (sizes >= gpus)).any(axis=1) if fits_one else np.where(whole, sizes, 0).sum(axis=1) >= gpus
    if fits_one:
        return free.max(axis=1) >= gpus
    partial = np.where(whole, 0, free).max(axis=1)
    return (np.where(whole, sizes, 0).sum(axis=1) + partial) >= gpus


def _vc_causes(part: pl.DataFrame, segs: pl.DataFrame | None, nodes: tuple[int, ...],
               rule: tuple[str, int] = ("artifact", -1)) -> list[pl.DataFrame]:
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
            fits = _placeable(free, sizes, int(g), rule[0])
            # relax: once a job has waited its T seconds any split placement will do, so it no longer fragments
            until = np.minimum(hi, lo + rule[1]) if rule[1] >= 0 else hi
            cols["fragmentation_s"] = integrate_steps(t, ~short & ~fits, 0.0, lo, np.maximum(until, lo))
        frames.append(jobs.select("job_id", "vc", "gpu_num", (pl.col("start") - pl.col("submit")).alias("wait"))
                      .with_columns(*(pl.Series(k, v) for k, v in cols.items())))
    return frames


def wait_causes(sim: pl.DataFrame, spec: ClusterSpec, placements: pl.DataFrame | None = None,
                placement: str | None = None, compat: bool = False) -> pl.DataFrame:
    """Per waiting job: ``job_id, vc, gpu_num, wait``, seconds per cause (``fair_share_s, ...``) and ``cause``.

    With ``placements`` (the simulator's per-node segments) the causes are fair-share,
    fragmentation and queue order, judged by the run's ``placement`` rule (``compat``: the
    artifact's variant); without them, or for a rule not known here, fair-share and
    fragmentation (which then includes queue order).
    """
    rule = placement_rule(placement, compat)
    if rule is None:
        placements = None
    started = sim.filter(pl.col("start").is_not_null() & pl.col("end").is_not_null()
                         & pl.col("vc").is_in(list(spec.vcs)) & (pl.col("gpu_num") > 0))
    segs = placements.partition_by("vc", as_dict=True) if placements is not None else {}
    frames = []
    for (vc,), part in sorted(started.partition_by("vc", as_dict=True).items()):
        vc_segs = None if placements is None else segs.get((vc,), placements.clear())
        frames += _vc_causes(part, vc_segs, spec.vcs[vc], rule or ("artifact", -1))
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
