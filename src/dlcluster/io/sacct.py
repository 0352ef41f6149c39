"""Slurm accounting exports (``sacct --parsable2``): ``|``-separated, one header line.

Job steps (``123.batch``, ``123.extern``, ``123.0``) are skipped; array (``123_4``) and
heterogeneous (``123+0``) ids are jobs, and a record of array tasks still pending
(``123_[5-7,9%2]``) is one job per task (``123_5`` … ``123_9``). GPUs come from
``AllocTRES`` (``ReqTRES`` when the allocation is empty): the untyped ``gres/gpu=N`` entry,
else the sum of typed ``gres/gpu:model=N`` entries, else 0. An export with neither TRES column (older Slurm,
``--format=...,AllocGRES,ReqGRES``) reads ``AllocGRES`` (``ReqGRES`` when empty) the same way: the untyped ``gpu:N``
entry, else the sum of typed ``gpu:model:N`` entries (``(IDX:0-1)`` and the like ignored; a count left out is
Slurm's 1), else 0; an export with none of the four columns is refused. Times are wall clock in the ``timezone`` option
(default UTC); ``Unknown``/``None`` mean no value. duration = End − Start, or ``Elapsed``
(``[D-]HH:MM:SS``) when either is missing; none for a job still pending when the export was
taken (its ``Elapsed`` of 0 is no run time). A job read as pending (``PENDING``, ``REQUEUED``, ``REQUEUE_HOLD``,
``REQUEUE_FED``) has not started: it has no start, end or queueing delay (its ``Start`` is the scheduler's
expected start, not a start). vc = Partition (else Account, else ``default``);
cluster = the ``Cluster`` column, else the file's stem.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path

import polars as pl

from dlcluster.errors import InputError
from dlcluster.io._common import (
    MAX_COUNT,
    ROW,
    Check,
    apply_checks,
    count_limit,
    duplicate,
    ends_before,
    ends_before_submit,
    first_line,
    map_status,
    negative,
    parse_datetime,
    parse_int,
    read_csv_text,
    require_columns,
    required_value,
    seconds_limit,
    skipped_time,
    source_stem,
    starts_before,
    time_limit,
    trimmed_text,
    unknown_status,
    unparsable,
)
from dlcluster.schema import conform
from dlcluster.trace import Trace

STATES = {
    "COMPLETED": "completed", "FAILED": "failed", "OUT_OF_MEMORY": "failed", "BOOT_FAIL": "failed",
    "CANCELLED": "cancelled", "TIMEOUT": "timeout", "DEADLINE": "timeout", "NODE_FAIL": "node_fail",
    "RUNNING": "running", "COMPLETING": "running", "PENDING": "pending", "REQUEUED": "pending",
    "REQUEUE_HOLD": "pending", "REQUEUE_FED": "pending", "PREEMPTED": "other", "SUSPENDED": "other",
    "REVOKED": "other", "RESIZING": "other", "SPECIAL_EXIT": "other", "STOPPED": "other",
}
TIME_FORMAT = "%Y-%m-%dT%H:%M:%S"
_ELAPSED = r"^(?:(\d{1,9})-)?(\d{1,9}):([0-5]\d):([0-5]\d)$"  # digits bounded: no sum can overflow
_ARRAY = r"^(.+)_\[(.*)\]$"  # a record of array tasks: id_[tasks]
_TASKS = r"^\d{1,9}(?:-\d{1,9})?(?:,\d{1,9}(?:-\d{1,9})?)*(?:%\d{1,9})?$"  # 1-3,8 and a %N throttle
MAX_ARRAY_TASKS = 4_000_001  # Slurm's largest MaxArraySize: a record naming more tasks is not Slurm's
# columns an export may leave out (sacct --format picks them): read as all empty
OPTIONAL = ("Start", "End", "Elapsed", "NCPUS", "NNodes", "Cluster", "Partition", "Account",
            "User", "JobName")


def sniff(path: Path) -> bool:
    """A file whose first line contains ``JobID|``."""
    return "JobID|" in first_line(path)


def _gpus(col: str) -> tuple[pl.Expr, pl.Expr]:
    """GPU count of a TRES string (null when it has no GPU entry) and a flag for an unparsable count."""
    untyped = pl.col(col).str.extract(r"(?:^|,)gres/gpu=([^,]*)", 1)
    typed = pl.col(col).str.extract_all(r"(?:^|,)gres/gpu:[^=,]+=[^,]*").list.eval(
        pl.element().str.extract(r"=([^,]*)$", 1))
    # at most 12 digits: a sum of counts cannot overflow, and the range check sees the true value
    typed_n = typed.list.eval(pl.when(pl.element().str.len_chars() <= 12).then(pl.element())
                              .cast(pl.Int64, strict=False))
    untyped_n = pl.when(untyped.str.len_chars() <= 12).then(untyped).cast(pl.Int64, strict=False)
    bad = (untyped.is_not_null() & untyped_n.is_null()) | typed_n.list.eval(pl.element().is_null()).list.any()
    count = pl.when(untyped.is_not_null()).then(untyped_n).when(typed.list.len() > 0).then(typed_n.list.sum())
    return count, bad


def _gres_gpus(col: str) -> tuple[pl.Expr, pl.Expr]:
    """GPU count of a GRES string (``gpu:4``, ``gpu:tesla:2(IDX:0-1)``; null when it has no GPU entry) and a flag for
    an unparsable count."""
    entries = pl.col(col).str.replace_all(r"\([^)]*\)", "").str.split(",").list.eval(
        pl.element().str.strip_chars()).list.eval(pl.element().filter(pl.element().str.contains(r"^gpu(?::|$)")))
    e = pl.element()
    # gpu[:type][:count], the count 1 when left out
    untyped_text = pl.when(e == "gpu").then(pl.lit("1")).otherwise(e.str.extract(r"^gpu:(\d*)$", 1))
    typed_text = pl.when(untyped_text.is_null()).then(pl.coalesce(
        e.str.extract(r"^gpu:[^:]*:(.*)$", 1), pl.when(e.str.contains(r"^gpu:[^:]*$")).then(pl.lit("1"))))
    untyped, typed = (entries.list.eval(text).list.drop_nulls() for text in (untyped_text, typed_text))
    # at most 12 digits: a sum of counts cannot overflow, and the range check sees the true value
    untyped_n, typed_n = (texts.list.eval(pl.when(pl.element().str.len_chars() <= 12).then(pl.element())
                                          .cast(pl.Int64, strict=False)) for texts in (untyped, typed))
    bad = pl.any_horizontal(n.list.eval(pl.element().is_null()).list.any() for n in (untyped_n, typed_n))
    count = (pl.when(untyped.list.len() > 0).then(untyped_n.list.first())
             .when(typed.list.len() > 0).then(typed_n.list.sum()))
    return count, bad


def _bad_count(tres: object, what: str) -> str:
    return f"{what} in {tres!r}"


def _elapsed() -> pl.Expr:
    parts = [pl.col("Elapsed").str.strip_chars().str.extract(_ELAPSED, i).cast(pl.Int64) for i in range(1, 5)]
    return parts[0].fill_null(0) * 86400 + parts[1] * 3600 + parts[2] * 60 + parts[3]


def _expand_arrays(jobs: pl.DataFrame) -> pl.DataFrame:
    """One row per task of each array record (``7_[1-3,8%2]``: 7_1, 7_2, 7_3, 7_8), in the listed order; a record
    whose tasks cannot be read (``_array_bad``) or that names more than Slurm allows (``_array_big``) stays one row."""
    jobs = jobs.with_columns(pl.lit(False).alias("_array_bad"), pl.lit(False).alias("_array_big"))
    jid = pl.col("JobID").str.strip_chars()
    is_array = jid.str.contains(_ARRAY).fill_null(False)
    if not jobs.select(is_array.any()).item():
        return jobs
    arrays = jobs.filter(is_array).with_columns(jid.str.extract(_ARRAY, 1).alias("_base"),
                                                 jid.str.extract(_ARRAY, 2).alias("_tasks"))
    parts = arrays.filter(pl.col("_tasks").str.contains(_TASKS)).select(
        ROW, "_base", pl.col("_tasks").str.replace(r"%\d+$", "").str.split(",").alias("_part")
    ).explode("_part").with_columns(
        pl.col("_part").str.extract(r"^(\d+)", 1).cast(pl.Int64).alias("_lo"),
        pl.col("_part").str.extract(r"(\d+)$", 1).cast(pl.Int64).alias("_hi"),
    )
    sizes = parts.group_by(ROW).agg(((pl.col("_hi") - pl.col("_lo")).min() < 0).alias("_reversed"),
                                    (pl.col("_hi") - pl.col("_lo") + 1).sum().alias("_count"))
    arrays = arrays.join(sizes, on=ROW, how="left").with_columns(
        (pl.col("_count").is_null() | pl.col("_reversed").fill_null(False)).alias("_array_bad"),
        (pl.col("_count") > MAX_ARRAY_TASKS).fill_null(False).alias("_array_big"))
    good = arrays.filter(~pl.col("_array_bad") & ~pl.col("_array_big"))
    tasks = parts.join(good.select(ROW), on=ROW).with_columns(
        pl.int_ranges("_lo", pl.col("_hi") + 1).alias("_task")).explode("_task").select(
        ROW, (pl.col("_base") + "_" + pl.col("_task").cast(pl.String)).alias("JobID"))
    expanded = tasks.join(good.drop("JobID"), on=ROW, how="left", maintain_order="left").select(jobs.columns)
    kept = arrays.filter(pl.col("_array_bad") | pl.col("_array_big")).select(jobs.columns)
    return pl.concat([jobs.filter(~is_array), expanded, kept]).sort(ROW, maintain_order=True)


def read(path: Path, *, lenient: bool = False, timezone: str = "UTC") -> Trace:
    """Read a ``sacct --parsable2`` export into the canonical schema."""
    raw = read_csv_text(path, separator="|", quote_char=None)
    require_columns(raw, ("JobID", "Submit", "State"), path)
    if "AllocTRES" in raw.columns or "ReqTRES" in raw.columns:
        alloc_col, req_col, gpus = "AllocTRES", "ReqTRES", _gpus
    elif "AllocGRES" in raw.columns or "ReqGRES" in raw.columns:
        alloc_col, req_col, gpus = "AllocGRES", "ReqGRES", _gres_gpus
    else:
        have = ", ".join(c for c in raw.columns if c != ROW)
        raise InputError(f"no GPU column: none of AllocTRES, ReqTRES, AllocGRES, ReqGRES (found: {have}); "
                         "export one with sacct --format=...,AllocTRES,ReqTRES", path=path)
    raw = raw.with_columns(pl.lit(None, pl.String).alias(c) for c in (alloc_col, req_col, *OPTIONAL)
                           if c not in raw.columns)
    # a row without a JobID is not a step: keep it so the checks below report it
    jobs = _expand_arrays(raw.filter(~pl.col("JobID").str.contains(".", literal=True).fill_null(False)))
    alloc, alloc_bad = gpus(alloc_col)
    req, req_bad = gpus(req_col)
    df = jobs.with_columns(
        trimmed_text("JobID").alias("job_id"),  # (only spaces: no id)
        parse_datetime("Submit", TIME_FORMAT, timezone).alias("submit_time"),
        _elapsed().alias("elapsed"),
        parse_int("NCPUS").alias("cpu_num"),
        parse_int("NNodes").alias("node_num"),
        pl.when(trimmed_text(alloc_col).is_not_null()).then(alloc.fill_null(0))
        .otherwise(req.fill_null(0)).alias("gpu_num"),
        alloc_bad.alias("_alloc_bad"),
        req_bad.alias("_req_bad"),
        # 'CANCELLED by 1234': the state is the first word
        pl.col("State").str.strip_chars().str.split(" ").list.first().alias("_state"),
    ).with_columns(
        map_status("_state", STATES).alias("status"),
        # (in the autumn's repeated hour a start before its submit is the later instant: see parse_datetime)
        parse_datetime("Start", TIME_FORMAT, timezone, after=pl.col("submit_time")).alias("start_time"),
    ).with_columns(
        # (a job cancelled while queued has no start: its end is after its submit)
        parse_datetime("End", TIME_FORMAT, timezone, after=pl.coalesce("start_time", "submit_time"))
        .alias("end_time"),
    )
    checks = [
        required_value("job_id", "JobID"),
        Check("JobID", pl.col("_array_bad"), "unreadable array JobID",
              lambda v: f"array tasks must be numbers and ranges (e.g. 7_[1-3,8%2]), got {v!r}"),
        Check("JobID", pl.col("_array_big"), "array of too many tasks",
              lambda v: f"{v!r} names more than {MAX_ARRAY_TASKS:,} tasks (Slurm's largest array size)"),
        duplicate("job_id", "JobID"),
        skipped_time("Submit", "submit_time", TIME_FORMAT, timezone),
        unparsable("Submit", "submit_time", f"a time ({TIME_FORMAT})"),
        required_value("submit_time", "Submit"),
        skipped_time("Start", "start_time", TIME_FORMAT, timezone),
        unparsable("Start", "start_time", f"a time ({TIME_FORMAT})"),
        skipped_time("End", "end_time", TIME_FORMAT, timezone),
        unparsable("End", "end_time", f"a time ({TIME_FORMAT})"),
        unparsable("Elapsed", "elapsed", "an elapsed time ([D-]HH:MM:SS)"),
        Check(alloc_col, pl.col("_alloc_bad"), f"unparsable {alloc_col}", lambda v: f"bad GPU count in {v!r}"),
        Check(req_col, pl.col("_req_bad"), f"unparsable {req_col}", lambda v: f"bad GPU count in {v!r}"),
        unparsable("NCPUS", "cpu_num", "a whole number of CPUs"),
        negative("cpu_num", "NCPUS"),
        unparsable("NNodes", "node_num", "a whole number of nodes"),
        negative("node_num", "NNodes"),
        unknown_status("State", "status"),
        ends_before("end_time", "start_time", "End"),
        starts_before("start_time", "submit_time", "Start"),
        ends_before_submit("end_time", "submit_time", "End"),
    ]
    tres = pl.when(trimmed_text(alloc_col).is_not_null()).then(pl.lit(alloc_col)).otherwise(pl.lit(req_col))
    checks[:0] = [
        *(time_limit(raw, pl.col(parsed)) for raw, parsed in (("Submit", "submit_time"), ("Start", "start_time"),
                                                              ("End", "end_time"))),
        seconds_limit("Elapsed", pl.col("elapsed")),
        count_limit("NCPUS"), count_limit("NNodes"),
        *(Check(col, (tres == col) & bad, reason, partial(_bad_count, what=what))
          for col in (alloc_col, req_col)
          for bad, reason, what in ((pl.col("gpu_num") < 0, f"negative GPUs in {col}", "negative GPU count"),
                                    (pl.col("gpu_num") > MAX_COUNT, f"out-of-range {col}",
                                     f"GPU count above {MAX_COUNT:,}"))),
    ]
    df, dropped = apply_checks(df, checks, path=path, lenient=lenient)
    # a pending job's Start is Slurm's expected start (backfill's estimate), not a start
    started = pl.col("status") != "pending"
    df = df.with_columns(pl.when(started).then(pl.col(c)).alias(c) for c in ("start_time", "end_time"))
    out = conform(df.with_columns(
        trimmed_text("Cluster").fill_null(pl.lit(source_stem(path))).alias("cluster"),
        pl.coalesce(trimmed_text("Partition"), trimmed_text("Account"), pl.lit("default")).alias("vc"),
        trimmed_text("User").alias("user"),
        trimmed_text("JobName").alias("name"),
        pl.when(started)
        .then(pl.coalesce(pl.col("end_time") - pl.col("start_time"), pl.col("elapsed"))).alias("duration"),
        (pl.col("start_time") - pl.col("submit_time")).alias("queue_delay"),
    ).sort(ROW))
    return Trace(out, format="sacct", timezone=timezone, source=str(path), dropped=dropped, zoneless=True)

