"""Issue 12, item 1: the report's data checks on hand-made traces, each saying so and drawing nothing misleading."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import polars as pl
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg

from dlcluster.analysis import checks
from dlcluster.cli import main
from dlcluster.cluster import ClusterSpec
from dlcluster.io.parquet import write as write_parquet
from dlcluster.report import build_report, plots, sections
from dlcluster.report.inputs import Input
from dlcluster.schema import conform
from dlcluster.trace import Trace

T0 = 1_601_510_400  # 2020-10-01 00:00 UTC
HOUR = 3600


def _trace(rows: list[tuple], spec: ClusterSpec | None = None, fmt: str = "csv") -> Trace:
    """Jobs from ``(vc, gpus, submit, start, end, status, user)`` rows, times in seconds after ``T0``."""
    df = pl.DataFrame(rows, schema=("vc", "gpu_num", "submit_time", "start_time", "end_time", "status", "user"),
                      orient="row")
    jobs = conform(df.with_columns(pl.format("j{}", pl.int_range(pl.len())).alias("job_id"),
                                   pl.lit("c").alias("cluster"), pl.col("submit_time", "start_time", "end_time") + T0)
                   .with_columns((pl.col("end_time") - pl.col("start_time")).alias("duration"),
                                 (pl.col("start_time") - pl.col("submit_time")).alias("queue_delay")))
    return Trace(jobs, fmt, cluster=spec, source="hand.csv")


def _waiting(n: int = 60, vc: str = "a", gpus: int = 1, offset: int = 0) -> list[tuple]:
    """``n`` one-hour jobs, one submitted every 30 min, waiting 0..590 s (real, varied queueing)."""
    return [(vc, gpus, i * 1800 + offset, i * 1800 + offset + (i * 37) % 600, i * 1800 + offset + (i * 37) % 600 + HOUR,
             ("completed", "failed", "cancelled")[i % 3], f"u{i % 4}") for i in range(n)]


def _page(trace: Trace, tmp_path: Path, **kw) -> str:
    return build_report([trace], tmp_path / "out", **kw).read_text(encoding="utf-8")


def _absent(page: str) -> dict[str, str]:
    return dict(re.findall(r'<div class="card absent" id="([^"]+)"><h3>[^<]*</h3><p>Not shown: ([^<]*)</p>', page))


def _figures(page: str) -> set[str]:
    return set(re.findall(r'<figure class="report-figure" id="([^"]+)"', page))


def _checks(page: str, item: str) -> list[str]:
    block = re.search(rf'id="{item}">(.*?)</(?:figure|div)>', page, re.DOTALL)
    assert block is not None, item
    return [html.unescape(c) for c in re.findall(r'<p class="check">([^<]*)</p>', block.group(1))]


QUEUE_FIGURES = {"jobs-queue-by-size", "jobs-queue-by-vc", "users-queue", "cluster-queue-vs-load"}


def test_zero_queueing_from_placeholder_starts_draws_no_queueing_figure(tmp_path: Path) -> None:
    rows = [("a", 1, i * 1800, i * 1800, i * 1800 + HOUR, "completed", f"u{i % 3}") for i in range(60)]
    page = _page(_trace(rows, ClusterSpec({"a": (8,)})), tmp_path)
    absent = _absent(page)
    reason = ("hand.csv: every queueing delay is 0 (start = submit for every job: the start times look like "
              "placeholders), so there is no queueing to show.")
    assert {k: absent.get(k) for k in QUEUE_FIGURES} == dict.fromkeys(QUEUE_FIGURES, reason)
    assert not QUEUE_FIGURES & _figures(page)
    # the GPUs "in use" were never scheduled on a cluster: said beside the figure, and the panel says demanded
    assert any("so its GPUs in use are the GPUs demanded" in c for c in _checks(page, "cluster-daily"))
    item = sections.cluster_section([Input.of("hand.csv", _trace(rows, ClusterSpec({"a": (8,)})),
                                              ClusterSpec({"a": (8,)}))]).items[0]
    titles = [ax.get_title() for ax in item.figure.axes if ax.get_visible()]
    assert "GPUs demanded (mean)" in titles and "GPUs in use (mean)" not in titles


def test_queueing_by_load_spans_the_loads_whatever_the_points() -> None:
    # every job in the lowest load bin: the axis ran from -0.04 to 0.04, a negative load
    rows = [(*r[:3], r[3] + 1000 * i, *r[4:]) for i, r in enumerate(_waiting(4, gpus=1))]
    spec = ClusterSpec({"a": (8, 8, 8, 8)})
    items = {i.id: i for i in sections.cluster_section([Input.of("hand.csv", _trace(rows, spec), spec)]).items}
    item = items["cluster-queue-vs-load"]
    assert item.data["cluster-queue-vs-load"]["load_lo"].to_list() == [0.0]
    for ax in (a for a in item.figure.axes if a.get_visible()):
        lo, hi = ax.get_xlim()
        assert -0.05 < lo < 0 and hi > 0.9 and min(ax.get_xticks()[(ax.get_xticks() >= lo)]) == 0


def test_a_log_axis_over_less_than_a_decade_labels_no_minor_ticks() -> None:
    # run times of 900 to 6,900 s: matplotlib labelled 2, 3, 4, 6 × 10³, and "3×10³" ran into "4×10³"
    df = pl.DataFrame({"trace": ["t"] * 4, "duration": [900.0, 1800.0, 4500.0, 6900.0], "p": [0.25, 0.5, 0.75, 1.0]})
    ax = plots.cdf(df, "duration", "run time (s)").axes[0]
    FigureCanvasAgg(ax.figure).draw()
    assert ax.get_xlim() == (100.0, 10_000.0)
    assert [t.get_text() for t in ax.get_xticklabels(minor=True) if t.get_text()] == []


def test_a_one_job_trace_draws_no_distribution_and_says_why(tmp_path: Path) -> None:
    page = _page(_trace([("a", 4, 0, 600, 600 + 2 * HOUR, "completed", "u1")], ClusterSpec({"a": (8,)})), tmp_path)
    absent = _absent(page)
    assert {k: absent.get(k) for k in QUEUE_FIGURES} == dict.fromkeys(
        QUEUE_FIGURES - {"users-queue"}, "hand.csv: a single GPU job has a queueing delay, so there is no queueing to "
        "show.") | {"users-queue": "hand.csv: every job belongs to one user, so there is no spread over users to show."}
    assert absent["jobs-duration-cdf"] == "hand.csv: the trace has a single job, too few for a distribution."
    # no curve, but its percentiles table, one job's
    assert "jobs-duration-by-size" not in absent
    assert _checks(page, "jobs-duration-by-size") == [
        "No CDF: hand.csv: the trace has a single GPU job, too few for a distribution."]
    assert absent["users-concentration"] == absent["users-completion"] == absent["users-queue"]
    assert not QUEUE_FIGURES & _figures(page)
    assert "jobs-size-mix" in _figures(page)  # a bar of one size still says something


def test_constant_queueing_is_named_and_not_drawn(tmp_path: Path) -> None:
    rows = [("a", 1, i * 1800, i * 1800 + 60, i * 1800 + 60 + HOUR, "completed", "u") for i in range(40)]
    absent = _absent(_page(_trace(rows, ClusterSpec({"a": (8,)})), tmp_path))
    assert absent["jobs-queue-by-size"] == "hand.csv: every queueing delay is 60 s, so there is no queueing to show."


def test_generated_trace_is_labelled_demand(tmp_path: Path) -> None:
    rows = _waiting()
    page = _page(_trace(rows, ClusterSpec({"a": (8,)}), fmt="synth"), tmp_path)
    assert "jobs-queue-by-size" in _figures(page)  # its queueing varies, so it is drawn
    assert any("GPUs demanded" in c for c in _checks(page, "cluster-daily"))
    # the philly preset draws no queueing at all (docs/characterization.md names it), the Venus one does
    from dlcluster.synth import generate, load_preset

    assert (generate(load_preset("philly"), days=1, seed=1).jobs["queue_delay"].drop_nulls() == 0).all()
    assert (generate(load_preset("helios-venus"), days=1, seed=1).jobs["queue_delay"].drop_nulls() > 0).any()
    # its jobs waited (a drawn delay): the line says why the GPUs are demanded, not that none waited
    line = next(c for c in _checks(page, "cluster-daily") if "GPUs demanded" in c)
    assert "start after a drawn queueing delay" in line and "started when it was submitted" not in line


def test_utilisation_above_one_is_said_and_not_drawn(tmp_path: Path) -> None:
    # twelve 1-GPU jobs hold VC a's 8 GPUs for the same two hours: 1.5
    rows = _waiting() + [("a", 1, 10 * HOUR, 10 * HOUR + 5 * k, 12 * HOUR, "completed", "u") for k in range(12)]
    trace = _trace(rows, ClusterSpec({"a": (8,)}))
    problem = checks.utilization_problem(trace.jobs, trace.cluster)
    assert problem is not None and problem.startswith("utilisation exceeds 1 (up to 1.") and "in VC a" in problem
    page = _page(trace, tmp_path)
    assert _absent(page)["cluster-vc-utilization"] == f"hand.csv: {problem}."
    assert f"hand.csv: {problem}." in _checks(page, "cluster-daily")
    daily = pl.read_csv(tmp_path / "out" / "tables" / "cluster-daily.csv")
    assert daily["utilization"].null_count() == daily.height  # no utilisation line above 1
    # the same jobs in a VC large enough: no finding, utilisation drawn
    ok = _trace(rows, ClusterSpec({"a": (8, 8)}))
    assert checks.utilization_problem(ok.jobs, ok.cluster) is None
    assert "cluster-vc-utilization" in _figures(_page(ok, tmp_path / "ok"))


def test_partial_vc_coverage_restricts_capacity_and_says_so(tmp_path: Path) -> None:
    # jobs only in VC a (8 GPUs) of a 3-VC, 88-GPU spec; one 4-GPU job runs through hours 0-9
    spec = ClusterSpec({"a": (8,), "b": (8, 8), "c": (64,)})
    rows = [("a", 4, 0, 0, 10 * HOUR, "completed", "u")] + [
        ("a", 1, 10 * HOUR + 600 * k, 10 * HOUR + 600 * k + 7 * k, 10 * HOUR + 600 * k + 7 * k + 60, "completed", "u")
        for k in range(40)]
    page = _page(_trace(rows, spec), tmp_path)
    note = "the trace has jobs in 1 of the spec's 3 VCs, so capacity counts those VCs only: 8 of 88 GPUs"
    assert note in html.unescape(page.split("</header>")[0])
    assert f"hand.csv: {note}." in _checks(page, "cluster-daily")
    vcu = pl.read_csv(tmp_path / "out" / "tables" / "cluster-vc-utilization.csv")
    assert vcu["vc"].to_list() == ["a"]  # no all-zero boxes for VCs without jobs
    daily = pl.read_csv(tmp_path / "out" / "tables" / "cluster-daily.csv")
    # hour 0 (UTC trace): the 4-GPU job alone, over 8 GPUs, not over 88
    assert daily.filter(pl.col("hour") == 0)["utilization"].item() == pytest.approx(0.5)
    assert pl.read_csv(tmp_path / "out" / "tables" / "cluster_summary.csv")["gpu_num"].to_list() == [8]


def test_jobs_of_vcs_the_spec_lacks_are_named(tmp_path: Path) -> None:
    # VC b's 20 jobs count in no capacity: the page says so, in the header and beside utilisation
    rows = _waiting() + _waiting(20, vc="b", offset=900)
    page = _page(_trace(rows, ClusterSpec({"a": (8,)})), tmp_path)
    note = "20 GPU jobs are in 1 VC the spec lacks (b): they count in no VC's capacity, utilisation or load"
    assert note in html.unescape(page.split("</header>")[0])
    assert f"hand.csv: {note}." in _checks(page, "cluster-daily")
    # the first five VCs are named, then how many more
    many = _trace(_waiting() + [r for k in range(7) for r in _waiting(2, vc=f"b{k}", offset=900 + k)])
    assert checks.outside_note(ClusterSpec({"a": (8,)}), many.jobs) == (
        "14 GPU jobs are in 7 VCs the spec lacks (b0, b1, b2, b3, b4 and 2 more): they count in no VC's capacity, "
        "utilisation or load")
    assert checks.outside_note(ClusterSpec({"a": (8,)}), _trace(_waiting() + _waiting(1, vc="b")).jobs) == (
        "1 GPU job is in 1 VC the spec lacks (b): it counts in no VC's capacity, utilisation or load")


def test_pooled_counts_jobs_of_any_label_against_the_whole_cluster(tmp_path: Path) -> None:
    # pods labelled by QoS class, nodes in one VC (as openb's): only --pooled can draw their utilisation
    rows = [("BE" if k % 2 else "LS", 4, k * HOUR, k * HOUR, k * HOUR + HOUR // 2, "completed", "u1") for k in range(40)]
    trace = _trace(rows, ClusterSpec({"openb": (8, 8)}))
    assert "cluster-vc-utilization" in _absent(_page(trace, tmp_path / "plain"))
    page = build_report([trace], tmp_path / "out", pooled=True).read_text(encoding="utf-8")
    assert "pooled: every job in one VC, the whole cluster" in page.split("</header>")[0]
    vcu = pl.read_csv(tmp_path / "out" / "tables" / "cluster-vc-utilization.csv")
    # every hour from the first submission to the last, each with one 4-GPU job for half of it, over 16 GPUs
    assert vcu.select("vc", "gpus", "hours", "mean").row(0) == ("all", 16, 40, pytest.approx(0.125))


def test_characterize_picks_a_day_of_a_helios_gpu_count_file(tmp_path: Path, capsys) -> None:
    counts = tmp_path / "cluster_gpu_number.csv"
    counts.write_text("date,a,b,total\n2020-04-01,8,16,24\n2020-04-02,16,16,32\n")
    trace = write_parquet(_trace(_waiting() + _waiting(20, vc="b", offset=900)), tmp_path / "t.parquet")
    gpus = {}
    for day in (None, "2020-04-01"):
        out = tmp_path / f"out-{day}"
        main(["characterize", str(trace), "--cluster", str(counts), *(["--cluster-date", day] if day else []),
              "-o", str(out)])
        gpus[day] = pl.read_csv(out / "tables" / "cluster_summary.csv")["gpu_num"].to_list()
    assert gpus == {None: [32], "2020-04-01": [24]}  # default: the file's last day
    with pytest.raises(SystemExit) as done:
        main(["characterize", str(trace), "--cluster-date", "2020-04-01", "-o", str(tmp_path / "x")])
    assert done.value.code == 2 and "--cluster-date picks a day of the --cluster file" in capsys.readouterr().err


def test_calendar_figures_of_a_trace_without_dates_say_why_they_are_not_drawn(tmp_path: Path) -> None:
    # times counted from the trace's own start (openb, SWF without a start date): 1970 has no real weekdays
    relative = _trace(_waiting())
    relative = relative.with_jobs(relative.jobs.with_columns(pl.col("submit_time", "start_time", "end_time") - T0))
    same = _trace([("a", 1, 0, 60 * k, 60 * k + HOUR, "completed", "u") for k in range(40)])
    for trace, why in ((relative, "its times count from the trace's own start, not from a date (1970-01-01 is its "
                                  "first day), so it has no local hours, weekdays or months."),
                       (same, "every job has the same submit time, so no pattern over time.")):
        absent = _absent(_page(trace, tmp_path / why[:5]))
        for item in ("cluster-daily", "cluster-weekly", "cluster-monthly"):
            assert html.unescape(absent[item]) == f"hand.csv: {why}", item


def test_tiny_groups_show_n_and_are_hatched(tmp_path: Path) -> None:
    # 60 one-GPU jobs and 20 of 16 GPUs: the >8 bucket is too small for its shares to mean much
    rows = _waiting() + _waiting(20, gpus=16, offset=900)
    page = _page(_trace(rows, ClusterSpec({"a": (8,) * 8})), tmp_path)
    found = _checks(page, "jobs-outcome-job-share")
    assert found == ["Fewer than 30 jobs behind (hatched; too few for the share to mean much): >8 (n = 20)."]
    inp = Input.of("hand.csv", _trace(rows, ClusterSpec({"a": (8,) * 8})), None)
    item = next(i for i in sections.jobs_section([inp]).items if i.id == "jobs-outcome-job-share")
    completed = next(ax for ax in item.figure.axes if ax.get_title() == "completed")
    bars = [p for p in completed.patches if p.get_height() > 0]
    labels = {t.get_text() for t in completed.texts}
    assert labels == {"20", "7", "27"}  # completed jobs: 20 of 60 one-GPU, 7 of 20 >8-GPU, 27 of all 80
    hatched = {round(p.get_x() + p.get_width() / 2) for p in bars if p.get_hatch()}
    assert hatched == {3}  # only the >8 bucket's bar (4th category)


def test_single_month_gets_no_monthly_trends(tmp_path: Path) -> None:
    page = _page(_trace(_waiting(), ClusterSpec({"a": (8,)})), tmp_path)
    assert _absent(page)["cluster-monthly"] == ("hand.csv: the trace covers a single calendar month; trends need at "
                                                "least two.")


def test_a_trace_shorter_than_a_week_gets_no_day_of_week_pattern(tmp_path: Path) -> None:
    # 30 hours from a Thursday: a line from Thu to Fri would say nothing of the other five weekdays
    page = _page(_trace(_waiting(), ClusterSpec({"a": (8,)})), tmp_path)
    assert _absent(page)["cluster-weekly"] == ("hand.csv: the trace covers 2 of the 7 weekdays (Thu, Fri), less than a "
                                               "week; a day-of-week pattern needs every weekday.")
    assert "cluster-daily" in _figures(page)
    assert not (tmp_path / "out" / "tables" / "cluster-weekly.csv").exists()
    week = [("a", 1, i * 6 * HOUR, i * 6 * HOUR + 60, i * 6 * HOUR + 60 + HOUR, "completed", f"u{i % 4}")
            for i in range(30)]  # 7.5 days: every weekday
    assert "cluster-weekly" in _figures(_page(_trace(week, ClusterSpec({"a": (8,)})), tmp_path / "week"))


def test_a_cpu_only_trace_draws_no_flat_panel_of_gpu_submissions(tmp_path: Path) -> None:
    rows = [("a", 0, i * 6 * HOUR, i * 6 * HOUR + 60, i * 6 * HOUR + 60 + HOUR, "completed", f"u{i % 4}")
            for i in range(30)]  # 7.5 days of CPU jobs
    page = _page(_trace(rows), tmp_path)
    line = "No trace has GPU jobs, so only all jobs' submissions are drawn (no GPU submissions, GPU-hours or GPUs in use)."
    for item in ("cluster-daily", "cluster-weekly"):
        assert line in _checks(page, item)
    items = sections.cluster_section([Input.of("hand.csv", _trace(rows), None)]).items
    for item in items[:2]:
        assert [ax.get_title() for ax in item.figure.axes if ax.get_visible()] == ["jobs submitted per hour"]


def test_a_distribution_of_a_single_value_gets_no_cdf(tmp_path: Path) -> None:
    # every user completed all their GPU jobs (ratio 1 each); the only CPU job ran an hour
    rows = [(r[0], r[1], r[2], r[3], r[4] + 60 * k, "completed", r[6]) for k, r in enumerate(_waiting())]
    rows.append(("a", 0, 0, 60, 60 + HOUR, "completed", "u0"))
    page = _page(_trace(rows, ClusterSpec({"a": (8,)})), tmp_path)
    assert html.unescape(_absent(page)["users-completion"]) == ("hand.csv: every user's completion ratio is 1, a single "
                                                                "step: no CDF.")
    assert _checks(page, "jobs-duration-cdf") == [
        "Not included: hand.csv: CPU jobs: every run time is 3,600 s, a single step: no CDF."]
    assert "CPU jobs" not in set(pl.read_csv(tmp_path / "out" / "tables" / "jobs-duration-cdf.csv")["kind"])


def test_per_user_curves_of_one_value_are_named_not_drawn(tmp_path: Path) -> None:
    # (two users each waiting 100 s on average, or failing twice each: one vertical step was drawn)
    waits = [50, 100, 150, 100]  # u0 50 and 150, u1 100 twice
    rows = [("a", 1, k * HOUR, k * HOUR + w, k * HOUR + w + 600, "failed", f"u{k % 2}") for k, w in enumerate(waits)]
    page = _page(_trace(rows, ClusterSpec({"a": (8,)})), tmp_path)
    absent = {k: html.unescape(v) for k, v in _absent(page).items()}
    assert absent["users-queue"] == "hand.csv: every user's mean queueing delay is 100 s, a single step: no CDF."
    assert absent["failures-repeat"] == ("hand.csv: every failing user's count of failed jobs is 2, a single step: "
                                         "no CDF.")
    # one user: no per-user figure of failures either
    one = _page(_trace([(*r[:6], "u0") for r in rows], ClusterSpec({"a": (8,)})), tmp_path / "one")
    assert _absent(one)["failures-repeat"] == ("hand.csv: every job belongs to one user, so there is no spread over "
                                               "users to show.")


def test_the_top_users_figure_says_what_jobs_without_a_user_used(tmp_path: Path) -> None:
    rows = [("a", 1, 0, 0, HOUR, "completed", "u1"), ("a", 1, 0, 0, 3 * HOUR, "completed", "u2"),
            ("a", 4, 0, 0, HOUR, "completed", None)]
    page = _page(_trace(rows, ClusterSpec({"a": (8,)})), tmp_path)
    assert _checks(page, "users-concentration") == [
        "hand.csv: jobs without a user used 50.0% of its GPU time, which the curves leave out."]


def test_run_time_percentiles_stay_when_every_bucket_has_one_run_time(tmp_path: Path) -> None:
    # (the CDF replaced by its notes took its percentiles table, a listed output, along)
    rows = [("a", 1, 0, 0, 600, "completed", "u0"), ("a", 2, 60, 60, 60 + HOUR, "completed", "u1")]
    page = _page(_trace(rows, ClusterSpec({"a": (8,)})), tmp_path)
    assert _checks(page, "jobs-duration-by-size") == [
        "No CDF: hand.csv: 1-GPU jobs: every run time is 600 s, a single step: no CDF. hand.csv: 2-4-GPU jobs: every "
        "run time is 3,600 s, a single step: no CDF."]
    table = pl.read_csv(tmp_path / "out" / "tables" / "jobs-duration-by-size-percentiles.csv")
    assert table.select("bucket", "jobs", "p50").rows() == [("1", 1, 600.0), ("2-4", 1, 3600.0)]


def test_jobs_that_all_ran_0_s_get_a_sentence_for_gpu_time_and_no_nan(tmp_path: Path) -> None:
    # 40 jobs failed at launch: end = start, so no GPU time to share (empty panels and NaN tables before)
    rows = [("a", (1, 2, 8)[i % 3], i * 1800, i * 1800 + 60, i * 1800 + 60, "failed", f"u{i % 4}") for i in range(40)]
    page = _page(_trace(rows, ClusterSpec({"a": (8,)})), tmp_path)
    why = "hand.csv: every GPU job ran 0 s, so there is no GPU time to share."
    absent = _absent(page)
    assert absent["failures-lost-gpu-time"] == absent["jobs-outcome-gpu-time-share"] == why
    assert _checks(page, "jobs-size-mix") == [why[:-1] + ": the GPU-time panel leaves it out."]
    for table in (tmp_path / "out" / "tables").glob("*.csv"):
        assert "NaN" not in table.read_text(encoding="utf-8"), table.name
    assert pl.read_csv(tmp_path / "out" / "tables" / "jobs-size-mix.csv")["gpu_time_share"].null_count() == 3


def test_jobs_still_running_hold_their_gpus_until_the_last_recorded_time(tmp_path: Path, capsys) -> None:
    # an 8-GPU job all day, and a 16-GPU one started at 00:00 still running (no end): half of the 32 GPUs
    rows = [("a", 8, 0, 0, 24 * HOUR, "completed", "u1"), ("a", 1, 23 * HOUR, 23 * HOUR, 24 * HOUR, "completed", "u2"),
            ("a", 16, 0, 0, None, "running", "u1")]
    page = _page(_trace(rows, ClusterSpec({"a": (8,) * 4})), tmp_path)
    util = pl.read_csv(tmp_path / "out" / "tables" / "cluster-vc-utilization.csv")
    assert util["p50"].to_list() == [0.75]  # (8 + 16) / 32 in every hour, not 8 / 32
    line = ("hand.csv: 1 GPU job(s) still running (a start, no end) count as holding their GPUs until the trace's "
            "last recorded time, 2020-10-02 00:00 UTC.")
    for item in ("cluster-daily", "cluster-vc-utilization"):
        assert line in _checks(page, item)
    jobs = _trace(rows).jobs.with_columns(pl.col("status").cast(pl.String))
    jobs.write_csv(tmp_path / "run.csv")
    main(["characterize", str(tmp_path / "run.csv"), "--format", "csv", "-o", str(tmp_path / "cli")])
    assert f"note: {tmp_path / 'run.csv'}: {line[len('hand.csv: '):-1]}" in capsys.readouterr().err


def test_run_times_leave_out_jobs_still_running_and_jobs_never_started(tmp_path: Path) -> None:
    # as sacct reads them: a running job's Elapsed so far (5 h) and a job cancelled in the queue (no start, 0 s)
    rows = [(r[0], r[1], r[2], r[3], r[4] + 60 * k, r[5], r[6]) for k, r in enumerate(_waiting(40))]
    trace = _trace([*rows, ("a", 1, 0, 0, None, "running", "u1"), ("a", 1, 0, None, 60, "cancelled", "u2")])
    trace = trace.with_jobs(trace.jobs.with_columns(
        pl.when(pl.col("status") == "running").then(5 * HOUR)
        .when(pl.col("start_time").is_null()).then(0).otherwise(pl.col("duration")).alias("duration")))
    _page(trace, tmp_path)
    ran = [HOUR + 60 * k for k in range(40)]
    row = pl.read_csv(tmp_path / "out" / "tables" / "cluster_summary.csv").row(0, named=True)
    assert row["avg_run_time_gpu"] == round(sum(ran) / 40, 3)
    assert row["med_run_time_gpu"] == (ran[19] + ran[20]) / 2
    cdf = pl.read_csv(tmp_path / "out" / "tables" / "jobs-duration-cdf.csv")
    assert cdf["duration"].min() == HOUR and cdf["duration"].max() == ran[-1]
    sizes = pl.read_csv(tmp_path / "out" / "tables" / "jobs-duration-by-size-percentiles.csv")
    assert sizes["jobs"].to_list() == [40]


def _sim_run(folder: Path, placement: str) -> Path:
    """A run on one VC of two 8-GPU nodes where a 6-GPU job waits while 4 + 4 GPUs are held on both nodes."""
    folder.mkdir(parents=True)
    pl.DataFrame({"job_id": ["p", "q", "w"], "vc": "a", "gpu_num": [4, 4, 6], "submit": [0, 0, 10],
                  "start": [0, 0, 100], "end": [100, 100, 110]}).write_parquet(folder / "jobs.parquet")
    pl.DataFrame({"job_id": ["p", "q", "w"], "vc": "a", "node": pl.Series([0, 1, 0], dtype=pl.Int32),
                  "gpus": pl.Series([4, 4, 6], dtype=pl.Int32), "start": [0, 0, 100],
                  "end": [100, 100, 110]}).write_parquet(folder / "placements.parquet")
    (folder / "summary.json").write_text(json.dumps({"policy": "fifo", "placement": placement, "compat": None}))
    return folder / "jobs.parquet"


OWN_RULE = "Placement judged by the run's own rule: {}."
NO_SUMMARY = ("The run's summary.json is not beside its jobs: placement judged by the Helios artifact's consolidate "
              "rule.")
UNKNOWN = "The run's placement 'my-plugin' is not one the decomposition knows: queue order is counted as fragmentation."


@pytest.mark.parametrize(("placement", "cause", "said"), [
    ("consolidate", "fragmentation", OWN_RULE.format("consolidate")),
    (None, "fragmentation", NO_SUMMARY)])
def test_characterize_judges_a_run_by_the_rule_its_summary_names(tmp_path: Path, placement: str | None, cause: str,
                                                                 said: str) -> None:
    """End to end: ``characterize --sim-jobs`` reads the run's summary.json beside its jobs, if there is one."""
    jobs = _sim_run(tmp_path / "run", placement or "consolidate")
    if placement is None:
        (tmp_path / "run" / "summary.json").unlink()
    trace = write_parquet(_trace(_waiting(), ClusterSpec({"a": (8, 8)})), tmp_path / "t.parquet")
    main(["characterize", str(trace), "--cluster", str(_spec_csv(tmp_path)), "--sim-jobs", str(jobs),
          "-o", str(tmp_path / "rep")])
    table = pl.read_csv(tmp_path / "rep" / "tables" / "queueing-decomposition.csv")
    assert table.filter(pl.col("jobs") > 0).select("bucket", "cause").rows() == [("5-8", cause)]
    page = (tmp_path / "rep" / "index.html").read_text(encoding="utf-8")
    assert said in _checks(page, "queueing-decomposition")



def test_characterize_refuses_a_summary_whose_placement_is_not_text(tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture) -> None:
    # (internal error: AttributeError: 'list' object has no attribute 'partition')
    jobs = _sim_run(tmp_path / "run", ["consolidate"])  # type: ignore[arg-type]
    trace = write_parquet(_trace(_waiting(), ClusterSpec({"a": (8, 8)})), tmp_path / "t.parquet")
    with pytest.raises(SystemExit) as err:
        main(["characterize", str(trace), "--cluster", str(_spec_csv(tmp_path)), "--sim-jobs", str(jobs),
              "-o", str(tmp_path / "rep")])
    assert err.value.code == 2
    assert capsys.readouterr().err.strip() == (f"error: {tmp_path / 'run' / 'summary.json'}, field 'placement': "
                                               "expected text or null, got ['consolidate']")

@pytest.mark.parametrize(("placement", "cause", "said"), [
    ("consolidate", "fragmentation", OWN_RULE.format("consolidate")),
    ("first-fit", "queue-order", OWN_RULE.format("first-fit")), ("spread", "queue-order", OWN_RULE.format("spread")),
    ("random", "queue-order", OWN_RULE.format("random")), ("relax:30", "queue-order", OWN_RULE.format("relax:30")),
    (None, "fragmentation", NO_SUMMARY), ("my-plugin", "fragmentation", UNKNOWN)])
def test_decomposition_uses_the_runs_own_placement_rule(tmp_path: Path, placement: str | None, cause: str,
                                                        said: str) -> None:
    """The section itself, for every rule (the command's whole report for two of them above)."""
    folder = tmp_path / "run"
    _sim_run(folder, placement or "consolidate")
    summary = None if placement is None else json.loads((folder / "summary.json").read_text())
    section = sections.queueing_section(pl.read_parquet(folder / "jobs.parquet"), ClusterSpec({"a": (8, 8)}), "run",
                                        pl.read_parquet(folder / "placements.parquet"), summary)
    (item,) = section.items
    table = item.data["queueing-decomposition"]
    assert table.filter(pl.col("jobs") > 0).select("bucket", "cause").rows() == [("5-8", cause)]
    assert said in item.checks


def _spec_csv(tmp_path: Path) -> Path:
    path = tmp_path / "vc_nodes.csv"
    path.write_text("vc,nodes\na,2\n")
    return path


def test_a_section_with_nothing_to_show_collapses_with_its_reason(tmp_path: Path) -> None:
    page = _page(_trace(_waiting()), tmp_path)  # no attempts table: the whole locality section is empty
    locality = page.split('<section id="locality">')[1].split("</section>")[0]
    summary = re.search(r'<details class="collapsed"><summary>([^<]*)</summary>', locality)
    assert summary is not None
    assert summary.group(1).startswith("Nothing to show: hand.csv: the trace has no attempts table")
    jobs = page.split('<section id="jobs">')[1].split("</section>")[0]
    assert "<details" not in jobs  # a section with figures stays open


def test_bar_tick_labels_do_not_overlap() -> None:
    cats = [f"virtual-cluster-{k:02d}" for k in range(30)]
    df = pl.DataFrame({"trace": "t", "vc": cats, "v": [float(k) for k in range(30)], "jobs": list(range(30))})
    fig = plots.bars(df, "vc", "v", "value", n="jobs")
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    ax = fig.axes[0]
    labels = [t for t in ax.get_xticklabels() if t.get_visible() and t.get_text()]
    assert len(labels) >= 10
    assert {t.get_rotation() for t in labels} == {45.0}
    # parallel labels at 45 degrees clear each other when their baselines are a line height apart
    xs = sorted(ax.transData.transform((x, 0))[0] for x in ax.get_xticks())
    line = labels[0].get_fontsize() * fig.dpi / 72 * 1.2
    assert min(b - a for a, b in zip(xs, xs[1:])) * 2 ** -0.5 >= line
    assert all(t.get_rotation_mode() == "anchor" and t.get_horizontalalignment() == "right" for t in labels)
    # few short labels stay horizontal and their boxes do not overlap
    few = plots.bars(df.head(5).with_columns(pl.col("vc").str.slice(-2)), "vc", "v", "value")
    canvas = FigureCanvasAgg(few)
    canvas.draw()
    boxes = [t.get_window_extent(canvas.get_renderer()) for t in few.axes[0].get_xticklabels() if t.get_text()]
    assert len(boxes) == 5 and not any(a.overlaps(b) for k, a in enumerate(boxes) for b in boxes[k + 1:])
    # the legend keys of bars are patches, not lines
    assert type(fig.legends[0].legend_handles[0]).__name__ in {"Rectangle", "Patch"}


def test_a_tiny_number_in_a_page_table_is_not_shown_as_0() -> None:
    # (a 1-s wait in hours, 0.000278, read "0" at three decimals)
    from dlcluster.report.html import table_html

    cells = re.findall(r"<td>([^<]*)</td>", table_html(pl.DataFrame({"x": [0.000278, 0.0, 1.5, 12_345.6]})))
    assert cells == ["2.8e-04", "0", "1.5", "12,346"]
