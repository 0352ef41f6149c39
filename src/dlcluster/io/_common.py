"""Shared reader machinery: text-first CSV loading, row checks, lenient dropping.

Readers load raw columns as text, parse them with vectorised Polars expressions, and hand
a list of :class:`Check` to :func:`apply_checks`. Strict mode raises one
:class:`InputError` naming the first bad row; lenient mode drops every bad row and counts
the reasons. Nothing is coerced silently.
"""

from __future__ import annotations

import codecs
import csv
import gzip
import io
import math
import re
import zlib
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import IO, Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import polars as pl

from dlcluster.errors import ConfigError, InputError, os_reason
from dlcluster.trace import local_datetime

# The readers' own columns start with a space: a header's names are trimmed (Parquet's too, in the csv reader), so no
# source column can take one (a column '_row' was an internal error, '_index' was replaced by row numbers).
ROW = " row"  # 1-based physical line (CSV) or 0-based record index (JSON) of each row
# (-nan: C's printf of a negative NaN)
NULL_TOKENS = ("", "None", "NA", "NaN", "nan", "-nan", "-NaN", "null", "NULL", "Unknown")

# Documented input limits (docs/errors.md): a value outside them is a row error, never an overflow.
MAX_COUNT = 2**31 - 1  # GPUs, CPUs, nodes of a job: the canonical table's int32
MAX_SECONDS = 3_155_760_000  # durations and delays: 100 years
MIN_TIME, MAX_TIME = -2_208_988_800, 7_258_118_400  # 1900-01-01 .. 2200-01-01 UTC
TIME_RANGE = "a time between 1900-01-01 and 2200-01-01 UTC"
_INT_LIMIT = 2.0**62  # floats beyond this never become Int64: no cast can overflow


@dataclass(frozen=True)
class Check:
    """One row rule: rows where ``bad`` is true are invalid for ``reason``."""

    field: str
    bad: pl.Expr
    reason: str
    describe: Callable[[object], str]
    names_field: bool = True  # False: the error names the row only (``field`` is then just where the value is)


WIDE = " wide"  # on a row with more or fewer fields than the header: what is wrong (null elsewhere)


_COMPRESSION = {b"\x1f\x8b": "gzip", b"\x28\xb5\x2f\xfd": "zstd"}  # by magic number: Polars decodes both
COMPRESSED = tuple(_COMPRESSION)
_ZSTD_WORDS = {"Truncated compressed stream": "incomplete frame"}  # pyarrow's words for a damaged zstd file → Polars'
SUFFIXES = ("", ".gz", ".zst")  # what a file's name may end with, plain or compressed (told by content, not name)
CSV_NAMES = tuple(f".csv{s}" for s in SUFFIXES)  # the file names a CSV detected by its name may have


def read_csv_text(
    path: str | Path,
    *,
    separator: str = ",",
    has_header: bool = True,
    new_columns: Sequence[str] | None = None,
    comment_prefix: str | None = None,
    quote_char: str | None = '"',
) -> pl.DataFrame:
    """Read a delimited file with every column as text plus a ``_row`` line-number column.

    ``_row`` is the physical line a row starts on, even after a quoted field spanning lines.
    A row with more or fewer fields than the header gets a ``_wide`` text (see :func:`apply_checks`).
    """
    require_file(path)
    with Path(path).open("rb") as fh:
        head = fh.read(4096)
    # a binary file (other than a compressed CSV, which Polars reads): its bytes must not reach the terminal in an error
    if b"\0" in head and not head.startswith(COMPRESSED):
        raise InputError("not a text file (it holds NUL bytes): a CSV or text export was expected", path=path)
    with decompressing(path):
        return _text_table(path, separator, has_header, new_columns, comment_prefix, quote_char)


def _text_table(path: str | Path, separator: str, has_header: bool, new_columns: Sequence[str] | None,
                comment_prefix: str | None, quote_char: str | None) -> pl.DataFrame:
    """:func:`read_csv_text` once the file is known to be text (or compressed text)."""
    options: dict[str, Any] = {
        "glob": False,  # a file name with '*' or '[' is a name, not a pattern
        "separator": separator, "has_header": has_header,
        "new_columns": list(new_columns) if new_columns else None,
        "infer_schema": False, "comment_prefix": comment_prefix, "quote_char": quote_char,
    }
    wide: dict[int, int] = {}
    try:
        try:
            df = pl.read_csv(path, truncate_ragged_lines=False, **options)
        except pl.exceptions.ComputeError as exc:
            records = _scan_records(Path(path), separator, quote_char, strict=True)
            width = records[0][1] if has_header and records else len(new_columns or ()) or None
            wide = {i: n for i, (_, n) in enumerate(records) if width is not None and n > width}
            if not wide:
                first = str(exc).strip().splitlines()[0]
                raise InputError(f"not a readable CSV file ({first})", path=path) from exc
            df = pl.read_csv(path, truncate_ragged_lines=True, **options)
    except pl.exceptions.NoDataError as exc:
        raise InputError("the file is empty", path=path) from exc
    except pl.exceptions.PolarsError as exc:
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise InputError(f"not a readable CSV file ({first})", path=path) from exc
    if has_header:
        twice = next((c for c in df.columns if re.search(r"_duplicated_\d+$", c)), None)
        if twice is not None:
            name = re.sub(r"_duplicated_\d+$", "", twice).strip()
            raise InputError(f"column {name!r} appears more than once in the header", path=path, row=1)
        df = df.rename({c: c.strip() for c in df.columns})
    offset = 2 if has_header else 1
    df = df.with_row_index(ROW, offset=offset).with_columns(pl.col(ROW).cast(pl.Int64))
    text = [c for c, t in df.schema.items() if t == pl.String]
    records = None
    if text and df.select(pl.any_horizontal(pl.col(text).str.contains("\n", literal=True).any())).item():
        records = _scan_records(Path(path), separator, quote_char, strict=False)
        lines = [line for line, _ in records]
        if len(lines) == df.height + offset - 1:  # one record per row (and the header): map rows onto lines
            df = df.with_columns(pl.Series(ROW, lines[offset - 1:], pl.Int64))
    expected = len(df.columns) - 1
    first_row = 1 if has_header else 0
    if has_header and expected > 1:
        short = _short_records(Path(path), df, separator, quote_char, records)
        if short:  # (Polars fills a row's missing fields with nulls, as if they were empty)
            wide = {**wide, **{i + first_row: n for i, n in short.items()}}
    if wide:
        df = df.with_columns(pl.Series(WIDE, [
            f"has {wide[i]} fields, the header names {expected}" if i in wide else None
            for i in range(first_row, first_row + df.height)], pl.String))
    # blank lines (e.g. a trailing empty line) come back as all-null rows: not data
    return df.filter(~pl.all_horizontal([pl.col(c).is_null() for c in df.columns if c not in (ROW, WIDE)]))


def _short_records(path: Path, df: pl.DataFrame, separator: str, quote_char: str | None,
                   records: list[tuple[int, int]] | None) -> dict[int, int]:
    """Per row index of ``df`` (text columns and ``ROW``) with fewer fields than the header, its field count.

    Only rows whose last column is null can be short (Polars fills missing fields with nulls, as it reads empty
    ones); their fields are counted on the file's lines, read once more as whole lines, or taken from
    ``records`` (:func:`_scan_records`) when quoted fields span lines.
    """
    columns = [c for c in df.columns if c not in (ROW, WIDE)]
    data = pl.any_horizontal(pl.col(c).is_not_null() for c in columns)  # (a blank line is no record)
    suspects = df.with_row_index(" i").filter(pl.col(columns[-1]).is_null() & data).select(" i", ROW)
    if suspects.height == 0:
        return {}
    if records is not None:
        counted = pl.DataFrame(records, schema={ROW: pl.Int64, "n": pl.Int64}, orient="row")
        fields = suspects.join(counted, on=ROW, how="left", maintain_order="left")["n"]
    else:
        lines = pl.read_csv(path, has_header=False, separator="\x1f" if separator != "\x1f" else "\x1e",
                            quote_char=None, new_columns=["line"], infer_schema=False, glob=False)["line"]
        line = lines.gather(suspects[ROW] - 1).fill_null("")
        fields = line.str.count_matches(separator, literal=True).cast(pl.Int64) + 1
        if quote_char is not None:  # a separator inside quotes is no field's end: those lines are parsed
            quoted = line.str.contains(quote_char, literal=True).arg_true()
            fields = fields.scatter(quoted, [len(next(csv.reader([line[int(k)]], delimiter=separator,
                                                                 quotechar=quote_char), [])) for k in quoted])
    short = fields < len(columns)
    return dict(zip(suspects[" i"].filter(short).to_list(), fields.filter(short).to_list(), strict=True))


def _scan_records(path: Path, separator: str, quote_char: str | None, *, strict: bool) -> list[tuple[int, int]]:
    """(first physical line, number of fields) of every record, read with Python's csv module.

    Only on the slow paths: a file Polars refused (``strict``: a malformed one is an error
    naming its line) or one whose quoted fields span lines.
    """
    _require_utf8(path)
    out: list[tuple[int, int]] = []
    with _open_text(path, errors="replace", newline="") as fh:
        reader = (csv.reader(fh, delimiter=separator, quoting=csv.QUOTE_NONE, strict=strict) if quote_char is None
                  else csv.reader(fh, delimiter=separator, quotechar=quote_char, strict=strict))
        line = 1
        try:
            for record in reader:
                out.append((line, len(record)))
                line = reader.line_num + 1
        except csv.Error as exc:
            raise InputError(f"malformed CSV ({exc})", path=path, row=line) from exc
    return out


@contextmanager
def decompressing(path: str | Path) -> Iterator[None]:
    """Refuse a compressed file that is cut short or corrupt, naming it: the decoders' errors name no file."""
    try:
        yield
    except (OSError, EOFError, zlib.error) as exc:
        kind = compression(Path(path))
        # an OSError with a file name is the machine's answer about a path, not a decoder's (the CLI reports it)
        if kind is None or (isinstance(exc, OSError) and exc.filename is not None):
            raise
        # (Python's gzip and pyarrow's zstd word a damaged stream their own way: the same file reads the same
        # through their decoder and Polars')
        reason = "unexpected end of file" if isinstance(exc, EOFError) else os_reason(exc)
        reason = _ZSTD_WORDS.get(reason, reason.removeprefix("ZSTD decompress failed: "))
        raise InputError(f"truncated or corrupt {kind} file ({reason})", path=path) from exc


def first_file(folder: Path, name: str) -> Path | None:
    """The folder's file ``name``, plain or compressed: the first of ``name`` with :data:`SUFFIXES` that is a file."""
    return next((folder / (name + s) for s in SUFFIXES if (folder / (name + s)).is_file()), None)


def source_stem(path: Path) -> str:
    """A file's name without its suffix, and without a compression suffix before that (``jobs.csv.gz``: ``jobs``,
    as ``jobs.csv``)."""
    name = path.name
    for suffix in SUFFIXES[1:]:
        if name.endswith(suffix):
            name = name[: -len(suffix)]
            break
    return Path(name).stem


def compression(path: Path) -> str | None:
    """The name of the file's compression (``gzip``, ``zstd``), None for a plain file."""
    with path.open("rb") as fh:
        head = fh.read(4)
    return next((name for magic, name in _COMPRESSION.items() if head.startswith(magic)), None)


def open_bytes(path: Path) -> gzip.GzipFile | io.BufferedReader:
    """The file's bytes, decompressed if it is gzip or zstd (Polars reads a compressed CSV as it is, so the sniffers
    and the slow paths must)."""
    kind = compression(path)
    if kind == "gzip":
        return gzip.open(path, "rb")
    if kind == "zstd":  # (Python 3.11 has no zstd module: pyarrow's decoder, imported only for a zstd file)
        import pyarrow as pa

        return io.BufferedReader(pa.input_stream(str(path), compression="zstd"))
    return path.open("rb")


def _open_text(path: Path, **options: Any) -> IO[str]:
    """:func:`open_bytes` as UTF-8 text; a byte-order mark is not text."""
    return io.TextIOWrapper(open_bytes(path), encoding="utf-8-sig", **options)


def _require_utf8(path: Path) -> None:
    """Raise naming the line of the first byte that is not UTF-8."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    lines = 0
    with open_bytes(path) as fh:
        while chunk := fh.read(1 << 20):
            try:
                decoder.decode(chunk)
            except UnicodeDecodeError as exc:
                at = max(exc.start - len(exc.object) + len(chunk), 0)
                raise InputError(f"not UTF-8 text (byte {chunk[at:at + 1]!r} cannot be decoded)", path=path,
                                 row=lines + chunk.count(b"\n", 0, at) + 1) from exc
            lines += chunk.count(b"\n")


def require_file(path: str | Path) -> None:
    """Raise a one-line error unless ``path`` is an existing regular file."""
    path = Path(path)
    if path.is_dir():
        raise InputError("is a folder, expected a file", path=path)
    if path.exists() and not path.is_file():  # a device or a pipe could be read forever
        raise InputError("is not a regular file", path=path)
    if not path.is_file():
        raise InputError("no such file", path=path)


def check_timezone(tz: str) -> str:
    """Return ``tz`` if it is a known IANA time zone, else raise a one-line error."""
    try:
        ZoneInfo(tz)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        from zoneinfo import available_timezones

        # IANA names are case-sensitive: 'utc' or 'asia/shanghai' is most likely a known zone typed in lower case
        same = sorted(z for z in available_timezones() if z.lower() == tz.strip().lower())
        hint = f"did you mean {same[0]!r}?" if same else "use an IANA name such as Asia/Shanghai"
        raise ConfigError(f"unknown time zone {tz!r} ({hint})") from exc
    return tz


def first_line(path: Path) -> str:
    """The first line of a text file ('' for a folder or a missing file): for cheap format sniffing (a compressed
    file too damaged to give one is refused)."""
    if not path.is_file():
        return ""
    with decompressing(path), _open_text(path, errors="replace") as fh:
        return fh.readline()


def header_has(path: Path, columns: Iterable[str], separator: str = ",") -> bool:
    """True when the file's header line names every one of ``columns``."""
    header = {c.strip() for c in first_line(path).strip().split(separator)}
    return set(columns) <= header


def require_columns(df: pl.DataFrame, required: Iterable[str], path: str | Path) -> None:
    """Raise naming the first required column the file lacks."""
    for col in required:
        if col not in df.columns:
            have = ", ".join(c for c in df.columns if c != ROW)
            raise InputError(f"missing column '{col}' (found: {have})", path=path)


def is_null_token(col: str) -> pl.Expr:
    """True where a raw text cell means 'no value'."""
    return pl.col(col).is_null() | pl.col(col).str.strip_chars().is_in(list(NULL_TOKENS))


def cell_text(col: str) -> pl.Expr:
    """A raw text cell trimmed, null where it means 'no value'."""
    return pl.when(is_null_token(col)).then(None).otherwise(pl.col(col).str.strip_chars())


def trimmed_text(col: str) -> pl.Expr:
    """A text column trimmed of surrounding spaces, null where that leaves nothing (for ids and names, where
    ``None`` or ``NA`` may be a name: :func:`cell_text` reads them as no value)."""
    value = pl.col(col).str.strip_chars()
    return pl.when(value != "").then(value)


def parse_datetime(col: str, fmt: str, tz: str, after: pl.Expr | None = None) -> pl.Expr:
    """Parse a local wall-clock text column to UTC epoch seconds (null where unparsable or empty).

    A wall-clock time inside the repeated hour of a daylight-saving change is ambiguous: it reads as the earliest
    instant, except where that would come before ``after`` (for an end time its job's start, or its submit when it
    never started; for a start time its submit): the job waited or ran while the clocks went back (see
    :func:`localize`).
    """
    check_timezone(tz)
    return localize(cell_text(col).str.to_datetime(fmt, strict=False, time_unit="us"), tz, after)


def localize(wall: pl.Expr | pl.Series, tz: str, after: pl.Expr | pl.Series | None = None) -> pl.Expr:
    """Naive wall-clock datetimes in ``tz`` as UTC epoch seconds (null where ``tz`` skips the time); an ambiguous
    one reads as the earliest instant, or as the latest where the earliest comes before ``after``."""
    wall = pl.lit(wall) if isinstance(wall, pl.Series) else wall
    after = pl.lit(after) if isinstance(after, pl.Series) else after
    early = wall.dt.replace_time_zone(tz, ambiguous="earliest", non_existent="null").dt.epoch("s")
    if after is None:
        return early
    late = wall.dt.replace_time_zone(tz, ambiguous="latest", non_existent="null").dt.epoch("s")
    return pl.when(early < after).then(late).otherwise(early)


def wall_clock_text(col: str, tz: str, fmt: str) -> pl.Expr:
    """Format a UTC epoch-seconds column as ``tz`` wall-clock text (for writers; null stays null)."""
    return local_datetime(pl.col(col), tz).dt.strftime(fmt).alias(col)


def to_int(value: pl.Expr) -> pl.Expr:
    """A float expression as Int64, null where it is not finite or beyond ±2**62: a cast that cannot overflow."""
    return value.map_batches(partial(_as_int, whole=False), return_dtype=pl.Int64, is_elementwise=True)


def raw_number(col: str) -> pl.Expr:
    """A raw text cell as a float (``inf`` and ``1e30`` included; null where empty or not a number)."""
    return cell_text(col).cast(pl.Float64, strict=False)


def parse_int(col: str) -> pl.Expr:
    """Parse an integer text column (accepts ``12.0``; null where empty, not integral or beyond ±2**62)."""
    return raw_number(col).map_batches(partial(_as_int, whole=True), return_dtype=pl.Int64, is_elementwise=True)


# The checks below run on the parsed column once it exists: written as one expression, the parse would run again for
# every use of its value (a reader's table spends most of its time parsing numbers three or four times over).

def _as_int(values: pl.Series, *, whole: bool) -> pl.Series:
    """``values`` as Int64; null where not finite, beyond ±2**62, or (``whole``) not a whole number."""
    v = pl.col("v")
    ok = v.is_finite() & (v.abs() < _INT_LIMIT)
    if whole:
        ok &= v == v.floor()
    return values.to_frame("v").select(pl.when(ok).then(v).cast(pl.Int64)).to_series().alias(values.name)


def _outside(values: pl.Series, *, low: float, high: float) -> pl.Series:
    """True where ``values`` are infinite or outside ``[low, high]`` (null stays null)."""
    return values.is_infinite() | (values < low) | (values > high)


def parse_float(col: str) -> pl.Expr:
    """Parse a float text column (null where empty or unparsable)."""
    return cell_text(col).cast(pl.Float64, strict=False)


def unparsable(col: str, parsed: str, what: str) -> Check:
    """A check failing where ``col`` holds text but its parsed twin ``parsed`` is null."""
    return Check(
        col,
        (~is_null_token(col)) & pl.col(parsed).is_null(),
        f"unparsable {col}",
        lambda v, what=what: f"cannot parse {v!r} as {what}",
    )


def skipped_time(col: str, parsed: str, fmt: str | None, tz: str) -> Check:
    """A check failing where ``col`` reads as a wall-clock time (``fmt``; None: inferred) that ``tz`` skips when
    daylight saving starts (put before :func:`unparsable`, which would call it unparsable). Only the rows whose
    parsed twin ``parsed`` is null are read again."""
    failed = pl.when(pl.col(parsed).is_null()).then(cell_text(col))
    naive = failed.str.to_datetime(fmt, strict=False, time_unit="us")
    skipped = naive.is_not_null() & naive.dt.replace_time_zone(tz, ambiguous="earliest", non_existent="null").is_null()
    return Check(col, skipped, f"skipped time {col}",
                 lambda v: f"{v!r} is no such time in {tz} (the clocks skip it when daylight saving starts)")


def out_of_range(field: str, value: pl.Expr, low: float, high: float, allowed: str,
                 hint: Callable[[object], str] | None = None) -> Check:
    """A check failing where ``value`` (a float or parsed column) is infinite or outside ``[low, high]``."""
    outside = value.map_batches(partial(_outside, low=low, high=high), return_dtype=pl.Boolean, is_elementwise=True)
    return Check(field, outside, f"out-of-range {field}",
                 lambda v: f"{v!r} is out of range (expected {allowed})" + (hint(v) if hint else ""))


def count_limit(col: str, value: pl.Expr | None = None) -> Check:
    """A check failing where a GPU/CPU/node count (raw ``col`` unless ``value``) exceeds :data:`MAX_COUNT`."""
    return out_of_range(col, raw_number(col) if value is None else value, -math.inf, MAX_COUNT,
                        f"a count of at most {MAX_COUNT:,}")


def seconds_limit(col: str, value: pl.Expr | None = None) -> Check:
    """A check failing where a duration or delay (raw ``col`` unless ``value``) exceeds :data:`MAX_SECONDS`."""
    return out_of_range(col, raw_number(col) if value is None else value, -math.inf, MAX_SECONDS,
                        f"at most {MAX_SECONDS:,} seconds, 100 years")


def time_limit(col: str, value: pl.Expr, hint: Callable[[object], str] | None = None) -> Check:
    """A check failing where epoch seconds ``value`` of ``col`` lie outside :data:`MIN_TIME`..:data:`MAX_TIME`."""
    return out_of_range(col, value, MIN_TIME, MAX_TIME, TIME_RANGE, hint)


def starts_before(start: str, submit: str, source_col: str) -> Check:
    """A check failing where parsed time ``start`` is earlier than parsed ``submit`` (a negative queueing delay)."""
    return Check(source_col, pl.col(start) < pl.col(submit), "start before submit",
                 lambda v: f"{v!r} is before the submit time (negative queueing delay)")


def required_value(col: str, source_col: str | None = None) -> Check:
    """A check failing where a required value is missing."""
    return Check(source_col or col, pl.col(col).is_null(), f"missing {source_col or col}", _empty)


def is_blank(value: object) -> bool:
    """Whether a raw value is missing or only spaces."""
    return value is None or not str(value).strip()


def _empty(value: object) -> str:
    """What a required value that parsed to nothing was: empty, or text that means none (nan, Unknown)."""
    return "value is empty" if is_blank(value) else f"no value ({value!r})"


def negative(col: str, source_col: str | None = None) -> Check:
    """A check failing where a numeric value is negative."""
    return Check(
        source_col or col, pl.col(col) < 0, f"negative {source_col or col}", lambda v: f"negative value {v}"
    )


def ends_before(end: str, start: str, source_col: str) -> Check:
    """A check failing where parsed time ``end`` is earlier than parsed time ``start`` (a negative duration)."""
    return Check(source_col, pl.col(end) < pl.col(start), "end before start",
                 lambda v: f"{v!r} is before the start time (negative duration)")


def ends_before_submit(end: str, submit: str, source_col: str) -> Check:
    """A check failing where parsed time ``end`` is earlier than parsed ``submit`` (put after :func:`ends_before` and
    :func:`starts_before`: it speaks for the rows without a start, such as a job cancelled while queued)."""
    return Check(source_col, pl.col(end) < pl.col(submit), "end before submit",
                 lambda v: f"{v!r} is before the submit time (the job ends before it is submitted)")


def duplicate(col: str, source_col: str | None = None) -> Check:
    """A check failing on every repeat of a value already seen in an earlier row (the id column)."""
    return Check(
        source_col or col, ~pl.col(col).is_first_distinct(), f"duplicate {source_col or col}",
        lambda v: f"{v!r} occurs more than once",
    )


def duplicate_key(col: str, key: pl.Expr, df: pl.DataFrame, noun: str) -> Check:
    """A check failing on every row of ``df`` whose ``key`` (raw ``col`` as the format reads it: ``7`` and ``007`` are
    job 7) an earlier row had; the error names the earlier spelling and its line when it differs."""
    keyed = df.select(ROW, col, key.alias(" key"))

    def describe(value: object) -> str:
        same = keyed.filter(pl.col(" key") == keyed.filter(pl.col(col) == value)[" key"][0])
        first = same.sort(ROW).row(0, named=True)
        if first[col] == value:
            return f"{value!r} occurs more than once"
        return f"{value!r} is {noun} {first[' key']!r} again, as {first[col]!r} on line {first[ROW]}"

    return Check(col, key.is_not_null() & ~key.is_first_distinct(), f"duplicate {col}", describe)


def apply_checks(
    df: pl.DataFrame,
    checks: Sequence[Check],
    *,
    path: str | Path,
    lenient: bool,
    row_label: str = "line",
) -> tuple[pl.DataFrame, Counter[str]]:
    """Strict: raise on the first bad row. Lenient: drop bad rows, return counts by reason."""
    if WIDE in df.columns:
        checks = [Check(WIDE, pl.col(WIDE).is_not_null(), "wrong number of fields", str, names_field=False),
                  *checks]
    if not checks or df.height == 0:
        return df.drop(WIDE, strict=False), Counter()
    flags = [f" bad{i}" for i in range(len(checks))]
    flagged = df.with_columns([c.bad.fill_null(False).alias(f) for c, f in zip(checks, flags, strict=True)])
    any_bad = pl.any_horizontal(flags)
    bad_rows = flagged.filter(any_bad)
    if bad_rows.height == 0:
        return df.drop(WIDE, strict=False), Counter()
    if not lenient:
        first = bad_rows.sort(ROW).row(0, named=True)
        for check, flag in zip(checks, flags, strict=True):
            if first[flag]:
                value = first.get(check.field)
                raise InputError(check.describe(value), path=path, row=first[ROW],
                                 field=check.field if check.names_field else None, row_label=row_label)
    reason = pl.coalesce([pl.when(pl.col(f)).then(pl.lit(c.reason)) for c, f in zip(checks, flags, strict=True)])
    counts = Counter(dict(bad_rows.select(reason.alias("r"))["r"].value_counts().iter_rows()))
    return flagged.filter(~any_bad).drop(*flags, WIDE, strict=False), counts


def map_status(col: str, mapping: dict[str, str]) -> pl.Expr:
    """Map raw status text (case-insensitive keys) onto the canonical vocabulary; null where unknown."""
    lowered = {k.lower(): v for k, v in mapping.items()}
    return pl.col(col).str.strip_chars().str.to_lowercase().replace_strict(lowered, default=None)


def unknown_status(col: str, mapped: str, allowed: Sequence[str] = ()) -> Check:
    """A check failing on a status outside the reader's vocabulary (``allowed``: its words, named in the error)."""
    expected = f" (expected one of: {', '.join(allowed)})" if allowed else ""
    return Check(col, pl.col(mapped).is_null(), f"unknown {col}",
                 lambda v: "value is empty" if is_blank(v) else f"unknown status {v!r}{expected}")
