"""Issue 12, item 2: ``dlcluster report`` of simulation runs, end to end and on hand-made run folders."""

from __future__ import annotations

import html
import json
import re
import shlex
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from test_sim_helpers import cli

from dlcluster.cli import main
from dlcluster.report.runs import read_runs
from dlcluster.report.sim_build import build_sim_report
from dlcluster.report.sim_sections import time_unit

ROOT = Path(__file__).resolve().parents[1]
FIGURES = ["sim-jct-cdf", "sim-queue-cdf", "sim-vc-queue", "sim-vc-utilization", "sim-timeline-running-gpus",
           "sim-timeline-pending-gpus", "sim-timeline-running-jobs", "sim-timeline-pending-jobs", "sim-preemptions",
           "sim-vs-observed"]


def figure_ids(page: str) -> list[str]:
    return re.findall(r'<figure class="report-figure" id="([^"]+)"', page)


def absent(page: str) -> dict[str, str]:
    return dict(re.findall(r'<div class="card absent" id="([^"]+)"><h3>[^<]*</h3><p>Not shown: ([^<]*)</p>', page))


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two days of a Venus-like trace (real queueing), run under fifo and srtf at load 1 and fifo at load 2."""
    base = tmp_path_factory.mktemp("simreport")
    main(["synth", "--preset", "helios-venus", "--days", "2", "--seed", "1", "-o", str(base / "venus.parquet")])
    main(["simulate", str(base / "venus.parquet"), "--policy", "fifo,srtf", "-o", str(base / "sim")])
    main(["simulate", str(base / "venus.parquet"), "--policy", "fifo", "--load", "2", "-o", str(base / "load2")])
    return base


def _report_args(runs: Path, out: Path) -> list[str]:
    return ["report", str(runs / "sim"), str(runs / "load2"), "--trace", str(runs / "venus.parquet"), "-o", str(out)]


@pytest.fixture(scope="module")
def report(runs: Path) -> Path:
    """The report of the three runs, compared with the trace."""
    main(_report_args(runs, runs / "report"))
    return runs / "report"


def test_report_of_runs_draws_every_figure(runs: Path, report: Path) -> None:
    page = (report / "index.html").read_text(encoding="utf-8")
    assert figure_ids(page) == FIGURES
    for fid in FIGURES:
        assert (report / "figures" / f"{fid}.png").stat().st_size > 1000
        assert pl.read_csv(report / "tables" / f"{fid}.csv").height > 0
    overview = pl.read_csv(report / "tables" / "sim-runs.csv")
    assert overview["run"].to_list() == ["fifo", "srtf", "load2"]
    fifo = json.loads((runs / "sim" / "fifo" / "summary.json").read_text())["overall"]
    assert overview["mean queueing (h)"][0] == pytest.approx(fifo["mean_queue_delay"] / 3600)
    # self-contained: nothing that would load from anywhere
    assert not re.search(r'(?:src|href)="(?!#)', page) and "http" not in page


def test_cli_says_where_it_wrote(runs: Path, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    main(["report", str(runs / "sim" / "srtf"), "-o", str(tmp_path / "rep")])
    assert capsys.readouterr().err.strip() == f"wrote {tmp_path / 'rep' / 'index.html'}"


def test_per_vc_bars_are_the_summary_values(runs: Path, report: Path) -> None:
    table = pl.read_csv(report / "tables" / "sim-vc-queue.csv")
    srtf = json.loads((runs / "sim" / "srtf" / "summary.json").read_text())["vcs"]
    rows = table.filter(pl.col("run") == "srtf")
    assert sorted(rows["vc"].to_list()) == sorted(srtf)
    for r in rows.iter_rows(named=True):
        assert r["p99_queue_delay"] == pytest.approx(srtf[r["vc"]]["p99_queue_delay"])
        assert r["jobs"] == srtf[r["vc"]]["jobs"]


def test_queueing_cdf_is_the_runs_own(runs: Path, report: Path) -> None:
    cdf = pl.read_csv(report / "tables" / "sim-queue-cdf.csv").filter(pl.col("run") == "fifo")
    jobs = pl.read_parquet(runs / "sim" / "fifo" / "jobs.parquet").drop_nulls("start")
    assert cdf["seconds"].max() == jobs["queue_delay"].max()
    # at the median delay the curve holds the share of jobs that waited no longer
    med = float(jobs["queue_delay"].median())
    at = cdf.filter(pl.col("seconds") <= med)["p"].max()
    assert at == pytest.approx((jobs["queue_delay"] <= med).mean(), abs=1 / 200 + 1e-9)


def test_observed_queueing_is_compared_only_at_the_traces_own_rate(runs: Path, report: Path) -> None:
    page = (report / "index.html").read_text(encoding="utf-8")
    assert "Runs at another arrival rate are not comparable with the observed waits: load2 (load 2.0)." in page
    table = pl.read_csv(report / "tables" / "sim-vs-observed.csv")
    assert set(table["run"]) == {"fifo", "srtf"}
    trace = pl.read_parquet(runs / "venus.parquet").filter(pl.col("gpu_num") > 0)
    expected = trace.group_by("vc").agg(pl.col("queue_delay").cast(pl.Float64).mean()).sort("vc")
    observed = table.filter((pl.col("run") == "fifo") & (pl.col("source") == "observed")).sort("vc")
    assert observed["vc"].to_list() == expected["vc"].to_list()
    assert observed["mean"].to_list() == pytest.approx(expected["queue_delay"].to_list())


def test_same_runs_give_byte_identical_reports(runs: Path, report: Path, tmp_path: Path) -> None:
    main(_report_args(runs, tmp_path / "again"))
    assert (tmp_path / "again" / "index.html").read_bytes() == (report / "index.html").read_bytes()
    for f in ("sim-timeline-running-gpus.png", "sim-vc-queue.png", "sim-vs-observed.svg"):
        assert (tmp_path / "again" / "figures" / f).read_bytes() == (report / "figures" / f).read_bytes()


def test_degenerate_observed_queueing_is_not_compared(runs: Path, tmp_path: Path) -> None:
    main(["synth", "--preset", "philly", "--days", "1", "--seed", "2", "-o", str(tmp_path / "p.parquet")])
    main(["simulate", str(tmp_path / "p.parquet"), "--policy", "fifo", "-o", str(tmp_path / "run")])
    main(["report", str(tmp_path / "run"), "--trace", str(tmp_path / "p.parquet"), "-o", str(tmp_path / "rep")])
    page = (tmp_path / "rep" / "index.html").read_text(encoding="utf-8")
    assert absent(page)["sim-vs-observed"].startswith("p.parquet: every queueing delay is 0 (a generated trace")


def test_a_trace_that_is_not_the_runs_own_is_not_compared(runs: Path, tmp_path: Path) -> None:
    # another seed numbers its jobs alike: they were matched by id and drawn as if observed
    other = tmp_path / "venus-seed2.parquet"
    main(["synth", "--preset", "helios-venus", "--days", "2", "--seed", "2", "-o", str(other)])
    main(["report", str(runs / "sim"), "--trace", str(other), "-o", str(tmp_path / "rep")])
    page = html.unescape((tmp_path / "rep" / "index.html").read_text(encoding="utf-8"))
    why = absent(page)["sim-vs-observed"]
    assert why.startswith("Not compared: fifo: its job '0' ran in VC ") and why.endswith(
        ": the trace is not the one it replayed.")
    assert why.count("Not compared:") == 2  # fifo and srtf


def _hand_run(folder: Path, queue: int, preemptions: int = 0) -> Path:
    """A run folder of 40 one-GPU jobs in VC a, each waiting about ``queue`` seconds (0 when 0) and running 300 to
    690 s (a CDF of one value would be named, not drawn); no timeline."""
    folder.mkdir(parents=True)
    n = 40
    submit = [600 * i for i in range(n)]
    wait = [queue + (i % 3) * 60 if queue else 0 for i in range(n)]
    run = [300 + 10 * i for i in range(n)]
    pl.DataFrame({"job_id": [str(i) for i in range(n)], "vc": "a", "gpu_num": 1, "submit": submit,
                  "start": [s + w for s, w in zip(submit, wait)], "end": [s + w + r for s, w, r in zip(submit, wait, run)],
                  "queue_delay": wait, "jct": [w + r for w, r in zip(wait, run)],
                  "preemptions": preemptions}).write_parquet(
        folder / "jobs.parquet")
    vc = {"jobs": n, "mean_queue_delay": queue, "p99_queue_delay": queue, "utilization": 0.1, "preemptions": 0,
          "gpus": 8}
    (folder / "summary.json").write_text(json.dumps({"policy": "fifo", "placement": "consolidate", "load": 1.0,
                                                     "overall": {**vc, "mean_jct": queue + 300}, "vcs": {"a": vc}}))
    return folder


def test_runs_where_nobody_waited_draw_no_queueing_figure(tmp_path: Path) -> None:
    page = build_sim_report(read_runs([_hand_run(tmp_path / "a", 0), _hand_run(tmp_path / "b", 0)]),
                            tmp_path / "out").read_text(encoding="utf-8")
    why = absent(page)
    assert why["sim-queue-cdf"] == ("no job waited in any run (every queueing delay is 0), so there is no queueing "
                                    "to show.")
    assert why["sim-vc-queue"] == "no job waited in any VC of any run."
    assert why["sim-preemptions"] == "no run preempted any job (only preemptive policies, such as srtf, do)."
    assert why["sim-vs-observed"] == "no trace given (pass --trace TRACE)."
    assert why["sim-energy"] == ("no run modelled power (simulate --power on, or --power ces to power idle nodes "
                                 "down).")
    assert "sim-jct-cdf" in figure_ids(page)
    # a section with nothing to show is folded to one line with its reason
    assert re.search(r'<section id="timeline">.*?<summary>Nothing to show: no run folder holds a timeline.parquet.'
                     r'</summary>', page, re.DOTALL)


def _one_job_report(tmp_path: Path, gpus: int, seconds: int, policies: str) -> str:
    """The report page of ``policies`` run on one job of ``gpus`` GPUs and ``seconds`` on an 8-GPU node."""
    (tmp_path / "one.csv").write_text(f"job_id,vc,gpu_num,submit_time,duration\n1,a,{gpus},0,{seconds}\n")
    (tmp_path / "vc.csv").write_text("vc,nodes,gpus_per_node\na,1,8\n")
    main(["simulate", str(tmp_path / "one.csv"), "--format", "csv", "--cluster", str(tmp_path / "vc.csv"),
          "-p", policies, "-o", str(tmp_path / "sim")])
    return build_sim_report(read_runs([tmp_path / "sim"]), tmp_path / "out").read_text(encoding="utf-8")


def test_runs_shorter_than_an_hour_get_a_sentence_not_an_empty_timeline(tmp_path: Path) -> None:
    # one 100-second job: each run's timeline is one hourly bin, which a line cannot draw (an empty axis before)
    why = absent(_one_job_report(tmp_path, gpus=1, seconds=100, policies="fifo,sjf"))
    for col in ("running-gpus", "pending-gpus", "running-jobs", "pending-jobs"):
        assert why[f"sim-timeline-{col}"] == ("every run lasted less than an hour, one time bin: there is no course "
                                              "over time to draw.")
    # one job: one JCT per run, a single vertical step
    assert why["sim-jct-cdf"] == ("fifo: every job completion time is 100 s, a single step: no CDF. sjf: every job "
                                  "completion time is 100 s, a single step: no CDF.")


def test_a_one_hour_run_gets_a_sentence_not_a_slope_between_two_hourly_points(tmp_path: Path) -> None:
    # a 2-GPU job of one hour: its timeline's hourly bins are 0 (2 GPUs) and 1 (the last sample, 0), which a line
    # joined as a gradual release
    page = _one_job_report(tmp_path, gpus=2, seconds=3600, policies="fifo")
    why = absent(page)
    assert why["sim-timeline-running-gpus"] == ("every run lasted less than two hours, two time bins: a line between "
                                                "two hourly means would suggest a gradual change the run need not "
                                                "have had.")
    assert why["sim-jct-cdf"] == "sim: every job completion time is 3,600 s, a single step: no CDF."
    assert not {"sim-jct-cdf", "sim-timeline-running-gpus"} & set(figure_ids(page))


def test_a_run_none_of_whose_vcs_is_among_the_busiest_drawn_leaves_the_others_drawn(tmp_path: Path) -> None:
    # 13 VCs in all (11, the pooled one, and one): the one-job run's VC is not among the 12 busiest (the report
    # stopped with a TypeError)
    (tmp_path / "one.csv").write_text("job_id,vc,gpu_num,submit_time,duration\n1,lone,1,0,100\n")
    (tmp_path / "vc.csv").write_text("vc,nodes,gpus_per_node\nlone,1,8\n")
    main(["simulate", str(tmp_path / "one.csv"), "--format", "csv", "--cluster", str(tmp_path / "vc.csv"),
          "-o", str(tmp_path / "lone")])
    main(["synth", "--preset", "philly", "--days", "2", "--seed", "1", "-o", str(tmp_path / "p.parquet")])
    main(["simulate", str(tmp_path / "p.parquet"), "-o", str(tmp_path / "philly")])
    main(["simulate", str(tmp_path / "p.parquet"), "--pooled", "-o", str(tmp_path / "pooled")])
    page = build_sim_report(read_runs([tmp_path / "philly", tmp_path / "pooled", tmp_path / "lone"]),
                            tmp_path / "out").read_text(encoding="utf-8")
    assert "sim-timeline-running-gpus" in figure_ids(page)


def test_a_long_legend_wraps_inside_its_figure() -> None:
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    from dlcluster.report import plots

    names = ["fifo", "fifo-easy", "las", "sjf", "srtf", "tiresias"]
    df = pl.DataFrame({"trace": [n for n in names for _ in range(3)], "jct": [1.0, 10.0, 100.0] * len(names),
                       "p": [1 / 3, 2 / 3, 1.0] * len(names)})
    fig = plots.cdf(df, "jct", "job completion time (s)")
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    box, page = fig.legends[0].get_window_extent(canvas.get_renderer()), fig.bbox
    assert page.x0 <= box.x0 and box.x1 <= page.x1  # six names on a one-panel figure: two rows, not cut off
    assert fig.legends[0]._ncols < len(names)


def test_one_run_without_waits_among_others_is_named(tmp_path: Path) -> None:
    page = build_sim_report(read_runs([_hand_run(tmp_path / "a", 0), _hand_run(tmp_path / "b", 900)]),
                            tmp_path / "out").read_text(encoding="utf-8")
    assert "sim-queue-cdf" in figure_ids(page)
    assert '<p class="check">a: no job waited (a step at 1 s).</p>' in page


def test_the_energy_section_shows_the_runs_that_modelled_power(runs: Path, tmp_path: Path) -> None:
    """CES and always-on runs beside a run without power: the table is their summaries' figures, the timeline
    panel the CES run's busy nodes under its powered ones."""
    main(["simulate", str(runs / "venus.parquet"), "--policy", "fifo", "--power", "ces", "-o", str(tmp_path / "ces")])
    main(["simulate", str(runs / "venus.parquet"), "--policy", "fifo", "--power", "on", "-o", str(tmp_path / "on")])
    page = build_sim_report(read_runs([tmp_path / "ces", tmp_path / "on", runs / "sim" / "fifo"]),
                            tmp_path / "out").read_text(encoding="utf-8")
    table = pl.read_csv(tmp_path / "out" / "tables" / "sim-energy.csv")
    assert table["run"].to_list() == ["ces", "on"]
    for run in ("ces", "on"):
        energy = json.loads((tmp_path / run / "summary.json").read_text())["energy"]
        row = table.filter(pl.col("run") == run).row(0, named=True)
        assert (row["energy kWh"], row["saved %"], row["wake-ups"]) == pytest.approx(
            (energy["energy_kwh"], energy["saved_pct"], energy["wakeups"]), rel=1e-9)
    assert table.filter(pl.col("run") == "ces")["saved %"][0] > 0
    assert '<p class="check">No power modelled in: fifo.</p>' in page
    assert "sim-powered-nodes" in figure_ids(page)
    nodes = pl.read_csv(tmp_path / "out" / "tables" / "sim-powered-nodes.csv")
    assert nodes["run"].unique().to_list() == ["ces"]  # the always-on run changed no node's state
    assert (nodes["powered"] >= nodes["busy"]).all() and nodes["busy"].max() > 0
    # the first bin is the mean of the cluster's per-sample sums: powered = on + booting, busy = holding a job
    timeline = pl.read_parquet(tmp_path / "ces" / "timeline.parquet")
    lit = [c for c in ("nodes_on", "nodes_booting") if c in timeline.columns]
    per_sample = timeline.group_by("time").agg(pl.sum_horizontal(*lit).sum().alias("powered"),
                                                pl.col("nodes_busy").sum().alias("busy")).sort("time")
    nodes = nodes.sort("hour")
    first = per_sample.filter(pl.col("time") < per_sample["time"][0] + (nodes["hour"][1] - nodes["hour"][0]) * 3600)
    assert (nodes["powered"][0], nodes["busy"][0]) == pytest.approx((first["powered"].mean(), first["busy"].mean()))
    assert nodes["powered"][0] > nodes["busy"][0]


def _report_error(folder: Path, out: Path, capsys: pytest.CaptureFixture) -> str:
    """``report FOLDER -o OUT``'s one-line error (it exits with status 2)."""
    with pytest.raises(SystemExit) as err:
        main(["report", str(folder), "-o", str(out)])
    assert err.value.code == 2
    return capsys.readouterr().err.strip()


def test_bad_run_folders_are_one_line_errors(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    (tmp_path / "empty").mkdir()
    assert _report_error(tmp_path / "empty", tmp_path / "rep", capsys) == (
        f"error: {tmp_path / 'empty'}: no simulation run here: neither it nor a folder inside it holds summary.json "
        "and jobs.parquet (written by dlcluster simulate -o)")
    run = _hand_run(tmp_path / "run", 5)
    pl.read_parquet(run / "jobs.parquet").drop("jct").write_parquet(run / "jobs.parquet")
    assert _report_error(run, tmp_path / "rep", capsys) == (
        f"error: {run / 'jobs.parquet'}: missing column 'jct' (need job_id, vc, gpu_num, submit, start, end, "
        "queue_delay, jct)")
    assert not (tmp_path / "rep").exists()
    # a column of text where numbers belong (an internal error when summed)
    run = _hand_run(tmp_path / "text", 5)
    pl.read_parquet(run / "jobs.parquet").with_columns(pl.col("queue_delay").cast(pl.String)).write_parquet(
        run / "jobs.parquet")
    assert _report_error(run, tmp_path / "rep", capsys) == (
        f"error: {run / 'jobs.parquet'}, field 'queue_delay': column 'queue_delay' holds String, not numbers")
    # a power run's timeline without its busy nodes (an internal error in the energy section)
    run = _hand_run(tmp_path / "power", 5)
    pl.DataFrame({c: [0] for c in ("time", "total_gpus", "idle_gpus", "pending_gpus", "running_jobs", "pending_jobs",
                                   "nodes_on")}).with_columns(vc=pl.lit("a")).write_parquet(run / "timeline.parquet")
    assert _report_error(run, tmp_path / "rep", capsys) == (
        f"error: {run / 'timeline.parquet'}: missing column 'nodes_busy' (need time, vc, total_gpus, idle_gpus, "
        "pending_gpus, running_jobs, pending_jobs, nodes_on, nodes_busy)")


def test_a_folder_of_runs_takes_multi_policy_outputs_and_names_a_damaged_run(
        tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    # runs/a, and runs/multi/{fifo,srtf} as simulate -p fifo,srtf writes them: the multi-policy runs were left out
    for folder in ("a", "multi/fifo", "multi/srtf"):
        _hand_run(tmp_path / "runs" / folder, 5)
    (tmp_path / "runs" / ".a.partial").mkdir()  # (a hidden folder is no run, whatever it holds)
    (tmp_path / "runs" / ".a.partial" / "summary.json").write_text("{}")
    main(["report", str(tmp_path / "runs"), "-o", str(tmp_path / "rep")])
    assert pl.read_csv(tmp_path / "rep/tables/sim-runs.csv")["run"].to_list() == ["a", "fifo", "srtf"]
    assert capsys.readouterr().err == f"wrote {tmp_path / 'rep' / 'index.html'}\n"
    # a run that lost its jobs table was left out without a word, inside a folder of runs or two levels in
    for damaged in ("b", "multi/srtf"):
        run = _hand_run(tmp_path / damaged / "runs" / damaged, 5)
        (run / "jobs.parquet").unlink()
        for given in (tmp_path / damaged / "runs", run):
            with pytest.raises(SystemExit) as err:
                main(["report", str(given), "-o", str(tmp_path / "rep2")])
            assert err.value.code == 2
            assert capsys.readouterr().err.strip() == (
                f"error: {run}: a run folder without its jobs.parquet (written by dlcluster simulate -o)")
    assert not (tmp_path / "rep2").exists()


@pytest.mark.parametrize(("change", "field", "message"), [
    # (it stopped the report: internal error: TypeError: unsupported operand type(s) for /: 'str' and 'int')
    (lambda s: s["overall"].update(mean_jct="abc"), "overall.mean_jct", "expected a number or null, got 'abc'"),
    (lambda s: s["vcs"]["a"].update(utilization=True), "vcs.a.utilization", "expected a number or null, got True"),
    (lambda s: s["vcs"]["a"].update(jobs=10**30), "vcs.a.jobs",
     "1000000000000000000000000000000 is out of range (a whole number within 64 bits)"),
    # (counts of 2.9 were shown as 2 per VC and 4.6 overall)
    (lambda s: s["vcs"]["a"].update(jobs=2.9), "vcs.a.jobs", "expected a count (a whole number, 0 or more), got 2.9"),
    (lambda s: s["overall"].update(preemptions=-1), "overall.preemptions",
     "expected a count (a whole number, 0 or more), got -1"),
    (lambda s: s["vcs"].update(a=5), "vcs.a", "expected an object, got 5"),
    (lambda s: s.update(vcs=[1]), "vcs", "expected an object, got [1]"),
    (lambda s: s.update(energy="x"), "energy", "expected an object, got 'x'"),
    (lambda s: s.update(energy={"energy_kwh": "x"}), "energy.energy_kwh", "expected a number or null, got 'x'"),
    (lambda s: s.update(load="x"), "load", "expected a number or null, got 'x'"),
    (lambda s: s.update(policy=["fifo"]), "policy", "expected text or null, got ['fifo']"),
    # (NaN and Infinity, which Python's json reads, showed as NaN and inf in the tables)
    (lambda s: s["overall"].update(mean_jct=float("inf")), "overall.mean_jct",
     "expected a finite number or null, got inf"),
    (lambda s: s["vcs"]["a"].update(utilization=float("nan")), "vcs.a.utilization",
     "expected a finite number or null, got nan"),
])
def test_a_summary_value_of_the_wrong_type_is_a_one_line_error(tmp_path: Path, capsys: pytest.CaptureFixture,
                                                              change: Any, field: str, message: str) -> None:
    run = _hand_run(tmp_path / "run", 5)
    summary = json.loads((run / "summary.json").read_text())
    change(summary)
    (run / "summary.json").write_text(json.dumps(summary))
    with pytest.raises(SystemExit) as err:
        main(["report", str(run), "-o", str(tmp_path / "rep")])
    assert err.value.code == 2
    assert capsys.readouterr().err.strip() == f"error: {run / 'summary.json'}, field '{field}': {message}"
    assert not (tmp_path / "rep").exists()


def test_null_figures_are_figures_not_measured(tmp_path: Path) -> None:
    run = _hand_run(tmp_path / "run", 5)
    summary = json.loads((run / "summary.json").read_text())
    summary["overall"]["mean_jct"] = summary["vcs"]["a"]["utilization"] = summary["load"] = None
    (run / "summary.json").write_text(json.dumps({**summary, "energy": None}))
    main(["report", str(run), "-o", str(tmp_path / "rep")])
    assert (tmp_path / "rep" / "index.html").is_file()

def test_time_units_read_as_people_read_them() -> None:
    assert [time_unit(s) for s in (30, 600, 4 * 3600, 5 * 86400)] == [("s", 1), ("min", 60), ("h", 3600),
                                                                     ("d", 86400)]


def _demo_commands() -> list[list[str]]:
    """The ``dlcluster`` commands of the Makefile's demo target, with ``$(BIN)/`` dropped."""
    text = (ROOT / "Makefile").read_text(encoding="utf-8").replace("\\\n", " ")
    body = text.split("\ndemo:", 1)[1].split("\n\n", 1)[0]
    return [shlex.split(line.strip().removeprefix("$(BIN)/dlcluster ")) for line in body.splitlines()
            if line.strip().startswith("$(BIN)/dlcluster ")]


def test_demo_report_shows_the_simulated_runs_queueing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The demo's commands that make its simulation report: that report has non-degenerate queueing figures."""
    commands = [c for c in _demo_commands() if c[0] in ("synth", "simulate", "report")]
    assert [c[0] for c in commands] == ["synth", "simulate", "report"], commands
    monkeypatch.chdir(tmp_path)
    for args in commands:
        if "--estimates" in args:  # the trained estimator is the slow part; the oracle keeps the policies' inputs
            args[args.index("--estimates") + 1] = "oracle"
        main(args)
    report = tmp_path / next(c[c.index("-o") + 1] for c in commands if c[0] == "report")
    page = (report / "index.html").read_text(encoding="utf-8")
    ids = figure_ids(page)
    assert {"sim-queue-cdf", "sim-vc-queue", "sim-timeline-pending-gpus"} <= set(ids)
    cdf = pl.read_csv(report / "tables" / "sim-queue-cdf.csv")
    assert sorted(cdf["run"].unique()) == ["fifo", "qssf", "sjf", "srtf"]
    for (run,), part in cdf.group_by("run"):
        # not a vertical line at zero: jobs waited in every run, some for over an hour
        assert part.filter(pl.col("seconds") == 0)["p"].max() < 1.0 and part["seconds"].max() > 3600, run
    # FIFO's waits spread over many values (a curve, not a step)
    assert cdf.filter(pl.col("run") == "fifo")["seconds"].n_unique() > 100


def test_a_vc_name_in_a_script_the_font_lacks_prints_no_warning(tmp_path: Path) -> None:
    # (two lines of matplotlib's UserWarning per missing glyph: 145 lines for one Japanese VC name)
    rows = "".join(f"j{i},{1600000000 + 300 * i},{600 + 60 * i},{1 + i % 4},日本語チーム\n" for i in range(60))
    (tmp_path / "jobs.csv").write_text("job_id,submit_time,duration,gpu_num,vc\n" + rows)
    (tmp_path / "spec.csv").write_text("vc,nodes\n日本語チーム,1\n")
    run = tmp_path / "run"
    assert cli("simulate", str(tmp_path / "jobs.csv"), "--format", "csv", "--tz", "UTC", "--cluster",
               str(tmp_path / "spec.csv"), "-o", str(run)).returncode == 0
    res = cli("report", str(run), "-o", str(tmp_path / "rep"))
    assert res.returncode == 0 and res.stderr == f"wrote {tmp_path / 'rep' / 'index.html'}\n", res.stderr


def test_a_cjk_font_the_machine_has_fills_in_the_glyphs(monkeypatch: pytest.MonkeyPatch) -> None:
    # docs/characterization.md: names in a script DejaVu Sans lacks are drawn with a CJK font the machine has
    import importlib

    import matplotlib
    from matplotlib import font_manager

    from dlcluster.report import plots

    saved = matplotlib.rcParams.copy()
    fake = font_manager.FontEntry(fname="/nonexistent/NotoSansCJK.ttc", name="Noto Sans CJK JP")
    monkeypatch.setattr(font_manager.fontManager, "ttflist", [*font_manager.fontManager.ttflist, fake])
    try:
        importlib.reload(plots)
        assert matplotlib.rcParams["font.sans-serif"][:2] == ["DejaVu Sans", "Noto Sans CJK JP"]
    finally:
        matplotlib.rcParams.update(saved)


def test_runs_of_one_name_in_different_folders_are_told_apart(runs: Path, tmp_path: Path) -> None:
    # (expA/x/fifo and expB/x/fifo were refused: "the run 'x/fifo' is given twice")
    import shutil

    for exp, run in (("expA", "fifo"), ("expB", "srtf")):
        shutil.copytree(runs / "sim" / run, tmp_path / exp / "x" / "fifo")
    named = [r.name for r in read_runs([tmp_path / "expA" / "x" / "fifo", tmp_path / "expB" / "x" / "fifo",
                                        runs / "load2"])]
    assert named == ["expA/x/fifo", "expB/x/fifo", "load2"]
    # the same folder twice is refused, by its path
    res = cli("report", str(tmp_path / "expA" / "x" / "fifo"), str(tmp_path / "expA" / "x" / "fifo"), "-o",
              str(tmp_path / "rep"))
    assert res.returncode == 2
    assert res.stderr.strip() == f"error: {tmp_path / 'expA' / 'x' / 'fifo'}: this run is given twice"


def test_a_run_named_observed_is_compared_with_the_trace_too(runs: Path, tmp_path: Path) -> None:
    # (its name clashed with the trace's series: "internal error: ValueError: Enum categories must be unique")
    import shutil

    shutil.copytree(runs / "sim" / "fifo", tmp_path / "observed")
    res = cli("report", str(tmp_path / "observed"), str(runs / "sim" / "srtf"), "--trace", str(runs / "venus.parquet"),
              "-o", str(tmp_path / "rep"))
    assert res.returncode == 0, res.stderr
    assert "sim-vs-observed" in figure_ids((tmp_path / "rep" / "index.html").read_text(encoding="utf-8"))


def test_a_run_where_no_job_ran_is_said_so(runs: Path, tmp_path: Path) -> None:
    # (every job unschedulable: the queueing CDF said "no job waited (a step at 1 s)" and drew none, the JCT CDF left
    # it out unsaid, and the timeline section said its (empty) timeline.parquet was missing)
    (tmp_path / "big.csv").write_text("job_id,vc,gpu_num,submit_time,duration\n1,a,16,0,60\n2,a,16,10,60\n")
    (tmp_path / "vc.csv").write_text("vc,nodes,gpus_per_node\na,1,8\n")
    main(["simulate", str(tmp_path / "big.csv"), "--format", "csv", "--cluster", str(tmp_path / "vc.csv"), "-o",
          str(tmp_path / "none")])
    page = build_sim_report(read_runs([tmp_path / "none", runs / "sim" / "fifo"]), tmp_path / "out").read_text(
        encoding="utf-8")
    for item in ("sim-jct-cdf", "sim-queue-cdf"):
        block = re.search(rf'id="{item}">(.*?)</figure>', page, re.DOTALL)
        assert block is not None
        assert "none: no job ran (every one unschedulable), so no line." in html.unescape(block.group(1))
    assert "No job ran in: none (an empty timeline)." in html.unescape(page)
    assert "No timeline.parquet in" not in page


def test_runs_of_another_cluster_or_other_jobs_are_said_to_be(runs: Path, tmp_path: Path) -> None:
    # (side by side without a word: a comparison of workloads read as one of policies)
    (tmp_path / "jobs.csv").write_text("job_id,vc,gpu_num,submit_time,duration\n1,a,8,0,600\n2,a,8,10,600\n")
    for name, nodes in (("small", 1), ("big", 4)):
        (tmp_path / f"{name}.csv").write_text(f"vc,nodes,gpus_per_node\na,{nodes},8\n")
        main(["simulate", str(tmp_path / "jobs.csv"), "--format", "csv", "--cluster", str(tmp_path / f"{name}.csv"),
              "-o", str(tmp_path / name)])
    checks = build_sim_report(read_runs([tmp_path / "small", tmp_path / "big"]), tmp_path / "rep")
    page = html.unescape(checks.read_text(encoding="utf-8"))
    assert ("big simulated another cluster than small (VC a: 32 GPUs against 8 GPUs): their figures compare clusters "
            "as much as policies.") in page
    page = html.unescape(build_sim_report(read_runs([runs / "sim" / "fifo", tmp_path / "small"]), tmp_path / "rep2")
                         .read_text(encoding="utf-8"))
    assert "small simulated other jobs than fifo (2 against " in page
    # the runs of one trace and cluster, at another load too, are alike
    same = html.unescape(build_sim_report(read_runs([runs / "sim", runs / "load2"]), tmp_path / "rep3")
                         .read_text(encoding="utf-8"))
    assert "simulated another cluster" not in same and "simulated other jobs" not in same


def test_a_vc_where_no_job_ran_and_runs_of_0_s_jobs_are_said_so(tmp_path: Path) -> None:
    # (VC c's one job, too large for it, left an empty bar slot "c (n=0)" read as no waiting; jobs of 0 s, all in one
    # second, were "no job ran in any VC")
    (tmp_path / "vc.csv").write_text("vc,nodes,gpus_per_node\na,1,8\nc,1,2\n")
    (tmp_path / "jobs.csv").write_text("job_id,vc,gpu_num,submit_time,duration\n1,a,8,0,600\n2,a,8,10,600\n"
                                       "3,a,8,20,600\n4,c,4,0,60\n")
    (tmp_path / "zero.csv").write_text("job_id,vc,gpu_num,submit_time,duration\n1,a,1,0,0\n2,a,1,0,0\n")
    for name in ("jobs", "zero"):
        main(["simulate", str(tmp_path / f"{name}.csv"), "--format", "csv", "--cluster", str(tmp_path / "vc.csv"), "-o",
              str(tmp_path / name)])
    page = html.unescape(build_sim_report(read_runs([tmp_path / "jobs"]), tmp_path / "rep").read_text(encoding="utf-8"))
    assert "No job ran in VC c in any run (every one unschedulable)." in page and "c (n=0)" not in page
    page = build_sim_report(read_runs([tmp_path / "zero"]), tmp_path / "rep0").read_text(encoding="utf-8")
    assert html.unescape(absent(page)["sim-vc-utilization"]) == (
        "every VC's span from first submit to last end is 0 s in every run (its jobs ran 0 s, all submitted in one "
        "second), so no utilisation.")


def test_preemptions_per_vc_count_the_jobs_that_ran() -> None:
    # (an unschedulable job counted among a VC's jobs there, not in summary.json nor beside the other figures)
    from dlcluster.analysis.simruns import preemptions_per_vc

    jobs = pl.DataFrame({"vc": ["a", "a", "a"], "start": [0, 10, None], "end": [100, 50, None],
                         "preemptions": [1, 0, 0]})
    assert preemptions_per_vc(jobs).rows() == [("a", 2, 1, 1)]
