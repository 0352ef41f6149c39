"""The terminal tables of ``dlcluster simulate``: one row per policy (or per VC and policy), times in human units,
columns packed into as many tables as the console's width needs, so that any number of policies fits."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from rich.cells import cell_len
from rich.table import Table

GAP = 2  # spaces between two columns


def human_seconds(value: float | None) -> str:
    """Seconds in the unit that reads best: s below a minute, min below an hour, h below two days, else d."""
    if value is None:
        return "–"
    for limit, unit, size in ((60, "s", 1), (3600, "min", 60), (48 * 3600, "h", 3600)):
        if abs(value) < limit:
            return f"{_number(value / size)} {unit}"
    return f"{_number(value / 86400)} d"


def _number(value: float) -> str:
    """One decimal below 100, whole numbers with thousands separators above."""
    if abs(value) < 100:
        return f"{value:.1f}"
    return f"{value:,.0f}"


def share(value: float | None) -> str:
    """A utilisation (a fraction) with three decimals."""
    return "–" if value is None else f"{value:.3f}"


def count(value: float | None) -> str:
    """A count, or a float as :func:`_number` writes it."""
    if value is None:
        return "–"
    if isinstance(value, float):
        return _number(value)
    return f"{value:,}"


@dataclass(frozen=True)
class Metric:
    """One column: where its value is in a summary part, its header and how it is written."""

    key: str
    header: str
    fmt: Callable[[Any], str]


@dataclass(frozen=True)
class Row:
    """The labels of one row and the summary part (``overall``, a VC's, ``energy``...) its values come from."""

    labels: tuple[str, ...]
    values: dict[str, Any]


MAIN = (Metric("jobs", "jobs", count), Metric("mean_jct", "mean JCT", human_seconds),
        Metric("p99_jct", "p99 JCT", human_seconds), Metric("mean_queue_delay", "mean queue", human_seconds),
        Metric("p99_queue_delay", "p99 queue", human_seconds), Metric("utilization", "util", share),
        Metric("utilization_busy", "busy util", share))
SPREAD = (Metric("p50_jct", "p50 JCT", human_seconds), Metric("p95_jct", "p95 JCT", human_seconds),
          Metric("p50_queue_delay", "p50 queue", human_seconds), Metric("p95_queue_delay", "p95 queue", human_seconds),
          Metric("mean_bounded_slowdown", "bounded slowdown", count), Metric("fairness", "fairness", share))
RUN = (Metric("unschedulable", "unschedulable", count), Metric("preemptions", "preemptions", count),
       Metric("makespan", "makespan", human_seconds), Metric("busy_period", "busy period", human_seconds))
OPTIONAL = (Metric("cpu_utilization", "CPU util", share), Metric("slowdown_gpu_hours", "slowdown GPU-h", count))
BY_VC = (Metric("gpus", "GPUs", count), Metric("jobs", "jobs", count),
         Metric("mean_queue_delay", "mean queue", human_seconds), Metric("p99_queue_delay", "p99 queue", human_seconds),
         Metric("mean_jct", "mean JCT", human_seconds), Metric("p99_jct", "p99 JCT", human_seconds),
         Metric("utilization", "util", share), Metric("utilization_busy", "busy util", share))
ENERGY = (Metric("energy_kwh", "energy kWh", count), Metric("always_on_kwh", "always on kWh", count),
          Metric("saved_pct", "saved %", count), Metric("utilization_powered", "powered util", share),
          Metric("wakeups", "wake-ups", count), Metric("boot_delayed_jobs", "boot-delayed jobs", count))
FAILURES = (Metric("failed_gpu_hours", "failed GPU-h", count),
            Metric("failed_gpu_hours_early", "early failed GPU-h", count), Metric("retries", "retries", count),
            Metric("validation_caught", "caught", count), Metric("validation_gpu_hours_saved", "GPU-h saved", count),
            Metric("validation_pool_gpu_hours", "pool GPU-h", count))

LEGEND = ("times in s, min, h, d; util: GPU time used / GPU time available from the first submission to the last "
          "end; busy util: the same while the VC had jobs (waiting or running), each VC's GPUs counted only then")
ENERGY_LEGEND = "; powered util: busy nodes / powered nodes, the mean over timeline samples (whole nodes, not GPUs)"


def tables(title: str, label_headers: Sequence[str], rows: Sequence[Row], metrics: Sequence[Metric],
           width: int) -> list[Table]:
    """``rows`` under ``metrics``, split by columns into tables no wider than ``width`` (the labels repeated in
    each); only metrics some row has are shown."""
    shown = [m for m in metrics if any(m.key in r.values for r in rows)]
    cells = {m.key: [m.fmt(r.values.get(m.key)) for r in rows] for m in shown}
    label_widths = [max([cell_len(h), *(cell_len(r.labels[i]) for r in rows)]) for i, h in enumerate(label_headers)]
    widths = {m.key: max([_longest_word(m.header), *(len(c) for c in cells[m.key])]) for m in shown}
    out: list[Table] = []
    used = sum(label_widths) + GAP * (len(label_widths) - 1)
    part: list[Metric] = []
    for m in shown:
        if part and used + GAP + widths[m.key] > width:
            out.append(_table(title if not out else f"{title} (continued)", label_headers, label_widths, rows, part,
                              widths, cells))
            part, used = [], sum(label_widths) + GAP * (len(label_widths) - 1)
        part.append(m)
        used += GAP + widths[m.key]
    if part:
        out.append(_table(title if not out else f"{title} (continued)", label_headers, label_widths, rows, part,
                          widths, cells))
    return out


def _longest_word(text: str) -> int:
    return max(len(w) for w in text.split())


def _table(title: str, label_headers: Sequence[str], label_widths: list[int], rows: Sequence[Row],
           metrics: list[Metric], widths: dict[str, int], cells: dict[str, list[str]]) -> Table:
    table = Table(title=title, title_justify="left", box=None, padding=(0, GAP // 2), pad_edge=False,
                  show_edge=False, header_style="bold")
    for header, w in zip(label_headers, label_widths, strict=True):
        table.add_column(header, width=w, no_wrap=True)
    for m in metrics:
        table.add_column(m.header, justify="right", width=widths[m.key])
    for i, r in enumerate(rows):
        table.add_row(*r.labels, *(cells[m.key][i] for m in metrics))
    return table


def overall_rows(summaries: dict[str, dict[str, Any]], part: str | None = None) -> list[Row]:
    """One row per policy: its ``overall`` metrics, or those of the summary's object ``part`` (``energy``...)."""
    return [Row((name,), s["overall"] if part is None else s.get(part, {})) for name, s in summaries.items()]


def vc_rows(summaries: dict[str, dict[str, Any]]) -> list[Row]:
    """One row per VC and policy, VCs in the spec's order, the VC named on its first row only."""
    vcs = list(dict.fromkeys(vc for s in summaries.values() for vc in s["vcs"]))
    rows = []
    for vc in vcs:
        names = [name for name, s in summaries.items() if vc in s["vcs"]]
        for i, name in enumerate(names):
            rows.append(Row((vc if i == 0 else "", name), summaries[name]["vcs"][vc]))
    return rows


def simulate_tables(summaries: dict[str, dict[str, Any]], width: int, by_vc: bool = False) -> list[Table]:
    """Every table ``dlcluster simulate`` prints, policies as rows, each at most ``width`` wide."""
    rows = overall_rows(summaries)
    out = tables("whole cluster", ("policy",), rows, MAIN, width)
    out += tables("whole cluster: percentiles, slowdown, fairness", ("policy",), rows, SPREAD, width)
    out += tables("whole cluster: the runs", ("policy",), rows, (*RUN, *OPTIONAL), width)
    for part, title, metrics in (("energy", "energy", ENERGY), ("failures", "failures", FAILURES)):
        if any(part in s for s in summaries.values()):
            out += tables(title, ("policy",), overall_rows(summaries, part), metrics, width)
    if by_vc:
        out += tables("per VC", ("VC", "policy"), vc_rows(summaries), BY_VC, width)
    return out
