"""``dlcluster predict eval`` and ``dlcluster predict run`` end to end, and the evaluation library under them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from dlcluster.io.parquet import write
from dlcluster.predict.evaluate import calibration_absent, evaluate, write_outputs
from dlcluster.schema import conform
from dlcluster.synth import generate, load_preset
from dlcluster.trace import Trace

OUTPUTS = ("predictions.parquet", "metrics.csv", "calibration.svg", "calibration.png", "bands.svg", "bands.png")
DAY2 = "2020-04-02 00:00:00"  # Asia/Shanghai wall clock: 2020-04-01 16:00 UTC
DAY2_UTC = 1585756800


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    """Run ``dlcluster ARGS`` in a child process, capturing its output."""
    return subprocess.run([sys.executable, "-m", "dlcluster", *args], check=False, capture_output=True, text=True)


@pytest.fixture(scope="module")
def venus() -> Trace:
    """Three days of a synthetic Helios Venus: ~4,300 jobs (about half of them GPU jobs) on 23 VCs."""
    return generate(load_preset("helios-venus"), days=3, seed=5)


@pytest.fixture(scope="module")
def trace_file(venus: Trace, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write(venus, tmp_path_factory.mktemp("venus") / "venus.parquet")


@pytest.fixture(scope="module")
def evaluated(trace_file: Path, tmp_path_factory: pytest.TempPathFactory
              ) -> tuple[Path, subprocess.CompletedProcess[str]]:
    """``predict eval --estimator history --json -o OUT`` on the whole trace."""
    out = tmp_path_factory.mktemp("eval") / "out"
    return out, cli("predict", "eval", str(trace_file), "--estimator", "history", "--json", "-o", str(out))


def test_json_has_the_metrics_per_vc_and_overall(evaluated: tuple[Path, subprocess.CompletedProcess[str]],
                                                 venus: Trace) -> None:
    _, res = evaluated
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)  # stdout is the JSON object and nothing else
    assert {"jobs", "mae", "mdape", "within_10", "within_50", "within_100", "within_1000", "spearman", "kendall",
            "vcs", "estimator", "retrains", "train_seconds", "predict_seconds", "predict_us_per_job"} <= set(doc)
    assert doc["estimator"] == "history" and doc["retrains"] >= 0 and doc["predict_seconds"] >= 0
    gpu = venus.jobs.filter((pl.col("gpu_num") > 0) & (pl.col("duration") > 0))
    assert doc["jobs"] == gpu.height
    assert set(doc["vcs"]) == set(gpu["vc"].unique())
    assert sum(v["jobs"] for v in doc["vcs"].values()) == doc["jobs"]
    shares = [doc[f"within_{b}"] for b in (10, 50, 100, 1000)]
    assert all(0 <= s <= 1 for s in shares) and shares == sorted(shares)
    assert -1 <= doc["spearman"] <= 1 and -1 <= doc["kendall"] <= 1 and doc["mae"] > 0


def test_output_folder_holds_every_file_and_the_right_rows(evaluated: tuple[Path, subprocess.CompletedProcess[str]],
                                                           venus: Trace) -> None:
    out, res = evaluated
    assert res.returncode == 0, res.stderr
    assert sorted(p.name for p in out.iterdir()) == sorted(OUTPUTS)  # and no temporaries left behind
    preds = pl.read_parquet(out / "predictions.parquet")
    assert preds.columns == ["job_id", "submit_time", "estimate", "duration"]
    gpu = venus.jobs.filter(pl.col("gpu_num") > 0)
    assert sorted(preds["job_id"]) == sorted(gpu["job_id"])
    assert (preds["estimate"] >= 0).all()
    metrics = pl.read_csv(out / "metrics.csv")
    assert metrics["vc"][-1] is None and metrics["vc"][:-1].null_count() == 0
    assert metrics["jobs"][:-1].sum() == metrics["jobs"][-1]
    assert metrics["jobs"][-1] == json.loads(res.stdout)["jobs"]
    svg = (out / "calibration.svg").read_text()
    assert svg.lstrip().startswith("<?xml") and "<dc:date>" not in svg


def test_the_png_is_a_real_image(evaluated: tuple[Path, subprocess.CompletedProcess[str]]) -> None:
    import matplotlib.image

    out, _ = evaluated
    for name in ("calibration.png", "bands.png"):
        pixels = matplotlib.image.imread(out / name)
        assert pixels.shape[0] > 200 and pixels.shape[1] > 300
        assert pixels[..., :3].std() > 0.05  # something is drawn on the white page


def test_two_runs_are_byte_identical(trace_file: Path, tmp_path: Path) -> None:
    for name in ("one", "two"):
        res = cli("predict", "eval", str(trace_file), "-e", "history", "-o", str(tmp_path / name))
        assert res.returncode == 0, res.stderr
        assert "overall" in res.stdout and "retrains" in res.stdout
    for f in OUTPUTS:
        assert (tmp_path / "one" / f).read_bytes() == (tmp_path / "two" / f).read_bytes(), f


def test_oracle_is_perfect(trace_file: Path) -> None:
    res = cli("predict", "eval", str(trace_file), "--estimator", "oracle", "--json")
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)
    assert doc["within_10"] == 1 and doc["mae"] == 0
    assert all(doc[f"within_{b}"] == 1 for b in (50, 100, 1000))
    assert doc["spearman"] == 1 and doc["kendall"] == 1  # exactly: a perfect ranking prints as 1.0


def test_start_restricts_the_reported_jobs_but_not_the_history(trace_file: Path, venus: Trace, tmp_path: Path) -> None:
    res = cli("predict", "eval", str(trace_file), "--start", DAY2, "--json", "-o", str(tmp_path / "late"))
    assert res.returncode == 0, res.stderr
    late = venus.jobs.filter((pl.col("gpu_num") > 0) & (pl.col("duration") > 0) & (pl.col("submit_time") >= DAY2_UTC))
    assert 0 < json.loads(res.stdout)["jobs"] == late.height
    preds = pl.read_parquet(tmp_path / "late" / "predictions.parquet")
    assert preds["submit_time"].min() >= DAY2_UTC
    # the same predictions as on the whole trace: the earlier jobs were still learnt from
    whole = evaluate(venus.jobs, "history").predictions.select("job_id", "estimate")
    joined = preds.join(whole, on="job_id", suffix="_whole")
    assert joined.height == preds.height and (joined["estimate"] == joined["estimate_whole"]).all()


def test_no_prediction_before_t_depends_on_later_jobs(venus: Trace, tmp_path: Path) -> None:
    t = DAY2_UTC + 7 * 3600
    full = write(venus, tmp_path / "full.parquet")
    cut = write(venus.with_jobs(venus.jobs.filter(pl.col("submit_time") <= t)), tmp_path / "cut.parquet")
    for path, name in ((full, "full"), (cut, "cut")):
        assert cli("predict", "eval", str(path), "-e", "history", "-o", str(tmp_path / name)).returncode == 0
    before = {name: pl.read_parquet(tmp_path / name / "predictions.parquet").filter(pl.col("submit_time") < t)
              .sort("job_id") for name in ("full", "cut")}
    assert before["full"].height > 500
    assert before["full"].equals(before["cut"])


def test_a_job_still_running_is_predicted_but_never_learnt_from_nor_scored(venus: Trace, tmp_path: Path) -> None:
    # a trace taken while jobs ran records their time so far as a duration: not what they would run
    gpu = venus.jobs.filter(pl.col("gpu_num") > 0)
    running = pl.col("job_id").is_in(gpu["job_id"].gather_every(5).implode())
    taken = venus.with_jobs(venus.jobs.with_columns(
        pl.when(running).then(pl.lit("running")).otherwise(pl.col("status").cast(pl.String)).cast(venus.jobs["status"].dtype)
        .alias("status"), pl.when(running).then(1).otherwise(pl.col("duration")).alias("duration"),
        pl.when(running).then(None).otherwise(pl.col("end_time")).alias("end_time")))
    without = venus.with_jobs(venus.jobs.filter(~running))
    paths = {name: write(t, tmp_path / f"{name}.parquet") for name, t in (("taken", taken), ("without", without))}
    for name, path in paths.items():
        assert cli("predict", "eval", str(path), "-e", "history", "-o", str(tmp_path / name)).returncode == 0
    got, want = (pl.read_parquet(tmp_path / name / "predictions.parquet").sort("job_id") for name in paths)
    assert got.equals(want) and got.height == without.jobs.filter(pl.col("gpu_num") > 0).height
    # the running jobs keep an estimate (they may be simulated): the one made of the jobs ended before them
    est = tmp_path / "estimates.csv"
    assert cli("predict", "run", str(paths["taken"]), "-e", "history", "-o", str(est)).returncode == 0
    estimates = pl.read_csv(est, schema_overrides={"job_id": pl.String})
    assert estimates.height == gpu.height and estimates["duration"].is_finite().all()
    assert "note:" not in run_note(paths["taken"], tmp_path)
    # a job with no duration at all (pending) cannot be simulated: no estimate, and the command says so
    pending = pl.col("job_id").is_in(gpu["job_id"].gather_every(7).implode())
    waiting = venus.with_jobs(venus.jobs.with_columns(
        pl.when(pending).then(None).otherwise(pl.col("duration")).alias("duration"),
        *(pl.when(pending).then(None).otherwise(pl.col(c)).alias(c) for c in ("start_time", "end_time"))))
    n = gpu.filter(pending).height
    assert f"note: {n:,} GPU jobs without a duration (the simulator cannot run them) have no estimate" \
        in run_note(write(waiting, tmp_path / "waiting.parquet"), tmp_path)
    assert pl.read_csv(tmp_path / "notes.csv", schema_overrides={"job_id": pl.String}).height == gpu.height - n


def test_a_trace_of_running_jobs_is_predicted_but_not_scored(tmp_path: Path) -> None:
    # (predict run refused it: "no GPU job of the trace has a duration", which each of them had)
    trace = tmp_path / "allrun.csv"
    trace.write_text("job_id,vc,user,gpu_num,submit_time,start_time,duration,status\n"
                     "a,v1,u1,1,1600000000,1600000000,100,running\nb,v1,u1,1,1600000050,1600000050,200,running\n")
    res = cli("predict", "run", str(trace), "-f", "csv", "-o", str(tmp_path / "est.csv"))
    assert res.returncode == 0, res.stderr
    assert (tmp_path / "est.csv").read_text() == "job_id,duration\na,3600.0\nb,3600.0\n"
    res = cli("predict", "eval", str(trace), "-f", "csv")
    assert res.returncode == 2
    assert res.stderr.strip().splitlines()[-1] == (
        f"error: {trace}: no GPU job of the trace has ended (every one with a duration was still running or "
        "pending); there is nothing to score")


def run_note(trace: Path, tmp_path: Path) -> str:
    """``predict run`` of ``trace`` into tmp_path/notes.csv; its stderr."""
    res = cli("predict", "run", str(trace), "-e", "history", "-o", str(tmp_path / "notes.csv"))
    assert res.returncode == 0, res.stderr
    return " ".join(res.stderr.split())


def test_estimates_file_round_trips_through_simulate(trace_file: Path, venus: Trace, tmp_path: Path) -> None:
    est = tmp_path / "estimates.csv"
    res = cli("predict", "run", str(trace_file), "--estimator", "history", "-o", str(est))
    assert res.returncode == 0, res.stderr
    table = pl.read_csv(est, schema_overrides={"job_id": pl.String})
    assert table.columns == ["job_id", "duration"]
    assert table.height == venus.jobs.filter(pl.col("gpu_num") > 0).height
    sim = cli("simulate", str(trace_file), "-p", "qssf", "--estimates", str(est), "-o", str(tmp_path / "sim"))
    assert sim.returncode == 0, sim.stderr
    summary = json.loads((tmp_path / "sim" / "summary.json").read_text())
    assert summary["estimates"]["source"] == str(est) and summary["estimates"]["jobs"] > 0


@pytest.mark.parametrize("name", ["est.parquet", "est.csv.gz"])
def test_estimates_are_not_written_as_text_into_a_parquet_name(trace_file: Path, tmp_path: Path, name: str) -> None:
    # (CSV text went into est.parquet, which no Parquet reader could open, and plain text into est.csv.gz)
    res = cli("predict", "run", str(trace_file), "--estimator", "history", "-o", str(tmp_path / name))
    assert (res.returncode, res.stderr) == (2, f"error: --output {tmp_path / name}: estimates are written "
                                               "as CSV (job_id,duration); name the file .csv\n")
    assert not (tmp_path / name).exists()


def test_degenerate_windows_write_no_figure_and_say_why(trace_file: Path, tmp_path: Path) -> None:
    # into the folder of an earlier run that drew them: its figures go (they stayed beside the new tables)
    assert cli("predict", "eval", str(trace_file), "-o", str(tmp_path / "empty")).returncode == 0
    assert (tmp_path / "empty" / "calibration.svg").exists()
    res = cli("predict", "eval", str(trace_file), "--start", "2030-01-01", "-o", str(tmp_path / "empty"))
    assert res.returncode == 0, res.stderr
    assert "calibration.svg/.png not written: no job with a positive duration" in res.stderr
    assert sorted(p.name for p in (tmp_path / "empty").iterdir()) == ["metrics.csv", "predictions.parquet"]
    assert pl.read_parquet(tmp_path / "empty" / "predictions.parquet").height == 0
    assert "note: no job was scored: no GPU job with a duration was submitted from 2030-01-01" in res.stderr


def test_a_window_of_zero_length_jobs_says_why_nothing_is_scored(tmp_path: Path) -> None:
    trace = tmp_path / "z.csv"
    trace.write_text("job_id,vc,submit_time,gpu_num,duration\na,v,1600000000,2,0\nb,v,1600000100,1,0\n")
    res = cli("predict", "eval", str(trace), "--format", "csv", "--tz", "UTC", "--json")
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["vcs"]["v"]["jobs"] == 0  # the VC has jobs in the window, none scored
    assert res.stderr.strip() == ("note: no job was scored: the 2 GPU job(s) with a duration all lasted 0 s "
                                  "(a zero-length job has no relative error)")


def test_all_equal_durations_skip_the_calibration_plot(tmp_path: Path) -> None:
    n = 40
    jobs = conform(pl.DataFrame({
        "job_id": [f"j{i}" for i in range(n)], "cluster": "c", "vc": ["a", "b"] * (n // 2), "user": "u",
        "gpu_num": 1, "submit_time": 1_600_000_000 + 100 * np.arange(n), "duration": 60,
        "end_time": 1_600_000_060 + 100 * np.arange(n), "status": "completed",
    }))
    result = evaluate(jobs, "history")
    assert result.overall["jobs"] == n and result.overall["spearman"] is None  # constant: no rank correlation
    assert calibration_absent(result.predictions) == "all 40 jobs ran 60 s, so the plot would be a single column"
    written, notes = write_outputs(result, tmp_path)
    assert [p.name for p in written] == ["predictions.parquet", "metrics.csv", "bands.svg", "bands.png"]
    assert len(notes) == 1 and notes[0].startswith("calibration.svg/.png not written")


def test_a_vc_named_overall_is_not_taken_for_the_whole_trace(tmp_path: Path) -> None:
    n = 40
    jobs = conform(pl.DataFrame({
        "job_id": [f"j{i}" for i in range(n)], "cluster": "c", "vc": ["overall", "b"] * (n // 2), "user": "u",
        "gpu_num": 1, "submit_time": 1_600_000_000 + 100 * np.arange(n), "duration": 60 + 10 * np.arange(n),
        "end_time": 1_600_000_060 + 110 * np.arange(n), "status": "completed",
    }))
    result = evaluate(jobs, "history")
    assert sorted(result.vcs) == ["b", "overall"] and result.vcs["overall"]["jobs"] == n // 2
    assert result.overall["jobs"] == n
    write_outputs(result, tmp_path)
    metrics = pl.read_csv(tmp_path / "metrics.csv")
    assert metrics["vc"].to_list() == ["b", "overall", None] and metrics["jobs"].to_list() == [n // 2, n // 2, n]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--estimator", "crystal-ball"], "error: unknown estimator 'crystal-ball'; choose one of: history, oracle, "),
        (["--start", "next tuesday"], "error: --start 'next tuesday': expected a time like 2017-10-01 00:00:00"),
    ],
)
def test_bad_options_are_one_line_errors(trace_file: Path, args: list[str], message: str) -> None:
    res = cli("predict", "eval", str(trace_file), *args)
    assert res.returncode == 2 and not res.stdout
    assert res.stderr.startswith(message) and res.stderr.count("\n") == 1  # one line


def test_a_trace_without_durations_is_a_one_line_error(venus: Trace, tmp_path: Path) -> None:
    path = write(venus.with_jobs(venus.jobs.with_columns(pl.lit(None, pl.Int64).alias("duration"))),
                 tmp_path / "none.parquet")
    for command in (["eval"], ["run", "-o", str(tmp_path / "e.csv")]):
        res = cli("predict", *command, str(path))
        assert res.returncode == 2, res.stderr
        assert res.stderr.strip() == f"error: {path}: no GPU job of the trace has a duration; there is nothing to " \
                                     "predict"
    assert not (tmp_path / "e.csv").exists()


def test_spearman_equals_scipys_with_ties_and_missing_estimates() -> None:
    """The rank correlation of GPU time is SciPy's Spearman, ties given their mean rank, over the finite estimates."""
    from scipy.stats import spearmanr

    from dlcluster.predict.metrics import prediction_metrics

    rng = np.random.default_rng(3)
    duration = rng.integers(1, 50, 5_000).astype(np.float64)  # many ties
    estimate = np.round(duration * rng.lognormal(0, 0.7, 5_000), -1)  # ties too, and zeros
    estimate[::97] = np.nan
    gpus = rng.choice([1, 2, 4, 8], 5_000).astype(np.float64)
    keep = np.isfinite(estimate)
    expected = spearmanr(estimate[keep] * gpus[keep], duration[keep] * gpus[keep]).statistic
    assert prediction_metrics(estimate, duration, gpus, kendall=False)["spearman"] == round(float(expected), 12)
