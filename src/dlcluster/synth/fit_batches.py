"""Fit the bursty, correlated part of a model: per-size durations, batches, daily rates, VC and user structure.

A *batch* is a run of jobs from one submitter (the user, or the VC when the trace has no
users) with one GPU count, each submitted at most ``max_gap`` seconds after the previous one.
A *session* is a run of one submitter's multi-GPU batches in one VC, each at most
``SESSION_GAP`` seconds after the previous one (a campaign of training runs); a 1-GPU session
the same of 1-GPU batches (a steady stream of small jobs).
Durations are compared through normal scores: a job's rank in its size's distribution,
mapped to a standard normal, so that shifts and spreads do not depend on the size's scale.
"""

from __future__ import annotations

import math

import numpy as np
import polars as pl
from scipy.optimize import brentq
from scipy.special import ndtri

from dlcluster.synth.calendar import DAY, HOUR, arrival_clock, hour_bins
from dlcluster.synth.fit_quantiles import log_quantiles
from dlcluster.synth.model import BUCKETS, SESSION_MIN_GPUS, Batches, Bucket, Dist, Queue, VcJobs

MAX_GAP = 60  # seconds: a longer pause between one submitter's same-size jobs starts a new batch
MIN_CELL = 200  # a GPU count needs this many timed jobs for a duration distribution of its own
MIN_VC_CELL = 30  # a VC's GPU count needs this many timed jobs for score quantiles of its own
# a VC needs this many batches of a GPU bucket for batch sizes of its own, and this many in sessions of a kind (or
# pauses between them) for session sizes (pauses) of its own
MIN_VC_BATCHES = 30
SESSION_GAP = 3 * 3600  # seconds: a longer pause between one submitter's multi-GPU batches in a VC ends a session
SCORE_QUANTILES = 101
DIGITS = 4


def _quantiles(values: np.ndarray) -> Dist:
    return log_quantiles(pl.Series(values))


def size_durations(jobs: pl.DataFrame) -> dict[str, dict[int, Dist]]:
    """Per bucket, the durations of each GPU count with ``MIN_CELL`` timed jobs, in buckets holding several counts."""
    timed = jobs.filter(pl.col("duration").is_not_null())
    out: dict[str, dict[int, Dist]] = {}
    for label, _, _ in BUCKETS:
        part = timed.filter(pl.col("bucket") == label)
        sizes = part.group_by("gpu_num").agg(pl.len().alias("n")).sort("gpu_num")
        if sizes.height < 2:
            continue  # the bucket's own distribution is already this size's
        own = {int(g): _quantiles(part.filter(pl.col("gpu_num") == g)["duration"].to_numpy())
               for g, n in sizes.iter_rows() if n >= MIN_CELL}
        if own:
            out[label] = own
    return out


def _scores(by_size: dict[str, dict[int, Dist]]) -> pl.Expr:
    """Each timed job's duration normal score within the cell it is sampled from (its size, else its bucket)."""
    sized = sorted({g for sizes in by_size.values() for g in sizes})
    cell = pl.when(pl.col("gpu_num").is_in(sized)).then(pl.col("gpu_num").cast(pl.String)).otherwise(pl.col("bucket"))
    rank = pl.col("duration").rank("average").over(cell)
    n = pl.col("duration").count().over(cell)
    return ((rank - 0.5) / n).map_batches(lambda s: pl.Series(ndtri(s.to_numpy())), return_dtype=pl.Float64)


def has_users(jobs: pl.DataFrame) -> bool:
    """Whether any of ``jobs`` names its user (else a batch's submitter is its VC)."""
    return "user" in jobs.columns and jobs["user"].null_count() < jobs.height


def batch_column(jobs: pl.DataFrame, max_gap: int = MAX_GAP) -> pl.DataFrame:
    """``jobs`` in submit order with ``submitter`` and a ``batch`` number (see the module doc)."""
    who = pl.coalesce(pl.col("user").cast(pl.String), pl.lit("")) if has_users(jobs) else pl.col("vc").cast(pl.String)
    df = jobs.with_columns(who.fill_null("").alias("submitter")).sort("submit_time", maintain_order=True)
    df = df.with_row_index("order").sort(["submitter", "submit_time", "order"])
    new = ((pl.col("submitter") != pl.col("submitter").shift()) | (pl.col("gpu_num") != pl.col("gpu_num").shift())
           | ((pl.col("submit_time") - pl.col("submit_time").shift()) > max_gap)).fill_null(True)
    df = df.with_columns(new.cum_sum().alias("batch"),
                         pl.when(new).then(None).otherwise(pl.col("submit_time") - pl.col("submit_time").shift())
                         .alias("gap"))
    return df.sort("order").drop("order")


def batch_rows(df: pl.DataFrame, *also: str) -> pl.DataFrame:
    """One row per batch of ``df`` (from :func:`batch_column`): its job count ``n``, VC, submitter, GPU count, first
    submission ``first``, and the first value of each column in ``also``."""
    return df.group_by("batch").agg(pl.len().alias("n"), *(pl.col(c).first() for c in ("vc", "submitter", "gpu_num", *also)),
                                    pl.col("submit_time").min().alias("first"))


def batch_days(timed: pl.DataFrame, start: int, width: int = DAY) -> pl.DataFrame:
    """One row per batch with timed jobs: the mean of their score residuals ``r``, its VC and the day (or period of
    ``width`` seconds) of its first submission (from ``start``), as ``day``."""
    return timed.group_by("batch").agg(pl.col("r").mean(), pl.col("vc").first(),
                                       ((pl.col("submit_time").min() - start) // width).alias("day"))


def sessions(per_batch: pl.DataFrame, gap: int = SESSION_GAP, one_gpu: bool = False,
             clock: tuple[np.ndarray, np.ndarray] | None = None) -> pl.DataFrame:
    """The multi-GPU (``one_gpu``: the 1-GPU) batches of ``per_batch`` (one row per batch: ``vc``, ``submitter``,
    ``gpu_num``, ``first``, its first submission) with a ``session`` number and the ``pause`` since their session's
    previous batch (null: the session's first), in seconds or, given an arrival ``clock`` (knots wall → clock), in
    its seconds."""
    multi = pl.col("gpu_num") >= SESSION_MIN_GPUS
    kind = per_batch.filter(~multi if one_gpu else multi).sort("vc", "submitter", "first", "batch")
    tick = pl.col("first").cast(pl.Float64)
    if clock is not None:
        tick = tick.map_batches(lambda t: pl.Series(np.interp(t.to_numpy(), *clock)))
    after = (pl.col("first") - pl.col("first").shift()).over("vc", "submitter")
    new = after.is_null() | (after > gap)
    pause = (tick - tick.shift()).over("vc", "submitter")
    return kind.with_columns(new.cum_sum().alias("session"), pl.when(new).then(None).otherwise(pause).alias("pause"))


def _pauses(session: pl.DataFrame) -> Dist | None:
    """Quantiles of the pauses within the sessions of ``session`` (from :func:`sessions`; None: no session of
    several)."""
    pauses = session["pause"].drop_nulls()
    return _quantiles(pauses.to_numpy()) if pauses.len() else None


def _own_pauses(session: pl.DataFrame) -> dict[str, Dist]:
    """Quantiles of each VC's pauses within its sessions of ``session`` (from :func:`sessions`), for VCs with
    ``MIN_VC_BATCHES`` of them."""
    pauses = session.filter(pl.col("pause").is_not_null())
    return {str(vc): _quantiles(part["pause"].to_numpy()) for (vc,), part in pauses.group_by("vc")
            if part.height >= MIN_VC_BATCHES}


def _own_sessions(session: pl.DataFrame) -> dict[str, dict[int, float]]:
    """Each VC's shares of batches per session, of ``session`` (from :func:`sessions`), for VCs with
    ``MIN_VC_BATCHES`` batches in it."""
    per_session = session.group_by("session").agg(pl.len().alias("k"), pl.col("vc").first().cast(pl.String))
    return {str(vc): _share_mix(part["k"]) for (vc,), part in per_session.group_by("vc")
            if part["k"].sum() >= MIN_VC_BATCHES}


def session_kinds(session: pl.DataFrame) -> tuple[float, float]:
    """Of the consecutive batches of sessions (from :func:`sessions`), the share with one GPU count, and the share
    chance gives: per VC, the probability that two of its batches in sessions of several share their GPU count,
    weighted by its pairs (NaN, NaN: no session of several)."""
    several = session.filter(pl.len().over("session") > 1).sort("session", "first", "batch")
    pairs = several.with_columns((pl.col("gpu_num") == pl.col("gpu_num").shift()).over("session").alias("same")) \
        .filter(pl.col("pause").is_not_null())
    if not pairs.height:
        return math.nan, math.nan
    mix = several.group_by("vc", "gpu_num").len().with_columns((pl.col("len") / pl.col("len").sum().over("vc")) ** 2)
    per_vc = pairs.group_by("vc").len().join(mix.group_by("vc").agg(pl.col("len").sum().alias("chance")), on="vc")
    share = float(pairs["same"].mean())  # type: ignore[arg-type]
    return share, float((per_vc["len"] * per_vc["chance"]).sum()) / pairs.height


def session_same(session: pl.DataFrame) -> float:
    """How much more often than chance a session's batch has the GPU count of the one before (0: as chance, 1:
    always): (share − chance) / (1 − chance) of :func:`session_kinds`."""
    share, chance = session_kinds(session)
    return round(max(0.0, (share - chance) / (1.0 - chance)), DIGITS) if chance < 1 else 0.0


def day_rates(submits: np.ndarray, start: int, days: float, timezone: str, jobs_per_day: float,
              profile: tuple[float, ...]) -> tuple[tuple[float, ...], float, tuple[float, ...]]:
    """Quantiles of each day's count of ``submits`` over what the weekly profile expects (mean 1), their lag-1
    correlation, and the days' multipliers in order (``jobs_per_day`` only scales the expectation)."""
    bins, exposure, how = hour_bins(start, days, timezone)
    expected_hour = jobs_per_day / 24.0 * np.asarray(profile)[how] * exposure
    day_of_bin = (bins - start) // DAY
    expected = np.bincount(day_of_bin, weights=expected_hour)
    counts = np.bincount((submits - start) // DAY, minlength=len(expected))[: len(expected)]
    ok = expected > 0
    mult = counts[ok] / expected[ok]
    mult = mult / mult.mean()
    # in order, scaled so that the window's expected total is its own: a replayed calendar is the source's
    in_order = np.where(ok, counts / np.where(ok, expected, 1.0) * expected[ok].sum() / counts[ok].sum(), 1.0)
    q = np.maximum.accumulate(np.quantile(mult, np.linspace(0.0, 1.0, 101)))
    corr = 0.0
    if len(mult) > 3:
        ranks = pl.Series(mult).rank("average").to_numpy()
        z = ndtri((ranks - 0.5) / len(mult))
        corr = float(np.corrcoef(z[:-1], z[1:])[0, 1]) if z.std() > 0 else 0.0
    return (tuple(round(float(x), DIGITS) for x in q), round(max(0.0, corr), DIGITS),
            tuple(round(float(x), DIGITS) for x in in_order))


def vc_day_effect(per_day: pl.DataFrame) -> tuple[float, float]:
    """Variance of a VC's day-level shift of batch duration scores (``r``) and its lag-1 correlation across days,
    from :func:`batch_days`.

    One-way random effects on batch means grouped by (VC, day of the batch's first submission): the variance of
    the groups' means less what the batches' own spread puts there. The correlation (capped below 1) is how the
    covariance of a VC's days decays from one day apart to two.
    """
    # around each VC's own mean: a VC's lasting offset is its shift already, not a day effect
    batch = per_day.with_columns(pl.col("r") - pl.col("r").mean().over("vc"))
    groups = batch.group_by("vc", "day").agg(pl.len().alias("n"), pl.col("r").mean().alias("m"),
                                             pl.col("r").var(ddof=1).fill_null(0.0).alias("v"))
    n_batches, k = batch.height, groups.height
    if k < 2 or n_batches <= k:
        return 0.0, 0.0
    n, m, v = groups["n"].to_numpy().astype(float), groups["m"].to_numpy(), groups["v"].to_numpy()
    grand = float(batch["r"].mean())  # type: ignore[arg-type]
    between = float(n @ (m - grand) ** 2) / (k - 1)
    within = float((n - 1) @ v) / (n_batches - k)
    n0 = (n_batches - float(n @ n) / n_batches) / (k - 1)
    var = max(0.0, (between - within) / n0)
    if var == 0.0:
        return 0.0, 0.0
    # the batches' own noise is in neither covariance, unlike in a lag-1 correlation of the means
    cov = [float((groups.join(groups.with_columns(pl.col("day") + lag), on=["vc", "day"], suffix="_then")
                  .select(pl.col("m") * pl.col("m_then")).mean().item()) or 0.0) for lag in (1, 2)]
    return var, min(0.99, max(0.0, cov[1] / cov[0])) if cov[0] > 0 else 0.0


def _block_share(rho: float, k: int) -> float:
    """The variance of the mean of ``k`` consecutive steps of a unit AR(1) with lag-1 correlation ``rho``."""
    lags = np.arange(1, k)
    return float(1.0 + 2.0 * ((1.0 - lags / k) * rho**lags).sum()) / k


def vc_hour_effect(timed: pl.DataFrame, start: int, day_var: float) -> tuple[float, float, float]:
    """Variance and lag-1 correlation across hours of a VC's hour-level shift of batch duration scores (an AR(1) over
    hours) beyond its day-level one, from the timed jobs' score residuals ``r`` and the day groups' variance
    ``day_var`` (:func:`vc_day_effect`); and the part of the hour shift's variance that a day's mean keeps (which
    ``day_var`` counts as the day part's).

    The random-effects variance (:func:`vc_day_effect`) of groups of one VC and 1, 2 and 24 hours holds the day part
    whole and of the hour part the share an AR(1) keeps in a mean of that many hours, 1 (of the variance),
    (1 + r) / 2 and less: how fast it falls from one hour to two and to a day gives the correlation, then the
    variance.
    """
    v1, v2 = (vc_day_effect(batch_days(timed, start, hours * HOUR))[0] for hours in (1, 2))
    if v1 <= day_var or v1 <= v2:
        return max(0.0, v1 - day_var), 0.0, 0.0

    def fall_by_two_hours(rho: float) -> float:
        """The share of the fall from one hour to a day that happens by two hours, less the measured one."""
        return (1 - rho) / 2 / (1 - _block_share(rho, 24)) - (v1 - v2) / (v1 - day_var)
    # (it decreases with the correlation; past either end the nearest end)
    rho = 0.0 if fall_by_two_hours(0.0) <= 0 else 0.99 if fall_by_two_hours(0.99) >= 0 else \
        float(brentq(fall_by_two_hours, 0.0, 0.99))
    var = (v1 - day_var) / (1 - _block_share(rho, 24))
    return var, rho, var * _block_share(rho, 24)


def score_quantiles(z: np.ndarray) -> tuple[float, ...]:
    """A cell's duration scores at ``SCORE_QUANTILES`` evenly spaced probabilities."""
    return tuple(round(float(x), DIGITS) for x in np.maximum.accumulate(np.quantile(z, np.linspace(0, 1, SCORE_QUANTILES))))


def vc_rates(first: pl.DataFrame, start: int) -> dict[str, tuple[float, float]]:
    """Per VC, the spread and lag-1 correlation of the log of its day-to-day multiplier on its share of the cluster's
    batches (an AR(1) over days), from ``first``: one row per batch (``vc``, ``submit_time``).

    Method of moments on overdispersed counts: a VC's batches on day d are Poisson with mean ``mu_d M_d`` (``mu_d``:
    its share of the day's batches), so E[(n - mu)^2] = mu + mu^2 Var(M), and the Poisson noise of one day is
    independent of the next's; a lognormal M has Var(M) = exp(s^2) - 1 and lag-1 covariance exp(s^2 r) - 1.
    """
    day = ((first["submit_time"].to_numpy() - start) // DAY).astype(np.int64)
    days = int(day.max()) + 1 if len(day) else 0
    total = np.bincount(day, minlength=days).astype(float)
    vcs = first["vc"].cast(pl.String).fill_null("").to_numpy()
    out = {}
    for vc in np.unique(vcs):
        n = np.bincount(day[vcs == vc], minlength=days).astype(float)
        mu = total * n.sum() / total.sum()
        var = float(((n - mu) ** 2 - mu).sum() / (mu**2).sum())
        if var <= 0.0 or days < 3:
            out[str(vc)] = (0.0, 0.0)
            continue
        s2 = math.log1p(var)
        lag = float(((n[:-1] - mu[:-1]) * (n[1:] - mu[1:])).sum() / (mu[:-1] * mu[1:]).sum())
        out[str(vc)] = (round(math.sqrt(s2), DIGITS), round(min(0.99, max(0.0, math.log1p(max(lag, 0.0)) / s2)), DIGITS))
    return out


def busy_day_scores(per_batch: pl.DataFrame) -> dict[str, float]:
    """Per VC, the correlation across its days with batches of the log of their count with their batches' mean
    duration residual (negative: its busy days are sweeps of short jobs), from :func:`batch_days`."""
    per_day = per_batch.group_by("vc", "day").agg(pl.len().log().alias("n"), pl.col("r").mean().alias("m"))
    # (a VC with under three days, or one whose counts or means never change, has none: NaN becomes 0)
    corr = per_day.group_by("vc").agg(pl.when(pl.len() > 2).then(pl.corr("n", "m")).fill_nan(0.0).fill_null(0.0))
    return {str(vc): round(min(0.99, max(-0.99, float(c))), DIGITS) for vc, c in corr.iter_rows()}


def _less(effect: tuple[float, float], var: float) -> tuple[float, float]:
    """A day effect (variance, correlation) less ``var`` of its variance (the hour part's share in day means)."""
    return max(0.0, effect[0] - var), effect[1]


def _day(effect: tuple[float, float] | None) -> tuple[float | None, float]:
    """A VC's own day effect as (spread, correlation); None without one."""
    return (None, 0.0) if effect is None else (round(math.sqrt(effect[0]), DIGITS), round(effect[1], DIGITS))


def _share_mix(values: pl.Series) -> dict[int, float]:
    counts = values.value_counts().sort(values.name)
    total = counts["count"].sum()
    mix = {int(g): round(n / total, 6) for g, n in counts.iter_rows()}
    top = max(mix, key=mix.__getitem__)
    return {**mix, top: round(mix[top] + 1.0 - sum(mix.values()), 6)}


def fit_batches(jobs: pl.DataFrame, buckets: dict[str, Bucket], *, start: int, days: float, timezone: str,
                jobs_per_day: float, profile: tuple[float, ...], vc_capacity: dict[str, int],
                ) -> tuple[dict[str, Bucket], Batches, dict[str, VcJobs]]:
    """Per-size durations added to ``buckets``, the batch and day-rate model, and each VC's own jobs."""
    by_size = size_durations(jobs)
    buckets = {label: Bucket(b.status_mix, b.durations, b.queue, by_size.get(label, {})) for label, b in buckets.items()}
    df = batch_column(jobs).with_columns(_scores(by_size).alias("z"))
    per_batch = batch_rows(df, "bucket")
    sizes = per_batch["n"]
    by_bucket = {str(b[0]): _share_mix(part["n"]) for b, part in per_batch.group_by("bucket")}
    gaps = df["gap"].drop_nulls().to_numpy()
    positive = gaps[gaps > 0]
    gap_model = Queue(round(1.0 - len(positive) / max(len(gaps), 1), 6),
                      _quantiles(positive) if len(positive) else None)
    # days vary by their count of batches: job counts would add the batch sizes' spread a second time
    rates, corr, sequence = day_rates(per_batch["first"].to_numpy(), start, days, timezone, jobs_per_day, profile)

    # duration-score variance components: VC shift, user shift, batch, job
    timed = df.filter(pl.col("z").is_not_null())
    # a VC's jobs of one size: mean and spread of their scores; the rest is standardised residual
    cell_sd = pl.col("z").std(ddof=0).over("vc", "gpu_num")
    timed = timed.with_columns(((pl.col("z") - pl.col("z").mean().over("vc", "gpu_num"))
                                / pl.when(cell_sd > 0).then(cell_sd).otherwise(1.0)).alias("r"))
    shift = timed.group_by("vc", "gpu_num").agg(pl.col("z").mean(), pl.col("z").std(ddof=0).alias("sd"),
                                                pl.col("z").alias("all"))
    user_sd = 0.0
    if has_users(timed):
        user_mean = pl.col("r").mean().over("user")
        user_sd = math.sqrt(max(0.0, float(timed.select(user_mean.var()).item() or 0.0)))
        timed = timed.with_columns((pl.col("r") - user_mean).alias("r"))
    within = timed.with_columns((pl.col("r") - pl.col("r").mean().over("batch")).alias("w"),
                                pl.len().over("batch").alias("k")).filter(pl.col("k") > 1)
    # pooled within-batch variance, with the k-1 degrees of freedom of each batch
    dof = float(within.group_by("batch").agg(pl.len() - 1)["len"].sum()) if within.height else 0.0
    job_var = float((within["w"] ** 2).sum()) / dof if dof > 0 else float(timed["r"].var() or 1.0)
    # only a model with VC sizes draws each batch's VC up front and so can give it its VC's day shift; without them
    # that variance stays in the batch part
    per_day = batch_days(timed, start)
    day_effect = vc_day_effect(per_day) if vc_capacity else (0.0, 0.0)
    hour_var, hour_corr, in_day = vc_hour_effect(timed, start, day_effect[0]) if vc_capacity else (0.0, 0.0, 0.0)
    day_var, day_corr = _less(day_effect, in_day)
    batch_var = max(0.0, float(timed["r"].var() or 0.0) - job_var - day_var - hour_var)
    # sessions need each batch's VC, so only a model with VC sizes has them
    bins, exposure, how = hour_bins(start, days, timezone)
    clock = arrival_clock(bins, exposure, np.asarray(profile)[how] * exposure
                          * np.asarray(sequence)[(bins - start) // DAY])
    session, one_gpu = (sessions(per_batch if vc_capacity else per_batch.clear(), one_gpu=x, clock=clock)
                        for x in (False, True))
    pauses, one_gpu_pauses = (_pauses(x) for x in (session, one_gpu))
    batches = Batches(_share_mix(sizes), gap_model, rates, corr, round(math.sqrt(batch_var), DIGITS),
                      round(math.sqrt(job_var), DIGITS), round(user_sd, DIGITS), MAX_GAP, dict(sorted(by_bucket.items())),
                      round(math.sqrt(day_var), DIGITS), round(day_corr, DIGITS), sequence,
                      SESSION_GAP if pauses or one_gpu_pauses else 0, pauses, session_same(session),
                      round(math.sqrt(hour_var), DIGITS), round(hour_corr, DIGITS), one_gpu_pauses)

    # batches per session of the VCs with enough batches of the kind; their busy days count what arrives
    # independently: a multi-GPU session once, like a batch (a 1-GPU session's batches one by one: its sessions'
    # first batches alone are too few a day to tell a VC's busy days from Poisson noise)
    own_sessions, own_one_gpu = _own_sessions(session), _own_sessions(one_gpu)
    own_pauses, own_one_gpu_pauses = _own_pauses(session), _own_pauses(one_gpu)
    followers = session.filter(pl.col("pause").is_not_null() & pl.col("vc").is_in(list(own_sessions)))["batch"]
    units = per_batch.filter(~pl.col("batch").is_in(followers.implode())).select("vc", pl.col("first").alias("submit_time"))
    own_rate = vc_rates(units, start) if vc_capacity else {}
    coupled = busy_day_scores(per_day) if vc_capacity else {}
    own_day = {str(vc[0]): _less(vc_day_effect(part), in_day) for vc, part in per_day.group_by("vc")} if vc_capacity else {}
    vc_jobs = {}
    for (vc,), part in df.filter(pl.col("vc").is_in(list(vc_capacity))).group_by("vc"):
        name = str(vc)
        # a VC's jobs larger than the VC could never run there: they are left out of its mix
        fits = part.filter(pl.col("gpu_num") <= vc_capacity[name])
        if fits.height:
            cells = shift.filter((pl.col("vc") == vc) & (pl.col("gpu_num") <= vc_capacity[name])).sort("gpu_num")
            own_sizes = {str(b): _share_mix(cell["n"]) for (b,), cell in
                         per_batch.filter(pl.col("vc") == vc).group_by("bucket") if cell.height >= MIN_VC_BATCHES}
            shift_sd, shift_corr = _day(own_day.get(name))
            rate_sd, rate_corr = own_rate.get(name, (0.0, 0.0))
            rows = list(cells.iter_rows(named=True))
            vc_jobs[name] = VcJobs(
                _share_mix(fits["gpu_num"]),
                shifts={int(c["gpu_num"]): round(float(c["z"]), DIGITS) for c in rows},
                spreads={int(c["gpu_num"]): round(float(c["sd"]), DIGITS) for c in rows},
                score_quantiles={int(c["gpu_num"]): score_quantiles(np.asarray(c["all"])) for c in rows
                                 if len(c["all"]) >= MIN_VC_CELL},
                day_shift_sd=shift_sd, day_shift_corr=shift_corr, batch_sizes=dict(sorted(own_sizes.items())),
                rate_sd=rate_sd, rate_corr=rate_corr, rate_score_corr=coupled.get(name, 0.0),
                session_sizes=own_sessions.get(name, {}), one_gpu_session_sizes=own_one_gpu.get(name, {}),
                session_gaps=own_pauses.get(name), one_gpu_session_gaps=own_one_gpu_pauses.get(name))
    return buckets, batches, dict(sorted(vc_jobs.items()))
