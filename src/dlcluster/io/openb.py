"""Alibaba GPU-sharing trace 2023 ("openb", ATC'23): pod lists and, when present, the node list.

A pod list has ``name, cpu_milli, memory_mib, num_gpu, gpu_milli, gpu_spec, qos, pod_phase,
creation_time, deletion_time, scheduled_time`` with times in seconds from an origin 0; they
are kept as epoch seconds (zone UTC). submit = creation, start = scheduled, end = deletion.
``gpu_milli`` is each GPU's share (1000 = whole GPU; null for CPU pods), vc = ``qos``.

Some variants (``openb_pod_list_multigpu50.csv``) have only the first five columns: then
every pod gets submit_time 0, no start or end, and status ``other``.

If ``openb_node_list_gpu_node.csv`` (else ``openb_node_list_all_node.csv``) lies beside the
pod list, its GPU nodes become the trace's :class:`ClusterSpec` (one VC ``openb``), with
each node's ``cpu_milli`` as whole CPUs (floored: a pod asks for whole CPUs, rounded up).
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from dlcluster.cluster import ClusterSpec
from dlcluster.io.cluster_spec import check_spec_size
from dlcluster.errors import InputError
from dlcluster.io._common import (
    ROW,
    Check,
    apply_checks,
    cell_text,
    count_limit,
    duplicate_key,
    ends_before,
    header_has,
    map_status,
    negative,
    parse_int,
    raw_number,
    read_csv_text,
    require_columns,
    required_value,
    starts_before,
    time_limit,
    trimmed_text,
    unknown_status,
    unparsable,
)
from dlcluster.schema import conform
from dlcluster.trace import Trace

BASE = ("name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli")
TIMED = ("pod_phase", "creation_time", "deletion_time", "scheduled_time")
PHASES = {"Running": "running", "Succeeded": "completed", "Failed": "failed", "Pending": "pending"}
NODE_LISTS = ("openb_node_list_gpu_node.csv", "openb_node_list_all_node.csv")


def sniff(path: Path) -> bool:
    """A CSV whose header starts with the pod-list columns."""
    return header_has(path, BASE)


def _ints(cols: tuple[str, ...]) -> list[pl.Expr]:
    return [parse_int(c).alias(f"{c}_") for c in cols]


def read(path: Path, *, lenient: bool = False) -> Trace:
    """Read an openb pod list (and the node list beside it) into the canonical schema."""
    raw = read_csv_text(path)
    require_columns(raw, BASE, path)
    timed = any(c in raw.columns for c in TIMED)
    if timed:
        require_columns(raw, TIMED, path)
    numeric = ("cpu_milli", "num_gpu", "gpu_milli") + (TIMED[1:] if timed else ())
    df = raw.with_columns(_ints(numeric))
    df = df.with_columns(trimmed_text("name").alias(" name"))
    checks = [required_value(" name", "name"), duplicate_key("name", pl.col(" name"), df, "pod")]
    for col in numeric:
        limit = time_limit(col, raw_number(col)) if col in TIMED else count_limit(col)
        checks += [limit, unparsable(col, f"{col}_", "a whole number"), negative(f"{col}_", col)]
    checks += [
        required_value("num_gpu_", "num_gpu"),
        Check("gpu_milli", (pl.col("num_gpu_") > 0) & ~pl.col("gpu_milli_").is_between(1, 1000), "bad gpu_milli",
              lambda v: f"GPU share {v!r} is not between 1 and 1000 for a pod with GPUs"),
    ]
    if timed:
        df = df.with_columns(map_status("pod_phase", PHASES).alias("status"))
        checks += [required_value("creation_time_", "creation_time"), unknown_status("pod_phase", "status"),
                   ends_before("deletion_time_", "scheduled_time_", "deletion_time"),
                   starts_before("scheduled_time_", "creation_time_", "scheduled_time")]
    df, dropped = apply_checks(df, checks, path=path, lenient=lenient)

    if timed:
        times = [
            pl.col("creation_time_").alias("submit_time"),
            pl.col("scheduled_time_").alias("start_time"),
            pl.col("deletion_time_").alias("end_time"),
            (pl.col("deletion_time_") - pl.col("scheduled_time_")).alias("duration"),
            (pl.col("scheduled_time_") - pl.col("creation_time_")).alias("queue_delay"),
        ]
    else:
        times = [pl.lit(0).alias("submit_time"), pl.lit("other").alias("status")]
    vc = cell_text("qos").fill_null("default") if "qos" in df.columns else pl.lit("default")
    jobs = conform(df.with_columns(
        pl.col(" name").alias("job_id"),
        pl.lit("openb").alias("cluster"),
        vc.alias("vc"),
        pl.col(" name").alias("name"),
        pl.col("num_gpu_").alias("gpu_num"),
        pl.when(pl.col("num_gpu_") > 0).then(pl.col("gpu_milli_")).alias("gpu_milli"),
        ((pl.col("cpu_milli_") + 999) // 1000).alias("cpu_num"),
        *times,
    ))
    return Trace(jobs, format="openb", timezone="UTC", cluster=_node_list(path.parent), source=str(path),
                 dropped=dropped)


def _node_list(folder: Path) -> ClusterSpec | None:
    """The GPU nodes of the node list beside a pod list, as one VC ``openb`` (None when absent)."""
    path = next((folder / n for n in NODE_LISTS if (folder / n).is_file()), None)
    return None if path is None else node_list_spec(read_csv_text(path), path)


def node_list_spec(raw: pl.DataFrame, path: Path) -> ClusterSpec:
    """An openb node list (``sn, gpu[, cpu_milli]``, read as text) as one VC ``openb`` of its GPU nodes."""
    require_columns(raw, ("sn", "gpu"), path)
    counts = {"gpu": "a whole number of GPUs", "cpu_milli": "a whole number of millicores"}
    counts = {c: what for c, what in counts.items() if c in raw.columns}
    df = raw.with_columns(_ints(tuple(counts)))
    checks: list[Check] = []
    for col, what in counts.items():
        checks += [count_limit(col), unparsable(col, f"{col}_", what), required_value(f"{col}_", col),
                   negative(f"{col}_", col)]
    # a broken node list is a broken cluster description: never silently shrink it, even when lenient
    df, _ = apply_checks(df, checks, path=path, lenient=False)
    nodes = df.filter(pl.col("gpu_") > 0).sort(ROW)
    if nodes.height == 0:
        raise InputError("node list has no GPU nodes", path=path)
    cpus = {"openb": tuple(c // 1000 for c in nodes["cpu_milli_"].to_list())} if "cpu_milli" in counts else None
    check_spec_size({"openb": nodes["gpu_"].to_list()}, path, cpus)
    return ClusterSpec({"openb": tuple(int(g) for g in nodes["gpu_"].to_list())}, cpus, source=str(path))
