"""Standard Workload Format v2.2 (Parallel Workloads Archive), read and write; processors are GPUs.

Header comments start with ``;``; dlcluster reads ``UnixStartTime`` (origin of submit
times), ``TimeZoneString`` (the trace's zone) and ``Queues`` when it lists ``number=name``
pairs (names percent-encoded), which is how :func:`write` keeps VC names. Each record has
18 whitespace-separated numbers, -1 = unknown. submit = UnixStartTime + submit field,
start = submit + wait, end = start + run, duration = run, queue_delay = wait; status
1/0/5 → completed/failed/cancelled (others → other); user id N → ``uN``; the cluster is
the file's stem; queue -1 → vc ``default``.

:func:`write` keeps what SWF can hold: job ids (when all are integers), submit/start/end
times, run time, GPUs, status (completed/failed/cancelled; timeout and node_fail, failed outcomes, become 0: failed;
running, pending and other become -1), VCs, users (renumbered by first appearance) and the time zone. Names, CPUs,
nodes and GPU shares are not representable, nor a job's lack of an end: a running job's run time so far is written as
its run time, so it reads back as ended at start + that time.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from urllib.parse import quote, unquote
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import polars as pl

from dlcluster.atomic import atomic_path
from dlcluster.errors import InputError
from dlcluster.io._common import (
    MAX_TIME,
    MIN_TIME,
    ROW,
    SUFFIXES,
    TIME_RANGE,
    Check,
    apply_checks,
    count_limit,
    duplicate_key,
    first_line,
    out_of_range,
    read_csv_text,
    seconds_limit,
    source_stem,
    time_limit,
)
from dlcluster.schema import conform
from dlcluster.trace import Trace

FIELDS = (
    "job number", "submit time", "wait time", "run time", "allocated processors", "average CPU time",
    "used memory", "requested processors", "requested time", "requested memory", "status", "user id",
    "group id", "executable number", "queue number", "partition number", "preceding job", "think time",
)
USED = ("job number", "submit time", "wait time", "run time", "allocated processors", "requested processors",
        "status", "user id", "queue number")
STATUS_CODES = {"completed": 1, "failed": 0, "cancelled": 5}
# written: the failed outcomes SWF has no code for are failed (they read back as failed)
WRITE_CODES = {**STATUS_CODES, "timeout": 0, "node_fail": 0}
SWF_NAMES = tuple(f".swf{s}" for s in SUFFIXES)  # the file names an SWF file detected by its name may have
_QUEUE_ITEM = re.compile(r"(\d+)=(\S+)")
_CANONICAL_INT = r"^(0|[1-9][0-9]{0,17})$"


def sniff(path: Path) -> bool:
    """A ``.swf`` file (plain or compressed: ``.swf.gz``, ``.swf.zst``), or a file whose first line is an SWF ``;``
    comment."""
    return path.is_file() and (path.name.lower().endswith(SWF_NAMES) or first_line(path).lstrip().startswith(";"))


def _header(comments: pl.DataFrame, path: Path) -> tuple[int, str, dict[int, str]]:
    """UnixStartTime, TimeZoneString and the Queues names from the ``;`` comment lines."""
    base, tz, queues = 0, "UTC", {}
    for line, text in comments.select(ROW, "line").iter_rows():  # header comments: a handful of lines
        key, sep, value = text.strip().lstrip(";").partition(":")
        key, value = key.strip(), value.strip()
        if not sep:
            continue
        if key == "UnixStartTime":
            if not re.fullmatch(r"-?\d+", value):
                raise InputError(f"cannot parse {value!r} as epoch seconds", path=path, row=line, field=key)
            if not MIN_TIME <= int(value) <= MAX_TIME:
                raise InputError(f"{value!r} is out of range (expected {TIME_RANGE})", path=path, row=line, field=key)
            base = int(value)
        elif key == "TimeZoneString":
            try:
                ZoneInfo(value)
            except (ZoneInfoNotFoundError, ValueError) as exc:
                raise InputError(f"unknown time zone {value!r}", path=path, row=line, field=key) from exc
            tz = value
        elif key == "Queues":
            items = value.split()
            if items and all(_QUEUE_ITEM.fullmatch(i) for i in items):
                queues = {int(n): unquote(name) for n, name in (i.split("=", 1) for i in items)}
    return base, tz, queues


def _record_checks(base: int, records: pl.DataFrame) -> list[Check]:
    checks = []
    for name in FIELDS:
        value = pl.col(name).cast(pl.Float64, strict=False)
        if name == "submit time":
            checks.append(time_limit(name, value + base))
        elif name in ("wait time", "run time"):
            checks.append(seconds_limit(name, value))
        elif name in ("allocated processors", "requested processors"):
            checks.append(count_limit(name, value))
        elif name in USED:
            checks.append(out_of_range(name, value.abs(), 0, 2**53, "a number below 2**53"))
        if name in USED:
            checks.append(Check(name, value.is_null() | (value != value.floor()), f"unparsable {name}",
                                lambda v: f"cannot parse {v!r} as a whole number"))
            checks.append(Check(name, value < -1, f"negative {name}",
                                lambda v: f"invalid value {v} (-1 means unknown)"))
        else:
            checks.append(Check(name, value.is_null(), f"unparsable {name}",
                                lambda v: f"cannot parse {v!r} as a number"))
    n = pl.col
    checks += [
        Check("job number", n("job number") == "-1", "unknown job number", lambda v: "job number is unknown (-1)"),
        Check("submit time", n("submit time") == "-1", "unknown submit time", lambda v: "submit time is unknown (-1)"),
        Check("allocated processors", (n("allocated processors") == "-1") & (n("requested processors") == "-1"),
              "unknown processors", lambda v: "allocated and requested processors are both unknown (-1)"),
        # (a job number is a number: 7, 007 and 7.0 are job 7)
        duplicate_key("job number", pl.col("job number").cast(pl.Float64, strict=False).cast(pl.Int64, strict=False),
                      records, "job"),
    ]
    return checks


def read(path: Path, *, lenient: bool = False) -> Trace:
    """Read an SWF file into the canonical schema (GPUs = processors)."""
    raw = read_csv_text(path, separator="\x1f", has_header=False, new_columns=["line"], quote_char=None)
    text = pl.col("line").str.strip_chars()
    base, tz, queues = _header(raw.filter(text.str.starts_with(";")), path)
    records = raw.filter((text != "") & ~text.str.starts_with(";")).with_columns(
        text.str.extract_all(r"\S+").alias("_tokens"))
    width = pl.col("_tokens").list.len()
    dropped: Counter[str] = Counter()
    wrong = records.filter(width != len(FIELDS))
    if wrong.height:
        if not lenient:
            first = wrong.row(0, named=True)
            raise InputError(f"record has {len(first['_tokens'])} fields, expected {len(FIELDS)}", path=path,
                             row=first[ROW])
        dropped["wrong field count"] = wrong.height
        records = records.filter(width == len(FIELDS))
    records = records.with_columns(pl.col("_tokens").list.get(i).alias(name) for i, name in enumerate(FIELDS))
    records, bad = apply_checks(records, _record_checks(base, records), path=path, lenient=lenient)
    dropped.update(bad)

    v = {name: pl.col(name).cast(pl.Float64).cast(pl.Int64) for name in USED}
    known = {name: pl.when(expr != -1).then(expr) for name, expr in v.items()}
    submit = pl.lit(base, pl.Int64) + v["submit time"]
    start = submit + known["wait time"]
    queue_names = {str(k): name for k, name in queues.items()}
    jobs = conform(records.with_columns(
        v["job number"].cast(pl.String).alias("job_id"),
        pl.lit(source_stem(path)).alias("cluster"),
        pl.when(v["queue number"] == -1).then(pl.lit("default")).otherwise(
            v["queue number"].cast(pl.String).replace(queue_names)).alias("vc"),
        pl.when(v["user id"] != -1).then(pl.lit("u") + v["user id"].cast(pl.String)).alias("user"),
        pl.coalesce(known["allocated processors"], known["requested processors"]).alias("gpu_num"),
        submit.alias("submit_time"),
        start.alias("start_time"),
        (start + known["run time"]).alias("end_time"),
        known["run time"].alias("duration"),
        known["wait time"].alias("queue_delay"),
        v["status"].replace_strict({c: s for s, c in STATUS_CODES.items()}, default="other",
                                   return_dtype=pl.String).alias("status"),
    ))
    return Trace(jobs, format="swf", timezone=tz, source=str(path), dropped=dropped)


def _records(jobs: pl.DataFrame, base: int, vc_numbers: dict[str, int]) -> pl.DataFrame:
    """The 18 SWF fields per job (in submit order), -1 where unknown."""
    ids = jobs["job_id"]
    numeric_ids = ids.str.contains(_CANONICAL_INT).all()
    wait = pl.col("start_time") - pl.col("submit_time")
    run = pl.coalesce(pl.col("duration"), pl.col("end_time") - pl.col("start_time"))
    first_user = jobs.select(pl.col("user").drop_nulls().unique(maintain_order=True))["user"]
    user_ids = {u: i + 1 for i, u in enumerate(first_user.to_list())}
    unknown = pl.lit(-1, pl.Int64)
    cols = {
        "job number": pl.col("job_id").cast(pl.Int64) if numeric_ids else pl.int_range(1, pl.len() + 1),
        "submit time": pl.col("submit_time") - base,
        "wait time": wait.fill_null(-1),
        "run time": run.fill_null(-1),
        "allocated processors": pl.col("gpu_num"),
        "average CPU time": unknown, "used memory": unknown,
        "requested processors": pl.col("gpu_num"),
        "requested time": unknown, "requested memory": unknown,
        "status": pl.col("status").cast(pl.String).replace_strict(WRITE_CODES, default=-1, return_dtype=pl.Int64),
        "user id": pl.col("user").replace_strict(user_ids, default=-1, return_dtype=pl.Int64),
        "group id": unknown, "executable number": unknown,
        "queue number": pl.col("vc").replace_strict(vc_numbers, return_dtype=pl.Int64),
        "partition number": unknown, "preceding job": unknown, "think time": unknown,
    }
    return jobs.select(expr.cast(pl.Int64).alias(name) for name, expr in cols.items())


def write(trace: Trace, target: str | Path) -> Path:
    """Write the trace as SWF v2.2 (GPUs as processors), atomically."""
    target = Path(target)
    jobs = conform(trace.jobs).sort("submit_time", maintain_order=True)
    for what, bad in (("starts before it is submitted", pl.col("start_time") < pl.col("submit_time")),
                      ("has a negative run time",
                       pl.coalesce(pl.col("duration"), pl.col("end_time") - pl.col("start_time")) < 0)):
        offender = jobs.filter(bad)
        if offender.height:
            raise InputError(f"job {offender['job_id'][0]!r} {what}; SWF cannot hold it", path=trace.source or None)
    base = int(jobs["submit_time"].min() or 0)
    vc_numbers = {vc: i + 1 for i, vc in enumerate(sorted(jobs["vc"].unique().to_list()))}
    header = [
        "; Version: 2.2",
        f"; Computer: {trace.name}",
        f"; Note: written by dlcluster from {'an' if trace.format.startswith(tuple('aeiou')) else 'a'} {trace.format} trace; "
        "processors are GPUs",
        "; Note: user ids number the trace's users in order of first appearance (1 = first); -1 = no user",
        f"; UnixStartTime: {base}",
        f"; TimeZoneString: {trace.timezone}",
        f"; MaxJobs: {jobs.height}",
        f"; MaxRecords: {jobs.height}",
        *([f"; MaxProcs: {trace.cluster.total_gpus}"] if trace.cluster is not None else []),
        "; Queues: " + " ".join(f"{n}={quote(vc, safe='')}" for vc, n in vc_numbers.items()),
    ]
    records = _records(jobs, base, vc_numbers)
    with atomic_path(target) as tmp, tmp.open("w", encoding="utf-8", newline="\n") as fh:
        fh.write("\n".join(header) + "\n")
        records.write_csv(fh, include_header=False, separator=" ")
    return target
