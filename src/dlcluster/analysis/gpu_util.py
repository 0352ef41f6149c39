"""Section 4, utilisation: mean GPU utilisation of each job from Philly's per-minute ``cluster_gpu_util``.

The file is several GB, so the join runs out of core in DuckDB with a memory limit:
per machine, running sums of the minute samples (sum of the GPU columns that are not
``NA``, and how many there were) are computed once; an attempt on a server over
``[start, end)`` then needs two as-of look-ups (the running sums just before ``end`` and
just before ``start``), never a scan of its minutes. The canonical attempts table names
servers, not GPU indices, so a job's utilisation is the mean over every reporting GPU of
its servers while it ran: exact for jobs holding whole servers, approximate for smaller
jobs (other jobs' GPUs on the same server are counted too).
"""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

import duckdb
import polars as pl

from dlcluster.analysis.common import ordered_mean, outcome
from dlcluster.analysis.locality import first_attempts
from dlcluster.errors import InputError
from dlcluster.io.philly_util import PhillyUtilization

MEMORY_LIMIT = "1GB"
TABLE3_SIZES = (1, 4, 8, 16)


def _source(util: PhillyUtilization | str | Path) -> PhillyUtilization:
    if isinstance(util, PhillyUtilization):
        return util
    return PhillyUtilization.of_file(Path(util), "gpu") or PhillyUtilization(util)


def _read_into(con: duckdb.DuckDBPyConnection, source: PhillyUtilization, sql: str) -> None:
    """Run ``sql``, which reads the utilisation file: a file DuckDB cannot read (cut short, a bad value) is the
    user's input, refused naming it with the first line of DuckDB's reason."""
    try:
        con.execute(sql)
    except (duckdb.IOException, duckdb.ConversionException, duckdb.InvalidInputException) as exc:
        text = str(exc)
        line = re.search(r"CSV Error on Line: (\d+)", text)
        value = re.search(r'converting column "([^"]+)"\. (.+)', text)
        if line and value:  # a value that is not a number: its line and column
            raise InputError(value[2][0].lower() + value[2][1:], path=source.file("gpu"), row=int(line[1]),
                             field=value[1]) from exc
        reason = text.strip().splitlines()[0]
        raise InputError(f"cannot read the GPU utilisation samples: {reason}", path=source.file("gpu")) from exc


def job_gpu_utilization(attempts: pl.DataFrame, util: PhillyUtilization | str | Path,
                        memory_limit: str = MEMORY_LIMIT, threads: int = 2) -> pl.DataFrame:
    """Mean GPU utilisation (%) of each job over its attempts: ``job_id, gpu_util, samples``.

    ``util`` is a :class:`PhillyUtilization`, a Philly folder, or the path of a
    ``cluster_gpu_util`` file (or ``.gz``, ``.zst``). Jobs without any sample are left out.
    """
    source = _source(util)
    rel = source.gpu()
    gpu_cols = [c for c in rel.columns if c not in ("time", "machine_id")]
    value_sum = " + ".join(f'coalesce("{c}", 0)' for c in gpu_cols)
    value_cnt = " + ".join(f'("{c}" IS NOT NULL)::INTEGER' for c in gpu_cols)
    spans = (attempts.drop_nulls(["start_time", "end_time"]).filter(pl.col("end_time") > pl.col("start_time"))
             .explode("servers").drop_nulls("servers").unique(["job_id", "attempt", "servers"])
             .select("job_id", "attempt", pl.col("servers").alias("server"), "start_time", "end_time"))
    with tempfile.TemporaryDirectory(prefix="dlcluster-duckdb-") as tmp:
        # a database file (not memory) so the running-sum table can live on disk past the limit
        con = duckdb.connect(str(Path(tmp) / "util.duckdb"), config={
            "memory_limit": memory_limit, "threads": threads, "temp_directory": tmp,
            "preserve_insertion_order": False})
        try:
            con.execute("SET enable_progress_bar = false")  # it would write to stdout
            con.register("spans", spans.to_arrow())
            _read_into(con, source, f"""
                CREATE TABLE pre AS
                SELECT machine_id, time,
                       sum(s) OVER w AS cum_sum, sum(c) OVER w AS cum_cnt
                FROM (SELECT machine_id, time, {value_sum} AS s, {value_cnt} AS c
                      FROM ({rel.sql_query()}) WHERE machine_id IN (SELECT DISTINCT server FROM spans))
                WINDOW w AS (PARTITION BY machine_id ORDER BY time ROWS UNBOUNDED PRECEDING)
            """)
            out = con.sql("""
                SELECT a.job_id,
                       -- ordered, so that threads finishing in any order give the same float sum
                       sum(coalesce(e.cum_sum, 0) - coalesce(b.cum_sum, 0) ORDER BY a.attempt, a.server) AS total,
                       sum(coalesce(e.cum_cnt, 0) - coalesce(b.cum_cnt, 0)) AS samples
                FROM spans a
                ASOF LEFT JOIN pre e ON a.server = e.machine_id AND a.end_time > e.time
                ASOF LEFT JOIN pre b ON a.server = b.machine_id AND a.start_time > b.time
                GROUP BY a.job_id
            """).pl()
        finally:
            con.close()
    return (out.filter(pl.col("samples") > 0)
            .select("job_id", (pl.col("total") / pl.col("samples")).alias("gpu_util"),
                    pl.col("samples").cast(pl.Int64))
            .sort("job_id"))


def utilization_by_size_status(job_util: pl.DataFrame, attempts: pl.DataFrame, jobs: pl.DataFrame) -> pl.DataFrame:
    """Mean of job GPU utilisation (%) by first-attempt GPUs and outcome, with totals (Philly Table 3).

    Columns ``gpus, completed, cancelled, failed, all`` (``gpus`` as text, last row ``all``); ``all`` is over the
    jobs of the three outcomes (as the study's), not over jobs still running or waiting.
    """
    d = (job_util.join(first_attempts(attempts), on="job_id")
         .join(jobs.select("job_id", outcome().cast(pl.String).alias("outcome")), on="job_id")
         .filter(pl.col("gpus").is_in(TABLE3_SIZES) & pl.col("outcome").is_not_null())
         .with_columns(pl.col("gpus").cast(pl.String)))
    d = pl.concat([d, d.with_columns(pl.lit("all").alias("gpus"))])
    by = d.group_by("gpus", "outcome").agg(ordered_mean("gpu_util"))
    wide = by.pivot(on="outcome", index="gpus", values="gpu_util", sort_columns=True)
    overall = d.group_by("gpus").agg(ordered_mean("gpu_util").alias("all"))
    cols = [pl.col(c) if c in wide.columns else pl.lit(None, pl.Float64).alias(c)
            for c in ("completed", "cancelled", "failed")]
    order = {str(s): i for i, s in enumerate(TABLE3_SIZES)} | {"all": len(TABLE3_SIZES)}
    return (overall.join(wide.select("gpus", *cols), on="gpus", how="left")
            .select("gpus", "completed", "cancelled", "failed", "all")
            .sort(pl.col("gpus").replace_strict(order, return_dtype=pl.Int32)))


def utilization_by_servers(job_util: pl.DataFrame, attempts: pl.DataFrame, gpus: int = 16) -> pl.DataFrame:
    """GPU utilisation (%) of ``gpus``-GPU jobs by servers spanned (Philly Table 5): ``servers_spanned, jobs, mean, p50, p90, p95``."""
    u = pl.col("gpu_util")
    return (job_util.join(first_attempts(attempts).filter(pl.col("gpus") == gpus), on="job_id")
            .group_by("servers_spanned")
            .agg(pl.len().alias("jobs"), ordered_mean("gpu_util").alias("mean"), u.median().alias("p50"),
                 u.quantile(0.9, "linear").alias("p90"), u.quantile(0.95, "linear").alias("p95"))
            .sort("servers_spanned"))
