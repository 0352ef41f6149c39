"""The CES figures README.md and docs/ces.md quote, regenerated and found verbatim (needs ../shared)."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
from test_sim_helpers import load_example

from dlcluster.predict.demand import read_series, resample
from dlcluster.predict.forecast import Calendar
from dlcluster.services.ces.open_loop import open_loop
from dlcluster.services.ces.rules import QuantileRule, make_controller

ROOT = Path(__file__).resolve().parents[1]
PHILLY = ROOT.parent / "shared/data/philly"
README = (ROOT / "README.md").read_text()
DOCS = (ROOT / "docs/ces.md").read_text()

pytestmark = pytest.mark.skipif(not (PHILLY / "jobs_processed.csv").exists(), reason="../shared/data/philly absent")


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One folder for every simulation of the example (shared by the headline and the sweep)."""
    return tmp_path_factory.mktemp("ces")


def test_closed_loop_table_in_readme(runs: Path) -> None:
    example = load_example("ces_closed_loop")
    rows = example.headline(runs)
    text = example.table(rows)
    assert text in README and text in DOCS
    # the acceptance: at least 10% saved, mean queueing delay up by at most max(2%, 30 s), for both policies
    for policy in ("fifo", "qssf"):
        base = next(r for r in rows if r["policy"] == policy and r["run"] == "always on")
        for r in rows:
            if r["policy"] == policy and r["run"] != "always on":
                assert r["saved_pct"] >= 10
                assert r["mean_queue_s"] - base["mean_queue_s"] <= max(0.02 * base["mean_queue_s"], 30)
    # what docs/ces.md reads off the table
    by = {(r["policy"], r["run"]): r for r in rows}
    added = [by[p, run]["mean_queue_s"] - by[p, "always on"]["mean_queue_s"] for p in ("fifo", "qssf")
             for run in ("ces helios", "ces quantile")]
    assert (round(min(added)), round(max(added))) == (15, 19)
    more = [by[p, "ces quantile"]["saved_pct"] - by[p, "ces helios"]["saved_pct"] for p in ("fifo", "qssf")]
    assert (round(min(more)), round(max(more))) == (4, 5)
    assert round(by["fifo", "ces quantile"]["p99_queue_s"]) == round(by["fifo", "always on"]["p99_queue_s"]) == 363
    assert round(by["fifo", "ces helios"]["p99_queue_s"] - by["fifo", "always on"]["p99_queue_s"]) == 104


def test_tradeoff_table_in_docs(runs: Path) -> None:
    example = load_example("ces_closed_loop")
    rows = example.sweep(runs)
    assert example.table(rows) in DOCS
    # "lowering the risk trades energy for mean delay steadily"; "at any buffer its p99 delay is worse than the
    # quantile rule's at risk 0.01"
    by = {r["run"]: r for r in rows}
    risks = [by[f"quantile risk {risk}"] for risk in example.RISKS]  # from the riskiest down
    assert all(a["saved_pct"] > b["saved_pct"] and a["mean_queue_s"] > b["mean_queue_s"]
               for a, b in zip(risks, risks[1:], strict=False))
    assert all(by[f"helios buffer {b}"]["p99_queue_s"] > by["quantile risk 0.01"]["p99_queue_s"]
               for b in example.BUFFERS)
    example.tradeoff_figure(rows, runs / "tradeoff")
    assert (runs / "tradeoff.png").stat().st_size > 10_000


@pytest.fixture(scope="module")
def series() -> pl.DataFrame:
    s = resample(read_series(PHILLY / "node_sequence_minutely.csv"), 600)
    return s.filter(pl.col("time") < 1513296000)  # up to 2017-12-14 23:50 UTC: the artifact's test days


def test_philly_forecast_table(series: pl.DataFrame) -> None:
    run = open_loop(series, make_controller("helios", "philly"), step=600, calendar=Calendar("US"))

    def cell(r: dict, suffix: str) -> str:
        return f"{r['rmse' + suffix]:.1f} / {r['smape' + suffix]:.1f}%"

    lines = ["| steps ahead (10 min each) | LightGBM | last value | same time yesterday | same time last week |",
             "|---|---:|---:|---:|---:|"]
    for r in run.horizons.iter_rows(named=True):
        lines.append(f"| {r['steps_ahead']} | " + " | ".join(cell(r, s) for s in ("", "_last", "_yesterday",
                                                                                   "_last_week")) + " |")
    assert "\n".join(lines) in DOCS


def test_open_loop_changes_and_utilisation(series: pl.DataFrame) -> None:
    helios = open_loop(series, make_controller("helios", "philly"), step=600, calendar=Calendar("US")).stats
    quantile = open_loop(series, QuantileRule(), step=600, calendar=Calendar("US")).stats
    assert round(helios["utilization_total"], 2) == 68.98
    assert (round(quantile["changes_per_day"], 1), round(helios["changes_per_day"], 1)) == (18.6, 1.4)
