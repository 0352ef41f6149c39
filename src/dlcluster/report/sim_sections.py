"""The simulation report's sections: runs compared overall, per VC, over time, and against the observed trace."""

from __future__ import annotations

from collections.abc import Callable

import polars as pl

from dlcluster.analysis import simruns
from dlcluster.analysis.checks import MIN_GROUP, queue_problem, tiny_groups
from dlcluster.report import plots
from dlcluster.report.inputs import single_values
from dlcluster.report.model import Item, Section
from dlcluster.report.runs import SimRun
from dlcluster.trace import Trace

TIMELINE_VCS = 12  # panels of a timeline figure: the busiest VCs
VC_N = "VC (n = its jobs)"
UNITS = (("s", 1), ("min", 60), ("h", 3600), ("d", 86400))


def time_unit(seconds: float) -> tuple[str, int]:
    """The unit (s, min, h, d) in which ``seconds`` reads as a number between about 1 and 100."""
    name, size = UNITS[0]
    for n, s in UNITS[1:]:
        if seconds >= 2 * s:
            name, size = n, s
    return name, size


def _stack(runs: list[SimRun], table: Callable[[SimRun], pl.DataFrame]) -> pl.DataFrame:
    """One table with a leading ``trace`` column naming the run (the plots' series column), runs in order."""
    kind = pl.Enum([r.name for r in runs])
    frames = [df.select(pl.lit(r.name).cast(kind).alias("trace"), pl.all()) for r in runs if (df := table(r)).height]
    return pl.concat(frames, how="vertical_relaxed") if frames else pl.DataFrame()


def _with_n(df: pl.DataFrame) -> pl.DataFrame:
    """``df`` with ``vc_n``: the VC's name and its jobs (the same in every run of one trace, so said once)."""
    n = df.group_by("vc").agg(pl.col("jobs").min().alias("lo"), pl.col("jobs").max().alias("hi"))
    label = pl.when(pl.col("lo") == pl.col("hi")).then(pl.format("{} (n={})", "vc", "lo")).otherwise(
        pl.format("{} (n={}-{})", "vc", "lo", "hi")).alias("vc_n")
    return df.join(n.select("vc", label), on="vc", how="left")


def _out(df: pl.DataFrame) -> pl.DataFrame:
    """A table as written beside the report: its series column named for what it is."""
    return df.rename({"trace": "run"}) if "trace" in df.columns else df


def _unlike(runs: list[SimRun]) -> list[str]:
    """A sentence for each run that simulated another cluster or other jobs than the first run: its figures beside
    the first's compare workloads, not policies."""
    if len(runs) < 2:
        return []
    first, out = runs[0], []
    gpus = {r.name: {vc: (v or {}).get("gpus") for vc, v in (r.summary.get("vcs") or {}).items()} for r in runs}
    ids = first.jobs["job_id"].cast(pl.String)
    for r in runs[1:]:
        mine, theirs = gpus[r.name], gpus[first.name]
        if mine != theirs:
            vc = next(v for v in sorted({*mine, *theirs}, key=str) if mine.get(v) != theirs.get(v))
            out.append(f"{r.name} simulated another cluster than {first.name} (VC {vc}: {_gpus(mine.get(vc))} against "
                       f"{_gpus(theirs.get(vc))}): their figures compare clusters as much as policies.")
        other = r.jobs["job_id"].cast(pl.String)
        strays = int((~other.is_in(ids.implode())).sum())
        if strays or other.len() != ids.len():
            out.append(f"{r.name} simulated other jobs than {first.name} ({other.len():,} against {ids.len():,}, "
                       f"{strays:,} of its own not among {first.name}'s): their figures compare workloads as much as "
                       "policies.")
    return out


def _gpus(n: object) -> str:
    return "no such VC" if n is None else f"{n:,} GPUs"


def runs_section(runs: list[SimRun]) -> Section:
    """Section 1: one row per run with its whole-cluster results."""
    s = Section("runs", "1. Runs", "The simulated runs compared, one row each; times in hours.")
    table = pl.DataFrame([{"run": r.name, **simruns.overview(r.summary)} for r in runs])
    s.items.append(Item("sim-runs", "Whole-cluster results per run",
                        "From each run's summary.json: jobs simulated, jobs that could never fit their VC "
                        "(unschedulable), mean and p99 job completion time (JCT = end − submit), mean and p99 "
                        "queueing delay (start − submit plus waits after preemptions), GPU utilisation over the "
                        "run (busy GPU-seconds / all simulated VCs' GPUs × makespan) and preemptions.",
                        shown=table, data={"sim-runs": table}, checks=_unlike(runs)))
    return s


def times_section(runs: list[SimRun]) -> Section:
    """Section 2: CDFs of JCT and queueing delay per run."""
    s = Section("times", "2. Job completion and queueing", "How long jobs took and waited under each policy.")
    t = _stack(runs, lambda r: simruns.time_cdfs(r.jobs))
    for measure, item_id, label in (("JCT", "sim-jct-cdf", "job completion time"),
                                    ("queueing delay", "sim-queue-cdf", "queueing delay")):
        part = t.filter(pl.col("measure") == measure) if t.height else t
        title = f"CDF of {label} per run"
        definition = (f"Empirical CDF over the jobs that ran of their {label} in seconds, log scale (zero drawn at "
                      "1 s); one line per run.")
        if part.height == 0:
            s.items.append(Item(item_id, title, definition, absent="no job ran in any run."))
            continue
        idle = [r.name for r in runs if not _ran(r)]
        flat = [r.name for r in runs if measure == "queueing delay" and _ran(r) and _max_queue(r) == 0]
        if len(flat) + len(idle) == len(runs):
            s.items.append(Item(item_id, title, definition, absent="no job waited in any run (every queueing delay "
                                "is 0), so there is no queueing to show."))
            continue
        found = [f"{', '.join(flat)}: no job waited (a step at 1 s)."] if flat else []
        found += [f"{', '.join(idle)}: no job ran (every one unschedulable), so no line."] if idle else []
        # a run whose jobs all took the same time draws one vertical step: said instead (as for no wait)
        is_flat = pl.col("trace").cast(pl.String).is_in(flat)
        kept, single = single_values(part.filter(~is_flat), [], "seconds", label, " s")
        if kept.height == 0:
            s.items.append(Item(item_id, title, definition, absent=" ".join([*found, *single])))
            continue
        found += single
        part = part.filter(is_flat | pl.col("trace").cast(pl.String).is_in(kept["trace"].cast(pl.String).implode()))
        fig = plots.cdf(part, "seconds", f"{label} (s)")
        s.items.append(Item(item_id, title, definition, figure=fig, data={item_id: _out(part)}, checks=found))
    return s


def _ran(run: SimRun) -> bool:
    """Whether any job of ``run`` started."""
    return bool(run.jobs["start"].is_not_null().any())


def _max_queue(run: SimRun) -> float:
    q = run.jobs.get_column("queue_delay").drop_nulls()
    return float(q.max()) if q.len() else 0.0


def vc_section(runs: list[SimRun]) -> Section:
    """Section 3: per-VC bars of mean and p99 queueing delay and of utilisation."""
    s = Section("vcs", "3. Per virtual cluster", "Each VC's results in each run (from summary.json); n beside "
                f"each VC's name is its jobs, and bars resting on fewer than {MIN_GROUP} jobs are hatched.")
    t = _stack(runs, lambda r: simruns.per_vc(r.summary))
    t = _with_n(t) if t.height else t
    if t.height == 0:
        s.items.append(Item("sim-vc-queue", "Queueing per VC", "", absent="no run lists per-VC results."))
        return s
    peak = t.select(pl.max_horizontal("mean_queue_delay", "p99_queue_delay").max()).item() or 0.0
    unit, size = time_unit(peak)
    # a VC none of whose jobs ran in any run (each too large for it) has no bar to draw: an empty slot read as 0
    idle = t.group_by("vc").agg(pl.col("jobs").max()).filter(pl.col("jobs") == 0)["vc"].sort().to_list()
    ran = t.filter(~pl.col("vc").is_in(idle))
    gone = [f"No job ran in VC {', '.join(map(str, idle))} in any run (every one unschedulable)."] if idle else []
    q = (ran.unpivot(index=["trace", "vc", "jobs"], on=["mean_queue_delay", "p99_queue_delay"],
                     variable_name="measure")
          .join(ran.select("trace", "vc", "vc_n"), on=["trace", "vc"])
         .with_columns(pl.col("value") / size, pl.col("measure").replace({"mean_queue_delay": "mean",
                                                                          "p99_queue_delay": "p99"})))
    # a VC has the same jobs in every run of one trace: named once
    tiny = [x for x in [tiny_groups(t.filter(pl.col("jobs") > 0).select("vc", "jobs").unique().sort("vc", "jobs"),
                                    "vc", "jobs")] if x]
    if peak == 0:
        s.items.append(Item("sim-vc-queue", "Queueing delay per VC", "Mean and p99 queueing delay per VC.",
                            absent="no job waited in any VC of any run."))
    else:
        s.items.append(Item(
            "sim-vc-queue", "Queueing delay per VC",
            f"Mean (left) and 99th-percentile (right) queueing delay of each VC's jobs, in {unit}.",
            figure=plots.bars(q, "vc_n", "value", f"queueing delay ({unit})", group="measure", order=["mean", "p99"],
                              base="jobs", cats=_cats(ran), xlabel=VC_N),
            data={"sim-vc-queue": _out(t.drop("vc_n"))}, checks=[*gone, *tiny]))
    u = t.drop_nulls("utilization")
    item = Item("sim-vc-utilization", "GPU utilisation per VC",
                "Busy GPU-seconds / (the VC's GPUs × its span from first submit to last end) in each run.")
    if u.height == 0:
        item.absent = ("no job ran in any VC of any run." if ran.height == 0 else "every VC's span from first submit "
                       "to last end is 0 s in every run (its jobs ran 0 s, all submitted in one second), so no "
                       "utilisation.")
    else:
        item.figure = plots.bars(u, "vc_n", "utilization", "utilisation", base="jobs", cats=_cats(u),
                                 xlabel=VC_N)
        item.data = {"sim-vc-utilization": _out(u.select("trace", "vc", "gpus", "jobs", "utilization"))}
        item.checks = [*gone, *tiny]
    s.items.append(item)
    return s


def _cats(t: pl.DataFrame) -> list[str]:
    """The VC labels in VC name order."""
    return t.select("vc", "vc_n").unique().sort("vc")["vc_n"].to_list()


# why a timeline is not drawn when every run fits in one hourly bin (a line needs two points)
ONE_BIN = "lasted less than an hour, one time bin: there is no course over time to draw."
TWO_BINS = ("lasted less than two hours, two time bins: a line between two hourly means would suggest a gradual "
            "change the run need not have had.")
TIMELINE = (("running_gpus", "GPUs running", "GPUs held by running jobs"),
            ("pending_gpus", "GPUs pending", "GPUs asked for by waiting jobs"),
            ("running_jobs", "jobs running", "running jobs"),
            ("pending_jobs", "jobs pending", "waiting jobs"))


def timeline_section(runs: list[SimRun]) -> Section:
    """Section 4: running and pending GPUs and jobs per VC over time, from each run's timeline."""
    s = Section("timeline", "4. Timeline", "Per VC over time: what ran and what waited, one line per run. Hours "
                "count from each run's first sample, so runs of the same trace line up.")
    with_tl = [r for r in runs if r.timeline is not None and r.timeline.height]
    missing = [r.name for r in runs if r.timeline is None]
    empty = [r.name for r in runs if r.timeline is not None and not r.timeline.height]  # (no job ran)
    if not with_tl:
        why = "no run folder holds a timeline.parquet" if not empty else \
            f"no job ran in {', '.join(empty)}, so its timeline is empty" + (
                f", and no timeline.parquet is in {', '.join(missing)}" if missing else "")
        for col, title, _ in TIMELINE:
            s.items.append(Item(f"sim-timeline-{col.replace('_', '-')}", f"{title} per VC", "", absent=f"{why}."))
        return s
    vcs = simruns.busiest_vcs(pl.concat([r.timeline.select("vc", "total_gpus", "idle_gpus", "pending_gpus")
                                         for r in with_tl if r.timeline is not None]), TIMELINE_VCS)
    t = _stack(with_tl, lambda r: simruns.hourly_timeline(r.timeline.filter(pl.col("vc").is_in(vcs)))
               if r.timeline is not None else pl.DataFrame())
    all_vcs = pl.concat([r.timeline.select("vc") for r in with_tl if r.timeline is not None])["vc"].n_unique()
    common = [f"The {len(vcs)} busiest of {all_vcs} VCs (most GPU time held or asked for)."] \
        if all_vcs > len(vcs) else []
    common += [f"No timeline.parquet in: {', '.join(missing)}."] if missing else []
    common += [f"No job ran in: {', '.join(empty)} (an empty timeline)."] if empty else []
    # two hourly means joined by a line suggest a gradual course the samples do not show
    bins = t["hour"].n_unique() if t.height else 0
    days = t.height > 0 and t["hour"].max() > 72
    x, xlabel = ("day", "days since the run's start") if days else ("hour", "hours since the run's start")
    t = t.with_columns((pl.col("hour") / 24).alias("day")) if t.height else t
    for col, title, what in TIMELINE:
        item_id = f"sim-timeline-{col.replace('_', '-')}"
        definition = f"Mean number of {what} per VC in each time bin (from the run's 60-second timeline samples)."
        if 0 < bins < 3:
            s.items.append(Item(item_id, f"{title} per VC", definition,
                                absent=f"every run {ONE_BIN if bins == 1 else TWO_BINS}"))
            continue
        # a VC where nothing ever ran or waited would draw a flat line at zero: named instead
        active: list[str] = (t.group_by("vc").agg(pl.col(col).max()).filter(pl.col(col) > 0)["vc"].to_list()
                             if t.height else [])
        if len(active) == 0:
            s.items.append(Item(item_id, f"{title} per VC", definition, absent=f"no {what} at any time in any run."))
            continue
        idle = sorted(set(vcs) - set(active))
        found = [*common, *([f"No {what} at any time in any run in: {', '.join(idle)}."] if idle else [])]
        part = t.filter(pl.col("vc").is_in(active))
        fig = plots.timeline(part, x, col, title, xlabel)
        s.items.append(Item(item_id, f"{title} per VC", definition, figure=fig,
                            data={item_id: _out(part.select("trace", "vc", "hour", col))}, checks=found))
    return s


def preemption_section(runs: list[SimRun]) -> Section:
    """Section 5: preemptions per VC and run."""
    s = Section("preemptions", "5. Preemptions", "How often running jobs were stopped to let others run.")
    t = _stack(runs, lambda r: simruns.preemptions_per_vc(r.jobs))
    definition = ("Preemptions per VC in each run (a job preempted twice counts twice); the number above each bar "
                  "is the VC's preempted jobs.")
    if t.height == 0 or t["preemptions"].sum() == 0:
        s.items.append(Item("sim-preemptions", "Preemptions per VC", definition,
                            absent="no run preempted any job (only preemptive policies, such as srtf, do)."))
        return s
    s.items.append(Item("sim-preemptions", "Preemptions per VC", definition,
                        figure=plots.bars(t, "vc", "preemptions", "preemptions", n="preempted_jobs", base="jobs"),
                        data={"sim-preemptions": _out(t)}))
    return s


def energy_section(runs: list[SimRun]) -> Section:
    """Section 7: energy of the runs that modelled power, and their busy and powered nodes over time."""
    s = Section("energy", "7. Energy", "What the nodes drew (simulate --power on|ces), and what powering idle nodes "
                "down saved and cost the jobs.")
    energy = {r.name: simruns.energy(r.summary) for r in runs}
    rows = [{"run": name, **e} for name, e in energy.items() if e is not None]
    definition = ("From each run's summary.json: energy drawn and the same run's with every node always on (kWh), "
                  "the share saved, the mean of powered (on or booting) nodes, busy over powered nodes, node "
                  "wake-ups, and the jobs that started on a node in the second it finished booting after waiting, "
                  "with their wait up to the boot time (boot delay, seconds).")
    if not rows:
        s.items.append(Item("sim-energy", "Energy per run", definition,
                            absent="no run modelled power (simulate --power on, or --power ces to power idle nodes "
                            "down)."))
        return s
    table = pl.DataFrame(rows)
    without = [name for name, e in energy.items() if e is None]
    s.items.append(Item("sim-energy", "Energy per run", definition, shown=table, data={"sim-energy": table},
                        checks=[f"No power modelled in: {', '.join(without)}."] if without else []))
    changed = [r for r in runs if r.timeline is not None and "nodes_on" in r.timeline.columns]
    item_id, title = "sim-powered-nodes", "Busy and powered nodes over time"
    tdef = ("The whole cluster's busy nodes (holding a job) and powered nodes (on or booting) over time, means of "
            "the 60-second timeline samples in each bin; one panel per run whose nodes changed state.")
    if not changed:
        s.items.append(Item(item_id, title, tdef, absent="no run powered a node off: every node stayed on."))
        return s
    t = pl.concat([simruns.powered_timeline(r.timeline, r.node_states).select(pl.lit(r.name).alias("run"), pl.all())
                   for r in changed if r.timeline is not None])
    if t["hour"].n_unique() < 2:
        s.items.append(Item(item_id, title, tdef, absent=f"every run that powered nodes off {ONE_BIN}",
                            data={item_id: t}))
        return s
    days = t["hour"].max() > 72
    x, xlabel = ("day", "days since the run's start") if days else ("hour", "hours since the run's start")
    long = (t.with_columns((pl.col("hour") / 24).alias("day"))
            .unpivot(index=["run", "hour", "day"], on=["busy", "powered"], variable_name="nodes", value_name="count")
            .with_columns(pl.col("nodes").cast(pl.Enum(["busy", "powered"]))))
    fig = plots.timeline(long, x, "count", "nodes", xlabel, panel="run", series="nodes")
    s.items.append(Item(item_id, title, tdef, figure=fig, data={item_id: t}))
    return s


def observed_section(runs: list[SimRun], trace: Trace | None) -> Section:
    """Section 6: simulated versus observed queueing per VC, for runs that replay the trace as it was."""
    s = Section("observed", "6. Simulated versus observed queueing",
                "How well the simulator reproduces the cluster: each VC's queueing delay in the trace against the "
                "same jobs' queueing delay in each run that replays the trace at its own arrival rate.")
    item_id, title = "sim-vs-observed", "Queueing per VC: simulated and observed"
    definition = ("Mean (left) and 90th-percentile (right) queueing delay per VC over the jobs present both in the "
                  "trace (observed: first start − submit) and in the run (matched by job id).")
    if trace is None:
        s.items.append(Item(item_id, title, definition, absent="no trace given (pass --trace TRACE)."))
        return s
    if trace.jobs.get_column("queue_delay").null_count() == trace.jobs.height:
        s.items.append(Item(item_id, title, definition, absent=f"{trace.name}: the trace records no start times, so "
                            "no observed queueing."))
        return s
    if why := queue_problem(trace.jobs, generated=trace.format == "synth"):
        s.items.append(Item(item_id, title, definition, absent=f"{trace.name}: {why}."))
        return s
    skipped = [f"{r.name} (load {r.summary.get('load')})" for r in runs if r.summary.get("load") not in (1, 1.0)]
    same = [r for r in runs if r.summary.get("load") in (1, 1.0)]
    note = (f"Runs at another arrival rate are not comparable with the observed waits: {', '.join(skipped)}."
            if skipped else "")
    foreign = {r.name: why for r in same if (why := simruns.foreign_job(r.jobs, trace.jobs))}
    if foreign:
        same = [r for r in same if r.name not in foreign]
        note = " ".join([*([note] if note else []),
                         *(f"Not compared: {name}: {why}." for name, why in foreign.items())])
    if not same:
        s.items.append(Item(item_id, title, definition, absent=note))
        return s
    t = _stack(same, lambda r: simruns.queue_vs_observed(r.jobs, trace.jobs))
    if t.height == 0:
        s.items.append(Item(item_id, title, definition, absent="no simulated job id is in the trace."))
        return s
    # the observed rows are the same for every run (same jobs): keep the first run's as "observed" (named apart
    # from a run whose folder is called so)
    obs = t.filter(pl.col("source") == "observed")
    first = obs["trace"].cast(pl.String)[0]
    names = [r.name for r in same]
    observed = next(o for o in ("observed", "observed (the trace)", f"observed ({trace.name})") if o not in names)
    series = pl.Enum([observed, *names])
    draw = pl.concat([obs.filter(pl.col("trace").cast(pl.String) == first).with_columns(
                          pl.lit(observed).alias("trace")),
                      t.filter(pl.col("source") == "simulated").with_columns(pl.col("trace").cast(pl.String))]
                     ).with_columns(pl.col("trace").cast(series))
    unit, size = time_unit(float(draw.select(pl.max_horizontal("mean", "p90").max()).item() or 0.0))
    draw = _with_n(draw)
    long = (draw.unpivot(index=["trace", "vc", "vc_n", "jobs"], on=["mean", "p90"], variable_name="measure")
            .with_columns(pl.col("value") / size))
    fig = plots.bars(long, "vc_n", "value", f"queueing delay ({unit})", group="measure", order=["mean", "p90"],
                     base="jobs", cats=_cats(draw), xlabel=VC_N)
    found = [note] if note else []
    found += [x for x in [tiny_groups(draw.filter(pl.col("trace") == observed), "vc", "jobs")] if x]
    s.items.append(Item(item_id, f"{title} ({trace.name})", f"{definition} In {unit}.", figure=fig,
                        shown=_out(t).sort("vc", "run", "source"), data={item_id: _out(t)}, checks=found))
    return s
