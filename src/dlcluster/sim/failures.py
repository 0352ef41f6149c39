"""Failures, retries and early validation: what each job's attempts are, decided up front from the trace.

A trace records each job's outcome (``status``) and, for Philly's raw log, each attempt. A
simulation with failures on replays them: a job runs its first attempt; if that attempt
failed and the retry policy allows, the job rejoins its VC's queue for the next one, with
that attempt's own run time. Without an attempts table a failed job's retries fail the same
way after the same run time (a broken job stays broken). ``no_retry_within`` stops retrying
a job whose attempt failed that early (such failures are mostly user errors that fail again).

Early validation (the Philly study's third guideline) first runs every job for up to
``validation_seconds`` on a pool of ``validation_gpus`` single GPUs: a job whose first
attempt fails within that time fails there and never holds its gang on the main cluster;
the others then join the main queue (from the start, or with ``keep_progress`` having done
that much of their work).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

import polars as pl

from dlcluster.errors import ConfigError

FAILED = ("failed", "node_fail")  # outcomes a retry may fix (cancelled and timed-out jobs are not retried)
EARLY_SECONDS = 600  # a failure within 10 minutes counts as early (Philly: user and programming errors)


@dataclass(frozen=True, slots=True)
class FailureModel:
    """How failures are replayed: retries, the no-retry rule for early failures, and early validation."""

    retries: int = 0
    no_retry_within: int | None = None  # seconds
    validation_seconds: int | None = None
    validation_gpus: int = 0
    keep_progress: bool = False
    early_seconds: int = EARLY_SECONDS

    def __post_init__(self) -> None:
        if self.retries < 0:
            raise ConfigError(f"--retries must be at least 0, got {self.retries}")
        if self.no_retry_within is not None and self.no_retry_within <= 0:
            raise ConfigError(f"--no-retry-within must be a positive number of minutes, got {self.no_retry_within / 60:g}")
        if (self.validation_seconds is None) != (self.validation_gpus == 0):
            raise ConfigError("early validation needs both --validation-minutes and --validation-gpus")
        if self.validation_seconds is not None and (self.validation_seconds <= 0 or self.validation_gpus < 0):
            raise ConfigError("--validation-minutes and --validation-gpus must be positive")

    @property
    def validates(self) -> bool:
        """Whether jobs go through a validation pool first."""
        return self.validation_seconds is not None


@dataclass
class Plan:
    """Per job (in the order of the table given): the work of each attempt it will run, and its final outcome."""

    work: list[list[int]]
    outcome: list[str]

    def failed_work(self, job: int) -> int:
        """Seconds of work in ``job``'s attempts that fail."""
        work = self.work[job]
        return sum(work) - (0 if self.outcome[job] in FAILED else work[-1])


def attempt_plan(jobs: pl.DataFrame, attempts: pl.DataFrame | None, model: FailureModel) -> Plan:
    """The attempts of each job of ``jobs`` (``job_id, duration, status``): the recorded ones where ``attempts`` has
    them (every one but the last failed), else one, or ``retries + 1`` for a failed job; at most ``retries + 1``,
    and none after one that failed within ``no_retry_within``."""
    ids, duration = jobs["job_id"].to_list(), jobs["duration"].to_list()
    status = jobs["status"].cast(pl.String).fill_null("other").to_list()
    recorded: dict[str, list[int]] = {}
    if attempts is not None and attempts.height:
        ran = attempts.filter(pl.col("end_time").is_not_null() & pl.col("job_id").is_in(jobs["job_id"].implode()))
        for job_id, work in ran.sort("job_id", "attempt").group_by("job_id", maintain_order=True).agg(
                (pl.col("end_time") - pl.col("start_time")).clip(0)).iter_rows():
            recorded[job_id] = work
    work = [[d] for d in duration]
    outcome = list(status)
    cap, within = model.retries + 1, model.no_retry_within
    # only jobs that failed, or whose attempts are recorded, can have more than one attempt
    for j in [j for j, (i, s) in enumerate(zip(ids, status, strict=True)) if s in FAILED or i in recorded]:
        tries = recorded.get(ids[j]) or [duration[j]] * cap
        final = status[j]
        if len(tries) > cap:
            tries, final = tries[:cap], "failed"
        if within is not None:
            for k, w in enumerate(tries):
                if w <= within and (k < len(tries) - 1 or final in FAILED):  # attempt k failed early: the last
                    tries, final = tries[: k + 1], "failed"
                    break
        work[j], outcome[j] = tries, final
    return Plan(work, outcome)


def first_attempt_fails(work: pl.Expr, outcome: pl.Expr) -> pl.Expr:
    """Whether a job's first attempt fails: it is not its last, or the job's outcome is a failure."""
    return (work.list.len() > 1) | outcome.is_in(FAILED)


def failure_summary(jobs: pl.DataFrame, caught: pl.DataFrame | None, model: FailureModel) -> dict[str, Any]:
    """The ``failures`` object of a summary: GPU time lost to failed attempts (early and late), retries, and what
    validation caught. ``jobs`` are the main cluster's (``work``, ``outcome``, ``gpu_num``; ``pool_run`` with
    validation), ``caught`` those that failed on the validation pool."""
    failed = first_attempt_fails(pl.col("work"), pl.col("outcome"))
    # every attempt but the last failed; the last one failed if the outcome says so
    per_attempt = jobs.select("gpu_num", "outcome", pl.col("work")).with_row_index("j").explode("work").with_columns(
        (pl.int_range(pl.len()).over("j") == pl.len().over("j") - 1).alias("last"))
    lost = per_attempt.filter(~pl.col("last") | pl.col("outcome").is_in(FAILED))
    gpu_hours = (pl.col("gpu_num") * pl.col("work")).sum() / 3600
    early = pl.col("work") <= model.early_seconds
    out: dict[str, Any] = {
        "failed_jobs": int(jobs.filter(pl.col("outcome").is_in(FAILED)).height),
        "retries": int((jobs["work"].list.len() - 1).sum()),
        "failed_gpu_hours": float(lost.select(gpu_hours).item() or 0.0),
        "failed_gpu_hours_early": float(lost.filter(early).select(gpu_hours).item() or 0.0),
        "failed_gpu_hours_late": float(lost.filter(~early).select(gpu_hours).item() or 0.0),
        "early_seconds": model.early_seconds,
        "first_attempt_failed_jobs": int(jobs.filter(failed).height),
    }
    if caught is not None:
        caught_pool = float(caught["pool_run"].sum()) / 3600
        caught_early = float(caught.filter(pl.col("pool_run") <= model.early_seconds)["pool_run"].sum()) / 3600
        pool_hours = float(jobs["pool_run"].sum()) / 3600 + caught_pool
        out.update(
            validation_caught=caught.height,
            # what the caught jobs would have held on the main cluster: every attempt on its whole gang
            validation_gpu_hours_saved=float(caught.select((pl.col("gpu_num") * pl.col("work").list.sum()).sum()
                                                           / 3600).item() or 0.0),
            validation_pool_gpu_hours=pool_hours,
            validation_mean_wait=float(cast(float, pl.concat([jobs["pool_wait"], caught["pool_start"]
                                                               - caught["submit"]]).mean() or 0.0)),
            # the caught jobs' failures happened on the pool, on one GPU each
            failed_gpu_hours=out["failed_gpu_hours"] + caught_pool,
            failed_gpu_hours_early=out["failed_gpu_hours_early"] + caught_early,
            failed_gpu_hours_late=out["failed_gpu_hours_late"] + caught_pool - caught_early,
        )
    return out


def validation_pool(jobs: pl.DataFrame, model: FailureModel) -> pl.DataFrame:
    """The validation pool's jobs (``job_id, vc, gpu_num, submit_time, duration``): each job on one GPU for up to
    ``validation_seconds``, or until its first attempt fails within them. ``jobs`` has ``submit, work, outcome``."""
    assert model.validation_seconds is not None
    first = pl.col("work").list.first()
    caught = first_attempt_fails(pl.col("work"), pl.col("outcome")) & (first <= model.validation_seconds)
    return jobs.select(
        "job_id", pl.lit("validation").alias("vc"), pl.lit(1, pl.Int32).alias("gpu_num"),
        pl.col("submit").alias("submit_time"),
        pl.when(caught).then(first).otherwise(pl.min_horizontal(first, pl.lit(model.validation_seconds)))
        .alias("duration"), caught.alias("caught"))


def after_validation(jobs: pl.DataFrame, pool: pl.DataFrame, ran: pl.DataFrame, model: FailureModel,
                     ) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Split ``jobs`` by the pool run ``ran`` (``job_id, start, end``): (the jobs that go on to the main cluster,
    submitted when their validation ended, in that order; the jobs caught on the pool)."""
    joined = jobs.join(pool.select("job_id", "caught", pl.col("duration").alias("pool_run")), on="job_id") \
        .join(ran.select("job_id", pl.col("start").alias("pool_start"), pl.col("end").alias("pool_end")), on="job_id")
    main = joined.filter(~pl.col("caught")).with_columns(
        pl.col("submit").alias("first_submit"), (pl.col("pool_start") - pl.col("submit")).alias("pool_wait"),
        pl.col("pool_end").alias("submit"))
    if model.keep_progress:  # the first attempt goes on from where validation left it
        main = main.with_columns(pl.concat_list(
            (pl.col("work").list.first() - pl.col("pool_run")).clip(0), pl.col("work").list.slice(1)).alias("work"))
    return main.sort("submit", maintain_order=True), joined.filter(pl.col("caught"))
