"""Shared reader machinery: text-first CSV loading, row checks, lenient dropping.

Readers load raw columns as text, parse them with vectorised Polars expressions, and hand
a list of :class:`Check` to :func:`apply_checks`. Strict mode raises one
:class:`InputError` naming the first bad row; lenient mode drops every bad row and counts
the reasons. Nothing is coerced silently.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import polars as pl

from dlcluster.errors import ConfigError, InputError
from dlcluster.trace import local_datetime

ROW = "_row"  # 1-based physical line (CSV) or 0-based record index (JSON) of each row
NULL_TOKENS = ("", "None", "NA", "NaN", "nan", "null", "NULL", "Unknown")


@dataclass(frozen=True)
class Check:
    """One row rule: rows where ``bad`` is true are invalid for ``reason``."""

    field: str
    bad: pl.Expr
    reason: str
    describe: Callable[[object], str]


def read_csv_text(
    path: str | Path,
    *,
    separator: str = ",",
    has_header: bool = True,
    new_columns: Sequence[str] | None = None,
    comment_prefix: str | None = None,
    quote_char: str | None = '"',
) -> pl.DataFrame:
    """Read a delimited file with every column as text plus a ``_row`` line-number column."""
    require_file(path)
    try:
        df = pl.read_csv(
            path,
            glob=False,  # a file name with '*' or '[' is a name, not a pattern
            separator=separator,
            has_header=has_header,
            new_columns=list(new_columns) if new_columns else None,
            infer_schema=False,
            comment_prefix=comment_prefix,
            quote_char=quote_char,
            truncate_ragged_lines=False,
        )
    except pl.exceptions.ComputeError as exc:
        first = str(exc).strip().splitlines()[0]
        raise InputError(f"not a readable CSV file ({first})", path=path) from exc
    except pl.exceptions.NoDataError as exc:
        raise InputError("the file is empty", path=path) from exc
    if has_header:
        df = df.rename({c: c.strip() for c in df.columns})
    df = df.with_row_index(ROW, offset=2 if has_header else 1).with_columns(pl.col(ROW).cast(pl.Int64))
    # blank lines (e.g. a trailing empty line) come back as all-null rows: not data
    return df.filter(~pl.all_horizontal([pl.col(c).is_null() for c in df.columns if c != ROW]))


def require_file(path: str | Path) -> None:
    """Raise a one-line error unless ``path`` is an existing regular file."""
    path = Path(path)
    if path.is_dir():
        raise InputError("is a folder, expected a file", path=path)
    if not path.is_file():
        raise InputError("no such file", path=path)


def check_timezone(tz: str) -> str:
    """Return ``tz`` if it is a known IANA time zone, else raise a one-line error."""
    try:
        ZoneInfo(tz)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise ConfigError(f"unknown time zone {tz!r} (use an IANA name such as Asia/Shanghai)") from exc
    return tz


def first_line(path: Path) -> str:
    """The first line of a text file ('' for a folder or a missing file): for cheap format sniffing."""
    if not path.is_file():
        return ""
    with path.open("r", encoding="utf-8", errors="replace") as fh:
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


def parse_datetime(col: str, fmt: str, tz: str, ambiguous: str = "earliest") -> pl.Expr:
    """Parse a local wall-clock text column to UTC epoch seconds (null where unparsable or empty).

    A wall-clock time inside the repeated hour of a daylight-saving change is ambiguous;
    ``ambiguous`` picks the ``earliest`` (default) or ``latest`` instant.
    """
    check_timezone(tz)
    parsed = cell_text(col).str.to_datetime(fmt, strict=False, time_unit="us")
    return parsed.dt.replace_time_zone(tz, ambiguous=ambiguous, non_existent="null").dt.epoch("s")


def wall_clock_text(col: str, tz: str, fmt: str) -> pl.Expr:
    """Format a UTC epoch-seconds column as ``tz`` wall-clock text (for writers; null stays null)."""
    return local_datetime(pl.col(col), tz).dt.strftime(fmt).alias(col)


def parse_int(col: str) -> pl.Expr:
    """Parse an integer text column (accepts ``12.0``; null where empty or not integral)."""
    as_float = cell_text(col).cast(pl.Float64, strict=False)
    return pl.when(as_float == as_float.floor()).then(as_float).otherwise(None).cast(pl.Int64)


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


def required_value(col: str, source_col: str | None = None) -> Check:
    """A check failing where a required value is missing."""
    return Check(source_col or col, pl.col(col).is_null(), f"missing {source_col or col}", lambda v: "value is empty")


def negative(col: str, source_col: str | None = None) -> Check:
    """A check failing where a numeric value is negative."""
    return Check(
        source_col or col, pl.col(col) < 0, f"negative {source_col or col}", lambda v: f"negative value {v}"
    )


def ends_before(end: str, start: str, source_col: str) -> Check:
    """A check failing where parsed time ``end`` is earlier than parsed time ``start`` (a negative duration)."""
    return Check(source_col, pl.col(end) < pl.col(start), "end before start",
                 lambda v: f"{v!r} is before the start time (negative duration)")


def duplicate(col: str, source_col: str | None = None) -> Check:
    """A check failing on every repeat of a value already seen in an earlier row (the id column)."""
    return Check(
        source_col or col, ~pl.col(col).is_first_distinct(), f"duplicate {source_col or col}",
        lambda v: f"{v!r} occurs more than once",
    )


def apply_checks(
    df: pl.DataFrame,
    checks: Sequence[Check],
    *,
    path: str | Path,
    lenient: bool,
    row_label: str = "line",
) -> tuple[pl.DataFrame, Counter[str]]:
    """Strict: raise on the first bad row. Lenient: drop bad rows, return counts by reason."""
    if not checks or df.height == 0:
        return df, Counter()
    flags = [f"_bad{i}" for i in range(len(checks))]
    flagged = df.with_columns([c.bad.fill_null(False).alias(f) for c, f in zip(checks, flags, strict=True)])
    any_bad = pl.any_horizontal(flags)
    bad_rows = flagged.filter(any_bad)
    if bad_rows.height == 0:
        return df, Counter()
    if not lenient:
        first = bad_rows.sort(ROW).row(0, named=True)
        for check, flag in zip(checks, flags, strict=True):
            if first[flag]:
                value = first.get(check.field)
                raise InputError(check.describe(value), path=path, row=first[ROW], field=check.field,
                                 row_label=row_label)
    reason = pl.coalesce([pl.when(pl.col(f)).then(pl.lit(c.reason)) for c, f in zip(checks, flags, strict=True)])
    counts = Counter(dict(bad_rows.select(reason.alias("r"))["r"].value_counts().iter_rows()))
    return flagged.filter(~any_bad).drop(flags), counts


def map_status(col: str, mapping: dict[str, str]) -> pl.Expr:
    """Map raw status text (case-insensitive keys) onto the canonical vocabulary; null where unknown."""
    lowered = {k.lower(): v for k, v in mapping.items()}
    return pl.col(col).str.strip_chars().str.to_lowercase().replace_strict(lowered, default=None)


def unknown_status(col: str, mapped: str) -> Check:
    """A check failing on a status outside the reader's vocabulary."""
    return Check(col, pl.col(mapped).is_null(), f"unknown {col}", lambda v: f"unknown status {v!r}")
