"""Jobs whose CPU demand no placement can ever meet: split off as unschedulable before the run."""

from __future__ import annotations

from dataclasses import replace

import polars as pl

from dlcluster.sim.cluster import VCState
from dlcluster.sim.placement import Placement
from dlcluster.sim.prepare import Prepared

FOREVER = 2**62  # seconds waited: a placement that relaxes after a wait has relaxed by then


def exclude_cpu_misfits(prep: Prepared, placement: Placement) -> Prepared:
    """Move jobs that ``placement`` cannot fit even on their empty VC (GPUs and CPUs together) to the unschedulable."""
    spec = prep.spec
    if spec.cpus is None:
        return prep
    shapes = prep.jobs.filter(pl.col("cpu_num") > 0).select("group", "gpu_num", "cpu_num").unique()
    # a handful of distinct (VC, GPUs, CPUs) shapes: one trial placement on the empty VC each
    fits = [placement.place(VCState(spec.vcs[g], spec.cpus[g]), gpus, FOREVER, cpus) is not None
            for g, gpus, cpus in shapes.iter_rows()]
    misfits = shapes.filter(~pl.Series(fits, dtype=pl.Boolean))
    if misfits.height == 0:
        return prep
    vc_cpus = pl.DataFrame({"group": list(spec.cpus), "vc_cpus": [sum(c) for c in spec.cpus.values()]})
    bad = prep.jobs.join(misfits, on=["group", "gpu_num", "cpu_num"], how="semi", maintain_order="left")
    reasons = bad.join(vc_cpus, on="group", how="left", maintain_order="left").select(
        "job_id", "vc", "group", "gpu_num", "user",
        pl.when(pl.col("cpu_num") > pl.col("vc_cpus"))
        .then(pl.format("needs {} CPUs, its VC has {}", "cpu_num", "vc_cpus"))
        .otherwise(pl.format(f"needs {{}} GPUs with {{}} CPUs: no {placement.name} placement fits them even on its "
                             "empty VC", "gpu_num", "cpu_num"))
        .alias("reason"),
    )
    kept = prep.jobs.join(misfits, on=["group", "gpu_num", "cpu_num"], how="anti", maintain_order="left")
    return replace(prep, jobs=kept, unschedulable=pl.concat([prep.unschedulable, reasons]))
