"""Section 1 analyses and the shared CDF/bucket helpers, on hand-made tables and the public Philly table."""

from __future__ import annotations

import polars as pl
import pytest

from dlcluster.analysis import jobs
from dlcluster.analysis.common import cdf_points, outcome, size_bucket
from dlcluster.io import read_trace
from dlcluster.schema import conform


def _jobs(rows: list[tuple]) -> pl.DataFrame:
    cols = ("job_id", "vc", "gpu_num", "duration", "queue_delay", "status")
    df = pl.DataFrame(rows, schema=cols, orient="row")
    return conform(df.with_columns(pl.lit("c").alias("cluster"), pl.lit(0).alias("submit_time")))


def test_size_buckets_and_outcomes() -> None:
    df = pl.DataFrame({"gpu_num": [0, 1, 2, 4, 5, 8, 9, 64],
                       "status": ["completed", "cancelled", "failed", "timeout", "node_fail", "running", "other",
                                  "completed"]})
    got = df.select(size_bucket().cast(pl.String).alias("b"), outcome().cast(pl.String).alias("o"))
    assert got["b"].to_list() == [None, "1", "2-4", "2-4", "5-8", "5-8", ">8", ">8"]
    assert got["o"].to_list() == ["completed", "cancelled", "failed", "failed", "failed", None, None,
                                       "completed"]


def test_cdf_points_is_exact_at_kept_points() -> None:
    df = pl.DataFrame({"g": ["a"] * 4 + ["b"] * 1000, "v": [4, 1, 3, 2] + list(range(1000))})
    out = cdf_points(df, "v", ["g"], points=10)
    a = out.filter(pl.col("g") == "a")
    assert a["v"].to_list() == [1, 2, 3, 4] and a["p"].to_list() == [0.25, 0.5, 0.75, 1.0]
    b = out.filter(pl.col("g") == "b")
    assert b.height <= 12 and b["p"][-1] == 1.0 and b["v"][-1] == 999 and b["v"][0] == 0  # (its least too)
    # every kept point is the true empirical CDF value
    assert all(abs(p - (v + 1) / 1000) < 1e-12 for v, p in b.select("v", "p").iter_rows())


def test_tied_values_are_one_point_at_the_share_up_to_them() -> None:
    # (300 values of 60 and 100 of 120 were 150 kept rows at 60 from p 0.0025 to 0.7475: F(60) is 0.75)
    out = cdf_points(pl.DataFrame({"v": [60] * 300 + [120] * 100}), "v")
    assert out.rows() == [(60, 0.75), (120, 1.0)]
    # thinned, a value holding more than a step (most jobs waiting 0 s) stays
    waits = cdf_points(pl.DataFrame({"v": [0] * 780 + list(range(1, 221))}), "v", points=10)
    assert waits.row(0) == (0, 0.78) and waits.height <= 12


def test_outcome_by_size_shares_by_count_and_gpu_time() -> None:
    df = _jobs([("1", "v", 1, 100, 0, "completed"), ("2", "v", 1, 300, 0, "failed"),
                ("3", "v", 4, 100, 5, "cancelled"), ("4", "v", 0, 50, 0, "completed"),
                ("5", "v", 4, 100, 5, "running")])
    out = jobs.outcome_by_size(df)
    one = {r["outcome"]: r for r in out.filter(pl.col("bucket") == "1").iter_rows(named=True)}
    assert one["completed"]["job_share"] == 0.5 and one["completed"]["gpu_time_share"] == 0.25
    every = {r["outcome"]: r for r in out.filter(pl.col("bucket") == "all").iter_rows(named=True)}
    assert every["cancelled"]["jobs"] == 1 and every["cancelled"]["gpu_time_share"] == pytest.approx(400 / 800)


def test_size_mix_and_duration_by_size() -> None:
    df = _jobs([("1", "v", 1, 10, 0, "completed"), ("2", "v", 1, 30, 0, "completed"),
                ("3", "v", 8, 20, 0, "completed"), ("4", "v", 0, 99, 0, "completed")])
    mix = jobs.size_mix(df)
    assert mix["gpu_num"].to_list() == [1, 8]
    assert mix["job_share"].to_list() == pytest.approx([2 / 3, 1 / 3])
    assert mix["gpu_time_share"].to_list() == pytest.approx([40 / 200, 160 / 200])
    by = jobs.duration_by_size(df)
    assert by["bucket"].cast(pl.String).to_list() == ["1", "5-8"] and by["p50"].to_list() == [20.0, 20.0]


def test_queue_cdf_by_vc_keeps_the_busiest() -> None:
    rows = [(str(i), f"vc{i % 3}", 1, 10, i, "completed") for i in range(9)] + [("x", "vc9", 1, 1, 0, "completed")]
    out = jobs.queue_cdf_by_vc(_jobs(rows), top=3)
    assert sorted(out["vc"].unique().to_list()) == ["vc0", "vc1", "vc2"]


def test_philly_median_durations_match_the_study(shared_data) -> None:
    """Acceptance (a): 18.6 min (1 GPU), 290 min (4 GPUs), 395 min (8 GPUs) in jobs_processed.csv."""
    trace = read_trace(shared_data / "philly" / "jobs_processed.csv")
    med = dict(jobs.median_duration_by_gpus(trace.jobs).select("gpu_num", pl.col("median") / 60).iter_rows())
    assert round(med[1], 1) == 18.6
    assert round(med[4]) == 290
    assert round(med[8]) == 395
