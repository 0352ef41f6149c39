"""Generator fidelity downstream: the queueing of 30 generated Philly traces against the real table's (docs/synth.md).

Run from the project root: ``.venv/bin/python -m benchmarks.bench_synth_fidelity`` (about 250 CPU s:
121 traces × 2 policies × 2 loads of ~80k jobs each, the 30 generated ones once with the source's calendar and once
with drawn days; the test suite checks load 3 alone). It prints the table and its CPU seconds, then checks that
every row of docs/synth.md's downstream table is the one just computed and that the claims the page makes about
both hold; it exits with status 1 if one does not.
"""

from __future__ import annotations

import resource
import sys

import polars as pl

from benchmarks._measure import ROOT, SHARED

DOC_SEEDS = range(1, 61)  # the docs' downstream table: the philly preset with these seeds against the real table


def claims(table: pl.DataFrame, drawn: pl.DataFrame) -> list[str]:
    """The page's claims about the table (and the same with drawn calendars) that do not hold (none: all hold)."""
    failed = []
    if not ((table["low_s"] <= table["real_s"]) & (table["real_s"] <= table["high_s"])).all():
        failed.append("the real values lie within the seeds' range")
    error = {(r["load"], r["policy"], r["statistic"]): round(r["relative_error"], 2) for r in table.iter_rows(named=True)}
    sjf_p99 = (error.pop((2.0, "sjf", "p99")), error.pop((3.0, "sjf", "p99")))
    fifo_mean_2 = error.pop((2.0, "fifo", "mean"))
    if not (max(map(abs, error.values())) == 0.16 and fifo_mean_2 == 0.31 and sjf_p99 == (-0.44, -0.34)):
        failed.append("five medians within 16% of the real value, FIFO's mean at load 2 31% above, SJF's p99 44% and "
                      "34% below")
    fifo_mean = table.filter((pl.col("load") == 2.0) & (pl.col("policy") == "fifo") & (pl.col("statistic") == "mean"))
    if not fifo_mean["high_s"][0] / fifo_mean["low_s"][0] > 10.0:
        failed.append("at load 2 one seed's FIFO mean differs from another's by more than a factor of ten")
    fifo = table.filter((pl.col("policy") == "fifo") & (pl.col("statistic") == "mean")).sort("load")
    if round(fifo["real_s"][1] / fifo["real_s"][0]) != 7:
        failed.append("the real table's FIFO queueing grows sevenfold from load 2 to load 3")
    spans = {load: (round(float(part["relative_error"].min()), 2), round(float(part["relative_error"].max()), 2))
             for (load,), part in drawn.group_by("load")}
    if spans != {3.0: (-0.58, -0.47), 2.0: (-0.46, -0.01)}:
        failed.append("with drawn calendars the load-3 medians are 47% to 58% below the real ones (load 2: −46% to "
                      f"−1%); measured {spans}")
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
    cluster = read_cluster_spec(philly / "vc_nodes.csv")
    table = over_seeds(real, [generate(load_preset("philly"), seed=s) for s in DOC_SEEDS], cluster, loads=(2.0, 3.0))
    drawn = over_seeds(real, [generate(load_preset("philly"), seed=s, calendar="drawn") for s in DOC_SEEDS], cluster,
                       loads=(2.0, 3.0))
    rows = markdown_over_seeds(table)
    cpu = resource.getrusage(resource.RUSAGE_SELF)
    print(rows, end="")
    print(f"CPU {cpu.ru_utime + cpu.ru_stime:.1f} s, peak {cpu.ru_maxrss / 1024:,.0f} MiB")
    doc = (ROOT / "docs" / "synth.md").read_text(encoding="utf-8")
    missing = [row for row in rows.splitlines()[2:] if row not in doc]
    failed = [f"row not in docs/synth.md: {row}" for row in missing] + [f"claim fails: {c}" for c in claims(table, drawn)]
    for line in failed:
        print(line)
    if failed:
        sys.exit(1)
    print("docs/synth.md's downstream table and its claims: as computed")


if __name__ == "__main__":
    main()
