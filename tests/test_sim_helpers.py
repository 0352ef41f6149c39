"""Small hand-written traces for the simulator tests (helpers only; no tests here)."""

from __future__ import annotations

import polars as pl

from dlcluster.cluster import ClusterSpec


def jobs(*rows: tuple) -> pl.DataFrame:
    """Rows ``(job_id, vc, gpu_num, submit, duration[, user])`` as a minimal canonical job table."""
    full = [r if len(r) == 6 else (*r, "u") for r in rows]
    return pl.DataFrame(
        full,
        schema={"job_id": pl.String, "vc": pl.String, "gpu_num": pl.Int32, "submit_time": pl.Int64,
                "duration": pl.Int64, "user": pl.String},
        orient="row",
    )


def spec(**vcs: tuple[int, ...]) -> ClusterSpec:
    """A cluster spec from ``vc=(gpus per node, ...)``."""
    return ClusterSpec({vc: tuple(nodes) for vc, nodes in vcs.items()})


def by_id(result_jobs: pl.DataFrame) -> dict[str, dict]:
    """Result rows keyed by job id."""
    return {r["job_id"]: r for r in result_jobs.iter_rows(named=True)}
