"""The ``dlcluster`` command: a thin layer over the library.

Every command module registers itself on :data:`app`. User-facing errors print one line
and exit with status 2; ``--debug`` shows the traceback before it.
"""

from __future__ import annotations

import atexit
import contextlib
import importlib
import os
import re
import signal
import sys
import traceback
from typing import Any

# dlcluster does no large dense linear algebra; OpenBLAS's thread pool, started when NumPy is
# imported, costs ~0.06 s of CPU per command (a tenth of a short simulation). A user's own
# setting wins. Set before anything imports NumPy.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
# NumPy asks the kernel for transparent huge pages for every array of 4 MiB or more. The result tables
# allocate and free many short-lived arrays of that size (timeline columns), and faulting huge pages in cost
# system CPU time: a second of a 15-second run on the development machine (docs/simulator.md, "Performance").
os.environ.setdefault("NUMPY_MADVISE_HUGEPAGE", "0")

import click
import rich.console
from rich.text import Text

from dlcluster import SIGINT_IGNORED
from dlcluster.errors import ConfigError, DlclusterError, os_reason


def _quiet_stdout() -> None:
    """Send what is still to be printed to /dev/null: the reader of the output went away (``| head``)."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


def echo(text: str) -> None:
    """Print one line to stdout (a JSON document); a reader that went away is handled as by :class:`Console`."""
    try:
        print(text, flush=True)
    except BrokenPipeError:
        _quiet_stdout()


class Console(rich.console.Console):
    """rich's console, except when the reader of the output goes away (``dlcluster ... | head``): the command then
    finishes its work (its files) without printing more and exits 0, where rich would exit 1 on the spot; and without
    markup: printed text holds the user's names and paths (a VC ``[gpu]``, a folder ``sim[v2]``), so styles are
    given as styles, never as ``[tags]``."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("markup", False)
        super().__init__(*args, **kwargs)

    def on_broken_pipe(self) -> None:
        """Print nothing more; carry on."""
        self.quiet = True
        _quiet_stdout()


# command → the module that registers it; --help lists them in this order
COMMANDS = {"info": "trace_cmds", "convert": "trace_cmds", "synth": "synth_cmd", "simulate": "simulate_cmd",
            "policies": "simulate_cmd", "predict": "predict_cmd", "ces": "ces_cmd", "characterize": "characterize_cmd",
            "sweep": "sweep_cmd", "compare": "compare_cmd", "report": "report_cmd"}


class _Commands(click.Group):
    """The root command: its subcommands listed in :data:`COMMANDS` order, not alphabetically."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        """Registered commands, in the order of :data:`COMMANDS`."""
        return [name for name in COMMANDS if name in self.commands]


@click.group(cls=_Commands, name="dlcluster", no_args_is_help=True, context_settings={"max_content_width": 120})
@click.option("--debug", is_flag=True, help="Show full tracebacks on errors.")
def app(debug: bool) -> None:
    """Job traces of multi-tenant GPU clusters: read, characterise, predict, simulate, save energy."""
    # declared so the parser accepts and documents --debug; main() reads it from argv, as errors may
    # come before anything has been parsed
    del debug


err_console = Console(stderr=True, highlight=False)
INTERRUPTED = "interrupted; no file was left half-written, and no output folder mixes two runs"


class Terminated(KeyboardInterrupt):
    """A SIGTERM (``kill``, ``timeout``, a batch scheduler's cancel) or a SIGHUP (the terminal closed): stopped as a
    Ctrl-C is, exit status 128 + the signal's number (143, 129)."""

    # the signal, set by the handler: a library may turn the exception into a plain KeyboardInterrupt (Ray's ray.wait
    # does when the signal lands in it), and the exit status must still name it
    received = 0


def raise_terminated(signum: int, frame: object) -> None:
    """The SIGTERM and SIGHUP handler of a dlcluster process (see :func:`run`)."""
    Terminated.received = signum
    raise Terminated


def _register(args: list[str] | None = None) -> None:
    """Register the command that ``args`` name (every command when they name none, e.g. for ``--help``)."""
    # building every command's options costs ~0.05 s of CPU, a tenth of a short simulation
    args = args or []
    at = next((i for i, a in enumerate(args) if not a.startswith("-")), len(args))
    named = args[at] if at < len(args) else None
    root_help = "--help" in args[:at]  # `dlcluster --help simulate` shows the root's help: every command
    modules = [COMMANDS[named]] if named in COMMANDS and not root_help else dict.fromkeys(COMMANDS.values())
    for module in modules:
        importlib.import_module(f"dlcluster.cli.{module}")


def main(argv: list[str] | None = None) -> None:
    """Console-script entry point."""
    args = argv if argv is not None else sys.argv[1:]
    debug = "--debug" in args
    Terminated.received = 0  # (this command's signal only: a process may run several, as tests do)
    try:
        _register(args)  # (a Ctrl-C while the command's modules load stops it as any other)
        _check_paths(args)
        with app.make_context("dlcluster", list(args)) as ctx:
            app.invoke(ctx)
    except DlclusterError as exc:
        if debug:  # the traceback, and still the status of bad input (1 is for dlcluster's bugs)
            traceback.print_exc()
        _error("error:", _one_line(str(exc)))
        sys.exit(2)
    except OSError as exc:  # the machine's answer (no permission, disk full, a path through a file): not a bug
        if debug:
            traceback.print_exc()
        where = f"{exc.filename}: " if exc.filename else ""
        _error("error:", _one_line(where + os_reason(exc)))
        sys.exit(2)
    except KeyboardInterrupt as exc:
        err_console.print(INTERRUPTED, soft_wrap=True)
        terminated = Terminated.received or (signal.SIGTERM if isinstance(exc, Terminated) else 0)
        sys.exit(128 + terminated if terminated else 130)
    except click.exceptions.Exit as exc:  # --help, or a command's own exit status
        if exc.exit_code:
            sys.exit(exc.exit_code)
    except click.Abort:
        sys.exit(1)
    except click.ClickException as exc:  # a usage error: one line, like every other refusal
        if isinstance(exc, click.exceptions.NoArgsIsHelpError):
            exc.show()
        else:
            command = getattr(getattr(exc, "ctx", None), "command_path", "dlcluster")
            _error("error:", f"{_one_line(exc.format_message())} (see {command} --help)")
        sys.exit(exc.exit_code)
    except Exception as exc:
        if debug:
            raise
        _error("internal error:", f"{_one_line(f'{type(exc).__name__}: {exc}')} (run with --debug for details)")
        sys.exit(1)


PATH_OPTIONS = ("-o", "--output", "--save-model", "--cluster", "--fit", "--model", "--power-model", "--sim-jobs",
                "--estimates")


def _check_paths(args: list[str]) -> None:
    """Refuse an empty path option (``-o ""`` would mean the current folder)."""
    for i, arg in enumerate(args):
        name, eq, value = arg.partition("=")
        if name in PATH_OPTIONS and ((eq and not value.strip()) or
                                     (not eq and i + 1 < len(args) and not args[i + 1].strip())):
            raise ConfigError(f"{name}: the path is empty")


def _one_line(text: str) -> str:
    # a value quoted in a message may hold a line break, or a control character (a terminal's escape sequence read
    # from a file): shown escaped, not sent to the terminal
    return CONTROL.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), " ".join(text.splitlines()))


CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def _error(label: str, message: str) -> None:
    """``label`` in bold red, then ``message``, on one line of stderr."""
    err_console.print(Text.assemble((label, "bold red"), " ", message), soft_wrap=True)


def run() -> None:
    """Console-script entry point: :func:`main`, then exit without tearing the interpreter down."""
    # A SIGTERM ends the command as a Ctrl-C does (the default ends the process before its temporary files are
    # removed). Only here, in a process of its own: a sweep's worker runs main() for each cell, and its pool stops
    # it with a SIGTERM that must end it.
    signal.signal(signal.SIGTERM, raise_terminated)
    # so does a SIGHUP (the terminal closed, an SSH session dropped), unless started with it ignored (nohup)
    if hasattr(signal, "SIGHUP") and signal.getsignal(signal.SIGHUP) is not signal.SIG_IGN:
        signal.signal(signal.SIGHUP, raise_terminated)
    if SIGINT_IGNORED:  # started with Ctrl-C ignored: so it stays (see dlcluster.SIGINT_IGNORED)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    for name in ("stdout", "stderr"):  # closed (>&-): Python leaves None, and what was to be printed is not wanted
        if getattr(sys, name) is None:
            setattr(sys, name, open(os.devnull, "w"))  # noqa: SIM115 (open until the process exits)
        else:  # a terminal or pipe that takes ASCII only (PYTHONIOENCODING=ascii): "±" or "µ" printed as "?"
            with contextlib.suppress(AttributeError, ValueError):  # (a stream that cannot be reconfigured)
                getattr(sys, name).reconfigure(errors="replace")
    try:
        main()
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        if isinstance(exc.code, str):
            print(exc.code, file=sys.stderr)
    # Freeing every module and Polars' thread pool at exit costs ~0.1 s of CPU, a tenth of a
    # short simulation; the outputs are already written atomically and closed by now.
    atexit._run_exitfuncs()
    try:
        sys.stdout.flush()
    except BrokenPipeError:  # the reader went away before the last lines: they are not wanted
        pass
    sys.stderr.flush()
    os._exit(code)
