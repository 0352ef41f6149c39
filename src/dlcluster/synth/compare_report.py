"""The ``synth compare`` report: the fidelity and downstream tables with figures, as one offline HTML page."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import polars as pl
from matplotlib.figure import Figure

from dlcluster.report.html import write_report
from dlcluster.report.model import Item, Section
from dlcluster.report.plots import PANEL_H, PANEL_W, colour
from dlcluster.synth.compare import daily_counts, size_medians
from dlcluster.synth.downstream import not_simulated
from dlcluster.trace import Trace

NAMES = ("real", "generated")


def _figure(width: float = 1.6) -> tuple[Figure, object]:
    fig = Figure(figsize=(PANEL_W * width, PANEL_H * 1.1), layout="constrained")
    return fig, fig.subplots()


def _cdf(values: list[np.ndarray], xlabel: str) -> Figure:
    fig, ax = _figure()
    for i, (name, x) in enumerate(zip(NAMES, values, strict=True)):
        x = np.sort(x)
        ax.step(np.maximum(x, 1), np.arange(1, len(x) + 1) / len(x), where="post", color=colour(i), label=name)
    ax.set_xscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel("share of jobs ≤ x")
    ax.legend()
    return fig


def _bars(labels: list[str], series: list[list[float]], ylabel: str, log: bool = False) -> Figure | None:
    """Grouped bars, one group per label; None where a log scale has no positive value to draw."""
    if log and not any(v is not None and math.isfinite(v) and v > 0 for ys in series for v in ys):
        return None
    fig, ax = _figure(max(1.6, len(labels) * 0.25))
    pos = np.arange(len(labels))
    for i, (name, ys) in enumerate(zip(NAMES, series, strict=True)):
        ax.bar(pos + (i - 0.5) * 0.4, ys, width=0.4, color=colour(i), label=name)
    ax.set_xticks(pos, labels, rotation=30 if len(labels) > 8 else 0)
    ax.set_ylabel(ylabel)
    if log:
        ax.set_yscale("log")
    ax.legend()
    return fig


def _daily(traces: tuple[Trace, Trace]) -> Figure:
    fig, ax = _figure(2.2)
    for i, (name, t) in enumerate(zip(NAMES, traces, strict=True)):
        counts = daily_counts(t)
        ax.plot(np.arange(len(counts)), counts, color=colour(i), label=name, drawstyle="steps-mid")
    ax.set_xlabel("day of the window")
    ax.set_ylabel("submissions")
    ax.legend()
    return fig


def sections(real: Trace, generated: Trace, table: pl.DataFrame, queueing: pl.DataFrame | None) -> list[Section]:
    """The report's sections: the tables, the marginals, the arrival process and the queueing."""
    traces = (real, generated)
    mixes = [t.jobs["gpu_num"].value_counts().with_columns((pl.col("count") / t.jobs.height).alias("share"))
             for t in traces]
    sizes = sorted(set(mixes[0]["gpu_num"].to_list()) | set(mixes[1]["gpu_num"].to_list()))
    shares = [[dict(m.select("gpu_num", "share").iter_rows()).get(g, 0.0) for g in sizes] for m in mixes]
    big = [int(r["metric"].rsplit(" ", 2)[1]) for r in table.iter_rows(named=True) if r["metric"].endswith(" GPU")]
    medians = [size_medians(t) for t in traces]
    size_figure = _bars([str(g) for g in big], [[m.get(g, 0.0) for g in big] for m in medians], "median run time (s)",
                        log=True)
    fidelity = Section("fidelity", "Fidelity table", "Each statistic of the real and the generated trace; the relative "
                       "error is generated / real − 1 (distances are of the generated trace from the real one).", [
                           Item("fidelity-table", "Fidelity", "Statistics as defined in docs/synth.md "
                                "(synth compare).", shown=table, data={"fidelity": table})])
    marginals = Section("marginals", "Marginals", "Run time and GPU count of every job.", [
        Item("durations", "Run-time distribution", "Cumulative share of jobs with run time ≤ x seconds "
             "(log scale; 0 s drawn at 1 s).",
             figure=_cdf([t.jobs["duration"].drop_nulls().to_numpy() for t in traces], "run time (s)")),
        Item("gpu-mix", "GPU-count mix", "Share of jobs per GPU count (log scale).",
             figure=_bars([str(g) for g in sizes], shares, "share of jobs", log=True)),
        Item("size-medians", "Median run time per GPU count", "Median run time of the jobs of each GPU count "
             "with at least 200 real jobs.",
             figure=size_figure, absent=None if size_figure else "no GPU count has 200 real jobs"),
    ])
    arrivals = Section("arrivals", "Arrival process", "When jobs are submitted: gaps between submissions and "
                       "submissions per day.", [
        Item("gaps", "Inter-arrival gaps", "Cumulative share of gaps between consecutive submissions ≤ x seconds "
             "(log scale; same-second gaps drawn at 1 s).",
             figure=_cdf([np.diff(np.sort(t.jobs["submit_time"].to_numpy())) for t in traces], "gap (s)")),
        Item("daily", "Submissions per day", "Jobs submitted on each day from the window's first local midnight.",
             figure=_daily(traces)),
    ])
    if queueing is None:
        downstream_items = [Item("queueing", "Queueing", "Simulated queueing delay.",
                                 absent="no cluster: give --cluster or traces that carry VC sizes")]
    else:
        labels = [f"{r['policy']} ×{r['load']:g} {r['statistic']}" for r in queueing.iter_rows(named=True)]
        figure = _bars(labels, [queueing["real_s"].to_list(), queueing["generated_s"].to_list()],
                       "queueing delay (s)", log=True)
        downstream_items = [Item("queueing", "Simulated queueing delay",
                                 "Mean and 99th percentile of queueing delay (start − submission) when each trace's "
                                 "jobs are simulated on the same cluster with inter-arrival times divided by the load."
                                 + (f" Note: {why}." if (why := not_simulated(queueing)) else ""),
                                 figure=figure, absent=None if figure else "no job of either trace waited (or none "
                                 "needs a GPU): every delay in the table is 0 s or undefined",
                                 shown=queueing, data={"queueing": queueing})]
    downstream = Section("downstream", "Downstream: queueing", "FIFO and SJF on the same cluster at two loads.",
                         downstream_items)
    return [fidelity, marginals, arrivals, downstream]


def write(out: Path, real: Trace, generated: Trace, table: pl.DataFrame, queueing: pl.DataFrame | None,
          names: tuple[str, str]) -> Path:
    """Write ``index.html`` with inlined figures (and the figures and tables as files) under ``out``."""
    return write_report(sections(real, generated, table, queueing), out, "Synthetic trace fidelity",
                        [f"real: {names[0]} ({real.jobs.height:,} jobs)",
                         f"generated: {names[1]} ({generated.jobs.height:,} jobs)"])
