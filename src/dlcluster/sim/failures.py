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

from dlcluster.cluster import MAX_NODES
from dlcluster.errors import ConfigError

FAILED = ("failed", "node_fail")  # outcomes a retry may fix (cancelled and timed-out jobs are not retried)
EARLY_SECONDS = 600  # a failure within 10 minutes counts as early (Philly: user and programming errors)
MAX_RETRIES = 1_000  # a failed job's reruns are simulated one by one: the cost grows with the limit
MAX_POOL_GPUS = MAX_NODES  # the validation pool is a cluster of one-GPU nodes


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
        if not 0 <= self.retries <= MAX_RETRIES:
            raise ConfigError(f"--retries must be from 0 to {MAX_RETRIES:,}, got {self.retries}")
        if self.no_retry_within is not None and self.no_retry_within <= 0:
            raise ConfigError(f"--no-retry-within must be a positive number of minutes, got {self.no_retry_within / 60:g}")
        if (self.validation_seconds is None) != (self.validation_gpus == 0):
            raise ConfigError("early validation needs both --validation-minutes and --validation-gpus")
        if self.validation_seconds is not None and (self.validation_seconds <= 0 or self.validation_gpus < 0):
            raise ConfigError("--validation-minutes and --validation-gpus must be positive")
        if self.validation_gpus > MAX_POOL_GPUS:
            raise ConfigError(f"--validation-gpus must be at most {MAX_POOL_GPUS:,} (the pool is a VC of one-GPU "
                              f"nodes, and a cluster holds at most that many nodes), got {self.validation_gpus:,}")

    @property
    def validates(self) -> bool:
        """Whether jobs go through a validation pool first."""
        return self.validation_seconds is not None


PLAN_COLUMNS = ("first", "tries", "outcome", "failed_early", "failed_late", "work_total")


def attempt_plan(jobs: pl.DataFrame, attempts: pl.DataFrame | None, model: FailureModel,
                 ) -> tuple[pl.DataFrame, dict[str, list[int]]]:
    """The attempts of each job of ``jobs`` (``job_id, duration, status``): ``jobs`` with the columns ``first`` (work
    of the first attempt), ``tries``, ``outcome`` (of the last), ``failed_early`` and ``failed_late`` (seconds of
    work in attempts that fail, within ``early_seconds`` or later) and ``work_total``; and the work of every attempt
    of the jobs whose attempts differ (those ``attempts`` records), by job id.

    A recorded job runs its recorded attempts (every one but the last failed; one without a start or an end time is
    skipped: it has no run time); another runs once, or ``retries + 1``
    times if it failed, each time for its duration. At most ``retries + 1`` attempts, and none after one that
    failed within ``no_retry_within``."""
    cap, within, early = model.retries + 1, model.no_retry_within, model.early_seconds
    d, failed = pl.col("duration"), pl.col("status").cast(pl.String).is_in(FAILED)
    once = (d <= within) if within is not None else pl.lit(False)
    tries = pl.when(failed & ~once).then(cap).otherwise(1).cast(pl.Int32)
    plan = jobs.with_columns(
        d.alias("first"), tries.alias("tries"), pl.col("status").cast(pl.String).fill_null("other").alias("outcome"),
        (d * tries * failed.cast(pl.Int64) * (d <= early).cast(pl.Int64)).alias("failed_early"),
        (d * tries * failed.cast(pl.Int64) * (d > early).cast(pl.Int64)).alias("failed_late"),
        (d * tries).alias("work_total"))
    if attempts is None or attempts.height == 0:
        return plan, {}
    # an attempt the log records without a start or an end time (Philly's "None") has no run time: it is skipped
    ran = attempts.filter(pl.col("start_time").is_not_null() & pl.col("end_time").is_not_null()
                          & pl.col("job_id").is_in(jobs["job_id"].implode()))
    recorded: dict[str, list[int]] = {}
    fixes = []
    status = dict(zip(jobs["job_id"].to_list(), jobs["status"].cast(pl.String).to_list(), strict=True))
    for job_id, tries_ in ran.sort("job_id", "attempt").group_by("job_id", maintain_order=True).agg(
            (pl.col("end_time") - pl.col("start_time")).clip(0)).iter_rows():
        work, final = list(tries_[:cap]), status[job_id] if len(tries_) <= cap else "failed"
        for k, w in enumerate(work):
            if within is not None and w <= within and (k < len(work) - 1 or final in FAILED):
                work, final = work[: k + 1], "failed"  # failed early: no retry after it
                break
        lost = work if final in FAILED else work[:-1]
        recorded[job_id] = work
        fixes.append((job_id, work[0], len(work), final, sum(w for w in lost if w <= early),
                      sum(w for w in lost if w > early), sum(work)))
    if fixes:
        fixed = pl.DataFrame(fixes, schema={"job_id": pl.String, **{c: plan.schema[c] for c in PLAN_COLUMNS}},
                             orient="row")
        plan = plan.update(fixed, on="job_id")
    return plan, recorded


def first_attempt_fails() -> pl.Expr:
    """Whether a job's first attempt fails: it is not its last, or the job's outcome is a failure."""
    return (pl.col("tries") > 1) | pl.col("outcome").is_in(FAILED)


def retry_counts(plan: pl.DataFrame, recorded: dict[str, list[int]]) -> tuple[list[int], dict[int, list[int]]]:
    """By row of ``plan``, the attempts still to come after the first; and, for the rows whose retries do not redo the
    first attempt's work (``first``), the work of each, the next one last (for popping): an attempts table's
    records, or the whole attempt where validation did part of the first (``retry_work``)."""
    more = plan.with_row_index("i").filter(pl.col("tries") > 1)
    work = {}
    if "retry_work" in plan.columns:
        differ = more.filter(pl.col("retry_work") != pl.col("first"))
        work = {i: [w] * (n - 1) for i, w, n in differ.select("i", "retry_work", "tries").iter_rows()}
    if recorded:
        more = more.filter(pl.col("job_id").is_in(list(recorded)))
        work.update({i: recorded[job_id][:0:-1] for i, job_id in more.select("i", "job_id").iter_rows()})
    return (plan["tries"] - 1).to_list(), work


def failure_summary(jobs: pl.DataFrame, ended: pl.DataFrame | None, model: FailureModel) -> dict[str, Any]:
    """The ``failures`` object of a summary: GPU time lost to failed attempts (early and late), retries, and what
    validation caught. ``jobs`` are the main cluster's (plan columns, ``gpu_num``; ``pool_run`` with validation),
    ``ended`` those that ended on the validation pool (see :func:`after_validation`)."""
    def hours(frame: pl.DataFrame, column: str) -> float:
        return float(frame.select((pl.col("gpu_num") * pl.col(column)).sum()).item() or 0) / 3600

    early, late = hours(jobs, "failed_early"), hours(jobs, "failed_late")
    if "pool_failed" in jobs.columns:  # (failed_* count every attempt on its gang: the pool's part ran on one GPU)
        gang_only = pl.col("pool_failed") * (pl.col("gpu_num") - 1)
        early -= float(jobs.select(gang_only.filter(pl.col("pool_failed_early")).sum()).item() or 0) / 3600
        late -= float(jobs.select(gang_only.filter(~pl.col("pool_failed_early")).sum()).item() or 0) / 3600
    out: dict[str, Any] = {
        "failed_jobs": int(jobs.filter(pl.col("outcome").is_in(FAILED)).height),
        "retries": int((jobs["tries"] - 1).sum()),
        "failed_gpu_hours": early + late, "failed_gpu_hours_early": early, "failed_gpu_hours_late": late,
        "early_seconds": model.early_seconds,
        "first_attempt_failed_jobs": int(jobs.filter(first_attempt_fails()).height),
    }
    if ended is not None:
        caught = ended.filter(pl.col("caught"))
        # the caught jobs' failures happened on the pool, on one GPU each
        caught_pool = float(caught["pool_run"].sum()) / 3600
        caught_early = float(caught.filter(pl.col("pool_run") <= model.early_seconds)["pool_run"].sum()) / 3600
        out.update(
            validation_caught=caught.height,
            # a caught job failed too: its first (and last) attempt, on the pool
            failed_jobs=out["failed_jobs"] + caught.height,
            first_attempt_failed_jobs=out["first_attempt_failed_jobs"] + caught.height,
            # what the caught jobs would have held on the main cluster: every attempt on its whole gang
            validation_gpu_hours_saved=hours(caught, "work_total"),
            validation_pool_gpu_hours=(float(jobs["pool_run"].sum()) + float(ended["pool_run"].sum())) / 3600,
            validation_mean_wait=float(cast(float, pl.concat([jobs["pool_wait"], ended["pool_start"]
                                                               - ended["submit"]]).mean() or 0.0)),
            failed_gpu_hours=out["failed_gpu_hours"] + caught_pool,
            failed_gpu_hours_early=early + caught_early,
            failed_gpu_hours_late=late + caught_pool - caught_early,
        )
    return out


def validation_pool(jobs: pl.DataFrame, model: FailureModel) -> pl.DataFrame:
    """The validation pool's jobs (``job_id, vc, gpu_num, submit_time, duration``, and ``caught``): each job on one
    GPU for up to ``validation_seconds``, or until its first attempt fails within them."""
    assert model.validation_seconds is not None
    first = pl.col("first")
    caught = first_attempt_fails() & (first <= model.validation_seconds)
    return jobs.select(
        "job_id", pl.lit("validation").alias("vc"), pl.lit(1, pl.Int32).alias("gpu_num"),
        pl.col("submit").alias("submit_time"),
        pl.when(caught).then(first).otherwise(pl.min_horizontal(first, pl.lit(model.validation_seconds)))
        .alias("duration"), caught.alias("caught"))


def after_validation(jobs: pl.DataFrame, pool: pl.DataFrame, ran: pl.DataFrame, model: FailureModel,
                     ) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Split ``jobs`` by the pool run ``ran`` (``job_id, start, end``): (the jobs that go on to the main cluster,
    submitted when their validation ended, in that order; the jobs that ended on the pool: those it caught
    (``caught``), and under ``keep_progress`` those whose only attempt it ran to the end)."""
    joined = jobs.join(pool.select("job_id", "caught", pl.col("duration").alias("pool_run")), on="job_id") \
        .join(ran.select("job_id", pl.col("start").alias("pool_start"), pl.col("end").alias("pool_end")), on="job_id")
    # (not caught: its first attempt is its last and does not fail; done on the pool, it needs no gang)
    ended = pl.col("caught") | (pl.col("first") <= pl.col("pool_run")) if model.keep_progress else pl.col("caught")
    main = joined.filter(~ended).with_columns(
        pl.col("submit").alias("first_submit"), (pl.col("pool_start") - pl.col("submit")).alias("pool_wait"),
        pl.col("pool_end").alias("submit"))
    if model.keep_progress:  # the first attempt goes on from where validation left it
        done = pl.min_horizontal(pl.col("first"), pl.col("pool_run"))
        # (a retry starts afresh: its work is the whole attempt's)
        main = main.with_columns(pl.col("first") - done, pl.col("work_total") - done,
                                 pl.col("first").alias("retry_work"),
                                 # a first attempt that fails ran this much of itself on one pool GPU, not the gang
                                 pl.when(first_attempt_fails()).then(done).otherwise(0).alias("pool_failed"),
                                 (pl.col("first") <= model.early_seconds).alias("pool_failed_early"))
    return main.sort("submit", maintain_order=True), joined.filter(ended)
