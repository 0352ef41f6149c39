"""``simulate``: canonical job table + cluster spec → result tables. No files, no CLI."""

from __future__ import annotations

import datetime
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import polars as pl

from dlcluster.cluster import ClusterSpec
from dlcluster.errors import ConfigError, InputError
from dlcluster.sim.cluster import VCState
from dlcluster.sim.cpu_fit import exclude_cpu_misfits
from dlcluster.sim.engine import Engine
from dlcluster.sim.framework import Cycle, Jobs, Policy
from dlcluster.sim.placement import get_placement
from dlcluster.sim.policies import get_policy
from dlcluster.sim.prepare import prepare
from dlcluster.sim.results import GroupRun, build_results

COMPAT_MODES = ("helios-artifact",)
Progress = Callable[[str, int, int], None]  # (group just simulated, groups done, groups in all)


@dataclass
class SimResult:
    """The result tables of one run and its summary (see docs/simulator.md for every column)."""

    jobs: pl.DataFrame
    timeline: pl.DataFrame
    placements: pl.DataFrame
    summary: dict[str, Any]


def _wall_text(origin: int | None) -> str | None:
    """Compat time 0 as wall-clock text (the artifact's clock has no zone)."""
    if origin is None:
        return None
    return datetime.datetime.fromtimestamp(origin, tz=datetime.UTC).strftime("%Y-%m-%d %H:%M:%S")


def _estimates(group: pl.DataFrame, estimates: pl.DataFrame | None, policy: str) -> list[float]:
    if estimates is None:
        raise ConfigError(f"policy {policy!r} needs duration estimates (--estimates FILE, or --estimates history|oracle)")
    joined = group.select("job_id").join(estimates, on="job_id", how="left", maintain_order="left")
    missing = joined.filter(pl.col("estimate").is_null())
    if missing.height:
        raise InputError(f"no duration estimate for job {missing['job_id'][0]!r} "
                         f"({missing.height} simulated job(s) lack one)", field="job_id")
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
) -> SimResult:
    """Simulate ``policy`` on ``jobs`` (canonical table) over ``cluster``, each VC on its own unless ``pooled``.

    ``compat="helios-artifact"`` reproduces the SC'21 artifact (wall-clock times in
    ``timezone``, its window, origin, tie order and quirks; ``window`` is then wall-clock
    seconds). ``estimates`` is a table ``job_id, estimate`` (predicted duration, seconds).
    ``unknown_vc="unschedulable"`` counts jobs of VCs missing from ``cluster`` instead of failing.
    ``seed`` drives every random choice (the ``random`` placement): same seed, same output.
    CPUs are modelled when ``cluster`` has CPU counts and ``jobs`` a ``cpu_num`` column.
    """
    if compat is not None and compat not in COMPAT_MODES:
        raise ConfigError(f"unknown compatibility mode {compat!r}; choose one of: {', '.join(COMPAT_MODES)}")
    is_compat = compat is not None
    policy_cls = get_policy(policy) if isinstance(policy, str) else policy
    placer = get_placement(placement, compat=is_compat, seed=seed)  # checks the name before any work
    prep = prepare(jobs, cluster, compat=is_compat, pooled=pooled, unknown_vc=unknown_vc, window=window,
                   timezone=timezone, load=load, source=source)
    prep = exclude_cpu_misfits(prep, placer)
    cpus = prep.spec.cpus
    # the artifact's SRTF ends every job one second late: model it as one more second of work
    extra = 1 if is_compat and policy_cls.preemptive else 0
    groups = prep.jobs.partition_by("group", maintain_order=True, as_dict=True)
    wants_estimates = policy_cls.needs_estimates or (policy_cls.uses_estimates and estimates is not None)
    order = [g for g in prep.spec.vcs if (g,) in groups]
    runs: list[GroupRun] = []
    t_all = time.perf_counter()
    for done, name in enumerate(order, 1):
        group = groups[(name,)]
        t0 = time.perf_counter()
        sim_jobs = Jobs(
            gpu=group["gpu_num"].to_list(),
            submit=group["submit"].to_list(),
            duration=(group["duration"] + extra).to_list(),
            estimate=_estimates(group, estimates, policy_cls.name) if wants_estimates else None,
            cpu=group["cpu_num"].to_list() if cpus is not None else [],
        )
        engine = Engine()
        cycle = Cycle(sim_jobs, policy_cls(sim_jobs, compat=is_compat),
                      get_placement(placement, compat=is_compat, seed=seed, group=name),
                      VCState(prep.spec.vcs[name], cpus[name] if cpus is not None else None), engine)
        events = engine.run(sim_jobs.submit, range(group.height), cycle.step)
        runs.append(GroupRun(name, group, cycle.rec, prep.spec.vcs[name], events, time.perf_counter() - t0,
                             cpus[name] if cpus is not None else None))
        if progress is not None:
            progress(name, done, len(order))
    wall = time.perf_counter() - t_all
    meta = {"policy": policy_cls.name, "placement": placer.name, "compat": compat, "pooled": pooled,
            "load": load, "seed": seed, "time_origin": _wall_text(prep.origin)}
    return SimResult(*build_results(runs, prep, meta, wall))
