"""Duration prediction: ``predict eval`` on a Saturn look-alike, and QSSF with online LightGBM on the Philly window.

Run from the project root: ``.venv/bin/python -m benchmarks.bench_predict [CASE ...]``
(cases: eval, qssf-philly). CPU seconds are user + sys of the whole process (``os.wait4``);
training and prediction seconds are the estimator's own CPU seconds as the command reports
them (``--json`` of ``predict eval``; ``summary.json`` of ``simulate``). Targets: eval with
``lgbm`` on ~700k GPU jobs under 180 s; QSSF-lgbm on the Philly window at load 2 under
30 s; online prediction tens of microseconds per job at most.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

from benchmarks._measure import (
    FIGURES,
    WORK,
    Table,
    command_measured,
    dlcluster,
    figures,
    run_cases,
    saturn_parquet,
)
from benchmarks.bench_sim import PHILLY, WINDOW

ESTIMATOR_FIGURES = (("retrains", 9, ",d"), ("train s", 9, ".1f"), ("predict s", 10, ".1f"), ("µs/job", 8, ".1f"))


def _estimator_cells(stats: dict) -> tuple[object, ...]:
    return stats["retrains"], stats["train_seconds"], stats["predict_seconds"], stats["predict_us_per_job"]


def evaluate() -> None:
    """``predict eval --json`` on the 183-day Saturn look-alike, per estimator."""
    trace = saturn_parquet(183)
    print(f"eval: predict eval on {trace.name} (daily retraining)")
    t = Table(("estimator", 10), *FIGURES, *ESTIMATOR_FIGURES, ("±50%", 6, ".2f"), ("Spearman", 9, ".2f"))
    for estimator in ("history", "lgbm"):
        m = command_measured(dlcluster("predict", "eval", str(trace), "--estimator", estimator, "--json"))
        out = json.loads(m.out)
        t.row(estimator, *figures(m, out["jobs"]), *_estimator_cells(out), out["within_50"], out["spearman"])


def qssf_philly() -> None:
    """``simulate -p qssf --estimates lgbm --load 2`` on the Philly window (whole process)."""
    if not (PHILLY / "jobs_processed.csv").exists():
        print("qssf-philly: ../shared/data/philly is not available: skipped")
        return
    print("qssf-philly: QSSF with online estimates, Philly window, --load 2")
    t = Table(("estimator", 10), *FIGURES, *ESTIMATOR_FIGURES)
    for estimator in ("history", "lgbm"):
        with tempfile.TemporaryDirectory(dir=WORK) as tmp:
            m = command_measured(dlcluster(
                "simulate", str(PHILLY / "jobs_processed.csv"), "--cluster", str(PHILLY / "vc_nodes.csv"), *WINDOW,
                "--skip-unknown-vcs", "-p", "qssf", "--estimates", estimator, "--load", "2", "-o", tmp))
            summary = json.loads((Path(tmp) / "summary.json").read_text())
        t.row(estimator, *figures(m, summary["overall"]["jobs"]), *_estimator_cells(summary["estimates"]))


CASES = {"eval": evaluate, "qssf-philly": qssf_philly}


def main(cases: list[str] | None = None) -> None:
    """Run the named cases (default: all)."""
    run_cases(CASES, cases)


if __name__ == "__main__":
    main(sys.argv[1:] or None)
