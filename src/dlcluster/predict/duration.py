"""Job-duration estimators: canonical job table → ``job_id, estimate`` (predicted seconds).

``history`` is the Helios artifact's "naive" estimator made leak-free and vectorised: a
job's estimate is the mean duration of earlier jobs that had *ended by its submission*,
taken from the most specific group that has any — same user, name and GPU count; same
user and GPU count; same user; everyone — and :data:`DEFAULT_SECONDS` when nothing has
ended yet. ``oracle`` is the true duration (an upper bound on what prediction can give).
"""

from __future__ import annotations

from collections.abc import Callable

import polars as pl

from dlcluster.errors import ConfigError

DEFAULT_SECONDS = 3600.0  # the estimate before any job has ended: no history, no better guess
HISTORY_LEVELS = (("user", "name", "gpu_num"), ("user", "gpu_num"), ("user",), ())
ACCURACY_BANDS = (0.1, 0.5, 1.0, 10.0)  # the Helios paper's error bands: ±10%, ±50%, ±100%, ±1000%


def oracle_estimates(jobs: pl.DataFrame) -> pl.DataFrame:
    """The true duration of every job (``job_id, estimate``)."""
    return jobs.filter(pl.col("duration").is_not_null()).select(
        "job_id", pl.col("duration").cast(pl.Float64).alias("estimate"))


def _finished(jobs: pl.DataFrame) -> pl.DataFrame:
    """Jobs with a known duration and the instant it became known (recorded end, else submit + wait + run)."""
    known_end = pl.coalesce(
        pl.col("end_time"),
        pl.col("submit_time") + pl.col("queue_delay").fill_null(0) + pl.col("duration"),
    )
    return jobs.filter(pl.col("duration").is_not_null()).select(
        "user", "name", "gpu_num", known_end.alias("known_at"), pl.col("duration").cast(pl.Float64))


def _history_level(queries: pl.DataFrame, done: pl.DataFrame, keys: tuple[str, ...]) -> pl.DataFrame:
    """Per query: the mean duration of its ``keys`` group's jobs known by its submit time (null: none yet)."""
    if keys:
        done = done.drop_nulls(list(keys))
        queries = queries.drop_nulls(list(keys))

    def per_group(expr: pl.Expr) -> pl.Expr:
        return expr.over(list(keys)) if keys else expr

    # stable: the float running sums must not depend on how same-second ends are ordered
    running = done.sort("known_at", maintain_order=True).with_columns(
        per_group(pl.col("duration").cum_sum()).alias("dur_sum"),
        per_group(pl.int_range(1, pl.len() + 1)).alias("dur_n"),
    )
    # several jobs can end in the same second: keep the last running total of that second
    running = running.unique([*keys, "known_at"], keep="last", maintain_order=True).select(
        *keys, "known_at", "dur_sum", "dur_n")
    return queries.sort("submit_time").join_asof(
        running, left_on="submit_time", right_on="known_at", by=list(keys) or None, strategy="backward",
        check_sortedness=False,  # both sides are sorted on the time; polars cannot verify that within groups
    ).select("job_id", (pl.col("dur_sum") / pl.col("dur_n")).alias("estimate"))


def history_estimates(jobs: pl.DataFrame) -> pl.DataFrame:
    """Mean duration of the job's most specific history group known at its submission (``job_id, estimate``)."""
    queries = jobs.select("job_id", "user", "name", "gpu_num", "submit_time")
    done = _finished(jobs)
    levels = [keys for keys in HISTORY_LEVELS if all(jobs[k].null_count() < jobs.height for k in keys)]
    out = queries.select("job_id")
    for i, keys in enumerate(levels):
        out = out.join(_history_level(queries, done, keys).rename({"estimate": f"e{i}"}), on="job_id", how="left",
                       maintain_order="left")
    return out.select("job_id", pl.coalesce(*(f"e{i}" for i in range(len(levels))), pl.lit(DEFAULT_SECONDS))
                      .alias("estimate"))


ESTIMATORS: dict[str, Callable[[pl.DataFrame], pl.DataFrame]] = {
    "oracle": oracle_estimates,
    "history": history_estimates,
}


def estimate_durations(jobs: pl.DataFrame, estimator: str) -> pl.DataFrame:
    """Run a built-in estimator by name."""
    if estimator not in ESTIMATORS:
        raise ConfigError(f"unknown estimator {estimator!r}; choose one of: {', '.join(ESTIMATORS)}")
    return ESTIMATORS[estimator](jobs)


def accuracy(estimates: pl.DataFrame, jobs: pl.DataFrame) -> dict[str, float | int]:
    """Share of jobs whose estimate is within ±10/50/100/1000% of the true duration (the paper's bands)."""
    d = estimates.join(jobs.select("job_id", "duration"), on="job_id").filter(pl.col("duration") > 0)
    err = ((pl.col("estimate") - pl.col("duration")) / pl.col("duration")).abs()
    row = d.select(pl.len().alias("jobs"), *((err <= b).mean().alias(f"within_{int(b * 100)}pct")
                                              for b in ACCURACY_BANDS)).row(0, named=True)
    return {k: (int(v) if k == "jobs" else float(v or 0.0)) for k, v in row.items()}
