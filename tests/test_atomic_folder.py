"""A folder of outputs is written whole or not at all, and replaces an earlier run's outputs as a whole."""

from __future__ import annotations

import errno
import os
import shutil
import signal
from pathlib import Path
from typing import Any

import pytest

from dlcluster import atomic
from dlcluster.errors import OutputError


def _contents(folder: Path) -> dict[str, bytes | None]:
    return {str(p.relative_to(folder)): p.read_bytes() if p.is_file() else None for p in folder.rglob("*")}


def _earlier(folder: Path) -> None:
    """An earlier run's outputs (a.txt, summary.json, sub/) beside the user's own file."""
    (folder / "sub").mkdir(parents=True)
    for name, text in (("a.txt", "old a"), ("summary.json", "old"), ("sub/x.txt", "old x"), ("mine.txt", "mine")):
        (folder / name).write_text(text)


def test_a_new_folder_appears_whole_or_not_at_all(tmp_path: Path) -> None:
    with atomic.atomic_folder(tmp_path / "out") as staged:
        assert not (tmp_path / "out").exists()
        (staged / "a.txt").write_text("a")
    assert _contents(tmp_path) == {"out": None, "out/a.txt": b"a"}
    with pytest.raises(KeyboardInterrupt), atomic.atomic_folder(tmp_path / "new") as staged:
        (staged / "a.txt").write_text("a")
        raise KeyboardInterrupt
    assert _contents(tmp_path) == {"out": None, "out/a.txt": b"a"}


def test_an_existing_folder_gets_this_runs_outputs_in_place_of_the_earlier_ones(tmp_path: Path) -> None:
    _earlier(tmp_path)
    with atomic.atomic_folder(tmp_path, ("a.txt", "summary.json", "sub/", "gone.txt")) as staged:
        assert staged.parent == tmp_path and staged.name.startswith(".")  # (same file system: renames)
        (staged / "summary.json").write_text("new")
        (staged / "b.txt").write_text("new b")
    # a.txt and sub/ were the earlier run's and this one did not write them: they go; the user's file stays
    assert _contents(tmp_path) == {"summary.json": b"new", "b.txt": b"new b", "mine.txt": b"mine"}


@pytest.mark.parametrize("stop", [KeyboardInterrupt(), OSError(errno.ENOSPC, "No space left on device")])
def test_a_run_that_stops_while_writing_leaves_the_earlier_outputs_whole(tmp_path: Path, stop: BaseException) -> None:
    _earlier(tmp_path)
    before = _contents(tmp_path)
    # a full disk is the user's to fix: one line, named after the folder they gave (not the temporary one)
    expected = OutputError if isinstance(stop, OSError) else KeyboardInterrupt
    with pytest.raises(expected) as raised, atomic.atomic_folder(tmp_path, ("a.txt", "summary.json", "sub/")) as staged:
        (staged / "summary.json").write_text("new")
        raise stop
    assert _contents(tmp_path) == before
    if expected is OutputError:
        assert str(raised.value) == f"cannot write into {tmp_path}: no space left on device"


def test_the_summary_moves_in_last_and_a_signal_waits_for_the_whole_folder(tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    moved: list[str] = []
    real = os.replace

    def replace(src: Path, dst: Path) -> None:
        if not moved:  # Ctrl-C as the first file moves in
            os.kill(os.getpid(), signal.SIGINT)
        moved.append(Path(dst).name)
        real(src, dst)

    monkeypatch.setattr(atomic.os, "replace", replace)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)  # (a test worker may ignore Ctrl-C)
    try:
        with pytest.raises(KeyboardInterrupt), atomic.atomic_folder(tmp_path, ("summary.json",)) as staged:
            for name in ("summary.json", "z.parquet", "a.parquet"):
                (staged / name).write_text(name)
    finally:
        signal.signal(signal.SIGINT, previous)
    assert moved == ["a.parquet", "z.parquet", "summary.json"]
    assert _contents(tmp_path) == {name: name.encode() for name in moved}


def test_a_folder_in_the_way_is_refused_before_anything_is_removed(tmp_path: Path) -> None:
    _earlier(tmp_path)
    (tmp_path / "fifo").mkdir()
    (tmp_path / "fifo" / "notes.txt").write_text("the user's")
    before = _contents(tmp_path)
    with pytest.raises(OutputError, match="fifo is in the way"), \
            atomic.atomic_folder(tmp_path, ("a.txt", "summary.json", "sub/")) as staged:
        (staged / "fifo").mkdir()
        (staged / "fifo" / "jobs.parquet").write_text("new")
    assert _contents(tmp_path) == before


def test_an_earlier_output_that_cannot_be_moved_aside_puts_everything_back(tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    # (the earlier outputs were removed one by one: one that could not be, an immutable file, left the earlier run
    # half-deleted and the new one thrown away)
    _earlier(tmp_path)
    before = _contents(tmp_path)
    real = os.replace

    def stuck(src: Path, dst: Path) -> None:
        if Path(src).name == "summary.json" and Path(src).parent == tmp_path:
            raise PermissionError(errno.EPERM, os.strerror(errno.EPERM), str(src))
        real(src, dst)

    monkeypatch.setattr(atomic.os, "replace", stuck)
    with pytest.raises(OutputError, match="operation not permitted"), \
            atomic.atomic_folder(tmp_path, ("a.txt", "summary.json", "sub/")) as staged:
        (staged / "a.txt").write_text("new a")
        (staged / "summary.json").write_text("new")
    assert _contents(tmp_path) == before


@pytest.mark.parametrize("name", ["a.txt", "sub"])
def test_an_output_of_the_other_kind_is_in_the_way(tmp_path: Path, name: str) -> None:
    # (a user's folder named like an output file, jobs.csv/ say, was deleted with the earlier run's files)
    _earlier(tmp_path)
    there = tmp_path / name
    if there.is_dir():  # a file where the command writes a folder
        shutil.rmtree(there)
        there.write_text("the user's file")
    else:  # a folder where it writes a file
        there.unlink()
        there.mkdir()
        (there / "mine.txt").write_text("the user's")
    before = _contents(tmp_path)
    with pytest.raises(OutputError, match=f"{name} is in the way"), \
            atomic.atomic_folder(tmp_path, ("a.txt", "summary.json", "sub/")) as staged:
        (staged / "summary.json").write_text("new")
    assert _contents(tmp_path) == before


def test_the_earlier_outputs_are_those_there_once_the_files_are_written(tmp_path: Path) -> None:
    # (another run into the same folder meanwhile: what it wrote was kept beside this run's files)
    _earlier(tmp_path)
    with atomic.atomic_folder(tmp_path, lambda: sorted(p.name for p in tmp_path.glob("*.txt") if p.name != "mine.txt")
                              ) as staged:
        (tmp_path / "meanwhile.txt").write_text("another run's")
        (staged / "summary.json").write_text("new")
    assert sorted(_contents(tmp_path)) == ["mine.txt", "sub", "sub/x.txt", "summary.json"]


@pytest.fixture(scope="module")
def small_trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from dlcluster.cli import main

    path = tmp_path_factory.mktemp("trace") / "t.parquet"
    main(["synth", "--preset", "philly", "--days", "5", "--seed", "1", "-o", str(path)])
    return path


@pytest.mark.parametrize(("command", "first", "second"), [
    (["ces", "--test-days", "1"], ["--rule", "helios"], ["--rule", "quantile"]),
    (["predict", "eval"], ["--estimator", "history"], ["--estimator", "lgbm"]),
    (["synth", "--preset", "helios-venus", "--days", "1", "--load", "0.1", "--format", "helios"], ["--seed", "1"],
     ["--seed", "2"]),
    (["characterize"], [], ["--pooled"]),
])
def test_a_rewrite_that_fills_the_disk_leaves_the_earlier_result_as_it_was(
        tmp_path: Path, small_trace: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture,
        command: list[str], first: list[str], second: list[str]) -> None:
    # (a full disk half-way through rewrote some files: ces' new steps.parquet beside the old summary.json, a
    # Saturn cluster_log.csv beside a Venus cluster_gpu_number.csv)
    import polars as pl

    from dlcluster.cli import main

    args = [*command, *([] if command[0] == "synth" else [str(small_trace)]), "-o", str(tmp_path / "out")]
    main([*args, *first])
    before = _contents(tmp_path / "out")
    assert len(before) >= 2
    full = OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    real_csv, calls = pl.DataFrame.write_csv, []

    def no_space(*args: object, **kwargs: object) -> None:
        raise full

    def csv_then_no_space(*args: Any, **kwargs: Any) -> Any:  # (a Helios folder: its log, then no room for the rest)
        calls.append(args)
        if len(calls) > 1:
            raise full
        return real_csv(*args, **kwargs)

    # a write after the first file is written
    monkeypatch.setattr(pl.DataFrame, "write_csv", csv_then_no_space if command[0] == "synth" else no_space)
    if command[0] in ("ces", "characterize"):
        monkeypatch.setattr("matplotlib.figure.Figure.savefig", no_space)
    with pytest.raises(SystemExit) as exit_:
        main([*args, *second])
    assert exit_.value.code == 2 and capsys.readouterr().err.endswith(": no space left on device\n")
    assert _contents(tmp_path / "out") == before


def _gone_pid() -> int:
    """The process id of a process that has ended."""
    import subprocess

    child = subprocess.Popen(["true"])
    child.wait()
    return child.pid


def test_temporaries_left_by_killed_processes_of_this_machine_are_removed_by_the_next_write(tmp_path: Path) -> None:
    # (a kill -9 or the OOM killer left the staging folder, perhaps gigabytes, for ever)
    import subprocess

    host, gone = atomic._HOST, _gone_pid()
    running = subprocess.Popen(["sleep", "60"])
    try:
        out = tmp_path / "out"
        out.mkdir()
        left = {f".out.{host}-{gone}.abc12345.tmp": "folder", f".r.csv.{host}-{gone}.xyz98765.tmp": "file",
                f".out.{host}-{running.pid}.abc12345.tmp": "folder",  # a run still under way
                f".out.otherhost-{gone}.abc12345.tmp": "folder",  # another machine's (a shared file system)
                ".out.notes.tmp": "file"}  # not a temporary of ours
        for name, kind in left.items():
            for place in (tmp_path, out):
                if kind == "folder":
                    (place / name).mkdir()
                    (place / name / "half.parquet").write_text("half")
                else:
                    (place / name).write_text("half")
        with atomic.atomic_folder(out) as staged:  # an existing folder: its temporaries are inside it
            (staged / "a.txt").write_text("a")
        atomic.write_text_atomic(tmp_path / "r.csv", "x\n")
        with atomic.atomic_folder(tmp_path / "new") as staged:  # (a new folder's are beside it: none of its name)
            (staged / "b.txt").write_text("b")
        kept = set(left) - {f".out.{host}-{gone}.abc12345.tmp"}
        assert {p.name for p in out.iterdir()} == kept | {"a.txt"}  # (r.csv's temporary there: not r.csv's folder)
        assert {p.name for p in tmp_path.iterdir()} == set(left) - {f".r.csv.{host}-{gone}.xyz98765.tmp"} | {
            "out", "r.csv", "new"}
    finally:
        running.kill()
        running.wait()
