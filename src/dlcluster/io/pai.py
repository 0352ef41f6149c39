"""Alibaba PAI GPU trace 2020 ("MLaaS in the Wild"): ``pai_job_table`` + ``pai_task_table``.

Both tables are header-less CSVs; their column names come from ``<table>.header`` (one
comma-separated line) or, when that file is absent, the documented column lists.

Times are seconds since an undisclosed origin whose time of day and day of week are the
UTC+8 wall clock. We read t as a Shanghai wall-clock instant counted from 1970-01-01 00:00
(UTC epoch ``t − 8·3600``) and set the trace's zone to ``Asia/Shanghai``, so hour-of-day and
day-of-week features come out right; absolute dates are meaningless. Fractional seconds
are rounded to the nearest second.

Per job: submit = job ``start_time``, start = earliest task start, end = job ``end_time``.
GPU demand d = Σ tasks inst_num × plan_gpu / 100 (an empty plan_gpu is no GPU):
``gpu_num = ceil(d)``, ``gpu_milli = round(1000·d / gpu_num)``; ``cpu_num = ceil(Σ inst_num
× plan_cpu / 100)``; vc = ``gpu_type`` of the job's first GPU task (``unknown`` without one).
A job with no task rows has no start, 0 GPUs and no CPU count. In lenient mode a job
with a dropped task row is dropped too (its demand would be wrong).
"""

from __future__ import annotations

import csv
from collections import Counter
from functools import partial
from pathlib import Path

import polars as pl

from dlcluster.errors import InputError
from dlcluster.io._common import (
    MAX_COUNT,
    ROW,
    Check,
    apply_checks,
    cell_text,
    duplicate,
    ends_before,
    is_null_token,
    map_status,
    negative,
    out_of_range,
    parse_float,
    read_csv_text,
    required_value,
    starts_before,
    time_limit,
    to_int,
    unknown_status,
    unparsable,
)
from dlcluster.schema import conform
from dlcluster.trace import Trace

TIMEZONE = "Asia/Shanghai"
SHIFT = 8 * 3600
JOB_COLUMNS = ("job_name", "inst_id", "user", "status", "start_time", "end_time")
TASK_COLUMNS = ("job_name", "task_name", "inst_num", "status", "start_time", "end_time", "plan_cpu", "plan_mem",
                "plan_gpu", "gpu_type")
STATUSES = {"Running": "running", "Terminated": "completed", "Failed": "failed", "Waiting": "pending"}


def _folder(path: Path) -> Path:
    return path.parent if path.is_file() else path


def sniff(path: Path) -> bool:
    """A folder holding ``pai_job_table.csv`` and ``pai_task_table.csv`` (or one of those files)."""
    folder = _folder(path)
    if path.is_file() and path.name not in ("pai_job_table.csv", "pai_task_table.csv"):
        return False
    return (folder / "pai_job_table.csv").is_file() and (folder / "pai_task_table.csv").is_file()


def _table(folder: Path, name: str, documented: tuple[str, ...]) -> tuple[pl.DataFrame, Path]:
    """A header-less table read as text, named by its ``.header`` file (else the documented columns)."""
    path, header = folder / f"{name}.csv", folder / f"{name}.header"
    if not path.is_file():
        raise InputError(f"missing {path.name}", path=folder)
    columns = documented
    if header.is_file():
        # (utf-8-sig: the byte-order mark Windows editors write is no part of the first column's name)
        columns = tuple(c.strip() for c in header.read_text(encoding="utf-8-sig").strip().split(","))
        missing = [c for c in documented if c not in columns]
        if missing:
            raise InputError(f"header lacks column '{missing[0]}'", path=header)
    with path.open("r", encoding="utf-8", errors="replace", newline="") as fh:
        width = len(next(csv.reader([fh.readline()]), [""]))  # a quoted comma is not a separator
    if width != len(columns):
        raise InputError(f"line 1 has {width} fields but the header names {len(columns)}", path=path)
    return read_csv_text(path, has_header=False, new_columns=columns), path


def _seconds(col: str) -> pl.Expr:
    return (to_int(parse_float(col).round(0)) - SHIFT).alias(f"{col}_")


def _time_checks(col: str) -> list[Check]:
    return [time_limit(col, parse_float(col) - SHIFT), unparsable(col, f"{col}_", "seconds")]


def _number_checks(cols: tuple[str, ...], what: str) -> list[Check]:
    # a task's share beyond the count limit could only add up to a job beyond it
    return [c for col in cols for c in (out_of_range(col, pl.col(f"{col}_"), -float("inf"), MAX_COUNT * 100.0,
                                                     f"at most {MAX_COUNT * 100:,}"),
                                        unparsable(col, f"{col}_", what), negative(f"{col}_", col))]


def _too_many(job: object, what: str) -> str:
    return f"job {job!r}: its tasks ask for more than {MAX_COUNT:,} {what} in all"


def _tasks(folder: Path, lenient: bool) -> tuple[pl.DataFrame, Path, set[str], Counter[str]]:
    """Per-job aggregates of the task table, its path, the jobs that lost a task row, and the drop counts."""
    raw, path = _table(folder, "pai_task_table", TASK_COLUMNS)
    df = raw.with_columns(
        parse_float("inst_num").alias("inst_num_"),
        parse_float("plan_cpu").alias("plan_cpu_"),
        parse_float("plan_gpu").alias("plan_gpu_"),
        parse_float("start_time").alias("start_time_"),
    )
    checks = [required_value("job_name")] + _number_checks(("inst_num", "plan_cpu", "plan_gpu"), "a number") + [
        time_limit("start_time", pl.col("start_time_") - SHIFT),
        unparsable("start_time", "start_time_", "seconds"),
        required_value("inst_num_", "inst_num"),
    ]
    kept, dropped = apply_checks(df, checks, path=path, lenient=lenient)
    lost = set(df.join(kept.select(ROW), on=ROW, how="anti")["job_name"].drop_nulls().to_list())
    gpu_task = pl.col("plan_gpu_").fill_null(0) > 0
    agg = kept.with_columns(_seconds("start_time")).group_by("job_name", maintain_order=True).agg(
        # percent-of-a-GPU sums are exact in floats for the trace's values; rounding guards the ceil
        (pl.col("inst_num_") * pl.col("plan_gpu_").fill_null(0)).sum().round(6).alias("_gpu_pct"),
        (pl.col("inst_num_") * pl.col("plan_cpu_")).sum().round(6).alias("_cpu_pct"),
        pl.col("plan_cpu_").is_not_null().any().alias("_has_cpu"),
        pl.col("start_time_").min().alias("_task_start"),
        # where the first task's start is written, for an error about it
        pl.struct(pl.col(ROW).alias("_task_row"), pl.col("start_time").alias("_task_start_text"))
        .sort_by("start_time_", nulls_last=True, maintain_order=True).first().alias("_first_task"),
        pl.col("gpu_type").filter(gpu_task & ~is_null_token("gpu_type")).first().str.strip_chars().alias("_gpu_type"),
    ).unnest("_first_task")
    return agg, path, lost, Counter({f"task {k}": v for k, v in dropped.items()})


def _started_before_submit(df: pl.DataFrame, task_path: Path, lenient: bool) -> tuple[pl.DataFrame, Counter[str]]:
    """Refuse (drop, if lenient) the jobs whose first task starts before their submission, naming that task's line."""
    # the bad value is the task's, not the job's submit time: the check sees the task's line and text
    probe = df.select("job_name", "_task_start", "start_time_",
                      pl.col("_task_row").alias(ROW), pl.col("_task_start_text").alias("start_time"))
    kept, dropped = apply_checks(probe, [starts_before("_task_start", "start_time_", "start_time")],
                                 path=task_path, lenient=lenient)
    return df.join(kept.select("job_name"), on="job_name", how="semi", maintain_order="left"), dropped


def read(path: Path, *, lenient: bool = False) -> Trace:
    """Read a PAI 2020 trace folder (job + task tables) into the canonical schema."""
    folder = _folder(path)
    raw, job_path = _table(folder, "pai_job_table", JOB_COLUMNS)
    df = raw.with_columns(
        pl.col("job_name").str.strip_chars(),
        _seconds("start_time"),
        _seconds("end_time"),
        map_status("status", STATUSES).alias("status_"),
    )
    checks = [
        required_value("job_name"), duplicate("job_name"),
        *_time_checks("start_time"), required_value("start_time_", "start_time"),
        *_time_checks("end_time"),
        unknown_status("status", "status_"),
    ]
    df, dropped = apply_checks(df, checks, path=job_path, lenient=lenient)
    tasks, task_path, lost, task_dropped = _tasks(folder, lenient)
    dropped.update(task_dropped)
    if lost:
        before = df.height
        df = df.filter(~pl.col("job_name").is_in(sorted(lost)))
        dropped["job with a dropped task row"] += before - df.height
    df = df.join(tasks, on="job_name", how="left", maintain_order="left")
    # only now is the first task's start known: a job must not end before it, nor start before its submission
    too_many = [Check("job_name", pl.col(pct) / 100 > MAX_COUNT, f"out-of-range {what}", partial(_too_many, what=what))
                for pct, what in (("_gpu_pct", "GPUs"), ("_cpu_pct", "CPUs"))]
    df, late = apply_checks(df, [*too_many, ends_before("end_time_", "_task_start", "end_time")],
                            path=job_path, lenient=lenient)
    dropped.update(late)
    df, early = _started_before_submit(df, task_path, lenient)
    dropped.update(early)
    gpus = (pl.col("_gpu_pct").fill_null(0) / 100).ceil()
    jobs = conform(df.with_columns(
        pl.col("job_name").alias("job_id"),
        pl.lit("pai").alias("cluster"),
        pl.col("_gpu_type").fill_null("unknown").alias("vc"),
        cell_text("user").alias("user"),
        pl.col("job_name").alias("name"),
        gpus.alias("gpu_num"),
        pl.when(gpus > 0).then((10 * pl.col("_gpu_pct") / gpus).round(0)).alias("gpu_milli"),
        pl.when(pl.col("_has_cpu")).then((pl.col("_cpu_pct") / 100).ceil()).alias("cpu_num"),
        pl.col("start_time_").alias("submit_time"),
        pl.col("end_time_").alias("end_time"),
        pl.col("_task_start").alias("start_time"),
        (pl.col("end_time_") - pl.col("_task_start")).alias("duration"),
        (pl.col("_task_start") - pl.col("start_time_")).alias("queue_delay"),
        pl.col("status_").alias("status"),
    ))
    return Trace(jobs, format="pai", timezone=TIMEZONE, source=str(folder), dropped=dropped)
