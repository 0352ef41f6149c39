"""Downstream fidelity: the queueing a real and a generated trace produce on the same cluster.

Both traces' submissions are replayed by :func:`dlcluster.sim.run.simulate` (each VC on its
own, consolidated placement; SJF with the true durations) with the inter-arrival times
divided by ``load``; jobs of VCs outside the cluster are counted as unschedulable and left
out, and so are GPU jobs without a duration or a submit time (running or pending when the
trace was taken: :func:`unreplayed`). A job's queueing delay is its simulated start minus
its (scaled) submission.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

import numpy as np
import polars as pl

from dlcluster.cluster import ClusterSpec
from dlcluster.sim.prepare import unreplayable
from dlcluster.trace import Trace

LOADS = (2.0, 3.0)
POLICIES = ("fifo", "sjf")
SCHEMA = {"load": pl.Float64, "policy": pl.String, "statistic": pl.String, "real_s": pl.Float64,
          "generated_s": pl.Float64, "relative_error": pl.Float64}


def queueing(trace: Trace, cluster: ClusterSpec, policy: str, load: float) -> tuple[float, float]:
    """Mean and 99th percentile (linear) of simulated queueing delay, seconds."""
    from dlcluster.sim.run import simulate

    delays = simulate(trace.jobs.filter(~unreplayable()), cluster, policy, load=load, unknown_vc="unschedulable",
                      source=trace.source or trace.name).jobs["queue_delay"].drop_nulls().cast(pl.Float64)
    if delays.len() == 0:
        return math.nan, math.nan
    return float(delays.mean()), float(delays.quantile(0.99, "linear"))  # type: ignore[arg-type]


def unreplayed(trace: Trace) -> int:
    """How many GPU jobs of ``trace`` the queueing leaves out: those without a duration or a submit time."""
    return trace.jobs.filter(unreplayable()).height


Cases = dict[tuple[float, str, str], float]  # (load, policy, statistic) → seconds


def queueing_by_case(trace: Trace, cluster: ClusterSpec, loads: Sequence[float] = LOADS,
                     policies: Sequence[str] = POLICIES) -> Cases:
    """(load, policy, statistic) → seconds, for statistics mean and p99."""
    out = {}
    for load in loads:
        for policy in policies:
            for statistic, value in zip(("mean", "p99"), queueing(trace, cluster, policy, load), strict=True):
                out[(float(load), policy, statistic)] = value
    return out


def downstream(real: Trace, generated: Trace, cluster: ClusterSpec, loads: Sequence[float] = LOADS,
               policies: Sequence[str] = POLICIES) -> pl.DataFrame:
    """Mean and p99 queueing of both traces per load and policy, with the generated one's relative error."""
    return over_seeds(real, [generated], cluster, loads, policies).drop("low_s", "high_s", "real_rank")


def over_seeds(real: Trace, generated: Iterable[Trace], cluster: ClusterSpec, loads: Sequence[float] = LOADS,
               policies: Sequence[str] = POLICIES) -> pl.DataFrame:
    """Like :func:`downstream` for several generated traces (one model, several seeds; taken one at a time, so a
    generator holds one in memory): the median of theirs, its relative error, their least and greatest value
    (``low_s``, ``high_s``), and the share of them below the real value (``real_rank``, ties counted half: where
    the real trace falls among the generator's draws)."""
    runs = [queueing_by_case(g, cluster, loads, policies) for g in generated]
    return seeds_table(queueing_by_case(real, cluster, loads, policies), runs)


def among(values: Iterable[float | None], real: float | None) -> tuple[float, float, float, float, int]:
    """Where ``real`` falls among generated traces' ``values`` (None and NaN, a trace without a value, left out):
    their median, least and greatest value, the share of them below ``real`` (ties counted half; NaN without a
    real value) and how many there are; NaN for each figure when none is left."""
    kept = [v for v in values if v is not None and not math.isnan(v)]
    if not kept:
        return math.nan, math.nan, math.nan, math.nan, 0
    below = math.nan if real is None or math.isnan(real) else \
        sum(1.0 if v < real else 0.5 if v == real else 0.0 for v in kept) / len(kept)
    return float(np.median(kept)), min(kept), max(kept), below, len(kept)


def seeds_table(real: Cases, runs: Sequence[Cases]) -> pl.DataFrame:
    """:func:`over_seeds`'s table from the real trace's cases and each generated trace's."""
    rows = []
    for (load, policy, statistic), r in real.items():
        # a generated trace none of whose jobs ran has no value (NaN): it is left out, as :func:`never_ran` says
        median, low, high, below, _ = among([run[(load, policy, statistic)] for run in runs], r)
        rows.append({"load": load, "policy": policy, "statistic": statistic, "real_s": r, "generated_s": median,
                     "relative_error": median / r - 1.0 if r > 0 and not math.isnan(median) else math.nan,
                     "low_s": low, "high_s": high, "real_rank": below})
    return pl.DataFrame(rows, schema={**SCHEMA, "low_s": pl.Float64, "high_s": pl.Float64, "real_rank": pl.Float64})


def never_ran(runs: Sequence[Cases], names: Sequence[str]) -> str | None:
    """A sentence naming the generated traces (of several) none of whose jobs ran on the cluster, which
    :func:`seeds_table` leaves out; None if every one ran, or if none did (:func:`not_simulated` says that)."""
    idle = [name for name, run in zip(names, runs, strict=True) if all(math.isnan(v) for v in run.values())]
    if not idle or len(idle) == len(names):
        return None
    return (f"no GPU job of {', '.join(idle)} ran on the cluster (none needs a GPU, or its VCs are not the "
            f"cluster's): left out of the generated traces' medians, ranges and ranks")


def not_simulated(table: pl.DataFrame) -> str | None:
    """A sentence naming the traces of a :func:`downstream` table none of whose jobs ran (all its cells undefined),
    or None."""
    empty = [name for name in ("real", "generated") if table[f"{name}_s"].is_nan().all()]
    if not empty:
        return None
    return (f"no GPU job of the {' or the '.join(empty)} trace ran on the cluster: none needs a GPU, or its VCs "
            "are not the cluster's (--cluster FILE names the VCs)")


def markdown_over_seeds(table: pl.DataFrame) -> str:
    """An :func:`over_seeds` table as Markdown rows, one per load, policy and statistic."""
    lines = ["| load | policy | statistic | real | median generated | error | range of the seeds "
             "| seeds below the real |", "|---|---|---|---|---|---|---|---|"]
    for row in table.iter_rows(named=True):
        lines.append(f"| {row['load']:g} | {row['policy']} | {row['statistic']} | {row['real_s']:,.0f} s | "
                     f"{row['generated_s']:,.0f} s | {_percent(row['relative_error'])} | "
                     f"{row['low_s']:,.0f}–{row['high_s']:,.0f} s | {row['real_rank']:.0%} |")
    return "\n".join(lines) + "\n"


def _percent(x: float) -> str:
    return "–" if x is None or math.isnan(x) else f"{x:+.0%}".replace("-", "−")
