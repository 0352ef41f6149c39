"""Result tables of a run: ``jobs`` (one row per job), ``timeline`` (per VC every 60 s) and ``summary``.

The timeline's step is 60 s unless a VC would then get more than :data:`MAX_SAMPLES` rows
(a run spanning about two years or more): the step becomes the smallest multiple of 60 s
that keeps every VC within that bound, so memory follows the jobs, not the simulated span.

Everything here is computed after the run from start/end intervals, vectorised; the
simulation loop only records what happened.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, cast

import numpy as np
import polars as pl

from dlcluster.analysis.common import ordered_mean
from dlcluster.cluster import ClusterSpec
from dlcluster.sim.cluster import ON
from dlcluster.sim.jobs import Record, Segments, checkpoint_overhead
from dlcluster.sim.power import BOOTING, NEVER, NODE_STATES_SCHEMA, PowerModel, energy, node_spans
from dlcluster.sim.prepare import Prepared
from dlcluster.schema import STATUSES

TAU = 10  # seconds: the bounded-slowdown threshold
SAMPLE = 60  # seconds between timeline samples
MAX_SAMPLES = 1_048_576  # timeline rows per VC, at most: beyond it the step grows in multiples of SAMPLE


def timeline_step(t0: int, last: int) -> int:
    """Seconds between timeline samples from ``t0`` to ``last``: :data:`SAMPLE`, or a multiple within the bound."""
    rows = (last - t0) // SAMPLE + 1
    return SAMPLE * -(-rows // MAX_SAMPLES)


@dataclass
class GroupRun:
    """One simulation group (a VC, or the pooled cluster) and what happened in it, cut out of the whole run."""

    name: str
    seg: dict[str, Any]  # its run segments (arrays, see _segments) and ``job_id`` per (segment, node)
    sizes: tuple[int, ...]
    events: int
    cpus: tuple[int, ...] | None = None  # node CPU counts when CPUs are modelled
    node_cpus: np.ndarray | None = None  # CPUs held in each (segment, node) row


def _segments(segs: Segments, gpu_num: np.ndarray) -> dict[str, Any]:
    """Run segments as arrays: per segment (job, start, end, gpus), per (segment, node) (node_job, node, ...).

    ``gpu_num``: each job's GPUs, by job number.
    """
    job, start, end, node = (np.frombuffer(v, dtype=np.int64) for v in (segs.job, segs.start, segs.end, segs.node))
    gpus = gpu_num[job]
    per_segment = {"job": job, "start": start, "end": end, "gpus": gpus}
    if not segs.span_segment:  # every segment on one node: one (segment, node) row each
        return {**per_segment, "node_job": job, "node": node, "node_gpus": gpus, "n_start": start, "n_end": end}
    counts = np.bincount(np.array(segs.span_segment, dtype=np.int64), minlength=len(job))
    counts[node >= 0] = 1
    rows = np.repeat(np.arange(len(job)), counts)  # the segment of each (segment, node) row, in segment order
    row_node, row_gpus = node[rows], gpus[rows]
    spans = row_node < 0  # the rows of segments across nodes, in the order their nodes were listed
    row_node[spans] = segs.span_node
    row_gpus[spans] = segs.span_gpus
    return {**per_segment, "node_job": job[rows], "node": row_node, "node_gpus": row_gpus, "n_start": start[rows],
            "n_end": end[rows]}


def _split(prep: Prepared, rec: Record, events: list[int]) -> list[GroupRun]:
    """One :class:`GroupRun` per group that had jobs, in cluster-spec order (each group recorded its own segments)."""
    df = prep.jobs
    spec, cpus = prep.spec, prep.spec.cpus
    gpu_num = df["gpu_num"].to_numpy().astype(np.int64)
    if cpus is not None:
        cpu_num = df["cpu_num"].to_numpy()
    present = set(df["group"].unique().to_list())
    job_ids = df["job_id"]
    runs = []
    for i, name in enumerate(spec.vcs):
        if name not in present:
            continue
        part = _segments(rec.segments[i], gpu_num)
        if cpus is not None:
            cpu, gpu = cpu_num[part["node_job"]], gpu_num[part["node_job"]]
            part["node_cpus"] = -(-cpu * part["node_gpus"] // np.maximum(gpu, 1))
        part["job_id"] = job_ids.gather(part["node_job"])
        runs.append(GroupRun(name, part, spec.vcs[name], events[i],
                             cpus[name] if cpus is not None else None, part.get("node_cpus")))
    return runs


def _jobs_table(prep: Prepared, rec: Record, runs: list[GroupRun]) -> pl.DataFrame:
    """One row per simulated job, VC by VC in cluster-spec order, each VC's jobs in arrival order."""
    table = prep.jobs.select(
        "row", "job_id", "vc", "group", "user", "gpu_num", "submit",
        pl.Series("start", rec.start, pl.Int64), pl.Series("end", rec.end, pl.Int64), "duration",
        pl.Series("queue_delay", rec.queue, pl.Int64),
        pl.Series("preemptions", rec.preemptions, pl.Int32),
        pl.Series("nodes_spanned", rec.nodes, pl.Int32),
        # failures replayed: the outcome, the attempts run, the validation pool's wait
        *(["outcome", pl.Series("attempts", rec.attempts, pl.Int32), RUN_TIME] if "outcome" in prep.jobs.columns
          else []),
        *(["first_submit", "pool_wait"] if "first_submit" in prep.jobs.columns else []),
    )
    if not runs:
        return table
    # jobs are numbered VC by VC: each VC is one slice; one chunk per VC keeps the Parquet layout by VC
    sizes = table.group_by("group", maintain_order=True).len()
    bounds = dict(zip(sizes["group"], sizes["len"], strict=True))
    chunks, offset = [], 0
    for r in runs:
        chunks.append(table.slice(offset, bounds[r.name]))
        offset += bounds[r.name]
    return pl.concat(chunks, rechunk=False)


def _placements(run: GroupRun) -> pl.DataFrame:
    """Which GPUs of which node each job held, over which interval (one row per run segment and node)."""
    seg = run.seg
    job_ids = seg["job_id"]
    cpus = {} if run.node_cpus is None else {"cpus": pl.Series(run.node_cpus, dtype=pl.Int32)}
    return pl.DataFrame({
        "job_id": pl.Series(job_ids, dtype=pl.String),
        "vc": pl.repeat(run.name, len(job_ids), eager=True, dtype=pl.String),
        "node": pl.Series(seg["node"], dtype=pl.Int32),
        "gpus": pl.Series(seg["node_gpus"], dtype=pl.Int32),
        "start": pl.Series(seg["n_start"], dtype=pl.Int64),
        "end": pl.Series(seg["n_end"], dtype=pl.Int64),
        **cpus,
    })


_SPARSE = 32  # fewer intervals than samples / _SPARSE: see _sampled_sparse (its sort costs more above)


def _covering(starts: np.ndarray, ends: np.ndarray, t0: int, n: int, weights: np.ndarray | None = None,
              step: int = SAMPLE) -> np.ndarray:
    """At each sample t0 + step·k (k < n): how many (or how much weight of) intervals [start, end) hold it."""
    # sample k lies in [s, e) exactly when ceil((s - t0) / step) <= k < ceil((e - t0) / step)
    return _sampled(_first_sample(starts, t0, n, step), _first_sample(ends, t0, n, step), n, weights)


def _sampled(a: np.ndarray, b: np.ndarray, n: int, weights: np.ndarray | None = None) -> np.ndarray:
    """:func:`_covering` of intervals given by their first sample ``a`` and first sample after them ``b``."""
    if _SPARSE * len(a) < n:
        return _sampled_sparse(a, b, n, weights)
    # in place: with millions of samples every temporary array costs page faults
    diff = np.bincount(a, weights, minlength=n + 1)
    diff -= np.bincount(b, weights, minlength=n + 1)
    np.cumsum(diff, out=diff)
    if weights is None:  # counts: already int64
        return diff[:n]
    # integer weights sum exactly in float64 (far below 2**53), so the cast loses nothing
    return diff[:n].astype(np.int64)


def _sampled_sparse(a: np.ndarray, b: np.ndarray, n: int, weights: np.ndarray | None = None) -> np.ndarray:
    """:func:`_sampled` of few intervals over many samples: the level after each change, repeated up to the next
    (one pass over the samples instead of the five of a difference array)."""
    ones = np.ones(len(a), dtype=np.int64) if weights is None else weights
    changes = np.concatenate([a, b])
    order = np.argsort(changes)
    at = changes[order]
    level = np.cumsum(np.concatenate([ones, -ones])[order])
    # samples before the first change, then from each change to the next (none between changes in one sample, so
    # a sample sees the level after all of them)
    widths = np.diff(at, prepend=0, append=n)
    return np.repeat(np.r_[0, level].astype(np.int64), widths)


def _first_sample(times: np.ndarray, t0: int, n: int, step: int = SAMPLE) -> np.ndarray:
    """Per time, the first sample at or after it, ceil((t - t0) / step), within [0, n] (one array, computed in
    place: with millions of segments every temporary array costs page faults)."""
    k = t0 - times
    k //= step
    np.negative(k, out=k)
    return np.clip(k, 0, n, out=k)


def _nodes_holding(node: np.ndarray, a: np.ndarray, b: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Per sample k < n, the nodes that hold at least one and at least two of the intervals [a, b) (in samples)
    that sit on ``node``."""
    m, width = len(node), n + 1
    # by node, then sample, then starts before ends: one sort of a combined key (several times faster than a
    # lexsort), built in place
    key = np.empty(2 * m, dtype=np.int64)
    for half, first, is_end in ((key[:m], a, 0), (key[m:], b, 1)):
        np.multiply(node, width, out=half)
        half += first
        half *= 2
        half += is_end
    key.sort()
    held = key & 1  # 1 at an end: each event adds 1 - 2 * is_end to its node's count
    held *= -2
    held += 1
    np.cumsum(held, out=held)  # each node's events sum to 0, so one running sum restarts at 0 for every node
    key >>= 1
    key %= width  # the sample of each event
    out = []
    for least in (1, 2):
        # a node's count reaches ``least`` or falls below it: +1 or -1 from that sample on (several events in one
        # sample add up to the change over the sample, so brief levels inside it count for nothing)
        above = held >= least
        flips = np.flatnonzero(above[1:] != above[:-1]) + 1
        if m and above[0]:
            flips = np.r_[0, flips]
        ups = above[flips]
        counted = np.bincount(key[flips[ups]], minlength=width) - np.bincount(key[flips[~ups]], minlength=width)
        out.append(np.cumsum(counted)[:n])
    return out[0], out[1]


def _timeline(run: GroupRun, jobs: pl.DataFrame, t0: int, states: NodeStates | None = None,
              step: int = SAMPLE) -> pl.DataFrame:
    seg = run.seg
    n = (_int(jobs["end"].max()) - t0) // step + 1
    a, b = _first_sample(seg["start"], t0, n, step), _first_sample(seg["end"], t0, n, step)
    js, je, jg = (jobs[c].to_numpy() for c in ("submit", "end", "gpu_num"))
    ja, jb = _first_sample(js, t0, n, step), _first_sample(je, t0, n, step)
    busy, running = _sampled(a, b, n, seg["gpus"]), _sampled(a, b, n)
    present_gpus, present = _sampled(ja, jb, n, jg), _sampled(ja, jb, n)
    if len(seg["n_start"]) != len(seg["start"]):  # segments across nodes: one row per (segment, node)
        a, b = _first_sample(seg["n_start"], t0, n, step), _first_sample(seg["n_end"], t0, n, step)
    nodes_busy, nodes_shared = _nodes_holding(seg["node"], a, b, n)
    total = sum(run.sizes)
    cpus = {}
    if run.cpus is not None:
        total_cpus = sum(run.cpus)
        held = _sampled(a, b, n, run.node_cpus)
        cpus = {"total_cpus": np.full(n, total_cpus, dtype=np.int64), "idle_cpus": total_cpus - held}
    return pl.DataFrame({
        "time": np.arange(n, dtype=np.int64) * step + t0,
        "vc": pl.repeat(run.name, n, eager=True),
        "total_gpus": np.full(n, total, dtype=np.int64),
        "idle_gpus": total - busy,
        "pending_gpus": present_gpus - busy,
        "running_jobs": running,
        "pending_jobs": present - running,
        "nodes_busy": nodes_busy,
        "nodes_shared": nodes_shared,
        **cpus,
        **(states.counts(run.name, len(run.sizes), t0, n, step) if states is not None else {}),
    })


def _jain(values: pl.Series) -> float | None:
    # sorted: float sums depend on order, and group_by hands users over in a different order every run
    v = np.sort(values.drop_nulls().to_numpy())
    if len(v) == 0 or not np.any(v):
        return None
    return float(v.sum() ** 2 / (len(v) * (v**2).sum()))


STATS_KEYS = (
    *(f"{s}_{m}" for m in ("jct", "queue_delay") for s in ("mean", "p50", "p95", "p99")),
    "mean_slowdown", "mean_bounded_slowdown", "makespan", "utilization", "fairness", "preemptions",
    "busy_period", "utilization_busy",
)


def _busy_period(submit: np.ndarray, end: np.ndarray) -> int:
    """Seconds during which at least one job was submitted and not yet ended: the length of the union of the
    jobs' [submit, end) intervals."""
    if len(submit) == 0:
        return 0
    order = np.argsort(submit, kind="stable")
    s, reach = submit[order], np.maximum.accumulate(end[order])
    # a period starts where a job arrives after every earlier job has ended, and ends at the furthest end before
    # the next such arrival
    first = np.flatnonzero(np.r_[True, s[1:] > reach[:-1]])
    last = np.r_[first[1:] - 1, len(s) - 1]
    return int((reach[last] - s[first]).sum())


def _stats(jobs: pl.DataFrame, busy: float, capacity_gpus: int, unschedulable: int,
           busy_capacity: float | None = None) -> dict[str, Any]:
    """The metrics of ``jobs``; ``busy_capacity`` (GPU-seconds available while there were jobs) defaults to
    ``capacity_gpus`` × the jobs' busy period."""
    out: dict[str, Any] = {"jobs": jobs.height, "unschedulable": unschedulable}
    if jobs.height == 0:  # every key always present: null when nothing ran
        speed = {"slowdown_gpu_hours": None} if SLOWDOWN in jobs.columns else {}
        return {**out, **dict.fromkeys(STATS_KEYS), **speed}
    for name in ("jct", "queue_delay"):
        s = jobs[name]
        out[f"mean_{name}"] = _float(s.mean())
        for q in (50, 95, 99):
            out[f"p{q}_{name}"] = _float(s.quantile(q / 100, "linear"))
    out["mean_slowdown"] = jobs["slowdown"].mean()
    out["mean_bounded_slowdown"] = _float(jobs["bounded_slowdown"].mean())
    makespan = _int(jobs["end"].max()) - _int(jobs["submit"].min())
    out["makespan"] = makespan
    out["utilization"] = busy / (capacity_gpus * makespan) if makespan > 0 and capacity_gpus else None
    # over known users only: a trace without users has no fairness to report
    per_user = jobs.drop_nulls("user").group_by("user").agg(ordered_mean("slowdown"))["slowdown"]
    out["fairness"] = _jain(per_user)
    out["preemptions"] = int(jobs["preemptions"].sum())
    if SLOWDOWN in jobs.columns:
        out["slowdown_gpu_hours"] = _float(jobs[SLOWDOWN].sum()) / 3600
    out["busy_period"] = _busy_period(jobs["submit"].to_numpy(), jobs["end"].to_numpy())
    if busy_capacity is None:
        busy_capacity = float(capacity_gpus * out["busy_period"])
    out["utilization_busy"] = busy / busy_capacity if busy_capacity > 0 else None
    return out


SLOWDOWN = "_slowdown_gpu_seconds"  # per job under a speed model: GPUs × (time running - work); summed, not output


def _speed_columns(prep: Prepared, rec: Record, runs: list[GroupRun]) -> list[pl.Series]:
    """Per job (prep.jobs order) under a speed model: ``mean_speed`` and the GPU-seconds lost to slowness.

    Work is the duration plus one checkpoint overhead per preemption (what the job had to run at full speed), so
    a run at full speed throughout has speed 1.0 and loses nothing; a job that never held a GPU has no speed.
    """
    n = prep.jobs.height
    # (one bincount over every group's segments: one per group would allocate and add a job-sized array each)
    job = np.concatenate([r.seg["job"] for r in runs] or [np.zeros(0, np.int64)])
    held = np.concatenate([r.seg["end"] - r.seg["start"] for r in runs] or [np.zeros(0, np.int64)])
    running = np.bincount(job, held, minlength=n).astype(np.int64)
    gpus = prep.jobs["gpu_num"].to_numpy().astype(np.int64)
    overhead = np.array([checkpoint_overhead(g) for g in range(int(gpus.max(initial=0)) + 1)], dtype=np.int64)
    # with failures replayed, the work of every attempt the job ran
    work = prep.jobs["work_total" if "work_total" in prep.jobs.columns else "duration"].to_numpy().astype(np.int64)
    work += np.asarray(rec.preemptions, dtype=np.int64) * overhead[gpus]
    with np.errstate(divide="ignore", invalid="ignore"):
        speed = np.where(running > 0, work / np.maximum(running, 1), np.nan)
    return [pl.Series("mean_speed", speed, pl.Float64).fill_nan(None),
            pl.Series(SLOWDOWN, gpus * (running - work), pl.Int64)]


JOBS_SCHEMA: dict[str, pl.DataType | type[pl.DataType]] = {
    "job_id": pl.String, "vc": pl.String, "user": pl.String, "gpu_num": pl.Int64, "submit": pl.Int64,
    "start": pl.Int64, "end": pl.Int64, "duration": pl.Int64, "queue_delay": pl.Int64, "jct": pl.Int64,
    "slowdown": pl.Float64, "bounded_slowdown": pl.Float64, "preemptions": pl.Int32, "nodes_spanned": pl.Int32,
    "status": pl.Enum(["completed", "unschedulable"]),
}
TIMELINE_SCHEMA = {"time": pl.Int64, "vc": pl.String, **{c: pl.Int64 for c in (
    "total_gpus", "idle_gpus", "pending_gpus", "running_jobs", "pending_jobs", "nodes_busy", "nodes_shared")}}
PLACEMENTS_SCHEMA = {"job_id": pl.String, "vc": pl.String, "node": pl.Int32, "gpus": pl.Int32,
                     "start": pl.Int64, "end": pl.Int64}
CPU_TIMELINE_SCHEMA = {**TIMELINE_SCHEMA, "total_cpus": pl.Int64, "idle_cpus": pl.Int64}
CPU_PLACEMENTS_SCHEMA = {**PLACEMENTS_SCHEMA, "cpus": pl.Int32}


def _cpu_utilization(stats: dict[str, Any], busy_cpus: float, capacity_cpus: int) -> float | None:
    """Busy CPU-seconds / available CPU-seconds over the makespan (None when nothing ran or there are no CPUs)."""
    makespan = stats["makespan"]
    return busy_cpus / (capacity_cpus * makespan) if makespan and capacity_cpus else None


def _int(value: object) -> int:
    """A Polars scalar (a min, max or sum of integers) as int."""
    return int(cast(int, value))


def _float(value: object) -> float:
    """A Polars scalar (a mean or quantile) as float."""
    return float(cast(float, value))


def _concat(frames: list[pl.DataFrame], schema: dict[str, Any]) -> pl.DataFrame:
    return pl.concat(frames) if frames else pl.DataFrame(schema=schema)


def _by_group(table: pl.DataFrame) -> dict[str, pl.DataFrame]:
    """``table``'s rows per simulation group, in one pass."""
    return {key[0]: part for key, part in table.partition_by("group", as_dict=True).items()}


RUN_TIME = "_run_time"  # with failures replayed: the work of every attempt the job ran (not output)


def _with_jct(table: pl.DataFrame) -> pl.DataFrame:
    """Add ``jct``, ``slowdown`` and ``bounded_slowdown`` from submit, end and the run time: the duration, or with
    failures replayed the attempts' work (a job that failed after a minute of a recorded hour ran a minute)."""
    run = pl.col(RUN_TIME if RUN_TIME in table.columns else "duration")
    return table.with_columns((pl.col("end") - pl.col("submit")).alias("jct")).with_columns(
        pl.when(run > 0).then(pl.col("jct") / run).alias("slowdown"),
        pl.max_horizontal(pl.lit(1.0), pl.col("jct") / pl.max_horizontal(run, pl.lit(TAU))).alias("bounded_slowdown"))


def _as_users_see_it(ran: pl.DataFrame, ended: pl.DataFrame) -> pl.DataFrame:
    """Jobs that went through validation as their users see them: from their first submit, waits in the pool
    counted as queueing; and the jobs that ended on the pool (validation caught them, or ran them to the end)."""
    main = ran.with_columns(pl.col("first_submit").alias("submit"),
                            (pl.col("queue_delay") + pl.col("pool_wait")).alias("queue_delay"),
                            pl.col("pool_wait").alias("validation_wait"))
    stopped = ended.select(
        "row", "job_id", "vc", "group", "user", "gpu_num", "submit", pl.col("pool_start").alias("start"),
        pl.col("pool_end").alias("end"), "duration", pl.col("pool_run").alias(RUN_TIME),
        (pl.col("pool_start") - pl.col("submit")).alias("queue_delay"),
        pl.lit(0, pl.Int32).alias("preemptions"), pl.lit(1, pl.Int32).alias("nodes_spanned"),
        pl.when("caught").then(pl.lit("failed")).otherwise("outcome").alias("status"),
        pl.lit(1, pl.Int32).alias("attempts"),
        (pl.col("pool_start") - pl.col("submit")).alias("validation_wait"))
    return _with_jct(pl.concat([main.drop("first_submit", "pool_wait", "jct", "slowdown", "bounded_slowdown"),
                                stopped], how="diagonal_relaxed"))


def build_results(
    prep: Prepared, rec: Record, events: list[int], meta: dict[str, Any], wall: float,
    power: PowerModel | None = None, caught: pl.DataFrame | None = None, speed: bool = False,
) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame, dict[str, Any], pl.DataFrame]:
    """The jobs table, the timeline, the placements, the summary (with ``energy`` under a power model; with
    ``caught``, the jobs early validation stopped, shown among the others) and the node-state changes.

    ``speed`` (a speed model was on) adds ``mean_speed`` to the jobs and ``slowdown_gpu_hours`` to the summaries.
    """
    runs = _split(prep, rec, events)
    replayed = "outcome" in prep.jobs.columns  # failures replayed
    ran = _jobs_table(prep, rec, runs)
    schema = JOBS_SCHEMA
    if speed:
        ran = ran.with_columns(_speed_columns(prep, rec, runs))
        at = list(JOBS_SCHEMA).index("nodes_spanned") + 1
        items = list(JOBS_SCHEMA.items())
        schema = dict([*items[:at], ("mean_speed", pl.Float64), *items[at:]])
    ran = _with_jct(ran).with_columns(
        pl.col("outcome").alias("status") if replayed else pl.lit("completed").alias("status"))
    # the jobs as their users see them (stats, table, the run's window); ``ran`` stays the main cluster's (timeline)
    if caught is None:
        shown = ran
    else:  # in the order of a run without validation: VC by VC, each by (first) submission
        vc_order = {name: i for i, name in enumerate(prep.spec.vcs)}
        shown = _as_users_see_it(ran, caught).sort(
            pl.col("group").replace_strict(vc_order, return_dtype=pl.Int64), "submit", "row")
    # the run's window, from the first submit (before validation) to the last end (on the pool too): the nodes are
    # powered while jobs wait for or run on the validation pool
    t0 = _int(shown["submit"].min()) if shown.height else 0
    last = _int(shown["end"].max()) if shown.height else t0
    busy = {r.name: float(np.dot(r.seg["end"] - r.seg["start"], r.seg["gpus"])) for r in runs}
    cpus = prep.spec.cpus
    busy_cpus = {r.name: float(np.dot(r.seg["n_end"] - r.seg["n_start"], np.asarray(r.node_cpus)))
                 for r in runs} if cpus is not None else {}
    uns = prep.unschedulable
    uns_by_vc = dict(uns.group_by("group").len().iter_rows())
    by_name = {r.name: r for r in runs}
    shown_by_vc = _by_group(shown)
    vcs: dict[str, Any] = {}
    for name, sizes in prep.spec.vcs.items():
        r, part, gpus = by_name.get(name), shown_by_vc.get(name), sum(sizes)
        # a VC with jobs (perhaps all of them ended on the validation pool), or whose every job is too big for it
        if part is not None or name in uns_by_vc:
            vcs[name] = {**_stats(part if part is not None else shown.clear(), busy.get(name, 0.0), gpus,
                                  uns_by_vc.get(name, 0)),
                         # one clock drives every VC: timings exist for the whole run only
                         "gpus": gpus, "events": r.events if r is not None else 0, "wall_seconds": None,
                         "events_per_second": None}
        if cpus is not None and name in vcs:
            vcs[name].update(cpus=sum(cpus[name]),
                             cpu_utilization=_cpu_utilization(vcs[name], busy_cpus.get(name, 0.0), sum(cpus[name])))
    n_events = sum(r.events for r in runs)
    # the overall figures count the GPUs of every VC listed (one whose jobs were all too big for it too)
    capacity = sum(v["gpus"] for v in vcs.values())
    # each VC's GPUs count while that VC had jobs: idle VCs and a VC's idle spells do not dilute it
    busy_capacity = float(sum(v["gpus"] * (v["busy_period"] or 0) for v in vcs.values()))
    overall = _stats(shown, sum(busy.values()), capacity, uns.height, busy_capacity)
    overall.update(gpus=capacity, events=n_events, wall_seconds=wall,
                   events_per_second=n_events / wall if wall > 0 else None)
    if cpus is not None:
        capacity_cpus = sum(sum(cpus[name]) for name in vcs)
        overall.update(cpus=capacity_cpus,
                       cpu_utilization=_cpu_utilization(overall, sum(busy_cpus.values()), capacity_cpus))
    summary = {**meta, "wall_seconds": wall, "overall": overall, "vcs": vcs,
               "unschedulable_jobs": uns.select("job_id", "vc", "reason").to_dicts()}
    missing = uns.select("job_id", "vc", "user", "gpu_num", pl.lit("unschedulable").alias("status"))
    if replayed:
        schema = {**schema, "status": pl.Enum([*STATUSES, "unschedulable"]), "attempts": pl.Int32,
                  **({"validation_wait": pl.Int64} if caught is not None else {})}
    table = pl.concat([shown, missing], how="diagonal_relaxed").select(
        pl.col(c).cast(t) if c in shown.columns or c in missing.columns else pl.lit(None, t).alias(c)
        for c, t in schema.items()
    )
    log = node_state_table(rec, list(prep.spec.vcs))
    spans = node_spans(log)
    states = NodeStates(spans) if log.height else None
    step = timeline_step(t0, _int(ran["end"].max()) if ran.height else t0)
    ran_by_vc = shown_by_vc if shown is ran else _by_group(ran)
    per_vc = [_timeline(r, ran_by_vc[r.name], t0, states, step) for r in runs]
    timeline = _concat(per_vc, TIMELINE_SCHEMA if cpus is None else CPU_TIMELINE_SCHEMA)
    placements = _concat([_placements(r) for r in runs], PLACEMENTS_SCHEMA if cpus is None else CPU_PLACEMENTS_SCHEMA)
    if power is not None:
        summary["energy"] = _energy(power, prep, spans, ran, per_vc, placements, sum(busy.values()),
                                    states, t0, last, step)
    return table, timeline, placements, summary, log


def _energy(power: PowerModel, prep: Prepared, spans: pl.DataFrame, ran: pl.DataFrame, per_vc: list[pl.DataFrame],
            placements: pl.DataFrame, busy_gpu_seconds: float, states: NodeStates | None, t0: int, last: int,
            step: int) -> dict[str, Any]:
    """The summary's ``energy`` object over the run's window [``t0``, ``last``): energy by state, and what waiting
    for booting nodes cost the jobs (``per_vc``: each run's timeline, sampled every ``step`` s from ``t0``)."""
    out = energy(power, prep.spec, spans, busy_gpu_seconds, t0, last)
    out["utilization_powered"] = _powered_utilization(prep.spec, per_vc, states, t0, step)
    # a job waited for a boot if it started on a node in the very second that node came on
    ons = spans.filter((pl.col("state") == "on") & (pl.col("time") != NEVER)).select(
        pl.col("time").alias("start"), "vc", "node")
    near = placements.filter(pl.col("start").is_in(ons["start"].unique().implode()))  # most rows go here, cheaply
    # (placements and node states name the simulated group: a pooled run's one group, not each job's own VC)
    delayed = near.join(ons, on=["start", "vc", "node"]).select("job_id", "vc").unique() \
        .join(ran.select("job_id", pl.col("group").alias("vc"), "queue_delay"), on=["job_id", "vc"]) \
        .filter(pl.col("queue_delay") > 0)
    out["boot_delayed_jobs"] = delayed.height
    out["boot_delay_seconds"] = _int(delayed.select(pl.min_horizontal("queue_delay", pl.lit(power.boot_seconds))
                                                    .sum()).item()) if delayed.height else 0
    return out


def _powered_utilization(spec: ClusterSpec, per_vc: list[pl.DataFrame], states: NodeStates | None, t0: int,
                         step: int) -> float | None:
    """Mean over samples of the cluster's busy nodes over its powered (on or booting) nodes: every VC's nodes at
    every sample, also after its own last job (its timeline ends there, but its nodes stay powered, as energy
    counts them)."""
    # every VC's timeline samples the same grid from the same first instant, each up to its own last job's end:
    # its k-th row is the grid's k-th sample (summed VC by VC: one copy of millions of rows costs more in page
    # faults than the sums themselves)
    steps = max((t.height for t in per_vc), default=0)
    if steps == 0:
        return None
    busy, on = np.zeros(steps), np.zeros(steps)
    seen = {}  # per VC with a timeline, its samples
    for t in per_vc:
        busy[: t.height] += t["nodes_busy"].to_numpy()
        if states is not None and t.height:
            seen[t["vc"][0]] = t.height
            for column in ("nodes_on", "nodes_booting"):
                if column in t.columns:
                    on[: t.height] += t[column].to_numpy()
    for vc, sizes in spec.vcs.items():
        if states is None:  # without state changes every node was on throughout
            on += len(sizes)
            continue
        # after its timeline (or throughout, for a VC without jobs) the VC's node states give its powered nodes
        head = seen.get(vc, 0)
        if head < steps:
            on[head:] += states.powered(vc, len(sizes), t0 + head * step, steps - head, step)
    keep = on > 0
    return float(np.mean(busy[keep] / on[keep])) if keep.any() else None


def node_state_table(rec: Record, names: list[str]) -> pl.DataFrame:
    """Every node-state change of the run: ``time, vc, node, state`` in the order they happened."""
    log = rec.node_states  # (built by columns: a table of rows, or zip(*log), builds several times slower)
    vcs = pl.Series(names, dtype=pl.String).gather([e[1] for e in log])
    return pl.DataFrame({"time": [e[0] for e in log], "vc": vcs, "node": [e[2] for e in log],
                         "state": [e[3] for e in log]}, schema=NODE_STATES_SCHEMA)


class NodeStates:
    """The run's node-state spans (:func:`~dlcluster.sim.power.node_spans`) as ``nodes_<state>`` timeline columns:
    per sample, a VC's nodes in each state any node entered during the run."""

    def __init__(self, spans: pl.DataFrame) -> None:
        self.states = sorted(spans["state"].unique().to_list())
        # per VC: per state the spans' (time, until) as arrays, and how many of its nodes changed state (each has
        # one span from NEVER); read once, as every timeline and the powered nodes ask again
        self.spans: dict[str, dict[str, tuple[np.ndarray, np.ndarray]]] = {}
        self.changed: dict[str, int] = {}
        for (vc, st), part in spans.partition_by("vc", "state", as_dict=True).items():
            time = part["time"].to_numpy()
            self.spans.setdefault(vc, {})[st] = (time, part["until"].to_numpy())
            self.changed[vc] = self.changed.get(vc, 0) + int(np.count_nonzero(time == NEVER))

    def counts(self, vc: str, nodes: int, t0: int, n: int, step: int = SAMPLE,
               states: Sequence[str] | None = None) -> dict[str, np.ndarray]:
        """Columns ``nodes_<state>`` for ``vc`` (``nodes`` nodes) at the samples t0 + step·k, k < n (of ``states``,
        default every state any node entered)."""
        mine = self.spans.get(vc, {})
        out = {}
        for st in self.states if states is None else states:
            held = mine.get(st)
            out[f"nodes_{st}"] = np.zeros(n, dtype=np.int64) if held is None else \
                _covering(held[0], held[1], t0, n, None, step)
        if "nodes_on" in out:
            out["nodes_on"] += nodes - self.changed.get(vc, 0)  # nodes that never changed state are on throughout
        return out

    def powered(self, vc: str, nodes: int, t0: int, n: int, step: int = SAMPLE) -> np.ndarray:
        """``vc``'s powered nodes (on or booting) at the samples t0 + step·k, k < n."""
        counts = self.counts(vc, nodes, t0, n, step, (ON, BOOTING))
        powered: np.ndarray = counts["nodes_on"] + counts["nodes_booting"]
        return powered
