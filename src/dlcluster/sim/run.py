"""``simulate``: canonical job table + cluster spec → result tables. No files, no CLI."""

from __future__ import annotations

import datetime
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import polars as pl

from dlcluster.cluster import ClusterSpec
from dlcluster.errors import ConfigError, DlclusterError, InputError
from dlcluster.sim.cluster import VCState
from dlcluster.sim.compat import COMPAT_MODES, ArtifactProfile
from dlcluster.sim.cpu_fit import exclude_cpu_misfits
from dlcluster.sim.cycle import Cycle, SpeedModel
from dlcluster.sim.engine import Engine
from dlcluster.sim.failures import (
    FailureModel,
    after_validation,
    attempt_plan,
    failure_summary,
    retry_counts,
    validation_pool,
)
from dlcluster.sim.framework import Policy
from dlcluster.sim.jobs import Jobs, Record
from dlcluster.sim.observers import Observer
from dlcluster.sim.placement import get_placement
from dlcluster.sim.policies import get_policy
from dlcluster.sim.power import PowerModel
from dlcluster.sim.prepare import Prepared, check_seed, prepare
from dlcluster.sim.power import NODE_STATES_SCHEMA
from dlcluster.sim.results import RUN_TIME, build_results
from dlcluster.sim.simulation import Progress, Simulation


class SimulationError(DlclusterError):
    """A run that cannot complete (e.g. an observer left the nodes a job needs unusable for good)."""


@dataclass
class SimResult:
    """The result tables of one run and its summary (see docs/simulator.md for every column)."""

    jobs: pl.DataFrame
    timeline: pl.DataFrame
    placements: pl.DataFrame
    summary: dict[str, Any]
    node_states: pl.DataFrame = field(default_factory=lambda: pl.DataFrame(schema=NODE_STATES_SCHEMA))


def _wall_text(origin: int | None) -> str | None:
    """Compat time 0 as wall-clock text (the artifact's clock has no zone)."""
    if origin is None:
        return None
    return datetime.datetime.fromtimestamp(origin, tz=datetime.UTC).strftime("%Y-%m-%d %H:%M:%S")


def _estimates(group: pl.DataFrame, estimates: pl.DataFrame | None, policy: str, source: str | None) -> list[float]:
    if estimates is None:
        raise ConfigError(f"policy {policy!r} needs duration estimates (--estimates FILE, or --estimates history|lgbm|oracle)")
    joined = group.select("job_id").join(estimates, on="job_id", how="left", maintain_order="left")
    missing = joined.filter(pl.col("estimate").is_null())
    if missing.height:
        raise InputError(f"no duration estimate for job {missing['job_id'][0]!r} "
                         f"({missing.height} simulated job(s) lack one)", path=source, field="job_id")
    return joined["estimate"].cast(pl.Float64).to_list()


def simulate(
    jobs: pl.DataFrame,
    cluster: ClusterSpec,
    policy: str | type[Policy] = "fifo",
    *,
    placement: str = "consolidate",
    compat: str | None = None,
    estimates: pl.DataFrame | None = None,
    pooled: bool = False,
    unknown_vc: str = "error",
    window: tuple[int, int] | None = None,
    timezone: str = "UTC",
    load: float = 1.0,
    seed: int = 0,
    source: str = "<jobs>",
    progress: Progress | None = None,
    observers: Sequence[Observer] = (),
    speed: SpeedModel | None = None,
    power: PowerModel | None = None,
    failures: FailureModel | None = None,
    attempts: pl.DataFrame | None = None,
    estimates_source: str | None = None,
) -> SimResult:
    """Simulate ``policy`` on ``jobs`` (canonical table) over ``cluster``, each VC on its own unless ``pooled``.

    ``compat="helios-artifact"`` reproduces the SC'21 artifact (wall-clock times in
    ``timezone``, its window, origin, tie order and quirks; ``window`` is then wall-clock
    seconds). ``estimates`` is a table ``job_id, estimate`` (predicted duration, seconds).
    ``unknown_vc="unschedulable"`` counts jobs of VCs missing from ``cluster`` instead of failing.
    ``seed`` drives every random choice (the ``random`` placement): same seed, same output.
    CPUs are modelled when ``cluster`` has CPU counts and ``jobs`` a ``cpu_num`` column.
    ``observers`` listen to the run and act through :class:`~dlcluster.sim.observers.Control`
    (an estimator may supply the estimates of ``needs_estimates`` policies at submission);
    ``speed`` makes a job's progress rate depend on its placement (default: full speed always).
    ``power`` adds an ``energy`` object to the summary (a power manager among ``observers`` switches nodes off).
    ``failures`` replays each job's outcome (the table's ``status``) with retries and early validation, using the
    Philly ``attempts`` table where given (see :mod:`dlcluster.sim.failures`). ``estimates_source``: the file the
    estimates were read from, named when they lack a simulated job.
    """
    if compat is not None and compat not in COMPAT_MODES:
        raise ConfigError(f"unknown compatibility mode {compat!r}; choose one of: {', '.join(COMPAT_MODES)}")
    check_seed(seed)
    profile = COMPAT_MODES[compat] if compat is not None else None
    is_compat = profile is not None
    if is_compat and speed is not None:
        raise ConfigError(f"compatibility mode {compat!r} runs every job at full speed: it takes no speed model")
    policy_cls = get_policy(policy) if isinstance(policy, str) else policy
    slowest = getattr(speed, "slowest", None)  # (a speed model of a plug-in may not say)
    if callable(slowest):
        policy_cls.check_speed(slowest())
    if profile is not None:
        profile.check(policy_cls.name)
        if failures is not None:
            raise ConfigError(f"{compat} compatibility mode replays no failures: drop --failures, --retries and "
                              "the validation options")
    placer = get_placement(placement, compat=is_compat, seed=seed)  # checks the name before any work
    prep = prepare(jobs, cluster, compat=is_compat, pooled=pooled, unknown_vc=unknown_vc, window=window,
                   timezone=timezone, load=load, source=source, keep_status=failures is not None)
    prep = exclude_cpu_misfits(prep, placer)
    caught, recorded = None, dict[str, list[int]]()
    if failures is not None:
        prep, caught, recorded = _with_failures(prep, attempts, failures, source)
    spec = prep.spec
    names = list(spec.vcs)
    index = {name: i for i, name in enumerate(names)}
    # jobs are numbered VC by VC (each VC's in arrival order): a VC's data stays together in memory, which the
    # event loop's cache needs; arrivals are fed in time order (same second: VC order, then arrival order)
    df = prep.jobs.sort(pl.col("group").replace_strict(index, return_dtype=pl.Int64), maintain_order=True)
    prep = replace(prep, jobs=df)
    arrivals = np.argsort(df["submit"].to_numpy(), kind="stable")
    rec, events, wall = _run(df, arrivals, names, spec, policy_cls, placement, profile, estimates, seed, observers,
                             speed, progress, recorded, estimates_source, prep.origin)
    meta: dict[str, Any] = {"policy": policy_cls.name, "placement": placer.name, "compat": compat,
                            "pooled": pooled, "load": load, "seed": seed, "time_origin": _wall_text(prep.origin)}
    if speed is not None:
        describe = getattr(speed, "describe", None)
        meta["speed_model"] = describe() if callable(describe) else {"name": type(speed).__name__}
    table, timeline, placements, summary, node_states = build_results(prep, rec, events, meta, wall, power, caught,
                                                                      speed is not None)
    if failures is not None:
        done = table.filter(pl.col("status") == "completed")
        summary["failures"] = {**failure_summary(df, caught, failures), "completed_jobs": done.height,
                               "completed_mean_jct": done["jct"].mean(),
                               "completed_mean_queue_delay": done["queue_delay"].mean(),
                               "completed_p99_queue_delay": done["queue_delay"].quantile(0.99, "linear")}
    return SimResult(table, timeline, placements, summary, node_states)


def _with_failures(prep: Prepared, attempts: pl.DataFrame | None, model: FailureModel, source: str,
                   ) -> tuple[Prepared, pl.DataFrame | None, dict[str, list[int]]]:
    """Each job's attempts and outcome (the plan's columns, and the recorded attempts by job id); with validation,
    the pool run first: the jobs it lets through are submitted when their validation ends, and those it caught are
    returned apart."""
    df, recorded = attempt_plan(prep.jobs, attempts, model)
    df = df.with_columns(pl.col("work_total").alias(RUN_TIME))  # (validation may move part of it to the pool)
    caught = None
    if model.validates:
        pool = validation_pool(df, model)
        ran = simulate(pool.drop("caught"), ClusterSpec({"validation": (1,) * model.validation_gpus}), "fifo",
                       source=source).jobs
        df, caught = after_validation(df, pool, ran, model)
    return replace(prep, jobs=df), caught, recorded


def _run(df: pl.DataFrame, arrivals: np.ndarray, names: list[str], spec: ClusterSpec, policy_cls: type[Policy],
         placement: str, profile: ArtifactProfile | None, estimates: pl.DataFrame | None, seed: int,
         observers: Sequence[Observer], speed: SpeedModel | None, progress: Progress | None,
         recorded: dict[str, list[int]], estimates_source: str | None, origin: int | None,
         ) -> tuple[Record, list[int], float]:
    """The event loop over the prepared jobs (numbered VC by VC); returns the record, passes per VC, wall seconds.

    Its own function so that the loop's per-job state is freed before the result tables are built.
    """
    cpus, is_compat = spec.cpus, profile is not None
    index = {name: i for i, name in enumerate(names)}
    extra = profile.extra_seconds(policy_cls.name) if profile is not None else 0
    wants_estimates = policy_cls.needs_estimates or (policy_cls.uses_estimates and estimates is not None)
    from_observers = wants_estimates and estimates is None and bool(observers)
    estimate: list[float] | None
    if wants_estimates and not from_observers:
        estimate = _estimates(df, estimates, policy_cls.name, estimates_source)
    else:
        estimate = [math.nan] * df.height if from_observers else None
    replayed = "outcome" in df.columns  # failures replayed: the first attempt's work now, the others on retry
    sim_jobs = Jobs(
        gpu=df["gpu_num"].to_list(),
        submit=df["submit"].to_list(),
        duration=df["first"].to_list() if replayed
        else (df["duration"] + extra).to_list() if extra else df["duration"].to_list(),
        estimate=estimate,
        cpu=df["cpu_num"].to_list() if cpus is not None else None,
        group=df["group"].replace_strict(index, return_dtype=pl.Int64).to_list(),
        labels=lambda key: df[key].to_list() if key in df.columns else None,
    )
    if speed is not None:
        sim_jobs.track_rates()
    engine, rec = Engine(df.height), Record.empty(df.height, len(names))
    if replayed:
        sim_jobs.retries, sim_jobs.retry_work = retry_counts(df, recorded)
        rec.attempts = [1] * df.height
    waiting_since = list(sim_jobs.submit)
    order = profile.order(policy_cls.name, sim_jobs) if profile is not None else None
    # the observers a cycle tells of starts and preemptions (a power manager, say, listens to neither)
    listeners = [o for o in observers if type(o).on_start is not Observer.on_start
                 or type(o).on_preempt is not Observer.on_preempt]
    cycles = [
        Cycle(i, sim_jobs, policy_cls(sim_jobs),
              get_placement(placement, compat=is_compat, seed=seed, group=name),
              VCState(spec.vcs[name], cpus[name] if cpus is not None else None), engine, rec, waiting_since,
              listeners, order=order, quota_preemption=is_compat, speed=speed, estimates_required=from_observers)
        for i, name in enumerate(names)
    ]
    t_all = time.perf_counter()
    sim = Simulation(sim_jobs, names, cycles, engine, arrivals.tolist(), observers, progress,
                     df["outcome"].to_list() if replayed and observers else None,  # (only observers hear outcomes)
                     origin or 0)
    # no job ends before its submission plus its work (a job runs at most at full speed): ticks last at least that long
    until = int((df["submit"].to_numpy() + np.asarray(sim_jobs.duration)).max()) if sim.tickers and df.height \
        else None
    engine.run(df["submit"].to_numpy()[arrivals].tolist(), sim, until)
    wall = time.perf_counter() - t_all
    if sim.left:
        raise SimulationError(f"{sim.left} job(s) never finished: the nodes they need never became usable")
    return rec, [c.events for c in cycles], wall
