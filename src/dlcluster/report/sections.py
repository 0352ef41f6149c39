"""The report's seven sections: which analysis feeds which figure, and how each metric is defined."""

from __future__ import annotations

from types import ModuleType

import polars as pl

from dlcluster.analysis import (
    cluster,
    failures,
    gpu_util,
    jobs,
    locality,
    queueing,
    summary,
    users,
)
from dlcluster.analysis.checks import tiny_groups
from dlcluster.analysis.common import OUTCOMES, SIZE_BUCKETS
from dlcluster.cluster import ClusterSpec
from dlcluster.report import plots
from dlcluster.report.inputs import Input, figure_item, per_trace, single_values
from dlcluster.report.model import Item, Section

BUCKETS_ALL = [*SIZE_BUCKETS, "all"]
HOURS = [str(h) for h in range(24)]


def _in_units(df: pl.DataFrame, cols: list[str], seconds: int) -> pl.DataFrame:
    return df.with_columns(pl.col(c) / seconds for c in cols)


N_NOTE = "The number above each bar is n, the jobs behind it."


def _findings(inputs: list[Input], coverage: bool = True, util: bool = True, demand: bool = False) -> list[str]:
    """The data checks' findings about the traces a capacity-based figure draws."""
    out = []
    for i in inputs:
        if coverage and i.coverage:
            out.append(f"{i.name}: {i.coverage}.")
        if i.still_running:
            out.append(f"{i.name}: {i.still_running}.")
        if util and i.util_problem:
            out.append(f"{i.name}: {i.util_problem}.")
        if demand and i.demand:
            out.append(f"{i.name}: {i.demand}, so its GPUs in use are the GPUs demanded (as on an unlimited cluster), "
                       "not the usage of a real one.")
    return out


def _with_base(df: pl.DataFrame, by: list[str], count: str = "jobs") -> pl.DataFrame:
    """``df`` with ``base``: the jobs of each share's group (the denominator a small group makes noisy)."""
    return df.with_columns(pl.col(count).sum().over(["trace", *by]).alias("base"))


def _doc_body(module: ModuleType) -> str:
    """An analysis module's docstring after its first paragraph, as one line of plain text: its definitions."""
    return (module.__doc__ or "").split("\n\n", 1)[1].replace("\n", " ").replace("``", "").strip()


def jobs_section(inputs: list[Input]) -> Section:
    """Section 1: run times, size mix, outcomes per size, queueing delay."""
    s = Section("jobs", "1. Jobs", "How long jobs run and wait, how large they are and how they end.")
    t, n = per_trace(inputs, ("jobs", "jobs_2", "duration"), lambda i: jobs.duration_cdf(i.jobs))
    t, n = single_values(t, n, "duration", "run time", " s", by="kind")
    s.items.append(figure_item(
        "jobs-duration-cdf", "Run time of GPU and CPU jobs",
        "Empirical CDF of run time (duration: end − start, or the sum of attempts) in seconds, log scale (zero "
        "drawn at 1 s); "
        "GPU jobs ask for at least one GPU, CPU jobs for none.", t, n,
        lambda d: plots.cdf(d, "duration", "run time (s)", group="kind", order=["GPU jobs", "CPU jobs"])))
    t, n = per_trace(inputs, ("gpu_jobs", "duration"), lambda i: jobs.size_mix(i.jobs))
    s.items.append(figure_item(
        "jobs-size-mix", "Job size mix by job count and by GPU time",
        "Share of GPU jobs requesting each GPU count (left) and share of all GPU time (GPUs × run time) "
        f"they consumed (right). {N_NOTE} Hatched bars rest on fewer than 30 jobs.", t, n,
        lambda d: plots.bars(d.unpivot(index=["trace", "gpu_num", "jobs"], on=["job_share", "gpu_time_share"],
                                       variable_name="measure").with_columns(pl.col("gpu_num").cast(pl.String)),
                             "gpu_num", "value", "share (%)", group="measure", order=["job_share", "gpu_time_share"],
                             percent=True, n="jobs"),
        findings=[f"{i.name}: {why}: the GPU-time panel leaves it out." for i in inputs
                  if not i.lacks("gpu_jobs", "duration") and (why := i.lacks("gpu_time"))]))
    t, n = per_trace(inputs, ("gpu_jobs", "status"), lambda i: jobs.outcome_by_size(i.jobs))
    t = _with_base(t, ["bucket"]) if t.height else t
    tiny = [x for x in [tiny_groups(t, "bucket", "base")] if x] if t.height else []
    for measure, label in (("job_share", "job count"), ("gpu_time_share", "GPU time")):
        tm, nm = t, n
        if measure == "gpu_time_share" and t.height:  # a trace without GPU time has no share of it
            zero = {i.name: why for i in inputs if not i.lacks("gpu_jobs", "status") and (why := i.lacks("gpu_time"))}
            tm = t.filter(~pl.col("trace").cast(pl.String).is_in(list(zero)))
            nm = n + [f"{name}: {why}." for name, why in zero.items()]
        s.items.append(figure_item(
            f"jobs-outcome-{measure.replace('_', '-')}", f"Final status by job size, share of {label}",
            f"For GPU jobs of each size bucket (1 / 2-4 / 5-8 / >8 GPUs, and all), the share of {label} that "
            f"ended completed, cancelled (killed) or failed; timeout and node failure count as failed. {N_NOTE}",
            tm, nm, lambda d, m=measure: plots.bars(d, "bucket", m, "share (%)", group="outcome", order=list(OUTCOMES),
                                                  cats=BUCKETS_ALL, percent=True, n="jobs", base="base"),
            findings=tiny))
    t, n = per_trace(inputs, ("gpu_jobs", "gpu_jobs_2", "duration"), lambda i: jobs.duration_cdf_by_size(i.jobs))
    t, n = single_values(t, n, "duration", "run time", " s", by="bucket")
    med, _ = per_trace(inputs, ("gpu_jobs", "duration"), lambda i: jobs.duration_by_size(i.jobs))
    shown = _in_units(med, ["p10", "p50", "p90", "mean"], 60).rename(
        {"p10": "p10 (min)", "p50": "median (min)", "p90": "p90 (min)", "mean": "mean (min)"}) if med.height else None
    item = figure_item(
        "jobs-duration-by-size", "Run time by job size",
        "CDF of run time of GPU jobs per GPU-count bucket (1 / 2-4 / 5-8 / >8, as in the Philly study; zero drawn "
        "at 1 s); the "
        "table gives percentiles in minutes.", t, n,
        lambda d: plots.cdf(d, "duration", "run time (s)", group="bucket", order=list(SIZE_BUCKETS)), shown)
    if med.height:
        if item.absent is not None:  # no curve to draw (one run time per bucket), but the percentiles are there
            item = Item(item.id, item.title, item.definition, shown=shown, checks=[f"No CDF: {item.absent}"])
        item.data["jobs-duration-by-size-percentiles"] = med.with_columns(pl.col("bucket").cast(pl.String))
    s.items.append(item)
    g, n = per_trace(inputs, ("gpu_jobs", "duration"), lambda i: jobs.median_duration_by_gpus(i.jobs))
    median_item = _table_item("jobs-median-by-gpus", "Median run time by exact GPU count",
                              "Median run time in minutes of GPU jobs with exactly this many GPUs.", g, n)
    if g.height:
        median_item.shown = (g.with_columns((pl.col("median") / 60).alias("median (min)")).drop("median")
                             .pivot(on="trace", index="gpu_num", values="median (min)", sort_columns=False)
                             .sort("gpu_num"))
    s.items.append(median_item)
    t, n = per_trace(inputs, ("gpu_jobs", "queue", "real_queue"), lambda i: jobs.queue_cdf_by_size(i.jobs))
    t, n = single_values(t, n, "queue_delay", "queueing delay", " s", by="bucket")
    s.items.append(figure_item(
        "jobs-queue-by-size", "Queueing delay by job size",
        "CDF of queueing delay (first start − submit, seconds; zero waits drawn at 1 s on the log axis) of GPU "
        "jobs per GPU-count bucket.", t, n,
        lambda d: plots.cdf(d, "queue_delay", "queueing delay (s)", group="bucket", order=list(SIZE_BUCKETS))))
    t, n = per_trace(inputs, ("gpu_jobs", "queue", "real_queue"), lambda i: jobs.queue_cdf_by_vc(i.jobs))
    t, n = single_values(t, n, "queue_delay", "queueing delay", " s", by="vc")
    s.items.append(figure_item(
        "jobs-queue-by-vc", "Queueing delay by virtual cluster",
        "CDF of queueing delay of GPU jobs in each of the 8 VCs with the most GPU jobs; VC names differ between "
        "traces, so each trace has its own panel and colours mark VCs here.", t, n,
        lambda d: plots.cdf(d, "queue_delay", "queueing delay (s)", group="trace", series="vc")))
    return s


def cluster_section(inputs: list[Input]) -> Section:
    """Section 2: daily, weekly and monthly patterns in local time; VC utilisation; wait versus load."""
    zones = "; ".join(f"{i.name}: {i.trace.timezone}" for i in inputs)
    s = Section("cluster", "2. Cluster", "When work arrives and how busy the GPUs are, in each trace's local "
                f"time zone, daylight saving applied ({zones}).")
    # when every trace's jobs started as submitted, "in use" would claim a usage no cluster had
    use = "demanded" if inputs and all(i.demand for i in inputs) else "in use"
    ys = [("submissions", "jobs submitted per hour"), ("gpu_submissions", "GPU jobs submitted per hour"),
          ("running_gpus", f"GPUs {use} (mean)"), ("utilization", f"GPU utilisation ({use} / cluster GPUs)")]
    running = ("Running GPUs are the exact time average of the GPUs held by started jobs, over the hours from "
               "the first to the last submission (jobs still draining afterwards would dilute the means); "
               "utilisation divides the GPUs held by the jobs of the spec's VCs that have jobs by those VCs' GPUs "
               "(shown only when a spec is known and no hour exceeds 1).")
    found = _findings(inputs, demand=True)
    monthly_ys = [("jobs", "jobs submitted"), ("gpu_hours_submitted", "GPU-hours submitted"),
                  ("running_gpus", f"GPUs {use} (mean)"), ("utilization", "GPU utilisation")]
    if inputs and all(i.lacks("gpu_jobs") for i in inputs):
        # a panel of GPU submissions would be a flat line at 0: said instead
        ys = [y for y in ys if y[0] != "gpu_submissions"]
        monthly_ys = [y for y in monthly_ys if y[0] != "gpu_hours_submitted"]
        found = [*found, "No trace has GPU jobs, so only all jobs' submissions are drawn (no GPU submissions, GPU-hours "
                 "or GPUs in use)."]
    t, n = per_trace(inputs, ("jobs", "dates"),
                     lambda i: cluster.daily_pattern(i.jobs, i.trace.local_times, i.capacity, i.spec_vcs))
    s.items.append(figure_item(
        "cluster-daily", "Hour-of-day pattern",
        f"Per local hour of day, the mean over the trace's days of jobs submitted in that hour. {running}", t, n,
        lambda d: plots.lines(d.with_columns(pl.col("hour").cast(pl.String)), "hour", ys, "local hour",
                              xticks=HOURS), findings=found))
    t, n = per_trace(inputs, ("jobs", "dates"),
                     lambda i: cluster.weekly_pattern(i.jobs, i.trace.local_times, i.capacity, i.spec_vcs))
    t, n = _whole_weeks(t, n)
    s.items.append(figure_item(
        "cluster-weekly", "Day-of-week pattern",
        f"Per local day of week, the hourly means of submissions and GPUs in use. {running}", t, n,
        lambda d: plots.lines(d, "day", ys, "local day", xticks=list(cluster.WEEKDAYS)), findings=found))
    t, n = per_trace(inputs, ("jobs", "dates", "months"),
                     lambda i: cluster.monthly_trend(i.jobs, i.trace.local_times, i.capacity, i.spec_vcs))
    # traces from different periods are compared month by month of their own span, not on one calendar
    same_months = t.height == 0 or t.group_by("trace").agg(pl.col("month").sort())["month"].n_unique() == 1
    x, xlabel = ("month", "month") if same_months else ("month_index", "month of the trace (1 = its first)")
    months = [str(m) for m in sorted(t.get_column(x).unique().to_list())] if t.height else []
    s.items.append(figure_item(
        "cluster-monthly", "Monthly trends",
        "Per local calendar month: jobs submitted, GPU-hours of the GPU jobs submitted that month, and the "
        f"hourly mean of GPUs in use. {running} Traces covering different months are aligned on their own first "
        "month.", t, n,
        lambda d: plots.lines(d.with_columns(pl.col(x).cast(pl.String)), x, monthly_ys, xlabel, xticks=months),
        findings=found))
    t, n = per_trace(inputs, ("gpu_jobs", "start", "spec", "spec_vcs", "util_ok"),
                     lambda i: cluster.vc_utilization(i.jobs, i.spec))
    s.items.append(figure_item(
        "cluster-vc-utilization", "Utilisation per virtual cluster",
        "For each VC of the cluster spec, the distribution over the trace's hours (up to the last submission) of "
        "the VC's utilisation: mean "
        "GPUs held by its running jobs in the hour / the VC's GPUs. Boxes: p25-p75, line: median, triangle: "
        "mean, whiskers: p5-p95. VCs of the spec without jobs are left out.", t, n,
        lambda d: plots.boxes(d, "utilisation"), findings=_findings(inputs, util=False, demand=True)))
    t, n = per_trace(inputs, ("gpu_jobs", "queue", "start", "real_queue", "util_ok"),
                     lambda i: cluster.queue_vs_load(i.jobs, i.total_gpus, vcs=i.spec_vcs))
    s.items.append(figure_item(
        "cluster-queue-vs-load", "Who waits: queueing delay versus cluster load",
        "GPU jobs grouped by the cluster load at their submission (GPUs held by the other running jobs / cluster "
        "GPUs from the spec, counting the jobs of its VCs only, or / the trace's peak GPUs in use when no spec is "
        "known), in tenths; per group the "
        "mean and 90th percentile queueing delay (minutes) and the share of jobs that waited at all.",
        t, n, lambda d: plots.lines(_in_units(d, ["mean", "p90"], 60), "load_lo",
                                    [("mean", "mean queueing delay (min)"), ("p90", "p90 queueing delay (min)"),
                                     ("waited", "share of jobs that waited")], "load at submission",
                                    xlim=(-0.02, 0.92)),
        findings=_findings(inputs, util=False)))
    return s


def _whole_weeks(t: pl.DataFrame, notes: list[str]) -> tuple[pl.DataFrame, list[str]]:
    """The day-of-week table without the traces that miss some weekday, and a note for each left out: a line
    through the weekdays without data would read as a value for them (as monthly trends need two months)."""
    if t.height == 0:
        return t, notes
    days = t.group_by("trace", maintain_order=True).agg(pl.col("day"))
    short = [(str(r["trace"]), r["day"]) for r in days.iter_rows(named=True) if len(r["day"]) < len(cluster.WEEKDAYS)]
    notes = notes + [f"{name}: the trace covers {len(d)} of the 7 weekdays ({', '.join(d)}), less than a week; a "
                     "day-of-week pattern needs every weekday." for name, d in short]
    return t.filter(~pl.col("trace").cast(pl.String).is_in([name for name, _ in short])), notes


def users_section(inputs: list[Input]) -> Section:
    """Section 3: concentration of use, per-user waiting, per-user completion."""
    s = Section("users", "3. Users", "How few users consume most of the cluster, and how their experience varies.")
    t, n = per_trace(inputs, ("user", "users_2", "duration"), lambda i: users.resource_concentration(i.jobs))
    s.items.append(figure_item(
        "users-concentration", "Share of resources used by the top users",
        "Users ranked by their total use (largest first): x = top fraction of users, y = their share of the GPU "
        "time (GPUs × run time) or CPU time (CPU cores × run time, jobs with a CPU count) of the jobs that have a "
        "user.", t, n,
        lambda d: plots.cdf(d.rename({"resource_share": "p"}), "user_share", "fraction of users (largest first)",
                            group="resource", order=["GPU time", "CPU time"], logx=False),
        findings=[f"{i.name}: jobs without a user used {share:.1%} of its {resource}, which the curves leave out."
                  for i in inputs if not i.lacks("user") for resource, share in users.without_user(i.jobs).items()]))
    t, n = per_trace(inputs, ("user", "users_2", "gpu_jobs", "queue", "real_queue"),
                    lambda i: users.user_queue_cdf(i.jobs))
    t, n = single_values(t, n, "mean_queue_delay", "user's mean queueing delay", " s")
    s.items.append(figure_item(
        "users-queue", "Queueing delay per user",
        "CDF over users of each user's mean queueing delay of GPU jobs (seconds; zero drawn at 1 s).", t, n,
        lambda d: plots.cdf(d, "mean_queue_delay", "mean queueing delay (s)")))
    t, n = per_trace(inputs, ("user", "users_2", "gpu_jobs", "status"), lambda i: users.user_completion_cdf(i.jobs))
    t, n = single_values(t, n, "completion_ratio", "user's completion ratio")
    s.items.append(figure_item(
        "users-completion", "Completion ratio per user",
        "CDF over users of the share of their finished GPU jobs that completed (finished = completed, cancelled "
        "or failed; timeout and node failure count as failed).", t, n,
        lambda d: plots.cdf(d, "completion_ratio", "completion ratio", logx=False)))
    return s


def locality_section(inputs: list[Input], memory_limit: str) -> Section:
    """Section 4: servers spanned versus wait, GPU utilisation by size/status and by servers spanned."""
    s = Section("locality", "4. Locality and GPU utilisation",
                "Philly-style analyses that need the attempts table (servers of each attempt) and, for "
                "utilisation, the per-minute GPU utilisation file of a raw Philly folder.")
    t, n = per_trace(inputs, ("gpu_jobs", "queue", "real_queue", "attempts"),
                     lambda i: locality.servers_vs_queue(i.trace.attempts, i.jobs))
    s.items.append(figure_item(
        "locality-servers-vs-queue", "Servers spanned versus queueing delay (jobs with >= 5 GPUs)",
        "Jobs with at least 5 GPUs in their first attempt, grouped by the number of distinct servers that "
        "attempt used; median queueing delay in minutes per group (Philly Figure 4: relaxing locality after a "
        f"wait spreads jobs over more servers). {N_NOTE}", t, n,
        lambda d: plots.bars(_in_units(d, ["p50", "p90", "mean"], 60).with_columns(
            pl.col("servers_spanned").cast(pl.String)), "servers_spanned", "p50", "median queueing delay (min)",
            group="bucket", order=list(SIZE_BUCKETS), n="jobs"),
        findings=[x for x in [tiny_groups(t.with_columns(
            pl.format("{} GPUs on {} servers", "bucket", "servers_spanned").alias("group")), "group", "jobs")] if x]
        if t.height else []))
    utils = {}
    for inp in inputs:
        if not inp.lacks("gpu_jobs", "attempts", "utilization"):
            utils[inp.name] = gpu_util.job_gpu_utilization(inp.trace.attempts, inp.trace.utilization, memory_limit)
    t3, n3 = per_trace(inputs, ("gpu_jobs", "attempts", "utilization"),
                       lambda i: gpu_util.utilization_by_size_status(utils[i.name], i.trace.attempts, i.jobs))
    s.items.append(_table_item(
        "locality-util-size-status", "Mean GPU utilisation by job size and final status (Philly Table 3)",
        "Mean over jobs of each job's mean GPU utilisation (%), by GPUs of its first attempt and final status. "
        "A job's utilisation averages every non-NA per-minute sample of the GPUs of the servers it ran on "
        "during its attempts (the attempts table names servers, not GPUs, so jobs sharing a server see its "
        "other GPUs too).", t3, n3))
    t5, n5 = per_trace(inputs, ("gpu_jobs", "attempts", "utilization"),
                       lambda i: gpu_util.utilization_by_servers(utils[i.name], i.trace.attempts))
    s.items.append(_table_item(
        "locality-util-16gpu-servers", "GPU utilisation of 16-GPU jobs by servers spanned (Philly Table 5)",
        "Mean and percentiles over 16-GPU jobs of their mean GPU utilisation (%), by the number of servers "
        "their first attempt spanned.", t5, n5))
    return s


def _table_item(id: str, title: str, definition: str, t: pl.DataFrame, notes: list[str]) -> Item:
    if t.height == 0:
        return Item(id, title, definition, absent=" ".join(notes) or "no data.")
    # as figures say which traces are missing
    return Item(id, title, definition, shown=t, data={id: t},
                checks=["Not included: " + " ".join(notes)] if notes else [])


def failures_section(inputs: list[Input]) -> Section:
    """Section 5: attempts, time to failure, lost GPU time, early versus late failures, repeat failures."""
    s = Section("failures", "5. Failures",
                "Proxies for the Philly study's failure analysis built from final status and attempts; failed "
                "includes timeout and node failure.")
    t, n = per_trace(inputs, ("gpu_jobs", "attempts"),
                     lambda i: failures.attempts_per_job(i.trace.attempts, i.jobs))
    s.items.append(figure_item(
        "failures-attempts", "Scheduling attempts per job",
        "Jobs by number of scheduling attempts (10 = ten or more), per final status.", t, n,
        lambda d: plots.bars(d.with_columns(pl.col("attempts").cast(pl.String)), "attempts", "jobs", "jobs",
                             group="outcome", order=[*OUTCOMES, "other"], logy=True)))
    t, n = per_trace(inputs, ("gpu_jobs", "status", "duration"), lambda i: failures.time_to_failure_cdf(i.jobs))
    t, n = single_values(t, n, "duration", "run time to failure", " s", by="bucket")
    s.items.append(figure_item(
        "failures-time-to-failure", "Run time before failure",
        "CDF of run time (seconds; zero drawn at 1 s) of failed GPU jobs, per GPU-count bucket: user and "
        "programming errors fail "
        "within minutes, infrastructure failures late.", t, n,
        lambda d: plots.cdf(d, "duration", "run time to failure (s)", group="bucket", order=list(SIZE_BUCKETS))))
    t, n = per_trace(inputs, ("gpu_jobs", "status", "duration", "gpu_time"), lambda i: failures.lost_gpu_time(i.jobs))
    s.items.append(figure_item(
        "failures-lost-gpu-time", "GPU time by final status",
        "Share of all GPU time (GPUs × run time) spent in jobs that completed, were cancelled (killed) or "
        f"failed; the last two are GPU time lost. {N_NOTE}", t, n,
        lambda d: plots.bars(d, "outcome", "share", "share of GPU time (%)", cats=[*OUTCOMES, "other"],
                             percent=True, n="jobs")))
    t, n = per_trace(inputs, ("gpu_jobs", "status", "duration"), lambda i: failures.early_late_failures(i.jobs))
    t = _with_base(t, ["bucket"]) if t.height else t
    s.items.append(figure_item(
        "failures-early-late", "Early versus late failures by job size",
        f"Failed GPU jobs per size bucket: early = failed within {failures.EARLY // 60} minutes of run time "
        f"(typically user or programming errors), late = after that; share of the bucket's failures. {N_NOTE}",
        t, n, lambda d: plots.bars(d, "bucket", "share", "share of failures (%)", group="when",
                                   order=["early", "late"], cats=list(SIZE_BUCKETS), percent=True, n="jobs",
                                   base="base"),
        findings=[x for x in [tiny_groups(t, "bucket", "base", "failed jobs")] if x] if t.height else []))
    t, n = per_trace(inputs, ("user", "users_2", "status"), lambda i: failures.repeat_failures(i.jobs))
    t, n = single_values(t, n, "failed_jobs", "failing user's count of failed jobs")
    s.items.append(figure_item(
        "failures-repeat", "Repeat failures per user",
        "Users by how many of their jobs failed (100 = 100 or more), as a cumulative share of all failures: "
        "failures concentrate on users who fail repeatedly.", t, n,
        lambda d: plots.cdf(d.with_columns(pl.col("failures_share").cum_sum().over("trace").alias("p")),
                            "failed_jobs", "failed jobs per user")))
    return s


def queueing_section(sim: pl.DataFrame | None, spec: ClusterSpec | None, sim_name: str,
                     placements: pl.DataFrame | None = None, summary: dict | None = None) -> Section:
    """Section 6: fair-share, fragmentation and queue-order waiting in a simulated run (Philly Table 2)."""
    s = Section("queueing", "6. Queueing decomposition (simulated run)",
                "Why jobs waited in a simulated run: VC quota exhausted (fair-share), GPUs free but no placement "
                "with the required locality (fragmentation), or a placement existed but other jobs went first "
                "(queue order; counted as fragmentation when the run's placements.parquet is not beside its "
                "jobs.parquet).")
    definition = _doc_body(queueing).replace("*", "")  # its *emphasis* is reStructuredText, not text
    item_id, title = "queueing-decomposition", "Waiting jobs by cause and size (Philly Table 2)"
    if sim is None:
        s.items.append(Item(item_id, title, definition, absent="no simulator output given (pass --sim-jobs)."))
        return s
    if spec is None:
        s.items.append(Item(item_id, title, definition,
                            absent="the decomposition needs each VC's GPUs: pass --cluster."))
        return s
    if sim.height and not sim["vc"].cast(pl.String).is_in(list(spec.vcs)).any():  # (another cluster's run)
        s.items.append(Item(item_id, title, definition,
                            absent="none of the simulated run's VCs is in the cluster spec: pass --cluster with the "
                                   "spec the run was simulated on."))
        return s
    placement = (summary or {}).get("placement")
    compat = bool((summary or {}).get("compat"))
    table = queueing.decomposition_table(queueing.wait_causes(sim, spec, placements, placement, compat)).select(
        pl.lit(sim_name).alias("trace"), pl.all())
    if table["jobs"].sum() == 0:
        s.items.append(Item(item_id, title, definition, absent="no job waited in the simulated run."))
        return s
    table = _with_base(table, ["bucket"])
    found = [_rule_finding(placement, compat, placements is not None)]
    found += [x for x in [tiny_groups(table.filter(pl.col("base") > 0), "bucket", "base", "waiting jobs")] if x]
    fig = plots.bars(table.with_columns(pl.col("share").fill_null(0.0)), "bucket", "share", "share of waiting jobs (%)",
                     group="cause", order=table["cause"].unique(maintain_order=True).to_list(),
                     cats=list(SIZE_BUCKETS), percent=True, n="jobs", base="base")
    s.items.append(Item(item_id, title, f"{definition} {N_NOTE}", figure=fig, shown=table.drop("base"),
                        data={item_id: table.drop("base")}, checks=found))
    return s


def _rule_finding(placement: str | None, compat: bool, split: bool) -> str:
    """Which placement rule judged "could the job have been placed?" in the decomposition."""
    if not split:
        return "No placements.parquet beside the run's jobs: queue order is counted as fragmentation."
    if placement is None:
        return ("The run's summary.json is not beside its jobs: placement judged by the Helios artifact's "
                "consolidate rule.")
    if queueing.placement_rule(placement, compat) is None:
        return (f"The run's placement {placement!r} is not one the decomposition knows: queue order is counted "
                "as fragmentation.")
    return f"Placement judged by the run's own rule: {placement}{' (compatibility mode)' if compat else ''}."


def summary_section(inputs: list[Input]) -> Section:
    """Section 7: the Helios cluster-summary row of every trace."""
    s = Section("summary", "7. Summary table", "One row per trace in the layout of the Helios artifact's "
                "cluster_summary.csv.")
    rows = pl.concat([summary.cluster_summary(i.jobs, i.name, i.total_gpus) for i in inputs])
    definition = _doc_body(summary)
    s.items.append(Item("summary-table", "Cluster summary", definition,
                        shown=rows.drop("id").cast(pl.Float64).transpose(
                            include_header=True, header_name="column", column_names=rows["id"].to_list()),
                        data={"cluster_summary": rows}))
    return s
