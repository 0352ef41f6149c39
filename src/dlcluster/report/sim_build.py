"""Assemble the report of one or more simulation runs (and, optionally, the trace they replayed)."""

from __future__ import annotations

from pathlib import Path

from dlcluster.report import sim_sections
from dlcluster.report.html import write_report
from dlcluster.report.runs import SimRun
from dlcluster.text import count
from dlcluster.trace import Trace


def build_sim_report(runs: list[SimRun], out: str | Path, trace: Trace | None = None) -> Path:
    """Write ``out/index.html`` with figure and table files for ``runs``; return the page's path.

    ``trace``, when given, is the trace the runs replayed: its recorded queueing is compared
    with each run's per VC.
    """
    parts = [
        sim_sections.runs_section(runs),
        sim_sections.times_section(runs),
        sim_sections.vc_section(runs),
        sim_sections.timeline_section(runs),
        sim_sections.preemption_section(runs),
        sim_sections.observed_section(runs, trace),
        sim_sections.energy_section(runs),
    ]
    subtitle = [f"{r.name}: policy {r.summary.get('policy')}, placement {r.summary.get('placement')}, load "
                f"{r.summary.get('load')}, {count(r.jobs.height, 'job')} ({r.folder})" for r in runs]
    if trace is not None:
        subtitle.append(f"observed trace: {trace.name}, {count(trace.jobs.height, 'job')}")
    return write_report(parts, Path(out), "Simulation runs: " + ", ".join(r.name for r in runs), subtitle)
