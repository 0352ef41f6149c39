"""One exception family whose messages are meant for the user, one line each."""

from __future__ import annotations

import os
import re
from pathlib import Path


class DlclusterError(Exception):
    """Base of every error dlcluster reports to a user (CLI exit status 2)."""


class InputError(DlclusterError):
    """Bad input: names the file, the row (or record) and the field, and what is wrong."""

    def __init__(
        self,
        message: str,
        *,
        path: str | Path | None = None,
        row: int | None = None,
        field: str | None = None,
        row_label: str = "line",
    ) -> None:
        self.path = None if path is None else str(path)
        self.row = row
        self.field = field
        self.row_label = row_label
        self.detail = message
        super().__init__(self._render())

    def _render(self) -> str:
        where = []
        if self.path is not None:
            where.append(self.path)
        if self.row is not None:
            where.append(f"{self.row_label} {self.row}")
        if self.field is not None:
            where.append(f"field '{self.field}'")
        return (", ".join(where) + ": " if where else "") + self.detail


class UnknownFormatError(InputError):
    """No reader recognises the input (the command's ``--format`` option names one)."""


class UnknownVCError(InputError):
    """A job names a VC that the cluster spec lacks."""


class ConfigError(DlclusterError):
    """A bad option or configuration value."""


class OutputError(DlclusterError):
    """An output that cannot be written: a folder that is a file, no permission, a full disk."""


def os_reason(exc: BaseException) -> str:
    """The reason of an operating-system error in a few words (``[Errno 28] ...`` → ``no space left on device``)."""
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror[0].lower() + exc.strerror[1:]
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    # a library's own error around the OS's (Polars, Arrow: "parquet: ... underlying IO error: No space left on
    # device (os error 28)"): the OS's words, as for an OSError
    code = re.search(r"\((?:os error|errno) (\d+)\)|\[errno (\d+)\]", text, re.IGNORECASE)
    if code:
        reason = os.strerror(int(code.group(1) or code.group(2)))
        return reason[0].lower() + reason[1:]
    return text


def first_names(names: list[str], n: int = 5) -> str:
    """The first ``n`` of ``names``, comma-separated, and how many more (for a one-line message)."""
    return ", ".join(names[:n]) + (f" and {len(names) - n} more" if len(names) > n else "")
