"""``dlcluster compare``: the comparison report of a sweep's results folder.

The fixture is a real sweep folder in the layout ``dlcluster sweep`` writes: generated Helios-like
traces, real ``dlcluster simulate`` runs in ``cells/<cell_id>/``, and ``results.parquet`` assembled
here from their summaries (the assembling helper is test code, not the product).
"""

from __future__ import annotations

import hashlib
import html
import json
import math
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from scipy import stats as sps

from dlcluster.cli import main
from dlcluster.errors import DlclusterError
from dlcluster.sweep.compare import build_compare_report, read_sweep

ROOT = Path(__file__).resolve().parents[1]
OVERALL = ("jobs", "unschedulable", "mean_jct", "p50_jct", "p95_jct", "p99_jct", "mean_queue_delay", "p50_queue_delay",
           "p95_queue_delay", "p99_queue_delay", "mean_slowdown", "mean_bounded_slowdown", "makespan", "utilization",
           "fairness", "preemptions")
ENERGY = {"energy_kwh": "energy_kwh", "always_on_kwh": "always_on_kwh", "energy_saved_pct": "saved_pct",
          "utilization_powered": "utilization_powered", "wakeups": "wakeups", "boot_delayed_jobs": "boot_delayed_jobs",
          "boot_delay_seconds": "boot_delay_seconds"}
ESTIMATES = {"estimates_mae": "mae", "estimates_mdape": "mdape", "estimates_spearman": "spearman",
             "estimates_within_100": "within_100"}
PARAMETERS = {"policy": pl.String, "load": pl.Float64, "seed": pl.Int64, "power": pl.String, "estimates": pl.String}
# (policy, load, seed, estimates): fifo and sjf at two loads over two seeds; qssf-lgbm with one seed (n = 1)
CELLS = [(p, load, s, None) for p in ("fifo", "sjf") for load in (1.0, 2.0) for s in (1, 2)] + [
    ("qssf", 1.0, 1, "lgbm")]
FAILED = ("lottery", 1.0, 1, None)  # recorded as failed, with no run folder, as the sweep records a failed cell


def _cli(*args: str) -> None:
    """Run ``dlcluster`` in this process (the simulations are short: interpreter start-up would dominate)."""
    try:
        main(list(args))
    except SystemExit as exc:  # main() exits only on an error
        raise AssertionError(f"dlcluster {' '.join(args)} exited {exc.code}") from exc


def cell_id(params: dict) -> str:
    """A stable 16-hex-digit identity of a cell's parameters."""
    return hashlib.sha256(json.dumps(params, sort_keys=True).encode()).hexdigest()[:16]


def results_row(cell: int, params: dict, summary: dict | None, error: str | None) -> dict:
    """One row of results.parquet from a run's summary.json (None for a failed cell)."""
    row: dict = {"cell": cell, "cell_id": cell_id(params), "status": "failed" if summary is None else "ok",
                 "error": error, "wall_seconds": 0.0 if summary is None else summary["wall_seconds"],
                 "trace": "helios-venus", **params}
    summary = summary or {}
    for key in OVERALL:
        row[key] = summary.get("overall", {}).get(key)
    for col, key in ENERGY.items():
        row[col] = summary.get("energy", {}).get(key)
    for col, key in ESTIMATES.items():
        row[col] = summary.get("estimates", {}).get(key)
    return row


def write_results(folder: Path, rows: list[dict], parameters: dict = PARAMETERS) -> Path:
    """results.parquet and sweep.json in the layout of ``dlcluster sweep`` (metric columns: those present)."""
    metrics = [c for c in (*OVERALL, *ENERGY, *ESTIMATES) if any(r.get(c) is not None for r in rows)]
    schema = {"cell": pl.Int64, "cell_id": pl.String, "status": pl.String, "error": pl.String,
              "wall_seconds": pl.Float64, "trace": pl.String, **parameters, **dict.fromkeys(metrics, pl.Float64)}
    table = pl.DataFrame([{k: r.get(k) for k in schema} for r in rows], schema=schema, orient="row")
    folder.mkdir(parents=True, exist_ok=True)
    table.write_parquet(folder / "results.parquet")
    meta = {"parameters": list(parameters), "metrics": metrics, "experiment": "fixture.toml", "cells": len(rows)}
    (folder / "sweep.json").write_text(json.dumps(meta))
    return folder


def make_sweep(folder: Path) -> Path:
    """Run the fixture's cells with ``dlcluster simulate`` (power management on) and assemble the folder."""
    traces = {}
    for seed in sorted({c[2] for c in CELLS}):
        traces[seed] = folder / f"trace-{seed}.parquet"
        _cli("synth", "--preset", "helios-venus", "--days", "2", "--seed", str(seed), "-o", str(traces[seed]))
    rows = []
    for i, (policy, load, seed, est) in enumerate([*CELLS, FAILED]):
        params = {"policy": policy, "load": load, "seed": seed, "power": "ces", "estimates": est}
        out = folder / "results" / "cells" / cell_id(params)
        if (policy, load, seed, est) == FAILED:
            rows.append(results_row(i, params, None, "unknown policy 'lottery'"))
            continue
        _cli("simulate", str(traces[seed]), "-p", policy, "--load", str(load), "--seed", str(seed), "--power", "ces",
             *(["--estimates", est] if est else []), "-o", str(out))
        rows.append(results_row(i, params, json.loads((out / "summary.json").read_text()), None))
    return write_results(folder / "results", rows)


@pytest.fixture(scope="module")
def sweep(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_sweep(tmp_path_factory.mktemp("sweep"))


@pytest.fixture(scope="module")
def report(sweep: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_compare_report(sweep, tmp_path_factory.mktemp("report") / "report").parent


def _setting_values(sweep: Path, metric: str) -> dict[tuple, list[float]]:
    """Raw per-seed values of ``metric`` for each (policy, load, estimates) setting, from the ok cells."""
    df = pl.read_parquet(sweep / "results.parquet").filter(pl.col("status") == "ok")
    out: dict[tuple, list[float]] = {}
    for r in df.iter_rows(named=True):
        out.setdefault((r["policy"], r["load"], r["estimates"]), []).append(r[metric])
    return out


def test_intervals_match_scipy_student_t(sweep: Path, report: Path) -> None:
    for metric in ("mean_jct", "p99_queue_delay", "utilization", "energy_kwh", "fairness"):
        table = pl.read_csv(report / "tables" / f"{metric}.csv", schema_overrides={"estimates": pl.String})
        got = {(r["policy"], float(r["load"]), None if r["estimates"] == "default" else r["estimates"]): r
               for r in table.iter_rows(named=True) if r["n"] > 0}
        expected = _setting_values(sweep, metric)
        assert set(got) == set(expected)
        for key, values in expected.items():
            row = got[key]
            assert row["n"] == len(values)
            assert row["mean"] == pytest.approx(float(np.mean(values)), rel=1e-12)
            if len(values) == 1:
                assert row["ci_low"] is None and row["ci_high"] is None
                continue
            low, high = sps.t.interval(0.95, len(values) - 1, loc=np.mean(values),
                                       scale=sps.sem(values))
            low = max(low, 0.0)  # (every one of these metrics is never negative: its interval ends at 0)
            if low == high:  # equal seeds: a zero-width interval
                assert row["ci_low"] == pytest.approx(low) and row["ci_high"] == pytest.approx(high)
            else:
                assert row["ci_low"] == pytest.approx(low, rel=1e-9) and row["ci_high"] == pytest.approx(high, rel=1e-9)
    page = (report / "index.html").read_text()
    assert "n = 1, no interval" in page  # the single-seed qssf setting


def test_best_setting_per_metric(sweep: Path, report: Path) -> None:
    # ranked within each load (the sweep's workloads): a lighter load is not a better policy
    best = pl.read_csv(report / "tables" / "best.csv")
    rows = {(r["metric"], r["workload"]): r for r in best.iter_rows(named=True)}
    for metric, higher in (("mean_jct", False), ("p99_jct", False), ("p50_queue_delay", False), ("energy_kwh", False),
                           ("utilization", True), ("fairness", True), ("energy_saved_pct", True)):
        for load in (1.0, 2.0):
            means = {k: float(np.mean(v)) for k, v in _setting_values(sweep, metric).items() if k[1] == load}
            target = (max if higher else min)(means.values())
            winners = [k for k, v in means.items() if v == target]
            row = rows[(metric, f"load={load:g}")]
            assert row["better"] == ("higher" if higher else "lower")
            assert row["mean"] == pytest.approx(target)
            if len(winners) == len(means) > 1:
                assert row["best setting"] == f"all {len(means)} settings tie"
                continue
            labels = row["best setting"].split("; ")
            assert len(labels) == len(winners)
            for (policy, _, est), label in zip(winners, labels, strict=True):
                assert f"policy={policy}" in label and f"load={load:g}" in label
                assert f"estimates={est or 'default'}" in label
            assert row["runner-up"] == "–" or f"load={load:g}" in row["runner-up"]
    # a metric without a direction (the job count) is not ranked
    assert not {"jobs", "always_on_kwh"} & set(best["metric"])


def test_metric_directions_and_long_table(report: Path) -> None:
    rows = {r["metric"]: r["better"] for r in pl.read_csv(report / "tables" / "best.csv").iter_rows(named=True)
            if r["workload"] == "load=1"}
    for metric in ("unschedulable", "preemptions", "wakeups", "boot_delay_seconds", "estimates_mae", "makespan",
                   "mean_bounded_slowdown"):
        assert rows[metric] == "lower", metric
    for metric in ("utilization_powered", "estimates_spearman", "estimates_within_100"):
        assert rows[metric] == "higher", metric
    long = pl.read_csv(report / "tables" / "metrics.csv")
    assert {"mean_jct", "always_on_kwh", "jobs", "estimates_mdape"} <= set(long["metric"])
    assert long.filter(pl.col("n") == 0)["mean"].null_count() == long.filter(pl.col("n") == 0).height


def test_failed_cells_are_listed_with_their_error(report: Path) -> None:
    failed = pl.read_csv(report / "tables" / "failed.csv")
    assert failed["cell"].to_list() == [len(CELLS)]
    assert failed["policy"].to_list() == ["lottery"] and failed["error"].to_list() == ["unknown policy 'lottery'"]
    page = (report / "index.html").read_text()
    assert "Failed cells (1 of 10)" in page and "unknown policy &#x27;lottery&#x27;" in page
    # the failed cell counts in no mean: its setting shows n = 0
    table = pl.read_csv(report / "tables" / "mean_jct.csv").filter(pl.col("policy") == "lottery")
    assert table["n"].to_list() == [0] and table["mean"].to_list() == [None]
    assert "no successful cell" in page


def test_report_has_cdfs_and_load_curves(report: Path) -> None:
    page = (report / "index.html").read_text()
    for ident in ("cdf-jct", "ccdf-queue_delay", "curve-load"):
        assert re.search(rf'<figure class="report-figure" id="{ident}">.*?<svg', page, re.DOTALL), ident
        assert (report / "figures" / f"{ident}.svg").stat().st_size > 5_000
    cdf = pl.read_csv(report / "tables" / "cdf_jct.csv")
    # the estimator comes with qssf: it names qssf's line, and the panels split by load alone
    assert set(cdf["series"]) == {"fifo", "sjf", "qssf (estimates=lgbm)"}
    assert set(cdf["panel"]) == {"load=1", "load=2"}
    assert set(cdf.filter(pl.col("panel") == "load=1")["series"]) == {"fifo", "sjf", "qssf (estimates=lgbm)"}
    # seeds pooled: each fifo/sjf line holds the completed jobs of both seeds' cells
    pooled = cdf.group_by("panel", "series").agg(pl.col("jobs").first())
    assert pooled.filter(pl.col("series") == "fifo")["jobs"].min() > 0
    curve = pl.read_csv(report / "tables" / "curve_load.csv")
    assert sorted(set(curve["load"])) == [1.0, 2.0]


def test_the_queueing_tail_is_the_share_of_pooled_jobs_waiting_longer(sweep: Path, report: Path) -> None:
    tail = pl.read_csv(report / "tables" / "ccdf_queue_delay.csv")
    df = pl.read_parquet(sweep / "results.parquet").filter((pl.col("status") == "ok") & (pl.col("policy") == "fifo"))
    for panel, load in (("load=1", 1.0), ("load=2", 2.0)):
        cells = [pl.read_parquet(sweep / "cells" / i / "jobs.parquet")
                 for i in df.filter(pl.col("load") == load)["cell_id"]]
        delays = pl.concat(cells).filter(pl.col("status") == "completed")["queue_delay"].to_numpy()
        line = tail.filter((pl.col("panel") == panel) & (pl.col("series") == "fifo")).sort("seconds")
        assert line["jobs"][0] == len(delays) and line["seconds"][0] == 1.0
        for x, share in zip(line["seconds"], line["share_waiting_longer"], strict=True):
            assert share == pytest.approx((delays > x).mean(), abs=1e-12)


def test_cdf_pools_the_seeds(sweep: Path, report: Path) -> None:
    cdf = pl.read_csv(report / "tables" / "cdf_jct.csv")
    df = pl.read_parquet(sweep / "results.parquet").filter(pl.col("status") == "ok")
    for policy in ("fifo", "sjf"):
        ids = df.filter(pl.col("policy") == policy)["cell_id"].to_list()
        n = sum(pl.read_parquet(sweep / "cells" / i / "jobs.parquet").filter(pl.col("status") == "completed").height
                for i in ids)
        got = cdf.filter(pl.col("series") == policy).group_by("panel").agg(pl.col("jobs").first())["jobs"].sum()
        assert got == n


def test_report_is_byte_identical_across_runs(sweep: Path, report: Path, tmp_path: Path) -> None:
    # a second run of the experiment: the same results, its cells timed differently by the wall clock
    import shutil

    rerun = shutil.copytree(sweep, tmp_path / "rerun" / sweep.name)  # (the page names the folder)
    table = pl.read_parquet(rerun / "results.parquet")
    assert "wall_seconds" in table.columns
    table.with_columns(pl.col("wall_seconds") * 3 + 1).write_parquet(rerun / "results.parquet")
    again = build_compare_report(rerun, tmp_path / "again").parent
    files_a = sorted(p.relative_to(report) for p in report.rglob("*") if p.is_file())
    files_b = sorted(p.relative_to(again) for p in again.rglob("*") if p.is_file())
    assert files_a == files_b and len(files_a) > 20
    for rel in files_a:
        assert (report / rel).read_bytes() == (again / rel).read_bytes(), rel
    assert not list(again.rglob(".*.tmp"))


def test_load_curve_axis_spans_the_means(sweep: Path) -> None:
    from dlcluster.sweep.compare import _curve_items, interval_stats, settings_of

    settings = settings_of(read_sweep(sweep))
    stats = interval_stats(settings, ["mean_jct", "utilization"])
    (item,) = _curve_items(stats, settings, ["mean_jct", "utilization"])
    assert item.figure is not None
    for ax, metric in zip([a for a in item.figure.axes if a.get_visible()], ["mean_jct", "utilization"],
                          strict=True):
        means = stats.filter(pl.col("metric") == metric)["mean"].drop_nulls()
        span = means.max() - means.min()
        low, high = ax.get_ylim()
        assert low == pytest.approx(max(0.0, means.min() - 0.6 * span)) and high == pytest.approx(
            means.max() + 0.6 * span)
        # the intervals are wider than the axis (two seeds): the band is cut, not the axis widened
        assert stats.filter(pl.col("metric") == metric)["ci_high"].max() > high


# ---- synthetic results folders: degenerate sweeps, missing and many run folders ----------------

def _row(cell: int, **values: object) -> dict:
    params = {"policy": values.pop("policy", "fifo"), "load": values.pop("load", 1.0), "seed": values.pop("seed", 1)}
    return {"cell": cell, "cell_id": cell_id({**params, "cell": cell}), "status": "ok", "error": None,
            "wall_seconds": 1.0, "trace": "t", **params, **values}


SMALL = {"policy": pl.String, "load": pl.Float64, "seed": pl.Int64}


def _jobs_cell(folder: Path, cid: str, jcts: list[int]) -> None:
    cell = folder / "cells" / cid
    cell.mkdir(parents=True)
    table = pl.DataFrame({"jct": jcts, "queue_delay": [j // 2 for j in jcts], "status": ["completed"] * len(jcts)})
    table.write_parquet(cell / "jobs.parquet")


def test_cells_without_jobs_table_are_counted(tmp_path: Path) -> None:
    rows = [_row(i, seed=i + 1, mean_jct=float(i)) for i in range(3)]
    folder = write_results(tmp_path / "r", rows, SMALL)
    for r in rows[1:]:  # the first cell succeeded but left no run folder
        _jobs_cell(folder, r["cell_id"], [10, 20 + r["cell"], 30, 40])
    out = tmp_path / "out"
    page = build_compare_report(folder, out).read_text()
    assert "1 successful cell(s) had no jobs.parquet and are left out." in page
    cdf = pl.read_csv(out / "tables" / "cdf_jct.csv")
    assert cdf["jobs"].unique().to_list() == [8]  # the two other cells' four jobs each, pooled
    assert cdf.filter(pl.col("p") == 1.0)["value"].to_list() == [40.0]


def test_cdf_panels_continue_in_a_second_figure(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from dlcluster.sweep import compare

    assert compare.MAX_PANELS == 12  # docs/compare.md: twelve panels a figure at most
    monkeypatch.setattr(compare, "MAX_PANELS", 2)  # the rule with 3 panels, not 13: drawing is the slow part
    placements = [f"p{i:02d}" for i in range(3)]
    rows = [{**_row(i, policy=pol, mean_jct=float(i)), "placement": pl_}
            for i, (pl_, pol) in enumerate((x, y) for x in placements for y in ("fifo", "sjf"))]
    for r in rows:
        r["cell_id"] = cell_id({"cell": r["cell"]})
    folder = write_results(tmp_path / "r", rows, {**SMALL, "placement": pl.String})
    for r in rows:
        _jobs_cell(folder, r["cell_id"], [10 + r["cell"], 100, 1000])
    out = tmp_path / "out"
    page = build_compare_report(folder, out).read_text()
    for ident in ("cdf-jct", "cdf-jct-2", "ccdf-queue_delay", "ccdf-queue_delay-2"):
        assert f'id="{ident}"' in page
    assert "JCT CDF per policy (1 of 2)" in page and "JCT CDF per policy (2 of 2)" in page
    svg1 = (out / "figures" / "cdf-jct.svg").read_text()
    svg2 = (out / "figures" / "cdf-jct-2.svg").read_text()
    assert svg1.count('id="axes_') == 2 and svg2.count('id="axes_') == 1
    cdf = pl.read_csv(out / "tables" / "cdf_jct.csv")
    assert cdf["panel"].n_unique() == 3 and set(cdf["series"]) == {"fifo", "sjf"}


def _placement_sweep(tmp_path: Path, combos: list[tuple[str | None, float]]) -> pl.DataFrame:
    """A fifo-only sweep over (placement, load), each cell's JCTs 10 + its index, 100 and 1000; its JCT CDF table."""
    rows = [{**_row(i, load=load, mean_jct=float(i)), "placement": p} for i, (p, load) in enumerate(combos)]
    for r in rows:
        r["cell_id"] = cell_id({"cell": r["cell"]})
    folder = write_results(tmp_path / "r", rows, {**SMALL, "placement": pl.String})
    for r in rows:
        _jobs_cell(folder, r["cell_id"], [10 + r["cell"], 100, 1000])
    build_compare_report(folder, tmp_path / "out")
    return pl.read_csv(tmp_path / "out" / "tables" / "cdf_jct.csv")


def test_with_one_policy_and_many_settings_the_cdfs_draw_a_line_per_the_setting_with_most_values(
        tmp_path: Path) -> None:
    # the locality example's shape (docs/compare.md): fifo throughout, six placements × two loads (one line per
    # panel, as per policy, would compare nothing)
    placements = ("relax:0", "relax:600", "relax:3600", "relax:14400", "consolidate", "dedicated")
    cdf = _placement_sweep(tmp_path, [(p, load) for p in placements for load in (2.0, 3.0)])
    page = (tmp_path / "out" / "index.html").read_text()
    assert "JCT CDF per placement" in page and "queueing-delay complementary CDF per placement" in page
    assert set(cdf["series"]) == {f"placement={p}" for p in placements}
    assert set(cdf["panel"]) == {"load=2", "load=3"}
    assert (tmp_path / "out" / "figures" / "cdf-jct.svg").read_text().count('id="axes_') == 2
    # each line is its own cell's jobs: placement=dedicated at load 3 is cell 11 (JCTs 21, 100, 1000)
    line = cdf.filter((pl.col("series") == "placement=dedicated") & (pl.col("panel") == "load=3"))
    assert line["value"].min() == 21 and line["value"].max() == 1000


def test_with_one_policy_and_few_settings_the_cdfs_draw_every_setting_in_one_panel(tmp_path: Path) -> None:
    from dlcluster.sweep import compare

    assert compare.MAX_LINES == 8  # docs/compare.md: at most eight settings as lines of one panel
    cdf = _placement_sweep(tmp_path, [("relax:0", 2.0), ("relax:600", 2.0), (None, 3.0)])
    page = (tmp_path / "out" / "index.html").read_text()
    assert "JCT CDF per setting" in page
    # a line names the values its setting sets: the placement left at its default is not named
    assert set(cdf["series"]) == {"load=2, placement=relax:0", "load=2, placement=relax:600", "load=3"}
    assert set(cdf["panel"]) == {"all cells"}
    assert (tmp_path / "out" / "figures" / "cdf-jct.svg").read_text().count('id="axes_') == 1


def test_one_cell_gets_sentences_not_empty_axes(tmp_path: Path) -> None:
    folder = write_results(tmp_path / "r", [_row(0, mean_jct=100.0, utilization=0.5)], SMALL)
    page = build_compare_report(folder, tmp_path / "out").read_text()
    assert "One cell only" in page
    assert "n = 1, no interval" in page
    assert "only one setting (all cells) has successful cells, so there is nothing to choose between" in page
    assert "load takes one value only (1), so there is no curve to draw" in page
    assert "no successful cell has completed jobs to draw" in page  # no run folders: no CDF
    assert "<svg" not in page


def test_cells_that_ran_no_job_say_so_instead_of_an_empty_section(tmp_path: Path) -> None:
    # (a trace file without jobs: section 2 was empty, no reason given)
    rows = [_row(i, policy=p, jobs=0) for i, p in enumerate(("fifo", "sjf"))]
    folder = write_results(tmp_path / "r", rows, SMALL)
    page = html.unescape(build_compare_report(folder, tmp_path / "out").read_text())
    assert "no successful cell simulated a job (jobs = 0 in every one), so no metric has a value." in page


def test_one_setting_many_seeds(tmp_path: Path) -> None:
    rows = [_row(i, seed=i + 1, mean_jct=v) for i, v in enumerate((10.0, 20.0, 60.0))]
    folder = write_results(tmp_path / "r", rows, SMALL)
    out = tmp_path / "out"
    page = build_compare_report(folder, out).read_text()
    assert "One setting only (the cells differ by seed alone)" in page
    table = pl.read_csv(out / "tables" / "mean_jct.csv")
    low, high = sps.t.interval(0.95, 2, loc=30.0, scale=sps.sem([10.0, 20.0, 60.0]))
    assert table["n"].to_list() == [3]
    # the t interval reaches to about -36 s; a JCT is never negative, so the table's ends at 0
    assert low < -30 and table["ci_low"][0] == 0.0 and table["ci_high"][0] == pytest.approx(high)
    assert "nothing to choose between" in page
    shown = html.unescape(page)
    assert f"<td>0 – {high:.3f}</td>" in shown and "cut at 0 (the metric is never negative)" in shown


def test_seeds_that_change_nothing_give_no_interval(tmp_path: Path) -> None:
    # fifo on a trace file: every seed gives the very same run, which is one result, not three independent draws
    # (a zero-width interval would claim a certainty nobody tested); sjf's seeds differ and keep their interval
    rows = [_row(i, policy=p, seed=s, mean_jct=10.0 if p == "fifo" else 5.0 + s, utilization=0.5)
            for i, (p, s) in enumerate((p, s) for p in ("fifo", "sjf") for s in (1, 2, 3))]
    folder = write_results(tmp_path / "r", rows, SMALL)
    out = tmp_path / "out"
    page = build_compare_report(folder, out).read_text()
    table = pl.read_csv(out / "tables" / "mean_jct.csv")
    assert table["n"].to_list() == [3, 3]
    assert table["ci_low"][0] is None and table["ci_high"][0] is None
    low, high = sps.t.interval(0.95, 2, loc=7.0, scale=sps.sem([6.0, 7.0, 8.0]))
    assert table["ci_low"][1] == pytest.approx(low) and table["ci_high"][1] == pytest.approx(high)
    assert "3 identical runs, no interval" in page
    assert "In 1 of 2 setting(s) every seed gave the very same result" in page
    best = {r["metric"]: r for r in pl.read_csv(out / "tables" / "best.csv").iter_rows(named=True)}
    assert best["mean_jct"]["best setting"] == "policy=sjf"
    assert best["mean_jct"]["clearly better"] == "no interval (identical runs)"


def test_one_setting_with_a_mean_is_not_called_agreement(tmp_path: Path) -> None:
    # (with the other setting's cells all failed, the page said "Every setting gives the same mean")
    rows = [_row(0, policy="fifo", mean_jct=50.0), _row(1, policy="sjf", seed=1, mean_jct=None)]
    rows[1].update(status="failed", error="boom")
    page = build_compare_report(write_results(tmp_path / "r", rows, SMALL), tmp_path / "out").read_text()
    assert "gives the same mean" not in page


def test_settings_are_ranked_within_each_trace(tmp_path: Path) -> None:
    # (the winner ran on a light trace, the runner-up on a heavy one: a ranking of workloads, not of policies)
    means = {("light", "fifo"): 10.0, ("light", "sjf"): 8.0, ("heavy", "fifo"): 90.0, ("heavy", "sjf"): 95.0}
    rows = [{**_row(i, policy=p, seed=s, mean_jct=m + s), "trace": t}
            for i, ((t, p), m, s) in enumerate((k, m, s) for k, m in means.items() for s in (1, 2))]
    folder = write_results(tmp_path / "r", rows, SMALL)
    build_compare_report(folder, tmp_path / "out")
    best = pl.read_csv(tmp_path / "out" / "tables" / "best.csv").filter(pl.col("metric") == "mean_jct")
    assert best.select("workload", "best setting", "runner-up").rows() == [
        ("trace=light", "trace=light, policy=sjf", "trace=light, policy=fifo"),
        ("trace=heavy", "trace=heavy, policy=fifo", "trace=heavy, policy=sjf")]
    # one setting per workload: nothing to choose between
    single = [{**_row(i, seed=s, mean_jct=float(i)), "trace": t} for i, (t, s) in enumerate(
        (t, s) for t in ("light", "heavy") for s in (1, 2))]
    page = build_compare_report(write_results(tmp_path / "r1", single, SMALL), tmp_path / "out1").read_text()
    assert "each workload (trace and load) has one setting, so there is nothing to choose between." in page


def test_all_metrics_equal(tmp_path: Path) -> None:
    rows = [_row(i, policy=p, load=load, seed=s, mean_jct=50.0, utilization=0.25)
            for i, (p, load, s) in enumerate((p, load, s) for p in ("fifo", "sjf") for load in (1.0, 2.0)
                                              for s in (1, 2))]
    folder = write_results(tmp_path / "r", rows, SMALL)
    out = tmp_path / "out"
    page = build_compare_report(folder, out).read_text()
    assert "Every setting gives the same mean, 50." in page
    assert "no metric differs between settings" in page
    assert "mean JCT (s) = 50" in page and "utilisation (busy GPU share) = 0.25" in page
    best = pl.read_csv(out / "tables" / "best.csv")  # (per load: the workloads)
    assert best["workload"].to_list() == ["load=1", "load=2"] * 2
    assert best["best setting"].to_list() == ["all 2 settings tie"] * 4
    assert best["clearly better"].to_list() == ["all equal"] * 4
    assert not (out / "figures" / "curve-load.svg").exists()


def test_a_second_report_into_the_same_folder_leaves_none_of_the_first_ones_files(tmp_path: Path) -> None:
    # the first sweep varies the load (a load curve), the second the seed only: the curve is not the second's
    first = write_results(tmp_path / "a", [_row(i, load=load, mean_jct=10.0 * load + i)
                                           for i, load in enumerate((1.0, 2.0))], SMALL)
    second = write_results(tmp_path / "b", [_row(i, seed=i + 1, mean_jct=10.0 + i) for i in range(2)], SMALL)
    out = tmp_path / "out"
    build_compare_report(first, out)
    assert (out / "tables" / "curve_load.csv").is_file() and (out / "figures" / "curve-load.svg").is_file()
    page = build_compare_report(second, out).read_text()
    listed = set(re.findall(r"<code>((?:figures|tables)/[^<]+)</code>", page))
    on_disk = {f"{p.parent.name}/{p.name}" for sub in ("figures", "tables") for p in (out / sub).glob("*")}
    assert on_disk == listed and "tables/curve_load.csv" not in on_disk


def test_the_title_is_the_experiments_name(tmp_path: Path) -> None:
    # docs/sweeps.md: ``name`` is the experiment's name; sweep.json records it beside the file's name
    folder = write_results(tmp_path / "r", [_row(0, mean_jct=1.0)], SMALL)
    older = build_compare_report(folder, tmp_path / "older").read_text()  # a folder from before the name was kept
    assert "<h1>Sweep comparison: fixture.toml</h1>" in older
    meta = json.loads((folder / "sweep.json").read_text())
    (folder / "sweep.json").write_text(json.dumps({**meta, "name": "mine"}))
    page = build_compare_report(folder, tmp_path / "out").read_text()
    assert "<h1>Sweep comparison: mine</h1>" in page and "<title>Sweep comparison: mine</title>" in page
    assert "from fixture.toml" in page  # the file it was run from is still said


def test_clear_winner_and_overlap(tmp_path: Path) -> None:
    values = {("fifo", 1): 100.0, ("fifo", 2): 102.0, ("sjf", 1): 10.0, ("sjf", 2): 11.0, ("las", 1): 101.0,
              ("las", 2): 103.0}
    rows = [_row(i, policy=p, seed=s, mean_jct=v, fairness=v) for i, ((p, s), v) in enumerate(values.items())]
    folder = write_results(tmp_path / "r", rows, SMALL)
    out = tmp_path / "out"
    build_compare_report(folder, out)
    best = {r["metric"]: r for r in pl.read_csv(out / "tables" / "best.csv").iter_rows(named=True)}
    assert best["mean_jct"]["best setting"] == "policy=sjf" and best["mean_jct"]["clearly better"] == "yes"
    assert best["mean_jct"]["runner-up"] == "policy=fifo"
    # fairness: higher is better; las beats fifo, and their intervals overlap
    assert best["fairness"]["best setting"] == "policy=las" and best["fairness"]["runner-up"] == "policy=fifo"
    assert best["fairness"]["clearly better"] == "no, intervals overlap"


def test_all_cells_failed(tmp_path: Path) -> None:
    rows = [{**_row(i, seed=i), "status": "failed", "error": f"boom {i}", "mean_jct": None} for i in range(2)]
    folder = write_results(tmp_path / "r", rows, SMALL)
    page = build_compare_report(folder, tmp_path / "out").read_text()
    assert "No cell succeeded" in page and "boom 0" in page and "boom 1" in page
    assert "no setting has a successful cell" in page


# ---- errors ---------------------------------------------------------------------------------------

def _error(args: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    with pytest.raises(SystemExit) as exc:
        main(args)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and err.count("\n") == 1, err
    return err.strip()


def _broken(tmp_path: Path, change: str) -> Path:
    rows = [_row(0, mean_jct=1.0), _row(1, seed=2, mean_jct=2.0)]
    folder = write_results(tmp_path / "r", rows, SMALL)
    table = pl.read_parquet(folder / "results.parquet")
    if change == "no-status":
        table.drop("status").write_parquet(folder / "results.parquet")
    elif change == "bad-status":
        table.with_columns(status=pl.Series(["ok", "done"])).write_parquet(folder / "results.parquet")
    elif change == "metric-missing":
        table.drop("mean_jct").write_parquet(folder / "results.parquet")
    elif change == "metric-text":
        table.with_columns(pl.col("mean_jct").cast(pl.String)).write_parquet(folder / "results.parquet")
    elif change == "metric-nan":
        table.with_columns(mean_jct=pl.Series([1.0, float("inf")])).write_parquet(folder / "results.parquet")
    elif change == "not-parquet":
        (folder / "results.parquet").write_text("cell,status\n0,ok\n")
    elif change == "bad-json":
        (folder / "sweep.json").write_text("{not json")
    elif change == "json-parameters":
        (folder / "sweep.json").write_text(json.dumps({"parameters": "policy", "metrics": []}))
    elif change == "no-json":
        (folder / "sweep.json").unlink()
    elif change == "dup-cell":
        table.with_columns(cell=pl.Series([0, 0])).write_parquet(folder / "results.parquet")
    elif change == "empty":
        table.clear().write_parquet(folder / "results.parquet")
    return folder


@pytest.mark.parametrize(("change", "message"), [
    ("no-status", "results.parquet, field 'status': missing column (need cell, cell_id, status, error, trace)"),
    ("bad-status", "results.parquet, row 2, field 'status': status 'done': expected one of ok, failed"),
    ("metric-missing", "results.parquet, field 'mean_jct': listed in sweep.json but not a column of results.parquet"),
    ("metric-text", "results.parquet, field 'mean_jct': metric column is String, not numeric"),
    ("metric-nan", "results.parquet, row 2, field 'mean_jct': inf is not a finite number (a metric is a number or "
                   "null)"),
    ("not-parquet", "results.parquet: not a readable Parquet file"),
    ("bad-json", "sweep.json: not readable JSON"),
    ("json-parameters", "sweep.json, field 'parameters': expected a list of column names"),
    ("no-json", "not a sweep's results folder: no sweep.json (dlcluster sweep writes it)"),
    ("empty", "results.parquet: no cells (the table has no rows)"),
    ("dup-cell", "results.parquet, field 'cell': cell numbers must be unique and non-null"),
])
def test_bad_results_folder_is_one_line_exit_2(change: str, message: str, tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    folder = _broken(tmp_path, change)
    err = _error(["compare", str(folder), "-o", str(tmp_path / "out")], capsys)
    assert err.startswith("error: ") and message in err
    assert not (tmp_path / "out").exists()


def test_not_a_results_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "empty").mkdir()
    err = _error(["compare", str(tmp_path / "empty"), "-o", str(tmp_path / "out")], capsys)
    assert err == f"error: {tmp_path / 'empty'}: not a sweep's results folder: no results.parquet (dlcluster sweep " \
                  "writes it)"
    err = _error(["compare", str(tmp_path / "nowhere"), "-o", str(tmp_path / "out")], capsys)
    assert err == f"error: {tmp_path / 'nowhere'}: not a folder (expected the results folder of dlcluster sweep)"
    (tmp_path / "file").write_text("x")
    err = _error(["compare", str(tmp_path / "empty"), "-o", str(tmp_path / "file")], capsys)
    assert "is a file; the report is written as a folder" in err


def test_bad_jobs_table_of_a_cell_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rows = [_row(0, mean_jct=1.0)]
    folder = write_results(tmp_path / "r", rows, SMALL)
    cell = folder / "cells" / rows[0]["cell_id"]
    cell.mkdir(parents=True)
    pl.DataFrame({"job_id": ["a"], "jct": [1]}).write_parquet(cell / "jobs.parquet")
    err = _error(["compare", str(folder), "-o", str(tmp_path / "out")], capsys)
    assert err == (f"error: {cell / 'jobs.parquet'}, field 'queue_delay': missing column of the simulator's per-job "
                   "table")


def test_read_sweep_errors_are_dlcluster_errors(tmp_path: Path) -> None:
    with pytest.raises(DlclusterError):
        read_sweep(tmp_path)


def test_cli_exit_status_in_a_subprocess(tmp_path: Path) -> None:
    res = subprocess.run([sys.executable, "-m", "dlcluster", "compare", str(tmp_path), "-o", str(tmp_path / "o")],
                         capture_output=True, text=True, check=False)
    assert res.returncode == 2 and "Traceback" not in res.stderr and "no results.parquet" in res.stderr


# ---- the documented command ------------------------------------------------------------------------

def test_docs_command_runs_on_a_sweep(sweep: Path, tmp_path: Path) -> None:
    """docs/compare.md's command (a synopsis, so test_docs_examples skips it) run on the fixture sweep."""
    text = (ROOT / "docs" / "compare.md").read_text()
    commands = [line.strip() for line in text.splitlines() if line.startswith("dlcluster compare ")]
    assert commands == ["dlcluster compare RESULTS -o OUT"]
    args = commands[0].split()[1:]
    args = [str(sweep) if a == "RESULTS" else str(tmp_path / "report") if a == "OUT" else a for a in args]
    _cli(*args)
    page = (tmp_path / "report" / "index.html").read_text()
    assert page.count('<figure class="report-figure"') == 3
    assert not math.isnan(pl.read_csv(tmp_path / "report" / "tables" / "mean_jct.csv")["mean"][0])


@pytest.mark.parametrize(("policies", "estimates", "lines"), [
    # qssf_philly.toml: qssf with two estimators, the others with none: one panel, four lines
    (["fifo", "sjf", "qssf", "qssf"], [None, None, "history", "lgbm"],
     ["fifo", "sjf", "qssf (estimates=history)", "qssf (estimates=lgbm)"]),
    (["fifo", "qssf"], [None, "lgbm"], ["fifo", "qssf (estimates=lgbm)"]),
    # an estimator two policies share: the panels split by it, so each compares the policies under one estimator
    (["sjf", "sjf", "qssf", "qssf"], ["history", "lgbm", "history", "lgbm"], None),
])
def test_a_setting_that_comes_with_the_policy_names_its_lines(policies: list[str], estimates: list[str | None],
                                                             lines: list[str] | None) -> None:
    from dlcluster.sweep.compare import _policy_line_name, _tied

    table = pl.DataFrame({"policy": policies, "estimates": estimates}, schema={"policy": pl.String,
                                                                               "estimates": pl.String})
    assert _tied(table, "policy", "estimates") is (lines is not None)
    if lines is not None:
        assert [_policy_line_name("policy", row, ["estimates"]) for row in table.rows(named=True)] == lines
