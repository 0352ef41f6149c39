"""The characterisation report end to end: every figure and table on a Helios look-alike, partial inputs."""

from __future__ import annotations

import re
from pathlib import Path

import polars as pl
import pytest

from dlcluster.cli import main
from dlcluster.cluster import ClusterSpec
from dlcluster.io.parquet import write as write_parquet
from dlcluster.report import build_report
from dlcluster.schema import ATTEMPT_SCHEMA, conform
from dlcluster.synth.generate import generate
from dlcluster.synth.model import load_preset
from dlcluster.trace import Trace

T0 = 1_506_816_000  # 2017-10-01 00:00 UTC


MARCH_29 = 1_585_440_000  # 2020-03-29 00:00 UTC: four or more days from here span two calendar months


def helios_like(days: float = 6) -> Trace:
    """A small synthetic Venus-like trace (users, statuses, VCs, queueing, cluster spec) over two months."""
    return generate(load_preset("helios-venus"), days=days, seed=3, start=MARCH_29)


def sim_of(trace: Trace) -> pl.DataFrame:
    """A simulator-style per-job table from a trace's own start/end times."""
    return trace.gpu_jobs.select("job_id", "vc", "gpu_num", pl.col("submit_time").alias("submit"),
                                 pl.col("start_time").alias("start"), pl.col("end_time").alias("end"))


def philly_like(folder: Path) -> Trace:
    """A tiny Philly-raw-like trace: jobs, attempts on servers, and a cluster_gpu_util file."""
    from dlcluster.io.philly_util import PhillyUtilization

    n = 40
    jobs = conform(pl.DataFrame({
        "job_id": [f"j{i}" for i in range(n)], "cluster": "philly", "vc": [f"vc{i % 3}" for i in range(n)],
        "user": [f"u{i % 5}" for i in range(n)], "gpu_num": [(1, 4, 8, 16)[i % 4] for i in range(n)],
        "submit_time": [T0 + 600 * i for i in range(n)], "start_time": [T0 + 600 * i + 60 * (i % 7) for i in range(n)],
        "status": [("completed", "cancelled", "failed")[i % 3] for i in range(n)],
    }).with_columns((pl.col("start_time") + 3600 + 60 * (pl.int_range(n) % 5)).alias("end_time"),
                    (3600 + 60 * (pl.int_range(n) % 5)).alias("duration"),
                    (pl.col("start_time") - pl.col("submit_time")).alias("queue_delay")))
    attempts = pl.DataFrame([(f"j{i}", 0, T0 + 600 * i + 60 * (i % 7), T0 + 600 * i + 60 * (i % 7) + 3600,
                              [f"m{(i + k) % 6}" for k in range(max(1, (1, 4, 8, 16)[i % 4] // 8 * (1 + i % 2)))],
                              (1, 4, 8, 16)[i % 4]) for i in range(n)], schema=ATTEMPT_SCHEMA, orient="row")
    lines = ["time,machineId," + ",".join(f"gpu{g}_util" for g in range(8))]
    for minute in range(40 * 10 + 70):
        stamp = pl.from_epoch(pl.Series([T0 + 60 * minute]), time_unit="s").dt.replace_time_zone("UTC") \
            .dt.convert_time_zone("America/Los_Angeles").dt.strftime("%Y-%m-%d %H:%M:%S")[0]
        for m in range(6):
            vals = ["NA" if (minute + m) % 11 == 0 else str((minute * 7 + m * 13) % 100) for _ in range(8)]
            lines.append(f"{stamp} PDT,m{m},{','.join(vals)},")
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "cluster_gpu_util").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return Trace(jobs, "philly", timezone="America/Los_Angeles", attempts=attempts,
                 cluster=ClusterSpec.uniform({"vc0": 4, "vc1": 4, "vc2": 4}), source=str(folder),
                 utilization=PhillyUtilization(folder))


def figure_ids(page: str) -> list[str]:
    return re.findall(r'<figure class="report-figure" id="([^"]+)"', page)


def test_helios_like_report_renders_every_figure_and_table(tmp_path: Path) -> None:
    """Acceptance (b): every section with the inputs it needs is drawn, with its files."""
    trace = helios_like()
    page = build_report([trace, philly_like(tmp_path / "philly")], tmp_path / "out", sim_jobs=sim_of(trace)) \
        .read_text(encoding="utf-8")
    ids = figure_ids(page)
    expected = {
        "jobs-duration-cdf", "jobs-size-mix", "jobs-outcome-job-share", "jobs-outcome-gpu-time-share",
        "jobs-duration-by-size", "jobs-queue-by-size", "jobs-queue-by-vc", "cluster-daily", "cluster-weekly",
        "cluster-monthly", "cluster-vc-utilization", "cluster-queue-vs-load", "users-concentration", "users-queue",
        "users-completion", "locality-servers-vs-queue", "failures-attempts", "failures-time-to-failure",
        "failures-lost-gpu-time", "failures-early-late", "failures-repeat", "queueing-decomposition",
    }
    assert set(ids) == expected
    for fid in ids:
        assert (tmp_path / "out" / "figures" / f"{fid}.png").stat().st_size > 1000
        assert (tmp_path / "out" / "figures" / f"{fid}.svg").read_text().startswith("<svg")
        assert pl.read_csv(tmp_path / "out" / "tables" / f"{fid}.csv", infer_schema=False).height > 0
    for table in ("locality-util-size-status", "locality-util-16gpu-servers", "cluster_summary"):
        assert pl.read_csv(tmp_path / "out" / "tables" / f"{table}.csv", infer_schema=False).height > 0
    assert "Not shown" not in page.split('id="locality"')[1].split('id="failures"')[0]
    summary = pl.read_csv(tmp_path / "out" / "tables" / "cluster_summary.csv")
    assert summary["id"].to_list() == ["synth:helios-venus", "philly"]
    assert summary["gpu_num"].to_list() == [trace.cluster.total_gpus, 96]
    # overlays: both traces appear in a shared figure's legend table
    assert set(pl.read_csv(tmp_path / "out" / "tables" / "jobs-duration-cdf.csv")["trace"]) == {
        "synth:helios-venus", "philly"}
    # self-contained: nothing that would load from anywhere
    assert not re.search(r'(?:src|href)="(?!#)', page) and not re.search(r"url\((?!#)", page)
    assert "http" not in page and "//" not in page.replace("<!--", "")


def test_same_input_gives_byte_identical_output(tmp_path: Path) -> None:
    trace = helios_like(days=2)
    a = build_report([trace], tmp_path / "a").read_bytes()
    b = build_report([trace], tmp_path / "b").read_bytes()
    assert a == b
    assert (tmp_path / "a" / "figures" / "jobs-size-mix.png").read_bytes() == \
        (tmp_path / "b" / "figures" / "jobs-size-mix.png").read_bytes()
    # every table too (a share of GPU time lost to failures changed in its last digits from one run to the next)
    tables = sorted(p.name for p in (tmp_path / "a" / "tables").iterdir())
    assert "failures-lost-gpu-time.csv" in tables
    for name in tables:
        assert (tmp_path / "a" / "tables" / name).read_bytes() == (tmp_path / "b" / "tables" / name).read_bytes(), name


def _cpu_only() -> Trace:
    jobs = conform(pl.DataFrame({"job_id": ["a", "b", "c"], "cluster": "x", "vc": "v", "gpu_num": [0, 0, 0],
                                 "submit_time": [T0, T0 + 100, T0 + 90000], "duration": [10, 20, 30],
                                 "status": "other"}))
    return Trace(jobs, "test", source="cpu-only.csv")


def test_partial_inputs_explain_each_absent_section(tmp_path: Path) -> None:
    """Acceptance (d): no GPU jobs, no spec, no users, no status, no start times: explained, no crash."""
    page = build_report([_cpu_only()], tmp_path / "out").read_text(encoding="utf-8")
    assert "jobs-duration-cdf" in figure_ids(page)  # CPU run times still drawn
    blocks = dict(re.findall(r'<div class="card absent" id="([^"]+)"><h3>[^<]*</h3><p>Not shown: ([^<]*)</p>', page))
    assert blocks["jobs-size-mix"] == "cpu-only.csv: the trace has no GPU jobs."
    assert blocks["cluster-vc-utilization"] == "cpu-only.csv: the trace has no GPU jobs."
    assert blocks["users-concentration"] == "cpu-only.csv: the trace records no user for any job."
    assert blocks["failures-repeat"] == "cpu-only.csv: the trace records no user for any job."
    assert blocks["queueing-decomposition"] == "no simulator output given (pass --sim-jobs)."
    assert "cluster-daily" in figure_ids(page)  # submissions by hour need no GPU jobs
    assert pl.read_csv(tmp_path / "out" / "tables" / "cluster_summary.csv")["gpu_job_num"].to_list() == [0]


def test_gpu_trace_without_spec_user_or_status(tmp_path: Path) -> None:
    trace = helios_like(days=2)
    bare = trace.with_jobs(trace.jobs.with_columns(pl.lit(None, pl.String).alias("user"),
                                                   pl.lit("other").cast(trace.jobs.schema["status"]).alias("status")))
    bare.cluster = None
    page = build_report([bare], tmp_path / "out", sim_jobs=sim_of(trace)).read_text(encoding="utf-8")
    ids = figure_ids(page)
    assert {"jobs-duration-by-size", "cluster-daily", "cluster-queue-vs-load"} <= set(ids)
    assert not {"cluster-vc-utilization", "users-concentration", "jobs-outcome-job-share"} & set(ids)
    assert "the trace records no user for any job" in page and "the trace records no final status" in page
    assert "no cluster spec is known (pass --cluster)" in page
    assert "the decomposition needs each VC&#x27;s GPUs: pass --cluster." in page


def test_a_simulated_run_of_another_cluster_is_named_not_read_as_no_waiting(tmp_path: Path) -> None:
    # (a run on the Philly VCs against a Venus trace's spec said "no job waited in the simulated run")
    trace = helios_like(days=2)
    other = sim_of(trace).with_columns(pl.lit("elsewhere").alias("vc"))
    page = build_report([trace], tmp_path / "out", sim_jobs=other).read_text(encoding="utf-8")
    blocks = dict(re.findall(r'<div class="card absent" id="([^"]+)"><h3>[^<]*</h3><p>Not shown: ([^<]*)</p>', page))
    assert blocks["queueing-decomposition"] == ("none of the simulated run&#x27;s VCs is in the cluster spec: pass "
                                                "--cluster with the spec the run was simulated on.")


def test_cli_writes_a_report_and_rejects_bad_sim_jobs(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    trace = helios_like(days=1)
    src = write_parquet(trace, tmp_path / "t.parquet")
    main(["characterize", str(src), "-o", str(tmp_path / "rep")])
    assert (tmp_path / "rep" / "index.html").is_file()
    assert capsys.readouterr().err.strip() == f"wrote {tmp_path / 'rep' / 'index.html'}"
    bad = tmp_path / "sim.parquet"
    pl.DataFrame({"job_id": ["1"], "vc": ["v"], "gpu_num": [1], "submit": [0], "start": [1]}).write_parquet(bad)
    with pytest.raises(SystemExit) as err:
        main(["characterize", str(src), "--sim-jobs", str(bad), "-o", str(tmp_path / "rep2")])
    assert err.value.code == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert lines == [f"error: {bad}: missing column 'end' (need job_id, vc, gpu_num, submit, start, end)"]
    assert not (tmp_path / "rep2").exists()


def test_a_report_interrupted_while_written_leaves_the_earlier_one_whole(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """Written again into the same folder, a report that stops half-way must leave neither the old page beside some
    of the new figures nor no page at all: the earlier report stays as it was."""
    from matplotlib.figure import Figure

    import dlcluster.report.html as report_html
    from dlcluster.report.model import Item, Section

    def figure() -> Figure:
        fig = Figure()
        fig.subplots().plot([0, 1], [0, 1])
        return fig

    sections = [Section("s", "S", "intro", [Item("a", "A", "first", figure=figure()),
                                            Item("b", "B", "second", figure=figure())])]
    page = report_html.write_report(sections, tmp_path, "old", [])
    assert page.is_file()
    before = {p.relative_to(tmp_path): p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    drawn = []
    real = report_html._svg

    def stop_at_the_second_figure(item):  # noqa: ANN001, ANN202
        drawn.append(item)
        if len(drawn) == 2:  # the first figure's files are written by now
            raise KeyboardInterrupt
        return real(item)

    monkeypatch.setattr(report_html, "_svg", stop_at_the_second_figure)
    with pytest.raises(KeyboardInterrupt):
        report_html.write_report(sections, tmp_path, "new", [])
    assert {p.relative_to(tmp_path): p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["figures", "index.html"]  # no staging folder left


def test_a_report_written_again_keeps_only_its_own_figures_and_tables(tmp_path: Path) -> None:
    """Files an earlier report wrote into figures/ and tables/ that this one does not write are removed (the page
    would not list them, yet they would pass for this report's); the user's other files are left alone."""
    from matplotlib.figure import Figure

    import dlcluster.report.html as report_html
    from dlcluster.report.model import Item, Section

    def figure() -> Figure:
        fig = Figure()
        fig.subplots().plot([0, 1], [0, 1])
        return fig

    table = pl.DataFrame({"x": [1]})
    both = [Item("a", "A", "first", figure=figure(), data={"a": table}),
            Item("b", "B", "second", figure=figure(), data={"b": table})]
    report_html.write_report([Section("s", "S", "intro", both)], tmp_path, "old", [])
    (tmp_path / "notes.txt").write_text("mine")
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "b.csv").write_text("mine")
    report_html.write_report([Section("s", "S", "intro", both[:1])], tmp_path, "new", [])
    assert sorted(p.name for p in (tmp_path / "figures").iterdir()) == ["a.png", "a.svg"]
    assert sorted(p.name for p in (tmp_path / "tables").iterdir()) == ["a.csv"]
    assert (tmp_path / "notes.txt").read_text() == "mine" and (tmp_path / "data" / "b.csv").read_text() == "mine"
