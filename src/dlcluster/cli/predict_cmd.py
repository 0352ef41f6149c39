"""``dlcluster predict run`` and ``dlcluster predict eval``: duration estimates along a trace's recorded timeline."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from rich.table import Table

from dlcluster.atomic import atomic_folder, write_atomic
from dlcluster.cli import Console, app, echo, err_console
from dlcluster.cli.long_runs import progress_bar, wall_instant
from dlcluster.cli.options import PATH, load, not_an_input, output_folder, trace_options
from dlcluster.errors import ConfigError
from dlcluster.predict.duration import ESTIMATORS, make_estimator
from dlcluster.text import count

if TYPE_CHECKING:
    import polars as pl


@app.group(no_args_is_help=True)
def predict() -> None:
    """Predict job durations at submission, and score the predictions."""


TRACE = click.argument("trace_path", type=PATH, metavar="TRACE")
ESTIMATOR = click.option("--estimator", "-e", default="history", show_default=True,
                         help=f"Estimator: {', '.join(ESTIMATORS)} (history: mean duration of the user's earlier ended "
                         "jobs; lgbm: LightGBM, retrained daily; oracle: the true duration).")


def _fmt_seconds(value: float | None) -> str:
    """Seconds in the unit that reads best: s below 2 min, min below 2 h, else h."""
    if value is None:
        return "–"
    if value < 120:
        return f"{value:.1f} s"
    if value < 7200:
        return f"{value / 60:.1f} min"
    return f"{value / 3600:.1f} h"


def _fmt_share(value: float | None) -> str:
    return "–" if value is None else f"{100 * value:.1f}%"


def _fmt_corr(value: float | None) -> str:
    return "–" if value is None else f"{value:.3f}"


def _table(rows: list[dict[str, Any]], title: str) -> Table:
    from dlcluster.predict.evaluate import OVERALL

    table = Table(title=title)
    for name in ("VC", "jobs", "MAE", "MdAPE", "±10%", "±50%", "±100%", "±1000%", "Spearman", "Kendall"):
        table.add_column(name, justify="left" if name == "VC" else "right")
    for i, r in enumerate(rows):
        label = OVERALL if i == len(rows) - 1 else r["vc"]  # (the whole trace's row has no VC)
        table.add_row(label, f"{r['jobs']:,}", _fmt_seconds(r["mae"]), _fmt_share(r["mdape"]),
                      *(_fmt_share(r[f"within_{b}"]) for b in (10, 50, 100, 1000)),
                      _fmt_corr(r["spearman"]), _fmt_corr(r["kendall"]), end_section=i == len(rows) - 2,
                      style="bold" if i == len(rows) - 1 else None)
    return table


def _cost(stats: dict[str, Any]) -> str:
    per_job = stats.get("predict_us_per_job")
    return (f"{stats['estimator']}: {stats['retrains']:,} retrains, training {stats['train_seconds']:.2f} s CPU, "
            f"predicting {stats['predict_seconds']:.2f} s CPU"
            + (f" ({per_job:.1f} µs per job)" if per_job is not None else ""))


@contextmanager
def _progress(estimator: str) -> Iterator[Callable[[int, int], None]]:
    """A progress bar of jobs predicted (on a terminal) and the callback that advances it."""
    with progress_bar(err_console) as bar:
        task = bar.add_task(f"{estimator}: jobs predicted", total=None)
        yield lambda done, total: bar.update(task, completed=done, total=total)


@predict.command("eval")
@TRACE
@ESTIMATOR
@click.option("--start", help="Report jobs submitted at or after this time, 'YYYY-MM-DD[ HH:MM:SS]' on the trace's "
              "wall clock; earlier jobs are still learnt from.")
@click.option("--output", "-o", type=PATH, help="Also write predictions.parquet, metrics.csv, calibration.svg/.png "
              "and bands.svg/.png to this folder.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of the table.")
@trace_options
def evaluate_cmd(trace_path: Path, estimator: str, start: str | None, output: Path | None, as_json: bool,
                 fmt: str | None, lenient: bool, mapping: str | None, time_unit: str | None, tz: str | None) -> None:
    """Score an estimator on a trace: each GPU job predicted at its submission from the jobs ended by then."""
    from dlcluster.predict.evaluate import EVAL_FILES, evaluate, write_outputs

    est = make_estimator(estimator)  # an unknown name fails before the trace is read
    output_folder(output, trace_path)
    trace = load(trace_path, fmt, lenient=lenient, mapping=mapping, time_unit=time_unit, tz=tz)
    since = wall_instant(start, "--start", trace.timezone, wall=False, first=True) if start is not None else None
    with _progress(estimator) as progress:
        result = evaluate(trace.jobs, est, since, source=str(trace_path), progress=progress)
    notes: list[str] = []
    if output is not None:
        with atomic_folder(output, EVAL_FILES) as staged:
            written, notes = write_outputs(result, staged, label=estimator)
    if as_json:
        doc = {"estimator": estimator, "start": start, **result.overall, "vcs": result.vcs,
               **{k: result.stats[k] for k in ("retrains", "train_seconds", "predict_seconds", "predict_us_per_job")}}
        echo(json.dumps(doc))
    else:
        window = f" from {start}" if start else ""
        title = f"{estimator} on {trace_path}{window}: predicted vs true duration (GPU jobs)"
        console = Console()
        if not console.is_terminal:  # piped or redirected: the whole table, not one squeezed into 80 columns
            console.width = 120
        console.print(_table(list(result.table.iter_rows(named=True)), title))
        console.print(_cost(result.stats), highlight=False)
    if not result.overall["jobs"]:
        notes.append(_nothing_scored(result.predictions, start))
    for note in notes:
        err_console.print(note, style="yellow", soft_wrap=True)
    if output is not None:
        err_console.print(f"wrote {', '.join(p.name for p in written)} to {output}", soft_wrap=True)


def _nothing_scored(predictions: pl.DataFrame, start: str | None) -> str:
    """Why no job was scored: none in the window, every one lasted 0 s, or none had an estimate."""
    window = f" from {start}" if start else ""
    if not predictions.height:
        return f"note: no job was scored: no GPU job with a duration was submitted{window}"
    if (predictions["duration"] == 0).all():
        return (f"note: no job was scored: the {predictions.height:,} GPU job(s) with a duration{window} all lasted "
                "0 s (a zero-length job has no relative error)")
    return (f"note: no job was scored: none of the {predictions.height:,} GPU job(s) with a duration{window} has both "
            "a positive duration and a finite estimate")


@predict.command("run")
@TRACE
@ESTIMATOR
@click.option("--output", "-o", type=PATH, required=True, help="Estimates CSV (job_id,duration) to write, the input "
              "of `dlcluster simulate --estimates FILE`.")
@trace_options
def run_cmd(trace_path: Path, estimator: str, output: Path, fmt: str | None, lenient: bool, mapping: str | None,
            time_unit: str | None, tz: str | None) -> None:
    """Write every GPU job's predicted duration (seconds) as a job_id,duration CSV, atomically."""
    import polars as pl

    from dlcluster.predict.evaluate import predict_jobs

    est = make_estimator(estimator)
    not_an_input("--output", output, trace_path)
    if output.is_dir():
        raise ConfigError(f"--output {output}: is a folder, expected a CSV file name")
    if output.suffix.lower() in (".parquet", ".pq", ".arrow", ".feather", ".json", ".gz", ".zst", ".bz2", ".xz",
                                 ".zip"):  # (plain CSV text was written there)
        raise ConfigError(f"--output {output}: estimates are written as CSV (job_id,duration); name the file .csv")
    trace = load(trace_path, fmt, lenient=lenient, mapping=mapping, time_unit=time_unit, tz=tz)
    with _progress(estimator) as progress:
        table, stats = predict_jobs(trace.jobs, est, source=str(trace_path), progress=progress)
    estimates = table.select("job_id", duration="estimate")
    write_atomic(output, estimates.write_csv)
    err_console.print(f"wrote {estimates.height:,} estimates to {output} ({_cost(stats)})", soft_wrap=True)
    unestimated = trace.jobs.filter((pl.col("gpu_num") > 0) & pl.col("duration").is_null()).height
    if unestimated:  # (nothing to simulate, so no estimate)
        err_console.print(f"note: {count(unestimated, 'GPU job')} without a duration (the simulator cannot run "
                          f"{'it' if unestimated == 1 else 'them'}) {'has' if unestimated == 1 else 'have'} no "
                          "estimate", soft_wrap=True)
