"""Simulation runs compared: JCT and queueing per run, per VC, over time, and against the observed trace.

Each function takes one run's tables (the ``jobs``, ``timeline`` and ``summary.json`` that
``dlcluster simulate`` writes) and returns a long table that the report stacks with a
leading ``run`` column. Queueing delay = start − submit plus every wait after a
preemption (the simulator's ``queue_delay``); JCT = end − submit. Per-VC utilisation is
the run's own: busy GPU-seconds / (VC GPUs × the VC's span from first submit to last end).
Running GPUs on the timeline = VC GPUs − idle GPUs; pending GPUs = GPUs asked by waiting
jobs; each point is the mean of the 60-second samples in its bin (one hour, or whole hours
enough to keep a VC's curve to about 400 points).
"""

from __future__ import annotations

import numpy as np
import polars as pl

from dlcluster.analysis.common import cdf_points, ordered_mean

HOUR = 3600
VC_METRICS = ("jobs", "mean_queue_delay", "p99_queue_delay", "utilization", "preemptions", "gpus")


def _done(jobs: pl.DataFrame) -> pl.DataFrame:
    """Jobs that ran (an unschedulable job has no times)."""
    return jobs.filter(pl.col("start").is_not_null() & pl.col("end").is_not_null())


def time_cdfs(jobs: pl.DataFrame) -> pl.DataFrame:
    """CDFs of JCT and queueing delay (s) over the jobs that ran: ``measure, seconds, p``."""
    d = _done(jobs)
    both = pl.concat([d.select(pl.lit("JCT").alias("measure"), pl.col("jct").cast(pl.Float64).alias("seconds")),
                      d.select(pl.lit("queueing delay").alias("measure"),
                               pl.col("queue_delay").cast(pl.Float64).alias("seconds"))])
    return cdf_points(both, "seconds", ["measure"])


def per_vc(summary: dict) -> pl.DataFrame:
    """The run's per-VC metrics from its summary: ``vc`` and :data:`VC_METRICS` (null where no job ran)."""
    vcs = summary.get("vcs") or {}
    rows = [{"vc": vc, **{k: (m or {}).get(k) for k in VC_METRICS}} for vc, m in sorted(vcs.items())]
    schema = {"vc": pl.String, "jobs": pl.Int64, "mean_queue_delay": pl.Float64, "p99_queue_delay": pl.Float64,
              "utilization": pl.Float64, "preemptions": pl.Int64, "gpus": pl.Int64}
    return pl.DataFrame(rows, schema=schema)


def overview(summary: dict) -> dict[str, object]:
    """One row of the run's whole-cluster results (times in hours)."""
    o = summary.get("overall") or {}

    def hours(key: str) -> float | None:
        v = o.get(key)
        return None if v is None else v / HOUR

    return {"policy": summary.get("policy"), "placement": summary.get("placement"), "load": summary.get("load"),
            "jobs": o.get("jobs"), "unschedulable": o.get("unschedulable"), "mean JCT (h)": hours("mean_jct"),
            "p99 JCT (h)": hours("p99_jct"), "mean queueing (h)": hours("mean_queue_delay"),
            "p99 queueing (h)": hours("p99_queue_delay"), "utilisation": o.get("utilization"),
            "preemptions": o.get("preemptions")}


def hourly_timeline(timeline: pl.DataFrame, points: int = 400) -> pl.DataFrame:
    """Means per VC over bins of whole hours: ``vc, hour`` (bin start, hours since the run's first sample),
    ``running_gpus, pending_gpus, running_jobs, pending_jobs``; bins widen so a VC has at most about ``points``."""
    cols = ["running_gpus", "pending_gpus", "running_jobs", "pending_jobs"]
    return (timeline.with_columns(_hour_bin(timeline, points),
                                  (pl.col("total_gpus") - pl.col("idle_gpus")).alias("running_gpus"))
            .group_by("vc", "hour").agg(*(ordered_mean(c).alias(c) for c in cols)).sort("vc", "hour"))


def _hour_bin(timeline: pl.DataFrame, points: int) -> pl.Expr:
    """``hour``: each sample's bin start, in hours since the first sample; bins of whole hours, widened so that
    the timeline has at most about ``points`` of them."""
    if timeline.height == 0:  # (a run none of whose VCs is among those shown)
        return pl.lit(None, pl.Float64).alias("hour")
    t0 = timeline["time"].min()
    span = (timeline["time"].max() - t0) // HOUR + 1
    width = max(1, -(-span // points)) * HOUR
    return ((pl.col("time") - t0) // width * width / HOUR).alias("hour")


ENERGY = (("energy_kwh", "energy kWh"), ("always_on_kwh", "always-on kWh"), ("saved_pct", "saved %"),
          ("mean_powered_nodes", "mean powered nodes"), ("utilization_powered", "powered utilisation"),
          ("wakeups", "wake-ups"), ("boot_delayed_jobs", "boot-delayed jobs"),
          ("boot_delay_seconds", "boot delay s"))


def energy(summary: dict) -> dict[str, object] | None:
    """The run's energy figures (:data:`ENERGY`) from its summary, or None for a run without power modelled."""
    e = summary.get("energy")
    return None if e is None else {label: e.get(key) for key, label in ENERGY}


def powered_timeline(timeline: pl.DataFrame, node_states: pl.DataFrame | None = None,
                     points: int = 400) -> pl.DataFrame:
    """The whole cluster's busy and powered (on or booting) nodes, means over bins of whole hours: ``hour, busy,
    powered`` (the sums over the VCs' samples; needs the node-state columns of a run whose nodes changed state).

    A VC's timeline ends at its last job's end, but its nodes stay powered: with the run's ``node_states`` each VC
    counts at every sample of the run, from its node-state changes (else only while its timeline lasts).
    """
    powered = pl.col("nodes_on") + (pl.col("nodes_booting") if "nodes_booting" in timeline.columns else 0)
    per_sample = timeline.group_by("time").agg(pl.col("nodes_busy").sum().alias("busy"),
                                               powered.sum().alias("powered"))
    if node_states is not None and timeline.height:
        per_sample = per_sample.drop("powered").join(_powered_nodes(timeline, node_states), on="time")
    return (per_sample.with_columns(_hour_bin(timeline, points))
            .group_by("hour").agg(ordered_mean("busy").alias("busy"), ordered_mean("powered").alias("powered"))
            .sort("hour"))


def _powered_nodes(timeline: pl.DataFrame, node_states: pl.DataFrame) -> pl.DataFrame:
    """``time, powered``: every VC of the timeline's powered nodes at each of its samples, from the node states."""
    from dlcluster.sim.power import node_spans
    from dlcluster.sim.results import NodeStates

    times = timeline["time"].unique().sort()
    t0, n = int(times[0]), len(times)
    step = int(times[1] - times[0]) if n > 1 else 60
    states = NodeStates(node_spans(node_states))
    state_columns = [c for c in timeline.columns if c.startswith("nodes_") and c not in ("nodes_busy", "nodes_shared")]
    # a VC's nodes: those in any state at its first sample
    nodes = timeline.group_by("vc", maintain_order=True).agg(pl.sum_horizontal(state_columns).first())
    powered = np.zeros(n, dtype=np.int64)
    for vc, count in nodes.iter_rows():
        powered += states.powered(vc, int(count), t0, n, step)
    return pl.DataFrame({"time": times, "powered": powered})


def busiest_vcs(timeline: pl.DataFrame, n: int) -> list[str]:
    """The ``n`` VCs with the most GPU time held or asked for over the run (ties by name)."""
    load = timeline.group_by("vc").agg((pl.col("total_gpus") - pl.col("idle_gpus") + pl.col("pending_gpus"))
                                       .sum().alias("load"))
    return load.sort(["load", "vc"], descending=[True, False]).head(n)["vc"].sort().to_list()


def preemptions_per_vc(jobs: pl.DataFrame) -> pl.DataFrame:
    """Preemptions and preempted jobs per VC: ``vc, jobs, preemptions, preempted_jobs`` (``jobs``: those that ran,
    as summary.json counts them; an unschedulable one is never preempted)."""
    p = pl.col("preemptions") if "preemptions" in jobs.columns else pl.lit(0)
    return (_done(jobs).group_by("vc").agg(pl.len().alias("jobs"), p.sum().cast(pl.Int64).alias("preemptions"),
                                    (p > 0).sum().cast(pl.Int64).alias("preempted_jobs")).sort("vc"))


def foreign_job(sim: pl.DataFrame, observed: pl.DataFrame) -> str | None:
    """Why ``observed`` (a canonical job table) is not the trace ``sim`` (a run's jobs) replayed, or None: the first
    job id both hold whose VC or GPU count differs (generated traces number their jobs alike, seed after seed)."""
    both = sim.select("job_id", "vc", "gpu_num").join(
        observed.select(pl.col("job_id").cast(pl.String), pl.col("vc").cast(pl.String).alias("vc_trace"),
                        pl.col("gpu_num").alias("gpu_trace")), on="job_id")
    differ = both.filter((pl.col("vc") != pl.col("vc_trace")) | (pl.col("gpu_num") != pl.col("gpu_trace")))
    if differ.height == 0:
        return None
    job, vc, gpus, vc_t, gpus_t = differ.row(0)
    return (f"its job {job!r} ran in VC {vc!r} on {gpus} GPU(s), the trace's is in VC {vc_t!r} with {gpus_t} "
            f"({differ.height:,} of the {both.height:,} jobs both hold differ): the trace is not the one it replayed")


def queue_vs_observed(sim: pl.DataFrame, observed: pl.DataFrame) -> pl.DataFrame:
    """Simulated versus observed queueing per VC over the jobs in both: ``vc, source, jobs, mean, p50, p90`` (s).

    ``observed`` is the trace's canonical job table; jobs are matched by ``job_id``.
    """
    both = (_done(sim).select("job_id", "vc", pl.col("queue_delay").cast(pl.Float64).alias("simulated"))
            .join(observed.select(pl.col("job_id").cast(pl.String), pl.col("queue_delay").cast(pl.Float64)
                                  .alias("observed")).drop_nulls("observed"), on="job_id"))
    long = both.unpivot(index=["job_id", "vc"], on=["observed", "simulated"], variable_name="source",
                        value_name="q")
    q = pl.col("q")
    return (long.group_by("vc", "source").agg(pl.len().alias("jobs"), ordered_mean("q").alias("mean"),
                                              q.median().alias("p50"), q.quantile(0.9, "linear").alias("p90"))
            .sort("vc", "source"))
