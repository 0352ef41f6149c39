"""Cluster specs from files: Helios daily GPU counts, Philly machine lists, ``vc,nodes`` CSVs.

Four layouts are told apart by their header:

- Helios ``cluster_gpu_number.csv`` (``date, vc..., total``): GPUs per VC per day. One
  day's row becomes the spec; a VC's GPUs become 8-GPU nodes plus one smaller node for
  any remainder; VCs with 0 GPUs that day are left out.
- Philly machine lists (``machineId, number of GPUs[, single GPU mem]``, possibly with a
  leading unnamed index column): Philly does not map machines to VCs, so the whole list
  is one pool VC ``philly`` of heterogeneous nodes, in file order (0-GPU machines kept).
- an Alibaba openb node list (``sn, cpu_milli, memory_mib, gpu, model``): its GPU nodes as
  one VC ``openb``, with whole CPUs (as when the list lies beside a pod list).
- ``vc,nodes[,gpus_per_node][,cpus_per_node]`` (``node num`` also accepted; 8 GPUs per
  node by default; CPUs are modelled only when the ``cpus_per_node`` column is there):
  rows for the same VC add up, in file order (one row per VC and node shape: a repeated
  row is refused, as it is more likely a mistake than a second batch of nodes); any other
  column is refused (a misspelt ``gpus_per_node`` would silently give 8-GPU nodes). A VC of 0 nodes, or of
  0-GPU nodes only, is left out, as a Helios VC with 0 GPUs is (its jobs are told that their VC has 0 GPUs).

Limits (checked before any node is built): at most :data:`MAX_NODES` nodes in all and
:data:`MAX_GPUS_PER_NODE` GPUs and :data:`MAX_CPUS_PER_NODE` CPUs per node.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from pathlib import Path

import polars as pl

from dlcluster.atomic import write_text_atomic
from dlcluster.cluster import MAX_CPUS_PER_NODE, MAX_GPUS_PER_NODE, MAX_NODES, ClusterSpec
from dlcluster.errors import InputError
from dlcluster.io._common import (
    MAX_COUNT,
    ROW,
    Check,
    apply_checks,
    negative,
    out_of_range,
    parse_int,
    raw_number,
    read_csv_text,
    require_columns,
    required_value,
    unparsable,
)

GPUS_PER_NODE = 8
PHILLY_POOL = "philly"
_MACHINE_ID, _MACHINE_GPUS = "machineId", "number of GPUs"


def read_cluster_spec(path: str | Path, date: str | None = None) -> ClusterSpec:
    """Read a cluster spec file of any supported layout (``date`` picks a Helios day; default the last)."""
    path = Path(path)
    raw = read_csv_text(path)
    cols = set(raw.columns)
    if {"date", "total"} <= cols:
        return _some_nodes(_helios(raw, path, date), path)
    if date is not None:
        raise InputError(f"a date ({date}) was given but this is not a Helios cluster_gpu_number.csv", path=path)
    if {_MACHINE_ID, _MACHINE_GPUS} <= cols:
        return _some_nodes(_machine_list(raw, path), path)
    if {"sn", "gpu"} <= cols:
        from dlcluster.io.openb import node_list_spec  # (openb reads its node list with this module's checks)

        return node_list_spec(raw, path)
    if "vc" in cols:
        return _some_nodes(_vc_nodes(raw, path), path)
    have = ", ".join(c for c in raw.columns if c != ROW)
    raise InputError(
        "not a cluster spec: expected 'date,vc...,total', 'machineId,number of GPUs', 'sn,gpu' (an openb node "
        f"list) or 'vc,nodes' columns (found: {have})",
        path=path,
    )


def check_spec_size(vcs: Mapping[str, Iterable[int]], source: str | Path | None,
                    cpus: Mapping[str, Iterable[int]] | None = None) -> None:
    """Raise a one-line error unless a spec's node count and node sizes are within the documented limits."""
    nodes = 0
    for sizes, limit, what in ((vcs, MAX_GPUS_PER_NODE, "GPUs"), (cpus or {}, MAX_CPUS_PER_NODE, "CPUs")):
        for vc, per_node in sizes.items():
            per_node = list(per_node)
            nodes += len(per_node) if what == "GPUs" else 0
            if per_node and max(per_node) > limit:
                raise InputError(f"VC {vc!r} has a node of {max(per_node):,} {what}; at most {limit:,} are supported",
                                 path=source)
    if nodes > MAX_NODES:
        raise InputError(f"the cluster has {nodes:,} nodes; at most {MAX_NODES:,} are supported", path=source)


def _some_nodes(spec: ClusterSpec, path: Path) -> ClusterSpec:
    """``spec``, unless it has no node at all (nothing could ever run on it)."""
    if not any(spec.vcs.values()):
        raise InputError("the cluster spec has no nodes", path=path)
    return spec


def _node_total(nodes: int, path: Path) -> None:
    if nodes > MAX_NODES:
        raise InputError(f"the cluster has {nodes:,} nodes; at most {MAX_NODES:,} are supported", path=path)


def _counts(raw: pl.DataFrame, path: Path, columns: list[str], what: str,
            limits: Mapping[str, int] | None = None) -> pl.DataFrame:
    """Parse integer count columns strictly: present, whole, not negative, within ``limits`` (default: int32)."""
    parsed = raw.with_columns(parse_int(c).alias(f"_{c}") for c in columns)
    checks: list[Check] = []
    for c in columns:
        limit = (limits or {}).get(c, MAX_COUNT)
        checks += [out_of_range(c, raw_number(c), -float("inf"), limit, f"at most {limit:,}"),
                   unparsable(c, f"_{c}", what), required_value(f"_{c}", c), negative(f"_{c}", c)]
    parsed, _ = apply_checks(parsed, checks, path=path, lenient=False)
    return parsed


def _helios(raw: pl.DataFrame, path: Path, date: str | None) -> ClusterSpec:
    vcs = [c for c in raw.columns if c not in (ROW, "date", "total")]
    df = _counts(raw, path, [*vcs, "total"], "a whole number of GPUs")
    df = df.with_columns(pl.col("date").str.strip_chars())
    if df.height == 0:
        raise InputError("no dates in the file", path=path)
    day = date if date is not None else df["date"][-1]
    rows = df.filter(pl.col("date") == day)
    if rows.height == 0:
        raise InputError(f"no row for date {day!r} (the file covers {df['date'][0]}..{df['date'][-1]})", path=path)
    row = rows.row(0, named=True)
    _node_total(sum(-(-row[f"_{vc}"] // GPUS_PER_NODE) for vc in vcs), path)
    spec: dict[str, tuple[int, ...]] = {}
    for vc in vcs:
        gpus = row[f"_{vc}"]
        if gpus > 0:
            full, rest = divmod(gpus, GPUS_PER_NODE)
            spec[vc] = (GPUS_PER_NODE,) * full + ((rest,) if rest else ())
    return ClusterSpec(spec, source=str(path), empty=frozenset(vc for vc in vcs if vc not in spec))


def _machine_list(raw: pl.DataFrame, path: Path) -> ClusterSpec:
    df = _counts(raw, path, [_MACHINE_GPUS], "a whole number of GPUs", {_MACHINE_GPUS: MAX_GPUS_PER_NODE})
    _node_total(df.height, path)
    dup = Check(_MACHINE_ID, pl.col(_MACHINE_ID).is_first_distinct().not_(), "duplicate machineId",
                lambda v: f"machine {v!r} is listed more than once")
    df, _ = apply_checks(df, [required_value(_MACHINE_ID), dup], path=path, lenient=False)
    return ClusterSpec({PHILLY_POOL: tuple(df[f"_{_MACHINE_GPUS}"].to_list())}, source=str(path))


def _vc_nodes(raw: pl.DataFrame, path: Path) -> ClusterSpec:
    nodes_col = "nodes" if "nodes" in raw.columns else "node num"
    require_columns(raw, ["vc", nodes_col], path)
    known = ("vc", nodes_col, "gpus_per_node", "cpus_per_node")
    for column in raw.columns:  # a misspelt gpus_per_node would silently give 8-GPU nodes
        if column not in (*known, ROW):
            raise InputError(f"unknown column (expected {', '.join(known)})", path=path, field=column)
    optional = [c for c in ("gpus_per_node", "cpus_per_node") if c in raw.columns]
    df = _counts(raw, path, [nodes_col, *optional], "a whole number",
                 {nodes_col: MAX_NODES, "gpus_per_node": MAX_GPUS_PER_NODE, "cpus_per_node": MAX_CPUS_PER_NODE})
    shape = [pl.col("vc").str.strip_chars(), *(pl.col(f"_{c}") for c in optional)]
    again = Check("vc", ~pl.struct(shape).is_first_distinct(), "duplicate VC row",
                  lambda v: f"VC {v!r} is listed twice with the same node shape (give one row per VC and node shape)")
    df, _ = apply_checks(df, [required_value("vc"), again], path=path, lenient=False)
    _node_total(int(df[f"_{nodes_col}"].sum()), path)
    size = pl.col("_gpus_per_node") if "gpus_per_node" in optional else pl.lit(GPUS_PER_NODE)
    has_cpus = "cpus_per_node" in optional
    cores = pl.col("_cpus_per_node") if has_cpus else pl.lit(0)
    df = df.select(pl.col("vc").str.strip_chars(), pl.col(f"_{nodes_col}").alias("n"), size.alias("g"),
                   cores.alias("c"))
    spec: dict[str, tuple[int, ...]] = {}
    cpus: dict[str, tuple[int, ...]] = {}
    for vc, n, g, c in df.iter_rows():  # one row per (VC, node size): a handful of rows
        spec[vc] = spec.get(vc, ()) + (g,) * n
        cpus[vc] = cpus.get(vc, ()) + (c,) * n
    # a VC of 0 nodes, or of nodes without GPUs only, is what a Helios day's 0 GPUs is: named, left out, its jobs
    # told so
    empty = frozenset(vc for vc, nodes in spec.items() if not any(nodes))
    spec = {vc: nodes for vc, nodes in spec.items() if vc not in empty}
    cpus = {vc: nodes for vc, nodes in cpus.items() if vc not in empty}
    return ClusterSpec(spec, cpus if has_cpus else None, source=str(path), empty=empty)


def write_cluster_spec(spec: ClusterSpec, path: str | Path) -> Path:
    """Write ``vc,nodes,gpus_per_node[,cpus_per_node]`` (one row per VC and node shape, first-seen order), atomically."""
    has_cpus = spec.cpus is not None
    lines = ["vc,nodes,gpus_per_node" + (",cpus_per_node" if has_cpus else "")]
    for vc, nodes in spec.vcs.items():
        shapes = list(zip(nodes, spec.cpus[vc], strict=True)) if spec.cpus is not None else [(g,) for g in nodes]
        for shape, count in Counter(shapes).items():
            lines.append(",".join([vc, str(count), *map(str, shape)]))
    for vc in [*(vc for vc, nodes in spec.vcs.items() if not nodes), *sorted(spec.empty)]:
        lines.append(f"{vc},0,{GPUS_PER_NODE}" + (",0" if has_cpus else ""))
    return write_text_atomic(path, "\n".join(lines) + "\n")
