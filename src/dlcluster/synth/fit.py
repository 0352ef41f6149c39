"""Fit a :class:`~dlcluster.synth.model.Model` to any canonical trace (vectorised Polars)."""

from __future__ import annotations

import numpy as np
import polars as pl

from dlcluster.cluster import ClusterSpec
from dlcluster.errors import InputError
from dlcluster.synth.calendar import HOUR, hour_bins, local_midnight, weekly_rates
from dlcluster.synth.fit_batches import fit_batches
from dlcluster.synth.fit_quantiles import N_QUANTILES, log_quantiles
from dlcluster.synth.model import ANY, BUCKETS, OUTCOMES, Bucket, Dist, Model, Queue, Users
from dlcluster.trace import Trace

MIN_CELL = 200  # fewer jobs than this in a (bucket, status) cell: use the bucket's pooled durations
DIGITS = 4


def _mix(counts: pl.DataFrame, key: str) -> dict:
    total = counts["n"].sum()
    return {k: round(n / total, 6) for k, n in counts.sort(key).iter_rows() if n}


def _normalise(mix: dict) -> dict:
    # rounding to 6 digits can leave the sum a hair off 1; put the residue on the largest share
    top = max(mix, key=mix.__getitem__)
    return {**mix, top: round(mix[top] + 1.0 - sum(mix.values()), 6)}


def bucket_expr() -> pl.Expr:
    """Expression labelling each job with its GPU-count bucket (``bucket`` column)."""
    expr = pl.lit(None, dtype=pl.String)
    for label, lo, hi in reversed(BUCKETS):
        expr = pl.when(pl.col("gpu_num").is_between(lo, hi)).then(pl.lit(label)).otherwise(expr)
    return expr.alias("bucket")


def _queue(jobs: pl.DataFrame) -> Queue:
    waits = jobs.select(pl.coalesce("queue_delay", pl.col("start_time") - pl.col("submit_time")).alias("q")).filter(
        pl.col("q") >= 0)["q"]
    if waits.len() == 0:
        return Queue()
    positive = waits.filter(waits > 0)
    return Queue(round(1.0 - positive.len() / waits.len(), 6), log_quantiles(positive) if positive.len() else None)


def _bucket(jobs: pl.DataFrame, pooled: Dist) -> Bucket:
    statuses = jobs.group_by("status").agg(pl.len().alias("n"))
    timed = jobs.filter(pl.col("duration").is_not_null())
    durations = {ANY: log_quantiles(timed["duration"]) if timed.height >= MIN_CELL else pooled}
    for status, cell in timed.group_by("status"):
        if cell.height >= MIN_CELL and statuses.height > 1:
            durations[str(status[0])] = log_quantiles(cell["duration"])
    return Bucket(_normalise(_mix(statuses, "status")), durations, _queue(jobs))


def _users(jobs: pl.DataFrame) -> Users | None:
    per_user = jobs.filter(pl.col("user").is_not_null()).group_by("user").agg(pl.len().alias("n"))
    if per_user.height == 0:
        return None
    counts = np.sort(per_user["n"].to_numpy())[::-1].astype(float)
    cum = np.concatenate([[0.0], np.cumsum(counts) / counts.sum()])
    frac = np.linspace(0.0, 1.0, N_QUANTILES)
    curve = np.interp(frac * len(counts), np.arange(len(counts) + 1), cum)
    return Users(per_user.height, None, tuple(round(float(x), DIGITS) for x in curve))


def window(submits: pl.Series, timezone: str) -> tuple[int, float]:
    """The source window: first local midnight and its length in days up to the hour after the last submit."""
    start = local_midnight(int(submits.min()), timezone)
    end = (int(submits.max()) - start) // HOUR * HOUR + HOUR + start
    return start, (end - start) / 86400.0


def finished(jobs: pl.DataFrame) -> pl.DataFrame:
    """The jobs that ended (status one of :data:`OUTCOMES`): a running job's run time so far, or a pending job's
    none, is an artefact of when the trace was taken, and a model makes finished jobs only."""
    return jobs.filter(pl.col("status").cast(pl.String).is_in(OUTCOMES).fill_null(False))


def fit(trace: Trace, *, cluster: ClusterSpec | None = None, name: str | None = None,
        provenance: str = "", batched: bool = True) -> Model:
    """Fit a model to a canonical trace; VC sizes from ``cluster`` or the trace's own spec.

    ``batched=False`` fits the plain model (Poisson arrivals, jobs independent of each other).
    """
    jobs = finished(trace.jobs)
    if jobs.height == 0:
        raise InputError("no finished jobs to fit a workload model to", path=trace.source or None)
    if jobs["duration"].null_count() == jobs.height:
        raise InputError("no job has a duration to fit", path=trace.source or None, field="duration")
    jobs = jobs.with_columns(bucket_expr(), pl.col("status").cast(pl.String))
    start, days = window(jobs["submit_time"], trace.timezone)

    rates = weekly_rates(jobs["submit_time"], start, days, trace.timezone)
    rates = np.where(np.isnan(rates), np.nanmean(rates), rates)
    profile = np.round(rates / rates.mean(), DIGITS)
    _, exposure, how = hour_bins(start, days, trace.timezone)
    jobs_per_day = 24.0 * jobs.height / float((profile[how] * exposure).sum())

    timed = jobs.filter(pl.col("duration").is_not_null())
    pooled = log_quantiles(timed["duration"])
    buckets = {str(label[0]): _bucket(part, pooled) for label, part in jobs.group_by("bucket")}
    gpu_mix = _normalise({int(g): p for g, p in _mix(jobs.group_by("gpu_num").agg(pl.len().alias("n")),
                                                    "gpu_num").items()})

    spec = cluster or trace.cluster
    vc_counts = jobs.group_by("vc").agg(pl.len().alias("n"))
    if spec is not None:
        vc_counts = vc_counts.filter(pl.col("vc").is_in(list(spec.vcs)))
    buckets = dict(sorted(buckets.items()))
    batches, vc_jobs = None, {}
    if batched:
        capacity = {vc: sum(n) for vc, n in spec.vcs.items()} if spec is not None else {}
        buckets, batches, vc_jobs = fit_batches(
            jobs, buckets, start=start, days=days, timezone=trace.timezone, jobs_per_day=jobs_per_day,
            profile=tuple(float(x) for x in profile), vc_capacity=capacity)
    return Model(
        name=name or trace.name,
        cluster=str(jobs["cluster"].mode().sort()[0]),
        timezone=trace.timezone,
        start=start,
        days=round(days, 6),
        jobs_per_day=round(jobs_per_day, 4),
        weekly_profile=tuple(float(x) for x in profile),
        gpu_mix=gpu_mix,
        buckets=buckets,
        users=_users(jobs),
        vcs=dict(spec.vcs) if spec is not None else {},
        vc_share=_normalise(_mix(vc_counts, "vc")) if vc_counts.height else {},
        provenance=provenance or f"fitted by dlcluster.synth.fit from {trace.source or trace.name}",
        batches=batches,
        vc_jobs=vc_jobs,
    )
