"""Placements: first fit / spread, seeded random, locality relaxation; --seed reproducibility end to end."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_sim_helpers import (
    by_id,
    check_invariants,
    cli,
    jobs,
    scenarios,
    spec,
    write_trace,
)

from dlcluster.errors import ConfigError
from dlcluster.sim import simulate
from dlcluster.sim.placement import get_placement


def nodes_of(result, job: str) -> list[tuple[int, int]]:
    rows = result.placements.filter(pl.col("job_id") == job).sort("node")
    return list(zip(rows["node"].to_list(), rows["gpus"].to_list(), strict=True))


def test_first_fit_splits_across_nodes_in_index_order() -> None:
    t = jobs(("A", "v", 3, 0, 100), ("B", "v", 3, 1, 100), ("C", "v", 6, 2, 100))
    for name in ("first-fit", "spread"):
        r = simulate(t, spec(v=(4, 4, 4)), "fifo", placement=name)
        assert nodes_of(r, "A") == [(0, 3)]
        assert nodes_of(r, "B") == [(0, 1), (1, 2)]  # consolidate would put it whole on node 1
        assert nodes_of(r, "C") == [(1, 2), (2, 4)]
        assert by_id(r.jobs)["B"]["nodes_spanned"] == 2 and r.summary["placement"] == "first-fit"
    r = simulate(t, spec(v=(4, 4, 4)), "fifo")
    assert nodes_of(r, "B") == [(1, 3)]


def test_relax_waits_for_consolidation_then_accepts_a_split() -> None:
    # P and Q (3 GPUs) leave one GPU free on each node; R (2 GPUs) fits only split
    t = jobs(("P", "v", 3, 0, 100), ("Q", "v", 3, 0, 100), ("R", "v", 2, 5, 10))
    start = {name: by_id(simulate(t, spec(v=(4, 4)), "fifo", placement=name).jobs)["R"]["start"]
             for name in ("consolidate", "first-fit", "relax:30", "relax:200")}
    # relax:30: nothing happens at 35 but the wake-up the placement asked for
    assert start == {"consolidate": 100, "first-fit": 5, "relax:30": 35, "relax:200": 100}
    r = simulate(t, spec(v=(4, 4)), "fifo", placement="relax:30")
    assert by_id(r.jobs)["R"]["nodes_spanned"] == 2 and r.summary["placement"] == "relax:30"
    assert get_placement("relax").relax_after == 600


def test_relax_with_a_preemptive_policy_wakes_too() -> None:
    t = jobs(("P", "v", 3, 0, 100), ("Q", "v", 3, 0, 100), ("R", "v", 2, 5, 10))
    assert by_id(simulate(t, spec(v=(4, 4)), "tiresias", placement="relax:30").jobs)["R"]["start"] == 35


def test_random_is_seeded_and_differs_between_seeds() -> None:
    t = jobs(*[(f"j{i}", "v", 1 + i % 3, i, 50) for i in range(30)])
    cluster = spec(v=(2,) * 12)
    runs = {seed: simulate(t, cluster, "fifo", placement="random", seed=seed) for seed in (1, 1, 2)}
    a, b = simulate(t, cluster, "fifo", placement="random", seed=1), runs[1]
    assert a.placements.equals(b.placements) and a.jobs.equals(b.jobs)
    assert not runs[2].placements.equals(runs[1].placements)
    assert runs[1].summary["seed"] == 1


def test_unknown_or_malformed_placements() -> None:
    t = jobs(("A", "v", 1, 0, 1))
    with pytest.raises(ConfigError, match="unknown placement 'scatter'; choose one of: consolidate, first-fit"):
        simulate(t, spec(v=(1,)), "fifo", placement="scatter")
    with pytest.raises(ConfigError, match="placement 'random' takes no parameter"):
        simulate(t, spec(v=(1,)), "fifo", placement="random:3")
    with pytest.raises(ConfigError, match=r"placement 'relax:-1' \(relax_after\): expected at least 0 s"):
        simulate(t, spec(v=(1,)), "fifo", placement="relax:-1")
    with pytest.raises(ConfigError, match="unknown placement 'random' in compatibility mode"):
        simulate(t, spec(v=(1,)), "fifo", placement="random", compat="helios-artifact")


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios(), st.sampled_from(["first-fit", "random", "relax:10"]), st.sampled_from(["fifo", "srtf", "las"]))
def test_placement_invariants(scenario, placement: str, policy: str) -> None:
    table, cluster = scenario
    check_invariants(table, cluster, simulate(table, cluster, policy, placement=placement, seed=5))


def test_cli_seed_gives_byte_identical_outputs(tmp_path: Path) -> None:
    table = jobs(*[(f"j{i}", "v", 1 + i % 3, 1000 + i, 40) for i in range(40)])
    trace = write_trace(tmp_path / "t.parquet", table, spec(v=(2,) * 10))
    outs = []
    for run, seed in enumerate(("4", "4", "5")):
        out = tmp_path / f"out{run}"
        res = cli("simulate", str(trace), "--placement", "random", "--seed", seed, "-o", str(out))
        assert res.returncode == 0, res.stderr
        outs.append({f: (out / f).read_bytes() for f in ("jobs.parquet", "timeline.parquet", "placements.parquet")})
    assert outs[0] == outs[1]
    assert outs[0]["placements.parquet"] != outs[2]["placements.parquet"]
    res = cli("simulate", str(trace), "--placement", "relax", "--relax-after", "30", "-o", str(tmp_path / "r"))
    assert res.returncode == 0, res.stderr
    assert '"placement": "relax:30"' in (tmp_path / "r" / "summary.json").read_text()
    res = cli("simulate", str(trace), "--relax-after", "30", "-o", str(tmp_path / "x"))
    assert res.returncode == 2
    assert res.stderr.strip() == "error: --relax-after needs --placement relax (got --placement consolidate)"
