"""dlcluster's own canonical Parquet: the job table plus trace metadata in the file's key-value metadata."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl

from dlcluster.atomic import write_atomic
from dlcluster.cluster import ClusterSpec
from dlcluster.errors import InputError
from dlcluster.io._common import require_file
from dlcluster.schema import JOB_SCHEMA, conform, validate
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
    meta = json.loads(raw) if raw else {}
    df = pl.from_arrow(table)
    assert isinstance(df, pl.DataFrame)
    if "status" in df.columns and df.schema["status"] != JOB_SCHEMA["status"]:
        df = df.with_columns(pl.col("status").cast(pl.String).cast(JOB_SCHEMA["status"], strict=False))
    missing = [c for c in JOB_SCHEMA if c not in df.columns]
    if missing:
        raise InputError(f"missing column '{missing[0]}' (not a dlcluster canonical table; use --format csv)",
                         path=path)
    jobs = validate(conform(df), source=str(path))
    cluster = meta.get("cluster")
    return Trace(
        jobs,
        format=meta.get("format", "parquet"),
        timezone=meta.get("timezone", "UTC"),
        cluster=_spec(cluster, meta.get("cluster_cpus"), str(path)) if cluster else None,
        source=str(path),
    )


def _spec(gpus: dict[str, list[int]], cpus: dict[str, list[int]] | None, source: str) -> ClusterSpec:
    """The cluster spec stored in the file's metadata (CPU counts only when they were known)."""
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
