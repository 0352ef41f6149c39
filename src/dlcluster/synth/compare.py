"""How close a synthetic trace is to a reference: KS, total variation, rate error, profile correlation."""

from __future__ import annotations

import dataclasses
import math
import warnings
from collections.abc import Sequence

import numpy as np
import polars as pl
from scipy.stats import ks_2samp

from dlcluster.synth.calendar import DAY, weekly_rates
from dlcluster.synth.downstream import among
from dlcluster.synth.fit import bucket_expr, window
from dlcluster.synth.fit_batches import batch_column, batch_rows, has_users, session_kinds, sessions
from dlcluster.synth.model import BUCKETS
from dlcluster.trace import Trace


def _mix(jobs: pl.DataFrame, column: str) -> dict[object, float]:
    counts = jobs.group_by(column).agg(pl.len().alias("n"))
    return {k: n / jobs.height for k, n in counts.iter_rows()}


def total_variation(a: dict[object, float], b: dict[object, float]) -> float:
    """Total-variation distance of two discrete distributions given as ``{value: share}``."""
    return 0.5 * sum(abs(a.get(k, 0.0) - b.get(k, 0.0)) for k in set(a) | set(b))


def ks_distance(a: pl.Series, b: pl.Series) -> float:
    """Two-sample Kolmogorov–Smirnov statistic of two numeric columns (nulls ignored)."""
    x, y = a.drop_nulls().to_numpy(), b.drop_nulls().to_numpy()
    if len(x) == 0 or len(y) == 0:
        return float("nan")
    return float(ks_2samp(x, y).statistic)


def _window(trace: Trace, start: int | None) -> tuple[int, float]:
    """The trace's window (see :func:`~dlcluster.synth.fit.window`), from ``start`` instead when given."""
    first, days = window(trace.jobs["submit_time"], trace.timezone)
    return (first, days) if start is None else (start, days + (first - start) / 86400)


def overlap(a: tuple[int, float], b: tuple[int, float]) -> bool:
    """Whether two windows (start, days) overlap."""
    return a[0] < b[0] + b[1] * 86400 and b[0] < a[0] + a[1] * 86400


def shared_start(a: Trace, b: Trace) -> int | None:
    """The earlier first local midnight of two traces whose windows overlap (generated over the other's window, one
    may start later: its first days drew no job), else None (each keeps its own)."""
    windows = [window(t.jobs["submit_time"], t.timezone) for t in (a, b)]
    return min(windows[0][0], windows[1][0]) if overlap(*windows) else None


def jobs_per_day(trace: Trace, start: int | None = None) -> float:
    """Submissions per day over the trace's window (first local midnight, or ``start``, to the hour after the last
    submit)."""
    return trace.jobs.height / _window(trace, start)[1]


def _profiles(trace: Trace) -> tuple[np.ndarray, np.ndarray]:
    start, days = window(trace.jobs["submit_time"], trace.timezone)
    weekly = weekly_rates(trace.jobs["submit_time"], start, days, trace.timezone)
    with warnings.catch_warnings():  # a window shorter than a week leaves hours never covered: NaN, said by _corr
        warnings.simplefilter("ignore", RuntimeWarning)
        return weekly, np.nanmean(weekly.reshape(7, 24), axis=0)


def _corr(a: np.ndarray, b: np.ndarray) -> float:
    ok = ~(np.isnan(a) | np.isnan(b))
    if ok.sum() < 3 or a[ok].std() == 0 or b[ok].std() == 0:
        return float("nan")
    return float(np.corrcoef(a[ok], b[ok])[0, 1])


def closeness(reference: Trace, candidate: Trace) -> dict[str, float]:
    """Distances of ``candidate`` from ``reference``: smaller is closer, except the correlations."""
    ref, cand = (t.jobs.with_columns(bucket_expr(), pl.col("status").cast(pl.String)) for t in (reference, candidate))
    common = shared_start(reference, candidate)
    out = {
        "ks_duration": ks_distance(ref["duration"], cand["duration"]),
        "tv_gpu_mix": total_variation(_mix(ref, "gpu_num"), _mix(cand, "gpu_num")),
        "tv_status_mix": total_variation(_mix(ref, "status"), _mix(cand, "status")),
        "job_rate_rel_error": jobs_per_day(candidate, common) / jobs_per_day(reference, common) - 1.0,
    }
    for label, _, _ in BUCKETS:
        a = ref.filter(pl.col("bucket") == label)["duration"]
        b = cand.filter(pl.col("bucket") == label)["duration"]
        if a.drop_nulls().len() and b.drop_nulls().len():
            out[f"ks_duration_{label}"] = ks_distance(a, b)
    (week_a, day_a), (week_b, day_b) = _profiles(reference), _profiles(candidate)
    out["weekly_profile_corr"] = _corr(week_a, week_b)
    out["daily_profile_corr"] = _corr(day_a, day_b)
    return out


# --- fidelity: the arrival process and the joint structure, not only the marginals ---------------

MIN_SIZE_JOBS = 200  # per-size medians are compared for the GPU counts with this many real jobs
SWEEP_JOBS = 20  # jobs of a batch that make it a sweep (hyper-parameter searches, job arrays)
MIN_SEASON_BATCHES = 10  # a VC's size seasons need this many batches of its smallest multi-GPU size and of larger ones


def interarrival_cv(trace: Trace) -> float:
    """Coefficient of variation of the gaps between consecutive submissions."""
    gaps = np.diff(np.sort(trace.jobs["submit_time"].drop_nulls().to_numpy()))
    return float(gaps.std() / gaps.mean()) if len(gaps) and gaps.mean() > 0 else float("nan")


def same_second_share(trace: Trace) -> float:
    """Share of submissions in the same second as the previous one."""
    gaps = np.diff(np.sort(trace.jobs["submit_time"].drop_nulls().to_numpy()))
    return float((gaps == 0).mean()) if len(gaps) else float("nan")


def daily_counts(trace: Trace, start: int | None = None) -> np.ndarray:
    """Submissions per day from the trace's first local midnight, or ``start`` (whole days of 86,400 s)."""
    start, days = _window(trace, start)
    return np.bincount((trace.jobs["submit_time"].drop_nulls().to_numpy() - start) // 86400,
                       minlength=int(np.ceil(days)))


def gini(counts: np.ndarray) -> float:
    """Gini coefficient of non-negative counts (0: all equal, towards 1: one holds everything)."""
    x = np.sort(np.asarray(counts, dtype=float))
    if len(x) == 0 or x.sum() == 0:
        return float("nan")
    ranks = np.arange(1, len(x) + 1)
    return float((2 * ranks - len(x) - 1) @ x / (len(x) * x.sum()))


def user_gini(trace: Trace) -> float:
    """Gini of jobs per user (NaN when the trace has no users)."""
    users = trace.jobs["user"].drop_nulls() if "user" in trace.jobs.columns else pl.Series([], dtype=pl.String)
    return gini(users.value_counts()["count"].to_numpy()) if users.len() else float("nan")


def size_medians(trace: Trace) -> dict[int, float]:
    """Median duration per GPU count."""
    per = trace.jobs.group_by("gpu_num").agg(pl.col("duration").median())
    return {int(g): float(m) for g, m in per.iter_rows() if m is not None}


def size_seasons(trace: Trace) -> float:
    """How unevenly a VC's larger multi-GPU batches fall on the weeks, the median over VCs: per VC, the dispersion of
    each week's count of its batches above its smallest multi-GPU size among its multi-GPU batches (1: as chance
    would place them; larger: seasons of big jobs). VCs with fewer than :data:`MIN_SEASON_BATCHES` batches of either
    kind are left out; NaN when none is left."""
    start, _ = window(trace.jobs["submit_time"], trace.timezone)
    multi = batch_rows(batch_column(trace.jobs.drop_nulls("submit_time"))).filter(pl.col("gpu_num") >= 2)
    found = []
    for _, part in multi.group_by("vc"):
        gpus = part["gpu_num"].to_numpy()
        larger = gpus > gpus.min()
        if larger.sum() < MIN_SEASON_BATCHES or (~larger).sum() < MIN_SEASON_BATCHES:
            continue
        week = (part["first"].to_numpy() - start) // (7 * DAY)
        n, k = np.bincount(week), np.bincount(week, weights=larger)
        p = k.sum() / n.sum()
        found.append(float(((k - n * p) ** 2).sum() / (n * p * (1 - p)).sum()))
    return float(np.median(found)) if found else float("nan")


def session_sizes_kept(trace: Trace) -> float:
    """Share of a session's multi-GPU batches (a submitter's in one VC, hours apart at most: see
    :func:`~dlcluster.synth.fit_batches.sessions`) that have the GPU count of the batch before; NaN without any."""
    return session_kinds(sessions(batch_rows(batch_column(trace.jobs.drop_nulls("submit_time")))))[0]


def sweep_gpu_time(trace: Trace) -> float:
    """Share of the GPU time (GPUs × run time, of the jobs with a run time) held by batches (see
    :func:`~dlcluster.synth.fit_batches.batch_column`) of at least :data:`SWEEP_JOBS` jobs; NaN without GPU time."""
    jobs = batch_column(trace.jobs.drop_nulls("submit_time")).with_columns(pl.len().over("batch").alias("k"))
    gpu_time = jobs.filter(pl.col("duration").is_not_null()).select(
        total=(pl.col("gpu_num") * pl.col("duration")).sum(),
        swept=(pl.col("gpu_num") * pl.col("duration")).filter(pl.col("k") >= SWEEP_JOBS).sum())
    total, swept = gpu_time.row(0)
    return swept / total if total else float("nan")


def without_users(trace: Trace) -> Trace:
    """``trace`` with no job naming its user."""
    return dataclasses.replace(trace, jobs=trace.jobs.with_columns(pl.lit(None, dtype=pl.String).alias("user")))


def alike(real: Trace, generated: Trace) -> tuple[Trace, Trace]:
    """The two traces with users only if both have them: a batch is one submitter's, a trace without users stands
    its VC for the submitter, so the other must too (a generated trace's users split its VCs' runs of jobs into
    more, smaller batches)."""
    if has_users(real.jobs) == has_users(generated.jobs):
        return real, generated
    return without_users(real), without_users(generated)


# how well run times can be predicted at submission: (the metric of ``predict eval``, its row in the table)
PREDICTION_ROWS = (("mdape", "LightGBM MdAPE"), ("within_100", "LightGBM within 100%"),
                   ("spearman", "LightGBM Spearman"))


def predictability(trace: Trace) -> dict[str, float]:
    """How well the GPU jobs' run times of ``trace`` can be predicted at submission: the metrics of
    :data:`PREDICTION_ROWS` of the LightGBM estimator retrained daily (``dlcluster predict eval -e lgbm``)."""
    from dlcluster.predict.evaluate import evaluate  # (LightGBM: only for --predict)

    overall = evaluate(trace.jobs, "lgbm", source=trace.source or "<trace>").overall
    return {key: float(overall[key]) for key, _ in PREDICTION_ROWS}


def prediction_rows(real: dict[str, float], generated: dict[str, float]) -> pl.DataFrame:
    """The fidelity rows of two traces' :func:`predictability`."""
    return pl.DataFrame([_row(label, real[key], generated[key], "relative") for key, label in PREDICTION_ROWS],
                        schema=FIDELITY_SCHEMA)


def _row(metric: str, real: float | None, generated: float | None, kind: str) -> dict[str, object]:
    # kind: "relative" (generated / real - 1), "distance" (the generated value is a distance from the real)
    error = None
    if kind == "relative" and real not in (None, 0) and generated is not None and not math.isnan(real) \
            and not math.isnan(generated):
        error = generated / real - 1.0
    return {"metric": metric, "real": real, "generated": generated, "relative_error": error}


FIDELITY_SCHEMA = {"metric": pl.String, "real": pl.Float64, "generated": pl.Float64, "relative_error": pl.Float64}


def fidelity(real: Trace, generated: Trace) -> pl.DataFrame:
    """The fidelity table: marginals, arrival process, batch structure, per-size medians and per-user
    concentration."""
    near = closeness(real, generated)
    real_b, generated_b = alike(real, generated)
    common = shared_start(real, generated)  # (a replayed calendar's empty first days count as days)
    days_r, days_g = daily_counts(real, common), daily_counts(generated, common)
    rows = [
        _row("jobs", float(real.jobs.height), float(generated.jobs.height), "relative"),
        _row("jobs per day", jobs_per_day(real, common), jobs_per_day(generated, common), "relative"),
        _row("duration KS distance", None, near["ks_duration"], "distance"),
        _row("GPU-count TV distance", None, near["tv_gpu_mix"], "distance"),
        _row("median duration s", real.jobs["duration"].median(), generated.jobs["duration"].median(), "relative"),
        _row("mean duration s", real.jobs["duration"].mean(), generated.jobs["duration"].mean(), "relative"),
        _row("mean GPUs per job", real.jobs["gpu_num"].mean(), generated.jobs["gpu_num"].mean(), "relative"),
        _row("inter-arrival CV", interarrival_cv(real), interarrival_cv(generated), "relative"),
        _row("same-second share", same_second_share(real), same_second_share(generated), "relative"),
        _row("daily count CV", float(days_r.std() / days_r.mean()), float(days_g.std() / days_g.mean()), "relative"),
        _row("daily count min", float(days_r.min()), float(days_g.min()), "relative"),
        _row("daily count max", float(days_r.max()), float(days_g.max()), "relative"),
        _row("jobs-per-user Gini", user_gini(real), user_gini(generated), "relative"),
        _row("size seasons (weekly dispersion)", size_seasons(real_b), size_seasons(generated_b), "relative"),
        _row("sessions keeping GPU count", session_sizes_kept(real_b), session_sizes_kept(generated_b), "relative"),
        _row(f"GPU time in batches of {SWEEP_JOBS}+ jobs", sweep_gpu_time(real_b), sweep_gpu_time(generated_b),
             "relative"),
    ]
    counts = real.jobs["gpu_num"].value_counts()
    medians_g = size_medians(generated)
    medians_r = size_medians(real)
    for g in sorted(int(x) for x in counts.filter(pl.col("count") >= MIN_SIZE_JOBS)["gpu_num"]):
        rows.append(_row(f"median duration s, {g} GPU", medians_r.get(g), medians_g.get(g), "relative"))
    return pl.DataFrame(rows, schema=FIDELITY_SCHEMA)


def fidelity_over(tables: Sequence[pl.DataFrame]) -> pl.DataFrame:
    """:func:`fidelity` tables of several generated traces against one real trace, as one table: per metric the
    real value, the median of the generated ones and its relative error, their least and greatest value
    (``low``, ``high``) and the share of them below the real value (``real_rank``, ties counted half; none for
    distances, which have no real value). A generated trace without a value (no job of that size) is left out of
    that metric."""
    per_metric: dict[str, list[float | None]] = {}
    for metric, value in pl.concat(tables).select("metric", "generated").iter_rows():
        per_metric.setdefault(metric, []).append(value)
    rows = []
    for metric, real in tables[0].select("metric", "real").iter_rows():
        median, low, high, rank, count = (None if isinstance(x, float) and math.isnan(x) else x
                                          for x in among(per_metric[metric], real))
        rows.append({**_row(metric, real, median, "relative" if real is not None else "distance"),
                     "low": low, "high": high, "real_rank": rank, "traces": count})
    return pl.DataFrame(rows, schema={**FIDELITY_SCHEMA, "low": pl.Float64, "high": pl.Float64,
                                      "real_rank": pl.Float64, "traces": pl.Int64})
