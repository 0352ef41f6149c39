"""The raw Philly release (Microsoft, ATC'19): ``cluster_job_log`` plus machine list and utilisation.

``cluster_job_log`` is one JSON array of jobs (``status, vc, jobid, attempts,
submitted_time, user``; each attempt ``start_time, end_time, detail: [{ip, gpus}]``),
streamed with ijson. The log may be gzip- or zstd-compressed (told by its first bytes, whatever
its name); a folder's log is ``cluster_job_log``, else ``cluster_job_log.gz``, else
``cluster_job_log.zst``, and one cut short or corrupt is refused in one line naming it.
Times are naive America/Los_Angeles wall clock; in the repeated hour of the autumn change
the earlier (PDT) instant is taken, as the log cannot tell them apart, except where it would
come before the job's submit, the previous attempt's end or (an end) its attempt's start. Missing times are
the string ``"None"``. Errors name ``record N``, the 0-based array index.

Conventions (the public analysis notebook's): job GPUs and nodes = the first attempt's
GPUs and servers; start = first attempt's start; end = last attempt's end; duration =
end − start; queue_delay = start − submit. Pass → completed, Killed → cancelled,
Failed → failed, except that a Pass job is only completed when the log shows it ran to
an end: with no attempts it is pending, with no end on its last attempt it is running.
A killed or failed job keeps its status even without an end time, which the log omits
for some of them. A job with no attempts has no GPU record: ``gpu_num`` 0, ``node_num`` null.

The machine list (``revised_machine_list.csv`` preferred, else ``cluster_machine_list``)
becomes one pool VC ``philly``: Philly does not say which machines serve which VC.

Writing maps timeout, node_fail and other to ``Failed``; running and pending to ``Pass``
(read back as running/pending by the rules above). A time in the repeated autumn hour
that was PST reads back an hour early (PDT), as said above. Without an attempts table each started
job gets one attempt on synthetic servers ``m0, m1, ...`` of 8 GPUs each.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import ijson
import numpy as np
import polars as pl

from dlcluster.atomic import atomic_folder, atomic_path, write_text_atomic
from dlcluster.errors import InputError
from dlcluster.io._common import (
    MAX_TIME,
    MIN_TIME,
    ROW,
    TIME_RANGE,
    Check,
    apply_checks,
    cell_text,
    decompressing,
    duplicate,
    first_file,
    is_null_token,
    localize,
    map_status,
    open_bytes,
    parse_datetime,
    require_file,
    required_value,
    skipped_time,
    time_limit,
    unknown_status,
    unparsable,
    wall_clock_text,
)
from dlcluster.io.cluster_spec import read_cluster_spec
from dlcluster.io.philly_util import PhillyUtilization
from dlcluster.schema import ATTEMPT_SCHEMA, conform
from dlcluster.trace import Trace

TIMEZONE = "America/Los_Angeles"
JOB_LOG = "cluster_job_log"
MACHINE_LISTS = ("revised_machine_list.csv", "cluster_machine_list")
TIME_FORMAT = "%Y-%m-%d %H:%M:%S"
TIME_TEXT = "a time (YYYY-MM-DD HH:MM:SS)"
STATUS = {"Pass": "completed", "Killed": "cancelled", "Failed": "failed"}
_WRITE_STATUS = {"completed": "Pass", "cancelled": "Killed", "failed": "Failed", "running": "Pass",
                 "pending": "Pass", "timeout": "Failed", "node_fail": "Failed", "other": "Failed"}
GPUS_PER_SERVER = 8
_CHUNK = 20_000
MAX_DEPTH = 64  # JSON nesting accepted in the job log (a record needs 6): deeper input is refused before parsing


def _log_path(path: Path) -> Path:
    """The job log: ``path`` itself, or a folder's ``cluster_job_log`` (plain, ``.gz`` or ``.zst``: see
    :func:`first_file`; the plain name if none is there)."""
    if not path.is_dir():
        return path
    return first_file(path, JOB_LOG) or path / JOB_LOG


def _starts_array(log: Path) -> bool:
    """Whether the (decompressed) log starts a JSON array."""
    with open_bytes(log) as fh:
        return fh.read(64).lstrip()[:1] == b"["


def sniff(path: Path) -> bool:
    """A folder holding a job log (see :func:`_log_path`), or a ``cluster_job_log*`` file, plain or gzip- or
    zstd-compressed, that starts a JSON array (a compressed one too damaged to show its first bytes is refused)."""
    log = _log_path(path)
    if not log.is_file() or not log.name.startswith(JOB_LOG):
        return False
    with decompressing(log):
        return _starts_array(log)


class _Bad(Exception):
    """A structurally malformed record: which field, and what is wrong."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field, self.message = field, message


_ABSENT = object()


def _get(obj: dict[str, Any], key: str, field: str, kind: type, nullable: bool = False) -> Any:
    value = obj.get(key, _ABSENT)
    if value is _ABSENT:
        raise _Bad(field, "field is missing")
    if not isinstance(value, kind) and not (nullable and value is None):
        raise _Bad(field, f"expected {'a string' if kind is str else 'a list'}, found {value!r}")
    return value


def _record(rec: Any) -> tuple[tuple[Any, ...], list[tuple[Any, ...]]]:
    """One job's raw fields and its attempts' raw fields (servers, GPU count), type-checked."""
    if not isinstance(rec, dict):
        raise _Bad("record", f"expected a JSON object, found {rec!r}")
    job = (_get(rec, "jobid", "jobid", str, True), _get(rec, "user", "user", str, True),
           _get(rec, "vc", "vc", str, True), _get(rec, "status", "status", str, True),
           _get(rec, "submitted_time", "submitted_time", str, True))
    attempts = []
    for k, att in enumerate(_get(rec, "attempts", "attempts", list)):
        where = f"attempts[{k}]"
        if not isinstance(att, dict):
            raise _Bad(where, f"expected a JSON object, found {att!r}")
        servers, gpus = [], 0
        for s, placed in enumerate(_get(att, "detail", f"{where}.detail", list)):
            if not isinstance(placed, dict):
                raise _Bad(f"{where}.detail[{s}]", f"expected a JSON object, found {placed!r}")
            servers.append(_get(placed, "ip", f"{where}.detail[{s}].ip", str))
            gpus += len(_get(placed, "gpus", f"{where}.detail[{s}].gpus", list))
        attempts.append((k, _get(att, "start_time", f"{where}.start_time", str, True),
                         _get(att, "end_time", f"{where}.end_time", str, True), servers, gpus))
    return job, attempts


def _generic(field: str) -> str:
    """``attempts[3].detail[0].ip`` → ``attempts.detail.ip``: a reason that counts across records."""
    return ".".join(part.split("[")[0] for part in field.split("."))


def _stream(log: Path, lenient: bool) -> tuple[pl.DataFrame, pl.DataFrame, list[InputError], Counter[str]]:
    """Parse the JSON array record by record into raw job and attempt tables.

    Strict mode stops at the first malformed record and returns its error (to be raised
    unless an earlier record has a value error); lenient mode skips and counts them.
    """
    dropped: Counter[str] = Counter()
    require_file(log)
    # each pass opens the log afresh, decompressed: a zstd stream cannot seek back (a truncated or corrupt compressed
    # log fails in the depth check, before any record is parsed)
    with decompressing(log):
        if not _starts_array(log):
            raise InputError("expected a JSON array of jobs", path=log)
        with open_bytes(log) as fh:
            _check_depth(fh, log)
        with open_bytes(log) as fh:
            jobs, attempts, errors = _parse(fh, log, lenient, dropped)
    job_df = pl.DataFrame(jobs, schema={ROW: pl.Int64, "jobid": pl.String, "user": pl.String, "vc": pl.String,
                                        "status": pl.String, "submitted_time": pl.String, "n_attempts": pl.Int64},
                          orient="row")
    att_df = pl.DataFrame(attempts, schema={ROW: pl.Int64, "attempt": pl.Int32, "start_time": pl.String,
                                            "end_time": pl.String, "servers": pl.List(pl.String),
                                            "gpus": pl.Int32}, orient="row")
    return job_df, att_df, errors, dropped


def _parse(fh: Any, log: Path, lenient: bool, dropped: Counter[str],
           ) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]], list[InputError]]:
    """The log's job and attempt rows, record by record, and the malformed record's error (strict: the first ends
    the pass; lenient: each is counted in ``dropped`` and skipped)."""
    jobs: list[tuple[Any, ...]] = []
    attempts: list[tuple[Any, ...]] = []
    i = -1
    try:
        for i, rec in enumerate(ijson.items(fh, "item")):
            try:
                job, atts = _record(rec)
            except _Bad as bad:
                if not lenient:
                    return jobs, attempts, [InputError(bad.message, path=log, row=i, field=bad.field,
                                                       row_label="record")]
                dropped[f"malformed {_generic(bad.field)}"] += 1
                continue
            jobs.append((i, *job, len(atts)))
            attempts.extend((i, *a) for a in atts)
    except ijson.JSONError as exc:
        first = (str(exc).strip().splitlines() or ["parse error"])[0].strip()
        raise InputError(f"not valid JSON ({first})", path=log, row=i + 1, row_label="record") from exc
    return jobs, attempts, []


def _check_depth(fh: Any, log: Path, chunk_bytes: int = 1 << 22) -> None:
    """Refuse JSON nested deeper than :data:`MAX_DEPTH` before a parser builds it (its cost grows with the
    square of the depth): brackets are counted outside strings, chunk by chunk (of ``chunk_bytes``), in bounded
    memory, each chunk in a few vectorised passes."""
    depth, in_string, carry = 0, False, b""
    while chunk := fh.read(chunk_bytes):
        chunk = carry + chunk
        carry = b""
        if (len(chunk) - len(chunk.rstrip(b"\\"))) % 2:  # an escape split over two chunks
            chunk, carry = chunk[:-1], b"\\"
        # escaped backslashes first, then escaped quotes: what remains of '"' delimits strings
        chunk = chunk.replace(b"\\\\", b"").replace(b'\\"', b"")
        kept = np.frombuffer(chunk.translate(None, _NOT_STRUCTURE), dtype=np.uint8)
        if not kept.size:
            continue
        quote = kept == ord('"')
        quotes = np.cumsum(quote) + in_string  # a bracket after an odd number of quotes lies inside a string
        steps = np.where(np.isin(kept, _OPENERS), 1, -1)
        steps[quote | (quotes % 2 == 1)] = 0
        levels = depth + np.cumsum(steps)
        if int(levels.max()) > MAX_DEPTH:
            raise InputError(f"JSON nested deeper than {MAX_DEPTH} levels", path=log)
        depth, in_string = int(levels[-1]), bool(quotes[-1] % 2)


_NOT_STRUCTURE = bytes(b for b in range(256) if b not in b'[]{}"')
_OPENERS = np.frombuffer(b"[{", dtype=np.uint8)


def _attempt_issues(att: pl.DataFrame) -> pl.DataFrame:
    """Attempts with an unparsable, skipped or out-of-range time: record, attempt, field, raw value, what, one row
    each (``skipped``: a well-formed time the zone skips)."""
    parts = [
        att.filter((~is_null_token(col) & pl.col(f"{col}_").is_null())
                   | ~pl.col(f"{col}_").is_between(MIN_TIME, MAX_TIME)).select(
            ROW, "attempt", pl.lit(order).alias("_order"), pl.lit(col).alias("col"), pl.col(col).alias("value"),
            pl.col(f"{col}_").is_null().alias("unparsable"),
            cell_text(col).str.to_datetime(TIME_FORMAT, strict=False).is_not_null().alias("skipped"))
        for order, col in enumerate(("start_time", "end_time"))
    ]
    return pl.concat(parts).sort(ROW, "attempt", "_order")


def _attempt_error(issue: dict[str, Any], log: Path, timezone: str) -> InputError:
    if issue["unparsable"] and issue["skipped"]:
        what = f"{issue['value']!r} is no such time in {timezone} (the clocks skip it when daylight saving starts)"
    elif issue["unparsable"]:
        what = f"cannot parse {issue['value']!r} as {TIME_TEXT}"
    else:
        what = f"{issue['value']!r} is out of range (expected {TIME_RANGE})"
    return InputError(what, path=log, row=issue[ROW], field=f"attempts[{issue['attempt']}].{issue['col']}",
                      row_label="record")


def _job_checks(timezone: str) -> list[Check]:
    return [
        required_value("jobid"),
        duplicate("jobid"),
        required_value("vc"),
        required_value("status"),
        unknown_status("status", "status_"),
        time_limit("submitted_time", pl.col("submit_time")),
        skipped_time("submitted_time", "submit_time", TIME_FORMAT, timezone),
        unparsable("submitted_time", "submit_time", TIME_TEXT),
        required_value("submit_time", "submitted_time"),
        Check("attempts", pl.col("end_time") < pl.col("start_time"), "negative duration",
              lambda v: "the last attempt ends before the first attempt starts"),
        Check("attempts", pl.col("start_time") < pl.col("submit_time"), "start before submit",
              lambda v: "the first attempt starts before submitted_time (negative queueing delay)"),
        # (an attempt that never started, a job killed while queued, has only its end to check)
        Check("attempts", pl.col("end_time") < pl.col("submit_time"), "end before submit",
              lambda v: "the last attempt ends before submitted_time"),
    ]


def _validate(jobs: pl.DataFrame, att: pl.DataFrame, errors: list[InputError], log: Path, lenient: bool,
              dropped: Counter[str], timezone: str) -> pl.DataFrame:
    """Apply record checks; strict raises the error of the lowest record, lenient drops and counts."""
    issues = _attempt_issues(att)
    if not lenient:
        if issues.height:
            errors.append(_attempt_error(issues.row(0, named=True), log, timezone))
        if errors:
            first = min(errors, key=lambda e: e.row or 0)
            apply_checks(jobs.filter(pl.col(ROW) <= first.row), _job_checks(timezone), path=log, lenient=False,
                         row_label="record")
            raise first
        apply_checks(jobs, _job_checks(timezone), path=log, lenient=False, row_label="record")
        return jobs
    jobs, counts = apply_checks(jobs, _job_checks(timezone), path=log, lenient=True, row_label="record")
    dropped.update(counts)
    bad = issues.unique(ROW, keep="first", maintain_order=True).join(jobs.select(ROW), on=ROW, how="semi")
    dropped.update(f"{('skipped time' if k else 'unparsable') if u else 'out-of-range'} attempts.{c}"
                   for c, u, k in bad.select("col", "unparsable", "skipped").iter_rows())
    return jobs.join(bad.select(ROW), on=ROW, how="anti")


def _order_attempts(att: pl.DataFrame, timezone: str) -> pl.DataFrame:
    """``start_time_`` and ``end_time_`` of attempts (wall clock ``_start_time``, ``_end_time``; in record order), each
    the later instant of the repeated hour where the earlier comes before the submit, the previous attempt's end or
    (an end) the start, or the submit for an attempt that never started."""
    while True:  # a retry read later moves its end, and so the next retry's bound: until nothing moves (2-3 passes)
        after = pl.max_horizontal("_submit", pl.col("end_time_").shift(1).over(ROW, order_by="attempt"))
        moved = att.with_columns(localize(pl.col("_start_time"), timezone, after).alias("start_time_")).with_columns(
            localize(pl.col("_end_time"), timezone, pl.coalesce("start_time_", "_submit")).alias("end_time_"))
        if moved["end_time_"].equals(att["end_time_"]):
            return moved
        att = moved


def read(path: Path, *, lenient: bool = False, timezone: str = TIMEZONE) -> Trace:
    """Read a raw Philly folder (or its ``cluster_job_log``) into jobs, attempts, cluster spec and utilisation."""
    path = Path(path)
    log = _log_path(path)
    folder = log.parent
    raw_jobs, raw_att, errors, dropped = _stream(log, lenient)
    # The log's wall-clock times carry no zone: an attempt that ends in the repeated hour of
    # the autumn DST change reads as ending before it started unless its end takes the later instant.
    # So does an attempt that starts in it after its job was submitted, or its previous attempt ended, before the
    # clocks went back: its start takes the later instant where the earlier comes before that.
    submits = raw_jobs.select(ROW, parse_datetime("submitted_time", TIME_FORMAT, timezone).alias("_submit"))
    att = raw_att.join(submits, on=ROW, how="left", maintain_order="left").with_columns(
        cell_text(c).str.to_datetime(TIME_FORMAT, strict=False, time_unit="us").alias(f"_{c}")
        for c in ("start_time", "end_time"))
    att = _order_attempts(att.with_columns(pl.lit(None, pl.Int64).alias("end_time_")), timezone).drop(
        "_submit", "_start_time", "_end_time")
    first = att.filter(pl.col("attempt") == 0).select(
        ROW, pl.col("start_time_").alias("start_time"), pl.col("gpus").alias("gpu_num"),
        pl.col("servers").list.len().alias("node_num"))
    last = att.join(raw_jobs.select(ROW, "n_attempts"), on=ROW).filter(
        pl.col("attempt") == pl.col("n_attempts") - 1).select(ROW, pl.col("end_time_").alias("end_time"))
    status = map_status("status", STATUS)
    is_pass = pl.col("status").str.strip_chars().str.to_lowercase() == "pass"
    pending_pass = is_pass & (pl.col("n_attempts") == 0)
    running_pass = is_pass & pl.col("end_time").is_null()
    jobs = (
        raw_jobs.join(first, on=ROW, how="left").join(last, on=ROW, how="left")
        .with_columns(
            parse_datetime("submitted_time", TIME_FORMAT, timezone).alias("submit_time"),
            pl.when(pending_pass).then(pl.lit("pending")).when(running_pass).then(pl.lit("running"))
            .otherwise(status).alias("status_"),
        )
    )
    jobs = _validate(jobs, att, errors, log, lenient, dropped, timezone)
    kept = jobs.select(ROW)
    jobs = conform(jobs.with_columns(
        pl.col("jobid").alias("job_id"),
        pl.lit("philly").alias("cluster"),
        pl.col("gpu_num").fill_null(0),
        (pl.col("end_time") - pl.col("start_time")).alias("duration"),
        (pl.col("start_time") - pl.col("submit_time")).alias("queue_delay"),
        pl.col("status_").alias("status"),
    ))
    attempts = conform(
        att.join(raw_jobs.select(ROW, "jobid"), on=ROW).join(kept, on=ROW, how="semi")
        .sort(ROW, "attempt")
        .select(pl.col("jobid").alias("job_id"), "attempt", pl.col("start_time_").alias("start_time"),
                pl.col("end_time_").alias("end_time"), "servers", "gpus"),
        ATTEMPT_SCHEMA,
    )
    lists = [folder / name for name in MACHINE_LISTS if (folder / name).is_file()]
    spec = read_cluster_spec(lists[0]) if lists else None
    util = PhillyUtilization(folder)
    return Trace(jobs, format="philly", timezone=timezone, attempts=attempts, cluster=spec, source=str(path),
                 dropped=dropped, utilization=util if util.available else None)


def _wall_clock(col: str) -> pl.Expr:
    # the log spells a missing time "None"
    return wall_clock_text(col, TIMEZONE, TIME_FORMAT).fill_null("None")


def _synthetic_attempts(jobs: pl.DataFrame) -> pl.DataFrame:
    """One attempt per started job, on ``ceil(gpu_num / 8)`` servers named ``m0, m1, ...``."""
    servers = (pl.col("gpu_num") + GPUS_PER_SERVER - 1) // GPUS_PER_SERVER
    return jobs.filter(pl.col("start_time").is_not_null()).select(
        "job_id", pl.lit(0, dtype=pl.Int32).alias("attempt"), "start_time", "end_time",
        pl.int_ranges(0, servers).list.eval(pl.format("m{}", pl.element())).alias("servers"),
        pl.col("gpu_num").alias("gpus"),
    )


def _detail(att: pl.DataFrame) -> pl.DataFrame:
    """Each attempt's ``detail`` list: its GPUs spread evenly over its servers, named ``gpu0..``."""
    placed = att.select("_a", "servers", "gpus").filter(pl.col("servers").list.len() > 0).explode("servers")
    placed = placed.with_columns(pos=pl.int_range(pl.len()).over("_a"), n=pl.len().over("_a")).with_columns(
        per=pl.col("gpus") // pl.col("n") + (pl.col("pos") < pl.col("gpus") % pl.col("n")).cast(pl.Int32))
    placed = placed.with_columns(pl.int_ranges(0, pl.col("per")).list.eval(pl.format("gpu{}", pl.element()))
                                 .alias("gpu_list"))
    return placed.group_by("_a", maintain_order=True).agg(
        pl.struct(ip="servers", gpus="gpu_list").alias("detail"))


def _records(trace: Trace) -> pl.Series:
    """One JSON object per job, in the release's key order."""
    jobs = conform(trace.jobs)
    att = conform(trace.attempts if trace.attempts is not None else _synthetic_attempts(jobs), ATTEMPT_SCHEMA)
    homeless = att.filter((pl.col("gpus") > 0) & (pl.col("servers").list.len().fill_null(0) == 0))
    if homeless.height:
        bad = homeless.row(0, named=True)
        raise InputError(f"attempt {bad['attempt']} of job {bad['job_id']!r} has {bad['gpus']} GPUs but no servers;"
                         " Philly's format cannot hold that")
    att = att.with_columns(pl.col("servers").fill_null([])).with_row_index("_a")
    detail = _detail(att)
    att = att.join(detail, on="_a", how="left").sort("job_id", "attempt", maintain_order=True)
    att = att.with_columns(pl.col("detail").fill_null(pl.lit([], dtype=detail.schema["detail"])))
    per_job = att.select(
        "job_id",
        pl.struct(_wall_clock("start_time"), _wall_clock("end_time"), "detail")
        .alias("attempt"),
    ).group_by("job_id", maintain_order=True).agg(pl.col("attempt").alias("attempts"))
    jobs = jobs.join(per_job, on="job_id", how="left", maintain_order="left")
    jobs = jobs.with_columns(pl.col("attempts").fill_null(pl.lit([], dtype=per_job.schema["attempts"])))
    return jobs.select(
        pl.struct(
            pl.col("status").cast(pl.String).replace_strict(_WRITE_STATUS),
            "vc", pl.col("job_id").alias("jobid"), "attempts",
            _wall_clock("submit_time").alias("submitted_time"), "user",
        ).struct.json_encode()
    ).to_series()


def write(trace: Trace, target: str | Path) -> Path:
    """Write a Philly folder: ``cluster_job_log`` (JSON array) and, with a cluster spec, ``cluster_machine_list``.

    Times are America/Los_Angeles wall clock, what the format means, whatever the trace's zone.
    """
    with atomic_folder(target, earlier=(JOB_LOG, *MACHINE_LISTS)) as folder:
        records = _records(trace)
        with atomic_path(folder / JOB_LOG) as tmp, tmp.open("w", encoding="utf-8") as out:
            out.write("[")
            for start in range(0, records.len(), _CHUNK):
                chunk = records.slice(start, _CHUNK).to_list()
                out.write(("," if start else "") + ",\n".join(chunk))
            out.write("]\n")
        if trace.cluster is not None:
            nodes = trace.cluster.pooled("philly").vcs["philly"]
            rows = "".join(f"m{i},{g},\n" for i, g in enumerate(nodes))
            write_text_atomic(folder / MACHINE_LISTS[1], "machineId, number of GPUs, single GPU mem\n" + rows)
    return Path(target)

