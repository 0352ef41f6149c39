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
    # each VC over its own span: v2's job ended within the first hour
    assert by_vc.filter(pl.col("vc") == "v2")["running_gpus"].to_list() == pytest.approx([2.0])
    assert by_vc.filter(pl.col("vc") == "v1")["running_gpus"].to_list() == pytest.approx([2.0, 1.0])


def test_one_far_end_stretches_only_its_own_vcs_hours() -> None:
    # (every VC's grid ran to the last end of any VC's jobs: one bogus 100-year job in a 7-row trace of 6 VCs took
    # 1.3 GB)
    far = T0 + 100 * 365 * 86400
    df = _jobs([("a", "v1", "u", 1, 1, T0, T0, far, "completed"),
                *((f"b{k}", f"v{k}", "u", 1, 1, T0, T0, T0 + 60, "completed") for k in range(2, 7))])
    by_vc = hourly_running(df, by_vc=True)
    assert by_vc.group_by("vc").len().sort("vc")["len"].to_list() == [(far - T0) // 3600, 1, 1, 1, 1, 1]
    # and cut where the analysis stops
    assert hourly_running(df, by_vc=True, upto=T0 + 7200)["hour_start"].to_list() == [T0, T0 + 3600] + [T0] * 5


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


def test_local_hours_of_a_half_hour_zone() -> None:
    # (hours were UTC hours named by their local start: in Asia/Kolkata, UTC+5:30, a 05:40 submission counted in
    # hour 5 and 07:10 in hour 6, a Monday 00:10 on Sunday at 23)
    day = 1_600_041_600  # 2020-09-14 00:00 UTC, a Monday
    local0 = day - 5 * 3600 - 1800  # 2020-09-14 00:00 in Kolkata

    def at(h: int, m: int) -> int:
        return local0 + h * 3600 + m * 60

    df = _jobs([("k1", "v", "u", 1, 1, at(5, 10), at(5, 10), at(5, 20), "completed"),
                ("k2", "v", "u", 1, 1, at(5, 40), at(5, 41), at(5, 50), "completed"),
                ("k3", "v", "u", 1, 1, at(7, 10), at(7, 12), at(7, 20), "completed")])
    daily = cluster.daily_pattern(df, Trace(df, "t", timezone="Asia/Kolkata").local_times)
    assert daily.select("hour", "submissions").rows() == [(5, 2.0), (6, 0.0), (7, 1.0)]
    assert daily["running_gpus"].to_list() == pytest.approx([19 / 60, 0.0, 8 / 60])
    week = _jobs([("m", "v", "u", 1, 1, at(0, 10), at(0, 10), at(0, 20), "completed"),
                  ("n", "v", "u", 1, 1, at(24 + 12, 0), at(24 + 12, 0), at(24 + 12, 5), "completed")])
    local = Trace(week, "t", timezone="Asia/Kathmandu").local_times  # UTC+5:45
    assert cluster.daily_pattern(week, local).filter(pl.col("submissions") > 0)["hour"].to_list() == [0, 12]
    assert cluster.weekly_pattern(week, local).filter(pl.col("submissions") > 0)["day"].to_list() == ["Mon", "Tue"]


def test_utilisation_and_load_count_the_jobs_of_the_spec_vcs_only() -> None:
    # (a 64-GPU job of a VC the spec lacks counted in the 16-GPU spec's utilisation, drawn at 4.5, and in the load)
    df = _jobs([("b1", "vB", "u", 64, 1, T0, T0, T0 + 20000, "completed"),
                ("a1", "vA", "u", 4, 1, T0 + 1000, T0 + 1100, T0 + 4600, "completed"),
                ("a2", "vA", "u", 4, 1, T0 + 2000, T0 + 2600, T0 + 6000, "completed"),
                ("a3", "vA", "u", 2, 1, T0 + 3000, T0 + 3000, T0 + 3600, "failed"),
                ("a4", "vA", "u", 8, 1, T0 + 5000, T0 + 5400, T0 + 9000, "completed"),
                ("a5", "vA", "u", 1, 1, T0 + 8000, T0 + 8100, T0 + 9000, "completed")])
    local = Trace(df, "t").local_times
    daily = cluster.daily_pattern(df, local, total_gpus=16, vcs=["vA"])
    # vA's GPU-seconds in the hours up to the last submission (a5's, in hour 2)
    va = [4 * 2500 + 4 * 1000 + 2 * 600, 4 * 1000 + 4 * 2400 + 8 * 1800, 8 * 1800 + 1 * 900]
    assert daily["utilization"].to_list() == pytest.approx([s / 3600 / 16 for s in va])
    assert daily["running_gpus"].to_list() == pytest.approx([64 + s / 3600 for s in va])  # vB's job in use too
    weekly = cluster.weekly_pattern(df, local, total_gpus=16, vcs=["vA"])
    monthly = cluster.monthly_trend(df, local, total_gpus=16, vcs=["vA"])
    assert weekly["utilization"].item() == pytest.approx(monthly["utilization"].item()) == pytest.approx(
        sum(va) / 3 / 3600 / 16)
    load = cluster.queue_vs_load(df, total_gpus=16, bins=10, vcs=["vA"])
    # a1 sees nothing of vA running, a2 a1's 4 GPUs, a3 a1's 4 (it starts at once), a4 a2's 4, a5 a4's 8
    assert load.select("load_bin", "jobs").rows() == [(0, 1), (2, 2), (5, 2)]


def test_a_still_running_job_is_not_its_own_load() -> None:
    # (its end is null, so "it runs past its start" was null too, and its own 8 GPUs counted: load 1.0)
    df = _jobs([("r", "v", "u", 8, 1, T0, T0, None, "running"),
                ("c", "v", "u", 8, 1, T0, T0, T0 + 3600, "completed"),
                ("w", "v", "u", 8, 1, T0 + 7200, T0 + 7300, T0 + 10000, "completed")])
    load = cluster.queue_vs_load(df, total_gpus=16, bins=10)
    assert load.select("load_bin", "jobs").rows() == [(5, 3)]


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


def test_the_gpu_time_of_jobs_without_a_user_is_counted_and_said() -> None:
    # (two users holding 2.4% of the GPU time were drawn as holding all of it, unsaid)
    df = _jobs([("a", "v", "u1", 1, 1, T0, T0, T0 + 3600, "completed"),
                ("b", "v", "u2", 1, 1, T0, T0, T0 + 3600, "completed"),
                ("c", "v", None, 8, 1, T0, T0, T0 + 36000, "completed")])
    assert users.without_user(df) == {"GPU time": pytest.approx(80 / 82), "CPU time": pytest.approx(10 / 12)}
    assert users.without_user(df.filter(pl.col("user").is_not_null())) == {}


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
    # a month without submissions had no GPU-hours submitted (left empty, the line bridged it)
    gap = cluster.monthly_trend(jobs.filter(pl.col("job_id") != "b"), local)
    assert gap.select("month", "jobs", "gpu_hours_submitted").rows() == [
        ("2017-10", 1, 1.0), ("2017-11", 0, 0.0), ("2017-12", 1, 1.0)]
