"""Locality in the simulator: what waiting for a consolidated placement buys when spreading and sharing slow jobs.

Run from the project root: ``.venv/bin/python examples/locality_sweep.py [-o DIR]``.

On the public Philly table (Oct–Nov 2017 submissions, the 11 VCs of 8-GPU servers), with
arrivals made 2 and 3 times as dense (``--load``) so that jobs queue, it runs ``dlcluster
simulate`` under FIFO with ``--speed-model philly`` (a job spread over more servers than it
needs, or sharing a server with another job, runs slower: factors from the Philly study's
Tables 4 and 5) for ``--placement relax:T`` — consolidate, or once a job has waited T seconds
any first-fit split — over T from 0 (split at once when consolidation fails) to a day, then
``consolidate`` (T infinite: never split a job that fits a server) and ``dedicated`` (the
study's guideline 2: multi-GPU jobs alone on their servers). It prints the mean queueing
delay, mean JCT and the GPU-hours lost to slowness (all jobs, and the multi-GPU jobs' share)
as a Markdown table, after a full-speed reference (``consolidate``, ``--speed-model none``),
and plots them against T (``DIR/locality.svg`` and ``.png``).
Everything goes through the command line; outputs stay in DIR.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import polars as pl

ROOT = Path(__file__).resolve().parent.parent
PHILLY = ROOT.parent / "shared/data/philly"
WINDOW = ["--start", "2017-10-01 00:00:00", "--end", "2017-11-30 23:59:00"]
LOADS = (2, 3)
RELAX = (0, 600, 3600, 14400, 86400)  # seconds a job waits for consolidation before it accepts a split
PLACEMENTS = (*(f"relax:{t}" for t in RELAX), "consolidate", "dedicated")
SERVER_GPUS = 8  # every server of vc_nodes.csv: a job needs ceil(GPUs / 8) servers


def run(placement: str, load: int, folder: Path, speed: str = "philly") -> tuple[dict, pl.DataFrame]:
    """``dlcluster simulate`` on the Philly window, FIFO, with a speed model (cached in ``folder``)."""
    summary = folder / "summary.json"
    if not summary.exists():
        args = [str(PHILLY / "jobs_processed.csv"), "--cluster", str(PHILLY / "vc_nodes.csv"), "--skip-unknown-vcs",
                *WINDOW, "--load", str(load), "-p", "fifo", "--placement", placement, "--speed-model", speed,
                "-o", str(folder)]
        done = subprocess.run([sys.executable, "-m", "dlcluster", "simulate", *args], capture_output=True, text=True,
                              check=False)
        if done.returncode:
            raise SystemExit(f"dlcluster simulate {' '.join(args)} failed: {done.stderr.strip()}")
    return json.loads(summary.read_text()), pl.read_parquet(folder / "jobs.parquet")


def label(placement: str) -> str:
    """T of a placement as text: seconds as minutes, hours or days; consolidate is T = ∞."""
    if not placement.startswith("relax:"):
        return "∞" if placement == "consolidate" else "–"
    t = int(placement.split(":")[1])
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if t >= size and t % size == 0:
            return f"{t // size} {unit}"
    return f"{t} s"


def row(load: int, placement: str, summary: dict, jobs: pl.DataFrame) -> dict:
    """The figures of one run, for the table and the plot."""
    o = summary["overall"]
    if "mean_speed" not in jobs.columns:  # the full-speed reference: nothing lost, nothing to count
        return {"load": load, "placement": f"{placement} at full speed", "T": label(placement),
                "mean_queue_h": o["mean_queue_delay"] / 3600, "mean_jct_h": o["mean_jct"] / 3600,
                "slowdown_gpu_h": None, "multi_gpu_h": None, "spread_jobs": None}
    ran = jobs.filter(pl.col("mean_speed").is_not_null())
    # FIFO never preempts: a job's work is its duration, its time running duration / mean speed
    lost = ran.select(pl.col("gpu_num"), (pl.col("gpu_num") * pl.col("duration") * (1 / pl.col("mean_speed") - 1)
                                          / 3600).alias("lost"))
    multi = float(lost.filter(pl.col("gpu_num") > 1)["lost"].sum())
    spread = ran.filter(pl.col("nodes_spanned") > (pl.col("gpu_num") + SERVER_GPUS - 1) // SERVER_GPUS).height
    return {"load": load, "placement": placement, "T": label(placement), "mean_queue_h": o["mean_queue_delay"] / 3600,
            "mean_jct_h": o["mean_jct"] / 3600, "slowdown_gpu_h": o["slowdown_gpu_hours"], "multi_gpu_h": multi,
            "spread_jobs": spread}


def sweep(out: Path) -> list[dict]:
    """Every placement at every load, after consolidate without a speed model (what full speed would show)."""
    rows = []
    for load in LOADS:
        rows.append(row(load, "consolidate", *run("consolidate", load, out / f"load-{load}/full-speed", "none")))
        rows += [row(load, p, *run(p, load, out / f"load-{load}" / p.replace(":", "-"))) for p in PLACEMENTS]
    return rows


def table(rows: list[dict]) -> str:
    """Markdown table of the rows."""
    lines = ["| load | placement | T | mean queue h | mean JCT h | slowdown GPU-h | of which multi-GPU jobs "
             "| jobs spread |", "|---:|---|---:|---:|---:|---:|---:|---:|"]
    def n(value: float | None) -> str:
        return "–" if value is None else f"{value:,.0f}"

    for r in rows:
        lines.append(f"| {r['load']} | {r['placement'].split(':')[0]} | {r['T']} | {r['mean_queue_h']:.2f} | "
                     f"{r['mean_jct_h']:.2f} | {n(r['slowdown_gpu_h'])} | {n(r['multi_gpu_h'])} | "
                     f"{n(r['spread_jobs'])} |")
    return "\n".join(lines)


def figure(rows: list[dict], path: Path) -> None:
    """Mean queueing delay, mean JCT and slowdown GPU-hours against T, one line per load; dedicated apart; dashed:
    the full-speed reference."""
    from matplotlib.figure import Figure
    from matplotlib.ticker import StrMethodFormatter

    from dlcluster.predict.evaluate import save_figure

    ticks = [label(p) for p in PLACEMENTS[:-1]]
    fig = Figure(figsize=(11, 3.6), layout="constrained")
    panels = (("mean_queue_h", "mean queueing delay (h)"), ("mean_jct_h", "mean JCT (h)"),
              ("slowdown_gpu_h", "GPU-hours lost to slowness"))
    for k, (key, name) in enumerate(panels):
        ax = fig.add_subplot(1, 3, k + 1)
        for load, colour in zip(LOADS, ("tab:blue", "tab:orange"), strict=False):
            part = {r["placement"]: r[key] for r in rows if r["load"] == load and r["slowdown_gpu_h"] is not None}
            ax.plot(range(len(ticks)), [part[p] for p in PLACEMENTS[:-1]], marker="o", color=colour,
                    label=f"load {load}")
            ax.plot([len(ticks)], [part["dedicated"]], marker="s", color=colour, ls="none")
            full = next(r[key] for r in rows if r["load"] == load and r["slowdown_gpu_h"] is None)
            if full is not None:  # (nothing is lost at full speed: no line in the third panel)
                ax.axhline(full, color=colour, ls="--", lw=0.8, label=f"load {load}, full speed (consolidate)")
        ax.set_xticks(range(len(ticks) + 1), [*ticks, "dedicated"], fontsize=8)
        ax.set_xlabel("T: wait for consolidation before a split")
        ax.set_ylabel(name)
        ax.yaxis.set_major_formatter(StrMethodFormatter("{x:,.0f}" if key == "slowdown_gpu_h" else "{x:g}"))
        ax.grid(ls=":")
        ax.legend(fontsize=8, frameon=False)
    fig.suptitle("Philly Oct–Nov 2017, FIFO, --speed-model philly: relax:T (T = ∞: consolidate) and dedicated",
                 fontsize=10)
    save_figure(fig, path)


def main() -> None:
    """Run the sweep, print the table, write the figure."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-o", "--output", type=Path, default=ROOT / "bench-out/locality")
    args = parser.parse_args()
    if not (PHILLY / "jobs_processed.csv").exists():
        raise SystemExit("../shared/data/philly is needed for this example")
    rows = sweep(args.output)
    figure(rows, args.output / "locality")
    print(f"figure: {args.output / 'locality.svg'}")
    print(table(rows))


if __name__ == "__main__":
    main()
