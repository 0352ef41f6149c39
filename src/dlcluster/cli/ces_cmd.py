"""``dlcluster ces``: replay node demand through the CES controller (open loop) and print the study's figures."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import click
from rich.table import Table

from dlcluster.atomic import atomic_folder
from dlcluster.cli import Console, app, echo, err_console
from dlcluster.cli.options import PATH, ces_options, load, output_folder, trace_options
from dlcluster.errors import ConfigError, InputError, UnknownFormatError, first_names
from dlcluster.services.ces.params import PRESETS

if TYPE_CHECKING:
    import polars as pl

    from dlcluster.cluster import ClusterSpec

PRESET_NAMES = tuple(PRESETS)
COMPAT = ("helios-artifact",)
FIGURES = (("changes_per_day", "changes per day"), ("wakeups_per_day", "wake-ups per day"),
           ("mean_wakeup_size", "mean wake-up (nodes)"), ("mean_abs_change", "mean |change| (nodes)"),
           ("median_abs_change", "median |change| (nodes)"), ("mean_off_nodes", "mean powered-off nodes"),
           ("utilization_total", "utilisation of all nodes (%)"),
           ("utilization_powered", "utilisation of powered nodes (%)"), ("rmse", "forecast RMSE (nodes)"),
           ("smape", "forecast sMAPE (%)"), ("shortages", "shortage events"))


def _is_series(path: Path) -> bool:
    """Whether ``path`` is a CSV demand series, plain or compressed (``time`` and busy-node and ``total`` columns)."""
    from dlcluster.io._common import CSV_NAMES, first_line
    from dlcluster.predict.demand import USED_NAMES

    if not path.name.lower().endswith(CSV_NAMES):
        return False
    header = [c.strip() for c in first_line(path).split(",")]
    return "time" in header and "total" in header and any(c in header for c in USED_NAMES)


TIMELINE_COLUMNS = {"time", "vc", "total_gpus", "idle_gpus", "nodes_busy"}


def _timeline(path: Path) -> Path | None:
    """The simulation timeline ``path`` is, or holds (a ``simulate`` output folder), or None."""
    if path.is_dir():
        inside = path / "timeline.parquet"
        if inside.is_file():
            return inside
        runs = sorted(p.parent.name for p in path.glob("*/timeline.parquet"))
        if runs:
            raise ConfigError(f"{path} holds one run per policy: pass one of its folders ({', '.join(runs)})")
        return None
    if path.suffix.lower() != ".parquet":
        return None
    import polars as pl

    try:
        return path if TIMELINE_COLUMNS <= set(pl.read_parquet_schema(path)) else None
    except pl.exceptions.PolarsError:  # (not Parquet after all: the trace readers say what it is)
        return None


def _fmt(value: Any) -> str:
    if value is None:
        return "–"
    return f"{value:.2f}" if isinstance(value, float) else str(value)


@app.command()
@click.argument("source", type=PATH, metavar="SERIES_OR_TRACE")
@click.option("--cluster-preset", "preset", help=f"The study's rule hyperparameters: {', '.join(PRESET_NAMES)} "
              "(default philly).")
@click.option("--rule", default="helios", show_default=True, help="Controller: helios (the study's rule) or quantile "
              "(dlcluster's: keep the forecast peak's 1-risk quantile powered).")
@ces_options
@click.option("--step", type=click.IntRange(min=60, max=86_400), default=600, show_default=True,
              help="Controller step, seconds (demand: maximum over a step).")
@click.option("--test-days", type=float, help="Replay the last N days; train the forecast before them (default 14; "
              "the artifact's own window with --compat).")
@click.option("--compat", help="helios-artifact: the artifact's own forecast and windows (its forecasts beyond an "
              "hour read actual future values).")
@click.option("--cluster", type=PATH, help="Cluster spec for a trace (default: the trace's own), or for the "
              "timeline of a run whose nodes never changed power state (its node counts).")
@click.option("--pooled", is_flag=True, help="For a trace: share the whole cluster as one VC, as `simulate --pooled` "
              "does (e.g. an openb pod list, whose VCs are QoS classes).")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of tables.")
@click.option("--output", "-o", type=PATH, help="Write steps.parquet, horizons.parquet (not with --compat), "
              "summary.json and the ces.svg/.png figure to this folder.")
@trace_options
def ces(
    source: Path,
    preset: str | None,
    rule: str,
    buffer: int | None,
    risk: float | None,
    step: int,
    test_days: float | None,
    holidays: str | None,
    events: str | None,
    compat: str | None,
    cluster: Path | None,
    pooled: bool,
    as_json: bool,
    output: Path | None,
    fmt: str | None,
    lenient: bool,
    mapping: str | None,
    time_unit: str | None,
    tz: str | None,
) -> None:
    """Replay node demand through the CES controller: powered-off nodes, wake-ups, utilisation, forecast error.

    SERIES_OR_TRACE: a CSV demand series 'time, used|active, total' (nodes), a trace, or a simulation's timeline
    (the folder `simulate -o` wrote, or its timeline.parquet).
    """
    import polars as pl

    from dlcluster.predict.demand import from_timeline, from_trace, read_series, resample
    from dlcluster.predict.forecast import DAY, Calendar, parse_events
    from dlcluster.services.ces.open_loop import check_test_days
    from dlcluster.services.ces.rules import make_controller

    if preset is not None and preset not in PRESET_NAMES:
        raise ConfigError(f"--cluster-preset {preset!r}: choose one of {', '.join(PRESET_NAMES)}")
    if compat is not None and compat not in COMPAT:
        raise ConfigError(f"--compat {compat!r}: choose one of {', '.join(COMPAT)}")
    if DAY % step:  # (a day of steps is the forecaster's lag: a step that does not divide it shortens the replay)
        raise ConfigError(f"--step {step}: must divide a day (86,400 s) evenly, e.g. 300, 600, 900 or 3600")
    if test_days is not None:
        check_test_days(test_days, step)
    if compat is not None and (rule != "helios" or buffer is not None or holidays is not None or events is not None
                               or step != 600 or test_days is not None):
        raise ConfigError("--compat helios-artifact runs the artifact's own rule, step, window and forecast: "
                          "drop --rule, --buffer, --step, --test-days, --holidays and --events")
    output_folder(output, source, cluster)
    # (checks the values before any work; the quantile rule takes no preset)
    controller = make_controller(rule, preset, buffer=buffer, risk=risk, preset_flag="--cluster-preset",
                                 rule_flag="--rule")
    preset = (preset or "philly") if rule == "helios" else None
    calendar = Calendar(holidays, parse_events(events))
    if not source.exists():
        raise InputError("no such file or folder", path=source)
    given = [flag for flag, value in (("--lenient", lenient), ("--map", mapping), ("--time-unit", time_unit),
                                      ("--tz", tz), ("--pooled", pooled)) if value]
    timeline = _timeline(source) if fmt is None else None
    if fmt is None and _is_series(source):  # --format reads even a series-like CSV as a trace
        if cluster is not None:
            given.append("--cluster")
        if given:
            raise ConfigError(f"{', '.join(given)}: options of a trace, but {source} is a demand series "
                              "(time, used|active, total)")
        minutes = read_series(source)
    elif timeline is not None:
        if given:
            raise ConfigError(f"{', '.join(given)}: options of a trace, but {source} is a simulation's timeline")
        from dlcluster.io.cluster_spec import read_cluster_spec

        spec = read_cluster_spec(cluster) if cluster is not None else None
        # as for a trace, the series stops at the last submission (the run's jobs table beside the timeline)
        jobs = timeline.parent / "jobs.parquet"
        until = cast("int | None", pl.read_parquet(jobs, columns=["submit"])["submit"].max()) \
            if jobs.is_file() else None
        try:
            minutes = from_timeline(pl.read_parquet(timeline), spec, until)
        except InputError as exc:
            raise InputError(exc.detail, path=timeline, field=exc.field) from None
    else:
        if fmt is None:
            from dlcluster.io import FORMATS, detect_format

            try:
                fmt = detect_format(source, options={"mapping": mapping, "time_unit": time_unit})
            except UnknownFormatError:  # the message names what this command reads, not only traces
                raise InputError("neither a demand series (columns time, used, active or busy, and total: nodes), "
                                 "a simulation's output folder, nor a trace of a known format; for a trace pass "
                                 f"--format ({', '.join(FORMATS)})",
                                 path=source) from None
        trace = load(source, fmt, lenient=lenient, mapping=mapping, time_unit=time_unit, tz=tz)
        if cluster is not None:
            from dlcluster.io.cluster_spec import read_cluster_spec

            spec = read_cluster_spec(cluster)
        elif trace.cluster is not None:
            spec = trace.cluster
        else:
            raise ConfigError(f"{source} carries no cluster spec; pass --cluster FILE")
        trace_jobs = trace.jobs
        if pooled:
            spec = spec.pooled()
            trace_jobs = trace_jobs.with_columns(pl.lit("all").alias("vc"))
        _note_vcs_left_out(trace_jobs, spec, source)
        _note_running(trace_jobs, source)
        # after the last submission the demand only drains (a long job can run for months): not a workload to
        # replay, so the series stops there
        last_submit = cast("int | None", trace_jobs["submit_time"].max())
        try:
            minutes, capped = from_trace(trace_jobs, spec, until=last_submit)
        except InputError as exc:
            raise InputError(exc.detail, path=source, field=exc.field) from None
        if capped:
            shown = ", ".join(f"{vc} ({busy:,} of {gpus:,})" for vc, (busy, gpus) in sorted(capped.items())[:5])
            more = f" and {len(capped) - 5} more" if len(capped) > 5 else ""
            err_console.print(f"note: {source}: {len(capped)} VC(s) had more GPUs busy at a time than the cluster spec "
                              f"gives them, their demand capped at all their nodes: {shown}{more}", soft_wrap=True)
    summary: dict[str, Any] = {"source": str(source), "preset": preset, "compat": compat}
    days: float
    if compat is not None:
        from dlcluster.services.ces.artifact import artifact_open_loop

        run = artifact_open_loop(minutes, preset or "philly")
        steps, horizons, stats, days = run.steps, None, run.stats, run.days
        label = "forecast (artifact's model)"
        summary["rule"] = "helios"
    else:
        from dlcluster.services.ces.open_loop import TEST_DAYS, open_loop

        series = resample(minutes, step)
        try:
            ol = open_loop(series, controller, step=step, test_days=TEST_DAYS if test_days is None else test_days,
                           calendar=calendar)
        except InputError as exc:  # (too short a series: named)
            raise InputError(exc.detail, path=source, field=exc.field) from None
        steps, horizons, stats, days = ol.steps, ol.horizons, ol.stats, ol.days
        label = f"forecast {controller.targets[0].label} steps"
        summary.update(rule=rule, step=step, holidays=calendar.country, events=[str(e) for e in calendar.events],
                       horizons=horizons.to_dicts())
    summary = {**summary, "days": days, **stats}
    notes = []
    if compat is None:
        sampled = minutes.select((pl.col("time") // step * step).unique())["time"]
        unseen = steps.filter(~pl.col("time").is_in(sampled.implode())).height
        if unseen:
            notes.append(f"{unseen:,} of the {steps.height:,} replayed steps have no sample in the series: each repeats "
                         "the step before, and the figures count it as observed")
    if steps["used"].n_unique() <= 1:
        notes.append(f"the demand is constant ({steps['used'][0]} busy nodes) over the replayed days: every figure is "
                     "degenerate")
    if notes:
        summary["notes"] = notes
    if output is not None:
        from dlcluster.services.ces.report import OPEN_LOOP_FILES, write_open_loop

        title = f"CES open loop, {rule} rule" + (f", {preset} hyperparameters" if preset else "") + (
            f" ({compat})" if compat else "")
        with atomic_folder(output, OPEN_LOOP_FILES) as staged:
            write_open_loop(staged, steps, summary, horizons, title, label)
    if as_json:
        echo(json.dumps(summary))
        return
    console = Console()
    for note in summary.get("notes", []):
        err_console.print(f"note: {note}", soft_wrap=True)
    table = Table(title=f"CES open loop over {days:g} days ({summary['rule']} rule)", show_header=False)
    for key, name in FIGURES:
        table.add_row(name, _fmt(stats.get(key)))
    console.print(table)
    if horizons is not None:
        ht = Table(title="forecast error by horizon (RMSE nodes / sMAPE %)")
        for col in ("target", "model", "last value", "same time yesterday", "same time last week"):
            ht.add_column(col, justify="left" if col == "target" else "right")
        for r in horizons.iter_rows(named=True):
            ht.add_row(r["target"], *(f"{_fmt(r[f'rmse{s}'])} / {_fmt(r[f'smape{s}'])}"
                                      for s in ("", "_last", "_yesterday", "_last_week")))
        console.print(ht)


def _note_running(jobs: pl.DataFrame, source: Path) -> None:
    """Note the GPU jobs still running (a snapshot's: a start, no end): the demand leaves them out."""
    from dlcluster.analysis.load import still_running

    running, _ = still_running(jobs)
    if running:
        err_console.print(f"note: {source}: {running:,} GPU job(s) with a start and no end (still running) left out of "
                          "the demand", soft_wrap=True)


def _note_vcs_left_out(jobs: pl.DataFrame, spec: ClusterSpec, source: Path) -> None:
    """Refuse a trace none of whose GPU jobs' VCs is in ``spec``; note the GPU jobs of VCs it lacks."""
    import polars as pl

    gpu = jobs.filter(pl.col("gpu_num") > 0)
    out = gpu.filter(~pl.col("vc").cast(pl.String).is_in(list(spec.vcs)))
    if out.height == 0:
        return
    vcs = sorted(out["vc"].cast(pl.String).fill_null("(none)").unique().to_list())
    named = first_names(vcs)
    if out.height == gpu.height:
        raise InputError(f"no GPU job's VC is in the cluster spec ({spec.source or 'the trace'}): VCs {named}",
                         path=source, field="vc")
    err_console.print(f"note: {source}: {out.height:,} GPU job(s) of VCs not in the cluster spec left out of the "
                      f"demand: {named}", soft_wrap=True)
