"""Every concrete ``dlcluster`` command that README.md and docs/*.md show runs and exits 0.

The examples are the lines starting with ``dlcluster `` in any fenced block of README.md and docs/*.md
(backslash continuations joined, ``# ...`` comments dropped). Synopsis lines, with placeholders such as ``TRACE``, ``[--option]`` or ``a|b``, are not
commands and are left out; so are README lines of other programs (``make demo``).

Each example runs as ``python -m dlcluster ...`` in one scratch folder per session, ``work/``, with a
link ``shared -> ../shared`` beside it, so the examples' ``../shared/...`` paths resolve and every
relative output lands in the scratch folder (an absolute or ``..`` output is moved there too).
Examples that read ``../shared`` are skipped when it is absent. An example that reads a file another
example writes (``saturn.parquet``, ``mine.json``) runs that example first; the files the docs assume
the reader brings (``my-sacct.txt``) are made here (:data:`READER_FILES`).
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
SHARED_PREFIX = "../shared/"

PLACEHOLDERS = ("TRACE", "OUT", "SPEC", "[", "|", "...", "…")  # a synopsis, not a runnable command
OUTPUT_OPTIONS = ("-o", "--output", "--save-model")  # options naming a file or folder the command writes
MIN_EXAMPLES = 31  # README.md 14, docs/*.md 17 when last counted
TIMEOUT = 600  # seconds for one example


@dataclass(frozen=True)
class Example:
    """One command of the docs: where it is written and its arguments after ``dlcluster``."""

    file: str  # relative to the repository, e.g. "docs/synth.md"
    line: int  # 1-based line on which the command starts
    args: tuple[str, ...]

    @property
    def id(self) -> str:
        return f"{self.file}:{self.line}"

    @property
    def outputs(self) -> list[str]:
        return [value for option, value in zip(self.args, self.args[1:]) if option in OUTPUT_OPTIONS] + [
            a.split("=", 1)[1] for a in self.args if a.split("=", 1)[0] in OUTPUT_OPTIONS and "=" in a]

    @property
    def needs_shared(self) -> bool:
        # (an experiment file of examples/ may read ../shared itself)
        return any(SHARED_PREFIX in a or (a.endswith(".toml") and (ROOT / a).is_file()
                                          and "shared/data" in (ROOT / a).read_text(encoding="utf-8"))
                   for a in self.args)


def _fenced_blocks(text: str) -> Iterator[tuple[str, list[tuple[int, str]]]]:
    """Each fenced block of a Markdown text: its info string (``sh``, ``python``, ``""``) and numbered lines."""
    info: str | None = None
    lines: list[tuple[int, str]] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if line.lstrip().startswith("```"):
            if info is None:
                info, lines = line.lstrip()[3:].strip(), []
            else:
                yield info, lines
                info = None
        elif info is not None:
            lines.append((number, line))


def _commands(lines: list[tuple[int, str]]) -> Iterator[tuple[int, str]]:
    """Shell commands of a block, continuation lines (ending in ``\\``) joined, with their first line number."""
    start = 0
    parts: list[str] = []
    for number, line in lines:
        if not parts:
            start = number
        if line.rstrip().endswith("\\"):
            parts.append(line.rstrip()[:-1])
            continue
        parts.append(line)
        yield start, " ".join(p.strip() for p in parts)
        parts = []
    if parts:
        yield start, " ".join(p.strip() for p in parts)


def _example(file: str, line: int, command: str) -> Example | None:
    """The example a ``dlcluster`` command line makes, or None for a synopsis or another program."""
    if not command.startswith("dlcluster "):
        return None
    words = shlex.split(command, comments=True)
    if any(p in " ".join(words) for p in PLACEHOLDERS):
        return None
    return Example(file, line, tuple(words[1:]))


def find_examples(root: Path = ROOT) -> list[Example]:
    """Every concrete command example of README.md and docs/*.md: the ``dlcluster`` lines of any fenced block."""
    found: list[Example] = []
    for path in [root / "README.md", *sorted((root / "docs").glob("*.md"))]:
        if not path.exists():
            continue
        rel = path.relative_to(root).as_posix()
        for _, lines in _fenced_blocks(path.read_text(encoding="utf-8")):
            for number, command in _commands(lines):
                example = _example(rel, number, command)
                if example is not None:
                    found.append(example)
    return found


def _sacct_export(path: Path) -> None:
    """A Slurm ``sacct --parsable2`` export of 240 jobs over five days: 5 users, 1-8 GPUs, three states."""
    header = "JobID|JobName|User|Account|Partition|Submit|Start|End|Elapsed|State|NNodes|NCPUS|AllocTRES|ReqTRES"
    rows = [header]
    t0 = datetime(2024, 3, 1)
    for i in range(240):
        submit = t0 + timedelta(seconds=i * 1800 + (i * 7919) % 600)
        start = submit + timedelta(seconds=(i * 104729) % 900)
        seconds = (60, 600, 3600, 7200, 86400)[i % 5]
        end = start + timedelta(seconds=seconds)
        gpus = (1, 1, 2, 4, 8)[(i // 3) % 5]
        state = ("COMPLETED", "COMPLETED", "FAILED", "CANCELLED by 1000")[i % 4]
        tres = f"cpu={4 * gpus},gres/gpu={gpus},node=1"
        elapsed = f"{seconds // 3600:02d}:{seconds % 3600 // 60:02d}:00"
        rows.append(f"{1000 + i}|train{i % 7}|user{i % 5}|acct|gpu|{submit:%Y-%m-%dT%H:%M:%S}|"
                    f"{start:%Y-%m-%dT%H:%M:%S}|{end:%Y-%m-%dT%H:%M:%S}|{elapsed}|{state}|1|{4 * gpus}|{tres}|{tres}")
    path.write_text("\n".join(rows) + "\n")


# files that the examples read but no example writes: the reader's own data
READER_FILES: dict[str, Callable[[Path], None]] = {"my-sacct.txt": _sacct_export}

EXAMPLES = find_examples()


class Workspace:
    """The scratch folder the examples run in, and what each distinct command gave."""

    def __init__(self, base: Path) -> None:
        self.cwd = base / "work"
        self.cwd.mkdir()
        if SHARED.exists():
            (base / "shared").symlink_to(SHARED, target_is_directory=True)
        for name, make in READER_FILES.items():
            make(self.cwd / name)
        # the repository's examples/ (experiment files), as if the examples ran from the project root
        (self.cwd / "examples").symlink_to(ROOT / "examples", target_is_directory=True)
        self.results: dict[tuple[str, ...], subprocess.CompletedProcess[str]] = {}

    def _contained(self, args: tuple[str, ...]) -> list[str]:
        """``args`` with any output outside the scratch folder (absolute, or through ``..``) moved into it."""
        out = list(args)
        for i in range(1, len(out)):
            if out[i - 1] in OUTPUT_OPTIONS and (os.path.isabs(out[i]) or ".." in Path(out[i]).parts):
                out[i] = Path(out[i]).name
        return out

    def run(self, example: Example) -> subprocess.CompletedProcess[str]:
        """Run ``example`` (once per distinct command), after the examples that write its inputs."""
        if example.args in self.results:
            return self.results[example.args]
        for needed in producers(example):
            done = self.run(needed)
            if done.returncode != 0:
                pytest.fail(f"{example.id} reads what {needed.id} writes, and that example failed")
        result = subprocess.run([sys.executable, "-m", "dlcluster", *self._contained(example.args)], cwd=self.cwd,
                                check=False, capture_output=True, text=True, timeout=TIMEOUT)
        self.results[example.args] = result
        return result


def producers(example: Example) -> list[Example]:
    """The other examples that write a file or folder ``example`` names as an input."""
    inputs = {os.path.normpath(a) for a in example.args if not a.startswith("-")} - {
        os.path.normpath(o) for o in example.outputs}
    return [other for other in EXAMPLES if other is not example
            and any(os.path.normpath(o) in inputs for o in other.outputs)]


@pytest.fixture(scope="session")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Workspace:
    return Workspace(tmp_path_factory.mktemp("docs-examples"))


def test_examples_were_found() -> None:
    files = {e.file for e in EXAMPLES}
    assert len(EXAMPLES) >= MIN_EXAMPLES, [e.id for e in EXAMPLES]
    assert "README.md" in files and any(f.startswith("docs/") for f in files), files


def test_extraction_rules() -> None:
    text = "\n".join([
        "```sh",
        "make demo   # not dlcluster",
        "dlcluster info TRACE [--json]   # a synopsis",
        "dlcluster synth --preset philly \\",
        '  --start "2017-10-01 00:00:00" -o t.parquet   # a comment',
        "```",
    ])
    blocks = list(_fenced_blocks(text))
    assert [info for info, _ in blocks] == ["sh"]
    examples = [e for n, c in _commands(blocks[0][1]) if (e := _example("x.md", n, c))]
    assert examples == [Example("x.md", 4, ("synth", "--preset", "philly", "--start", "2017-10-01 00:00:00",
                                            "-o", "t.parquet"))]
    assert examples[0].outputs == ["t.parquet"]


@pytest.mark.parametrize("example", EXAMPLES, ids=[e.id for e in EXAMPLES])
def test_example_runs(example: Example, workspace: Workspace) -> None:
    if any(e.needs_shared for e in [example, *producers(example)]) and not SHARED.exists():
        pytest.skip(f"{example.id} reads ../shared, which is not available")
    result = workspace.run(example)
    assert result.returncode == 0, (
        f"{example.id}: dlcluster {shlex.join(example.args)}\nexit {result.returncode}\n{result.stderr[-3000:]}")


def test_make_test_runs_the_suite_on_every_core() -> None:
    """README: ``make test`` runs the suite on every core (pytest-xdist, from the test extras)."""
    make = (ROOT / "Makefile").read_text(encoding="utf-8")
    target = make.split("\ntest:", 1)[1].split("\n\n", 1)[0]
    assert "$(BIN)/python -m pytest -n auto --dist loadfile" in target
    assert '"pytest-xdist>=' in (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert "runs the test suite on every core (pytest-xdist)" in (ROOT / "README.md").read_text(encoding="utf-8")


def test_make_test_type_checks_what_readme_says() -> None:
    """README: ``make test`` type-checks the command line, simulator, estimators, services and sweeps with mypy."""
    make = (ROOT / "Makefile").read_text(encoding="utf-8")
    target = make.split("\ntest:", 1)[1].split("\n\n", 1)[0]
    checked = "$(BIN)/mypy src/dlcluster/cli src/dlcluster/predict src/dlcluster/sim src/dlcluster/services " \
              "src/dlcluster/sweep ||"
    assert checked in target
    readme = " ".join((ROOT / "README.md").read_text(encoding="utf-8").replace("#", " ").split())
    assert ("type-checks the command line, the simulator, the estimators, the services and the sweeps with mypy"
            in readme)


def test_every_document_the_sources_name_exists() -> None:
    # (`simulate --help` sent users to docs/power.md, which never existed)
    named = {m for path in (ROOT / "src").rglob("*.py")
             for m in re.findall(r"docs/[\w-]+\.md", path.read_text(encoding="utf-8"))}
    assert named and {m for m in named if not (ROOT / m).exists()} == set()
