"""The canonical job table: one Arrow/Polars schema every reader produces.

Columns (times are UTC epoch seconds, durations seconds, all integers):

==============  =========  ===========================================================
column          type       meaning
==============  =========  ===========================================================
job_id          str        unique within the trace
cluster         str        cluster name (e.g. ``venus``, ``philly``)
vc              str        virtual cluster / partition / queue the job was submitted to
user            str?       (hashed) user id; null where the trace has none
name            str?       job name; null where the trace has none
gpu_num         i32        whole GPUs requested (0 = CPU-only job)
gpu_milli       i32?       share of each GPU, 1000 = whole GPU (GPU-sharing traces)
cpu_num         i32?       CPU cores requested
node_num        i32?       nodes (servers) used
submit_time     i64        submission instant, UTC epoch seconds
start_time      i64?       first start, UTC epoch seconds (null: never started)
end_time        i64?       end, UTC epoch seconds (null: not ended)
duration        i64?       run time in seconds (end − start, or sum of attempts)
queue_delay     i64?       observed start − submit, seconds
status          enum       completed | failed | cancelled | timeout | node_fail |
                           running | pending | other
==============  =========  ===========================================================

The attempts table (Philly) has ``job_id, attempt, start_time, end_time, servers, gpus``
where ``servers`` is the list of server ids and ``gpus`` the number of GPUs of the attempt.
"""

from __future__ import annotations

import polars as pl

from dlcluster.errors import InputError

STATUSES = ("completed", "failed", "cancelled", "timeout", "node_fail", "running", "pending", "other")
Status = pl.Enum(list(STATUSES))

JOB_SCHEMA: dict[str, pl.DataType] = {
    "job_id": pl.String(),
    "cluster": pl.String(),
    "vc": pl.String(),
    "user": pl.String(),
    "name": pl.String(),
    "gpu_num": pl.Int32(),
    "gpu_milli": pl.Int32(),
    "cpu_num": pl.Int32(),
    "node_num": pl.Int32(),
    "submit_time": pl.Int64(),
    "start_time": pl.Int64(),
    "end_time": pl.Int64(),
    "duration": pl.Int64(),
    "queue_delay": pl.Int64(),
    "status": Status,
}
REQUIRED = ("job_id", "cluster", "vc", "gpu_num", "submit_time", "status")

ATTEMPT_SCHEMA: dict[str, pl.DataType] = {
    "job_id": pl.String(),
    "attempt": pl.Int32(),
    "start_time": pl.Int64(),
    "end_time": pl.Int64(),
    "servers": pl.List(pl.String()),
    "gpus": pl.Int32(),
}


def conform(df: pl.DataFrame, schema: dict[str, pl.DataType] = JOB_SCHEMA) -> pl.DataFrame:
    """Return ``df`` with exactly the schema's columns, in order, cast to their types (missing → null)."""
    cols = [
        (pl.col(name) if name in df.columns else pl.lit(None)).cast(dtype).alias(name)
        for name, dtype in schema.items()
    ]
    return df.select(cols)


def validate(df: pl.DataFrame, source: str = "<table>") -> pl.DataFrame:
    """Check a table claims the canonical schema: column set, types, nulls, id uniqueness."""
    missing = [c for c in JOB_SCHEMA if c not in df.columns]
    if missing:
        raise InputError(f"not a canonical job table: missing column(s) {', '.join(missing)}", path=source)
    for name, dtype in JOB_SCHEMA.items():
        if df.schema[name] != dtype:
            raise InputError(f"expected type {dtype}, found {df.schema[name]}", path=source, field=name)
    for name in REQUIRED:
        nulls = df.get_column(name).null_count()
        if nulls:
            row = int(df.with_row_index("_r").filter(pl.col(name).is_null())["_r"][0]) + 1
            raise InputError("required value is empty", path=source, row=row, field=name, row_label="row")
    if df.height != df.get_column("job_id").n_unique():
        dup = df.filter(pl.col("job_id").is_duplicated())["job_id"][0]
        raise InputError(f"job_id {dup!r} occurs more than once", path=source, field="job_id")
    return df
