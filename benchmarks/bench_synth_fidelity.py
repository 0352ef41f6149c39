"""Generator fidelity downstream: the queueing of 240 generated Philly traces against the real table's (docs/synth.md).

Run from the project root: ``.venv/bin/python -m benchmarks.bench_synth_fidelity`` (1,464 and 1,296 CPU s, 24 and 23
minutes, in two runs on the 2-core development machine on 2026-12-06: the real table and 1,260 generated traces of
~80k jobs each — 240 seeds of the philly preset with the source's calendar, the same 240 without sessions, without
1-GPU sessions, without ``session_same`` and without the VC-hour part (SJF only), 60 with drawn days — each simulated
per policy and load; too long for the test suite, which checks how the table is computed and, on 60 seeds, the
load-3 rows). It prints the tables and its CPU seconds, then checks that every row of docs/synth.md's downstream
table is the one just computed and that the claims the page makes about them hold; it exits with status 1 if one
does not."""

from __future__ import annotations

import dataclasses
import resource
import sys

import polars as pl

from benchmarks._measure import ROOT, SHARED

DOC_SEEDS = range(1, 241)  # the docs' downstream table: the philly preset with these seeds against the real table
DRAWN_SEEDS = range(1, 61)  # the same with drawn calendars (the docs quote only its ranges)
BLOCK = 60  # the docs' seeds in sets of this many: how far their medians move from one set to the next


def _errors(table: pl.DataFrame) -> dict[tuple[float, str, str], float]:
    return {(r["load"], r["policy"], r["statistic"]): round(r["relative_error"], 2) for r in table.iter_rows(named=True)}


def claims(table: pl.DataFrame, drawn: pl.DataFrame, without: pl.DataFrame, streamless: pl.DataFrame,
           mixed: pl.DataFrame, daily: pl.DataFrame, blocks: list[pl.DataFrame]) -> list[str]:
    """The page's claims about the table (and the same with drawn calendars, without sessions, without 1-GPU
    sessions, without ``session_same``, without the VC-hour part, and per set of 60 seeds) that do not hold (none:
    all hold)."""
    failed = []
    if not ((table["low_s"] <= table["real_s"]) & (table["real_s"] <= table["high_s"])).all():
        failed.append("the real values lie within the seeds' range")
    error = _errors(table)
    if max(map(abs, error.values())) != 0.26:
        failed.append(f"all eight medians within 26% of the real value; measured {error}")
    value = {(r["load"], r["policy"], r["statistic"]): (r["real_s"], r["generated_s"])
             for r in table.iter_rows(named=True)}
    tail = [round(value[(2.0, "sjf", "p99")][k] / value[(2.0, "fifo", "mean")][k], 1) for k in (0, 1)]
    if tail != [5.4, 3.9]:
        failed.append(f"SJF's p99 at load 2 is 5.4 times FIFO's mean in the real table, 3.9 times in the generated "
                      f"medians; measured {tail}")
    rank = {(r["load"], r["policy"], r["statistic"]): round(r["real_rank"], 2) for r in table.iter_rows(named=True)}
    if not ((min(rank.values()), max(rank.values())) == (0.39, 0.78) and rank[(3.0, "sjf", "mean")] == 0.78
            and rank[(2.0, "sjf", "p99")] == 0.56):
        failed.append("each real value lies between the 39th and 78th percentiles of the seeds' values, SJF's mean at "
                      f"load 3 at the 78th, SJF's p99 at load 2 at the 56th; measured {rank}")
    drawn_rank = (round(float(drawn["real_rank"].min()), 2), round(float(drawn["real_rank"].max()), 2))
    if drawn_rank != (0.63, 0.98):
        failed.append("with drawn calendars the real values lie at the 63rd to 98th percentiles; "
                      f"measured {drawn_rank}")
    fifo_mean = table.filter((pl.col("load") == 2.0) & (pl.col("policy") == "fifo") & (pl.col("statistic") == "mean"))
    if not fifo_mean["high_s"][0] / fifo_mean["low_s"][0] > 10.0:
        failed.append("at load 2 one seed's FIFO mean differs from another's by more than a factor of ten")
    fifo = table.filter((pl.col("policy") == "fifo") & (pl.col("statistic") == "mean")).sort("load")
    if round(fifo["real_s"][1] / fifo["real_s"][0]) != 7:
        failed.append("the real table's FIFO queueing grows sevenfold from load 2 to load 3")
    spans = {load: (round(float(part["relative_error"].min()), 2), round(float(part["relative_error"].max()), 2))
             for (load,), part in drawn.group_by("load")}
    if spans != {3.0: (-0.63, -0.46), 2.0: (-0.46, -0.22)}:
        failed.append("with drawn calendars the load-3 medians are 46% to 63% below the real ones (load 2: −46% to "
                      f"−22%); measured {spans}")
    for name, part, expected in (("sessions", without, (-0.45, -0.33)), ("1-GPU sessions", streamless, (-0.32, -0.24)),
                                 ("session_same", mixed, (-0.13, -0.13)), ("the VC-hour part", daily, (-0.28, -0.16))):
        errors = _errors(part)
        if (errors[(2.0, "sjf", "p99")], errors[(3.0, "sjf", "p99")]) != expected:
            failed.append(f"without {name} SJF's p99 is {-expected[0]:.0%} (load 2) and {-expected[1]:.0%} (load 3) "
                          f"below the real one; measured {errors}")
    per_block = [_errors(b) for b in blocks]
    moved = {case: round(max(b[case] for b in per_block) - min(b[case] for b in per_block), 2) for case in per_block[0]}
    widest = max(moved, key=moved.__getitem__)
    sjf_p99 = [b[(2.0, "sjf", "p99")] for b in per_block]
    fifo_mean_2 = [b[(2.0, "fifo", "mean")] for b in per_block]
    if not (widest == (2.0, "sjf", "p99") and moved[widest] == 0.24 and (min(sjf_p99), max(sjf_p99)) == (-0.2, 0.04)
            and (min(fifo_mean_2), max(fifo_mean_2)) == (0.17, 0.33)):
        failed.append("with 60 seeds the medians moved by up to 24 points from one set to the next (SJF's p99 at "
                      f"load 2: −20% to +4%; FIFO's mean at load 2 +17% to +33%); measured {moved}")
    return failed


def main() -> None:
    """Regenerate the table, print it, check the page."""
    from dlcluster.io import read_trace
    from dlcluster.io.cluster_spec import read_cluster_spec
    from dlcluster.synth import generate, load_preset
    from dlcluster.synth.downstream import markdown_over_seeds, over_seeds, queueing_by_case, seeds_table

    philly = SHARED / "data/philly"
    if not (philly / "jobs_processed.csv").exists():
        print("../shared/data/philly is not available: the fidelity table is skipped")
        return
    real = read_trace(philly / "jobs_processed.csv")
    cluster = read_cluster_spec(philly / "vc_nodes.csv")
    preset = load_preset("philly")
    assert preset.batches is not None
    apart = dataclasses.replace(preset, batches=dataclasses.replace(preset.batches, session_gaps=None,
                                                                    one_gpu_session_gaps=None))
    multi_only = dataclasses.replace(preset, batches=dataclasses.replace(preset.batches, one_gpu_session_gaps=None))
    by_chance = dataclasses.replace(preset, batches=dataclasses.replace(preset.batches, session_same=0.0))
    by_day = dataclasses.replace(preset, batches=dataclasses.replace(preset.batches, vc_hour_sd=0.0))
    # generators: one trace in memory at a time
    cases = queueing_by_case(real, cluster)
    runs = [queueing_by_case(generate(preset, seed=s), cluster) for s in DOC_SEEDS]
    table = seeds_table(cases, runs)
    blocks = [seeds_table(cases, runs[i: i + BLOCK]) for i in range(0, len(runs), BLOCK)]
    drawn = over_seeds(real, (generate(preset, seed=s, calendar="drawn") for s in DRAWN_SEEDS), cluster,
                       loads=(2.0, 3.0))
    without = over_seeds(real, (generate(apart, seed=s) for s in DOC_SEEDS), cluster, loads=(2.0, 3.0),
                         policies=("sjf",))
    streamless = over_seeds(real, (generate(multi_only, seed=s) for s in DOC_SEEDS), cluster, loads=(2.0, 3.0),
                            policies=("sjf",))
    mixed = over_seeds(real, (generate(by_chance, seed=s) for s in DOC_SEEDS), cluster, loads=(2.0, 3.0),
                       policies=("sjf",))
    daily = over_seeds(real, (generate(by_day, seed=s) for s in DOC_SEEDS), cluster, loads=(2.0, 3.0),
                       policies=("sjf",))
    rows = markdown_over_seeds(table)
    cpu = resource.getrusage(resource.RUSAGE_SELF)
    print(rows, end="")
    print("drawn calendars:")
    print(markdown_over_seeds(drawn), end="")
    for i, block in enumerate(blocks):
        print(f"seeds {DOC_SEEDS[i * BLOCK]}-{DOC_SEEDS[min(len(runs), (i + 1) * BLOCK) - 1]}: errors "
              + " ".join(f"{e:+.0%}" for e in block["relative_error"]))
    print("without sessions:")
    print(markdown_over_seeds(without), end="")
    print("without 1-GPU sessions:")
    print(markdown_over_seeds(streamless), end="")
    print("without session_same:")
    print(markdown_over_seeds(mixed), end="")
    print("without the VC-hour part:")
    print(markdown_over_seeds(daily), end="")
    print(f"CPU {cpu.ru_utime + cpu.ru_stime:.1f} s, peak {cpu.ru_maxrss / 1024:,.0f} MiB")
    doc = (ROOT / "docs" / "synth.md").read_text(encoding="utf-8")
    missing = [row for row in rows.splitlines()[2:] if row not in doc]
    failed = [f"row not in docs/synth.md: {row}" for row in missing]
    failed += [f"claim fails: {c}" for c in claims(table, drawn, without, streamless, mixed, daily, blocks)]
    readme = " ".join((ROOT / "README.md").read_text(encoding="utf-8").split())
    if ("is within 26% of the real for all eight (the real value between the 39th and the 78th percentile of the "
            "seeds' values)") not in readme:
        failed.append("README.md does not quote the claims checked above (within 26% for all eight, the real value "
                      "between the 39th and the 78th percentile)")
    for line in failed:
        print(line)
    if failed:
        sys.exit(1)
    print("docs/synth.md's downstream table and its claims: as computed")


if __name__ == "__main__":
    main()
