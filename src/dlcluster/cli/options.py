"""Options shared by several commands."""

from __future__ import annotations

import importlib
import inspect
import os
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, TypeVar

import click
from rich.text import Text

from dlcluster.errors import ConfigError
from dlcluster.io import FORMATS
from dlcluster.text import count

if TYPE_CHECKING:
    from dlcluster.trace import Trace

F = TypeVar("F", bound=Callable[..., Any])

PATH = click.Path(path_type=Path)  # a path as given: the commands check existence themselves, with their own words

FORMAT = click.option("--format", "-f", "fmt", help="Force the input format (default: auto-detect).")
TRACE_READING = (
    click.option("--lenient", is_flag=True, help="Drop malformed rows (counted by reason) instead of failing."),
    click.option("--map", "mapping", help="Column mapping of an input read as csv: canonical=source,... "
                 "(e.g. submit_time=submitted,duration=runtime_s,gpu_num=gpus)."),
    click.option("--time-unit", help="For an input read as csv: unit of numeric times (s, ms, us); durations and "
                 "queueing delays are seconds."),
    click.option("--tz", help="IANA time zone of the source's wall-clock times (e.g. Asia/Shanghai)."),
)


# the CES controller's tuning and its forecast's calendar, the same in `ces` (open loop) and `simulate --power ces`
CES_TUNING = (
    click.option("--buffer", type=int, help="helios rule: idle nodes kept above demand (default: the preset's)."),
    click.option("--risk", type=float, help="quantile rule: accepted probability of a shortage (default 0.01)."),
    click.option("--holidays", help="Country (ISO code, e.g. US, CN; any case) whose public holidays the demand "
                 "forecast knows."),
    click.option("--events", help="Dates YYYY-MM-DD, comma-separated (e.g. conference deadlines): the demand forecast "
                 "knows the 10 days before each."),
)


def _stacked(options: tuple[Callable[[F], F], ...]) -> Callable[[F], F]:
    """One decorator adding ``options`` in their order."""
    def add(command: F) -> F:
        for option in reversed(options):
            command = option(command)
        return command
    return add


trace_options = _stacked((FORMAT, *TRACE_READING))  # every trace-reading command's input options
reading_options = _stacked(TRACE_READING)  # the same but --format (for a command whose --format names its output's)
ces_options = _stacked(CES_TUNING)


# the formats whose reader module also has a ``write``: format -> module
WRITERS = {fmt: FORMATS[fmt][0] for fmt in ("parquet", "helios", "philly", "swf", "csv")}
FOLDER_FORMATS = ("helios", "philly")
SUFFIXES = {".parquet": "parquet", ".swf": "swf", ".csv": "csv"}


def output_format(output: Path, fmt: str | None, format_flag: str | None = "--format") -> str:
    """The writer to use: ``fmt`` if given, else by the output's suffix (``format_flag``: the option that forces it)."""
    if fmt is not None:
        if fmt not in WRITERS:
            raise ConfigError(f"--format {fmt!r}: choose one of {', '.join(WRITERS)}")
        return fmt
    suffix = output.suffix.lower()
    if suffix not in SUFFIXES and output.is_dir():
        folder = f" (or {format_flag} {' or '.join(FOLDER_FORMATS)}, written as a folder)" if format_flag else ""
        raise ConfigError(f"-o {output}: is a folder, expected a file name ending .parquet/.swf/.csv{folder}")
    if suffix not in SUFFIXES:
        forced = f" or pass {format_flag} ({', '.join(WRITERS)})" if format_flag else ""
        raise ConfigError(f"-o {output}: cannot tell the output format from suffix {suffix!r}; "
                          f"use .parquet/.swf/.csv{forced}")
    return SUFFIXES[suffix]


def writer(output: Path, fmt: str | None, format_flag: str | None = "--format") -> ModuleType:
    """The writer module for ``output``, after checking the output is not the wrong kind of path."""
    fmt = output_format(output, fmt, format_flag)
    if fmt in FOLDER_FORMATS and output.exists() and not output.is_dir():
        raise ConfigError(f"-o {output}: is a file, but the {fmt} format is written as a folder")
    if fmt not in FOLDER_FORMATS and output.is_dir():
        raise ConfigError(f"-o {output}: is a folder, expected a {fmt} file name")
    # a folder holding two traces would be read back as whichever format is detected first
    others = [f for f in FOLDER_FORMATS if f != fmt] if fmt in FOLDER_FORMATS and output.is_dir() else []
    for other in others:
        if importlib.import_module(WRITERS[other]).sniff(output):
            raise ConfigError(f"-o {output}: already holds a {other} trace; write the {fmt} trace to another folder")
    return importlib.import_module(WRITERS[fmt])


def note_what_is_lost(trace: Trace, output: Path, fmt: str) -> None:
    """Say on stderr what writing ``trace`` as ``fmt`` does not keep: a CSV its time zone and an ended job's lack of an
    end; SWF its GPU shares, the timeout and node_fail statuses (written as failed) and a started job's lack of an
    end; both its cluster spec; all but a Philly folder its attempts table."""
    import polars as pl

    from dlcluster.cli import err_console
    from dlcluster.text import count

    jobs = trace.jobs
    # a started job without an end: both formats' readers give it the end start + run time
    unended = pl.col("end_time").is_null() & pl.col("start_time").is_not_null() & pl.col("duration").is_not_null()
    if fmt == "csv" and trace.timezone != "UTC":  # (Parquet, SWF and the folders keep it)
        err_console.print(f"note: {output.name} keeps no time zone: read it with --tz {trace.timezone} for local "
                          "hours and days", soft_wrap=True)
    if fmt == "csv":  # (a running job's missing end the CSV reader keeps)
        ended = jobs.filter(unended & ~pl.col("status").cast(pl.String).is_in(["running", "pending"])).height
        if ended:
            err_console.print(f"note: {output.name} keeps no missing end: {ended:,} job(s) that started and are not "
                              "running read back as ended at start + run time", soft_wrap=True)
    if fmt in ("csv", "swf") and trace.cluster is not None:  # (Parquet and the folders keep it)
        err_console.print(f"note: {output.name} keeps no cluster spec: simulate, ces and characterize of it will need "
                          "--cluster FILE (a Parquet output keeps it)", soft_wrap=True)
    attempts = trace.attempts
    if fmt != "philly" and attempts is not None and attempts.height:  # (only the Philly folder has a place for them)
        err_console.print(f"note: {output.name} keeps no attempts table: the {count(attempts.height, 'attempt')} of "
                          f"{count(attempts['job_id'].n_unique(), 'job')} read back as one run per job, from its first "
                          "start to its last end (simulate --failures replay and characterize's failures read them from "
                          "the Philly folder)", soft_wrap=True)
    shared = (jobs["gpu_milli"] < 1000).sum() if fmt == "swf" else 0  # (1000: a whole GPU)
    if shared:
        err_console.print(f"note: {output.name} keeps no GPU shares (gpu_milli): {shared:,} job(s) that held part of a "
                          "GPU read back as holding whole GPUs", soft_wrap=True)
    if fmt == "swf":
        merged = jobs["status"].cast(pl.String).is_in(["timeout", "node_fail"]).sum()
        if merged:
            err_console.print(f"note: {output.name} keeps no timeout or node_fail status: {merged:,} timeout/node_fail "
                              "job(s) are written as failed", soft_wrap=True)
        started = jobs.filter(unended).height
        if started:
            err_console.print(f"note: {output.name} keeps no missing end: {started:,} job(s) that started and have no "
                              "end (running, or with the end unrecorded) are written with their run time (so far) and "
                              "read back as ended at start + that time", soft_wrap=True)


def parse_mapping(spec: str | None) -> dict[str, str] | None:
    """Parse ``a=b,c=d`` into a dict, with a clear error for a malformed item."""
    if not spec:
        return None
    out: dict[str, str] = {}
    for item in spec.split(","):
        key, sep, value = item.partition("=")
        if not sep or not key.strip() or not value.strip():
            raise ConfigError(f"--map: expected canonical=source, got {item!r}")
        if key.strip() in out:
            raise ConfigError(f"--map: {key.strip()!r} is mapped twice")
        out[key.strip()] = value.strip()
    return out


def reader_options(lenient: bool, mapping: str | None, time_unit: str | None, tz: str | None) -> dict[str, Any]:
    """Keyword options for :func:`dlcluster.io.read_trace` from CLI flags (only those given)."""
    opts: dict[str, Any] = {"lenient": lenient}
    if mapping:
        opts["mapping"] = parse_mapping(mapping)
    if time_unit:
        opts["time_unit"] = time_unit
    if tz is not None:  # (``--tz ""`` is refused by the reader as an unknown zone, not ignored)
        opts["timezone"] = tz
    return opts


def load(path: Path, fmt: str | None, *, lenient: bool = False, mapping: str | None = None,
         time_unit: str | None = None, tz: str | None = None, format_option: str = "--format",
         zone_advice: str = "pass --tz ZONE", **extra: Any) -> Trace:
    """Read a trace with the input options every trace-reading command shares (``--format``, ``--lenient``,
    ``--map``, ``--time-unit``, ``--tz``; ``format_option``: the command's name for ``--format``; ``extra``: other
    reader keywords); report lenient drops, and a time zone assumed (with ``zone_advice``), on stderr."""
    from dlcluster.cli import err_console
    from dlcluster.io import detect_format, read_trace

    opts = {**reader_options(lenient, mapping, time_unit, tz), **extra}
    fmt = fmt or detect_format(path, format_option, opts)
    trace = _read_kept(path, fmt, opts) if KEPT is not None else read_trace(path, format=fmt, **opts)
    if trace.dropped:
        total = sum(trace.dropped.values())
        reasons = ", ".join(f"{n} {r}" for r, n in sorted(trace.dropped.items()))
        err_console.print(Text.assemble((f"dropped {total} malformed row(s):", "yellow"), f" {reasons}"))
    if fmt == "philly" and (unrecorded := int((trace.jobs["gpu_num"] == 0).sum())):
        # Philly ran no CPU jobs: a job with 0 GPUs is one that never started, and has no GPU record
        err_console.print(f"note: {path}: {count(unrecorded, 'job')} never started (no attempts) and "
                          f"{'have' if unrecorded > 1 else 'has'} no GPU record: read as 0 GPUs, "
                          f"{'they count' if unrecorded > 1 else 'it counts'} among CPU-only jobs", soft_wrap=True)
    if tz is None and zone_unknown(fmt):
        # times that name their instant (epoch numbers, ``+02:00``) still leave the local hour of day to a zone
        what = "times carry no time zone" if trace.zoneless else "times give no zone for the local hour of day"
        err_console.print(f"note: {path}: {fmt} {what}; UTC assumed ({zone_advice})", soft_wrap=True)
    return trace


# Traces read in this process, kept for the next command that reads the same file the same way (a sweep worker
# runs many cells on one trace): None, or (file, its size and modification time, format, options) → trace
KEPT: dict[tuple[Any, ...], Trace] | None = None
KEEP_AT_MOST = 2  # traces: a worker's cells come in order, so one or two traces are in use at a time


def keep_traces() -> None:
    """From now on, keep the traces this process reads, so that reading one again costs nothing."""
    global KEPT
    if KEPT is None:
        KEPT = {}


def _read_kept(path: Path, fmt: str, opts: dict[str, Any]) -> Trace:
    from dlcluster.io import read_trace

    assert KEPT is not None
    stat = path.stat()
    key = (str(path.resolve()), stat.st_size, stat.st_mtime_ns, fmt, repr(sorted(opts.items())))
    if key not in KEPT:
        while len(KEPT) >= KEEP_AT_MOST:
            del KEPT[next(iter(KEPT))]
        KEPT[key] = read_trace(path, format=fmt, **opts)
    return KEPT[key]


def zone_unknown(fmt: str) -> bool:
    """Whether the format's times carry no zone of their own: its reader takes a ``timezone`` that defaults to UTC
    (a format with a known zone defaults to that zone; one without wall-clock times takes none)."""
    from dlcluster.io import FORMATS

    param = inspect.signature(importlib.import_module(FORMATS[fmt][0]).read).parameters.get("timezone")
    return param is not None and param.default == "UTC"


def not_an_input(option: str, output: Path | None, *inputs: Path | None) -> None:
    """Fail before any work when the output path ``option`` names one of the files or folders the command reads
    (through a link too): the atomic write would replace the user's input with the result."""
    if output is None or not output.exists():  # (an input exists)
        return
    for given in inputs:
        if given is not None and given.exists() and os.path.samefile(output, given):
            raise ConfigError(f"{option} {output}: is the input {given} itself; choose another path for the output")
        # a trace folder's files are inputs too (a Helios folder's cluster_log.csv, a Philly folder's machine list)
        if given is not None and given.is_dir() and _held(given, (output,)) is not None:
            raise ConfigError(f"{option} {output}: is in the input folder {given}, whose files the command reads; "
                              "choose a path outside it for the output")


def output_folder(output: Path | None, *inputs: Path | None) -> None:
    """Fail before any work when ``--output`` names something that is not a folder, or a folder that holds one of
    the command's ``inputs``."""
    if output is not None and output.exists() and not output.is_dir():
        raise ConfigError(f"--output {output}: exists and is not a folder")
    not_inside("--output", output, *inputs)
    if output is not None:
        writable("--output", output)


def not_inside(option: str, folder: Path | None, *inputs: Path | None) -> None:
    """Fail before any work when an input lies in the output folder ``option`` (at any depth, through links too): the
    command replaces the files it writes there and removes those an earlier run wrote, which could be the input."""
    given = _held(folder, inputs)
    if given is not None:
        raise ConfigError(f"{option} {folder}: holds the input {given}, which writing there could replace or "
                          "remove; choose another folder for the output")


def _held(folder: Path | None, inputs: tuple[Path | None, ...]) -> Path | None:
    """The first of ``inputs`` that lies in ``folder``, at any depth and through links too (None: none does)."""
    if folder is None or not folder.is_dir():
        return None
    root = folder.resolve()
    return next((p for p in inputs if p is not None and p.exists() and p.resolve().is_relative_to(root)), None)


def report_folder(output: Path, results: Path | None = None, inputs: tuple[Path | None, ...] = (),
                  reads: tuple[Path | None, ...] = ()) -> None:
    """Fail before any work when the report folder ``output`` cannot be written (a file, not writable), would be
    the folder ``results`` the report reads, holds one of the input files ``inputs``, or one of the folders the report
    ``reads`` lies in what it replaces (its figures/ and tables/)."""
    if output.exists() and not output.is_dir():
        raise ConfigError(f"-o {output}: is a file; the report is written as a folder")
    if results is not None and output.resolve() == results.resolve():
        raise ConfigError(f"-o {output}: is the results folder itself; choose another folder for the report")
    not_inside("-o", output, *inputs)
    for sub in ("figures", "tables"):  # replaced whole by the report (its runs or results may be read from there)
        given = _held(output / sub, (results, *inputs, *reads))
        if given is not None:
            raise ConfigError(f"-o {output}: its {sub}/ holds the input {given}, which the report replaces; choose "
                              "another folder for the report")
    writable("-o", output)


def writable(option: str, output: Path) -> None:
    """Fail before any work when the folder ``output`` could not be written (a read-only file system, no permission):
    it is created only once the results are, so its nearest existing ancestor is checked."""
    base = next(p for p in (output, *output.absolute().parents) if p.exists())
    if not base.is_dir():
        raise ConfigError(f"{option} {output}: {base} is a file, not a folder")
    if not os.access(base, os.W_OK | os.X_OK):
        raise ConfigError(f"{option} {output}: {base} is not writable")
