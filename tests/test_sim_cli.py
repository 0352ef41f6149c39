"""``dlcluster simulate`` and ``dlcluster policies`` end to end."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest
from test_sim_helpers import SUMMARY_KEYS, cli, jobs, spec, write_trace


def _trace(tmp_path: Path, *extra: tuple) -> Path:
    table = jobs(("a", "v", 6, 1000, 10), ("b", "v", 4, 1001, 5), ("c", "v", 1, 1002, 1), ("d", "w", 2, 1003, 50),
                 *extra)
    return write_trace(tmp_path / "t.parquet", table, spec(v=(8,), w=(4, 4)))


def test_simulate_writes_three_outputs(tmp_path: Path) -> None:
    out = tmp_path / "out"
    res = cli("simulate", str(_trace(tmp_path)), "--policy", "fifo", "--csv", "-o", str(out))
    assert res.returncode == 0, res.stderr
    assert len((out / "jobs.csv").read_text().splitlines()) == 1 + 4
    summary = json.loads((out / "summary.json").read_text())
    assert summary["policy"] == "fifo" and summary["placement"] == "consolidate"
    assert SUMMARY_KEYS <= set(summary["overall"]) and set(summary["vcs"]) == {"v", "w"}
    assert all(SUMMARY_KEYS <= set(v) for v in summary["vcs"].values())
    assert summary["overall"]["jobs"] == 4 and isinstance(summary["wall_seconds"], float)
    table = pl.read_parquet(out / "jobs.parquet")
    assert dict(zip(table["job_id"], table["start"], strict=True)) == {"a": 1000, "b": 1010, "c": 1010, "d": 1003}
    assert pl.read_parquet(out / "timeline.parquet")["vc"].unique().sort().to_list() == ["v", "w"]
    assert not list(out.glob(".*.tmp"))  # atomic writes leave no temporaries


def test_outputs_are_byte_identical_across_runs(tmp_path: Path) -> None:
    trace = _trace(tmp_path)
    for name in ("one", "two"):
        assert cli("simulate", str(trace), "-p", "srtf", "-o", str(tmp_path / name)).returncode == 0
    for f in ("jobs.parquet", "timeline.parquet", "placements.parquet"):
        assert (tmp_path / "one" / f).read_bytes() == (tmp_path / "two" / f).read_bytes()


def test_summaries_are_the_same_bits_across_runs(tmp_path: Path) -> None:
    # (the fairness of a few thousand jobs' users came from Polars' parallel group_by: its last bits changed in about
    # one run of six)
    trace = tmp_path / "v.parquet"
    assert cli("synth", "--preset", "helios-venus", "--days", "3", "--seed", "1", "-o", str(trace)).returncode == 0

    def summary(name: str) -> dict:
        assert cli("simulate", str(trace), "-p", "fifo", "--load", "2", "-o", str(tmp_path / name)).returncode == 0
        doc = json.loads((tmp_path / name / "summary.json").read_text())
        for part in (doc, doc["overall"], *doc["vcs"].values()):
            for key in ("wall_seconds", "events_per_second"):  # (timings: the documented exceptions)
                part.pop(key, None)
        return doc

    first = summary("run0")
    assert all(summary(f"run{i}") == first for i in range(1, 6))


def test_several_policies_one_subfolder_each(tmp_path: Path) -> None:
    est = tmp_path / "est.csv"
    est.write_text("job_id,duration\na,10\nb,5\nc,1\nd,50\n")
    res = cli("simulate", str(_trace(tmp_path)), "-p", "fifo,sjf,qssf", "--estimates", str(est), "-o",
               str(tmp_path / "out"))
    assert res.returncode == 0, res.stderr
    for name in ("fifo", "sjf", "qssf"):
        assert json.loads((tmp_path / "out" / name / "summary.json").read_text())["policy"] == name
        assert name in res.stdout
    starts = pl.read_parquet(tmp_path / "out/sjf/jobs.parquet").filter(pl.col("job_id") == "c")["start"]
    assert starts.to_list() == [1002]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["-p", "lottery"], "error: unknown policy 'lottery'; choose one of: fifo, sjf, qssf, srtf, las, tiresias, fifo-easy, qssf-easy"),
        (["-p", "qssf"], "error: policy 'qssf' needs duration estimates (--estimates FILE, or --estimates history|lgbm|oracle)"),
        (["--load", "0"], "error: --load must be a positive finite number, got 0.0"),
        (["-p", "fifo,sjf,fifo"], "error: --policy: 'fifo' is named more than once"),
        (["--compat", "slurm"], "error: unknown compatibility mode 'slurm'; choose one of: helios-artifact"),
    ],
)
def test_bad_options_are_one_line_errors(tmp_path: Path, args: list[str], message: str) -> None:
    res = cli("simulate", str(_trace(tmp_path)), *args, "-o", str(tmp_path / "out"))
    assert res.returncode == 2
    assert res.stderr.strip() == message
    assert not (tmp_path / "out" / "summary.json").exists()


def test_missing_vc_fails_or_is_counted(tmp_path: Path) -> None:
    trace = _trace(tmp_path, ("e", "x", 1, 1004, 5))
    res = cli("simulate", str(trace), "-o", str(tmp_path / "out"))
    assert res.returncode == 2
    assert res.stderr.strip() == (f"error: {trace}, field 'vc': VC 'x' of job 'e' is not in the cluster spec "
                                  "(known: v, w); --pooled runs every job on the whole cluster as one VC, "
                                  "--skip-unknown-vcs counts such jobs as unschedulable")
    res = cli("simulate", str(trace), "--skip-unknown-vcs", "-o", str(tmp_path / "out"))
    assert res.returncode == 0, res.stderr
    summary = json.loads((tmp_path / "out/summary.json").read_text())
    assert summary["overall"]["unschedulable"] == 1
    assert summary["unschedulable_jobs"] == [{"job_id": "e", "vc": "x", "reason": "VC not in the cluster spec"}]


@pytest.mark.parametrize(("name", "text"), [("cluster_gpu_number.csv", "date,v,w,x,total\n2020-04-01,8,8,0,16\n"),
                                            ("vc_nodes.csv", "vc,nodes\nv,1\nw,1\nx,0\n")])
def test_a_vc_with_0_gpus_is_named_as_such_in_a_helios_and_a_vc_nodes_spec(tmp_path: Path, name: str,
                                                                             text: str) -> None:
    trace = _trace(tmp_path, ("e", "x", 1, 1004, 5))
    spec = tmp_path / name
    spec.write_text(text)
    res = cli("simulate", str(trace), "--cluster", str(spec), "-o", str(tmp_path / "out"))
    assert res.returncode == 2
    assert "VC 'x' of job 'e' has 0 GPUs in the cluster spec (known: v, w)" in res.stderr
    res = cli("simulate", str(trace), "--cluster", str(spec), "--skip-unknown-vcs", "-o", str(tmp_path / "out"))
    assert res.returncode == 0, res.stderr
    summary = json.loads((tmp_path / "out/summary.json").read_text())
    assert summary["unschedulable_jobs"] == [{"job_id": "e", "vc": "x", "reason": "VC has 0 GPUs in the cluster spec"}]


def test_names_that_look_like_markup_are_printed_as_they_are(tmp_path: Path) -> None:
    # rich read them as markup: 'x[/]' stopped the command with an internal error, '[gpu]' printed blank; a wide
    # name was cut short (its column sized in characters, not terminal cells)
    names = ("x[/]", "[gpu]", "team[a]", "研究组研究组")
    rows = "".join(f"j{i},{names[i % 4]},{1600000000 + 600 * i},1,{60 + 37 * i}\n" for i in range(40))
    (tmp_path / "t.csv").write_text("job_id,vc,submit_time,gpu_num,duration\n" + rows)
    (tmp_path / "c.csv").write_text("vc,nodes\n" + "".join(f"{n},1\n" for n in names))
    out = tmp_path / "sim[v2]"
    res = cli("simulate", str(tmp_path / "t.csv"), "--format", "csv", "--tz", "UTC", "--cluster",
              str(tmp_path / "c.csv"), "--by-vc", "-o", str(out))
    assert res.returncode == 0, res.stderr
    vcs = [line.split()[0] for line in res.stdout.splitlines() if line.split()[:1] and line.split()[0] in names]
    assert sorted(vcs) == sorted(names)
    assert f"wrote {out} (simulated in fifo" in res.stderr
    res = cli("predict", "eval", str(tmp_path / "t.csv"), "--format", "csv", "--tz", "UTC")
    assert res.returncode == 0, res.stderr
    assert all(f"│ {n} " in res.stdout for n in names)


def test_bad_estimates_file_names_the_line(tmp_path: Path) -> None:
    est = tmp_path / "est.csv"
    est.write_text("job_id,duration\na,10\nb,soon\n")
    res = cli("simulate", str(_trace(tmp_path)), "-p", "qssf", "--estimates", str(est), "-o", str(tmp_path / "o"))
    assert res.returncode == 2
    assert res.stderr.strip() == f"error: {est}, line 3, field 'duration': cannot parse 'soon' as a number of seconds"


def test_window_keeps_jobs_submitted_inside_it(tmp_path: Path) -> None:
    res = cli("simulate", str(_trace(tmp_path)), "--start", "1970-01-01 00:16:41", "--end", "1970-01-01 00:16:42",
               "-o", str(tmp_path / "out"))
    assert res.returncode == 0, res.stderr
    assert pl.read_parquet(tmp_path / "out/jobs.parquet")["job_id"].to_list() == ["b", "c"]


def test_policies_lists_policies_and_placements() -> None:
    res = cli("policies")
    assert res.returncode == 0
    for name in ("fifo", "sjf", "qssf", "srtf", "consolidate"):
        assert name in res.stdout


def test_philly_compat_run_from_the_command_line(tmp_path: Path, shared_data: Path, shared_reference: Path) -> None:
    res = cli("simulate", str(shared_data / "philly/jobs_processed.csv"), "--cluster",
               str(shared_data / "philly/vc_nodes.csv"), "--compat", "helios-artifact", "--start",
               "2017-10-01 00:00:00", "--end", "2017-11-30 23:59:00", "--skip-unknown-vcs", "-p", "sjf",
               "-o", str(tmp_path / "out"))
    assert res.returncode == 0, res.stderr
    summary = json.loads((tmp_path / "out/summary.json").read_text())
    ref = pl.read_csv(shared_reference / "philly-artifact/summary.csv", schema_overrides={"vc": pl.String})
    expected = ref.filter((pl.col("policy") == "sjf") & (pl.col("vc") == "all")).row(0, named=True)
    assert summary["overall"]["jobs"] == expected["n_jobs"]
    assert summary["overall"]["mean_jct"] == pytest.approx(expected["avg_jct"], rel=1e-12)
    assert summary["overall"]["mean_queue_delay"] == pytest.approx(expected["avg_queue"], rel=1e-12)


def test_jobs_without_a_duration_are_refused_or_left_out_with_lenient(tmp_path: Path) -> None:
    # two jobs still running when the trace was taken (no duration): one GPU job, one CPU job
    trace = _trace(tmp_path, ("e", "v", 2, 1004, None), ("f", "v", 0, 1005, None))
    refused = cli("simulate", str(trace), "-p", "fifo", "-o", str(tmp_path / "refused"))
    assert (refused.returncode, refused.stderr.strip().splitlines()) == (2, [
        f"error: {trace}, field 'duration': job 'e' has no duration; a simulation needs one for every GPU job "
        "(--lenient leaves out the 1 GPU job(s) without one)"])
    assert not (tmp_path / "refused").exists()
    out = tmp_path / "out"
    kept = cli("simulate", str(trace), "-p", "fifo", "--lenient", "-o", str(out))
    assert kept.returncode == 0, kept.stderr
    assert "left out 1 GPU job(s) without a duration or submit time" in kept.stderr
    assert sorted(pl.read_parquet(out / "jobs.parquet")["job_id"]) == ["a", "b", "c", "d"]


def test_lenient_with_no_simulable_job_left_is_an_error(tmp_path: Path) -> None:
    trace = write_trace(tmp_path / "t.parquet", jobs(("a", "v", 1, 1000, None)), spec(v=(8,)))
    res = cli("simulate", str(trace), "-p", "fifo", "--lenient", "-o", str(tmp_path / "out"))
    assert (res.returncode, res.stderr.strip()) == (
        2, f"error: {trace}: no GPU job has both a duration and a submit time (all 1 lack one): nothing to simulate")


def test_a_terminal_that_takes_only_ascii_gets_question_marks_not_a_crash(tmp_path: Path) -> None:
    # (PYTHONIOENCODING=ascii, or LC_ALL=C with PYTHONUTF8=0: "×" in the policies table, a VC named "vcé" in
    # simulate's, stopped the command with an internal error after its outputs were written)
    env = {**os.environ, "PYTHONIOENCODING": "ascii"}
    listing = subprocess.run([sys.executable, "-m", "dlcluster", "policies"], capture_output=True, env=env, check=False)
    assert listing.returncode == 0 and b"(estimate ? GPUs)" in listing.stdout
    trace = write_trace(tmp_path / "t.parquet", jobs(("a", "vcé", 1, 0, 10)), spec(**{"vcé": (8,)}))
    run = subprocess.run([sys.executable, "-m", "dlcluster", "simulate", str(trace), "--by-vc", "-o",
                          str(tmp_path / "out")], capture_output=True, env=env, check=False)
    assert run.returncode == 0, run.stderr
    assert b"vc?" in run.stdout and b"Traceback" not in run.stderr
