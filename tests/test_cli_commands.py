"""The command line registers only the command it runs (the rest cost start-up time), and knows them all."""

from __future__ import annotations

import json
import os
import subprocess
import sys

PROBE = """
import json, sys
from dlcluster import cli
cli._register(sys.argv[1:])
print(json.dumps(sorted(cli.app.commands)))
"""


def _registered(*args: str) -> list[str]:
    out = subprocess.run([sys.executable, "-c", PROBE, *args], capture_output=True, text=True, check=True).stdout
    return json.loads(out)


def test_every_command_is_known_and_registered_for_help() -> None:
    from dlcluster.cli import COMMANDS

    assert _registered("--help") == sorted(COMMANDS)


def test_a_named_command_registers_its_own_module_only() -> None:
    assert _registered("--debug", "simulate", "trace.csv") == ["policies", "simulate"]
    assert _registered("predict", "eval") == ["predict"]
    assert _registered("nonsense") == _registered()  # an unknown name gets every command, for click's suggestion
    assert _registered("--help", "simulate") == _registered()  # the root's help lists every command


def test_openblas_starts_one_thread_unless_the_user_says_otherwise() -> None:
    probe = "import os, dlcluster.cli; print(os.environ['OPENBLAS_NUM_THREADS'])"
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    default = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, env=env)
    chosen = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True,
                            env={**env, "OPENBLAS_NUM_THREADS": "2"})
    assert (default.stdout.strip(), chosen.stdout.strip()) == ("1", "2")


def _closed_reader(*args: str) -> tuple[int, bytes]:
    """Run ``dlcluster ARGS`` with its stdout a pipe whose reader has gone away (as ``| head`` after one line)."""
    child = subprocess.Popen([sys.executable, "-m", "dlcluster", *args], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE)
    assert child.stdout is not None and child.stderr is not None
    child.stdout.close()  # before the child prints: its first write breaks the pipe
    err = child.stderr.read()
    return child.wait(), err


def test_a_reader_that_went_away_ends_the_command_quietly_and_its_files_are_written(tmp_path) -> None:  # noqa: ANN001
    from test_sim_helpers import jobs, spec, write_trace

    trace = write_trace(tmp_path / "t.parquet", jobs(("a", "v", 1, 0, 60), ("b", "v", 2, 5, 30)), spec(v=(8,)))
    for args in (("info", str(trace)), ("info", str(trace), "--json"),  # a rich table, a JSON line
                 ("simulate", str(trace), "-p", "fifo,sjf", "-o", str(tmp_path / "out"))):
        code, err = _closed_reader(*args)
        assert code == 0 and b"error" not in err, (args, err)
    assert all((tmp_path / "out" / p / "jobs.parquet").is_file() for p in ("fifo", "sjf"))


def test_a_closed_stdout_ends_the_command_quietly_and_its_files_are_written(tmp_path) -> None:  # noqa: ANN001
    # (>&-: Python leaves sys.stdout None, and the last flush ended every command in a traceback)
    out = tmp_path / "t.parquet"
    for args in (("policies",), ("synth", "--preset", "philly", "--days", "1", "-o", str(out))):
        child = subprocess.run([sys.executable, "-m", "dlcluster", *args], stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, preexec_fn=lambda: os.close(1), check=False)
        assert child.returncode == 0 and b"Traceback" not in child.stderr, (args, child.stderr)
    assert out.is_file()
