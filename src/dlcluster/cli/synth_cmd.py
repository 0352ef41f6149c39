"""``dlcluster synth``: write a synthetic trace from a preset, a saved model, or a model fitted to a trace."""

from __future__ import annotations

import time
from pathlib import Path

import typer

from dlcluster.cli import Console, app, err_console
from dlcluster.cli.options import LenientOpt, MapOpt, TimeUnitOpt, TzOpt
from dlcluster.cli.options import load as load_trace
from dlcluster.cli.options import writer as output_writer
from dlcluster.errors import ConfigError


synth_app = typer.Typer(add_completion=False, pretty_exceptions_enable=False)
app.add_typer(synth_app, name="synth")


@synth_app.callback(invoke_without_command=True)
def synth(
    ctx: typer.Context,
    output: Path = typer.Option(None, "--output", "-o", help="Output file (or folder for --format helios/philly)."),
    preset: str = typer.Option(None, "--preset", "-p",
                               help="Bundled model: philly, helios-venus, helios-earth, helios-saturn, helios-uranus."),
    fit_trace: Path = typer.Option(None, "--fit", help="Fit a model to this trace (any readable format) instead."),
    fit_format: str = typer.Option(None, "--fit-format", help="Force the --fit trace's input format (--format "
                                   "names the output's)."),
    model_file: Path = typer.Option(None, "--model", help="Use a model JSON saved with --save-model."),
    save_model: Path = typer.Option(None, "--save-model", help="Also write the model used as JSON here."),
    days: float = typer.Option(None, "--days", help="Days to generate (default: the source's span)."),
    load: float = typer.Option(1.0, "--load", help="Multiply the arrival rate (2 = twice the jobs)."),
    seed: int = typer.Option(0, "--seed", help="Random seed: same seed, same output, byte for byte."),
    fmt: str = typer.Option(None, "--format", "-f", help="Output format: parquet, helios, philly, swf or csv "
                            "(default: by the output's suffix)."),
    lenient: bool = LenientOpt,
    mapping: str = MapOpt,
    time_unit: str = TimeUnitOpt,
    tz: str = TzOpt,
) -> None:
    """Generate a synthetic job trace calibrated to a real cluster, and write it atomically.

    `dlcluster synth compare REAL GENERATED` compares a generated trace with a real one.
    """
    if ctx.invoked_subcommand is not None:
        return
    from dlcluster.atomic import write_text_atomic
    from dlcluster.synth import fit, generate, load_preset
    from dlcluster.synth.generate import check_scale
    from dlcluster.synth.model import Model

    sources = [s for s in (preset, fit_trace, model_file) if s is not None]
    if len(sources) != 1:
        raise ConfigError("give exactly one of --preset NAME, --fit TRACE or --model FILE")
    if output is None:
        raise ConfigError("give the output file with -o/--output")
    if fit_trace is None:
        given = [flag for flag, value in (("--fit-format", fit_format), ("--lenient", lenient), ("--map", mapping),
                                          ("--time-unit", time_unit), ("--tz", tz)) if value]
        if given:
            raise ConfigError(f"{', '.join(given)}: options of the --fit trace; give --fit TRACE")
    check_scale(days, load, seed)
    writer = output_writer(output, fmt)

    began = time.perf_counter()
    if preset is not None:
        model = load_preset(preset)
    elif model_file is not None:
        if not model_file.is_file():
            raise ConfigError(f"--model {model_file}: no such file")
        model = Model.from_json(model_file.read_text(encoding="utf-8"), source=str(model_file))
    else:
        model = fit(load_trace(fit_trace, fit_format, lenient=lenient, mapping=mapping, time_unit=time_unit, tz=tz))
    if save_model is not None:
        write_text_atomic(save_model, model.to_json())
    with err_console.status(f"generating {model.name} ..."):
        trace = generate(model, days=days, load=load, seed=seed)
        written = writer.write(trace, output)
    gpu_jobs = int((trace.jobs["gpu_num"] > 0).sum())
    err_console.print(
        f"synth {model.name}: {trace.jobs.height:,} jobs ({gpu_jobs:,} GPU jobs) over "
        f"{days if days is not None else model.days:g} days, load {load:g}, seed {seed} -> {written} "
        f"({time.perf_counter() - began:.1f} s)",
        soft_wrap=True,
    )


@synth_app.command("compare")
def compare(
    real_path: Path = typer.Argument(..., metavar="REAL", help="The real trace (any readable format)."),
    generated_path: Path = typer.Argument(..., metavar="GENERATED", help="The generated trace."),
    output: Path = typer.Option(None, "--output", "-o", help="Also write an HTML report (and its tables) here."),
    cluster_file: Path = typer.Option(None, "--cluster", help="VC sizes for the downstream queueing (default: the "
                                      "real trace's own, else the generated one's)."),
    real_format: str = typer.Option(None, "--real-format", help="Force the real trace's input format."),
    generated_format: str = typer.Option(None, "--generated-format", help="Force the generated trace's format."),
    loads: str = typer.Option("2,3", "--loads", help="Loads (inter-arrival divisors) of the queueing comparison."),
) -> None:
    """Fidelity of a generated trace: marginals, arrival process, per-size and per-user structure, and the
    FIFO/SJF queueing both produce on the same cluster. Exit status 0 whatever the distances."""
    from rich.table import Table

    from dlcluster.io.cluster_spec import read_cluster_spec
    from dlcluster.synth import compare_report
    from dlcluster.synth.compare import fidelity
    from dlcluster.synth.downstream import downstream

    try:
        levels = [float(x) for x in loads.split(",") if x.strip()]
    except ValueError as exc:
        raise ConfigError(f"--loads {loads!r}: give numbers separated by commas") from exc
    if not levels or not all(0 < x < float("inf") for x in levels):
        raise ConfigError(f"--loads {loads!r}: give positive numbers separated by commas")
    real = load_trace(real_path, real_format, lenient=False)
    generated = load_trace(generated_path, generated_format, lenient=False)
    spec = read_cluster_spec(cluster_file) if cluster_file is not None else real.cluster or generated.cluster
    table = fidelity(real, generated)
    queueing = None
    if spec is not None:
        with err_console.status("simulating both traces ..."):
            queueing = downstream(real, generated, spec, loads=levels)
    shown = Table(title=f"fidelity of {generated_path.name} against {real_path.name}")
    for column in ("metric", "real", "generated", "relative error"):
        shown.add_column(column, justify="left" if column == "metric" else "right")
    for row in table.iter_rows(named=True):
        shown.add_row(row["metric"], _num(row["real"]), _num(row["generated"]), _pct(row["relative_error"]))
    Console().print(shown)
    if queueing is None:
        err_console.print("no downstream queueing: neither trace carries VC sizes (give --cluster FILE)")
    else:
        sim = Table(title="simulated queueing delay (s) on the same cluster")
        for column in ("load", "policy", "statistic", "real", "generated", "relative error"):
            sim.add_column(column, justify="left" if column in ("policy", "statistic") else "right")
        for row in queueing.iter_rows(named=True):
            sim.add_row(f"{row['load']:g}", row["policy"], row["statistic"], _num(row["real_s"]),
                        _num(row["generated_s"]), _pct(row["relative_error"]))
        Console().print(sim)
    if output is not None:
        page = compare_report.write(output, real, generated, table, queueing, (real_path.name, generated_path.name))
        err_console.print(f"report: {page}")


def _num(x: float | None) -> str:
    if x is None or x != x:
        return "–"
    return f"{x:,.0f}" if abs(x) >= 100 else f"{x:.4g}"


def _pct(x: float | None) -> str:
    return "–" if x is None or x != x else f"{x:+.1%}"
