"""Data checks: what in a trace would make a figure mislead, said in one line each.

Queueing delays that are all zero or all one value carry no queueing; start = submit for
every job means the start times are placeholders (or a generated trace ran on an unlimited
cluster), so GPUs "in use" are really GPUs demanded; an hour in which the running jobs hold
more GPUs than their VC has means start/end times or the cluster spec are inconsistent; a
spec naming VCs without jobs would dilute utilisation, so capacity counts only the VCs that
have jobs; a group of fewer than ``MIN_GROUP`` jobs is too small for its share to mean much.
"""

from __future__ import annotations

import polars as pl

from dlcluster.analysis.load import hourly_running, last_recorded
from dlcluster.cluster import ClusterSpec
from dlcluster.text import count

MIN_GROUP = 30  # jobs: below this a share or a percentile of the group is mostly noise
TOLERANCE = 1e-6  # utilisation above 1 by rounding alone is not a finding


def _gpu(jobs: pl.DataFrame) -> pl.DataFrame:
    return jobs.filter(pl.col("gpu_num") > 0)


def placeholder_starts(jobs: pl.DataFrame) -> bool:
    """Whether every GPU job with a start time started the second it was submitted."""
    s = _gpu(jobs).filter(pl.col("start_time").is_not_null())
    return s.height > 0 and bool((s["start_time"] == s["submit_time"]).all())


def queue_problem(jobs: pl.DataFrame, generated: bool = False) -> str | None:
    """Why the GPU jobs' queueing delays show nothing (all zero or all one value), or ``None``.

    ``generated``: the trace was generated (its jobs start when submitted, as on an unlimited cluster).
    """
    q = _gpu(jobs).get_column("queue_delay").drop_nulls()
    if q.len() == 1:
        return "a single GPU job has a queueing delay, so there is no queueing to show"
    if q.len() < 2 or q.min() != q.max():
        return None
    if q.min() == 0:
        why = ("a generated trace: every job starts when submitted, as on an unlimited cluster" if generated
               else "start = submit for every job: the start times look like placeholders" if placeholder_starts(jobs)
               else "no job waited")
        return f"every queueing delay is 0 ({why}), so there is no queueing to show"
    return f"every queueing delay is {q.min():,} s, so there is no queueing to show"


def covered_spec(spec: ClusterSpec, jobs: pl.DataFrame) -> ClusterSpec:
    """The spec restricted to the VCs that have GPU jobs (the spec itself when none or all do)."""
    used = set(_gpu(jobs).get_column("vc").unique().to_list())
    keep = [vc for vc in spec.vcs if vc in used]
    if not keep or len(keep) == len(spec.vcs):
        return spec
    cpus = {vc: spec.cpus[vc] for vc in keep} if spec.cpus is not None else None
    return ClusterSpec({vc: spec.vcs[vc] for vc in keep}, cpus, spec.source)


def coverage_note(full: ClusterSpec, covered: ClusterSpec) -> str | None:
    """One line saying capacity was restricted to the VCs with jobs, or ``None`` when it was not."""
    if len(covered.vcs) == len(full.vcs):
        return None
    return (f"the trace has jobs in {len(covered.vcs)} of the spec's {len(full.vcs)} VCs, so capacity counts "
            f"those VCs only: {covered.total_gpus:,} of {full.total_gpus:,} GPUs")


def outside_note(spec: ClusterSpec, jobs: pl.DataFrame) -> str | None:
    """One line naming the trace's VCs with GPU jobs that ``spec`` lacks (their jobs count in no capacity), or
    ``None``."""
    outside = _gpu(jobs).filter(~pl.col("vc").is_in(list(spec.vcs)))
    if outside.height == 0:
        return None
    vcs = sorted(str(v) for v in outside["vc"].unique().to_list())
    named = ", ".join(vcs[:5]) + (f" and {len(vcs) - 5} more" if len(vcs) > 5 else "")
    one = outside.height == 1
    return (f"{count(outside.height, 'GPU job')} {'is' if one else 'are'} in {count(len(vcs), 'VC')} the spec lacks "
            f"({named}): {'it counts' if one else 'they count'} in no VC's capacity, utilisation or load")


def utilization_problem(jobs: pl.DataFrame, spec: ClusterSpec, generated: bool = False) -> str | None:
    """One line when running jobs held more GPUs than their VC has in some hour, or ``None``.

    ``generated``: the trace was generated, so its jobs ran as on an unlimited cluster.
    """
    caps = pl.DataFrame({"vc": list(spec.vcs), "gpus": [spec.gpus(v) for v in spec.vcs]})
    running = hourly_running(jobs.filter(pl.col("vc").is_in(caps["vc"].implode())), by_vc=True,
                             until=last_recorded(jobs))
    if running.height == 0:
        return None
    worst = (running.join(caps, on="vc").with_columns((pl.col("running_gpus") / pl.col("gpus")).alias("u"))
             .sort("u", "vc", "hour_start", descending=[True, False, False]).row(0, named=True))
    if worst["u"] <= 1 + TOLERANCE:
        return None
    hour = pl.from_epoch(pl.Series([worst["hour_start"]]), time_unit="s").dt.strftime("%Y-%m-%d %H:00 UTC")[0]
    why = ("a generated trace's jobs run as on an unlimited cluster" if generated
           else "start = submit for every job, so the start times look like placeholders" if placeholder_starts(jobs)
           else "the start/end times or the cluster spec are inconsistent")
    return (f"utilisation exceeds 1 (up to {worst['u']:.2f} in VC {worst['vc']}, hour of {hour}): {why}, "
            "so utilisation is not shown")


def tiny_groups(table: pl.DataFrame, label: str, count: str, unit: str = "jobs") -> str | None:
    """One line naming the groups of ``table`` with fewer than ``MIN_GROUP`` behind them, or ``None``."""
    small = table.filter(pl.col(count) < MIN_GROUP).unique(maintain_order=True, subset=[c for c in (
        "trace", label) if c in table.columns])
    if small.height == 0:
        return None
    named = [(f"{r['trace']}: " if "trace" in r and table["trace"].n_unique() > 1 else "")
             + f"{r[label]} (n = {r[count]})" for r in small.iter_rows(named=True)]
    return (f"Fewer than {MIN_GROUP} {unit} behind (hatched; too few for the share to mean much): "
            + ", ".join(named) + ".")
