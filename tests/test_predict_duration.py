"""Duration estimators: the leak-free history estimator, the oracle, and accuracy bands."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

from dlcluster.errors import ConfigError
from dlcluster.predict import (
    estimate_durations,
    estimates_quality,
    history_estimates,
    oracle_estimates,
)
from dlcluster.predict.duration import DEFAULT_SECONDS
from dlcluster.schema import conform


def _jobs(rows: list[tuple]) -> pl.DataFrame:
    """Rows (job_id, user, name, gpu_num, submit, end, duration) as a canonical table."""
    return conform(pl.DataFrame(rows, schema=["job_id", "user", "name", "gpu_num", "submit_time", "end_time",
                                              "duration"], orient="row").with_columns(
        pl.lit("c").alias("cluster"), pl.lit("v").alias("vc"), pl.lit("completed").alias("status")))


JOBS = _jobs([
    ("a", "u1", "train", 1, 0, 100, 100),
    ("b", "u1", "train", 1, 50, 350, 300),     # a has not ended at 50: no history at all
    ("c", "u1", "train", 1, 120, 200, 80),     # a ended at 100: same user, name and size -> 100
    ("d", "u1", "eval", 1, 360, 400, 40),      # no 'eval' history; user + 1 GPU: a, b, c -> 160
    ("e", "u1", "train", 8, 360, 460, 100),    # no 8-GPU history; same user: a, b, c -> 160
    ("f", "u2", "x", 1, 400, 500, 100),        # new user: everyone finished by 400: a, b, c, d -> 130
])


def test_history_takes_the_most_specific_group_known_at_submission() -> None:
    got = dict(history_estimates(JOBS).iter_rows())
    assert got == {"a": DEFAULT_SECONDS, "b": DEFAULT_SECONDS, "c": 100.0, "d": 160.0, "e": 160.0, "f": 130.0}


def test_history_never_sees_the_future() -> None:
    # changing how long jobs that end after f's submission ran cannot change f's estimate
    later = JOBS.with_columns(pl.when(pl.col("end_time") > 400).then(pl.col("duration") * 50)
                              .otherwise(pl.col("duration")).alias("duration"))
    assert dict(history_estimates(later).iter_rows())["f"] == dict(history_estimates(JOBS).iter_rows())["f"]


def test_a_job_that_ends_in_its_own_submission_second_is_learnt_after_that_seconds_submissions() -> None:
    """A zero-length job must not tell its own estimate, nor those of jobs submitted with it, its duration; a job
    submitted earlier that ends in that second does tell them."""
    same = _jobs([("a", "u1", "t", 1, 10, 70, 60), ("b", "u1", "t", 2, 10, 130, 120), ("z", "u1", "t", 1, 10, 10, 0),
                  ("c", "u1", "t", 1, 11, 71, 60)])
    got = dict(history_estimates(same).iter_rows())
    assert got == {"a": DEFAULT_SECONDS, "b": DEFAULT_SECONDS, "z": DEFAULT_SECONDS, "c": 0.0}
    earlier = _jobs([("y", "u1", "t", 1, 5, 10, 5), ("a", "u1", "t", 1, 10, 70, 60)])
    assert dict(history_estimates(earlier).iter_rows())["a"] == 5.0


def test_without_users_history_is_the_global_mean() -> None:
    anon = JOBS.with_columns(pl.lit(None, pl.String).alias("user"), pl.lit(None, pl.String).alias("name"))
    assert dict(history_estimates(anon).iter_rows())["f"] == 130.0


def test_oracle_and_accuracy_bands() -> None:
    assert estimates_quality(oracle_estimates(JOBS), JOBS, JOBS)["within_10"] == 1.0
    est = pl.DataFrame({"job_id": ["a", "b", "c", "d"], "estimate": [105.0, 600.0, 400.0, 1000.0]})
    acc = estimates_quality(est, JOBS, JOBS)  # errors: 5%, 100%, 400%, 2400%
    assert (acc["jobs"], acc["within_10"], acc["within_50"], acc["within_100"], acc["within_1000"]) == (
        4, 0.25, 0.25, 0.5, 0.75)
    assert acc["mdape"] == 2.5 and acc["mae"] == (5 + 300 + 320 + 960) / 4


def test_unknown_estimator() -> None:
    with pytest.raises(ConfigError, match="unknown estimator 'magic'"):
        estimate_durations(JOBS, "magic")


def test_cli_qssf_with_the_history_estimator(tmp_path: Path) -> None:
    from dlcluster.io.parquet import write
    from dlcluster.synth import generate, load_preset

    trace = generate(load_preset("helios-venus"), days=3, seed=5)
    write(trace, tmp_path / "t.parquet")
    out = tmp_path / "out"
    res = subprocess.run([sys.executable, "-m", "dlcluster", "simulate", str(tmp_path / "t.parquet"), "-p", "qssf",
                          "--estimates", "history", "-o", str(out)], check=False, capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    summary = json.loads((out / "summary.json").read_text())
    est = summary["estimates"]
    assert est["source"] == est["estimator"] == "history"
    simulated = pl.read_parquet(out / "jobs.parquet").filter(pl.col("status") == "completed")
    assert est["jobs"] == simulated.filter(pl.col("duration") > 0).height  # every simulated job, predicted online
    assert 0 <= est["within_10"] <= est["within_50"] <= est["within_100"] <= est["within_1000"] <= 1
    assert -1 <= est["kendall"] <= 1 and -1 <= est["spearman"] <= 1
    assert est["retrains"] == 0 and est["predict_seconds"] >= 0  # history learns from every end, never retrains


def test_cli_estimates_summary_only_for_policies_that_read_them(tmp_path: Path) -> None:
    from dlcluster.io.parquet import write
    from dlcluster.synth import generate, load_preset

    trace = generate(load_preset("helios-venus"), days=2, seed=6)
    write(trace, tmp_path / "t.parquet")
    est = tmp_path / "est.csv"
    oracle_estimates(trace.jobs).rename({"estimate": "duration"}).write_csv(est)
    out = tmp_path / "out"
    res = subprocess.run([sys.executable, "-m", "dlcluster", "simulate", str(tmp_path / "t.parquet"), "-p",
                          "fifo,qssf", "--estimates", str(est), "-o", str(out)], check=False, capture_output=True,
                         text=True)
    assert res.returncode == 0, res.stderr
    assert "estimates" not in json.loads((out / "fifo/summary.json").read_text())
    qssf = json.loads((out / "qssf/summary.json").read_text())["estimates"]
    assert qssf["source"] == str(est) and qssf["within_10"] == 1.0 and qssf["spearman"] == 1.0
    assert qssf["kendall"] is None  # fixed estimates: no SciPy import in the run
