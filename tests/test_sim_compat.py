"""Compatibility mode against the SC'21 Helios artifact's own outputs on the real Philly table."""

from __future__ import annotations

from functools import cache
from pathlib import Path

import polars as pl
import pytest

from dlcluster.cluster import ClusterSpec
from dlcluster.io import read_trace
from dlcluster.io.cluster_spec import read_cluster_spec
from dlcluster.sim import SimResult, simulate
from dlcluster.sim.compat import artifact_order, wall_seconds
from dlcluster.predict import read_estimates
from dlcluster.trace import Trace

WINDOW = ("2017-10-01 00:00:00", "2017-11-30 23:59:00")


def _naive_seconds(text: str) -> int:
    return int(pl.Series([text]).str.to_datetime("%Y-%m-%d %H:%M:%S", time_unit="us").dt.epoch("s")[0])


@cache
def _inputs(data: Path, ref: Path) -> tuple[Trace, ClusterSpec, pl.DataFrame]:
    trace = read_trace(data / "philly/jobs_processed.csv")
    spec = read_cluster_spec(data / "philly/vc_nodes.csv")
    est = read_estimates(ref / "philly-artifact/inputs/Philly_lgb.csv.gz")
    return trace, spec, est


@cache
def _reference(ref: Path, policy: str) -> pl.DataFrame:
    return pl.read_csv(ref / f"philly-artifact/{policy}_jobs.csv", infer_schema=False).select(
        pl.col("jobname").alias("job_id"), "vc",
        *(pl.col(c).cast(pl.Float64).cast(pl.Int64) for c in ("submit_time", "start_time", "end_time", "queue", "jct")),
    )


@cache
def _run(data: Path, ref: Path, policy: str) -> SimResult:
    trace, spec, est = _inputs(data, ref)
    window = (_naive_seconds(WINDOW[0]), _naive_seconds(WINDOW[1]))
    return simulate(trace.jobs, spec, policy, compat="helios-artifact", estimates=est, window=window,
                    timezone=trace.timezone, unknown_vc="unschedulable")


def test_wall_clock_round_trips_through_the_ambiguous_dst_hour() -> None:
    # 01:30 on 2017-11-05 happens twice in Los Angeles; the reader keeps the earlier (PDT) instant
    utc = pl.Series([_naive_seconds("2017-11-05 08:30:00"), _naive_seconds("2017-07-01 12:00:00")])
    wall = pl.select(wall_seconds(pl.lit(utc), "America/Los_Angeles")).to_series()
    assert wall.to_list() == [_naive_seconds("2017-11-05 01:30:00"), _naive_seconds("2017-07-01 05:00:00")]


def test_tie_order_is_the_artifacts_internal_order(shared_data: Path, shared_reference: Path) -> None:
    trace, spec, _ = _inputs(shared_data, shared_reference)
    jobs = trace.jobs.with_columns(wall_seconds(pl.col("submit_time"), trace.timezone).alias("wall"))
    keep = (pl.col("gpu_num") > 0) & pl.col("vc").is_in(list(spec.vcs))
    ordered, origin = artifact_order(jobs, keep, (_naive_seconds(WINDOW[0]), _naive_seconds(WINDOW[1])))
    assert origin == _naive_seconds("2017-10-01 00:00:45")
    ref = _reference(shared_reference, "fifo")
    assert ordered.height == ref.height == 68503
    for vc in spec.vcs:
        ours = ordered.filter(pl.col("vc") == vc)
        theirs = ref.filter(pl.col("vc") == vc)
        assert ours["job_id"].to_list() == theirs["job_id"].to_list(), vc
        assert ours["submit"].to_list() == theirs["submit_time"].to_list(), vc
    # the order is not the file's: same-second jobs really are permuted
    stable = ordered.sort(pl.col("submit"), pl.col("job_id").cast(pl.Int64))  # file order on ties
    assert (stable["job_id"] != ordered["job_id"]).sum() > 0


@pytest.mark.parametrize("policy", ["fifo", "sjf", "qssf", "srtf"])
def test_every_job_matches_the_artifact(shared_data: Path, shared_reference: Path, policy: str) -> None:
    result = _run(shared_data, shared_reference, policy)
    ref = _reference(shared_reference, policy)
    joined = ref.join(result.jobs, on="job_id", how="left")
    assert joined["queue_delay"].null_count() == 0  # every reference job was simulated
    assert result.summary["overall"]["jobs"] == ref.height == 68503
    assert result.summary["time_origin"] == "2017-10-01 00:00:45"
    for ours, theirs in (("start", "start_time"), ("end", "end_time"), ("queue_delay", "queue")):
        assert joined[ours].to_list() == joined[theirs].to_list(), f"{policy}: {ours}"
    extra = pl.read_csv(shared_reference / f"philly-artifact/extra/{policy}_jobs_extra.csv.gz", infer_schema=False)
    preempted = extra.select(pl.col("jobname").alias("job_id"), pl.col("ckpt_times").cast(pl.Int64))
    both = preempted.join(result.jobs, on="job_id")
    assert both["preemptions"].cast(pl.Int64).to_list() == both["ckpt_times"].to_list()
    assert result.summary["overall"]["preemptions"] == (801 if policy == "srtf" else 0)


def test_dropped_vcs_are_counted_unschedulable(shared_data: Path, shared_reference: Path) -> None:
    result = _run(shared_data, shared_reference, "fifo")
    # the artifact silently drops the four VCs missing from its VC list: 7 of their jobs fall in the window
    assert result.summary["overall"]["unschedulable"] == 7
    assert {r["vc"] for r in result.summary["unschedulable_jobs"]} == {"795a4c", "51b7ef", "925e2b"}


def test_srtf_mean_jct_per_vc(shared_data: Path, shared_reference: Path) -> None:
    result = _run(shared_data, shared_reference, "srtf")
    summary = pl.read_csv(shared_reference / "philly-artifact/summary.csv", schema_overrides={"vc": pl.String})
    expected = summary.filter(pl.col("policy") == "srtf")
    for vc, n_jobs, avg_jct in expected.select("vc", "n_jobs", "avg_jct").iter_rows():
        ours = result.summary["overall"] if vc == "all" else result.summary["vcs"][vc]
        assert ours["jobs"] == n_jobs
        assert ours["mean_jct"] == pytest.approx(avg_jct, rel=0.005), vc


def test_default_mode_at_load_4_matches_the_docs(shared_data: Path, shared_reference: Path) -> None:
    # docs/simulator.md, "Plausibility": the whole Philly table at --load 4, default mode
    trace, spec, est = _inputs(shared_data, shared_reference)
    figures = {}
    for policy, pooled in (("fifo", False), ("sjf", False), ("qssf", False), ("srtf", False), ("fifo", True)):
        overall = simulate(trace.jobs, spec, policy, estimates=est, load=4, pooled=pooled,
                           unknown_vc="unschedulable").summary["overall"]
        figures[policy + ("-pooled" if pooled else "")] = (round(overall["mean_jct"]),
                                                            round(overall["mean_queue_delay"]), overall["preemptions"])
        assert overall["jobs"] == 82_229  # "the whole Philly table, 82,229 jobs of the spec's VCs"
    assert figures == {"fifo": (40609, 27471, 0), "sjf": (17310, 4173, 0), "qssf": (17193, 4056, 0),
                       "srtf": (15738, 2599, 18680), "fifo-pooled": (13349, 212, 0)}
