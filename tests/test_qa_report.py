"""Regressions found reviewing the characterisation report as a user (issue 4 QA)."""

from __future__ import annotations

import os
import re
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from dlcluster.analysis import cluster
from dlcluster.analysis.common import ordered_mean
from dlcluster.analysis.summary import cluster_summary
from dlcluster.cli import main
from dlcluster.cluster import ClusterSpec
from dlcluster.report import build_report, plots
from dlcluster.schema import conform
from dlcluster.trace import Trace

T0 = 1_600_000_000 // 86400 * 86400  # a UTC midnight


def _jobs(rows: list[tuple]) -> pl.DataFrame:
    cols = ("job_id", "vc", "gpu_num", "submit_time", "start_time", "end_time", "status")
    df = pl.DataFrame(rows, schema=cols, orient="row", infer_schema_length=None)
    return conform(df.with_columns(pl.lit("c").alias("cluster"),
                                   (pl.col("end_time") - pl.col("start_time")).alias("duration"),
                                   (pl.col("start_time") - pl.col("submit_time")).alias("queue_delay")))


def test_ordered_mean_gives_the_same_bits_in_any_row_order() -> None:
    """Polars' parallel group-by sums floats in a varying order: the report's CSVs differed run to run."""
    rng = np.random.default_rng(0)
    df = pl.DataFrame({"g": rng.integers(0, 7, 300_000), "x": rng.random(300_000) * 1000})
    shuffled = df.sample(fraction=1.0, shuffle=True, seed=1)
    a = df.group_by("g").agg(ordered_mean("x")).sort("g")
    b = shuffled.group_by("g").agg(ordered_mean("x")).sort("g")
    assert a.equals(b)
    assert a["x"].to_list() == pytest.approx(df.group_by("g").agg(pl.col("x").mean()).sort("g")["x"].to_list())
    empty = pl.DataFrame({"g": [1], "x": [None]}, schema={"g": pl.Int64, "x": pl.Float64})
    assert empty.group_by("g").agg(ordered_mean("x"))["x"].to_list() == [None]


def test_patterns_end_with_the_last_submission() -> None:
    """A long job draining after the last submission must not dilute the hourly means."""
    jobs = _jobs([("a", "v", 4, T0, T0, T0 + 86400, "completed"),
                  ("b", "v", 1, T0 + 23 * 3600, T0 + 23 * 3600, T0 + 60 * 86400, "completed")])
    daily = cluster.daily_pattern(jobs, Trace(jobs, "t").local_times, total_gpus=8)
    assert daily.height == 24
    assert daily.filter(pl.col("hour") == 5)["running_gpus"].item() == 4.0
    assert daily.filter(pl.col("hour") == 23)["utilization"].item() == 5 / 8
    vc = cluster.vc_utilization(jobs, ClusterSpec({"v": (8,)})).row(0, named=True)
    assert vc["hours"] == 24 and vc["p50"] == 0.5


def test_summary_gpu_time_is_unknown_without_any_status() -> None:
    jobs = _jobs([("a", "v", 2, T0, T0, T0 + 100, "other")])
    r = cluster_summary(jobs, "t").row(0, named=True)
    assert (r["complete_gpu_time"], r["cancel_gpu_time"], r["fail_gpu_time"]) == (None, None, None)
    done = cluster_summary(jobs.with_columns(pl.lit("completed").cast(jobs.schema["status"]).alias("status")), "t")
    assert done.select("complete_gpu_time", "fail_gpu_time").row(0) == (200.0, 0.0)


def _cli_error(argv: list[str], capsys: pytest.CaptureFixture) -> str:
    with pytest.raises(SystemExit) as err:
        main(argv)
    assert err.value.code == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1
    return lines[0]


def test_cli_rejects_an_unwritable_report_folder(tmp_path: Path, capsys: pytest.CaptureFixture,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    src = tmp_path / "jobs.csv"
    src.write_text("timestamp,duration,num_gpus,gpu_time,cluster\n2017-10-09 07:01:55,66.0,1,66.0,vc\n")
    assert _cli_error(["characterize", str(src), "-o", str(src)], capsys) == \
        f"error: -o {src}: is a file; the report is written as a folder"
    assert _cli_error(["characterize", str(src), "-o", str(src / "rep")], capsys) == \
        f"error: -o {src / 'rep'}: {src} is a file, not a folder"
    assert _cli_error(["characterize", str(src), "--memory-limit", "lots", "-o", str(tmp_path / "r")], capsys) == \
        "error: --memory-limit 'lots': expected a size such as 1GB, 512MB or 2GiB"
    # tests may run as root, where chmod would not bite: deny every write access instead
    monkeypatch.setattr("os.access", lambda path, mode: not mode & os.W_OK)
    assert _cli_error(["characterize", str(src), "-o", str(tmp_path / "a" / "rep")], capsys) == \
        f"error: -o {tmp_path / 'a' / 'rep'}: {tmp_path} is not writable"


def test_per_vc_panels_have_their_own_legends() -> None:
    """VC names differ per trace: one shared legend listed every VC of every trace with reused colours."""
    df = pl.DataFrame({"trace": ["A"] * 2 + ["B"] * 2, "vc": ["a1", "a2", "b1", "b2"],
                       "queue_delay": [1.0, 2.0, 3.0, 4.0], "p": [1.0] * 4})
    fig = plots.cdf(df, "queue_delay", "queueing delay (s)", group="trace", series="vc")
    assert fig.legends == []
    assert [[t.get_text() for t in ax.get_legend().get_texts()] for ax in fig.axes if ax.get_visible()] == \
        [["a1", "a2"], ["b1", "b2"]]


def test_plot_axes_stay_readable() -> None:
    zero = pl.DataFrame({"trace": ["A", "A"], "servers": ["1", "2"], "p50": [0.0, 0.0]})
    ax = plots.bars(zero, "servers", "p50", "median queueing delay (min)").axes[0]
    assert ax.get_ylim()[0] == 0  # not an axis centred on zero with negative delays
    months = [f"2017-{m:02d}" for m in range(1, 9)]
    df = pl.DataFrame({"trace": ["A"] * 8, "month": months, "jobs": list(range(8))})
    ax = plots.lines(df, "month", [("jobs", "jobs submitted")], "month", xticks=months).axes[0]
    assert {t.get_rotation() for t in ax.get_xticklabels()} == {45.0}


def test_report_explains_a_spec_that_names_other_vcs(tmp_path: Path) -> None:
    jobs = _jobs([("a", "vc1", 1, T0, T0, T0 + 3600, "completed")])
    trace = Trace(jobs, "test", cluster=ClusterSpec({"philly": (8, 8)}), source="t.csv")
    page = build_report([trace], tmp_path / "out").read_text(encoding="utf-8")
    blocks = dict(re.findall(r'<div class="card absent" id="([^"]+)"><h3>[^<]*</h3><p>Not shown: ([^<]*)</p>', page))
    assert blocks["cluster-vc-utilization"] == "t.csv: none of its VCs is in the cluster spec (spec VCs: philly)."
    definition = re.search(r'id="queueing-decomposition">.*?<b>Definition.</b>([^<]*)', page).group(1)
    assert "fair-share when" in definition and "*" not in definition
