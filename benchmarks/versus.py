"""One dlcluster command timed side by side with an earlier revision of the project, on this machine.

Run from the project root::

    .venv/bin/python -m benchmarks.versus REV [--runs N] -- COMMAND ARGS...
    .venv/bin/python -m benchmarks.versus 00009e4 -- simulate bench-out/saturn-183d.parquet -p fifo

``REV`` is checked out once into ``bench-out/versus-REV`` (a git worktree, byte-compiled as the working tree is);
then the command runs ``N`` times (default 2) with each tree's sources, alternately, so that both see the same
machine. Prints each run's CPU seconds (user + sys of the whole process) and the range per tree. Outputs go to a
temporary folder when the command has ``-o``/``--output``. ``REV``'s sources run as Python: against a working tree
whose simulator core is compiled (setup.py), the figures include what compiling it gained.
"""

from __future__ import annotations

import argparse
import compileall
import os
import subprocess
import sys
import tempfile

from benchmarks._measure import ROOT, WORK, command_measured


def _worktree(rev: str) -> str:
    """The sources of ``rev``, checked out once under bench-out/ and byte-compiled."""
    folder = WORK / f"versus-{rev}"
    if not folder.exists():
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "--force", str(folder), rev],
                       check=True, capture_output=True)
    compileall.compile_dir(folder / "src", quiet=1)
    return str(folder / "src")


def main(argv: list[str] | None = None) -> None:
    """Time ``dlcluster COMMAND`` with REV's sources and with the working tree's, alternately."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.versus")
    parser.add_argument("rev")
    parser.add_argument("--runs", type=int, default=2)
    argv = sys.argv[1:] if argv is None else argv
    # everything after "--" is the command (a REMAINDER argument would also swallow --runs)
    cut = argv.index("--") if "--" in argv else len(argv)
    args, command = parser.parse_args(argv[:cut]), argv[cut + 1:]
    if not command:
        parser.error("give the dlcluster command after --")
    WORK.mkdir(exist_ok=True)
    trees = {args.rev: _worktree(args.rev), "working tree": str(ROOT / "src")}
    cpu: dict[str, list[float]] = {name: [] for name in trees}
    for _ in range(args.runs):
        for name, src in trees.items():
            with tempfile.TemporaryDirectory(dir=WORK) as tmp:
                argv_run = [tmp if i and command[i - 1] in ("-o", "--output") else a for i, a in enumerate(command)]
                os.environ["PYTHONPATH"] = src
                m = command_measured([sys.executable, "-m", "dlcluster", *argv_run])
            cpu[name].append(m.cpu)
            print(f"{name:>14}: {m.cpu:6.2f} CPU s", flush=True)
    for name, values in cpu.items():
        print(f"{name:>14}: {min(values):.2f}–{max(values):.2f} CPU s over {len(values)} run(s)")


if __name__ == "__main__":
    main()
