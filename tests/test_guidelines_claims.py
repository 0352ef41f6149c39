"""The failure and validation figures README.md and docs/guidelines.md quote, regenerated (no ../shared needed)."""

from __future__ import annotations

from pathlib import Path

import polars as pl
from test_sim_helpers import load_example

ROOT = Path(__file__).resolve().parents[1]


def test_early_validation_table(tmp_path: Path) -> None:
    example = load_example("early_validation")
    rows = example.rows(tmp_path, 30)
    text = example.table(rows)
    readme, guide = (ROOT / "README.md").read_text(), (ROOT / "docs/guidelines.md").read_text()
    assert text in readme and text in guide
    example.figure(rows, tmp_path / "failures")
    assert (tmp_path / "failures.png").stat().st_size > 10_000
    by = {r["run"]: r for r in rows}
    blind, none, rule = by["2 retries"], by["no retries"], by["2 retries, none after an early failure"]
    validated = by["2 retries, validation 5 min on 16 GPUs"]
    assert round(blind["failed_gpu_hours"] / none["failed_gpu_hours"], 1) == 3.0  # "triple"
    assert blind["completed_mean_queue_delay"] > 2 * none["completed_mean_queue_delay"]  # "double"
    drop = 1 - validated["completed_mean_queue_delay"] / blind["completed_mean_queue_delay"]
    assert round(100 * drop, 1) == 1.8
    assert round(validated["validation_pool_gpu_hours"] / validated["validation_gpu_hours_saved"], 1) == 2.0
    assert round(blind["failed_gpu_hours"] - rule["failed_gpu_hours"]) == 3139
    trace = pl.read_parquet(tmp_path / "helios-saturn-30d.parquet")
    failed = trace.filter(pl.col("status") == "failed")
    assert round(100 * (failed["duration"] <= 600).mean()) == 78  # "78% of failed jobs fail within 10 minutes"


def test_the_philly_table_records_no_status_and_replaying_its_failures_says_so(tmp_path: Path) -> None:
    """docs/guidelines.md: `--failures replay` on the Philly table (no status at all) gets the note it quotes."""
    import pytest

    from test_sim_helpers import cli

    philly = ROOT.parent / "shared/data/philly"
    if not (philly / "jobs_processed.csv").exists():
        pytest.skip("../shared/data/philly absent")
    res = cli("simulate", str(philly / "jobs_processed.csv"), "--cluster", str(philly / "vc_nodes.csv"), "--start",
              "2017-10-01", "--end", "2017-10-02", "--skip-unknown-vcs", "--failures", "replay", "--retries", "1",
              "-o", str(tmp_path / "out"))
    assert res.returncode == 0, res.stderr
    note = f"note: {philly / 'jobs_processed.csv'} records no job outcome (status): --failures replay has no " \
           "failure to replay\n"
    assert note in res.stderr
    quoted = note.replace(str(philly / "jobs_processed.csv"), "TRACE").strip()
    assert f"the Philly table `jobs_processed.csv`\n(`{quoted}`)" in (ROOT / "docs/guidelines.md").read_text()
