"""Where a sweep's cells run: a local process pool (default) or Ray tasks (a local instance, or ``RAY_ADDRESS``).

An executor takes cell tasks and yields their outcomes as they finish, in any order (the results table is
put in cell order afterwards). Each worker is one process that runs many cells, each single-threaded
(Polars gets one thread per worker, so N workers use N cores).
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import signal
import threading
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager
from multiprocessing import resource_tracker
from typing import Any, Protocol

from dlcluster.errors import ConfigError, DlclusterError
from dlcluster.sweep.cells import CellOutcome, CellTask, run_cell, stop_worker

EXECUTORS = ("local", "ray")
WORKER_ENV = {"POLARS_MAX_THREADS": "1"}
MAX_WORKERS = 1_024  # each local worker is a process holding its own trace: more is a slip of the keyboard
PARENT_CHECK_SECONDS = 0.5  # how often a worker looks whether its driver is still there


class Executor(Protocol):
    """Runs cell tasks; yields each outcome when it is ready."""

    def start(self, cells: int | None = None) -> None:
        """Get ready to run ``cells`` cells (may be a no-op); :meth:`stop` undoes it."""
        ...

    def stop(self) -> None:
        """Release what :meth:`start` or :meth:`run` took."""
        ...

    def run(self, tasks: Sequence[CellTask]) -> Iterator[CellOutcome]:
        """Outcomes of ``tasks``, as they finish."""
        ...


def _init_worker() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the driver's to handle: it stops the pool
    # the pool stops its workers with a SIGTERM: the cell running removes its staging folder, and the worker ends;
    # so does a SIGHUP (the terminal closed: the whole process group gets one)
    for sig in (signal.SIGTERM, getattr(signal, "SIGHUP", None)):
        if sig is not None:
            signal.signal(sig, stop_worker)
    # so does a driver that died without stopping them (kill -9, the OOM killer): its workers would wait for cells
    # for ever
    threading.Thread(target=_end_with_parent, args=(os.getppid(),), daemon=True).start()
    # what every cell runs, imported while the driver still reads the experiment and makes its traces
    import dlcluster.cli.simulate_cmd  # noqa: F401
    import dlcluster.sim.run  # noqa: F401


def _end_with_parent(parent: int) -> None:
    """In a worker: once the driver that started it is gone (the worker has a new parent), end as on a SIGTERM."""
    while os.getppid() == parent:
        time.sleep(PARENT_CHECK_SECONDS)
    # (the handler runs in the main thread, between two of its steps: from this thread, removing the running cell's
    # staging folder raced the cell still writing into it)
    os.kill(os.getpid(), signal.SIGTERM)


def _start_resource_tracker() -> None:
    """Start multiprocessing's resource tracker (the pool's queues need it) with SIGHUP ignored, which it inherits: a
    closed terminal sends the whole process group one, and the driver, which stops the sweep, then warned that the
    tracker "died unexpectedly". It ends by itself once the driver is gone."""
    hup = getattr(signal, "SIGHUP", None)
    if hup is None:  # (Windows: no SIGHUP)
        return
    before = signal.signal(hup, signal.SIG_IGN)
    try:
        resource_tracker.ensure_running()
    finally:
        signal.signal(hup, before)


class LocalExecutor:
    """A pool of ``workers`` fresh processes (spawned: importing Polars starts threads, so the driver is never safe
    to fork), started by :meth:`start` so that they start up while the driver prepares the sweep."""

    def __init__(self, workers: int) -> None:
        self.workers = workers
        self.pool: Any = None
        self._saved_env: dict[str, str | None] = {}

    def start(self, cells: int | None = None) -> None:
        """Start the workers, no more than ``cells`` (they import what cells need, then wait for cells)."""
        if self.pool is None:
            # in the environment the workers start with (a worker the pool replaces too, so until stop()):
            # unpickling the initializer imports dlcluster, and with it Polars, whose thread pool is sized once,
            # before any initializer could set the variable
            self._saved_env = {k: os.environ.get(k) for k in WORKER_ENV}
            os.environ.update(WORKER_ENV)
            try:
                _start_resource_tracker()
                count = worker_count(self.workers, cells)
                self.pool = ProcessPoolExecutor(count, mp_context=multiprocessing.get_context("spawn"),
                                                initializer=_init_worker)
                for _ in range(count):  # (the pool starts a worker per task it cannot hand to an idle one)
                    self.pool.submit(int)
            except BaseException:
                self._restore_env()
                raise

    def stop(self) -> None:
        """Stop the workers, idle or not (every outcome that was handed back is already stored)."""
        if self.pool is not None:
            # a SIGTERM to each (the cell running removes its staging folder); the pool itself waits for its tasks
            # (Python 3.14's terminate_workers does this)
            for process in list((getattr(self.pool, "_processes", None) or {}).values()):
                process.terminate()
            self.pool.shutdown(wait=True, cancel_futures=True)
            self.pool = None
            self._restore_env()

    def _restore_env(self) -> None:
        for k, v in self._saved_env.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v

    def run(self, tasks: Sequence[CellTask]) -> Iterator[CellOutcome]:
        """Outcomes of ``tasks`` from the pool, as they finish; the workers stop at the end, or when stopped early
        (Ctrl-C, an error while storing a cell, a worker that died), with the cells they were running."""
        try:
            if tasks:
                self.start(len(tasks))
                try:
                    futures = [self.pool.submit(run_cell, task) for task in tasks]
                    for done in as_completed(futures):
                        yield done.result()
                except BrokenProcessPool:  # (a worker died before the cells were handed out, too)
                    raise WorkerDied("a worker process died while it ran a cell (killed, or out of memory?); the "
                                     "finished cells are kept, and running the same command again runs only the "
                                     "others") from None
        finally:
            self.stop()


class WorkerDied(DlclusterError):
    """A local worker process ended in the middle of a cell (the pool cannot tell which cell, nor run it again)."""


class RayExecutor:
    """Ray tasks: on the cluster at ``RAY_ADDRESS`` if set, else on a local instance of ``workers`` CPUs bound to
    the loopback interface. Workers read the traces and files by path: on a multi-machine cluster the results
    folder's traces and the experiment's files must be on a shared file system."""

    def __init__(self, workers: int) -> None:
        self.workers = workers

    def start(self, cells: int | None = None) -> None:
        """Nothing: Ray starts (or attaches) when cells run."""

    def stop(self) -> None:
        """Nothing: :meth:`run` shuts down the instance it started."""

    def run(self, tasks: Sequence[CellTask]) -> Iterator[CellOutcome]:
        """Outcomes of ``tasks`` from Ray, as they finish; the local instance is shut down at the end."""
        try:
            import ray
        except ImportError:
            raise ConfigError("--executor ray needs Ray: pip install 'dlcluster[ray]'") from None
        if not tasks:
            return
        started = not ray.is_initialized()
        try:
            if started:
                self._init_ray(len(tasks))
            remote = ray.remote(num_cpus=1, max_retries=0)(run_cell)
            pending = [remote.remote(t) for t in tasks]
            try:
                while pending:
                    done, pending = ray.wait(pending, num_returns=1)
                    for ref in done:
                        yield ray.get(ref)
            finally:  # stopped early: the cells still queued or running are not wanted any more
                # (an instance this run started or attached to stops them as it shuts down or disconnects: cancelling
                # them too raced a cell's end, which Ray's task manager then aborted the process on)
                for ref in pending if not started else []:
                    ray.cancel(ref, force=True)
        finally:
            if started:
                ray.shutdown()

    def _init_ray(self, cells: int) -> None:
        """Start (or attach to) Ray for ``cells`` cells, keeping this process's own Ctrl-C and SIGTERM handling."""
        import ray

        from dlcluster.atomic import signals_held

        options: dict[str, Any] = {"runtime_env": {"env_vars": WORKER_ENV}, "configure_logging": False,
                                   "log_to_driver": False, "include_dashboard": False}
        address = os.environ.get("RAY_ADDRESS")
        # Ctrl-C is held back until ray.init returns: interrupted half-way, it leaves processes (the raylet's agents)
        # that ray.shutdown does not know of, and that outlive the command
        with signals_held(), _keeping_sigterm_handler(), _without_token_notice():
            if address:
                ray.init(address=address, **options)
            else:
                ray.init(num_cpus=worker_count(self.workers, cells), _node_ip_address="127.0.0.1", **options)


TOKEN_NOTICE = "Token authentication is enabled for this Ray cluster"


def _not_token_notice(record: logging.LogRecord) -> bool:
    return not record.getMessage().startswith(TOKEN_NOTICE)


@contextmanager
def _without_token_notice() -> Iterator[None]:
    """Leave out the notice ``ray.init`` logs on stderr at each start of a local instance, that it enabled token
    authentication (its default); its other messages, a warning that authentication is off among them, stay."""
    # (it reaches stderr through the root logger's last-resort handler: configure_logging=False installs none)
    log = logging.getLogger("ray._private.authentication.authentication_token_setup")
    log.addFilter(_not_token_notice)
    try:
        yield
    finally:
        log.removeFilter(_not_token_notice)


@contextmanager
def _keeping_sigterm_handler() -> Iterator[None]:
    """Keep this process's SIGTERM handler through the block and put it back after: ``ray.init`` replaces it first
    thing with one that exits with status 15 (a SIGTERM then ended the command half-way through starting Ray, its
    processes left running), and Ray's failure-signal handler prints a stack dump on SIGTERM before calling it."""
    import ray._private.utils as ray_utils

    previous = signal.getsignal(signal.SIGTERM)
    # (ray.init's own handler goes through this function; if a release renames it, only the first guard is lost)
    replace = getattr(ray_utils, "set_sigterm_handler", None)
    if replace is not None:
        ray_utils.set_sigterm_handler = lambda handler: None
    try:
        yield
    finally:
        if replace is not None:
            ray_utils.set_sigterm_handler = replace
        # (re-installing a Python handler also takes the signal back from Ray's C++ handler, which does not
        # otherwise let go of it; None: a handler not installed from Python, which cannot be put back)
        if previous is not None and threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGTERM, previous)


def worker_count(workers: int, cells: int | None) -> int:
    """How many of ``workers`` to start for ``cells`` cells (None: not known yet): a worker without a cell would
    only take memory."""
    return workers if cells is None else max(1, min(workers, cells))


def make_executor(name: str, workers: int | None) -> Executor:
    """The executor called ``name`` with up to ``workers`` workers (default: the machine's cores)."""
    if workers is not None and not 1 <= workers <= MAX_WORKERS:
        raise ConfigError(f"--workers {workers}: expected 1 to {MAX_WORKERS:,}")
    count = workers or os.cpu_count() or 1
    if name == "local":
        return LocalExecutor(count)
    if name == "ray":
        return RayExecutor(count)
    raise ConfigError(f"--executor {name!r}: choose one of {', '.join(EXECUTORS)}")
