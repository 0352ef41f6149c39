"""The Philly guidelines' features: the speed model, failures with retries, early validation, against the plain run.

Run from the project root: ``.venv/bin/python -m benchmarks.bench_guidelines``. Every figure is one fresh
process (CPU seconds = user + sys, ``os.wait4``) of ``dlcluster simulate -p fifo`` on the Philly window (its
table records no outcomes: failures change nothing there, the cost of replaying them shows) and on the 180-day
Saturn look-alike (Helios' failure mix), each setting ``REPEAT`` times in turn (a run varies by ±10% on the shared
machine); the ratio is of the median CPU seconds over the median of the same run with none of them (target < 1.5×
with the speed model, failures and retries on). The mean queueing delay shows how much heavier the simulated workload
became: retried runs and slower jobs lengthen the queue, and a longer queue costs the scheduler more per event;
the makespan shows how much longer the simulated span, and with it the timeline (a row per VC per minute), became.
"""

from __future__ import annotations

import statistics
from functools import partial

from benchmarks._measure import WORK, Table, in_turn, philly_window_args, saturn_parquet, simulate_measured, spread

RUNS = {
    "plain": [],
    "speed model": ["--speed-model", "philly"],
    "failures, 2 retries": ["--failures", "replay", "--retries", "2"],
    "speed + failures + retries": ["--speed-model", "philly", "--failures", "replay", "--retries", "2"],
    "... + validation": ["--speed-model", "philly", "--failures", "replay", "--retries", "2",
                         "--validation-minutes", "5", "--validation-gpus", "32"],
}


REPEAT = 3


def main() -> None:
    """Each run on each trace, whole process, ``REPEAT`` times in turn."""
    WORK.mkdir(exist_ok=True)
    philly = philly_window_args()
    if philly is None:
        print("../shared/data/philly is not available: the Philly case is skipped")
    cases = [*([("philly", philly)] if philly else []), ("saturn 180d", [str(saturn_parquet(180))])]
    print("guidelines: simulate -p fifo with the speed model, failures and retries (medians of the runs; ratio: CPU s "
          "over plain)")
    t = Table(("trace", 12), ("run", 28), ("runs", 5, "d"), ("CPU s", 8, ".2f"), ("CPU range", 12),
              ("peak MiB", 10, ",.0f"), ("ratio", 7, ".2f"), ("retries", 9, ",d"), ("mean queue s", 14, ",.0f"),
              ("makespan d", 11, ",.0f"))
    for name, args in cases:
        runs = in_turn(REPEAT, {label: partial(simulate_measured, [*args, "-p", "fifo", *extra])
                                for label, extra in RUNS.items()})
        base = statistics.median(m.cpu for m, _ in runs["plain"])
        for label, done in runs.items():
            cpu, summary = [m.cpu for m, _ in done], done[-1][1]
            t.row(name, label, len(cpu), statistics.median(cpu), spread(cpu), max(m.peak_mib for m, _ in done),
                  statistics.median(cpu) / base, (summary.get("failures") or {}).get("retries"),
                  summary["overall"]["mean_queue_delay"], summary["overall"]["makespan"] / 86_400)


if __name__ == "__main__":
    main()
