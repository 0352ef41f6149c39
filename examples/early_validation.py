"""Catch failures early: what retries cost, what a no-retry rule and a validation pool save.

Run from the project root: ``.venv/bin/python examples/early_validation.py [-o DIR] [--days N]``.

On a generated Helios Saturn look-alike (``dlcluster synth --preset helios-saturn --days N
--seed 1``: Helios' failure mix, most failed jobs failing within minutes), it runs ``dlcluster
simulate -p fifo --load 0.5 --failures replay`` with: no retries; two retries per failed job
(as Philly did); two retries but none after a failure within 10 minutes; and two retries
behind a validation pool (every job first runs up to V minutes on one GPU of a pool of K).
It prints GPU-hours lost to failed attempts (early: within 10 minutes; late), retries, the
jobs validation caught, the main-cluster GPU-hours that saved and the pool's own GPU-hours,
and the mean queueing delay and JCT of the jobs that completed, and plots them
(``DIR/failures.svg`` and ``.png``). Everything goes through the command line; outputs stay in DIR.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RUNS = {
    "no retries": [],
    "2 retries": ["--retries", "2"],
    "2 retries, none after an early failure": ["--retries", "2", "--no-retry-within", "10"],
    **{f"2 retries, validation {v} min on {k} GPUs": ["--retries", "2", "--validation-minutes", str(v),
                                                      "--validation-gpus", str(k)]
       for v, k in ((2, 16), (5, 16), (5, 8), (10, 64))},
}


def dlcluster(*args: str) -> None:
    """Run a dlcluster command, failing loudly."""
    done = subprocess.run([sys.executable, "-m", "dlcluster", *args], capture_output=True, text=True, check=False)
    if done.returncode:
        raise SystemExit(f"dlcluster {' '.join(args)} failed: {done.stderr.strip()}")


def run(trace: Path, options: list[str], folder: Path) -> dict:
    """One simulation (cached in ``folder``); its summary."""
    summary = folder / "summary.json"
    if not summary.exists():
        dlcluster("simulate", str(trace), "-p", "fifo", "--load", "0.5", "--failures", "replay", *options,
                  "-o", str(folder))
    return json.loads(summary.read_text())


def rows(out: Path, days: int) -> list[dict]:
    """The figures of every run."""
    trace = out / f"helios-saturn-{days}d.parquet"
    if not trace.exists():
        dlcluster("synth", "--preset", "helios-saturn", "--days", str(days), "--seed", "1", "-o", str(trace))
    result = []
    for label, options in RUNS.items():
        f = run(trace, options, out / label.replace(" ", "-").replace(",", ""))["failures"]
        result.append({"run": label, **f})
    return result


def table(result: list[dict]) -> str:
    """Markdown table of the runs."""
    lines = ["| run | failed GPU-h (early / late) | retries | caught | GPU-h saved | pool GPU-h | pool wait min "
             "| completed: mean queue h | completed: mean JCT h |", "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in result:
        lines.append(f"| {r['run']} | {r['failed_gpu_hours']:,.0f} ({r['failed_gpu_hours_early']:,.0f} / "
                     f"{r['failed_gpu_hours_late']:,.0f}) | {r['retries']:,} | {r.get('validation_caught', 0):,} | "
                     f"{r.get('validation_gpu_hours_saved', 0):,.0f} | {r.get('validation_pool_gpu_hours', 0):,.0f} | "
                     f"{r.get('validation_mean_wait', 0) / 60:.1f} | "
                     f"{r['completed_mean_queue_delay'] / 3600:.2f} | {r['completed_mean_jct'] / 3600:.2f} |")
    return "\n".join(lines)


def figure(result: list[dict], path: Path) -> None:
    """GPU-hours lost to failed attempts (early and late), beside the completed jobs' queueing."""
    from matplotlib.figure import Figure

    from dlcluster.predict.evaluate import save_figure

    fig = Figure(figsize=(10, 3.8), layout="constrained")
    lost, queue = fig.add_subplot(1, 2, 1), fig.add_subplot(1, 2, 2)
    labels = [r["run"].replace("2 retries, ", "").replace("validation ", "valid. ") for r in result]
    y = range(len(result))
    early = [r["failed_gpu_hours_early"] / 1000 for r in result]
    late = [r["failed_gpu_hours_late"] / 1000 for r in result]
    lost.barh(y, late, color="tab:red", label="failed late")
    lost.barh(y, early, left=late, color="tab:orange", label="failed within 10 min")
    lost.set_yticks(list(y), labels, fontsize=8)
    lost.invert_yaxis()
    lost.set_xlabel("thousand GPU-hours lost to failed attempts")
    lost.legend(fontsize=8, frameon=False, loc="upper center", bbox_to_anchor=(0.5, -0.16), ncols=2)
    queue.barh(y, [r["completed_mean_queue_delay"] / 3600 for r in result], color="tab:blue")
    queue.set_yticks(list(y), [""] * len(result))
    queue.invert_yaxis()
    queue.set_xlabel("completed jobs' mean queueing delay (h)")
    fig.suptitle("Failures on a 30-day Saturn look-alike (FIFO, load 0.5): GPU time lost, and queueing", fontsize=10)
    save_figure(fig, path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-o", "--output", type=Path, default=ROOT / "bench-out/validation")
    parser.add_argument("--days", type=int, default=30)
    args = parser.parse_args()
    args.output.mkdir(parents=True, exist_ok=True)
    result = rows(args.output, args.days)
    figure(result, args.output / "failures")
    print(f"figure: {args.output / 'failures.svg'}")
    print(table(result))


if __name__ == "__main__":
    main()
