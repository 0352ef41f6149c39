"""Section 7: the Helios cluster-summary row, its columns and definitions."""

from __future__ import annotations

import polars as pl
import pytest

from dlcluster.analysis.summary import COLUMNS, cluster_summary
from dlcluster.schema import conform


def _trace() -> pl.DataFrame:
    rows = [  # job_id, gpu_num, duration, queue_delay, status
        ("a", 0, 10, 0, "completed"), ("b", 0, 30, 4, "failed"), ("c", 0, 20, 2, "completed"),
        ("d", 1, 100, 10, "completed"), ("e", 2, 200, 0, "cancelled"), ("f", 8, 50, 30, "timeout"),
        ("g", 1, 300, 20, "node_fail"),
    ]
    df = pl.DataFrame(rows, schema=("job_id", "gpu_num", "duration", "queue_delay", "status"), orient="row")
    return conform(df.with_columns(pl.lit("c").alias("cluster"), pl.lit("v").alias("vc"),
                                   pl.lit(0).alias("submit_time")))


def test_columns_match_the_artifact_file(shared_data) -> None:
    header = pl.read_csv(shared_data / "helios" / "cluster_summary.csv", n_rows=1).columns
    assert tuple(header) == COLUMNS
    assert tuple(cluster_summary(_trace(), "t").columns) == COLUMNS


def test_definitions_on_a_hand_made_trace() -> None:
    r = cluster_summary(_trace(), "tiny", total_gpus=16).row(0, named=True)
    assert (r["id"], r["gpu_num"], r["job_num"], r["cpu_job_num"], r["gpu_job_num"]) == ("tiny", 16, 7, 3, 4)
    assert r["avg_run_time_cpu"] == 20.0 and r["avg_run_time_gpu"] == 162.5
    assert r["avg_que_time_cpu"] == 2.0 and r["avg_que_time_gpu"] == 15.0
    assert r["avg_gpu_num"] == 3.0 and r["med_gpu_num"] == 1.5
    assert r["med_run_time_gpu"] == 150.0 and r["med_que_time_cpu"] == 2.0
    # timeout and node_fail are failures
    assert (r["complete_rate"], r["cancel_rate"], r["fail_rate"]) == (0.429, 0.143, 0.429)
    assert (r["complete_rate_cpu"], r["fail_rate_cpu"]) == (0.667, 0.333)
    assert (r["complete_rate_gpu"], r["cancel_rate_gpu"], r["fail_rate_gpu"]) == (0.25, 0.25, 0.5)
    assert (r["complete_gpu_time"], r["cancel_gpu_time"], r["fail_gpu_time"]) == (100.0, 400.0, 700.0)


def test_missing_inputs_give_nulls_not_nan() -> None:
    cpu_only = _trace().filter(pl.col("gpu_num") == 0)
    r = cluster_summary(cpu_only, "cpu").row(0, named=True)
    assert r["gpu_num"] is None and r["avg_run_time_gpu"] is None and r["complete_rate_gpu"] is None
    assert r["complete_rate"] == pytest.approx(0.667)
