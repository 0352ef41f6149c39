"""Any CSV or Parquet job table, through a mapping from canonical to source column names.

Unmapped canonical columns are taken from same-named source columns when present. Only
``submit_time`` and ``gpu_num`` must exist; job_id defaults to the 0-based data row
index, cluster to the file's stem (the ``cluster`` option overrides), vc to ``default``,
status to ``other``, duration to end − start, queue_delay to start − submit and (unless the job is
running or pending) end to start + duration.

A time column is numeric epochs in ``time_unit`` (s, ms, us; default s) when ``time_unit``
is given or its first value is a number, else date-time text in ``timezone`` (text with an
explicit offset keeps it). Sub-second parts of times and durations are dropped; durations
are seconds (a Parquet duration column too). :func:`write` produces a canonical CSV this
reader reads back losslessly, but for a job that started and is not running but has no end
(it gets start + duration; ``convert`` notes it).
"""

from __future__ import annotations

from functools import partial
from pathlib import Path

import polars as pl

from dlcluster.atomic import write_atomic
from dlcluster.errors import ConfigError, InputError
from dlcluster.io._common import (
    CSV_NAMES,
    MAX_TIME,
    MIN_TIME,
    ROW,
    WIDE,
    Check,
    apply_checks,
    cell_text,
    check_timezone,
    count_limit,
    duplicate,
    ends_before,
    ends_before_submit,
    header_has,
    localize,
    map_status,
    negative,
    parse_float,
    parse_int,
    raw_number,
    read_csv_text,
    require_file,
    required_value,
    seconds_limit,
    skipped_time,
    source_stem,
    starts_before,
    time_limit,
    to_int,
    trimmed_text,
    unknown_status,
    unparsable,
)
from dlcluster.schema import JOB_SCHEMA, REQUIRED, conform
from dlcluster.trace import Trace

UNITS = {"s": 1, "ms": 1_000, "us": 1_000_000}
TIMES = ("submit_time", "start_time", "end_time")
COUNTS = ("gpu_num", "gpu_milli", "cpu_num", "node_num")
SPANS = ("duration", "queue_delay")
STATUS_WORDS = {
    **dict.fromkeys(("completed", "complete", "success", "succeeded", "pass", "passed", "done"), "completed"),
    **dict.fromkeys(("failed", "failure", "error"), "failed"),
    **dict.fromkeys(("cancelled", "canceled", "killed"), "cancelled"),
    **dict.fromkeys(("pending", "queued", "waiting"), "pending"),
    "timeout": "timeout", "node_fail": "node_fail", "running": "running", "other": "other",
}


def sniff(path: Path) -> bool:
    """A CSV whose header already names the canonical required columns (any other needs ``--format csv``)."""
    return path.name.lower().endswith(CSV_NAMES) and header_has(path, REQUIRED)


def _load(path: Path) -> tuple[pl.DataFrame, str]:
    """The source table as text columns plus ``_row``, and the label of its rows (line / row)."""
    require_file(path)
    with path.open("rb") as fh:
        parquet = fh.read(4) == b"PAR1"
    if not parquet:
        return read_csv_text(path), "line"
    try:
        df = pl.read_parquet(path, glob=False)
    except Exception as exc:  # pyarrow/polars raise several types for a damaged file
        raise InputError(f"not a readable Parquet file ({exc})", path=path) from exc
    # names trimmed as a CSV header's are: the reader's own columns (a space first) cannot clash with one
    trimmed = [c.strip() for c in df.columns]
    twice = next((c for c in trimmed if trimmed.count(c) > 1), None)
    if twice is not None:
        raise InputError(f"column {twice!r} appears more than once (names are trimmed of surrounding spaces)",
                         path=path)
    df = df.rename(dict(zip(df.columns, trimmed, strict=True)))
    as_text = []
    for name, dtype in df.schema.items():
        col = pl.col(name)
        if isinstance(dtype, pl.Datetime) and dtype.time_zone is not None:
            col = col.dt.convert_time_zone("UTC").dt.strftime("%Y-%m-%dT%H:%M:%S%.f+00:00")
        elif isinstance(dtype, pl.Duration):  # (durations are seconds)
            col = col.dt.total_seconds(fractional=True)
        # a list or struct has no text: kept as it is, it is refused only if mapped (see _sources)
        as_text.append(col if dtype.is_nested() else col.cast(pl.String).alias(name))
    return df.select(as_text).with_row_index(ROW, offset=1).with_columns(pl.col(ROW).cast(pl.Int64)), "row"


def _sources(df: pl.DataFrame, mapping: dict[str, str], path: Path) -> dict[str, str]:
    """Canonical column → source column, after the mapping and same-named defaults."""
    unknown = [c for c in mapping if c not in JOB_SCHEMA]
    if unknown:
        raise ConfigError(f"--map: {unknown[0]!r} is not a canonical column ({', '.join(JOB_SCHEMA)})")
    have = [c for c in df.columns if c not in (ROW, WIDE)]
    for canonical, source in mapping.items():
        if source not in have:
            raise InputError(f"missing column '{source}' (mapped to {canonical}; found: {', '.join(have)})", path=path)
    # a column named like a canonical one fills it, unless the mapping gives it to another (vc=cluster made every
    # job's cluster its VC)
    taken = set(mapping.values())
    sources = {c: mapping.get(c, c) for c in JOB_SCHEMA if c in mapping or (c in have and c not in taken)}
    for canonical, source in sources.items():
        if df.schema[source] != pl.String:  # (only a Parquet's lists and structs are not text)
            raise InputError(f"holds {df.schema[source]} values, not one value a row (for canonical {canonical!r})",
                             path=path, field=source)
    for needed in ("submit_time", "gpu_num"):
        if needed not in sources:
            raise InputError(f"no column for canonical '{needed}' (found: {', '.join(have)}); "
                             f"name it with --map {needed}=COLUMN", path=path)
    return sources


def _time(df: pl.DataFrame, source: str, unit: str | None, timezone: str, path: Path, name: str,
          after: pl.Series | None = None) -> tuple[pl.Series, str, list[Check], bool]:
    """One time column as UTC epoch seconds (aligned with ``df``, to be named ``name``), what it was expected to be,
    its checks before parsing: its range (on the unrounded number for numeric epochs, so 1e20 is out of range,
    not unparsable) and, for wall-clock text, the hour that daylight saving skips; and whether it was wall-clock
    text without a zone (read in ``timezone``).
    ``after``: for start times their jobs' submits, for end times their starts (see
    :func:`~dlcluster.io._common.localize`)."""
    raw_s = df.select(cell_text(source)).to_series()
    present = raw_s.drop_nulls()
    first = present[0] if present.len() else None
    if unit is not None or first is None or _is_number(first):
        unit = unit or "s"
        seconds = raw_number(source) / UNITS[unit]
        values = df.select(to_int(seconds.floor())).to_series()
        return values, f"epoch {unit}", [time_limit(source, seconds, partial(_unit_hint, unit=unit))], False
    raw_s = _slash_dates(raw_s, source, path)
    try:
        # eager on purpose: only a Series infers a zone-aware type from text like '...+02:00'
        parsed = raw_s.str.to_datetime(strict=False, time_unit="us")
    except pl.exceptions.PolarsError as exc:
        raise InputError(f"cannot tell the date-time format of {first!r}", path=path, field=source) from exc
    assert isinstance(parsed.dtype, pl.Datetime)
    checks = [time_limit(source, pl.col(name))]
    if parsed.dtype.time_zone:
        return parsed.dt.convert_time_zone("UTC").dt.epoch("s"), "a date-time like the first one", checks, False
    checks.append(skipped_time(source, name, None, timezone))
    return pl.select(localize(parsed, timezone, after)).to_series(), "a date-time like the first one", checks, True


def _unit_hint(value: object, unit: str) -> str:
    """'; did you mean --time-unit ms?' when the value read in a finer unit is a sane time."""
    try:
        seconds = float(str(value)) / UNITS[unit]
    except ValueError:
        return ""
    for other, scale in UNITS.items():
        if scale > UNITS[unit] and MIN_TIME <= seconds * UNITS[unit] / scale <= MAX_TIME:
            return f"; did you mean --time-unit {other}?"
    return ""


_SLASH = r"^(\d{1,2})/(\d{1,2})/(\d{4})"


def _slash_dates(raw: pl.Series, source: str, path: Path) -> pl.Series:
    """Dates like 01/02/2020 rewritten as ISO, day or month first as the column's values prove; ambiguous → error."""
    parts = raw.str.extract_groups(_SLASH)
    first, second = (parts.struct.field(k).cast(pl.Int64) for k in ("1", "2"))
    if first.is_null().all():
        return raw
    day_first, month_first = bool((first > 12).any()), bool((second > 12).any())
    if day_first == month_first:
        example = raw.filter(first.is_not_null())[0]
        why = "some dates need day first and others month first" if day_first else \
            "every date reads both as day/month and as month/day"
        raise InputError(f"cannot tell whether {example!r} is day/month/year or month/day/year ({why}); "
                         "write dates as YYYY-MM-DD", path=path, field=source)
    day, month = (1, 2) if day_first else (2, 1)
    iso = pl.concat_str([pl.col("y"), pl.col("m").str.zfill(2), pl.col("d").str.zfill(2)], separator="-")
    frame = pl.DataFrame({"raw": raw}).with_columns(pl.col("raw").str.extract(_SLASH, 3).alias("y"),
                                                   pl.col("raw").str.extract(_SLASH, month).alias("m"),
                                                   pl.col("raw").str.extract(_SLASH, day).alias("d"))
    return frame.select(pl.when(pl.col("y").is_not_null())
                        .then(iso + pl.col("raw").str.replace(_SLASH, "")).otherwise(pl.col("raw"))).to_series()


def _disagrees(source: str, span: str, later: str, earlier: str) -> Check:
    """A check failing where canonical ``span`` (read from ``source``) is more than a second off the row's ``later`` −
    ``earlier`` (sub-second parts, dropped apart, may make the two differ by a second)."""
    return Check(source, (pl.col(f" {span}") - (pl.col(f" {later}") - pl.col(f" {earlier}"))).abs() > 1,
                 f"{span} disagrees with the times",
                 lambda v: f"{v!r} is not the row's {later} − {earlier} in seconds "
                           "(--time-unit applies to times only)")


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def read(
    path: Path,
    *,
    mapping: dict[str, str] | None = None,
    time_unit: str | None = None,
    timezone: str = "UTC",
    cluster: str | None = None,
    lenient: bool = False,
) -> Trace:
    """Read a CSV/Parquet job table through a canonical→source column mapping."""
    if time_unit is not None and time_unit not in UNITS:
        raise ConfigError(f"--time-unit: {time_unit!r} is not one of {', '.join(UNITS)}")
    check_timezone(timezone)
    df, row_label = _load(path)
    src = _sources(df, mapping or {}, path)
    # (the reader's own columns start with a space, which no trimmed source name does: see _common.ROW)
    df = df.with_columns(pl.int_range(pl.len()).cast(pl.String).alias(" index"))
    parsed: list[pl.Expr] = []
    checks: list[Check] = []
    times: dict[str, pl.Series] = {}
    zoneless = False
    for c in TIMES:
        if c in src:
            # (a start in the autumn's repeated hour is the later instant where the earlier is before its submit;
            # an end, where the earlier is before its start, or its submit when it never started)
            known = [times[k] for k in {"start_time": ("submit_time",), "end_time": ("start_time", "submit_time")}
                     .get(c, ()) if k in times]
            before = pl.select(pl.coalesce(known)).to_series() if known else None
            series, what, time_checks, naive = _time(df, src[c], time_unit, timezone, path, f" {c}", before)
            zoneless |= naive
            times[c] = series
            parsed.append(pl.lit(series.alias(f" {c}")))
            checks += [*time_checks, unparsable(src[c], f" {c}", what)]
    for c in COUNTS + SPANS:
        if c in src:
            parsed.append((parse_int(src[c]) if c in COUNTS else to_int(parse_float(src[c]).floor())).alias(f" {c}"))
            checks += [count_limit(src[c]) if c in COUNTS else seconds_limit(src[c]),
                       unparsable(src[c], f" {c}", "a whole number" if c in COUNTS else "seconds"),
                       negative(f" {c}", src[c])]
    if "status" in src:
        parsed.append(map_status(src["status"], STATUS_WORDS).alias(" status"))
        checks.append(unknown_status(src["status"], " status"))
    # trimmed, as the Helios and estimates readers trim them (" x" matched no estimate of x); only spaces: missing
    text = {c: pl.col(src[c]) if c == "name" else trimmed_text(src[c])
            for c in ("job_id", "cluster", "vc", "user", "name") if c in src}
    text.setdefault("job_id", pl.col(" index"))
    text["cluster"] = pl.lit(cluster or source_stem(path)) if cluster or "cluster" not in src else text["cluster"]
    text.setdefault("vc", pl.lit("default"))
    parsed += [expr.alias(f" {c}") for c, expr in text.items()]
    df = df.with_columns(parsed)
    checks += [required_value(f" {c}", src.get(c)) for c in ("job_id", "cluster", "vc", "submit_time", "gpu_num")]
    checks.append(duplicate(" job_id", src.get("job_id")))
    if "start_time" in src and "end_time" in src:
        checks.append(ends_before(" end_time", " start_time", src["end_time"]))
    # (the Helios reader refuses such rows too)
    for span, (later, earlier) in {"duration": ("end_time", "start_time"),
                                   "queue_delay": ("start_time", "submit_time")}.items():
        if span in src and later in src and earlier in src:
            checks.append(_disagrees(src[span], span, later, earlier))
    if "start_time" in src:
        checks.append(starts_before(" start_time", " submit_time", src["start_time"]))
    if "end_time" in src:
        checks.append(ends_before_submit(" end_time", " submit_time", src["end_time"]))
    df, dropped = apply_checks(df, checks, path=path, lenient=lenient, row_label=row_label)

    def have(c: str) -> pl.Expr:
        return pl.col(f" {c}") if f" {c}" in df.columns else pl.lit(None, JOB_SCHEMA[c])

    jobs = conform(df.select(
        *[have(c).alias(c) for c in ("job_id", "cluster", "vc", "user", "name", *COUNTS, *TIMES)],
        pl.coalesce(have("duration"), have("end_time") - have("start_time")).alias("duration"),
        pl.coalesce(have("queue_delay"), have("start_time") - have("submit_time")).alias("queue_delay"),
        (have("status") if "status" in src else pl.lit("other")).alias("status"),
    ))
    # a job that is not still running or pending ended its run time after its start (without it, a table of starts
    # and durations had no running GPUs to show: every job at load 0)
    ended = ~pl.col("status").cast(pl.String).is_in(["running", "pending"])
    jobs = jobs.with_columns(pl.when(ended).then(pl.coalesce("end_time", pl.col("start_time") + pl.col("duration")))
                             .otherwise("end_time").alias("end_time"))
    return Trace(jobs, format="csv", timezone=timezone, source=str(path), dropped=dropped, zoneless=zoneless)


def write(trace: Trace, target: str | Path) -> Path:
    """Write the job table as a canonical CSV (epoch-second integers, canonical header), atomically."""
    jobs = conform(trace.jobs).with_columns(pl.col("status").cast(pl.String))
    return write_atomic(target, jobs.write_csv)
