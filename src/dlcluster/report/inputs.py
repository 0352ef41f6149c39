"""One trace as the report sees it, and the helper that runs an analysis over every trace."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import polars as pl
from matplotlib.figure import Figure

from dlcluster.analysis.common import has_outcomes, has_values
from dlcluster.cluster import ClusterSpec
from dlcluster.report.model import Item
from dlcluster.trace import Trace


@dataclass
class Input:
    """A trace with its display name and the cluster spec to use for it (may be unknown)."""

    name: str
    trace: Trace
    spec: ClusterSpec | None

    @property
    def jobs(self) -> pl.DataFrame:
        """The canonical job table."""
        return self.trace.jobs

    @property
    def total_gpus(self) -> int | None:
        """GPUs of the whole cluster, when a spec is known."""
        return self.spec.total_gpus if self.spec is not None else None

    def lacks(self, *needs: str) -> str | None:
        """Why this trace cannot feed an analysis needing ``needs``, or ``None`` if it can."""
        j = self.jobs
        # each check scans the whole table, so only the ones asked for are run
        reasons: dict[str, Callable[[], str | bool]] = {
            "jobs": lambda: j.height == 0 and "the trace has no jobs",
            "gpu_jobs": lambda: not (j["gpu_num"] > 0).any() and "the trace has no GPU jobs",
            "duration": lambda: not has_values(j, "duration") and "the trace records no run times",
            "queue": lambda: not has_values(j, "queue_delay")
            and "the trace records no start times, so no queueing delay",
            "start": lambda: not has_values(j.filter(pl.col("gpu_num") > 0), "start_time")
            and "the trace records no start/end times, so no running GPUs",
            "user": lambda: not has_values(j, "user") and "the trace has no user column",
            "status": lambda: not has_outcomes(j) and "the trace records no final status (completed/cancelled/failed)",
            "spec": lambda: self.spec is None and "no cluster spec is known (pass --cluster)",
            "spec_vcs": lambda: self.spec is not None and j.get_column("vc").is_in(list(self.spec.vcs)).not_().all()
            and f"none of its VCs is in the cluster spec (spec VCs: {_first(sorted(self.spec.vcs))})",
            "attempts": lambda: self.trace.attempts is None
            and "the trace has no attempts table (Philly raw folder only)",
            "utilization": lambda: self.trace.utilization is None
            and "no per-minute GPU utilisation file (Philly raw folder's cluster_gpu_util)",
        }
        for need in needs:
            if why := reasons[need]():
                return str(why)
        return None


def _first(names: list[str], n: int = 5) -> str:
    return ", ".join(names[:n]) + (f" and {len(names) - n} more" if len(names) > n else "")


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
                draw: Callable[[pl.DataFrame], Figure | None], shown: pl.DataFrame | None = None) -> Item:
    """An item from a combined table: drawn when it has rows, otherwise absent with the reasons."""
    if table.height == 0:
        return Item(id, title, definition, absent=" ".join(notes) or "no data.")
    fig = draw(table)
    if fig is None:
        return Item(id, title, definition, absent="no data to draw.")
    note = (" Not included: " + " ".join(notes)) if notes else ""
    return Item(id, title, definition + note, figure=fig, shown=shown, data={id: table})
