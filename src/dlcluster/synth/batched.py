"""Sample a batched model (see :class:`~dlcluster.synth.model.Batches`): vectorised NumPy, one draw per batch.

Batches arrive as a Poisson process whose hourly rate is the weekly profile times a day
multiplier (drawn per day, correlated from one day to the next, or the source's own
calendar); each VC takes a share of a day's batches that follows its own busy days, and
sizes them from its own batch sizes; a VC's multi-GPU batches, and apart from them its 1-GPU
ones, come in sessions, hours apart at most; each batch's jobs follow its first one after sampled
gaps and share GPU count, VC and user; durations are drawn by quantile from a normal score
that adds VC, user, VC-day, batch and job parts.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
import polars as pl
from scipy.special import ndtr, ndtri

from dlcluster.synth.calendar import DAY, HOUR, arrival_clock, hour_bins
from dlcluster.synth.model import BUCKETS, SESSION_MIN_GPUS, TOO_LONG, Batches, Dist, Model, bucket_of


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
    seconds = np.exp(dist.mu + dist.sigma * ndtri(np.clip(u, 1e-15, 1 - 1e-15)))
    return np.rint(np.minimum(seconds, TOO_LONG)).astype(np.int64)  # (a far tail past int64: refused once drawn)


def mean_batch(sizes: dict[int, float]) -> float:
    """Mean jobs per batch."""
    k = np.array(sorted(sizes))
    return float(k @ p_norm([sizes[x] for x in k]))


def _day_multipliers(batches: Batches, n_days: int, rng: np.random.Generator, replay: bool) -> tuple[np.ndarray, int]:
    """Each day's rate multiplier, drawn from the fitted ones, or (``replay``) the source window's own, day by day,
    for as many first days as it covers (how many: the second value)."""
    if not batches.day_rates or n_days == 0:
        return np.ones(n_days), 0
    z = ar1(batches.day_corr, (1, n_days), rng)[0]
    # the days' ranks pick evenly spaced quantiles: any window holds the fitted spread of busy and quiet days
    # (the total stays near the fitted rate) and the AR(1) scores only decide which days are which
    rank = np.empty(n_days, dtype=np.int64)
    rank[np.argsort(z, kind="stable")] = np.arange(n_days)
    q = np.asarray(batches.day_rates)
    mult = np.interp((rank + 0.5) / n_days * (len(q) - 1), np.arange(len(q)), q)
    known = min(n_days, len(batches.day_sequence)) if replay else 0
    mult[:known] = batches.day_sequence[:known]  # the source's calendar (a ramp-up, its busy weeks) as it was
    return mult, known


def ar1(r: float | np.ndarray, shape: tuple[int, int], rng: np.random.Generator) -> np.ndarray:
    """Standard normal AR(1) series along the last axis, lag-1 correlation ``r`` (one per row, or one for all; one
    step per day, not per job)."""
    e = rng.standard_normal(shape)
    z = np.empty(shape)
    z[..., 0] = e[..., 0]
    keep = np.sqrt(1.0 - np.asarray(r) ** 2)
    for d in range(1, shape[-1]):
        z[..., d] = r * z[..., d - 1] + keep * e[..., d]
    return z


def per_vc(model: Model, field: str, default: float) -> np.ndarray:
    """Each VC's (in ``vc_share`` order) own ``field`` of its ``vc_jobs``, ``default`` where it has none."""
    own = [getattr(model.vc_jobs[vc], field) if vc in model.vc_jobs else None for vc in model.vc_share]
    return np.array([default if x is None else x for x in own], dtype=float)


def vc_day_params(model: Model) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per VC the spread and lag-1 correlation of its day shift (its own, else the pooled ones) and the shift's
    correlation with its rate scores."""
    batches = model.batches
    assert batches is not None
    sd = per_vc(model, "day_shift_sd", batches.vc_day_sd)
    pooled = np.isnan(per_vc(model, "day_shift_sd", np.nan))
    corr = np.where(pooled, batches.vc_day_corr, per_vc(model, "day_shift_corr", 0.0))
    return sd, corr, per_vc(model, "rate_score_corr", 0.0)


def vc_period_shifts(sd: np.ndarray, corr: np.ndarray, vc: np.ndarray, period: np.ndarray, rng: np.random.Generator,
                     coupled: tuple[np.ndarray, np.ndarray] | None = None) -> np.ndarray:
    """Each batch's duration-score shift for its VC and ``period`` (days, or hours): per VC an AR(1) over the periods
    (spread ``sd[vc]``, lag-1 correlation ``corr[vc]``), so a VC has stretches of long jobs; zero without a fitted
    spread.

    ``coupled`` (each VC's rate scores, VCs × days as from :func:`arrivals`, and the correlation of its shift with
    them; periods of days only): a VC's busy days bring shorter jobs where the fit found that they did.
    """
    if not (sd > 0).any() or len(vc) == 0:
        return np.zeros(len(vc))
    z = ar1(corr, (len(sd), int(period.max()) + 1), rng)
    if coupled is not None:  # (the rate scores cover the window, the batches' days a prefix of it)
        c = coupled[1][:, None]
        z = c * coupled[0][:, : z.shape[1]] + np.sqrt(1.0 - c**2) * z
    return sd[vc] * z[vc, period]


def _kinds(model: Model) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every (VC index, GPU count) a batch can be, with its share of the jobs (VC -1: chosen later by ``_vcs``)."""
    if model.vc_jobs:
        rows = [(i, g, model.vc_share[vc] * p) for i, vc in enumerate(model.vc_share)
                for g, p in (model.vc_jobs[vc].gpu_mix if vc in model.vc_jobs else model.gpu_mix).items()]
    else:
        rows = [(-1, g, p) for g, p in model.gpu_mix.items()]
    vc, gpus, share = (np.array(x) for x in zip(*sorted(rows), strict=True))
    return vc.astype(np.int64), gpus.astype(np.int64), p_norm(share)


def _sizes_of(model: Model, vc: str | None, gpus: int) -> tuple[tuple[str | None, str], dict[int, float]]:
    """The batch sizes of a kind of batch, and where they come from: its VC's own for its bucket (VC, bucket), else
    the bucket's (None, bucket), else the cluster's."""
    batches, label = model.batches, bucket_of(gpus)
    assert batches is not None
    own = model.vc_jobs[vc].batch_sizes.get(label) if vc in model.vc_jobs else None
    return ((vc, label), own) if own else ((None, label), batches.by_bucket.get(label, batches.sizes))


def _slices(n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` uniforms, one per 1/n slice, shuffled."""
    return (rng.permutation(n) + rng.random(n)) / max(n, 1)


def stratified(p: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` draws from the categories of ``p``, one uniform per 1/n slice, shuffled: the counts stay within one of
    ``n p`` (independent draws would let the few huge batches swing a window's totals by several percent)."""
    return np.minimum(np.searchsorted(np.cumsum(p), _slices(n, rng), side="right"), len(p) - 1)


def _by_day(shares: np.ndarray, day: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One draw per entry of ``day`` from that day's categories (``shares``: days × categories)."""
    u = _slices(len(day), rng)
    return np.minimum((np.cumsum(shares, axis=1)[day] <= u[:, None]).sum(axis=1), shares.shape[1] - 1)


def vc_rate_scores(model: Model, n_days: int, rng: np.random.Generator) -> np.ndarray | None:
    """Each VC's day-to-day rate scores (VCs × days: a standard normal AR(1) per VC); None when no VC has a fitted
    spread."""
    if not (per_vc(model, "rate_sd", 0.0) > 0).any() or n_days == 0:
        return None
    return ar1(per_vc(model, "rate_corr", 0.0), (len(model.vc_share), n_days), rng)


def _day_shares(model: Model, p: np.ndarray, kind_vc: np.ndarray, scores: np.ndarray, day_weight: np.ndarray,
                ) -> np.ndarray:
    """Each kind's share of each day's batches (days × kinds): ``p`` times its VC's lognormal rate from ``scores``,
    rescaled (iterative proportional fitting) until every kind's expected share over the window, days weighted by
    their expected batches ``day_weight``, is its share ``p`` again."""
    sd = per_vc(model, "rate_sd", 0.0)
    rate = np.vstack([np.exp(sd[:, None] * scores), np.ones((1, scores.shape[1]))])  # VC -1 (none yet): flat
    w = p * rate[kind_vc].T
    weight = day_weight / day_weight.sum()
    for _ in range(50):
        share = w / w.sum(axis=1, keepdims=True)
        got = weight @ share
        if np.abs(got - p).max() < 1e-9:
            break
        w *= p / np.where(got > 0, got, 1.0)
    return w / w.sum(axis=1, keepdims=True)


def _to_counts(kind: np.ndarray, want: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """``kind`` with randomly chosen draws of the categories it holds too often given to those it holds too
    rarely, until each category ``k`` appears ``want[k]`` times (the draws per day vary: the few huge batches of
    one VC's kinds would swing the window's job count by several percent)."""
    have = np.bincount(kind, minlength=len(want))
    order = rng.permutation(len(kind))
    # each draw's rank among its category's draws, in the random order: the ones ranked past ``want`` are surplus
    ranked = kind[order]
    first = np.argsort(ranked, kind="stable")
    rank = np.empty(len(kind), dtype=np.int64)
    rank[first] = np.arange(len(kind)) - np.repeat(np.concatenate([[0], np.cumsum(have)[:-1]]), have)
    surplus = order[rank >= want[ranked]]
    out = kind.copy()
    out[surplus] = rng.permutation(np.repeat(np.arange(len(want)), np.maximum(want - have, 0)))
    return out


def _runs(arrival: np.ndarray, pause: np.ndarray, head: np.ndarray, run_of: np.ndarray,
          clock: tuple[np.ndarray, np.ndarray], end: int) -> np.ndarray:
    """The arrivals of runs of batches (each batch's run: ``run_of``; its first batches: ``head``): a run's first at
    its run's ``arrival``, the others after their ``pause`` in ``clock`` seconds (0 at the heads), a run that would
    pass ``end`` moved to end by it."""
    since = np.cumsum(pause)
    tick = np.interp(arrival, *clock)
    # a run that would pass the window's end starts earlier: the window keeps its jobs, as many as its rate gives
    start = np.maximum(np.minimum(tick, np.interp(end - 1, *clock) - np.add.reduceat(pause, head)), clock[1][0])
    wall = np.rint(np.interp(start[run_of] + since - since[head][run_of], clock[1], clock[0])).astype(np.int64)
    wall[head] = np.where(start == tick, arrival, wall[head])
    return wall


def in_sessions(model: Model, vc: np.ndarray, gpus: np.ndarray, first: np.ndarray, rng: np.random.Generator,
                clock: tuple[np.ndarray, np.ndarray], end: int, load: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """Each batch's arrival once each VC's multi-GPU batches, and apart from them its 1-GPU ones, are grouped into
    sessions, and its session (the index of the session's first batch; a batch outside sessions is its own).

    A VC's batches of one kind, in arrival order, are cut into runs of drawn session sizes (its own; a VC without
    them has none); a run's first batch keeps its arrival and the others follow it after drawn pauses (its own,
    else the cluster's) on the arrival ``clock`` (:func:`~dlcluster.synth.calendar.arrival_clock`), ``load`` times
    as fast: sessions start as often as the rate says, their batches come together, and they slow down through
    quiet nights and days instead of filling a ramp-up's near-empty ones (the window's ``end``: :func:`_runs`).
    """
    batches = model.batches
    assert batches is not None
    session = np.arange(len(first))
    first = first.copy()
    names = list(model.vc_share)
    multi = gpus >= SESSION_MIN_GPUS
    for kind, pooled, sizes_field, gaps_field in (
            (multi, batches.session_gaps, "session_sizes", "session_gaps"),
            (~multi, batches.one_gpu_session_gaps, "one_gpu_session_sizes", "one_gpu_session_gaps")):
        for v in np.unique(vc[kind]) if pooled is not None else ():
            own = model.vc_jobs.get(names[v]) if v >= 0 else None
            pmf = getattr(own, sizes_field) if own else {}
            if not pmf:
                continue
            pauses = getattr(own, gaps_field) or pooled
            idx = np.flatnonzero(kind & (vc == v))
            k = np.array(sorted(pmf))
            p = p_norm([pmf[x] for x in k])
            expected = math.ceil(len(idx) / float(k @ p))  # sessions
            sizes = k[stratified(p, expected, rng)]
            while sizes.sum() < len(idx):  # (a window's few long sessions may fall short of its batches)
                sizes = np.concatenate([sizes, k[stratified(p, expected, rng)]])
            run_of = np.repeat(np.arange(len(sizes)), sizes)[: len(idx)]
            head = np.flatnonzero(np.r_[True, run_of[1:] != run_of[:-1]])
            pause = quantile_draw(pauses, rng.random(len(idx))) / load
            pause[head] = 0
            first[idx] = _runs(first[idx[head]], pause, head, run_of, clock, end)
            session[idx] = idx[head][run_of]
    return first, session


def same_sizes(model: Model, kind: np.ndarray, kind_vc: np.ndarray, session: np.ndarray, first: np.ndarray,
               rng: np.random.Generator) -> np.ndarray:
    """``kind`` with each VC's session batches' kinds redealt so that a session's batch keeps the GPU count of the one
    before with ``Batches.session_same`` more chance than the VC's mix gives, each VC keeping its count of each kind.

    A VC's session batches, session by session, take their kinds from the VC's own: the first batch of a session
    draws one (in proportion to those left), a later one keeps the previous batch's kind with probability
    ``session_same`` if any is left, else draws.
    """
    batches = model.batches
    assert batches is not None
    followers = session != np.arange(len(session))
    if not batches.session_same or not followers.any():
        return kind
    kind = kind.copy()
    in_session = np.isin(session, session[followers])  # the batches of sessions of more than one batch
    vcs = kind_vc[kind]
    u = rng.random((len(kind), 2))
    for v in np.unique(vcs[in_session]):
        idx = np.flatnonzero(in_session & (vcs == v))
        idx = idx[np.lexsort((idx, first[idx], session[idx]))]
        kinds, left = np.unique(kind[idx], return_counts=True)
        left = left.tolist()
        total, prev = len(idx), -1
        for b in idx:
            if session[b] != b and prev >= 0 and left[prev] and u[b, 0] < batches.session_same:
                k = prev
            else:  # (drawn in proportion to the kinds left)
                k, rest = 0, int(u[b, 1] * total)
                while rest >= left[k]:
                    rest -= left[k]
                    k += 1
            left[k] -= 1
            total -= 1
            kind[b], prev = kinds[k], k
    return kind


def after_overlaps(session: np.ndarray, first: np.ndarray, span: np.ndarray, min_gap: int) -> np.ndarray:
    """Per batch, how much later it starts so that it begins at least ``min_gap`` seconds after the last job (``first``
    + ``span``, as moved) of the batch before it in its ``session`` (by ``first``): a session's sweeps follow one
    another, where overlapping they would be one batch; a batch with room to spare stays where it is."""
    # moved start x_i = max(first_i, x_(i-1) + span_(i-1) + min_gap) = c_i + max over j <= i of (first_j - c_j), c the
    # session's running sum of span + min_gap before i
    batches = pl.DataFrame({"i": np.arange(len(first)), "session": session, "first": first, "step": span + min_gap})
    c = pl.col("step").cum_sum().over("session") - pl.col("step")
    moved = batches.sort("session", "first", "i").with_columns(c.alias("c")).select(
        "i", (pl.col("c") + (pl.col("first") - pl.col("c")).cum_max().over("session") - pl.col("first")).alias("by"))
    return moved.sort("i")["by"].to_numpy()


class Arrivals(NamedTuple):
    """What :func:`arrivals` draws: per job its submit time (in order) and batch; per batch its job count (inside the
    window), VC index (-1: not chosen yet), GPU count, day and hour (from the window's start) and session (see
    :func:`in_sessions`); each VC's rate scores."""

    submit: np.ndarray
    owner: np.ndarray
    size: np.ndarray
    vc: np.ndarray
    gpus: np.ndarray
    day: np.ndarray
    hour: np.ndarray
    session: np.ndarray
    vc_rate: np.ndarray | None


def arrivals(model: Model, days: float, load: float, t0: int, rng: np.random.Generator, replay: bool = True,
             ) -> Arrivals:
    """Batches and their jobs over ``days`` from ``t0`` (``replay``: the source's calendar, if the window covers the
    source's)."""
    batches = model.batches
    assert batches is not None
    kind_vc, kind_gpus, job_share = _kinds(model)
    names = list(model.vc_share)
    sources, pmfs = zip(*(_sizes_of(model, names[v] if v >= 0 else None, int(g))
                          for v, g in zip(kind_vc, kind_gpus, strict=True)), strict=True)
    mean_size = np.array([mean_batch(pmf) for pmf in pmfs])
    batch_share = p_norm(job_share / mean_size)
    starts, exposure, how = hour_bins(t0, days, model.timezone)
    day = (starts - t0) // DAY
    base = (model.jobs_per_day / 24.0 * load / float(batch_share @ mean_size)
            * np.asarray(model.weekly_profile)[how] * exposure)
    # the source's calendar belongs to the source's window: a shorter one from its start would be all ramp-up
    covers = t0 == model.start and days >= model.days
    mult, known = _day_multipliers(batches, int(day.max()) + 1 if len(day) else 0, rng, replay and covers)
    drawn = day >= known
    if (base * mult[day])[drawn].sum() > 0:
        # busy days landing on weekends rather than weekdays must not change the drawn days' expected total
        mult[known:] *= base[drawn].sum() / (base * mult[day])[drawn].sum()
    expected = base * mult[day]  # batches per hour bin
    counts = rng.poisson(expected)
    nb = int(counts.sum())
    first = np.repeat(starts, counts) + np.floor(rng.random(nb) * np.repeat(exposure, counts) * HOUR).astype(np.int64)
    first = np.sort(first)
    day_b = (first - t0) // DAY
    kind = stratified(batch_share, nb, rng)
    rate = vc_rate_scores(model, len(mult), rng)
    if rate is not None:  # a VC's share of each day's batches follows its busy days, each kind as often as before
        by_day = _day_shares(model, batch_share, kind_vc, rate, np.bincount(day, weights=expected))
        kind = _to_counts(_by_day(by_day, day_b, rng), np.bincount(kind, minlength=len(batch_share)), rng)
    clock = arrival_clock(starts, exposure, expected)
    first, session = in_sessions(model, kind_vc[kind], kind_gpus[kind], first, rng, clock, t0 + round(days * DAY), load)
    # (a 1-GPU session's batches are all of one kind: only the multi-GPU sessions' kinds are redealt)
    kind = same_sizes(model, kind, kind_vc, np.where(kind_gpus[kind] >= SESSION_MIN_GPUS, session, np.arange(nb)),
                      first, rng)
    size = np.ones(nb, dtype=np.int64)
    # the kinds that share a batch-size distribution (a bucket's, or a VC's own for it) take it stratified together:
    # large jobs come in small batches, and a small VC's in its own
    distinct = {source: i for i, source in enumerate(sources)}
    group = np.array([distinct[source] for source in sources])[kind]
    for g in np.unique(group):
        mask = group == g
        pmf = pmfs[g]
        k = np.array(sorted(pmf))
        size[mask] = k[stratified(p_norm([pmf[x] for x in k]), int(mask.sum()), rng)]
    owner = np.repeat(np.arange(nb), size)
    n = len(owner)
    gap = np.where(rng.random(n) < batches.gaps.zero_share, 0,
                   np.maximum(quantile_draw(batches.gaps.positive, rng.random(n)), 1)
                   if batches.gaps.positive is not None else 0)
    head = np.cumsum(size) - size  # (empty when no batch was drawn)
    gap[head] = 0  # a batch's first job is at the batch's arrival
    run = np.cumsum(gap)
    first = first + after_overlaps(session, first, run[head + size - 1] - run[head], batches.max_gap + 1)
    # a session's later batches may fall past the window's end (their jobs are cut below): they count on its last day
    day_b = np.minimum((first - t0) // DAY, len(mult) - 1)
    hour_b = np.minimum((first - t0) // HOUR, len(mult) * 24 - 1)
    submit = first[owner] + run - run[head][owner]
    keep = submit < t0 + round(days * DAY)  # a batch running past the window's end is cut there
    submit, owner = submit[keep], owner[keep]
    order = np.argsort(submit, kind="stable")
    return Arrivals(submit[order], owner[order], np.bincount(owner, minlength=nb), kind_vc[kind], kind_gpus[kind], day_b,
                    hour_b, session, rate)


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
        # scores tie where a VC's score quantiles repeat a value: a stable sort ranks tied jobs in job order, the
        # default one in an order that depends on the CPU's SIMD sort kernel (another trace on another machine)
        rank[np.argsort(score[idx], kind="stable")] = np.arange(len(idx))
        out[idx] = quantile_draw(dist, (rank + 0.5) / len(idx))
    return out


def score_parts(batches: Batches, owner: np.ndarray, nb: int, common: np.ndarray, rng: np.random.Generator,
                ) -> np.ndarray:
    """Each job's standardised duration score: ``common`` (its user and VC-day parts) + its batch's part + its own."""
    batch_part = rng.standard_normal(nb) * batches.batch_sd
    return common + batch_part[owner] + rng.standard_normal(len(owner)) * batches.job_sd


def score_sd(batches: Batches, day_sd: np.ndarray) -> np.ndarray:
    """The spread of a job's standardised score: its user, VC-day (``day_sd``), VC-hour, batch and job parts
    together."""
    return np.sqrt(batches.user_sd**2 + np.asarray(day_sd) ** 2 + batches.vc_hour_sd**2 + batches.batch_sd**2
                   + batches.job_sd**2)


BUCKET_LABELS = [label for label, _, _ in BUCKETS]
