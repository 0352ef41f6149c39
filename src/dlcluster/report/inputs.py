"""One trace as the report sees it, and the helper that runs an analysis over every trace."""

from __future__ import annotations

import datetime
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property

import polars as pl
from matplotlib.figure import Figure

from dlcluster.analysis import checks
from dlcluster.analysis.common import gpu_seconds, has_outcomes, has_values
from dlcluster.analysis.load import still_running
from dlcluster.cluster import ClusterSpec
from dlcluster.errors import first_names
from dlcluster.report.model import Item
from dlcluster.trace import Trace

RELATIVE_BEFORE = 365 * 86_400  # a first submission before 1971: times counted from the trace's start, not a date


@dataclass
class Input:
    """A trace with its display name and the cluster spec to use for it (may be unknown).

    ``spec`` counts only the VCs that have jobs; ``coverage`` says so when that left VCs out.
    """

    name: str
    trace: Trace
    spec: ClusterSpec | None
    coverage: str | None = None

    @classmethod
    def of(cls, name: str, trace: Trace, spec: ClusterSpec | None) -> Input:
        """The input for ``trace`` with ``spec`` restricted to the VCs that have GPU jobs."""
        if spec is None:
            return cls(name, trace, None)
        covered = checks.covered_spec(spec, trace.jobs)
        notes = [n for n in (checks.coverage_note(spec, covered), checks.outside_note(spec, trace.jobs)) if n]
        return cls(name, trace, covered, "; ".join(notes) or None)

    @cached_property
    def queue_problem(self) -> str | None:
        """Why this trace's queueing delays show nothing, or ``None``."""
        return checks.queue_problem(self.jobs, generated=self.trace.format == "synth")

    @cached_property
    def util_problem(self) -> str | None:
        """Why this trace's utilisation is not to be trusted (above 1 in some hour), or ``None``."""
        if self.spec is None:
            return None
        return checks.utilization_problem(self.jobs, self.spec, generated=self.trace.format == "synth")

    @cached_property
    def still_running(self) -> str | None:
        """How many GPU jobs still running (a start, no end) hold their GPUs until the trace's last recorded time, or
        ``None``."""
        return running_note(self.jobs)

    @cached_property
    def demand(self) -> str | None:
        """Why GPUs "in use" are really GPUs demanded (every job started when submitted, or a generated trace, on no
        cluster in particular), or ``None``."""
        if checks.placeholder_starts(self.jobs):
            return "every job started when it was submitted"
        if self.trace.format == "synth":
            return "a generated trace, whose jobs start after a drawn queueing delay on no cluster in particular"
        return None

    @property
    def capacity(self) -> int | None:
        """GPUs to divide running GPUs by: the covered VCs' GPUs, unless utilisation exceeds 1 somewhere."""
        return None if self.util_problem else self.total_gpus

    @property
    def spec_vcs(self) -> list[str] | None:
        """The VCs of the spec (those with jobs), whose jobs alone count in utilisation and load; None without one."""
        return list(self.spec.vcs) if self.spec is not None else None

    @property
    def jobs(self) -> pl.DataFrame:
        """The canonical job table."""
        return self.trace.jobs

    @property
    def total_gpus(self) -> int | None:
        """GPUs of the whole cluster, when a spec is known."""
        return self.spec.total_gpus if self.spec is not None else None

    def _undated(self) -> str | None:
        """Why the trace's submit times show no pattern in calendar time, or ``None``."""
        submits = self.jobs["submit_time"]
        if (submits.min() or 0) < RELATIVE_BEFORE:  # (openb and SWF files without a start date count from their start)
            return ("its times count from the trace's own start, not from a date (1970-01-01 is its first day), so "
                    "it has no local hours, weekdays or months")
        if submits.n_unique() < 2:
            return "every job has the same submit time, so no pattern over time"
        return None

    def lacks(self, *needs: str) -> str | None:
        """Why this trace cannot feed an analysis needing ``needs``, or ``None`` if it can."""
        j = self.jobs
        # each check scans the whole table, so only the ones asked for are run
        reasons: dict[str, Callable[[], str | bool]] = {
            "jobs": lambda: j.height == 0 and "the trace has no jobs",
            "gpu_jobs": lambda: not (j["gpu_num"] > 0).any() and "the trace has no GPU jobs",
            # a distribution of one value is a single step: a sentence says more
            "jobs_2": lambda: j.height < 2 and "the trace has a single job, too few for a distribution",
            "gpu_jobs_2": lambda: (j["gpu_num"] > 0).sum() < 2
            and "the trace has a single GPU job, too few for a distribution",
            "users_2": lambda: j["user"].drop_nulls().n_unique() < 2
            and "every job belongs to one user, so there is no spread over users to show",
            "duration": lambda: not has_values(j, "duration") and "the trace records no run times",
            "gpu_time": lambda: not j.filter(pl.col("gpu_num") > 0).select(gpu_seconds().sum() > 0).item()
            and "every GPU job ran 0 s, so there is no GPU time to share",
            "queue": lambda: not has_values(j, "queue_delay")
            and "the trace records no start times, so no queueing delay",
            "real_queue": lambda: self.queue_problem or False,
            "util_ok": lambda: self.util_problem or False,
            "dates": lambda: self._undated() or False,
            "months": lambda: j.select(self.trace.local_times("submit_time").dt.strftime("%Y-%m").n_unique()).item() < 2
            and "the trace covers a single calendar month; trends need at least two",
            "start": lambda: not has_values(j.filter(pl.col("gpu_num") > 0), "start_time")
            and "the trace records no start/end times, so no running GPUs",
            "user": lambda: not has_values(j, "user") and "the trace records no user for any job",
            "status": lambda: not has_outcomes(j) and "the trace records no final status (completed/cancelled/failed)",
            "spec": lambda: self.spec is None and "no cluster spec is known (pass --cluster)",
            "spec_vcs": lambda: self.spec is not None and j.get_column("vc").is_in(list(self.spec.vcs)).not_().all()
            and f"none of its VCs is in the cluster spec (spec VCs: {first_names(sorted(self.spec.vcs))})",
            "attempts": lambda: self.trace.attempts is None
            and "the trace has no attempts table (Philly raw folder only)",
            "utilization": lambda: self.trace.utilization is None
            and "no per-minute GPU utilisation file (Philly raw folder's cluster_gpu_util)",
        }
        for need in needs:
            if why := reasons[need]():
                return str(why)
        return None


def running_note(jobs: pl.DataFrame) -> str | None:
    """One line saying how many GPU jobs still running count as holding their GPUs until when, or ``None``."""
    n, last = still_running(jobs)
    if not n:
        return None
    assert last is not None  # (a trace with a running job has a last recorded time)
    when = datetime.datetime.fromtimestamp(last, tz=datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    return (f"{n:,} GPU job(s) still running (a start, no end) count as holding their GPUs until the trace's last "
            f"recorded time, {when}")


def per_trace(inputs: list[Input], needs: tuple[str, ...],
              analysis: Callable[[Input], pl.DataFrame]) -> tuple[pl.DataFrame, list[str]]:
    """Run ``analysis`` on every trace that has what it ``needs``: one table with a leading ``trace`` column.

    Also returns one note per trace that was left out, saying why.
    """
    frames, notes = [], []
    # an Enum over every trace keeps each trace's colour the same in figures that miss some traces
    trace_type = pl.Enum([i.name for i in inputs])
    for inp in inputs:
        why = inp.lacks(*needs)
        if why:
            notes.append(f"{inp.name}: {why}.")
            continue
        df = analysis(inp)
        if df.height:
            frames.append(df.select(pl.lit(inp.name).cast(trace_type).alias("trace"), pl.all()))
        else:
            notes.append(f"{inp.name}: nothing to show (no qualifying jobs).")
    return (pl.concat(frames, how="vertical_relaxed") if frames else pl.DataFrame()), notes


def figure_item(id: str, title: str, definition: str, table: pl.DataFrame, notes: list[str],
                draw: Callable[[pl.DataFrame], Figure | None], shown: pl.DataFrame | None = None,
                findings: list[str] | None = None) -> Item:
    """An item from a combined table: drawn when it has rows, otherwise absent with the reasons.

    ``findings`` are the data checks' findings that hold for what is drawn, shown beside the figure.
    """
    if table.height == 0:
        return Item(id, title, definition, absent=" ".join(notes) or "no data.")
    fig = draw(table)
    if fig is None:
        return Item(id, title, definition, absent="no data to draw.")
    return Item(id, title, definition, figure=fig, shown=shown, data={id: table},
                checks=[*(findings or []), *(["Not included: " + " ".join(notes)] if notes else [])])


def single_values(t: pl.DataFrame, notes: list[str], x: str, what: str, unit: str = "",
                   by: str | None = None) -> tuple[pl.DataFrame, list[str]]:
    """A CDF table without its curves of a single value (one vertical step), and a note for each left out."""
    if t.height == 0:
        return t, notes
    keys = ["trace", *([by] if by else [])]
    one = (t.group_by(keys, maintain_order=True).agg(pl.col(x).n_unique().alias("n"), pl.col(x).first().alias("v"))
           .filter(pl.col("n") == 1))
    if one.height == 0:
        return t, notes
    for r in one.iter_rows(named=True):
        label = "" if by is None else f"{r[by]}-GPU jobs: " if by == "bucket" else f"{r[by]}: "
        notes = notes + [f"{r['trace']}: {label}every {what} is {r['v']:,g}{unit}, a single step: no CDF."]
    return t.join(one.select(keys), on=keys, how="anti"), notes
