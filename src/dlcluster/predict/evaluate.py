"""How well an estimator predicts a trace's durations: replay, per-VC metric tables, figures.

:func:`evaluate` runs an estimator along the trace's recorded timeline (:func:`replay`) over
the GPU jobs — the jobs a scheduler orders, the ones the simulator sees — so every job is
predicted only from jobs that had ended by its submission. Jobs before ``start`` are
predicted too (the estimator learns from them) but only jobs submitted at or after it are
reported. Where the data would make an empty or misleading figure, ``*_absent`` says why in
one line and the figure is not drawn.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl

from dlcluster.errors import InputError
from dlcluster.predict.duration import make_estimator
from dlcluster.predict.estimator import Estimator, final_durations, replay
from dlcluster.predict.metrics import BANDS, METRIC_KEYS, prediction_metrics

if TYPE_CHECKING:  # matplotlib is imported only when a figure is drawn
    from matplotlib.figure import Figure

OVERALL = "overall"  # the terminal's label of the whole-trace row of the metrics table (its vc is null)
PREDICTION_SCHEMA = {"job_id": pl.String, "submit_time": pl.Int64, "estimate": pl.Float64, "duration": pl.Float64}
PLOT_FLOOR = 1.0  # seconds: estimates below it are drawn at it on the log axes


@dataclass
class Evaluation:
    """An estimator's predictions over a window of a trace, and what they cost."""

    predictions: pl.DataFrame  # job_id, submit_time, estimate, duration, vc, gpu_num: GPU jobs with a duration
    stats: dict[str, Any]  # estimator, retrains, train_seconds, predict_seconds, predict_us_per_job
    table: pl.DataFrame  # metrics_table(predictions)

    @property
    def overall(self) -> dict[str, Any]:
        """The ``overall`` row of the metrics table (its last)."""
        return self.table.drop("vc").row(-1, named=True)

    @property
    def vcs(self) -> dict[str, dict[str, Any]]:
        """The per-VC rows of the metrics table, by VC."""
        rows = self.table.head(-1).iter_rows(named=True)
        return {r.pop("vc"): r for r in rows}

    def files_table(self) -> pl.DataFrame:
        """The predictions as written to ``predictions.parquet``: ``job_id, submit_time, estimate, duration``."""
        return self.predictions.select(*PREDICTION_SCHEMA)


def gpu_jobs(jobs: pl.DataFrame, source: str = "<jobs>", scoring: bool = False) -> pl.DataFrame:
    """The GPU jobs of a canonical table; an error if none of them has a duration (``scoring``: none ended with
    one, as a job still running or pending is not scored)."""
    if "duration" not in jobs.columns:
        raise InputError("the trace has no duration column; durations are what is predicted", path=source)
    gpu = jobs.filter(pl.col("gpu_num") > 0)
    if gpu.height == 0:
        raise InputError("the trace has no GPU jobs (gpu_num > 0) to predict", path=source)
    if gpu["duration"].null_count() == gpu.height:
        raise InputError("no GPU job of the trace has a duration; there is nothing to predict", path=source)
    if scoring and np.isnan(final_durations(gpu)).all():  # (still running or pending: its time so far is not one)
        raise InputError("no GPU job of the trace has ended (every one with a duration was still running or "
                         "pending); there is nothing to score", path=source)
    return gpu


def predict_jobs(jobs: pl.DataFrame, estimator: str | Estimator, source: str = "<jobs>",
                 progress: Callable[[int, int], None] | None = None, scoring: bool = False,
                 ) -> tuple[pl.DataFrame, dict[str, Any]]:
    """Replay ``estimator`` over the GPU jobs: ``job_id, submit_time, estimate, duration, vc, gpu_num`` and stats.

    Rows are the GPU jobs with a duration, in the table's order; ``duration`` is null for those still running or
    pending when the trace was taken (their estimate stands: they may be simulated).
    """
    gpu = gpu_jobs(jobs, source, scoring)
    est = make_estimator(estimator) if isinstance(estimator, str) else estimator
    values, driver = replay(est, gpu, progress)
    table = gpu.select(
        pl.col("job_id").cast(pl.String), pl.col("submit_time").cast(pl.Int64),
        pl.Series("estimate", values, dtype=pl.Float64),
        pl.Series("duration", final_durations(gpu), dtype=pl.Float64).fill_nan(None),
        pl.col("vc").cast(pl.String), pl.col("gpu_num").cast(pl.Int64),
    ).filter(gpu["duration"].is_not_null())
    return table, driver.stats()


def evaluate(jobs: pl.DataFrame, estimator: str | Estimator, start: int | None = None,
             source: str = "<jobs>", progress: Callable[[int, int], None] | None = None) -> Evaluation:
    """Predict every GPU job of ``jobs``; keep those submitted at or after ``start`` (UTC epoch s)."""
    table, stats = predict_jobs(jobs, estimator, source, progress, scoring=True)
    table = table.filter(pl.col("duration").is_not_null())  # (a job still running has no duration to score)
    if start is not None:
        table = table.filter(pl.col("submit_time") >= start)
    return Evaluation(table, stats, metrics_table(table))


def metrics_table(predictions: pl.DataFrame) -> pl.DataFrame:
    """:func:`prediction_metrics` per VC (sorted by name), then the whole trace's (``vc`` null: a VC may be named
    anything, "overall" too); ``vc`` first."""
    rows = []
    parts = predictions.partition_by("vc", as_dict=True, maintain_order=False) if predictions.height else {}
    for (vc,), part in sorted(parts.items(), key=lambda kv: str(kv[0][0])):
        rows.append({"vc": str(vc), **_metrics(part)})
    rows.append({"vc": None, **_metrics(predictions)})
    schema = {"vc": pl.String, "jobs": pl.Int64, **{k: pl.Float64 for k in METRIC_KEYS if k != "jobs"}}
    return pl.DataFrame(rows, schema=schema, orient="row")


def _metrics(part: pl.DataFrame) -> dict[str, Any]:
    return prediction_metrics(part["estimate"].to_numpy(), part["duration"].to_numpy(), part["gpu_num"].to_numpy())


def scored(predictions: pl.DataFrame) -> pl.DataFrame:
    """The rows the metrics count: a positive true duration and a finite estimate."""
    return predictions.filter((pl.col("duration") > 0) & pl.col("estimate").is_finite())


def calibration_absent(predictions: pl.DataFrame) -> str | None:
    """Why a calibration plot would be empty or misleading, or None if it can be drawn."""
    rows = scored(predictions)
    if rows.height == 0:
        return "no job with a positive duration in the window"
    if rows["duration"].n_unique() == 1:
        return f"all {rows.height:,} jobs ran {rows['duration'][0]:g} s, so the plot would be a single column"
    return None


def bands_absent(predictions: pl.DataFrame) -> str | None:
    """Why a bands chart would be empty, or None if it can be drawn."""
    return "no job with a positive duration in the window" if scored(predictions).height == 0 else None


def calibration_figure(predictions: pl.DataFrame, title: str = "") -> Figure:
    """Predicted against true duration, log–log hexbin (counts on a log colour scale), y = x and a ±50% band."""
    from matplotlib.colors import LogNorm
    from matplotlib.figure import Figure

    rows = scored(predictions)
    true = rows["duration"].to_numpy()
    pred = np.maximum(rows["estimate"].to_numpy(), PLOT_FLOOR)
    lo = float(min(true.min(), pred.min()))
    hi = float(max(true.max(), pred.max()))
    lo, hi = lo / 1.5, hi * 1.5
    fig = Figure(figsize=(5.6, 4.6), layout="constrained")
    ax = fig.add_subplot()
    cells = ax.hexbin(true, pred, xscale="log", yscale="log", gridsize=60, mincnt=1, cmap="viridis",
                      norm=LogNorm(), extent=(np.log10(lo), np.log10(hi), np.log10(lo), np.log10(hi)),
                      linewidths=0.1)
    line = np.geomspace(lo, hi, 64)
    ax.fill_between(line, 0.5 * line, 1.5 * line, color="#e0731b", alpha=0.18, lw=0, label="within ±50%")
    ax.plot(line, line, color="#c8323c", lw=1.2, label="predicted = true")
    ax.set(xlim=(lo, hi), ylim=(lo, hi), xlabel="true duration (s)", ylabel="predicted duration (s)",
           title=title or f"calibration ({rows.height:,} jobs)")
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(loc="upper left", frameon=False, fontsize=8)
    fig.colorbar(cells, ax=ax, label="jobs per cell")
    return fig


def bands_figure(overall: dict[str, Any], title: str = "") -> Figure:
    """Bar chart of the share of jobs within each error band, the value written on each bar."""
    from matplotlib.figure import Figure

    shares = [100 * float(overall[f"within_{b}"] or 0.0) for b in BANDS]
    fig = Figure(figsize=(5.0, 3.4), layout="constrained")
    ax = fig.add_subplot()
    bars = ax.bar([f"±{b}%" for b in BANDS], shares, color="#1f6fb4", width=0.6)
    ax.bar_label(bars, labels=[f"{s:.1f}%" for s in shares], padding=2, fontsize=9)
    ax.set(ylim=(0, 110), ylabel="jobs within the band (%)", xlabel="error of the predicted duration",
           title=title or f"accuracy bands ({overall['jobs']:,} jobs)")
    ax.spines[["top", "right"]].set_visible(False)
    return fig


def save_figure(fig: Figure, stem: Path) -> list[Path]:
    """Write ``stem.svg`` and ``stem.png`` byte-for-byte reproducibly (into a staging folder: see
    :func:`dlcluster.atomic.atomic_folder`)."""
    import io

    import matplotlib

    buf = io.StringIO()
    with matplotlib.rc_context({"svg.hashsalt": f"dlcluster-{stem.name}", "svg.fonttype": "path"}):
        fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": None})
    svg, png = stem.with_suffix(".svg"), stem.with_suffix(".png")
    svg.write_text(buf.getvalue(), encoding="utf-8")
    fig.savefig(png, format="png", dpi=110, metadata={"Software": None})
    return [svg, png]


# what ``predict eval -o`` writes (an earlier run's are replaced as a whole: see dlcluster.atomic.atomic_folder)
EVAL_FILES = ("predictions.parquet", "metrics.csv", "calibration.svg", "calibration.png", "bands.svg", "bands.png")


def write_outputs(evaluation: Evaluation, outdir: Path, label: str = "") -> tuple[list[Path], list[str]]:
    """Write predictions.parquet, metrics.csv and both figures to ``outdir``: (files written, notes on figures skipped).

    ``label`` (e.g. the estimator's name) starts the figures' titles.
    """
    prefix = f"{label}: " if label else ""
    outdir.mkdir(parents=True, exist_ok=True)
    preds, jobs = evaluation.predictions, evaluation.overall["jobs"]
    written = [outdir / "predictions.parquet", outdir / "metrics.csv"]
    evaluation.files_table().write_parquet(written[0], compression="zstd")
    evaluation.table.write_csv(written[1])
    notes = []
    for stem, reason in (("calibration", calibration_absent(preds)), ("bands", bands_absent(preds))):
        if reason is not None:
            notes.append(f"{stem}.svg/.png not written: {reason}")
            continue
        fig = (calibration_figure(preds, f"{prefix}calibration ({jobs:,} jobs)") if stem == "calibration"
               else bands_figure(evaluation.overall, f"{prefix}accuracy bands ({jobs:,} jobs)"))
        written += save_figure(fig, outdir / stem)
    return written, notes
