"""Small configuration files (TOML): read one, and refuse keys nobody knows, with one-line errors."""

from __future__ import annotations

import tomllib
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from dlcluster.errors import InputError


def read_toml(path: str | Path, known: Iterable[str]) -> dict[str, Any]:
    """The top-level table of the TOML file ``path``; an :class:`InputError` naming the file (and the key) when it is
    missing, not TOML, or has a key outside ``known``."""
    path = Path(path)
    try:
        data: dict[str, Any] = tomllib.loads(path.read_text())
    except FileNotFoundError:
        raise InputError("no such file", path=path) from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise InputError(f"not a TOML file: {exc}", path=path) from None
    names = list(known)
    for key in data:
        if key not in names:
            raise InputError(f"unknown setting (known: {', '.join(names)})", path=path, field=key)
    return data
