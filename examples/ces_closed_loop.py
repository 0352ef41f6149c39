"""CES in the simulator: what powering idle nodes off saves, and what it costs the jobs.

Run from the project root: ``.venv/bin/python examples/ces_closed_loop.py [-o DIR] [--sweep]``.

On the public Philly table (Oct–Nov 2017 submissions, the 11 VCs of 8-GPU nodes the Helios
artifact simulates), it runs ``dlcluster simulate`` with FIFO and QSSF (``lgbm`` estimates
made at each simulated submission) three ways: every node always on, ``--power ces`` with
the study's rule (Philly hyperparameters), and with dlcluster's quantile rule; nodes boot
in 300 s. It prints energy, the share saved, the utilisation of powered nodes, mean and p99
queueing delay and the jobs that waited for a boot.

``--sweep`` instead sweeps the risk knobs under FIFO — the quantile rule's accepted
shortage probability and the study's buffer of idle nodes — and plots energy saved against
the added mean and p99 queueing delay (``DIR/tradeoff.svg`` and ``.png``), so an operator
can pick an operating point. Everything goes through the command line; outputs stay in DIR.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PHILLY = ROOT.parent / "shared/data/philly"
WINDOW = ["--start", "2017-10-01 00:00:00", "--end", "2017-11-30 23:59:00"]
CONFIGS = {"always on": ["--power", "on"], "ces helios": ["--power", "ces"],
           "ces quantile": ["--power", "ces", "--ces-rule", "quantile"]}
RISKS = (0.3, 0.1, 0.05, 0.02, 0.01)
BUFFERS = (5, 10, 20, 40, 80)


def run(policy: str, options: list[str], folder: Path) -> dict:
    """``dlcluster simulate`` on the Philly window (cached in ``folder``); its summary."""
    summary = folder / "summary.json"
    if not summary.exists():
        estimates = ["--estimates", "lgbm"] if policy == "qssf" else []
        args = [str(PHILLY / "jobs_processed.csv"), "--cluster", str(PHILLY / "vc_nodes.csv"), "--skip-unknown-vcs",
                *WINDOW, "-p", policy, *estimates, *options, "-o", str(folder)]
        done = subprocess.run([sys.executable, "-m", "dlcluster", "simulate", *args], capture_output=True, text=True,
                              check=False)
        if done.returncode:
            raise SystemExit(f"dlcluster simulate {' '.join(args)} failed: {done.stderr.strip()}")
    return json.loads(summary.read_text())


def row(label: str, policy: str, s: dict) -> dict:
    """The figures of one run, for the tables."""
    o, e = s["overall"], s.get("energy") or {}
    return {"run": label, "policy": policy, "energy_mwh": e.get("energy_kwh", 0) / 1000,
            "saved_pct": e.get("saved_pct", 0.0), "util_powered_pct": 100 * (e.get("utilization_powered") or 0),
            "mean_queue_s": o["mean_queue_delay"], "p99_queue_s": o["p99_queue_delay"],
            "boot_delayed_jobs": e.get("boot_delayed_jobs", 0)}


def table(rows: list[dict]) -> str:
    """Markdown table of the rows."""
    lines = ["| policy | power | energy MWh | saved | powered-node utilisation | mean queue s | p99 queue s "
             "| jobs delayed by a boot |", "|---|---|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| {r['policy']} | {r['run']} | {r['energy_mwh']:.1f} | {r['saved_pct']:.1f}% | "
                     f"{r['util_powered_pct']:.1f}% | {r['mean_queue_s']:.1f} | {r['p99_queue_s']:.0f} | "
                     f"{r['boot_delayed_jobs']:,} |")
    return "\n".join(lines)


def headline(out: Path) -> list[dict]:
    """FIFO and QSSF, always on and with both rules."""
    rows = []
    for policy in ("fifo", "qssf"):
        for label, options in CONFIGS.items():
            rows.append(row(label, policy, run(policy, options, out / policy / label.replace(" ", "-"))))
    return rows


def sweep(out: Path) -> list[dict]:
    """FIFO under each risk of the quantile rule and each buffer of the study's rule."""
    rows = [row("always on", "fifo", run("fifo", CONFIGS["always on"], out / "fifo/always-on"))]
    for risk in RISKS:
        rows.append(row(f"quantile risk {risk}", "fifo", run("fifo", ["--power", "ces", "--ces-rule", "quantile",
                                                                      "--risk", str(risk)], out / f"sweep/risk-{risk}")))
    for buffer in BUFFERS:
        rows.append(row(f"helios buffer {buffer}", "fifo",
                        run("fifo", ["--power", "ces", "--buffer", str(buffer)], out / f"sweep/buffer-{buffer}")))
    return rows


def tradeoff_figure(rows: list[dict], path: Path) -> None:
    """Energy saved against added mean and p99 queueing delay, one line per rule."""
    from matplotlib.figure import Figure

    from dlcluster.predict.evaluate import save_figure

    base = rows[0]
    fig = Figure(figsize=(9, 3.6), layout="constrained")
    for k, (key, name) in enumerate((("mean_queue_s", "mean"), ("p99_queue_s", "p99"))):
        ax = fig.add_subplot(1, 2, k + 1)
        for rule, marker in (("quantile risk", "o"), ("helios buffer", "s")):
            part = [r for r in rows if r["run"].startswith(rule)]
            xs = [r[key] - base[key] for r in part]
            ys = [r["saved_pct"] for r in part]
            ax.plot(xs, ys, marker=marker, label=f"{rule.split()[0]} rule")
            for r, x, y in zip(part, xs, ys, strict=True):
                ax.annotate(r["run"].split()[-1], (x, y), textcoords="offset points", xytext=(4, 4), fontsize=7)
        ax.set_xlabel(f"added {name} queueing delay (s) vs always on")
        ax.set_ylabel("energy saved (%)")
        ax.grid(ls=":")
        ax.legend(fontsize=8, frameon=False)
    fig.suptitle("CES on Philly Oct–Nov 2017 (FIFO, 300 s boots): energy saved vs queueing delay added", fontsize=10)
    save_figure(fig, path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-o", "--output", type=Path, default=ROOT / "bench-out/ces")
    parser.add_argument("--sweep", action="store_true", help="sweep the risk knobs instead and plot the trade-off")
    args = parser.parse_args()
    if not (PHILLY / "jobs_processed.csv").exists():
        raise SystemExit("../shared/data/philly is needed for this example")
    if args.sweep:
        rows = sweep(args.output)
        tradeoff_figure(rows, args.output / "tradeoff")
        print(f"figure: {args.output / 'tradeoff.svg'}")
    else:
        rows = headline(args.output)
    print(table(rows))


if __name__ == "__main__":
    main()
