"""Downstream fidelity: the queueing a real and a generated trace produce on the same cluster.

Both traces' submissions are replayed by :func:`dlcluster.sim.run.simulate` (each VC on its
own, consolidated placement; SJF with the true durations) with the inter-arrival times
divided by ``load``; jobs of VCs outside the cluster are counted as unschedulable and left
out. A job's queueing delay is its simulated start minus its (scaled) submission.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import polars as pl

from dlcluster.cluster import ClusterSpec
from dlcluster.trace import Trace

LOADS = (2.0, 3.0)
POLICIES = ("fifo", "sjf")
SCHEMA = {"load": pl.Float64, "policy": pl.String, "statistic": pl.String, "real_s": pl.Float64,
          "generated_s": pl.Float64, "relative_error": pl.Float64}


def queueing(trace: Trace, cluster: ClusterSpec, policy: str, load: float) -> tuple[float, float]:
    """Mean and 99th percentile (linear) of simulated queueing delay, seconds."""
    from dlcluster.sim.run import simulate

    delays = simulate(trace.jobs, cluster, policy, load=load, unknown_vc="unschedulable",
                      source=trace.source or trace.name).jobs["queue_delay"].drop_nulls().cast(pl.Float64)
    if delays.len() == 0:
        return math.nan, math.nan
    return float(delays.mean()), float(delays.quantile(0.99, "linear"))  # type: ignore[arg-type]


def downstream(real: Trace, generated: Trace, cluster: ClusterSpec, loads: Sequence[float] = LOADS,
               policies: Sequence[str] = POLICIES) -> pl.DataFrame:
    """Mean and p99 queueing of both traces per load and policy, with the generated one's relative error."""
    rows = []
    for load in loads:
        for policy in policies:
            pairs = zip(queueing(real, cluster, policy, load), queueing(generated, cluster, policy, load), strict=True)
            for statistic, (r, g) in zip(("mean", "p99"), pairs, strict=True):
                error = g / r - 1.0 if r > 0 and not math.isnan(g) else math.nan
                rows.append({"load": float(load), "policy": policy, "statistic": statistic, "real_s": r,
                             "generated_s": g, "relative_error": error})
    return pl.DataFrame(rows, schema=SCHEMA)


def markdown(table: pl.DataFrame) -> str:
    """The table as Markdown rows, one per load and policy (as docs/synth.md shows it)."""
    lines = ["| load | policy | mean queueing real | mean generated | error | p99 queueing real | p99 generated "
             "| error |", "|---|---|---|---|---|---|---|---|"]
    for (load, policy), part in table.group_by(["load", "policy"], maintain_order=True):
        by = {row["statistic"]: row for row in part.iter_rows(named=True)}
        cells = [f"{load:g}", str(policy)]
        for statistic in ("mean", "p99"):
            row = by[statistic]
            cells += [f"{row['real_s']:,.0f} s", f"{row['generated_s']:,.0f} s", _percent(row["relative_error"])]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _percent(x: float) -> str:
    return "–" if x is None or math.isnan(x) else f"{x:+.0%}".replace("-", "−")
