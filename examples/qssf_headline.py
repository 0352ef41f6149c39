"""The QSSF headline comparison: what a learned duration predictor buys a GPU cluster's queue.

Run from the project root: ``.venv/bin/python examples/qssf_headline.py [-o DIR] [--days N]``.

For each trace — the public Philly table (Oct–Nov 2017) at ``--load`` 1, 2 and 3, and
generated Helios look-alikes with users (``helios-venus``, ``helios-saturn``) — it runs
``dlcluster simulate`` with FIFO, SJF (true durations), QSSF with the ``history`` and the
``lgbm`` estimators (each job predicted at its simulated submission), QSSF-EASY with
``lgbm`` and SRTF (true durations), and prints mean and p99 JCT and queueing delay with
the share of the FIFO→SJF gap in mean JCT that each policy closes. Then it prints each
estimator's accuracy on the trace's recorded timeline (``dlcluster predict eval``).
Everything goes through the command line, as a user would run it; outputs stay in DIR.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PHILLY = ROOT.parent / "shared/data/philly"
POLICIES = ("fifo", "sjf", "qssf-history", "qssf-lgbm", "qssf-easy-lgbm", "srtf")


def dlcluster(*args: str) -> str:
    """Run a dlcluster command; its standard output."""
    done = subprocess.run([sys.executable, "-m", "dlcluster", *args], capture_output=True, text=True, check=False)
    if done.returncode:
        raise SystemExit(f"dlcluster {' '.join(args)} failed: {done.stderr.strip()}")
    return done.stdout


def traces(out: Path, days: int) -> list[tuple[str, list[str], list[str]]]:
    """(label, trace arguments, simulate options) per case."""
    cases = []
    if (PHILLY / "jobs_processed.csv").exists():
        philly = [str(PHILLY / "jobs_processed.csv"), "--cluster", str(PHILLY / "vc_nodes.csv"), "--skip-unknown-vcs",
                  "--start", "2017-10-01 00:00:00", "--end", "2017-11-30 23:59:00"]
        cases += [(f"philly load {load}", philly, ["--load", str(load)]) for load in (1, 2, 3)]
    else:
        print("../shared/data/philly not found: the Philly cases are skipped", file=sys.stderr)
    for preset in ("helios-venus", "helios-saturn"):
        path = out / f"{preset}-{days}d.parquet"
        if not path.exists():
            dlcluster("synth", "--preset", preset, "--days", str(days), "--seed", "1", "-o", str(path))
        cases.append((f"{preset} {days}d", [str(path)], []))
    return cases


def simulate(trace: list[str], options: list[str], folder: Path) -> dict[str, dict]:
    """Overall summaries per policy label (two runs: lgbm for everything that takes estimates, then history)."""
    runs = {"lgbm": ["fifo", "sjf", "qssf", "qssf-easy", "srtf"], "history": ["qssf"]}
    summaries: dict[str, dict] = {}
    for estimator, policies in runs.items():
        # every summary at folder/estimator/policy/summary.json (a one-policy run writes straight into -o)
        paths = {p: folder / estimator / p / "summary.json" for p in policies}
        if not all(path.exists() for path in paths.values()):
            dest = folder / estimator if len(policies) > 1 else folder / estimator / policies[0]
            dlcluster("simulate", *trace, *options, "-p", ",".join(policies), "--estimates", estimator,
                      "-o", str(dest))
        for policy, path in paths.items():
            summaries[f"{policy}-{estimator}" if policy.startswith("qssf") else policy] = json.loads(path.read_text())
    return summaries


def hours(seconds: float) -> str:
    """Seconds as hours with one decimal."""
    return f"{seconds / 3600:,.1f}"


QUEUE_HEADER = ("| trace | policy | mean JCT h | p99 JCT h | mean queue h | p99 queue h | FIFO→SJF gap closed |\n"
                "|---|---|---:|---:|---:|---:|---:|")
ACCURACY_HEADER = ("| trace | estimator | jobs | within ±10% | ±50% | ±100% | ±1000% | Spearman | Kendall |\n"
                   "|---|---|---:|---:|---:|---:|---:|---:|---:|")


def queue_rows(cases: list[tuple[str, list[str], list[str]]], out: Path) -> list[str]:
    """The policy table's rows (Markdown), one per case and policy."""
    rows = []
    for label, trace, options in cases:
        s = simulate(trace, options, out / label.replace(" ", "-"))
        fifo, sjf = s["fifo"]["overall"]["mean_jct"], s["sjf"]["overall"]["mean_jct"]
        for policy in POLICIES:
            o = s[policy]["overall"]
            gap = f"{(fifo - o['mean_jct']) / (fifo - sjf):.0%}" if fifo > sjf else "no gap"
            rows.append(f"| {label} | {policy} | {hours(o['mean_jct'])} | {hours(o['p99_jct'])} | "
                        f"{hours(o['mean_queue_delay'])} | {hours(o['p99_queue_delay'])} | {gap} |")
    return rows


def accuracy_rows(cases: list[tuple[str, list[str], list[str]]]) -> list[str]:
    """The estimators' accuracy rows (Markdown), one per trace and estimator."""
    rows, seen = [], set()
    for label, trace, _ in cases:
        key = trace[0]
        if key in seen:
            continue
        seen.add(key)
        window = trace[trace.index("--start"):trace.index("--start") + 4] if "--start" in trace else []
        source = [key, *window[:2]]
        name = label.rsplit(" load", 1)[0]
        for estimator in ("history", "lgbm"):
            m = json.loads(dlcluster("predict", "eval", *source, "--estimator", estimator, "--json"))
            rows.append(f"| {name} | {estimator} | {m['jobs']:,} | {m['within_10']:.0%} | {m['within_50']:.0%} | "
                        f"{m['within_100']:.0%} | {m['within_1000']:.0%} | {m['spearman']:.2f} | "
                        f"{m['kendall']:.2f} |")
    return rows


def main() -> None:
    """Run every case and print the two tables (Markdown)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("-o", "--output", type=Path, default=ROOT / "bench-out/headline")
    parser.add_argument("--days", type=int, default=60, help="days of each generated look-alike (default 60)")
    ns = parser.parse_args()
    ns.output.mkdir(parents=True, exist_ok=True)
    cases = traces(ns.output, ns.days)
    print("\n".join([QUEUE_HEADER, *queue_rows(cases, ns.output), "", ACCURACY_HEADER, *accuracy_rows(cases)]))


if __name__ == "__main__":
    main()
