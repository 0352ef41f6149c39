"""Lazy access to Philly's per-minute utilisation files (several GB: never loaded eagerly).

``cluster_gpu_util`` (``time, machineId, gpu0_util .. gpu7_util``), ``cluster_cpu_util``
(``time, machine_id, cpu_util``) and ``cluster_mem_util`` (``time, machine_id, mem_total,
mem_free``) become DuckDB relations with ``time`` as UTC epoch seconds, the machine column
named ``machine_id``, and NULL for ``NA``. Times carry a ``PDT``/``PST`` suffix, which
fixes the UTC offset exactly (-7 h / -8 h), so the repeated hour of the autumn change
stays unambiguous. Rows may end with a trailing comma. Each file may be gzip- or
zstd-compressed, named with or without ``.gz``/``.zst``; a folder's file of a kind is the first
of its names that exists (:func:`~dlcluster.io._common.first_file`). Nothing is read until a relation is queried;
a bad value then fails the query with DuckDB's error naming the line.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from dlcluster.errors import InputError
from dlcluster.io._common import SUFFIXES, compression, decompressing, first_file, open_bytes

if TYPE_CHECKING:  # imported when a folder is opened: format detection and job reading never need it
    import duckdb

FILES = {"gpu": "cluster_gpu_util", "cpu": "cluster_cpu_util", "mem": "cluster_mem_util"}
_OFFSETS = {"PDT": 7 * 3600, "PST": 8 * 3600}


def _sql_text(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


class PhillyUtilization:
    """Per-minute GPU, CPU and memory utilisation of a Philly folder, as lazy DuckDB relations."""

    def __init__(self, folder: str | Path) -> None:
        import duckdb

        self.folder = Path(folder)
        self._con = duckdb.connect()
        self._named: dict[str, Path] = {}  # kind → the file a user named (see of_file)

    @classmethod
    def of_file(cls, path: Path, kind: str) -> PhillyUtilization | None:
        """The utilisation of ``path``'s folder with ``path`` as its ``kind`` file, if ``path`` is a file named as
        one (plain or compressed: ``cluster_gpu_util.gz``); else None."""
        if not (path.is_file() and path.name in {FILES[kind] + s for s in SUFFIXES}):
            return None
        util = cls(path.parent)
        util._named[kind] = path
        return util

    @property
    def available(self) -> tuple[str, ...]:
        """Which of ``gpu``, ``cpu``, ``mem`` have a file in the folder."""
        return tuple(kind for kind in FILES if self.file(kind) is not None)

    def file(self, kind: str) -> Path | None:
        """The ``kind`` (gpu, cpu, mem) file: the one named (:meth:`of_file`), else the folder's, plain or compressed,
        or None."""
        return self._named.get(kind) or first_file(self.folder, FILES[kind])

    def gpu(self) -> duckdb.DuckDBPyRelation:
        """``time, machine_id, gpu0_util .. gpu7_util`` (percent, NULL where NA)."""
        return self._relation("gpu")

    def cpu(self) -> duckdb.DuckDBPyRelation:
        """``time, machine_id, cpu_util`` (percent, NULL where NA)."""
        return self._relation("cpu")

    def mem(self) -> duckdb.DuckDBPyRelation:
        """``time, machine_id, mem_total, mem_free`` (NULL where NA)."""
        return self._relation("mem")

    def _relation(self, kind: str) -> duckdb.DuckDBPyRelation:
        path = self.file(kind)
        if path is None:
            raise InputError(f"no {FILES[kind]} file in this Philly folder", path=self.folder)
        with decompressing(path), open_bytes(path) as fh:
            header = [c.strip() for c in fh.readline().decode("utf-8", errors="replace").split(",")]
        names = [c for c in header if c]
        if len(names) < 3:
            raise InputError(f"expected a header 'time, machine id, values...', found {header!r}", path=path)
        values = names[2:]
        # one spare column absorbs the trailing comma; null_padding accepts rows without it
        columns = {"time": "VARCHAR", "machine_id": "VARCHAR", **{v: "DOUBLE" for v in values}, "_trailing": "VARCHAR"}
        columns_sql = "{" + ", ".join(f"{_sql_text(k)}: {_sql_text(t)}" for k, t in columns.items()) + "}"
        suffix = "right(trim(time), 3)"
        offset = " ".join(f"WHEN {_sql_text(z)} THEN {s}" for z, s in _OFFSETS.items())
        value_cols = ", ".join(f'"{v}"' for v in values)
        return self._con.sql(
            f"""
            SELECT
              CAST(epoch(strptime(trim(left(trim(time), length(trim(time)) - 3)), '%Y-%m-%d %H:%M:%S')) AS BIGINT)
                + CASE {suffix} {offset}
                  ELSE error({_sql_text(f'{path}: time without a PDT/PST suffix: ')} || time) END AS time,
              trim(machine_id) AS machine_id, {value_cols}
            FROM read_csv({_sql_text(str(path))}, header = false, skip = 1, columns = {columns_sql},
                          nullstr = ['NA', ''], null_padding = true, auto_detect = false,
                          compression = {_sql_text(compression(path) or "none")})
            """
        )
