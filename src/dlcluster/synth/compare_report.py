"""The ``synth compare`` report: the fidelity and downstream tables with figures, as one offline HTML page."""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl
from matplotlib.figure import Figure

from dlcluster.report.html import write_report
from dlcluster.report.model import Item, Section
from dlcluster.report.plots import PANEL_H, PANEL_W, colour
from dlcluster.synth.compare import daily_counts, overlap, size_medians
from dlcluster.synth.downstream import not_simulated
from dlcluster.synth.fit import window
from dlcluster.trace import Trace

NAMES = ("real", "generated")
CDF_POINTS = 2_048  # points of a trace's cumulative distribution kept for drawing it


def _ecdf(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Points (x, share of values ≤ x) of the empirical distribution of ``values``: all of them, or
    :data:`CDF_POINTS` evenly spaced by rank (the same curve at a figure's resolution)."""
    x = np.sort(values)
    at = np.arange(len(x)) if len(x) <= CDF_POINTS else np.unique(np.linspace(0, len(x) - 1, CDF_POINTS).round()
                                                                   .astype(np.int64))
    return x[at], (at + 1) / max(len(x), 1)


@dataclass(frozen=True)
class Summary:
    """What the report draws of one trace: a few kilobytes, so the report of many generated traces needs none of
    them in memory."""

    jobs: int
    durations: tuple[np.ndarray, np.ndarray]  # (run time, share of jobs ≤ it)
    gaps: tuple[np.ndarray, np.ndarray]  # (gap between consecutive submissions, share of gaps ≤ it)
    gpu_mix: dict[int, float]  # share of jobs per GPU count
    size_medians: dict[int, float]
    daily: np.ndarray  # submissions per day
    first_day: int  # UTC epoch of the local midnight the days count from


def summarize(trace: Trace) -> Summary:
    """The :class:`Summary` of ``trace``."""
    mix = trace.jobs["gpu_num"].value_counts()
    return Summary(trace.jobs.height, _ecdf(trace.jobs["duration"].drop_nulls().to_numpy()),
                   _ecdf(np.diff(np.sort(trace.jobs["submit_time"].drop_nulls().to_numpy()))),
                   {int(g): n / trace.jobs.height for g, n in mix.iter_rows()}, size_medians(trace),
                   daily_counts(trace), window(trace.jobs["submit_time"].drop_nulls(), trace.timezone)[0])


def _figure(width: float = 1.6) -> tuple[Figure, object]:
    fig = Figure(figsize=(PANEL_W * width, PANEL_H * 1.1), layout="constrained")
    return fig, fig.subplots()


def _generated_label(n: int) -> str:
    return "generated" if n == 1 else f"generated ({n} traces)"


def _cdf(real: tuple[np.ndarray, np.ndarray], generated: list[tuple[np.ndarray, np.ndarray]], xlabel: str,
         of: str) -> Figure:
    """Cumulative distributions of the real and the generated traces' values (``of``: what the shares count)."""
    fig, ax = _figure()
    ax.step(np.maximum(real[0], 1), real[1], where="post", color=colour(0), label=NAMES[0])
    many = len(generated) > 1
    for i, (x, y) in enumerate(generated):  # several: thin and pale, one legend entry for all
        ax.step(np.maximum(x, 1), y, where="post", color=colour(1), label=None if i else _generated_label(
            len(generated)), linewidth=0.8 if many else None, alpha=0.5 if many else None)
    ax.set_xscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(f"share of {of} ≤ x")
    ax.legend()
    return fig


def _over(rows: list[list[float]]) -> tuple[np.ndarray, tuple[np.ndarray, np.ndarray] | None]:
    """Per column of ``rows`` (one row per generated trace): the median, and the least and greatest value when there
    are several rows (else None)."""
    values = np.array(rows, dtype=float)
    return np.median(values, axis=0), (values.min(axis=0), values.max(axis=0)) if len(values) > 1 else None


def _bars(labels: list[str], real: list[float], median: list[float] | np.ndarray, ylabel: str, log: bool = False,
          spread: tuple[np.ndarray, np.ndarray] | tuple[list[float], list[float]] | None = None,
          traces: int = 1, xlabel: str | None = None) -> Figure | None:
    """Grouped bars, one group per label: the real value and the generated ones' median (with ``spread``, their
    least to greatest value of ``traces`` traces, as an error bar); None where a log scale has no positive value to
    draw."""
    if log and not any(v is not None and math.isfinite(v) and v > 0 for v in [*real, *median]):
        return None
    fig, ax = _figure(max(1.6, len(labels) * 0.25))
    pos = np.arange(len(labels))
    ax.bar(pos - 0.2, real, width=0.4, color=colour(0), label=NAMES[0])
    err = None if spread is None else np.array([np.subtract(median, spread[0]), np.subtract(spread[1], median)])
    ax.bar(pos + 0.2, median, width=0.4, color=colour(1), yerr=err, capsize=2,
           label=_generated_label(traces) if spread is None else f"generated: median and range of {traces}")
    ax.set_xticks(pos, labels, rotation=30 if len(labels) > 8 else 0)
    if xlabel is not None:
        ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if log:
        ax.set_yscale("log")
    ax.legend()
    return fig


def on_one_calendar(real: Summary, generated: list[Summary]) -> bool:
    """Whether every generated trace's days overlap the real trace's (a trace generated over its source's window):
    then the days are drawn on one calendar, else each from its own first day."""
    return all(overlap((g.first_day, len(g.daily)), (real.first_day, len(real.daily))) for g in generated)


def _daily(real: Summary, generated: list[Summary], aligned: bool) -> Figure:
    """Submissions per day of the real and the generated traces; ``aligned`` (:func:`on_one_calendar`): on one
    calendar, days from the real trace's first local midnight."""
    # (local midnights a DST change apart are 23 or 25 hours apart: rounded to whole days)
    offset = [round((g.first_day - real.first_day) / 86_400) if aligned else 0 for g in generated]
    fig, ax = _figure(2.2)
    ax.plot(np.arange(len(real.daily)), real.daily, color=colour(0), label=NAMES[0], drawstyle="steps-mid")
    first = min(offset)
    days = max(o + len(g.daily) for o, g in zip(offset, generated, strict=True)) - first
    counts = np.full((len(generated), days), np.nan)
    for row, o, g in zip(counts, offset, generated, strict=True):
        row[o - first: o - first + len(g.daily)] = g.daily
    x = np.arange(first, first + days)
    if len(generated) == 1:
        ax.plot(x, counts[0], color=colour(1), label=NAMES[1], drawstyle="steps-mid")
    else:  # per day, over the traces that reach it: the median, and the least to the greatest as a band
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # (a day no trace reaches: a gap in the lines)
            low, high, mid = np.nanmin(counts, axis=0), np.nanmax(counts, axis=0), np.nanmedian(counts, axis=0)
        ax.fill_between(x, low, high, step="mid", color=colour(1), alpha=0.25, linewidth=0,
                        label=f"generated: range of {len(generated)}")
        ax.plot(x, mid, color=colour(1), label="generated: median", drawstyle="steps-mid")
    ax.set_xlabel("day from the real trace's first local midnight" if aligned else "day of each trace's window")
    ax.set_ylabel("submissions")
    ax.legend()
    return fig


def sections(real: Summary, generated: list[Summary], table: pl.DataFrame,
             queueing: pl.DataFrame | None, note: str | None = None) -> list[Section]:
    """The report's sections: the tables, the marginals, the arrival process and the queueing (``note``: said of
    the queueing, e.g. which generated traces never ran)."""
    n = len(generated)
    aligned = on_one_calendar(real, generated)
    sizes = sorted(set(real.gpu_mix).union(*(g.gpu_mix for g in generated)))
    big = [int(r["metric"].rsplit(" ", 2)[1]) for r in table.iter_rows(named=True) if r["metric"].endswith(" GPU")]
    size_median, size_spread = _over([[s.size_medians.get(g, 0.0) for g in big] for s in generated])
    size_figure = _bars([str(g) for g in big], [real.size_medians.get(g, 0.0) for g in big], size_median,
                        "median run time (s)", log=True, spread=size_spread, traces=n, xlabel="GPUs per job")
    mix_median, mix_spread = _over([[s.gpu_mix.get(g, 0.0) for g in sizes] for s in generated])
    several = ("Several generated traces: the table shows their median, its relative error, their range and the "
               "share of them whose value is below the real one; the figures draw every trace (distributions) or "
               "their median and range. ") if n > 1 else ""
    fidelity = Section("fidelity", "Fidelity table", several + "Each statistic of the real and the generated "
                       "trace; the relative error is generated / real − 1 (distances are of the generated trace from "
                       "the real one).", [
                           Item("fidelity-table", "Fidelity", "Statistics as defined in docs/synth.md "
                                "(synth compare).", shown=table, data={"fidelity": table})])
    marginals = Section("marginals", "Marginals", "Run time and GPU count of every job.", [
        Item("durations", "Run-time distribution", "Cumulative share of jobs with run time ≤ x seconds "
             "(log scale; 0 s drawn at 1 s).", figure=_cdf(real.durations, [g.durations for g in generated],
                                                            "run time (s)", "jobs")),
        Item("gpu-mix", "GPU-count mix", "Share of jobs per GPU count (log scale).",
             figure=_bars([str(g) for g in sizes], [real.gpu_mix.get(g, 0.0) for g in sizes], mix_median,
                          "share of jobs", log=True, spread=mix_spread, traces=n, xlabel="GPUs per job")),
        Item("size-medians", "Median run time per GPU count", "Median run time of the jobs of each GPU count "
             "with at least 200 real jobs.",
             figure=size_figure, absent=None if size_figure else "no GPU count has 200 real jobs"),
    ])
    arrivals = Section("arrivals", "Arrival process", "When jobs are submitted: gaps between submissions and "
                       "submissions per day.", [
        Item("gaps", "Inter-arrival gaps", "Cumulative share of gaps between consecutive submissions ≤ x seconds "
             "(log scale; same-second gaps drawn at 1 s).",
             figure=_cdf(real.gaps, [g.gaps for g in generated], "gap (s)", "gaps")),
        Item("daily", "Submissions per day", "Jobs submitted on each day: "
             + ("on one calendar, from the real trace's first local midnight (the traces' windows overlap)."
                if aligned else
                "each trace from its own first local midnight (their windows do not overlap)."),
             figure=_daily(real, generated, aligned)),
    ])
    if queueing is None:
        downstream_items = [Item("queueing", "Queueing", "Simulated queueing delay.",
                                 absent="no cluster: give --cluster or traces that carry VC sizes")]
    else:
        labels = [f"{r['policy']} ×{r['load']:g} {r['statistic']}" for r in queueing.iter_rows(named=True)]
        figure = _bars(labels, queueing["real_s"].to_list(), queueing["generated_s"].to_list(), "queueing delay (s)",
                       log=True, spread=(queueing["low_s"].to_list(), queueing["high_s"].to_list()) if n > 1 else None,
                       traces=n)
        downstream_items = [Item("queueing", "Simulated queueing delay",
                                 "Mean and 99th percentile of queueing delay (start − submission) when each trace's "
                                 "jobs are simulated on the same cluster with inter-arrival times divided by the load."
                                 + "".join(f" Note: {why}." for why in (not_simulated(queueing), note) if why),
                                 figure=figure, absent=None if figure else "no job of either trace waited (or none "
                                 "needs a GPU): every delay in the table is 0 s or undefined",
                                 shown=queueing, data={"queueing": queueing})]
    downstream = Section("downstream", "Downstream: queueing", "FIFO and SJF on the same cluster at two loads.",
                         downstream_items)
    return [fidelity, marginals, arrivals, downstream]


def write(out: Path, real: Summary, generated: list[Summary], table: pl.DataFrame, queueing: pl.DataFrame | None,
          names: tuple[str, list[str]], note: str | None = None) -> Path:
    """Write ``index.html`` with inlined figures (and the figures and tables as files) under ``out`` (``note``: see
    :func:`sections`)."""
    jobs = [g.jobs for g in generated]
    counts = f"{jobs[0]:,} jobs" if len(jobs) == 1 else f"{min(jobs):,}–{max(jobs):,} jobs"
    return write_report(sections(real, generated, table, queueing, note), out, "Synthetic trace fidelity",
                        [f"real: {names[0]} ({real.jobs:,} jobs)",
                         f"generated: {', '.join(names[1])} ({counts})"])
