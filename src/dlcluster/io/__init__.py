"""Trace readers: every supported source → one canonical :class:`~dlcluster.trace.Trace`.

Each reader module exposes ``sniff(path) -> bool`` (cheap format detection) and
``read(path, *, lenient=False, **options) -> Trace``. Formats are tried for detection in
the order of :data:`FORMATS`; ``format=`` forces one.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Mapping
from pathlib import Path
from types import ModuleType

from dlcluster.errors import ConfigError, InputError, UnknownFormatError
from dlcluster.trace import Trace

# name -> (module, one-line description); detection order matters: most specific first.
FORMATS: dict[str, tuple[str, str]] = {
    "parquet": ("dlcluster.io.parquet", "dlcluster's canonical Parquet job table"),
    "helios": ("dlcluster.io.helios", "Helios (SenseTime) folder or cluster_log.csv"),
    "philly": ("dlcluster.io.philly", "Philly raw folder or cluster_job_log (JSON; plain, .gz or .zst)"),
    "philly-jobs": ("dlcluster.io.philly_jobs", "derived Philly job table (jobs_processed.csv)"),
    "pai": ("dlcluster.io.pai", "Alibaba PAI 2020 folder (pai_job_table + pai_task_table)"),
    "openb": ("dlcluster.io.openb", "Alibaba GPU-sharing 2023 pod list (openb_pod_list_*.csv)"),
    "swf": ("dlcluster.io.swf", "Standard Workload Format (.swf)"),
    "sacct": ("dlcluster.io.sacct", "Slurm sacct --parsable2 export"),
    "csv": ("dlcluster.io.csv_mapped", "any CSV/Parquet job table through a column mapping"),
}

# reader keyword -> the CLI option that sets it, for errors a user can act on
OPTION_FLAGS = {"timezone": "--tz", "mapping": "--map", "time_unit": "--time-unit", "cluster_date": "--cluster-date"}
CSV_OPTIONS = ("mapping", "time_unit")  # reader options only the csv format takes


def _module(fmt: str) -> ModuleType:
    if fmt not in FORMATS:
        raise ConfigError(f"unknown trace format {fmt!r}; choose one of: {', '.join(FORMATS)}")
    return importlib.import_module(FORMATS[fmt][0])


def detect_format(path: str | Path, option: str = "--format", options: Mapping[str, object] | None = None) -> str:
    """Name of the first format whose sniffer accepts ``path`` (``option``: the command's option that names one);
    a file no sniffer accepts is read as csv when the reader ``options`` set one that only csv takes (a column
    mapping, a time unit)."""
    path = Path(path)
    if not path.exists():
        raise InputError("no such file or folder", path=path)
    for fmt in FORMATS:
        try:
            if _module(fmt).sniff(path):
                return fmt
        except OSError:
            continue
    if options and any(options.get(k) is not None for k in CSV_OPTIONS):
        return "csv"
    raise UnknownFormatError(
        f"cannot tell the trace format; pass {option} (" + ", ".join(FORMATS) + ")", path=path
    )


def read_trace(path: str | Path, format: str | None = None, **options: object) -> Trace:  # noqa: A002
    """Read ``path`` into a canonical trace, detecting its format unless ``format`` is given."""
    path = Path(path)
    if not path.exists():
        raise InputError("no such file or folder", path=path)
    fmt = format or detect_format(path, options=options)
    reader = _module(fmt).read
    accepted = inspect.signature(reader).parameters
    for name in options:
        if name not in accepted:
            flag = OPTION_FLAGS.get(name, name)
            raise ConfigError(f"{flag} does not apply to the {fmt} format ({path})")
    return reader(path, **options)
