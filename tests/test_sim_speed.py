"""The placement speed model (spread, colocation, its TOML file), its outputs, and the dedicated placement."""

from __future__ import annotations

import json
import math
from pathlib import Path

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_sim_helpers import by_id, check_invariants, cli, jobs, load_example, scenarios, spec, write_trace

from dlcluster.errors import ConfigError, InputError
from dlcluster.sim import simulate
from dlcluster.sim.placement import PLACEMENTS, get_placement
from dlcluster.sim.speed import (
    PHILLY_COLOCATED,
    PHILLY_COLOCATED_SPREAD,
    PHILLY_SPREAD,
    PlacementSpeed,
    read_speed_model,
    speed_model,
)


def model_file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "speed.toml"
    path.write_text(text)
    return path


# ---- the model ----------------------------------------------------------------------------------------------------

def test_philly_defaults_follow_tables_4_and_5() -> None:
    assert PHILLY_SPREAD[2] == pytest.approx(98.0 / 114.8)
    assert PHILLY_SPREAD[4] / PHILLY_SPREAD[2] == pytest.approx(40.94 / 43.66)  # Table 5, 4 vs 2 servers
    assert PHILLY_SPREAD[8] / PHILLY_SPREAD[2] == pytest.approx(28.56 / 43.66)  # Table 5, 8 vs 2 servers
    assert PHILLY_COLOCATED == pytest.approx(75.6 / 114.8)
    assert PHILLY_SPREAD[2] * PHILLY_COLOCATED_SPREAD == pytest.approx(74.1 / 114.8)  # Table 4's fourth cell
    m = speed_model("philly")
    assert m is not None and speed_model("none") is None
    # between the table's counts linear, after the last flat
    assert m.factor(3) == pytest.approx((PHILLY_SPREAD[2] + PHILLY_SPREAD[4]) / 2)
    assert m.factor(6) == pytest.approx((PHILLY_SPREAD[4] + PHILLY_SPREAD[8]) / 2)
    assert m.factor(1) == 1.0 and m.factor(20) == m.factor(8) == pytest.approx(PHILLY_SPREAD[8])


def test_rates_by_servers_spanned_and_colocation() -> None:
    m = PlacementSpeed({2: 0.8, 4: 0.5}, colocated=0.6, colocated_spread=0.9)
    from dlcluster.sim.jobs import Jobs

    j = Jobs(gpu=[1, 4, 16, 48], submit=[0] * 4, duration=[1] * 4)
    sizes = (8,) * 8
    assert m.rate(j, 0, [(0, 1)], sizes, 0) == 1.0 and m.rate(j, 0, [(0, 1)], sizes, 3) == 0.6
    assert m.rate(j, 1, [(0, 2), (1, 2)], sizes, 0) == 0.8  # fits one server: 2 servers is spread
    assert m.rate(j, 1, [(0, 2), (1, 2)], sizes, 1) == pytest.approx(0.8 * 0.9)
    assert m.rate(j, 2, [(0, 8), (1, 8)], sizes, 0) == 1.0  # 16 GPUs need 2 servers: not spread
    assert m.rate(j, 2, [(0, 4), (1, 4), (2, 4), (3, 4)], sizes, 0) == 0.5 / 0.8
    assert m.rate(j, 2, [(0, 8), (1, 8)], sizes, 2) == 0.6  # colocated on its fewest servers
    assert m.rate(j, 2, [(n, 2) for n in range(8)], sizes, 0) == 0.5 / 0.8  # beyond the table: flat
    assert m.rate(j, 3, [(n, 4) for n in range(12)], (8,) * 12, 0) == 1.0  # 12 servers vs its fewest 6: both past 4
    assert m.rate(j, 2, [(0, 4), (1, 4), (2, 4), (3, 4)], (4, 4, 4, 4), 0) == 1.0  # 4-GPU nodes: 4 is the fewest


def test_factors_multiply_a_job_at_most_10_000_times_slower_as_the_docs_say() -> None:
    from dlcluster.sim.jobs import Jobs
    from dlcluster.sim.speed import MIN_FACTOR

    m = PlacementSpeed({2: MIN_FACTOR}, colocated=MIN_FACTOR, colocated_spread=MIN_FACTOR)
    j = Jobs(gpu=[2], submit=[0], duration=[1])
    # spread over two servers and colocated: 0.01 × 0.01 (docs/simulator.md said "at most 100 times slower")
    assert m.rate(j, 0, [(0, 1), (1, 1)], (8, 8), 1) == pytest.approx(1e-4) == m.slowest()
    text = " ".join((Path(__file__).resolve().parents[1] / "docs/simulator.md").read_text().split())
    assert "at least 0.0001 of full speed: at most 10,000 times slower" in text and "a job at most 100" not in text


def test_a_16_gpu_job_spread_over_4_servers_ends_later_by_exactly_the_configured_factor(tmp_path: Path) -> None:
    model = read_speed_model(model_file(tmp_path, "spread = {2 = 0.8, 4 = 0.5}\n"))  # 4 vs 2 servers: 0.625
    # on two 8-GPU servers: its fewest, full speed
    two = by_id(simulate(jobs(("S", "v", 16, 0, 1000)), spec(v=(8, 8)), "fifo", speed=model).jobs)["S"]
    # X fills the only 8-GPU server (alone: full speed), so S can only take the four 4-GPU servers, whole
    t = jobs(("X", "v", 8, 0, 5000), ("S", "v", 16, 0, 1000))
    four = by_id(simulate(t, spec(v=(8, 4, 4, 4, 4)), "fifo", speed=model).jobs)
    assert (two["nodes_spanned"], four["S"]["nodes_spanned"]) == (2, 4)
    assert two["end"] - two["start"] == 1000 and four["S"]["start"] == 0
    assert four["S"]["end"] - four["S"]["start"] == 1000 / 0.625 == 1600
    assert four["X"]["end"] == 5000 and four["S"]["mean_speed"] == 0.625 and four["X"]["mean_speed"] == 1.0


def test_a_job_speeds_up_from_the_second_its_neighbour_leaves() -> None:
    t = jobs(("A", "v", 1, 0, 100), ("B", "v", 1, 0, 30))
    r = simulate(t, spec(v=(8,)), "fifo", speed=PlacementSpeed(colocated=0.75))
    out = by_id(r.jobs)
    # both at 0.75 until B's 30 s of work are done at 40; A has done 30 of its 100 then, 70 left at full speed
    assert out["B"]["end"] == 30 / 0.75 == 40
    assert out["A"]["end"] == 40 + (100 - 40 * 0.75) == 110
    assert out["A"]["mean_speed"] == 100 / 110 and out["B"]["mean_speed"] == 0.75
    assert r.summary["overall"]["slowdown_gpu_hours"] == (10 + 10) / 3600
    # the same with the Philly factor (not a round number: ends are whole seconds, rounded up)
    r = by_id(simulate(jobs(("A", "v", 1, 0, 1000), ("B", "v", 1, 0, 100)), spec(v=(8,)), "fifo",
                       speed=speed_model("philly")).jobs)
    b_end = math.ceil(100 / PHILLY_COLOCATED)
    assert r["B"]["end"] == b_end == 152
    assert r["A"]["end"] == b_end + math.ceil(1000 - b_end * PHILLY_COLOCATED) == 1052


def test_jobs_without_work_that_share_a_node_end_once() -> None:
    # the second start re-rates the first, which ends in that very second; its end must not be pushed twice
    t = jobs(("A", "v", 1, 0, 0), ("B", "v", 1, 0, 0), ("C", "v", 1, 0, 5))
    r = by_id(simulate(t, spec(v=(2,)), "fifo", speed=PlacementSpeed(colocated=0.5)).jobs)
    assert [(r[j]["start"], r[j]["end"]) for j in "ABC"] == [(0, 0), (0, 0), (0, 5)]


def test_a_preempted_job_owes_its_checkpoint_not_slowness() -> None:
    # SRTF: L (1 GPU) is preempted by the shorter S on a 1-GPU node; both alone on their node: full speed
    t = jobs(("L", "v", 1, 0, 100), ("S", "v", 1, 10, 20))
    r = simulate(t, spec(v=(1,)), "srtf", speed=speed_model("philly"))
    out = by_id(r.jobs)
    assert out["L"]["preemptions"] == 1 and out["L"]["end"] == 100 + 20 + 7  # 7 s checkpoint overhead
    assert out["L"]["mean_speed"] == 1.0 and r.summary["overall"]["slowdown_gpu_hours"] == 0


def test_las_whose_quantum_a_slowed_job_cannot_outrun_its_checkpoint_is_refused() -> None:
    # two 12-GPU jobs spread over 3 servers (at 0.97 of full speed) swapped every 61 s, each swap costing a 60 s
    # checkpoint: work left grew with every swap and the run never ended
    t = jobs(("a", "v", 1, 121, 10), ("b", "v", 12, 126, 61), ("c", "v", 12, 246, 601))
    cluster = spec(v=(8, 2, 2))
    slowest = PlacementSpeed().slowest()
    assert slowest == pytest.approx(PHILLY_SPREAD[8] * PHILLY_COLOCATED_SPREAD)  # spread over 8 servers, colocated
    with pytest.raises(ConfigError, match=r"policy 'las:61' with this speed model: a job may run at 0\.422 of full "
                                          r"speed.*use a quantum of at least 143 s \(las:143\)"):
        simulate(t, cluster, "las:61", speed=PlacementSpeed())
    assert simulate(t, cluster, "las:61").jobs["end"].null_count() == 0  # at full speed 61 s is enough
    done = simulate(t, cluster, "las:143", speed=PlacementSpeed()).jobs
    assert done["end"].null_count() == 0 and done.height == 3
    # a model slower still asks more of the default quantum: 60 s / (0.04 × 0.756 colocated) = 1,983.6 s
    with pytest.raises(ConfigError, match=r"policy 'las' .* at least 1984 s"):
        simulate(t, cluster, "las", speed=PlacementSpeed({2: 0.5, 3: 0.04}))


def test_results_gain_columns_only_with_a_speed_model() -> None:
    t = jobs(("A", "v", 1, 0, 100), ("B", "v", 2, 5, 50), ("Z", "v", 1, 7, 0), ("big", "v", 64, 0, 5))
    plain = simulate(t, spec(v=(8,), w=(8,)), "fifo")
    slow = simulate(t, spec(v=(8,), w=(8,)), "fifo", speed=speed_model("philly"))
    assert "mean_speed" not in plain.jobs.columns and "speed_model" not in plain.summary
    assert "slowdown_gpu_hours" not in plain.summary["overall"]
    assert slow.jobs.columns == [*plain.jobs.columns[:14], "mean_speed", "status"]
    assert slow.summary["speed_model"]["name"] == "philly"
    assert slow.summary["vcs"]["v"]["slowdown_gpu_hours"] == slow.summary["overall"]["slowdown_gpu_hours"] > 0
    speeds = by_id(slow.jobs)
    assert speeds["Z"]["mean_speed"] is None and speeds["big"]["mean_speed"] is None  # no run time; never ran


# ---- the TOML file ------------------------------------------------------------------------------------------------

COUNTS = "server counts must be whole numbers from 2 (1 server is 1.0) to 10,000"


@pytest.mark.parametrize(
    ("text", "field", "message"),
    [
        ("speed = 1\n", "speed", "unknown setting (known: spread, colocated, colocated_spread)"),
        ("spread = 0.8\n", "spread", "expected a table of server count = factor, e.g. {2 = 0.85, 4 = 0.8}"),
        ("spread = {1 = 0.9}\n", "spread.1", COUNTS),
        ("spread = {two = 0.9}\n", "spread.two", COUNTS),
        ("spread = {2 = 0}\n", "spread.2", "expected a number from 0.01 to 1, got 0"),
        ("spread = {2 = 1.5}\n", "spread.2", "expected a number from 0.01 to 1, got 1.5"),
        ("spread = {4 = 1.5}\n", "spread.4", "expected a number from 0.01 to 1, got 1.5"),  # docs/simulator.md's
        ("spread = {2 = true}\n", "spread.2", "expected a number from 0.01 to 1, got True"),
        ("spread = {2 = 0.5, 4 = 0.8}\n", "spread.4", "a job on more servers cannot run faster: 0.8 exceeds 0.5"),
        ("colocated = 'half'\n", "colocated", "expected a number from 0.01 to 1, got 'half'"),
        ("colocated_spread = -1\n", "colocated_spread", "expected a number from 0.01 to 1, got -1"),
        # (a factor of 1e-15 stopped the run with "never finished"; a count of 10**8 took 30 s and 4 GB)
        ("colocated = 1e-15\n", "colocated", "expected a number from 0.01 to 1, got 1e-15"),
        ("spread = {100000000 = 0.5}\n", "spread.100000000", "server counts must be whole numbers from 2"),
        # (both are valid TOML keys for one count: the later one silently won)
        ("spread = {2 = 0.9, 02 = 0.5}\n", "spread.02", "server count 2 is given twice"),
    ],
)
def test_speed_model_file_errors_name_the_file_and_key(tmp_path: Path, text: str, field: str, message: str) -> None:
    path = model_file(tmp_path, text)
    with pytest.raises(InputError) as info:
        speed_model(str(path))
    assert str(info.value).startswith(f"{path}, field '{field}': {message}")
    assert "\n" not in str(info.value)


def test_speed_model_file_missing_or_not_toml(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as missing:
        speed_model(str(tmp_path / "nope.toml"))
    assert str(missing.value) == f"--speed-model '{tmp_path / 'nope.toml'}': choose none, philly or a TOML file (no such file)"
    with pytest.raises(InputError, match="speed.toml: not a TOML file"):
        speed_model(str(model_file(tmp_path, "spread = {2 = \n")))


def test_speed_model_file_keeps_defaults_for_keys_left_out(tmp_path: Path) -> None:
    m = read_speed_model(model_file(tmp_path, "# no spread penalty beyond 4 servers\nspread = {2 = 0.9, 4 = 0.7}\n"
                                              "colocated = 0.5\n"))
    assert m.spread == {2: 0.9, 4: 0.7} and m.colocated == 0.5 and m.colocated_spread == PHILLY_COLOCATED_SPREAD
    assert m.factor(3) == pytest.approx(0.8) and m.factor(9) == 0.7
    assert read_speed_model(model_file(tmp_path, "spread = {}\n")).factor(8) == 1.0  # no spread penalty at all


# ---- invariants with the model on ---------------------------------------------------------------------------------

@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios(), st.sampled_from(["fifo", "sjf", "srtf", "las", "tiresias:60", "fifo-easy"]),
       st.sampled_from(["consolidate", "first-fit", "relax:10", "relax:0", "dedicated", "random"]))
def test_invariants_hold_with_the_speed_model(scenario, policy: str, placement: str) -> None:
    table, cluster = scenario
    result = simulate(table, cluster, policy, placement=placement, speed=PlacementSpeed(), seed=3)
    check_invariants(table, cluster, result)
    done = result.jobs.filter(pl.col("status") == "completed")
    ran = done.filter(pl.col("mean_speed").is_not_null())
    # never faster than full speed (1e-9: ends are rounded up to whole seconds), never stuck
    assert ran.filter((pl.col("mean_speed") > 1 + 1e-9) | (pl.col("mean_speed") <= 0)).height == 0
    lost = result.summary["overall"]["slowdown_gpu_hours"]
    assert lost is None or lost >= 0
    # preemption-free jobs run at least their duration
    assert done.filter((pl.col("preemptions") == 0) & (pl.col("end") - pl.col("start") < pl.col("duration"))).height == 0


class _CountsNeighbours(PlacementSpeed):
    """The built-in model, declared to count neighbours: the cycle then keeps every node's jobs and asks again for
    every job on a node at each change."""

    any_neighbour = False


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios(), st.sampled_from(["fifo", "srtf", "las", "tiresias:60", "fifo-easy"]),
       st.sampled_from(["consolidate", "relax:10", "spread", "dedicated"]))
def test_counting_jobs_per_node_gives_the_same_run_as_keeping_them(scenario, policy: str, placement: str) -> None:
    """With a model that sees only whether a job has neighbours, the cycle counts each node's jobs (and keeps their
    xor) instead of keeping them: the same rates, ends and placements on fragmented multi-GPU clusters."""
    table, cluster = scenario
    runs = [simulate(table, cluster, policy, placement=placement, speed=model, seed=3)
            for model in (PlacementSpeed(), _CountsNeighbours())]
    assert runs[0].jobs.equals(runs[1].jobs)
    assert runs[0].placements.equals(runs[1].placements)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios(), st.sampled_from(["fifo", "srtf", "las", "tiresias:60"]))
def test_dedicated_never_shares_a_server_with_a_multi_gpu_job(scenario, policy: str) -> None:
    table, cluster = scenario
    result = simulate(table, cluster, policy, placement="dedicated", speed=PlacementSpeed())
    check_invariants(table, cluster, result)
    rows = result.placements.join(result.jobs.select("job_id", "gpu_num"), on="job_id")
    for (_vc, _node), part in rows.group_by("vc", "node"):
        segs = part.rows(named=True)
        for a in segs:
            if a["gpu_num"] < 2:
                continue
            for b in segs:
                # half-open intervals [start, end): a job that ran 0 s shares nothing
                assert b is a or not (b["start"] < a["end"] and a["start"] < b["end"]), (a, b)


def test_dedicated_packs_single_gpu_jobs_and_isolates_the_rest() -> None:
    t = jobs(("A", "v", 1, 0, 100), ("B", "v", 2, 1, 100), ("C", "v", 1, 2, 100), ("D", "v", 4, 3, 100),
             ("E", "v", 2, 5, 10))
    r = simulate(t, spec(v=(4, 4, 4)), "fifo", placement="dedicated")
    nodes = {row["job_id"]: row["node"] for row in r.placements.iter_rows(named=True)}
    # C joins A's shared server; B and D each get an empty one; E waits for an empty server (B's, at 101)
    assert nodes == {"A": 0, "B": 1, "C": 0, "D": 2, "E": 1}
    assert by_id(r.jobs)["E"]["start"] == 101
    plain = simulate(t, spec(v=(4, 4, 4)), "fifo")  # consolidate puts B next to A
    assert {row["job_id"]: row["node"] for row in plain.placements.iter_rows(named=True)}["B"] == 0
    assert "dedicated" in PLACEMENTS and get_placement("dedicated").name == "dedicated"


def test_dedicated_splits_only_jobs_larger_than_a_server_over_empty_servers() -> None:
    t = jobs(("A", "v", 1, 0, 100), ("W", "v", 12, 1, 10))
    r = simulate(t, spec(v=(8, 8, 8)), "fifo", placement="dedicated")
    rows = sorted(r.placements.filter(pl.col("job_id") == "W").select("node", "gpus").rows())
    assert rows == [(1, 8), (2, 4)]  # never node 0, where A runs


def test_relax_0_splits_at_once_when_consolidation_fails() -> None:
    t = jobs(("P", "v", 3, 0, 100), ("Q", "v", 3, 0, 100), ("R", "v", 2, 5, 10))
    r = by_id(simulate(t, spec(v=(4, 4)), "fifo", placement="relax:0").jobs)
    assert r["R"]["start"] == 5 and r["R"]["nodes_spanned"] == 2
    assert get_placement("relax:0").relax_after == 0


# ---- the command line ---------------------------------------------------------------------------------------------

def _trace(tmp_path: Path) -> Path:
    table = jobs(*[(f"j{i}", "v" if i % 3 else "w", 1 + (i * 5) % 12, 1000 + 7 * i, 30 + (i * 37) % 200)
                   for i in range(40)])
    return write_trace(tmp_path / "t.parquet", table, spec(v=(8, 8, 4), w=(8, 8)))


def _outputs(folder: Path) -> dict[str, bytes]:
    """Every output file's bytes; summary.json without its timings (they differ between any two runs)."""
    out = {f.name: f.read_bytes() for f in sorted(folder.iterdir()) if f.name != "summary.json"}
    summary = json.loads((folder / "summary.json").read_text())
    for part in (summary, summary["overall"], *summary["vcs"].values()):
        for key in ("wall_seconds", "events_per_second"):
            part.pop(key, None)
    out["summary.json"] = json.dumps(summary).encode()
    return out


def test_speed_model_none_leaves_every_output_byte_identical(tmp_path: Path) -> None:
    trace = _trace(tmp_path)
    for policy in ("fifo", "las"):
        runs = {}
        for name, extra in (("plain", []), ("none", ["--speed-model", "none"])):
            out = tmp_path / f"{policy}-{name}"
            res = cli("simulate", str(trace), "-p", policy, "--placement", "first-fit", "--csv", "-o", str(out), *extra)
            assert res.returncode == 0, res.stderr
            runs[name] = (_outputs(out), res.stdout)  # the tables (timings go to stderr)
        assert runs["plain"] == runs["none"]
        assert set(runs["plain"][0]) == {"jobs.parquet", "timeline.parquet", "placements.parquet", "jobs.csv",
                                         "timeline.csv", "summary.json"}


def test_cli_speed_model_adds_its_outputs(tmp_path: Path) -> None:
    trace = _trace(tmp_path)
    res = cli("simulate", str(trace), "--placement", "first-fit", "--speed-model", "philly", "-o", str(tmp_path / "o"))
    assert res.returncode == 0, res.stderr
    summary = json.loads((tmp_path / "o/summary.json").read_text())
    assert summary["speed_model"]["name"] == "philly" and summary["overall"]["slowdown_gpu_hours"] > 0
    assert all("slowdown_gpu_hours" in v for v in summary["vcs"].values())
    assert "mean_speed" in pl.read_parquet(tmp_path / "o/jobs.parquet").columns
    lost = summary["overall"]["slowdown_gpu_hours"]
    assert "slowdown" in res.stdout and "GPU-h" in res.stdout  # a column of the tables, its header wrapped or not
    assert (f"{lost:.1f}" if lost < 100 else f"{lost:,.0f}") in res.stdout
    path = model_file(tmp_path, "colocated = 1.0\ncolocated_spread = 1.0\nspread = {}\n")  # full speed, spelt out
    res = cli("simulate", str(trace), "--placement", "first-fit", "--speed-model", str(path), "-o", str(tmp_path / "f"))
    assert res.returncode == 0, res.stderr
    full = json.loads((tmp_path / "f/summary.json").read_text())
    assert full["overall"]["slowdown_gpu_hours"] == 0 and full["speed_model"]["name"] == str(path)
    plain = _outputs(tmp_path / "o")  # (philly) differs from full speed
    assert plain["jobs.parquet"] != _outputs(tmp_path / "f")["jobs.parquet"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--compat", "helios-artifact", "--speed-model", "philly"],
         "error: --speed-model philly: compatibility mode (--compat helios-artifact) runs every job at full speed"),
        (["--speed-model", "nowhere.toml"],
         "error: --speed-model 'nowhere.toml': choose none, philly or a TOML file (no such file)"),
    ],
)
def test_cli_speed_model_errors_are_one_line(tmp_path: Path, args: list[str], message: str) -> None:
    res = cli("simulate", str(_trace(tmp_path)), "-o", str(tmp_path / "o"), *args)
    assert res.returncode == 2 and res.stderr.strip() == message


def test_a_later_policy_s_quantum_too_short_for_the_speed_model_is_refused_before_the_first_run(
        tmp_path: Path) -> None:
    trace, out = _trace(tmp_path), tmp_path / "o"
    assert cli("simulate", str(trace), "-p", "fifo,las:600", "--speed-model", "philly", "-o", str(out)).returncode == 0
    before = {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    res = cli("simulate", str(trace), "-p", "fifo,las:100", "--speed-model", "philly", "-o", str(out))
    assert res.returncode == 2 and res.stderr.startswith("error: policy 'las:100' with this speed model")
    assert len(res.stderr.strip().splitlines()) == 1
    # nothing written, nothing deleted: the earlier run's folders are as they were
    assert {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()} == before


def test_api_refuses_a_speed_model_in_compatibility_mode() -> None:
    with pytest.raises(ConfigError, match="runs every job at full speed: it takes no speed model"):
        simulate(jobs(("A", "v", 1, 0, 1)), spec(v=(8,)), "fifo", compat="helios-artifact", speed=PlacementSpeed())


def test_policies_lists_dedicated() -> None:
    res = cli("policies")
    assert res.returncode == 0 and "dedicated" in res.stdout


# ---- the locality sweep the docs quote ----------------------------------------------------------------------------

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.skipif(not (ROOT.parent / "shared/data/philly/jobs_processed.csv").exists(),
                    reason="../shared/data/philly absent")
def test_locality_sweep_table_in_docs(tmp_path: Path) -> None:
    example = load_example("locality_sweep")
    rows = example.sweep(tmp_path)
    assert example.table(rows) in (ROOT / "docs/simulator.md").read_text()
    example.figure(rows, tmp_path / "locality")
    assert (tmp_path / "locality.png").stat().st_size > 10_000
    # what the docs conclude: consolidation cuts the loss; dedicated leaves multi-GPU jobs none, at a queueing cost
    for load in example.LOADS:
        part = {r["placement"]: r for r in rows if r["load"] == load}
        assert part["consolidate"]["slowdown_gpu_h"] < part["relax:0"]["slowdown_gpu_h"]
        assert part["dedicated"]["multi_gpu_h"] == 0 and part["dedicated"]["spread_jobs"] == 0
        assert part["dedicated"]["mean_queue_h"] > 2 * part["consolidate"]["mean_queue_h"]  # "more than doubles"
        # "mean queueing delay and JCT move by at most 0.4 h between T = 0 and consolidate"
        waits = [p for p in part if p.startswith("relax:") or p == "consolidate"]
        for key in ("mean_queue_h", "mean_jct_h"):
            values = [part[p][key] for p in waits]
            assert max(values) - min(values) <= 0.4
        assert round(part["dedicated"]["mean_jct_h"] / part["consolidate"]["mean_jct_h"]) == 2  # "about doubles"
    cut = {load: 1 - next(r["slowdown_gpu_h"] for r in rows if r["load"] == load and r["placement"] == "consolidate")
           / next(r["slowdown_gpu_h"] for r in rows if r["load"] == load and r["placement"] == "relax:0")
           for load in example.LOADS}
    assert round(100 * cut[2]) == 7 and round(3 * cut[3]) == 1  # "by 7% at load 2 and by a third at load 3"
    at2 = {r["placement"]: r for r in rows if r["load"] == 2}
    assert round(at2["dedicated"]["slowdown_gpu_h"] / at2["consolidate"]["slowdown_gpu_h"], 1) == 0.5  # "halves"
