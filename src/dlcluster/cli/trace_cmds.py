"""``dlcluster info`` and ``dlcluster convert``."""

from __future__ import annotations

import json
from pathlib import Path

import click
from rich.table import Table

from dlcluster.analysis.info import trace_info
from dlcluster.cli import Console, app, echo, err_console
from dlcluster.cli.options import PATH, load, not_an_input, note_what_is_lost, output_format, trace_options, writer
from dlcluster.text import count


@app.command()
@click.argument("path", type=PATH)
@trace_options
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of a table.")
def info(path: Path, fmt: str | None, as_json: bool, lenient: bool, mapping: str | None, time_unit: str | None,
         tz: str | None) -> None:
    """Summarise a trace: jobs, GPU jobs, VCs, users, time span, statuses, GPU-hours."""
    trace = load(path, fmt, lenient=lenient, mapping=mapping, time_unit=time_unit, tz=tz)
    summary = trace_info(trace)
    if summary["start"] is not None and summary["start"] < "1971":  # (ISO strings compare as times)
        # e.g. openb and SWF files without UnixStartTime count seconds from the trace's own start (said on stderr:
        # with --json too)
        err_console.print(f"note: {path}: its times count from the trace's own start, not from a date: "
                          "1970-01-01 is its first day", soft_wrap=True)
    if as_json:
        echo(json.dumps(summary, sort_keys=False))
        return
    table = Table(title=str(path), show_header=False)
    table.add_column("what", style="bold")
    table.add_column("value")
    for key, value in summary.items():
        if value is None:  # (an empty trace has no span)
            value = "–"
        elif key == "status_counts":
            value = ", ".join(f"{k} {v:,}" for k, v in value.items())
        elif isinstance(value, int):
            value = f"{value:,}"
        elif isinstance(value, float):
            value = f"{value:,.1f}"
        table.add_row(key, str(value))
    Console().print(table)


@app.command()
@click.argument("path", type=PATH)
@click.option("--output", "-o", type=PATH, required=True, help="Output file (.parquet, .swf or .csv).")
@trace_options
def convert(path: Path, output: Path, fmt: str | None, lenient: bool, mapping: str | None, time_unit: str | None,
            tz: str | None) -> None:
    """Convert a trace to canonical Parquet (or SWF/CSV by the output's suffix), atomically."""
    not_an_input("-o", output, path)
    out = writer(output, None, format_flag=None)  # checked before the (possibly long) read
    trace = load(path, fmt, lenient=lenient, mapping=mapping, time_unit=time_unit, tz=tz)
    out.write(trace, output)
    err_console.print(f"wrote {count(trace.jobs.height, 'job')} to {output}", soft_wrap=True)
    note_what_is_lost(trace, output, output_format(output, None, None))
