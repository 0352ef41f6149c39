"""Sample a canonical :class:`~dlcluster.trace.Trace` from a model: vectorised and seeded."""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence

import numpy as np
import polars as pl
from scipy.special import ndtr, ndtri

from dlcluster.errors import ConfigError
from dlcluster.io._common import MAX_TIME, TIME_RANGE
from dlcluster.schema import conform
from dlcluster.sim.prepare import LOAD_RANGE, check_load, check_seed  # (synth's load limits: the simulator's)
from dlcluster.synth import batched
from dlcluster.synth.calendar import HOUR, hour_bins
from dlcluster.synth.model import BUCKETS, MAX_SECONDS, TOO_LONG, Dist, Model, Users, bucket_of, check_window
from dlcluster.trace import Trace


def _p(weights: list[float] | np.ndarray) -> np.ndarray:
    # model shares are rounded to 6 digits; numpy's choice wants an exact sum of 1
    w = np.asarray(weights, dtype=float)
    return w / w.sum()


def sample_seconds(dist: Dist, rng: np.random.Generator, size: int) -> np.ndarray:
    """Draw ``size`` whole-second values from a distribution."""
    u = rng.random(size)
    if dist.quantiles and dist.tail:
        probs, q = dist.grid()
        return np.rint(np.expm1(np.interp(u, probs, q))).astype(np.int64)
    if dist.quantiles:
        q = np.asarray(dist.quantiles)
        return np.rint(np.expm1(np.interp(u * (len(q) - 1), np.arange(len(q)), q))).astype(np.int64)
    assert dist.mu is not None and dist.sigma is not None
    if dist.max_seconds is not None and dist.sigma > 0:
        # exact truncation: draw the uniform below the CDF at the cap instead of clipping
        u = u * ndtr((math.log(dist.max_seconds) - dist.mu) / dist.sigma)
    return np.rint(np.minimum(np.exp(dist.mu + dist.sigma * ndtri(u)), TOO_LONG)).astype(np.int64)


def _user_weights(users: Users) -> np.ndarray:
    ranks = np.arange(1, users.count + 1, dtype=float)
    if users.zipf is not None:
        w = ranks ** -users.zipf
    else:
        curve = np.asarray(users.top_share)
        cum = np.interp(np.concatenate([[0.0], ranks]) / users.count, np.linspace(0, 1, len(curve)), curve)
        w = np.diff(cum)
    return _p(w)


def _hash_ids(prefix: str, salt: str, n: int) -> list[str]:
    return [prefix + hashlib.blake2b(f"{salt}/{i}".encode(), digest_size=4).hexdigest() for i in range(n)]


def _vcs(model: Model, gpus: np.ndarray, gpu_time: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Index into ``model.vc_share`` of each job's VC; a job only goes to a VC that could ever hold it."""
    names = list(model.vc_share)
    share = np.array([model.vc_share[v] for v in names])
    capacity = np.array([sum(model.vcs.get(v, ())) for v in names])
    out = np.zeros(len(gpus), dtype=np.int64)
    # GPU-time left to give each VC: large jobs fit only the large VCs, so they are placed first
    # and the smaller jobs then fill the small VCs, instead of overloading the large ones
    room = share * float(gpu_time.sum())
    sizes = np.unique(gpus)[::-1] if model.vc_share_of_gpu_time else np.unique(gpus)
    for g in sizes:
        fits = (capacity >= g) if model.vcs else np.ones(len(names), dtype=bool)
        if not (fits & (share > 0)).any():  # with no VC large enough, the largest takes it
            fits = capacity == capacity[share > 0].max()
        weight = share * fits
        mask = gpus == g
        if model.vc_share_of_gpu_time:
            left = np.clip(room, 0.0, None) * fits
            weight = left if left.sum() > 0 else weight
            room -= float(gpu_time[mask].sum()) * weight / weight.sum()
        out[mask] = rng.choice(len(names), size=int(mask.sum()), p=_p(weight))
    return out


def oversized(trace: Trace) -> tuple[int, int]:
    """(GPU jobs of ``trace`` that ask for more GPUs than their VC of ``trace.cluster`` has, the largest such ask)."""
    if trace.cluster is None:
        return 0, 0
    sizes = pl.DataFrame({"vc": list(trace.cluster.vcs), "vc_gpus": [sum(n) for n in trace.cluster.vcs.values()]})
    big = trace.jobs.join(sizes, on="vc", how="inner").filter(pl.col("gpu_num") > pl.col("vc_gpus"))
    return big.height, int(big["gpu_num"].max() or 0) if big.height else 0


MAX_DAYS = 36_525  # 100 years
MAX_JOBS = 50_000_000  # expected jobs of one synthetic trace


def check_scale(days: float | None, load: float, seed: int = 0) -> None:
    """Raise a one-line error unless ``days`` (when given) and ``load`` are positive, finite and within the
    documented limits, and ``seed`` is a non-negative integer."""
    if days is not None and not (math.isfinite(days) and days > 0):
        raise ConfigError(f"--days must be a positive number, got {days}")
    if days is not None and days > MAX_DAYS:
        raise ConfigError(f"--days {days:g} is above the limit of {MAX_DAYS:,} days (100 years)")
    if not (math.isfinite(load) and load > 0):
        raise ConfigError(f"--load must be a positive number, got {load}")
    check_load(load)  # (its range: a generated trace is simulated at the loads the simulator takes)
    check_seed(seed)


def check_jobs(model: Model, days: float | None, load: float) -> None:
    """Raise a one-line error when ``days`` (default: the source's span) at ``load`` would make more than
    :data:`MAX_JOBS` jobs (expected) of ``model``."""
    days = model.days if days is None else float(days)
    expected = model.jobs_per_day * days * load
    if expected > MAX_JOBS:
        raise ConfigError(f"{days:g} days at load {load:g} would make about {expected:,.0f} jobs; "
                          f"the limit is {MAX_JOBS:,} (use fewer --days or a lower --load)")


CALENDARS = ("source", "drawn")


def generate(model: Model, *, days: float | None = None, load: float = 1.0, seed: int = 0,
             start: int | None = None, calendar: str = "source") -> Trace:
    """A synthetic trace of ``days`` days (default: the source's span) from ``start`` (UTC epoch).

    ``calendar``: ``source`` replays a batched model's source window's day-by-day rate (its ramp-up, its busy
    weeks) when the window covers the source's (same start, at least as long; days beyond it are drawn); ``drawn``
    draws every day's rate from the fitted ones.
    """
    if calendar not in CALENDARS:
        raise ConfigError(f"calendar must be one of {', '.join(CALENDARS)}, got {calendar!r}")
    days = model.days if days is None else float(days)
    check_scale(days, float(load), seed)
    check_jobs(model, days, load)
    t0 = model.start if start is None else int(start)
    check_window(t0, days)  # the model checked its own window; --days (or start) may reach past it
    rng = np.random.default_rng(seed)
    if model.batches is not None:
        return _finish(model, _batched_columns(model, days, float(load), t0, rng, calendar == "source"))

    starts, exposure, how = hour_bins(t0, days, model.timezone)
    lam = model.jobs_per_day / 24.0 * load * np.asarray(model.weekly_profile)[how] * exposure
    counts = rng.poisson(lam)
    n = int(counts.sum())
    offsets = np.floor(rng.random(n) * np.repeat(exposure, counts) * HOUR).astype(np.int64)
    submit = np.sort(np.repeat(starts, counts) + offsets)

    sizes = np.array(sorted(model.gpu_mix))
    gpus = rng.choice(sizes, size=n, p=_p([model.gpu_mix[g] for g in sizes]))
    labels = [label for label, _, _ in BUCKETS]
    bucket = np.array([labels.index(bucket_of(int(g))) for g in sizes])[np.searchsorted(sizes, gpus)]

    statuses = sorted({s for b in model.buckets.values() for s in b.status_mix})
    duration = np.zeros(n, dtype=np.int64)
    status, queue = _per_bucket(model, bucket, labels, statuses, rng, duration)

    cols = _columns(model, gpus, submit, queue, duration, pl.Series(statuses).gather(status))
    if model.vc_share:
        vc_names = pl.Series(list(model.vc_share))
        cols["vc"] = vc_names.gather(_vcs(model, gpus, gpus * duration, rng))
    else:
        cols["vc"] = pl.repeat("default", n, eager=True)
    if model.users is not None:
        idx = rng.choice(model.users.count, size=n, p=_user_weights(model.users))
        cols["user"] = pl.Series(_hash_ids("u", model.name, model.users.count)).gather(idx)
    return _finish(model, cols)


def _columns(model: Model, gpus: np.ndarray, submit: np.ndarray, queue: np.ndarray, duration: np.ndarray,
             status: pl.Series) -> dict[str, object]:
    """The job columns every model draws the same way: ids, cluster, size, times and status."""
    n = len(gpus)
    return {"job_id": pl.int_range(n, eager=True).cast(pl.String), "cluster": pl.repeat(model.cluster, n, eager=True),
            "gpu_num": gpus.astype(np.int32), "submit_time": submit, "queue_delay": queue, "duration": duration,
            "status": status}


def _per_bucket(model: Model, bucket: np.ndarray, labels: Sequence[str], statuses: list[str],
                rng: np.random.Generator, duration: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Each job's status (index into ``statuses``) and queueing delay, drawn by its GPU bucket (``bucket``: index
    into ``labels``); with ``duration``, each job's run time by its status is written into it too.

    Per bucket the draws come in this order (status, run times, waits): a model and seed give the same trace.
    """
    n = len(bucket)
    status = np.zeros(n, dtype=np.int64)
    queue = np.zeros(n, dtype=np.int64)
    for i, label in enumerate(labels):
        in_bucket = bucket == i
        k = int(in_bucket.sum())
        if k == 0:
            continue
        spec = model.buckets[label]
        names = sorted(spec.status_mix)
        drawn = rng.choice(len(names), size=k, p=_p([spec.status_mix[s] for s in names]))
        status[in_bucket] = np.array([statuses.index(s) for s in names])[drawn]
        if duration is not None:
            part = np.zeros(k, dtype=np.int64)
            for j, s in enumerate(names):
                cell = drawn == j
                part[cell] = sample_seconds(spec.duration_for(s), rng, int(cell.sum()))
            duration[in_bucket] = part
        waits = rng.random(k) >= spec.queue.zero_share
        if spec.queue.positive is not None:
            q = np.zeros(k, dtype=np.int64)
            q[waits] = np.maximum(sample_seconds(spec.queue.positive, rng, int(waits.sum())), 1)
            queue[in_bucket] = q
    return status, queue


def _finish(model: Model, cols: dict[str, object]) -> Trace:
    jobs = pl.DataFrame(cols).with_columns(
        (pl.col("submit_time") + pl.col("queue_delay")).alias("start_time"),
    ).with_columns((pl.col("start_time") + pl.col("duration")).alias("end_time"))
    _check_ends(jobs)
    return Trace(conform(jobs), format="synth", timezone=model.timezone, cluster=model.cluster_spec,
                 source=f"synth:{model.name}")


def _check_ends(jobs: pl.DataFrame) -> None:
    """Refuse jobs that would end after the last time the trace readers accept, or run or wait more than 100 years."""
    # (a lognormal's far tail reaches past int64 seconds: drawn, such values are capped at TOO_LONG)
    bad = jobs.filter((pl.col("duration") > MAX_SECONDS) | (pl.col("queue_delay") > MAX_SECONDS)).height
    if bad:
        raise ConfigError(f"{bad:,} generated job(s) drew a run time or wait of more than 100 years: the model's "
                          "distributions reach too far")
    # the window itself was checked; its last jobs can still run past MAX_TIME when it ends close to it
    last = jobs.select(pl.col("end_time").max()).item()
    if last is not None and last > MAX_TIME:
        raise ConfigError(f"a generated job would end at {last}, out of range (expected {TIME_RANGE}): the window "
                          "ends too close to 2200-01-01 UTC")


def _batched_columns(model: Model, days: float, load: float, t0: int, rng: np.random.Generator, replay: bool,
                     ) -> dict[str, object]:
    """The job columns of a batched model: one draw per batch for VC, size and user, per job for the rest."""
    batches = model.batches
    assert batches is not None
    submit, owner, size, vc_b, gpus_b, day_b, hour_b, session, vc_rate = batched.arrivals(model, days, load, t0, rng,
                                                                                         replay)
    n, nb = len(submit), len(size)
    vc_index = vc_b if model.vc_jobs else None
    gpus = gpus_b[owner]

    statuses = sorted({s for b in model.buckets.values() for s in b.status_mix})
    labels = batched.BUCKET_LABELS
    sizes = np.unique(gpus)
    bucket = np.array([labels.index(bucket_of(int(g))) for g in sizes], dtype=np.int64)[np.searchsorted(sizes, gpus)]
    status, queue = _per_bucket(model, bucket, labels, statuses, rng)

    user_b = None
    common = np.zeros(n)  # the score parts shared beyond a batch: its user's, and its VC's that day
    if model.users is not None:
        user_b = rng.choice(model.users.count, size=nb, p=_user_weights(model.users))[session]  # a session is one user's
        if batches.user_sd > 0:
            common = (rng.standard_normal(model.users.count) * batches.user_sd)[user_b[owner]]
    shift, spread = np.zeros(nb), np.ones(nb)
    quantiled: list[tuple[np.ndarray, tuple[float, ...]]] = []
    if vc_index is not None:
        for i, vc in enumerate(model.vc_share):
            own = model.vc_jobs.get(vc)
            if own is None:
                continue
            for g, z in own.shifts.items():
                cell = (vc_index == i) & (gpus_b == g)
                shift[cell], spread[cell] = z, own.spreads.get(g, 1.0)
            quantiled += [((vc_index == i) & (gpus_b == g), q) for g, q in own.score_quantiles.items()]
        day_sd, day_corr, with_rate = batched.vc_day_params(model)
        coupled = None if vc_rate is None else (vc_rate, with_rate)
        common = common + batched.vc_period_shifts(day_sd, day_corr, vc_index, day_b, rng, coupled)[owner]
        n_vcs = len(model.vc_share)
        common = common + batched.vc_period_shifts(np.full(n_vcs, batches.vc_hour_sd),
                                                   np.full(n_vcs, batches.vc_hour_corr), vc_index, hour_b, rng)[owner]
    parts = batched.score_parts(batches, owner, nb, common, rng)
    score = shift[owner] + spread[owner] * parts
    if quantiled and vc_index is not None:
        # the cell's own score quantiles at the probability of its parts: the same ranks, the VC's own shape
        p = ndtr(parts / batched.score_sd(batches, day_sd[vc_index[owner]]))
        for cell, q in quantiled:
            jobs = cell[owner]
            score[jobs] = np.interp(p[jobs], np.linspace(0.0, 1.0, len(q)), q)
    duration = batched.durations(model, gpus, status, statuses, score)

    cols = _columns(model, gpus, submit, queue, duration, pl.Series(statuses).gather(status))
    if vc_index is not None:
        cols["vc"] = pl.Series(list(model.vc_share)).gather(vc_index[owner])
    elif model.vc_share:
        # VCs by GPU time or by share among those that fit, one draw per batch
        batch_time = np.bincount(owner, weights=gpus * duration, minlength=nb)
        cols["vc"] = pl.Series(list(model.vc_share)).gather(_vcs(model, gpus_b, batch_time, rng)[owner])
    else:
        cols["vc"] = pl.repeat("default", n, eager=True)
    if user_b is not None and model.users is not None:
        cols["user"] = pl.Series(_hash_ids("u", model.name, model.users.count)).gather(user_b[owner])
    return cols
