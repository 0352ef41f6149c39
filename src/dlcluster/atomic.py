"""Atomic output: write to a temporary file in the target folder, then rename over the target."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from dlcluster.errors import OutputError, os_reason


@contextmanager
def atomic_path(target: str | Path) -> Iterator[Path]:
    """Yield a temporary path beside ``target``; on success it is renamed onto ``target``.

    On any exception (including KeyboardInterrupt) the temporary file is removed, so a
    crash never leaves half a result under the final name.
    """
    target = Path(target)
    if not target.name or target.name in (".", ".."):
        raise OutputError(f"cannot write {str(target)!r}: expected a file name")
    if target.is_symlink() or (target.exists() and not target.is_file() and not target.is_dir()):
        # the rename would replace it (as root, /dev/null itself) rather than write through it
        raise OutputError(f"cannot write {target}: it is a link or a device, not a regular file; outputs are written "
                          "to a temporary file renamed into place, so name a regular file")
    try:
        make_folder(target.parent)
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
        os.close(fd)
    except OSError as exc:
        raise OutputError(f"cannot write {target}: {os_reason(exc)}") from exc
    tmp_path = Path(tmp)
    try:
        os.chmod(tmp_path, 0o666 & ~_umask())  # mkstemp makes files owner-only; outputs are ordinary files
        yield tmp_path
        os.replace(tmp_path, target)
    except BaseException as exc:
        tmp_path.unlink(missing_ok=True)
        if _is_os_error(exc):  # a full disk, a lost permission: the user's to fix, not a bug
            raise OutputError(f"cannot write {target}: {os_reason(exc)}") from exc
        raise


@contextmanager
def atomic_folder(target: str | Path) -> Iterator[Path]:
    """Yield the folder to write ``target``'s files into: ``target`` itself if it exists, else a temporary sibling
    renamed onto ``target`` on success and removed on any exception (including KeyboardInterrupt)."""
    target = Path(target)
    if target.is_dir():  # (perhaps a mount point, or holding other files: no rename can replace it) written in
        # place, each file atomically, so an interrupted run leaves the earlier files whole
        yield target
        return
    if target.exists() or target.is_symlink():  # a file, a device, a dangling link: the rename would fail at the end
        raise OutputError(f"cannot write into {target}: it exists and is not a folder")
    make_folder(target.parent)
    try:
        tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent))
    except OSError as exc:
        raise OutputError(f"cannot write into {target}: {os_reason(exc)}") from exc
    try:
        os.chmod(tmp, 0o777 & ~_umask())  # mkdtemp makes folders owner-only; outputs are ordinary folders
        yield tmp
        os.rename(tmp, target)
    except BaseException as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        if _is_os_error(exc):
            raise OutputError(f"cannot write into {target}: {os_reason(exc)}") from exc
        raise


def make_folder(folder: str | Path) -> Path:
    """``mkdir -p`` with a one-line error naming the part of the path that is in the way."""
    folder = Path(folder)
    for part in (folder, *folder.parents):
        if part.exists() and not part.is_dir():
            raise OutputError(f"cannot write into {folder}: {part} is a file, not a folder")
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutputError(f"cannot write into {folder}: {os_reason(exc)}") from exc
    return folder


def _is_os_error(exc: BaseException) -> bool:
    # Polars and Arrow report a failed write as their own error type, with the OS error in the text
    return isinstance(exc, OSError) or "(os error " in str(exc) or "No space left on device" in str(exc)


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
