"""CES: the open loop on the 73-day Philly node series, and closed-loop simulations against the same without power.

Run from the project root: ``.venv/bin/python -m benchmarks.bench_ces [CASE ...]`` (cases: open-loop,
closed-loop). Every figure is one fresh process (CPU seconds = user + sys, ``os.wait4``).

``open-loop``    ``dlcluster ces`` on ``../shared/data/philly/node_sequence_minutely.csv`` (105,644 minutes):
                 both rules, and ``--compat helios-artifact``; forecaster training included (target < 20 s).
``closed-loop``  ``dlcluster simulate -p fifo`` with ``--power none``, ``on`` and ``ces`` (both rules) on the
                 Philly window and on the 180-day Saturn look-alike, each run several times in turn (a one-second
                 run varies by ±10% on the shared machine); the ratio is the median CPU seconds over the median
                 of the same run with ``--power none`` (target < 1.5×).
"""

from __future__ import annotations

import json
import statistics
import sys
from functools import partial

from benchmarks._measure import (
    FIGURES,
    Table,
    command_measured,
    dlcluster,
    figures,
    in_turn,
    philly_window_args,
    run_cases,
    saturn_parquet,
    simulate_measured,
    spread,
)
from benchmarks.bench_sim import PHILLY

SERIES = PHILLY / "node_sequence_minutely.csv"
RUNS = {"philly": 5, "saturn 180d": 3}  # processes per setting (in turn, so a slow spell hits every setting)
POWER = {"none": ["--power", "none"], "on": ["--power", "on"], "ces helios": ["--power", "ces"],
         "ces quantile": ["--power", "ces", "--ces-rule", "quantile"]}


def open_loop() -> None:
    """``dlcluster ces --json`` on the Philly series, per rule and in compatibility mode."""
    if not SERIES.exists():
        print("open-loop: ../shared/data/philly is not available: skipped")
        return
    print(f"open-loop: dlcluster ces on {SERIES.name} (73 days; the last 14 replayed)")
    t = Table(("run", 16), *FIGURES[:3], ("off nodes", 10, ".1f"), ("powered util %", 15, ".2f"), ("shortages", 10, "d"))
    for label, args in (("helios", ["--rule", "helios"]), ("quantile", ["--rule", "quantile"]),
                        ("artifact compat", ["--compat", "helios-artifact"])):
        m = command_measured(dlcluster("ces", str(SERIES), "--json", "--holidays", "US", *args)
                             if label != "artifact compat" else dlcluster("ces", str(SERIES), "--json", *args))
        out = json.loads(m.out)
        t.row(label, *figures(m)[:3], out["mean_off_nodes"], out["utilization_powered"], out["shortages"])


def closed_loop() -> None:
    """FIFO with and without power management, whole process, on the Philly window and the Saturn look-alike."""
    philly = philly_window_args()
    if philly is None:
        print("closed-loop: ../shared/data/philly is not available: the Philly case is skipped")
    cases = [*([("philly", philly)] if philly else []), ("saturn 180d", [str(saturn_parquet(180))])]
    print("closed-loop: simulate -p fifo, power management off and on (medians of the runs; ratio: CPU s over "
          "--power none)")
    t = Table(("trace", 12), ("power", 13), ("runs", 5, "d"), ("CPU s", 8, ".2f"), ("CPU range", 12),
              ("peak MiB", 10, ",.0f"), ("ratio", 7, ".2f"), ("saved %", 8, ".1f"), ("wake-ups", 9, ",d"),
              ("mean queue s", 13, ".1f"))
    for name, args in cases:
        runs = in_turn(RUNS[name], {label: partial(simulate_measured, [*args, "-p", "fifo", *power])
                                    for label, power in POWER.items()})
        base = statistics.median(m.cpu for m, _ in runs["none"])
        for label, done in runs.items():
            cpu, summary = [m.cpu for m, _ in done], done[-1][1]
            energy = summary.get("energy") or {}
            t.row(name, label, len(cpu), statistics.median(cpu), spread(cpu), max(m.peak_mib for m, _ in done),
                  statistics.median(cpu) / base, energy.get("saved_pct"), energy.get("wakeups"),
                  summary["overall"]["mean_queue_delay"])


CASES = {"open-loop": open_loop, "closed-loop": closed_loop}


def main(cases: list[str] | None = None) -> None:
    """Run the named cases (default: all)."""
    run_cases(CASES, cases)


if __name__ == "__main__":
    main(sys.argv[1:] or None)
