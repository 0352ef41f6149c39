"""``dlcluster synth``: write a synthetic trace from a preset, a saved model, or a model fitted to a trace."""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from dlcluster.cli import Console, app, err_console
from dlcluster.cli.options import (PATH, not_an_input, not_inside, note_what_is_lost, output_folder, output_format,
                                   reading_options)
from dlcluster.cli.options import load as load_trace
from dlcluster.cli.options import writer as output_writer
from dlcluster.errors import ConfigError, InputError
from dlcluster.text import count

if TYPE_CHECKING:
    import polars as pl

    from dlcluster.trace import Trace


@app.group(invoke_without_command=True)
@click.pass_context
@click.option("--output", "-o", type=PATH, help="Output file (or folder for --format helios/philly).")
@click.option("--preset", "-p", help="Bundled model: philly, helios-venus, helios-earth, helios-saturn, helios-uranus.")
@click.option("--fit", "fit_trace", type=PATH, help="Fit a model to this trace (any readable format) instead.")
@click.option("--fit-format", help="Force the --fit trace's input format (--format names the output's).")
@click.option("--cluster", "cluster_file", type=PATH, help="VC sizes of the --fit trace (a cluster spec file, as "
              "simulate takes; default: the trace's own): each VC's own jobs, sessions and busy days are fitted.")
@click.option("--model", "model_file", type=PATH, help="Use a model JSON saved with --save-model.")
@click.option("--save-model", type=PATH, help="Also write the model used as JSON here.")
@click.option("--days", type=float, help="Days to generate (default: the source's span).")
@click.option("--load", type=float, default=1.0, show_default=True, help="Multiply the arrival rate (2 = twice the "
              "jobs).")
@click.option("--seed", type=int, default=0, show_default=True, help="Random seed: same seed, same output, byte for "
              "byte.")
@click.option("--calendar", type=click.Choice(["source", "drawn"]),
              help="A batched model's (the philly preset's, --fit's) day-by-day rate over its source's window (the "
              "default --days and start): the source's own (source, the default) or drawn from the fitted days "
              "(drawn); shorter windows always draw theirs.")
@click.option("--format", "-f", "fmt", help="Output format: parquet, helios, philly, swf or csv (default: by the "
              "output's suffix).")
@reading_options
def synth(ctx: click.Context, output: Path | None, preset: str | None, fit_trace: Path | None, fit_format: str | None,
          cluster_file: Path | None, model_file: Path | None, save_model: Path | None, days: float | None, load: float,
          seed: int, calendar: str | None,
          fmt: str | None, lenient: bool, mapping: str | None, time_unit: str | None, tz: str | None) -> None:
    """Generate a synthetic job trace calibrated to a real cluster, and write it atomically.

    `dlcluster synth compare REAL GENERATED` compares a generated trace with a real one.
    """
    if ctx.invoked_subcommand is not None:
        return
    from dlcluster.atomic import write_text_atomic
    from dlcluster.synth import fit, generate, load_preset
    from dlcluster.synth.fit import finished
    from dlcluster.synth.generate import check_scale, oversized
    from dlcluster.synth.model import Model

    sources = [s for s in (preset, fit_trace, model_file) if s is not None]
    if len(sources) != 1:
        raise ConfigError("give exactly one of --preset NAME, --fit TRACE or --model FILE")
    if output is None:
        raise ConfigError("give the output file with -o/--output")
    if fit_trace is None:
        given = [flag for flag, value in (("--fit-format", fit_format), ("--cluster", cluster_file),
                                          ("--lenient", lenient), ("--map", mapping), ("--time-unit", time_unit),
                                          ("--tz", tz)) if value]
        if given:
            raise ConfigError(f"{', '.join(given)}: options of the --fit trace; give --fit TRACE")
    check_scale(days, load, seed)
    not_an_input("-o", output, fit_trace, model_file)
    not_inside("-o", output, fit_trace, model_file)  # (a Helios or Philly folder is replaced whole)
    not_an_input("--save-model", save_model, fit_trace, model_file)
    if save_model is not None and save_model.resolve() == output.resolve():
        raise ConfigError(f"--save-model {save_model}: is the -o file too; choose another path for the model")
    writer = output_writer(output, fmt)

    began = time.perf_counter()
    if preset is not None:
        model = load_preset(preset)
    elif model_file is not None:
        if not model_file.is_file():
            raise ConfigError(f"--model {model_file}: no such file")
        model = Model.from_json(model_file.read_text(encoding="utf-8"), source=str(model_file))
    else:
        assert fit_trace is not None  # (exactly one source was given)
        source = load_trace(fit_trace, fit_format, lenient=lenient, mapping=mapping, time_unit=time_unit, tz=tz,
                            format_option="--fit-format")
        spec = None
        if cluster_file is not None:
            import polars as pl

            from dlcluster.io.cluster_spec import read_cluster_spec

            spec = read_cluster_spec(cluster_file)
            unsized = source.jobs.filter(~pl.col("vc").is_in(list(spec.vcs)))
            if unsized.height == source.jobs.height:
                raise ConfigError(f"--cluster {cluster_file}: sizes none of the VCs of {fit_trace.name} (its VCs: "
                                  f"{', '.join(sorted(map(str, source.jobs['vc'].unique().drop_nulls())))[:200]})")
            if unsized.height:  # (the Philly table's 4 VCs without nodes: their jobs go to the sized VCs)
                err_console.print(f"note: {fit_trace}: {unsized.height:,} job(s) of {unsized['vc'].n_unique():,} "
                                  f"VC(s) that {cluster_file.name} does not size are spread over its VCs",
                                  soft_wrap=True)
        model = fit(source, cluster=spec)
        kept = finished(source.jobs).height
        if kept < source.jobs.height:  # (an openb pod list is mostly running pods: the model had a quarter of its jobs)
            err_console.print(f"note: {fit_trace}: the model is fitted to its {kept:,} finished jobs; "
                              f"{source.jobs.height - kept:,} running or pending left out", soft_wrap=True)
    if calendar is not None and model.batches is None:
        raise ConfigError(f"--calendar: the {model.name} model has no calendar (batched models have one: the philly "
                          "preset, and models fitted to a per-job trace)")
    if save_model is not None:
        write_text_atomic(save_model, model.to_json())
    with err_console.status(f"generating {model.name} ..."):
        trace = generate(model, days=days, load=load, seed=seed, calendar=calendar or "source")
        written = writer.write(trace, output)
    gpu_jobs = int((trace.jobs["gpu_num"] > 0).sum())
    span = days if days is not None else model.days
    err_console.print(
        f"synth {model.name}: {count(trace.jobs.height, 'job')} ({count(gpu_jobs, 'GPU job')}) over "
        f"{count(span, 'day')}, load {load:g}, seed {seed} -> {written} "
        f"({time.perf_counter() - began:.1f} s)",
        soft_wrap=True,
    )
    note_what_is_lost(trace, output, output_format(output, fmt))
    too_big, largest = oversized(trace)
    if too_big:
        err_console.print(f"note: {too_big:,} GPU job(s) ask for more GPUs than their VC has (up to {largest:,}): a "
                          "simulation on the model's cluster reports them unschedulable", soft_wrap=True)


@synth.command("compare")
@click.argument("real_path", type=PATH, metavar="REAL")
@click.argument("generated_paths", type=PATH, metavar="GENERATED...", nargs=-1, required=True)
@click.option("--output", "-o", type=PATH, help="Also write an HTML report (and its tables) here.")
@click.option("--cluster", "cluster_file", type=PATH, help="VC sizes for the downstream queueing (default: the real "
              "trace's own, else the first generated one's).")
@click.option("--real-format", help="Force the real trace's input format.")
@click.option("--generated-format", help="Force the generated traces' format.")
@click.option("--loads", default="2,3", show_default=True, help="Loads (inter-arrival divisors) of the queueing "
              "comparison.")
@click.option("--predict", is_flag=True, help="Also compare how well run times can be predicted at submission "
              "(LightGBM retrained daily, as predict eval -e lgbm; slower than the rest of the comparison).")
@reading_options  # (REAL's: a generated trace is read as written)
def compare(real_path: Path, generated_paths: tuple[Path, ...], output: Path | None, cluster_file: Path | None,
            real_format: str | None, generated_format: str | None, loads: str, predict: bool, lenient: bool,
            mapping: str | None, time_unit: str | None, tz: str | None) -> None:
    """Fidelity of generated traces: marginals, arrival process, per-size and per-user structure, and the FIFO/SJF
    queueing each produces on the same cluster as the real one. Several GENERATED traces (seeds of one model) are
    summarised by their median, their range and where the real value falls among them. Exit status 0 whatever
    the distances."""
    import polars as pl

    from dlcluster.io.cluster_spec import read_cluster_spec
    from dlcluster.sim.prepare import check_load
    from dlcluster.synth import compare_report
    from dlcluster.synth.compare import (PREDICTION_ROWS, alike, fidelity, fidelity_over, predictability,
                                         prediction_rows)
    from dlcluster.synth.downstream import never_ran, queueing_by_case, seeds_table, unreplayed
    from dlcluster.synth.fit import finished

    try:
        levels = [float(x) for x in loads.split(",") if x.strip()]
    except ValueError as exc:
        raise ConfigError(f"--loads {loads!r}: give numbers separated by commas") from exc
    if not levels or not all(0 < x < float("inf") for x in levels):
        raise ConfigError(f"--loads {loads!r}: give positive numbers separated by commas")
    twice = sorted({x for x in levels if levels.count(x) > 1})
    if twice:  # (the same rows twice, as a policy named twice is refused by simulate)
        raise ConfigError(f"--loads {loads!r}: {twice[0]:g} is given more than once")
    for level in levels:  # checked before the traces are read, as every option is
        check_load(level, option="--loads")
    output_folder(output, real_path, *generated_paths, cluster_file)

    notes = []  # said on the terminal as they come, and in the report

    def read(path: Path, fmt: str | None, option: str, **options: Any) -> Trace:
        trace = load_trace(path, fmt, format_option=option, **options)
        kept = finished(trace.jobs)
        if kept.height < trace.jobs.height:  # (as --fit does: a model's jobs all end, a snapshot's need not)
            notes.append(f"{path.name}: the tables compare its {kept.height:,} finished jobs; "
                         f"{trace.jobs.height - kept.height:,} running or pending when the trace was taken are left "
                         "out (their run times are not final)")
            err_console.print(f"note: {notes[-1]}", soft_wrap=True)
            trace = dataclasses.replace(trace, jobs=kept)
        if trace.jobs["submit_time"].drop_nulls().len() == 0:
            raise InputError("no finished job with a submission time: nothing to compare", path=path)
        return trace

    real = read(real_path, real_format, "--real-format", lenient=lenient, mapping=mapping, time_unit=time_unit, tz=tz)
    real_view = compare_report.summarize(real) if output is not None else None
    spec = read_cluster_spec(cluster_file) if cluster_file is not None else real.cluster
    real_cases = None
    real_predicted: dict[str, float] | None = None
    tables, runs, views = [], [], []

    def left_out(trace: Trace, path: Path) -> None:
        count = unreplayed(trace) if spec is not None else 0
        if count:
            notes.append(f"the queueing leaves out the {count:,} GPU job(s) of {path.name} without a duration or "
                         "submit time (running or pending when the trace was taken)")
            err_console.print(f"note: {notes[-1]}", soft_wrap=True)

    def predicted(trace: Trace) -> dict[str, float]:
        """:func:`predictability`, or no value (and a note) for a trace with nothing to predict."""
        try:
            return predictability(trace)
        except InputError as exc:  # (no GPU job, or none with a run time: its rows are empty, the rest stands)
            notes.append(f"--predict: {exc}")
            err_console.print(f"note: {notes[-1]}", soft_wrap=True)
            return dict.fromkeys((key for key, _ in PREDICTION_ROWS), float("nan"))

    # one generated trace in memory at a time: each leaves its table, its queueing and what the report draws of it
    for i, path in enumerate(generated_paths):
        generated = read(path, generated_format, "--generated-format",
                         zone_advice="a generated trace is read as written: compare its Parquet, which keeps its zone")
        if i == 0:  # (without VC sizes of its own or given, the real trace runs on the first generated one's)
            spec = spec or generated.cluster
            left_out(real, real_path)
            real_cases = queueing_by_case(real, spec, levels) if spec is not None else None
        left_out(generated, path)
        with err_console.status(f"comparing {path.name} ({i + 1} of {len(generated_paths)}) ..."):
            tables.append(fidelity(real, generated))
            if predict:
                # a generated trace's users count as far as the real trace has users of its own
                if real_predicted is None:
                    real_predicted = predicted(real)
                generated_alike = alike(real, generated)[1]
                tables[-1] = pl.concat([tables[-1], prediction_rows(real_predicted, predicted(generated_alike))])
            if spec is not None:
                runs.append(queueing_by_case(generated, spec, levels))
            if real_view is not None:
                views.append(compare_report.summarize(generated))
        del generated
    several = len(generated_paths) > 1
    table = fidelity_over(tables) if several else tables[0]
    queueing = None
    if real_cases is not None:
        queueing = seeds_table(real_cases, runs)
        if not several:
            queueing = queueing.drop("low_s", "high_s", "real_rank")
    _print_tables(table, queueing, real_path.name,
                  f"{len(generated_paths)} generated traces" if several else generated_paths[0].name)
    idle = never_ran(runs, [p.name for p in generated_paths]) if several and runs else None
    if idle is not None:
        err_console.print(f"note: {idle}", soft_wrap=True)
        notes.append(idle)
    if output is not None and real_view is not None:
        page = compare_report.write(output, real_view, views, table, queueing,
                                    (real_path.name, [p.name for p in generated_paths]), ". ".join(notes) or None)
        err_console.print(f"report: {page}")


def _print_tables(table: pl.DataFrame, queueing: pl.DataFrame | None, real: str, generated: str) -> None:
    """The fidelity table and the queueing table on the terminal (with several generated traces: their median,
    range and the share below the real value)."""
    from rich.table import Table

    from dlcluster.synth.downstream import not_simulated

    several = "real_rank" in table.columns
    shown = Table(title=f"fidelity of {generated} against {real}")
    # (several traces: short headings, so that the two extra columns fit a terminal of 80 characters)
    for column in ("metric", "real", "median", "error", "range", "below\nreal") if several else \
            ("metric", "real", "generated", "relative error"):
        shown.add_column(column, justify="left" if column == "metric" else "right")
    for row in table.iter_rows(named=True):
        extra = (_range(row["low"], row["high"]), _share(row["real_rank"])) if several else ()
        shown.add_row(row["metric"], _num(row["real"]), _num(row["generated"]), _pct(row["relative_error"]), *extra)
    Console().print(shown)
    if queueing is None:
        err_console.print("no downstream queueing: neither trace carries VC sizes (give --cluster FILE)")
        return
    sim = Table(title="simulated queueing delay (s) on the same cluster")
    for column in ("load", "policy", "stat", "real", "median", "error", "range", "below\nreal") if several else \
            ("load", "policy", "statistic", "real", "generated", "relative error"):
        sim.add_column(column, justify="left" if column in ("policy", "stat", "statistic") else "right")
    for row in queueing.iter_rows(named=True):
        extra = (_range(row["low_s"], row["high_s"]), _share(row["real_rank"])) if several else ()
        sim.add_row(f"{row['load']:g}", row["policy"], row["statistic"], _num(row["real_s"]),
                    _num(row["generated_s"]), _pct(row["relative_error"]), *extra)
    Console().print(sim)
    if (why := not_simulated(queueing)) is not None:
        err_console.print(f"note: {why}", soft_wrap=True)


def _range(low: float | None, high: float | None) -> str:
    return f"{_short(low)}–{_short(high)}"


def _short(x: float | None) -> str:
    """A number in at most five characters or so: 0.0123, 987, 12.3k, 4.56M (a range column fits a terminal)."""
    if x is None or x != x:
        return "–"
    for scale, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(x) >= scale:
            return f"{x / scale:.3g}{suffix}"
    return f"{x:.3g}"


def _share(x: float | None) -> str:
    return "–" if x is None or x != x else f"{x:.0%}"


def _num(x: float | None) -> str:
    if x is None or x != x:
        return "–"
    return f"{x:,.0f}" if abs(x) >= 100 else f"{x:.4g}"


def _pct(x: float | None) -> str:
    return "–" if x is None or x != x else f"{x:+.1%}"
