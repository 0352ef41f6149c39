"""Helios (SenseTime, SC'21): a cluster folder with ``cluster_log.csv`` (and ``cluster_gpu_number.csv``).

``cluster_log.csv`` has one row per Slurm job: ``job_id, user, vc, gpu_num, cpu_num,
node_num, state, submit_time, start_time, end_time, duration, queue``, times as
``YYYY-MM-DD HH:MM:SS`` wall clock of the datacentre (Asia/Shanghai). Start and end may
be empty for jobs that had not started or ended (pending, running, cancelled while
queued); a completed, failed, timed-out or node-failed job must have both. An empty
``duration`` or ``queue`` is end − start or start − submit where those times are given. The cluster
name is the folder's name, lower-cased, unless given.

Writing uses Asia/Shanghai wall clock whatever the trace's zone: that is what the format
means, and a zone without daylight saving keeps every instant distinct, so write → read
is exact. The format holds no job name or GPU share, and its cluster name is the folder's.
"""

from __future__ import annotations

import datetime
import os
from pathlib import Path

import polars as pl

from dlcluster.atomic import atomic_folder, write_atomic
from dlcluster.errors import ConfigError
from dlcluster.io._common import (
    Check,
    apply_checks,
    count_limit,
    duplicate,
    ends_before,
    ends_before_submit,
    header_has,
    map_status,
    negative,
    parse_datetime,
    parse_int,
    read_csv_text,
    require_columns,
    required_value,
    seconds_limit,
    skipped_time,
    starts_before,
    time_limit,
    trimmed_text,
    unknown_status,
    unparsable,
    wall_clock_text,
)
from dlcluster.io.cluster_spec import read_cluster_spec
from dlcluster.schema import conform
from dlcluster.trace import Trace, local_datetime

TIMEZONE = "Asia/Shanghai"
LOG, GPU_NUMBER = "cluster_log.csv", "cluster_gpu_number.csv"
COLUMNS = ("job_id", "user", "vc", "gpu_num", "cpu_num", "node_num", "state", "submit_time", "start_time",
           "end_time", "duration", "queue")
TIME_FORMAT = "%Y-%m-%d %H:%M:%S"
TIME_TEXT = "a time (YYYY-MM-DD HH:MM:SS)"
STATES = {"COMPLETED": "completed", "CANCELLED": "cancelled", "FAILED": "failed", "TIMEOUT": "timeout",
          "NODE_FAIL": "node_fail", "RUNNING": "running", "PENDING": "pending", "SUSPENDED": "other"}
_WRITE_STATES = {v: k for k, v in STATES.items()}
_MAY_LACK_START = ("pending", "cancelled")
_MAY_LACK_END = ("pending", "running", "cancelled")


def _log_path(path: Path) -> Path:
    return path / LOG if path.is_dir() else path


def sniff(path: Path) -> bool:
    """A folder holding ``cluster_log.csv``, or a CSV whose header has Helios' columns."""
    return header_has(_log_path(path), COLUMNS)


def _checks(timezone: str) -> list[Check]:
    checks = [
        required_value("job_id"),
        duplicate("job_id"),
        required_value("vc"),
        required_value("state"),
        unknown_status("state", "status"),
        skipped_time("submit_time", "submit_time_", TIME_FORMAT, timezone),
        unparsable("submit_time", "submit_time_", TIME_TEXT),
        required_value("submit_time_", "submit_time"),
        skipped_time("start_time", "start_time_", TIME_FORMAT, timezone),
        unparsable("start_time", "start_time_", TIME_TEXT),
        Check("start_time", pl.col("start_time_").is_null() & ~pl.col("status").is_in(_MAY_LACK_START),
              "missing start_time", lambda v: "value is empty (required unless the job is pending or cancelled)"),
        skipped_time("end_time", "end_time_", TIME_FORMAT, timezone),
        unparsable("end_time", "end_time_", TIME_TEXT),
        Check("end_time", pl.col("end_time_").is_null() & ~pl.col("status").is_in(_MAY_LACK_END),
              "missing end_time",
              lambda v: "value is empty (required unless the job is pending, running or cancelled)"),
        ends_before("end_time_", "start_time_", "end_time"),
        starts_before("start_time_", "submit_time_", "start_time"),
        ends_before_submit("end_time_", "submit_time_", "end_time"),
    ]
    checks[:0] = [time_limit(c, pl.col(f"{c}_")) for c in ("submit_time", "start_time", "end_time")]
    counts = (("gpu_num", "GPUs"), ("cpu_num", "CPUs"), ("node_num", "nodes"), ("duration", "seconds"),
              ("queue", "seconds"))
    for col, unit in counts:
        checks.append(seconds_limit(col) if unit == "seconds" else count_limit(col))
        checks.append(unparsable(col, f"{col}_", f"a whole number of {unit}"))
        if col == "gpu_num":  # the one count the canonical table requires
            checks.append(required_value("gpu_num_", "gpu_num"))
        checks.append(negative(f"{col}_", col))
    # the release defines both as differences of the row's own times: a row where they disagree is corrupt
    for col, later, earlier in (("duration", "end_time_", "start_time_"), ("queue", "start_time_", "submit_time_")):
        what = f"{later.rstrip('_')} − {earlier.rstrip('_')}"
        checks.append(Check(col, pl.col(f"{col}_") != pl.col(later) - pl.col(earlier),
                            f"{col} disagrees with the times", lambda v, what=what: f"{v!r} is not the row's {what}"))
    return checks


def read(
    path: Path,
    *,
    lenient: bool = False,
    timezone: str = TIMEZONE,
    cluster: str | None = None,
    cluster_date: str | None = None,
) -> Trace:
    """Read a Helios cluster folder (or its ``cluster_log.csv``) into the canonical schema."""
    path = Path(path)
    log = _log_path(path)
    folder = log.parent
    raw = read_csv_text(log)
    require_columns(raw, COLUMNS, log)
    df = raw.with_columns(
        *(trimmed_text(c) for c in ("job_id", "user", "vc")),  # (only spaces: no value, as the canonical CSV reads)
        map_status("state", STATES).alias("status"),
        parse_datetime("submit_time", TIME_FORMAT, timezone).alias("submit_time_"),
        *(parse_int(c).alias(f"{c}_") for c in ("gpu_num", "cpu_num", "node_num", "duration", "queue")),
    ).with_columns(
        # the wall clock names no zone: in the hour the clocks repeat, the row's order (submit, start, end) picks it
        parse_datetime("start_time", TIME_FORMAT, timezone, after=pl.col("submit_time_")).alias("start_time_"),
    ).with_columns(
        parse_datetime("end_time", TIME_FORMAT, timezone, after=pl.coalesce("start_time_", "submit_time_"))
        .alias("end_time_"),
    )
    df, dropped = apply_checks(df, _checks(timezone), path=log, lenient=lenient)
    jobs = conform(
        df.select(
            "job_id", "vc", "user", "status",
            # (made absolute: ``cluster_log.csv`` or ``.`` given inside the folder has a parent without a name)
            pl.lit(cluster or Path(os.path.abspath(folder)).name.lower()).alias("cluster"),
            *(pl.col(f"{c}_").alias(c) for c in ("gpu_num", "cpu_num", "node_num", "submit_time", "start_time",
                                                  "end_time")),
            # an empty cell is not an unknown: the release defines both as differences of the row's times
            pl.coalesce("duration_", pl.col("end_time_") - pl.col("start_time_")).alias("duration"),
            pl.coalesce("queue_", pl.col("start_time_") - pl.col("submit_time_")).alias("queue_delay"),
        )
    )
    spec = None
    if (folder / GPU_NUMBER).is_file():
        spec = read_cluster_spec(folder / GPU_NUMBER, cluster_date)
    elif cluster_date is not None:
        raise ConfigError(f"cluster_date {cluster_date} given but {folder} has no {GPU_NUMBER}")
    return Trace(jobs, format="helios", timezone=timezone, cluster=spec, source=str(path), dropped=dropped)


def _gpu_number_table(trace: Trace) -> pl.DataFrame:
    """One row per local day over the trace's span, each VC's GPUs (constant) and the total."""
    assert trace.cluster is not None
    lo, hi = trace.jobs.select(
        local_datetime(pl.col("submit_time").min(), TIMEZONE).dt.date(),
        local_datetime(pl.max_horizontal(pl.col("submit_time").max(), pl.col("end_time").max()), TIMEZONE)
        .dt.date().alias("hi"),
    ).row(0)
    # a trace without jobs has no days: one row keeps its cluster readable (dated 1970-01-01, as no time is known)
    days = [datetime.date(1970, 1, 1)] if lo is None else pl.date_range(lo, hi, interval="1d", eager=True).to_list()
    gpus = {vc: trace.cluster.gpus(vc) for vc in trace.cluster.vcs}
    return pl.DataFrame({"date": [d.isoformat() for d in days]}, schema={"date": pl.String}).with_columns(
        *(pl.lit(g, dtype=pl.Int64).alias(vc) for vc, g in gpus.items()),
        pl.lit(sum(gpus.values()), dtype=pl.Int64).alias("total"),
    )


def write(trace: Trace, target: str | Path) -> Path:
    """Write the trace as a Helios folder (``cluster_log.csv`` and, with a cluster spec, ``cluster_gpu_number.csv``)."""
    with atomic_folder(target, earlier=(LOG, GPU_NUMBER)) as folder:
        log = conform(trace.jobs).select(
            "job_id", "user", "vc", "gpu_num", "cpu_num", "node_num",
            pl.col("status").cast(pl.String).replace_strict(_WRITE_STATES).alias("state"),
            *(wall_clock_text(c, TIMEZONE, TIME_FORMAT) for c in ("submit_time", "start_time", "end_time")),
            "duration",
            pl.col("queue_delay").alias("queue"),
        )
        write_atomic(folder / LOG, log.write_csv)
        if trace.cluster is not None:
            table = _gpu_number_table(trace)
            write_atomic(folder / GPU_NUMBER, table.write_csv)
    return Path(target)
