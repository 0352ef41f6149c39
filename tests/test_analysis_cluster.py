"""Sections 2, 3 and 5 analyses: running GPUs, local-time patterns, users, failures."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from dlcluster.analysis import cluster, failures, users
from dlcluster.analysis.load import hourly_running, running_at
from dlcluster.cluster import ClusterSpec
from dlcluster.schema import conform
from dlcluster.trace import Trace

T0 = 1_600_000_000 // 86400 * 86400  # a UTC midnight


def _jobs(rows: list[tuple]) -> pl.DataFrame:
    cols = ("job_id", "vc", "user", "gpu_num", "cpu_num", "submit_time", "start_time", "end_time", "status")
    df = pl.DataFrame(rows, schema=cols, orient="row", infer_schema_length=None)
    return conform(df.with_columns(pl.lit("c").alias("cluster"),
                                   (pl.col("end_time") - pl.col("start_time")).alias("duration"),
                                   (pl.col("start_time") - pl.col("submit_time")).alias("queue_delay")))


def test_running_gpus_are_exact_hourly_averages() -> None:
    df = _jobs([("a", "v1", "u", 2, 1, T0, T0, T0 + 5400, "completed"),
                ("b", "v2", "u", 4, 1, T0, T0 + 1800, T0 + 3600, "completed")])
    h = hourly_running(df)
    assert h["hour_start"].to_list() == [T0, T0 + 3600]
    assert h["running_gpus"].to_list() == pytest.approx([2 + 4 * 0.5, 2 * 0.5])
    assert running_at(df, np.array([T0 - 1, T0, T0 + 1800, T0 + 3600, T0 + 5400])).tolist() == [0, 2, 6, 2, 0]
    by_vc = hourly_running(df, by_vc=True)
    assert by_vc.filter(pl.col("vc") == "v2")["running_gpus"].to_list() == pytest.approx([2.0, 0.0])


def test_load_at_submission_leaves_out_the_job_itself() -> None:
    # a on the whole 4-GPU cluster at once (it was counted: load 1.0, though nothing ran), c on half of it beside
    # b, which started the same second; d waits for a
    df = _jobs([("a", "v", "u", 4, 1, T0, T0, T0 + 600, "completed"),
                ("b", "v", "u", 2, 1, T0 + 1000, T0 + 1000, T0 + 2000, "completed"),
                ("c", "v", "u", 2, 1, T0 + 1000, T0 + 1000, T0 + 1500, "completed"),
                ("d", "v", "u", 4, 1, T0 + 100, T0 + 600, T0 + 700, "completed")])
    table = cluster.queue_vs_load(df, total_gpus=4, bins=4)
    # a sees 0 GPUs in use, b and c each the other's 2 (starting in the same second), d all 4 of a's
    # (a full cluster falls in the top bin)
    assert table.select("load_lo", "jobs").rows() == [(0.0, 1), (0.5, 2), (0.75, 1)]


def test_daily_pattern_uses_local_time() -> None:
    # one submission at 01:00 UTC on each of two days = 09:00 in Shanghai
    df = _jobs([("a", "v", "u", 1, 1, T0 + 3600, T0 + 3600, T0 + 7200, "completed"),
                ("b", "v", "u", 1, 1, T0 + 86400 + 3600, T0 + 86400 + 3600, T0 + 86400 + 7200, "completed")])
    trace = Trace(df, "test", timezone="Asia/Shanghai")
    daily = cluster.daily_pattern(df, trace.local_times, total_gpus=4)
    peak = daily.sort("submissions", descending=True).row(0, named=True)
    assert peak["hour"] == 9 and peak["submissions"] == 1.0
    assert daily.filter(pl.col("hour") == 9)["utilization"].item() == pytest.approx(0.25)


def test_without_start_times_running_gpus_are_unknown_not_zero() -> None:
    df = _jobs([("a", "v", "u", 1, 1, T0, None, None, "other")])
    trace = Trace(df, "test")
    daily = cluster.daily_pattern(df, trace.local_times)
    assert daily["submissions"].to_list() == [1.0] and daily["running_gpus"].to_list() == [None]


def test_vc_utilization_counts_idle_hours() -> None:
    df = _jobs([("a", "v1", "u", 8, 1, T0, T0, T0 + 3600, "completed"),
                ("b", "v2", "u", 2, 1, T0 + 3600, T0 + 3600, T0 + 7200, "completed")])
    out = cluster.vc_utilization(df, ClusterSpec({"v1": (8,), "v2": (4,)}))
    v1 = out.filter(pl.col("vc") == "v1").row(0, named=True)
    assert v1["hours"] == 2 and v1["mean"] == pytest.approx(0.5)
    assert out.filter(pl.col("vc") == "v2")["mean"].item() == pytest.approx(0.25)


def test_vc_utilization_counts_the_idle_days_after_its_last_gpu_job() -> None:
    # (a VC whose one GPU job ran 2 h of an 8-day trace was 100% busy: only the hours some job ran counted)
    rows = [("g", "v1", "u", 4, 1, T0, T0, T0 + 7200, "completed")]
    rows += [(f"c{d}", "v1", "u", 0, 1, T0 + d * 86400, T0 + d * 86400, T0 + d * 86400 + 600, "completed")
             for d in range(1, 9)]
    v1 = cluster.vc_utilization(_jobs(rows), ClusterSpec({"v1": (4,)})).row(0, named=True)
    assert v1["hours"] == 8 * 24 + 1 and v1["p95"] == 0.0 and v1["mean"] == pytest.approx(2 / 193)


def test_users_and_failures() -> None:
    df = _jobs([("a", "v", "heavy", 4, 2, T0, T0 + 10, T0 + 1010, "completed"),
                ("b", "v", "light", 1, 1, T0, T0, T0 + 1000, "failed"),
                ("c", "v", "light", 1, 1, T0, T0 + 30, T0 + 130, "timeout"),
                ("d", "v", "heavy", 0, 4, T0, T0, T0 + 500, "cancelled")])
    conc = users.resource_concentration(df)
    gpu = conc.filter(pl.col("resource") == "GPU time")
    assert gpu.rows() == [("GPU time", 0.5, pytest.approx(4000 / 5100)), ("GPU time", 1.0, 1.0)]
    assert users.user_completion_cdf(df).rows() == [(0.0, 0.5), (1.0, 1.0)]
    lost = dict(failures.lost_gpu_time(df).select("outcome", "share").iter_rows())
    assert lost["failed"] == pytest.approx(1100 / 5100)
    # the same bits whatever order the outcomes' groups come in (shares of summed hours changed in the last bits)
    for seed in range(4):
        assert failures.lost_gpu_time(df.sample(fraction=1.0, shuffle=True, seed=seed)).equals(
            failures.lost_gpu_time(df))
    el = failures.early_late_failures(df).select("bucket", "when", "jobs").rows()
    assert el == [("1", "early", 1), ("1", "late", 1)]
    assert failures.repeat_failures(df).rows() == [(2, 1, 1.0)]


def test_monthly_trend_numbers_each_traces_own_months() -> None:
    # 2017-10-15, 2017-11-15 and 2017-12-20 (UTC): three calendar months, indexed 1..3
    jobs = conform(pl.DataFrame({
        "job_id": ["a", "b", "c"], "cluster": "c", "vc": "v", "gpu_num": [1, 2, 1],
        "submit_time": [1508025600, 1510704000, 1513728000], "start_time": [1508025600, 1510704000, 1513728000],
        "end_time": [1508029200, 1510707600, 1513731600], "duration": [3600, 3600, 3600], "status": "completed"}))

    def local(col: str) -> pl.Expr:
        return pl.from_epoch(pl.col(col), time_unit="s").dt.replace_time_zone("UTC")

    out = cluster.monthly_trend(jobs, local)
    assert out["month"].to_list() == ["2017-10", "2017-11", "2017-12"]
    assert out["month_index"].to_list() == [1, 2, 3]
    assert out["jobs"].to_list() == [1, 1, 1]
