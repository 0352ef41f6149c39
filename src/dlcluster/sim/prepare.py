"""From a canonical job table to simulation groups: filters, VC checks, tie order, load scaling."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np
import polars as pl

from dlcluster.cluster import ClusterSpec
from dlcluster.errors import ConfigError, InputError, UnknownVCError
from dlcluster.sim.compat import HELIOS_ARTIFACT, artifact_order, wall_seconds

NEEDED = ("job_id", "vc", "gpu_num", "submit_time", "duration")
LOAD_RANGE = (1e-9, 1e9)  # documented limits of the load factor
MAX_SPAN = 2**53  # seconds: a scaled span beyond this loses whole seconds in the float scaling
UNKNOWN_VC = ("error", "unschedulable")


@dataclass
class Prepared:
    """GPU jobs in arrival order (``row``, ``group``, ``submit``), the unschedulable ones, the time origin."""

    jobs: pl.DataFrame
    unschedulable: pl.DataFrame  # job_id, vc, group, gpu_num, reason
    spec: ClusterSpec
    origin: int | None  # compat: wall-clock epoch seconds of time 0


# what a GPU job needs to be replayed, column → name (a job running or pending when the trace was taken lacks some)
REPLAY_NEEDS = {"duration": "duration", "submit_time": "submit time"}


def unreplayable() -> pl.Expr:
    """True for a GPU job that lacks something of :data:`REPLAY_NEEDS`: the simulator refuses such a table."""
    return (pl.col("gpu_num") > 0) & pl.any_horizontal(pl.col(c).is_null() for c in REPLAY_NEEDS)


def _check(jobs: pl.DataFrame, source: str, cpus: bool) -> None:
    missing = [c for c in NEEDED if c not in jobs.columns]
    if missing:
        raise InputError(f"job table lacks column(s) {', '.join(missing)}", path=source)
    gpu = pl.col("gpu_num") > 0
    for field, bad_if, what in (
        *((c, pl.col(c).is_null(), f"has no {name}; a simulation needs one for every GPU job")
          for c, name in REPLAY_NEEDS.items()),
        ("duration", pl.col("duration") < 0, "has a negative duration"),
        *([("cpu_num", pl.col("cpu_num") < 0, "asks for a negative number of CPUs")] if cpus else []),
    ):
        bad = jobs.filter(gpu & bad_if)
        if bad.height:
            raise InputError(f"job {bad['job_id'][0]!r} {what}", path=source, field=field)


def check_seed(seed: int) -> None:
    """Refuse a negative seed (NumPy's generators, which the random placement and generated traces draw from, take
    none), as ``synth`` does."""
    if seed < 0:
        raise ConfigError(f"--seed must be a non-negative integer, got {seed}")


def check_load(load: float, option: str = "--load") -> None:
    """Refuse a load factor that is not a positive finite number within ``LOAD_RANGE``, naming ``option``."""
    if not (0 < load < math.inf):  # also rejects NaN
        raise ConfigError(f"{option} must be a positive finite number, got {load}")
    if not LOAD_RANGE[0] <= load <= LOAD_RANGE[1]:
        raise ConfigError(f"{option} {load:g} is outside the supported range {LOAD_RANGE[0]:g}..{LOAD_RANGE[1]:g}")


def _scale(df: pl.DataFrame, load: float) -> pl.DataFrame:
    """Divide inter-arrival times by ``load`` (floored to whole seconds), keeping the first submit."""
    check_load(load)
    if load == 1 or df.height == 0:
        return df
    first = int(df["submit"].min())  # type: ignore[arg-type]
    span = (int(df["submit"].max()) - first) / load  # type: ignore[arg-type]
    if span > MAX_SPAN:
        raise ConfigError(f"--load {load:g} stretches the {int(span * load):,} s of arrivals beyond {MAX_SPAN:,} s; "
                          "use a larger --load")
    # NumPy divides exactly rounded; Polars multiplies by 1 / load, which floors some whole quotients one second low
    # (4218 / 3.7 gave 1139)
    offsets = np.floor((df["submit"].to_numpy() - first) / load).astype(np.int64)
    return df.with_columns(pl.Series("submit", offsets + first, pl.Int64))


def _missing(vc: str, spec: ClusterSpec) -> str:
    """Why ``vc`` has no nodes: the spec gives it 0 GPUs, or does not name it."""
    return "has 0 GPUs in the cluster spec" if vc in spec.empty else "is not in the cluster spec"


def prepare(
    jobs: pl.DataFrame,
    spec: ClusterSpec,
    *,
    compat: bool,
    pooled: bool,
    unknown_vc: str,
    window: tuple[int, int] | None,
    timezone: str,
    load: float,
    source: str,
    keep_status: bool = False,
) -> Prepared:
    """Order and group the simulated jobs; split off those that can never run.

    When ``spec`` has CPUs and the table a ``cpu_num`` column, the jobs keep ``cpu_num``
    (null → 0: no CPU demand); otherwise CPUs are not modelled and there is no such column.
    ``keep_status`` keeps each job's ``status`` (for replaying failures).
    """
    if spec.cpus is not None and "cpu_num" not in jobs.columns:
        spec = replace(spec, cpus=None)
    _check(jobs, source, spec.cpus is not None)
    if keep_status and "status" not in jobs.columns:
        raise InputError("job table has no status column: failures cannot be replayed", path=source, field="status")
    if unknown_vc not in UNKNOWN_VC:
        raise ConfigError(f"unknown_vc must be one of {', '.join(UNKNOWN_VC)}, got {unknown_vc!r}")
    df = jobs.select(
        "job_id", "vc",
        *((pl.col(c) if c in jobs.columns else pl.lit(None, pl.String)).alias(c) for c in ("user", "name")),
        pl.col("gpu_num").cast(pl.Int64), pl.col("submit_time").cast(pl.Int64), pl.col("duration").cast(pl.Int64),
        *([pl.col("cpu_num").cast(pl.Int64).fill_null(0)] if spec.cpus is not None else []),
        *([pl.col("status").cast(pl.String)] if keep_status else []),
    ).with_row_index("row")
    is_gpu = pl.col("gpu_num") > 0
    # pooled, every job shares the whole cluster whatever its VC, unless the caller counts jobs of VCs missing from
    # the spec as unschedulable (a trace that covers more VCs than the spec describes)
    known = pl.lit(True) if pooled and unknown_vc == "error" else pl.col("vc").is_in(list(spec.vcs))
    origin = None
    if compat:
        spec = HELIOS_ARTIFACT.whole_nodes(spec)
        walled = df.with_columns(wall_seconds(pl.col("submit_time"), timezone).alias("wall"))
        df, origin = artifact_order(walled, is_gpu & known, window)
        df = df.drop("wall")
        unknown = walled.filter(is_gpu & ~known)
        if window is not None:
            unknown = unknown.filter(pl.col("wall").is_between(window[0], origin + window[1] - window[0]))
    else:
        unknown = df.filter(is_gpu & ~known)
        df = df.filter(is_gpu & known).rename({"submit_time": "submit"})
        if window is not None:
            df = df.filter(pl.col("submit").is_between(*window))
            unknown = unknown.filter(pl.col("submit_time").is_between(*window))
        df = df.sort("submit", maintain_order=True)
    if unknown.height and unknown_vc == "error":
        vc, job = unknown["vc"][0], unknown["job_id"][0]
        raise UnknownVCError(f"VC {vc!r} of job {job!r} {_missing(vc, spec)} "
                             f"(known: {', '.join(sorted(spec.vcs))})", path=source, field="vc")
    df = _scale(df, load)
    if pooled:
        spec = spec.pooled()
        df = df.with_columns(pl.lit("all").alias("group"))
    else:
        df = df.with_columns(pl.col("vc").alias("group"))
    sizes = pl.DataFrame({"group": list(spec.vcs), "vc_gpus": [sum(n) for n in spec.vcs.values()]})
    df = df.join(sizes, on="group", how="left", maintain_order="left")
    too_big = pl.col("gpu_num") > pl.col("vc_gpus")
    unschedulable = pl.concat([
        unknown.select("job_id", "vc", pl.col("vc").alias("group"), "gpu_num", "user",
                       pl.when(pl.col("vc").is_in(list(spec.empty))).then(pl.lit("VC has 0 GPUs in the cluster spec"))
                       .otherwise(pl.lit("VC not in the cluster spec")).alias("reason")),
        df.filter(too_big).select(
            "job_id", "vc", "group", "gpu_num", "user",
            pl.format("needs {} GPUs, its VC has {}", "gpu_num", "vc_gpus").alias("reason"),
        ),
    ])
    return Prepared(df.filter(~too_big).drop("vc_gpus"), unschedulable, spec, origin)
