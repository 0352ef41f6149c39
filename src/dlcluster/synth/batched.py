"""Sample a batched model (see :class:`~dlcluster.synth.model.Batches`): vectorised NumPy, one draw per batch.

Batches arrive as a Poisson process whose hourly rate is the weekly profile times a day
multiplier (drawn per day, correlated from one day to the next); each batch's jobs follow
its first one after sampled gaps and share GPU count, VC and user; durations are drawn by
quantile from a normal score that adds VC, user, batch and job parts.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import ndtr, ndtri

from dlcluster.synth.calendar import DAY, HOUR, hour_bins
from dlcluster.synth.model import BUCKETS, Batches, Dist, Model, bucket_of


def p_norm(weights: list[float] | np.ndarray) -> np.ndarray:
    """Weights scaled to sum exactly to 1 (model shares are rounded)."""
    w = np.asarray(weights, dtype=float)
    return w / w.sum()


def quantile_draw(dist: Dist, u: np.ndarray) -> np.ndarray:
    """Whole seconds at probabilities ``u`` of a distribution (quantiles interpolated, or a truncated lognormal)."""
    if dist.quantiles:
        probs, q = dist.grid()
        return np.rint(np.expm1(np.interp(u, probs, q))).astype(np.int64)
    assert dist.mu is not None and dist.sigma is not None
    if dist.max_seconds is not None and dist.sigma > 0:
        u = u * ndtr((math.log(dist.max_seconds) - dist.mu) / dist.sigma)
    return np.rint(np.exp(dist.mu + dist.sigma * ndtri(np.clip(u, 1e-15, 1 - 1e-15)))).astype(np.int64)


def mean_batch(sizes: dict[int, float]) -> float:
    """Mean jobs per batch."""
    k = np.array(sorted(sizes))
    return float(k @ p_norm([sizes[x] for x in k]))


def _day_multipliers(batches: Batches, n_days: int, rng: np.random.Generator) -> np.ndarray:
    if not batches.day_rates or n_days == 0:
        return np.ones(n_days)
    z = ar1(batches.day_corr, (1, n_days), rng)[0]
    # the days' ranks pick evenly spaced quantiles: any window holds the fitted spread of busy and quiet days
    # (the total stays near the fitted rate) and the AR(1) scores only decide which days are which
    rank = np.empty(n_days, dtype=np.int64)
    rank[np.argsort(z, kind="stable")] = np.arange(n_days)
    q = np.asarray(batches.day_rates)
    return np.interp((rank + 0.5) / n_days * (len(q) - 1), np.arange(len(q)), q)


def ar1(r: float, shape: tuple[int, int], rng: np.random.Generator) -> np.ndarray:
    """Standard normal AR(1) series along the last axis, lag-1 correlation ``r`` (one step per day, not per job)."""
    e = rng.standard_normal(shape)
    z = np.empty(shape)
    z[..., 0] = e[..., 0]
    for d in range(1, shape[-1]):
        z[..., d] = r * z[..., d - 1] + math.sqrt(1.0 - r * r) * e[..., d]
    return z


def vc_day_shifts(batches: Batches, vc: np.ndarray, day: np.ndarray, vcs: int, rng: np.random.Generator,
                  ) -> np.ndarray:
    """Each batch's duration-score shift for its VC and day: per VC an AR(1) over days (``vc_day_sd``,
    ``vc_day_corr``), so a VC has busy stretches of long jobs; zero without the fitted spread."""
    if batches.vc_day_sd <= 0 or len(vc) == 0:
        return np.zeros(len(vc))
    z = ar1(batches.vc_day_corr, (vcs, int(day.max()) + 1), rng)
    return batches.vc_day_sd * z[vc, day]


def _kinds(model: Model) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every (VC index, GPU count) a batch can be, with its share of the jobs (VC -1: chosen later by ``_vcs``)."""
    if model.vc_jobs:
        rows = [(i, g, model.vc_share[vc] * p) for i, vc in enumerate(model.vc_share)
                for g, p in (model.vc_jobs[vc].gpu_mix if vc in model.vc_jobs else model.gpu_mix).items()]
    else:
        rows = [(-1, g, p) for g, p in model.gpu_mix.items()]
    vc, gpus, share = (np.array(x) for x in zip(*sorted(rows), strict=True))
    return vc.astype(np.int64), gpus.astype(np.int64), p_norm(share)


def _sizes_of(batches: Batches, gpus: int) -> dict[int, float]:
    return batches.by_bucket.get(bucket_of(gpus), batches.sizes)


def stratified(p: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` draws from the categories of ``p``, one uniform per 1/n slice, shuffled: the counts stay within one of
    ``n p`` (independent draws would let the few huge batches swing a window's totals by several percent)."""
    u = (rng.permutation(n) + rng.random(n)) / max(n, 1)
    return np.minimum(np.searchsorted(np.cumsum(p), u, side="right"), len(p) - 1)


def arrivals(model: Model, days: float, load: float, t0: int, rng: np.random.Generator,
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Submit times in order, each job's batch index, and per batch: job count (inside the window), VC index (-1:
    not chosen yet), GPU count and day of arrival (from ``t0``)."""
    batches = model.batches
    assert batches is not None
    kind_vc, kind_gpus, job_share = _kinds(model)
    mean_size = np.array([mean_batch(_sizes_of(batches, int(g))) for g in kind_gpus])
    batch_share = p_norm(job_share / mean_size)
    starts, exposure, how = hour_bins(t0, days, model.timezone)
    day = (starts - t0) // DAY
    base = (model.jobs_per_day / 24.0 * load / float(batch_share @ mean_size)
            * np.asarray(model.weekly_profile)[how] * exposure)
    mult = _day_multipliers(batches, int(day.max()) + 1 if len(day) else 0, rng)
    if len(day) and (base * mult[day]).sum() > 0:
        # busy days landing on weekends rather than weekdays must not change the window's expected total
        mult = mult * base.sum() / (base * mult[day]).sum()
    counts = rng.poisson(base * mult[day])
    nb = int(counts.sum())
    first = np.repeat(starts, counts) + np.floor(rng.random(nb) * np.repeat(exposure, counts) * HOUR).astype(np.int64)
    first = np.sort(first)
    day_b = (first - t0) // DAY
    kind = stratified(batch_share, nb, rng)
    size = np.ones(nb, dtype=np.int64)
    labels = np.array([bucket_of(int(g)) for g in kind_gpus])[kind]
    for label in np.unique(labels):  # a bucket's batches take its batch sizes: large jobs come in small batches
        mask = labels == label
        pmf = batches.by_bucket.get(str(label), batches.sizes)
        k = np.array(sorted(pmf))
        size[mask] = k[stratified(p_norm([pmf[x] for x in k]), int(mask.sum()), rng)]
    owner = np.repeat(np.arange(nb), size)
    n = len(owner)
    gap = np.where(rng.random(n) < batches.gaps.zero_share, 0,
                   np.maximum(quantile_draw(batches.gaps.positive, rng.random(n)), 1)
                   if batches.gaps.positive is not None else 0)
    head = np.concatenate([[0], np.cumsum(size)[:-1]]).astype(np.int64)
    gap[head] = 0  # a batch's first job is at the batch's arrival
    run = np.cumsum(gap)
    submit = first[owner] + run - run[head][owner]
    keep = submit < t0 + round(days * DAY)  # a batch running past the window's end is cut there
    submit, owner = submit[keep], owner[keep]
    order = np.argsort(submit, kind="stable")
    return submit[order], owner[order], np.bincount(owner, minlength=nb), kind_vc[kind], kind_gpus[kind], day_b


def durations(model: Model, gpus: np.ndarray, status: np.ndarray, statuses: list[str], score: np.ndarray,
              ) -> np.ndarray:
    """Each job's duration from its size's (else its bucket and status's) distribution, in the order of ``score``.

    Within each distribution's jobs the scores only rank the jobs: the k-th of n gets the
    quantile at (k - 0.5) / n, so every size keeps its fitted distribution exactly (no
    sampling noise from the correlated scores) while VC, user and batch keep their ordering.
    """
    out = np.zeros(len(gpus), dtype=np.int64)
    cells: dict[tuple[str, int | str], tuple[Dist, np.ndarray]] = {}
    for g in np.unique(gpus):
        spec = model.buckets[bucket_of(int(g))]
        mask = gpus == g
        own = spec.by_size.get(int(g))
        if own is not None:
            cells[(bucket_of(int(g)), int(g))] = (own, mask)
            continue
        for j, s in enumerate(statuses):
            key = (bucket_of(int(g)), s)
            cell = mask & (status == j)
            if cell.any():
                dist, before = cells.get(key, (spec.duration_for(s), np.zeros(len(gpus), dtype=bool)))
                cells[key] = (dist, before | cell)
    for dist, mask in cells.values():
        idx = np.flatnonzero(mask)
        rank = np.empty(len(idx), dtype=np.int64)
        rank[np.argsort(score[idx])] = np.arange(len(idx))  # scores are continuous: ties have probability 0
        out[idx] = quantile_draw(dist, (rank + 0.5) / len(idx))
    return out


def scores(batches: Batches, owner: np.ndarray, nb: int, shift: np.ndarray, spread: np.ndarray,
           common: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Duration normal scores: ``shift`` + ``spread`` × (``common`` (the user and VC-day parts) + batch part + job
    part), per job."""
    batch_part = rng.standard_normal(nb) * batches.batch_sd
    return shift + spread * (common + batch_part[owner] + rng.standard_normal(len(owner)) * batches.job_sd)


BUCKET_LABELS = [label for label, _, _ in BUCKETS]
