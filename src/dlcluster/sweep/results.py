"""A sweep's results table: one row per cell — its parameters, its status and the metrics of its run summary."""

from __future__ import annotations

from typing import Any

import polars as pl

from dlcluster.sweep.experiment import Experiment

OVERALL = ("jobs", "unschedulable", "mean_jct", "p50_jct", "p95_jct", "p99_jct", "mean_queue_delay",
           "p50_queue_delay", "p95_queue_delay", "p99_queue_delay", "mean_slowdown", "mean_bounded_slowdown",
           "makespan", "utilization", "fairness", "preemptions", "slowdown_gpu_hours")
# (summary object, its key, the column)
NESTED = (
    ("energy", "energy_kwh", "energy_kwh"), ("energy", "always_on_kwh", "always_on_kwh"),
    ("energy", "saved_pct", "energy_saved_pct"), ("energy", "utilization_powered", "utilization_powered"),
    ("energy", "wakeups", "wakeups"), ("energy", "boot_delayed_jobs", "boot_delayed_jobs"),
    ("energy", "boot_delay_seconds", "boot_delay_seconds"),
    ("estimates", "mae", "estimates_mae"), ("estimates", "mdape", "estimates_mdape"),
    ("estimates", "spearman", "estimates_spearman"), ("estimates", "within_100", "estimates_within_100"),
    ("failures", "failed_gpu_hours", "failed_gpu_hours"), ("failures", "retries", "retries_made"),
    ("failures", "validation_gpu_hours_saved", "validation_gpu_hours_saved"),
    ("failures", "validation_pool_gpu_hours", "validation_pool_gpu_hours"),
)
METRICS = (*OVERALL, *(column for _, _, column in NESTED))


def metrics_of(summary: dict[str, Any]) -> dict[str, float | None]:
    """The metric columns of one run's ``summary.json`` (None where the run has no such figure)."""
    overall = summary.get("overall", {})
    row: dict[str, float | None] = {m: _number(overall.get(m)) for m in OVERALL}
    for obj, key, column in NESTED:
        row[column] = _number((summary.get(obj) or {}).get(key))
    return row


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def table(exp: Experiment, outcomes: dict[int, dict[str, Any]]) -> pl.DataFrame:
    """The results table of ``exp`` from each cell's outcome (``cell_id, status, error, wall_seconds, summary``).

    Metric columns no cell has a value for are left out, unless the experiment names them; the parameter columns
    keep the file's types.
    """
    rows = []
    for cell in exp.cells:
        got = outcomes[cell.index]
        summary = got.get("summary") or {}
        rows.append({"cell": cell.index, "cell_id": got["cell_id"], "status": got["status"], "error": got["error"],
                     "wall_seconds": float(got["wall_seconds"]), "trace": cell.trace.name,
                     **{p: cell.params.get(p) for p in exp.parameters}, **metrics_of(summary)})
    frame = pl.DataFrame(rows, schema_overrides={m: pl.Float64 for m in METRICS} | {"error": pl.String},
                         infer_schema_length=None)
    empty = [m for m in METRICS if frame[m].null_count() == frame.height and m not in (exp.metrics or ())]
    return frame.drop(empty)


def metric_columns(frame: pl.DataFrame) -> list[str]:
    """The metric columns present in a results table, in the documented order."""
    return [m for m in METRICS if m in frame.columns]
