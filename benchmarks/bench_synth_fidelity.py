"""Generator fidelity downstream: the queueing of 30 generated Philly traces against the real table's (docs/synth.md).

Run from the project root: ``.venv/bin/python -m benchmarks.bench_synth_fidelity`` (about 200 CPU s:
31 traces × 2 policies × 2 loads of ~80k jobs each, which is why it runs here and not in the test suite). It prints
the table and its CPU seconds, then checks that every row of docs/synth.md's downstream table is the one just
computed and that the claims the page makes about it hold; it exits with status 1 if one does not.
"""

from __future__ import annotations

import resource
import sys

import polars as pl

from benchmarks._measure import ROOT, SHARED

DOC_SEEDS = range(1, 31)  # the docs' downstream table: the philly preset with these seeds against the real table


def claims(table: pl.DataFrame) -> list[str]:
    """The page's claims about the table that do not hold (none: all hold)."""
    failed = []
    if not ((table["low_s"] <= table["real_s"]) & (table["real_s"] <= table["high_s"])).all():
        failed.append("the real values lie within the seeds' range")
    fifo_mean = table.filter((pl.col("load") == 2.0) & (pl.col("policy") == "fifo") & (pl.col("statistic") == "mean"))
    if not fifo_mean["high_s"][0] / fifo_mean["low_s"][0] > 10.0:
        failed.append("at load 2 one seed's FIFO mean differs from another's by more than a factor of ten")
    error = {(r["load"], r["policy"], r["statistic"]): r["relative_error"] for r in table.iter_rows(named=True)}
    if not (all(0 < error[(2.0, p, "mean")] < 0.15 for p in ("fifo", "sjf")) and abs(error[(2.0, "fifo", "p99")]) < 0.15
            and round(error[(2.0, "sjf", "p99")], 2) == 0.46):
        failed.append("at load 2 the medians are within 15% of the real means and FIFO p99, SJF's p99 46% above")
    fifo = table.filter((pl.col("policy") == "fifo") & (pl.col("statistic") == "mean")).sort("load")
    if (round(fifo["real_s"][1] / fifo["real_s"][0]), round(fifo["generated_s"][1] / fifo["generated_s"][0])) != (7, 3):
        failed.append("the real FIFO queueing grows almost sevenfold from load 2 to 3, the generated median threefold")
    low = [e for (load, p, s), e in error.items() if load == 3.0 and (p, s) != ("sjf", "p99")]
    if (round(min(low), 2), round(max(low), 2)) != (-0.61, -0.42):
        failed.append("at load 3 the other errors lie between −61% and −42%")
    return failed


def main() -> None:
    """Regenerate the table, print it, check the page."""
    from dlcluster.io import read_trace
    from dlcluster.io.cluster_spec import read_cluster_spec
    from dlcluster.synth import generate, load_preset
    from dlcluster.synth.downstream import markdown_over_seeds, over_seeds

    philly = SHARED / "data/philly"
    if not (philly / "jobs_processed.csv").exists():
        print("../shared/data/philly is not available: the fidelity table is skipped")
        return
    real = read_trace(philly / "jobs_processed.csv")
    generated = [generate(load_preset("philly"), seed=s) for s in DOC_SEEDS]
    table = over_seeds(real, generated, read_cluster_spec(philly / "vc_nodes.csv"), loads=(2.0, 3.0))
    rows = markdown_over_seeds(table)
    cpu = resource.getrusage(resource.RUSAGE_SELF)
    print(rows, end="")
    print(f"CPU {cpu.ru_utime + cpu.ru_stime:.1f} s, peak {cpu.ru_maxrss / 1024:,.0f} MiB")
    doc = (ROOT / "docs" / "synth.md").read_text(encoding="utf-8")
    missing = [row for row in rows.splitlines()[2:] if row not in doc]
    failed = [f"row not in docs/synth.md: {row}" for row in missing] + [f"claim fails: {c}" for c in claims(table)]
    for line in failed:
        print(line)
    if failed:
        sys.exit(1)
    print("docs/synth.md's downstream table and its claims: as computed")


if __name__ == "__main__":
    main()
