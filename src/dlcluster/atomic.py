"""Atomic output: write to a temporary file in the target folder, then rename over the target."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def atomic_path(target: str | Path) -> Iterator[Path]:
    """Yield a temporary path beside ``target``; on success it is renamed onto ``target``.

    On any exception (including KeyboardInterrupt) the temporary file is removed, so a
    crash never leaves half a result under the final name.
    """
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    os.close(fd)
    tmp_path = Path(tmp)
    os.chmod(tmp_path, 0o666 & ~_umask())  # mkstemp makes files owner-only; outputs are ordinary files
    try:
        yield tmp_path
        os.replace(tmp_path, target)
    except BaseException:
        tmp_path.unlink(missing_ok=True)
        raise


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_atomic(target: str | Path, write: Callable[[Path], object]) -> Path:
    """Call ``write(tmp_path)`` and move the result onto ``target`` atomically."""
    with atomic_path(target) as tmp:
        write(tmp)
    return Path(target)


def write_text_atomic(target: str | Path, text: str) -> Path:
    """Write a text file atomically."""
    return write_atomic(target, lambda p: p.write_text(text, encoding="utf-8"))
