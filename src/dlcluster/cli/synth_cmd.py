"""``dlcluster synth``: write a synthetic trace from a preset, a saved model, or a model fitted to a trace."""

from __future__ import annotations

import time
from pathlib import Path

import typer

from dlcluster.cli import app, err_console
from dlcluster.cli.options import load as load_trace
from dlcluster.cli.options import writer as output_writer
from dlcluster.errors import ConfigError


@app.command()
def synth(
    output: Path = typer.Option(..., "--output", "-o", help="Output file (or folder for --format helios/philly)."),
    preset: str = typer.Option(None, "--preset", "-p",
                               help="Bundled model: philly, helios-venus, helios-earth, helios-saturn, helios-uranus."),
    fit_trace: Path = typer.Option(None, "--fit", help="Fit a model to this trace (any readable format) instead."),
    fit_format: str = typer.Option(None, "--fit-format", help="Force the --fit trace's input format."),
    model_file: Path = typer.Option(None, "--model", help="Use a model JSON saved with --save-model."),
    save_model: Path = typer.Option(None, "--save-model", help="Also write the model used as JSON here."),
    days: float = typer.Option(None, "--days", help="Days to generate (default: the source's span)."),
    load: float = typer.Option(1.0, "--load", help="Multiply the arrival rate (2 = twice the jobs)."),
    seed: int = typer.Option(0, "--seed", help="Random seed: same seed, same output, byte for byte."),
    fmt: str = typer.Option(None, "--format", "-f", help="Output format: parquet, helios, philly, swf or csv "
                            "(default: by the output's suffix)."),
) -> None:
    """Generate a synthetic job trace calibrated to a real cluster, and write it atomically."""
    from dlcluster.atomic import write_text_atomic
    from dlcluster.synth import fit, generate, load_preset
    from dlcluster.synth.generate import check_scale
    from dlcluster.synth.model import Model

    sources = [s for s in (preset, fit_trace, model_file) if s is not None]
    if len(sources) != 1:
        raise ConfigError("give exactly one of --preset NAME, --fit TRACE or --model FILE")
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
        model = fit(load_trace(fit_trace, fit_format, lenient=False))
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
