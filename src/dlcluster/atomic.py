"""Atomic output: write to a temporary file in the target folder, then rename over the target."""

from __future__ import annotations

import glob
import os
import shutil
import signal
import socket
import tempfile
import threading
from collections.abc import Callable, Iterable, Iterator
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
        tmp_path = _temporary(target.parent, target.name, folder=False)
    except OSError as exc:
        raise OutputError(f"cannot write {target}: {os_reason(exc)}") from exc
    try:
        os.chmod(tmp_path, 0o666 & ~_umask())  # mkstemp makes files owner-only; outputs are ordinary files
        yield tmp_path
        os.replace(tmp_path, target)
    except BaseException as exc:
        tmp_path.unlink(missing_ok=True)
        if _is_os_error(exc):  # a full disk, a lost permission: the user's to fix, not a bug
            raise OutputError(f"cannot write {target}: {os_reason(exc)}") from exc
        raise


# written last when a folder's files are moved into place: a folder without them was stopped while they moved
LAST = ("summary.json", "index.html")
HELD_SIGNALS = tuple(getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name))


@contextmanager
def atomic_folder(target: str | Path, earlier: Iterable[str] | Callable[[], Iterable[str]] = ()) -> Iterator[Path]:
    """Yield an empty folder to write all of ``target``'s files into; on success they become ``target``'s together,
    in place of the ``earlier`` ones (an earlier run's outputs: names in ``target``, a folder's ending in ``/``; or a
    function giving them, asked once the files are written); on any exception (including KeyboardInterrupt) it is
    removed and ``target`` is left as it was.

    A new ``target`` is a temporary sibling renamed onto it. An existing one (perhaps a mount point, or holding other
    files: no rename can replace it) gets a temporary folder inside it; once every file is written, the earlier
    outputs are moved aside and the new ones renamed into ``target`` (``LAST`` last) while signals are held back,
    so a folder never mixes files of two runs, and a full disk, a kill or an earlier file that cannot be moved leaves
    the earlier run whole.
    """
    target = Path(target)
    existing = target.is_dir()
    if not existing and (target.exists() or target.is_symlink()):  # a file, a device, a dangling link
        raise OutputError(f"cannot write into {target}: it exists and is not a folder")
    parent = target if existing else make_folder(target.parent)
    try:
        tmp = _temporary(parent, target.name, folder=True)
    except OSError as exc:
        raise OutputError(f"cannot write into {target}: {os_reason(exc)}") from exc
    try:
        os.chmod(tmp, 0o777 & ~_umask())  # mkdtemp makes folders owner-only; outputs are ordinary folders
        yield tmp
        if existing:
            _move_into(tmp, target, list(earlier() if callable(earlier) else earlier))
        else:
            os.rename(tmp, target)
    except BaseException as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        if isinstance(exc, OutputError):  # (named after the temporary folder, which is gone)
            raise OutputError(str(exc).replace(str(tmp), str(target))) from exc
        if _is_os_error(exc):
            raise OutputError(f"cannot write into {target}: {os_reason(exc)}") from exc
        raise


_HOST = socket.gethostname()


def _temporary(parent: Path, name: str, folder: bool) -> Path:
    """A new temporary file or folder in ``parent`` for the output ``name``, named after this process
    (``.NAME.HOST-PID.XXXXXXXX.tmp``); first removes those left there by processes of this machine that are gone
    (a kill -9, the OOM killer), which no signal handler could clean up."""
    ours = f".{name}.{_HOST}-"
    for entry in parent.glob(f"{glob.escape(ours)}*.tmp"):
        pid = entry.name[len(ours):].partition(".")[0]
        if pid.isdigit() and not _alive(int(pid)):
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry, ignore_errors=True)
            else:
                entry.unlink(missing_ok=True)
    prefix = f"{ours}{os.getpid()}."
    if folder:
        return Path(tempfile.mkdtemp(prefix=prefix, suffix=".tmp", dir=parent))
    fd, tmp = tempfile.mkstemp(prefix=prefix, suffix=".tmp", dir=parent)
    os.close(fd)
    return Path(tmp)


def _alive(pid: int) -> bool:
    """Whether process ``pid`` runs on this machine (perhaps as another user)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # not ours to signal, but there
        return True
    return True


def _move_into(staged: Path, target: Path, earlier: list[str]) -> None:
    """Move ``target``'s ``earlier`` entries aside and ``staged``'s in (``LAST`` last), then remove both; an earlier
    entry that cannot be moved puts back those moved before it."""
    entries = sorted(staged.iterdir(), key=lambda p: (p.name in LAST, p.name))
    blocked = in_the_way(target, [f"{e.name}/" if e.is_dir() else e.name for e in entries], earlier)
    if blocked is not None:  # (checked before anything is moved)
        raise OutputError(f"cannot write into {target}: {blocked} is in the way (not an output of this command); move "
                          "it, or choose another output folder")
    kinds = {name.rstrip("/"): name.endswith("/") for name in earlier}  # name -> is a folder
    aside = staged / ".earlier"
    aside.mkdir()
    with signals_held():
        moved: list[str] = []
        placed: list[str] = []
        try:
            for name in sorted(kinds):
                if (target / name).exists() or (target / name).is_symlink():
                    os.replace(target / name, aside / name)
                    moved.append(name)
            for entry in entries:
                os.replace(entry, target / entry.name)
                placed.append(entry.name)
        except OSError:  # (one that cannot move, say an immutable file: everything goes back where it was)
            for name in reversed(placed):
                os.replace(target / name, staged / name)
            for name in reversed(moved):
                os.replace(aside / name, target / name)
            raise
    shutil.rmtree(staged, ignore_errors=True)


def in_the_way(target: Path, outputs: Iterable[str], earlier: Iterable[str]) -> str | None:
    """The first entry of the folder ``target`` that writing ``outputs`` there in place of the ``earlier`` ones
    would replace though it is no earlier output (names; a folder's ending in ``/``): a folder or link where an output
    goes, or an entry of the other kind where an earlier output is (None: nothing is in the way)."""
    kinds = {name.rstrip("/"): name.endswith("/") for name in earlier}  # name -> is a folder
    for output in outputs:
        name, there = output.rstrip("/"), target / output.rstrip("/")
        if name not in kinds and (there.exists() or there.is_symlink()) \
                and (output.endswith("/") or there.is_dir() or there.is_symlink()):
            return name
    for name, folder in kinds.items():
        there = target / name
        if (there.exists() or there.is_symlink()) and folder != (there.is_dir() and not there.is_symlink()):
            return name
    return None


@contextmanager
def signals_held() -> Iterator[None]:
    """Hold Ctrl-C, SIGTERM and SIGHUP back until the block ends, then deliver them to the handlers they had (main
    thread only: signal handlers are set there); ignored ones stay ignored."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[int] = []
    held = [sig for sig in HELD_SIGNALS if signal.getsignal(sig) not in (signal.SIG_IGN, None)]
    previous = {sig: signal.signal(sig, lambda signum, frame: caught.append(signum)) for sig in held}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    for sig in dict.fromkeys(caught):
        signal.raise_signal(sig)


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
