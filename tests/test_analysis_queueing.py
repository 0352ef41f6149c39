"""Section 6: fair-share versus fragmentation waiting, on a hand-made simulated run."""

from __future__ import annotations

import polars as pl
import pytest

from dlcluster.analysis.queueing import check_sim_jobs, decomposition_table, wait_causes
from dlcluster.cluster import ClusterSpec
from dlcluster.errors import InputError

SPEC = ClusterSpec({"a": (8, 8)})  # 16 GPUs in VC a


def _sim(rows: list[tuple]) -> pl.DataFrame:
    return pl.DataFrame(rows, schema=("job_id", "vc", "gpu_num", "submit", "start", "end"), orient="row")


def test_quota_wait_is_fair_share_and_free_but_unplaced_is_fragmentation() -> None:
    sim = _sim([
        ("big", "a", 12, 0, 0, 100),       # holds 12 of 16 GPUs on [0, 100)
        ("fs", "a", 8, 10, 100, 150),      # 4 free < 8 for its whole wait: fair-share, 90 s
        ("fr", "a", 4, 120, 160, 170),     # from 100 to 150 only 8 free ≥ 4, and 16 free on [150, 160)
        ("mix", "a", 6, 90, 150, 160),     # [90,100): 4 free < 6 (10 s fair); [100,150): 8 free (50 s frag)
    ])
    causes = {r["job_id"]: r for r in wait_causes(sim, SPEC).iter_rows(named=True)}
    assert set(causes) == {"fs", "fr", "mix"}
    assert causes["fs"]["fair_share_s"] == pytest.approx(90) and causes["fs"]["cause"] == "fair-share"
    assert causes["fr"]["fair_share_s"] == pytest.approx(0) and causes["fr"]["cause"] == "fragmentation"
    assert causes["mix"]["fair_share_s"] == pytest.approx(10) and causes["mix"]["fragmentation_s"] == pytest.approx(50)
    assert causes["mix"]["cause"] == "fragmentation"
    table = decomposition_table(wait_causes(sim, SPEC))
    cell = {(r["bucket"], r["cause"]): r["jobs"] for r in table.iter_rows(named=True)}
    assert cell[("5-8", "fair-share")] == 1 and cell[("5-8", "fragmentation")] == 1
    assert cell[("2-4", "fragmentation")] == 1 and cell[(">8", "fair-share")] == 0


def test_waiting_before_any_job_runs_counts_against_the_vc_size() -> None:
    # a 20-GPU job in a 16-GPU VC can only be quota-bound; a lone job starting late was never short of GPUs
    big = ClusterSpec({"a": (8, 8), "b": (8,)})
    sim = _sim([("x", "a", 20, 0, 50, 60), ("y", "b", 2, 0, 40, 45)])
    causes = {r["job_id"]: r for r in wait_causes(sim, big).iter_rows(named=True)}
    assert causes["x"]["fair_share_s"] == pytest.approx(50)
    assert causes["y"]["fair_share_s"] == pytest.approx(0)


def test_missing_column_is_one_clear_error() -> None:
    with pytest.raises(InputError, match=r"^sim\.parquet: missing column 'end'"):
        check_sim_jobs(_sim([("x", "a", 1, 0, 0, 1)]).drop("end"), "sim.parquet")


def _segs(rows: list[tuple]) -> pl.DataFrame:
    return pl.DataFrame(rows, schema={"job_id": pl.String, "vc": pl.String, "node": pl.Int32, "gpus": pl.Int32,
                                      "start": pl.Int64, "end": pl.Int64}, orient="row")


def test_placements_split_fragmentation_from_queue_order() -> None:
    # two 8-GPU nodes; p and q hold 4 GPUs on each node on [0, 100): 8 GPUs free but no node has 8
    sim = _sim([
        ("p", "a", 4, 0, 0, 100), ("q", "a", 4, 0, 0, 100),
        ("frag", "a", 8, 10, 100, 110),    # 8 free but none on one node (fragmentation), except while held
                                           # runs on [60, 70) and only 6 are free (fair-share, 10 s)
        ("held", "a", 2, 20, 60, 70),      # a node with 4 free existed all along: queue order, 40 s
    ])
    segs = _segs([("p", "a", 0, 4, 0, 100), ("q", "a", 1, 4, 0, 100), ("frag", "a", 0, 8, 100, 110),
                  ("held", "a", 1, 2, 60, 70)])
    causes = {r["job_id"]: r for r in wait_causes(sim, SPEC, segs).iter_rows(named=True)}
    assert causes["frag"]["fragmentation_s"] == pytest.approx(80) and causes["frag"]["fair_share_s"] == pytest.approx(10)
    assert causes["frag"]["cause"] == "fragmentation"
    assert causes["held"]["queue_order_s"] == pytest.approx(40) and causes["held"]["cause"] == "queue-order"
    assert causes["held"]["fair_share_s"] == pytest.approx(0) and causes["held"]["fragmentation_s"] == pytest.approx(0)
    cell = {(r["bucket"], r["cause"]): r["jobs"] for r in decomposition_table(wait_causes(sim, SPEC, segs)).iter_rows(
        named=True)}
    assert cell[("5-8", "fragmentation")] == 1 and cell[("2-4", "queue-order")] == 1


def test_multi_node_jobs_need_whole_free_nodes() -> None:
    # 12 GPUs over two 8-GPU nodes: one whole free node plus 4 on the other; 6 + 6 free does not do
    sim = _sim([("r", "a", 2, 0, 0, 50), ("s", "a", 2, 0, 0, 50), ("big", "a", 12, 5, 50, 60)])
    segs = _segs([("r", "a", 0, 2, 0, 50), ("s", "a", 1, 2, 0, 50), ("big", "a", 0, 8, 50, 60),
                  ("big", "a", 1, 4, 50, 60)])
    row = wait_causes(sim, SPEC, segs).row(0, named=True)
    assert row["job_id"] == "big" and row["fragmentation_s"] == pytest.approx(45) and row["cause"] == "fragmentation"


def _held_by_two(job: tuple, hold: int = 4) -> tuple[pl.DataFrame, pl.DataFrame]:
    """p and q hold ``hold`` GPUs on node 0 and node 1 on [0, 100); ``job`` waits until 100."""
    sim = _sim([("p", "a", hold, 0, 0, 100), ("q", "a", hold, 0, 0, 100), job])
    segs = _segs([("p", "a", 0, hold, 0, 100), ("q", "a", 1, hold, 0, 100), (job[0], "a", 0, job[2], 100, 110)])
    return sim, segs


def test_consolidate_spreads_a_job_larger_than_a_node() -> None:
    # 12 GPUs with 6 + 6 free: the artifact's rule finds no whole free node; the simulator's consolidate spreads
    sim, segs = _held_by_two(("big", "a", 12, 10, 100, 110), hold=2)
    artifact = wait_causes(sim, SPEC, segs).row(0, named=True)
    assert artifact["cause"] == "fragmentation" and artifact["fragmentation_s"] == pytest.approx(90)
    own = wait_causes(sim, SPEC, segs, "consolidate").row(0, named=True)
    assert own["cause"] == "queue-order" and own["fragmentation_s"] == pytest.approx(0)
    assert own["queue_order_s"] == pytest.approx(90)


def test_dedicated_needs_an_empty_node() -> None:
    # 7 GPUs free on each node: consolidate could place 4 GPUs, dedicated needs an empty node
    sim, segs = _held_by_two(("w", "a", 4, 10, 100, 110), hold=1)
    assert wait_causes(sim, SPEC, segs, "consolidate").row(0, named=True)["cause"] == "queue-order"
    row = wait_causes(sim, SPEC, segs, "dedicated").row(0, named=True)
    assert row["cause"] == "fragmentation" and row["fragmentation_s"] == pytest.approx(90)


def test_relax_fragments_only_until_its_wait() -> None:
    sim, segs = _held_by_two(("w", "a", 6, 10, 100, 110))
    row = wait_causes(sim, SPEC, segs, "relax:30").row(0, named=True)
    assert row["fragmentation_s"] == pytest.approx(30) and row["queue_order_s"] == pytest.approx(60)
    split = wait_causes(sim, SPEC, segs, "first-fit").row(0, named=True)
    assert split["fragmentation_s"] == pytest.approx(0) and split["cause"] == "queue-order"


def test_an_unknown_placement_does_not_split_queue_order() -> None:
    sim, segs = _held_by_two(("w", "a", 6, 10, 100, 110))
    out = wait_causes(sim, SPEC, segs, "my-plugin")
    assert "queue_order_s" not in out.columns and out.row(0, named=True)["cause"] == "fragmentation"
