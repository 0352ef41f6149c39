"""dlcluster's own canonical Parquet: the job table plus trace metadata in the file's key-value metadata."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import polars as pl

from dlcluster.atomic import write_atomic
from dlcluster.cluster import ClusterSpec
from dlcluster.errors import ConfigError, InputError
from dlcluster.io._common import (
    ROW,
    Check,
    apply_checks,
    check_timezone,
    count_limit,
    ends_before,
    negative,
    require_file,
    seconds_limit,
    starts_before,
    time_limit,
    unknown_status,
)
from dlcluster.io.cluster_spec import check_spec_size
from dlcluster.schema import JOB_SCHEMA, STATUSES, conform, validate
from dlcluster.trace import Trace

META_KEY = b"dlcluster"


def sniff(path: Path) -> bool:
    """A Parquet file (magic bytes) is ours to read."""
    if not path.is_file():
        return False
    with path.open("rb") as fh:
        return fh.read(4) == b"PAR1"


def read(path: Path, *, lenient: bool = False) -> Trace:
    """Read a canonical Parquet job table written by :func:`write`."""
    import pyarrow.parquet as pq  # here, not at import: format detection only sniffs

    require_file(path)
    try:
        table = pq.read_table(path)
    except Exception as exc:  # pyarrow raises several types for a damaged file
        raise InputError(f"not a readable Parquet file ({exc})", path=path) from exc
    raw = (table.schema.metadata or {}).get(META_KEY)
    try:
        meta = json.loads(raw) if raw else {}
    except ValueError as exc:
        raise InputError(f"its dlcluster metadata is not valid JSON ({exc})", path=path) from exc
    if not isinstance(meta, dict):
        raise InputError("its dlcluster metadata is not a JSON object", path=path)
    timezone = str(meta.get("timezone", "UTC"))
    try:
        check_timezone(timezone)
    except ConfigError as exc:
        raise InputError(f"its dlcluster metadata holds an unknown time zone {timezone!r}", path=path) from exc
    try:
        df = pl.from_arrow(table)
    except Exception as exc:  # an Arrow type Polars has no counterpart for
        raise InputError(f"not readable as a table ({type(exc).__name__}: {str(exc).splitlines()[0]})",
                         path=path) from exc
    assert isinstance(df, pl.DataFrame)
    status = df.schema.get("status")
    if status is not None and status != JOB_SCHEMA["status"] and (
            status in (pl.String(), pl.Null()) or isinstance(status, pl.Categorical | pl.Enum)):
        # text until checked: a status outside the vocabulary is named, not taken for a missing one (a column of
        # another type, a list say, is refused below by its type)
        df = df.with_columns(pl.col("status").cast(pl.String))
    missing = [c for c in JOB_SCHEMA if c not in df.columns]
    if missing:
        raise InputError(f"missing column '{missing[0]}' (not a dlcluster canonical table; use --format csv)",
                         path=path)
    for name, dtype in JOB_SCHEMA.items():
        have = df.schema[name]
        castable = (have.is_integer() or have == pl.Null() or (dtype == JOB_SCHEMA["status"] and have == pl.String())
                    or (dtype == pl.String() and (have == pl.String() or isinstance(have, pl.Categorical | pl.Enum))))
        if have != dtype and not castable:
            raise InputError(f"expected type {dtype}, found {have}", path=path, field=name)
    df = df.with_row_index(ROW, offset=1).with_columns(
        pl.col(ROW).cast(pl.Int64), pl.col("status").cast(JOB_SCHEMA["status"], strict=False).alias("_status"))
    df, dropped = apply_checks(df, _checks(), path=path, lenient=lenient, row_label="row")
    jobs = validate(conform(df.with_columns(pl.col("_status").alias("status"))), source=str(path))
    cluster = meta.get("cluster")
    try:
        spec = _spec(cluster, meta.get("cluster_cpus"), str(path)) if cluster else None
    except (TypeError, ValueError, AttributeError) as exc:
        raise InputError(f"its dlcluster metadata holds no valid cluster spec ({exc})", path=path) from exc
    return Trace(
        jobs,
        format=str(meta.get("format", "parquet")),
        timezone=timezone,
        cluster=spec,
        source=str(path),
        dropped=dropped,
    )


def _checks() -> list[Check]:
    """The range checks every reader applies to its text, here on the typed columns."""
    as_float = {c: pl.col(c).cast(pl.Float64) for c in JOB_SCHEMA if JOB_SCHEMA[c].is_integer()}
    checks = [check for c in ("gpu_num", "gpu_milli", "cpu_num", "node_num")
              for check in (count_limit(c, as_float[c]), negative(c))]
    checks += [time_limit(c, as_float[c]) for c in ("submit_time", "start_time", "end_time")]
    checks += [check for c in ("duration", "queue_delay") for check in (seconds_limit(c, as_float[c]), negative(c))]
    return [*checks, ends_before("end_time", "start_time", "end_time"),
            starts_before("start_time", "submit_time", "start_time"), _known_status()]


def _known_status() -> Check:
    """A ``status`` outside the canonical vocabulary, ``_status`` its cast (a missing one is left to
    :func:`validate`)."""
    check = unknown_status("status", "_status", STATUSES)
    return replace(check, bad=pl.col("status").is_not_null() & check.bad)


def _spec(gpus: dict[str, list[int]], cpus: dict[str, list[int]] | None, source: str) -> ClusterSpec:
    """The cluster spec stored in the file's metadata (CPU counts only when they were known), within the limits."""
    for nodes in [*gpus.values(), *(cpus or {}).values()]:
        if not all(isinstance(n, int) and not isinstance(n, bool) for n in nodes):
            raise ValueError("node sizes must be whole numbers")
    check_spec_size({k: v for k, v in gpus.items()}, source)
    return ClusterSpec({k: tuple(v) for k, v in gpus.items()},
                       cpus={k: tuple(v) for k, v in cpus.items()} if cpus else None, source=source)


def write(trace: Trace, target: str | Path) -> Path:
    """Write the trace's job table as canonical Parquet, atomically, with its metadata."""
    table = conform(trace.jobs).to_arrow()
    meta = {"format": trace.format, "timezone": trace.timezone}
    if trace.cluster is not None:
        meta["cluster"] = {vc: list(nodes) for vc, nodes in trace.cluster.vcs.items()}
        if trace.cluster.cpus is not None:
            meta["cluster_cpus"] = {vc: list(nodes) for vc, nodes in trace.cluster.cpus.items()}
    table = table.replace_schema_metadata({**(table.schema.metadata or {}), META_KEY: json.dumps(meta).encode()})
    import pyarrow.parquet as pq

    return write_atomic(target, lambda tmp: pq.write_table(table, tmp, compression="zstd"))
