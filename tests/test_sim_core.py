"""The simulator core: one clock, observers, node states, work-based progress, placement-aware preemption, plug-ins."""

from __future__ import annotations

import sys
from importlib.metadata import EntryPoint

import polars as pl
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from test_sim_helpers import by_id, check_invariants, jobs, scenarios, spec

import dlcluster.sim.policies as policies_module
from dlcluster.errors import ConfigError, InputError
from dlcluster.sim import (
    Control,
    Observer,
    Policy,
    SimulationError,
    register_placement,
    simulate,
)
from dlcluster.sim.placement import PLACEMENTS, get_placement
from dlcluster.sim.cluster import VCState
from dlcluster.sim.engine import Engine
from dlcluster.sim.failures import FailureModel
from dlcluster.sim.placement.consolidate import Consolidate
from dlcluster.sim.placement.spread import FirstFit
from dlcluster.sim.policies import POLICIES, get_policy

PREEMPTIVE = ("srtf", "las:100", "tiresias:60")


# ---- the engine's end heap ------------------------------------------------------------------------------------------

class _Ends:
    """A handler that records every end the engine hands over."""

    single_events = True

    def __init__(self) -> None:
        self.ended: list[tuple[int, int]] = []

    def one_end(self, now: int, job: int) -> None:
        self.ended.append((now, job))

    def second(self, now, ended, first, last, woken, nodes, ticks) -> None:  # noqa: ANN001
        self.ended += [(now, j) for j in ended]

    def one_arrival(self, now: int, arrival: int) -> None:
        pass

    def ticks(self, now: int, due: list[int]) -> None:
        pass

    def unfinished(self) -> bool:
        return False


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 9), st.integers(1, 10_000), st.sampled_from([False] * 9 + [True])),
                min_size=1, max_size=400))
@example([(0, t, False) for t in range(100, 0, -1)])  # one job whose end keeps moving earlier (it speeds up)
def test_moved_and_cancelled_ends_leave_only_live_ends_and_a_bounded_heap(moves: list[tuple[int, int, bool]]) -> None:
    engine, last = Engine(jobs=10), {}
    for job, time, cancel in moves:  # a speed change moves an end; a preemption cancels it
        if cancel and job in last:
            engine.cancel(job)
            del last[job]
        else:
            engine.finish_at(job, time)
            last[job] = time
        # stale entries are cleared once they make up two thirds of the heap: it holds at most 3x the live ends
        assert len(engine._ends) <= 3 * len(last) + 3
    handler = _Ends()
    engine.run([], handler)
    assert handler.ended == sorted((t, j) for j, t in last.items())


def test_a_long_fifo_queue_starts_its_jobs_in_submit_order_with_retried_ones_first() -> None:
    # 9,000 one-GPU jobs, one a second, each 10 s on one GPU: the queue grows to about 8,100 jobs, past the length
    # at which the heap pass trims the taken part of its ascending list. Every fifth job fails and is retried (its
    # old key goes into the heap beside that list): FIFO starts every attempt in (submit, job) order, the retries
    # of a job ahead of the queue's head first.
    n = 9_000
    t = jobs(*((f"j{i:05}", "v", 1, i, 10) for i in range(n))).with_columns(
        status=pl.when(pl.int_range(pl.len()) % 5 == 0).then(pl.lit("failed")).otherwise(pl.lit("completed")))
    result = simulate(t, spec(v=(1,)), "fifo", failures=FailureModel(retries=1))
    starts = result.placements.sort("start")["job_id"].to_list()
    # one GPU: attempt k starts when attempt k - 1 ends; a failed first attempt is retried before the next job
    expected = [job for i in range(n) for job in ([f"j{i:05}"] * (2 if i % 5 == 0 else 1))]
    assert starts == expected
    assert result.placements.sort("start")["start"].to_list() == [10 * k for k in range(len(expected))]


# ---- preemption respects placement ----------------------------------------------------------------------------------

def test_preemption_frees_one_node_for_the_job_that_needs_it() -> None:
    # node 0 holds X (3 GPUs) and Y (1), node 1 holds Z (3) and W (1); E (4 GPUs, 10 s) at t = 10 fits no node.
    # Every running job is worse than E. Freeing W and X gives 4 GPUs on two nodes (useless); Y completes node 0,
    # and W is then reprieved: X and Y are preempted, E starts at once on node 0.
    t = jobs(("X", "v", 3, 0, 100), ("Z", "v", 3, 1, 30), ("Y", "v", 1, 2, 30), ("W", "v", 1, 3, 100),
             ("E", "v", 4, 10, 10))
    result = simulate(t, spec(v=(4, 4)), "srtf")
    r = by_id(result.jobs)
    assert r["E"]["start"] == 10 and r["E"]["end"] == 20
    assert {k: v["preemptions"] for k, v in r.items()} == {"X": 1, "Y": 1, "Z": 0, "W": 0, "E": 0}
    e_nodes = result.placements.filter(pl.col("job_id") == "E")["node"].to_list()
    freed = result.placements.filter(pl.col("job_id").is_in(["X", "Y"]) & (pl.col("end") == 10))["node"]
    assert e_nodes == [0] and set(freed) == {0}


def test_no_preemption_when_it_would_not_let_the_job_start() -> None:
    # E (8 GPUs) needs both 4-GPU nodes; A (node 0) has less work left than E, so only B (node 1) is worse:
    # preempting B alone would not let E start, so nobody is preempted and E waits for B's end
    t = jobs(("A", "v", 1, 0, 200), ("B", "v", 4, 0, 100), ("E", "v", 8, 1, 150))
    r = by_id(simulate(t, spec(v=(4, 4)), "srtf").jobs)
    assert sum(v["preemptions"] for v in r.values()) == 0
    assert r["E"]["start"] == 200


def _preemptions_without_a_start(result) -> list[tuple[str, int]]:
    """Every preemption (job, second) after which no job started that second on a node the victim freed."""
    p = result.placements
    last = p.group_by("job_id").agg(pl.col("end").max().alias("final"))
    preempted = p.join(last, on="job_id").filter(pl.col("end") < pl.col("final"))
    starts = set(p.select("vc", "node", "start").iter_rows())
    freed = preempted.group_by("job_id", "vc", "end").agg("node")
    return [(j, e) for j, vc, e, nodes in freed.iter_rows() if not any((vc, n, e) in starts for n in nodes)]


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios(max_gpus=8), st.sampled_from(PREEMPTIVE), st.sampled_from(["consolidate", "first-fit"]))
def test_every_preemption_lets_a_job_start_on_the_gpus_it_freed(scenario, policy: str, placement: str) -> None:
    table, cluster = scenario
    result = simulate(table, cluster, policy, placement=placement)
    check_invariants(table, cluster, result)
    assert _preemptions_without_a_start(result) == []
    # a preemption happens only at a second at which some job starts
    segs = result.placements
    starts = set(segs["start"].to_list())
    last = segs.group_by("job_id").agg(pl.col("end").max().alias("final"))
    cut = segs.join(last, on="job_id").filter(pl.col("end") < pl.col("final"))["end"].to_list()
    assert all(t in starts for t in cut)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios(max_gpus=8), st.sampled_from(PREEMPTIVE))
def test_no_gpu_idles_while_a_job_that_fits_waits(scenario, policy: str) -> None:
    # first-fit places a job whenever its VC has enough free GPUs, so "fits" is a count
    table, cluster = scenario
    result = simulate(table, cluster, policy, placement="first-fit")
    done, segs = result.jobs.filter(pl.col("status") == "completed"), result.placements
    for (vc,), part in done.group_by("vc"):
        mine = segs.filter(pl.col("vc") == vc)
        capacity = sum(cluster.vcs[vc])
        for t in sorted(set(part["submit"]) | set(mine["start"]) | set(mine["end"])):
            busy = mine.filter((pl.col("start") <= t) & (pl.col("end") > t))["gpus"].sum()
            running = set(mine.filter((pl.col("start") <= t) & (pl.col("end") > t))["job_id"])
            waiting = part.filter((pl.col("submit") <= t) & (pl.col("end") > t) & ~pl.col("job_id").is_in(running))
            if waiting.height:
                assert waiting["gpu_num"].min() > capacity - busy, (vc, t)


class _AskedConsolidate(Consolidate):
    """Consolidate without the one-node shortcut: the cycle asks it for every placement."""

    name = "consolidate-asked"
    one_node = False


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios(max_gpus=8), st.sampled_from(["srtf", "las:100", "tiresias:60"]))
def test_placing_on_the_freed_node_without_asking_changes_nothing(scenario, policy: str) -> None:
    """A preempted job's node handed straight to the job that displaced it gives the very run that asking the
    placement does, on fragmented nodes of mixed sizes."""
    table, cluster = scenario
    register_placement(_AskedConsolidate)
    try:
        asked = simulate(table, cluster, policy, placement="consolidate-asked")
    finally:
        del PLACEMENTS["consolidate-asked"]
    shortcut = simulate(table, cluster, policy, placement="consolidate")
    check_invariants(table, cluster, shortcut)
    assert shortcut.jobs.drop("wall_seconds", strict=False).equals(asked.jobs.drop("wall_seconds", strict=False))
    assert shortcut.placements.equals(asked.placements) and shortcut.timeline.equals(asked.timeline)


@settings(max_examples=200, deadline=None)
@given(sizes=st.lists(st.sampled_from([1, 2, 4, 8]), min_size=1, max_size=6), data=st.data())
def test_hand_over_is_a_release_then_an_allocation(sizes: list[int], data: st.DataObject) -> None:
    """VCState.hand_over leaves the state exactly as releasing one job's GPUs on a node and allocating another's."""
    one, two = VCState(tuple(sizes)), VCState(tuple(sizes))
    for state in (one, two):
        state.track_multi()
    node = data.draw(st.integers(0, len(sizes) - 1))
    freed = data.draw(st.integers(1, sizes[node]))
    for state in (one, two):
        state.allocate([(node, freed)], freed, 0)
        for n, size in enumerate(sizes):  # other jobs fill some of the rest
            if n != node and size > 1:
                state.allocate([(n, size - 1)], size - 1, 0)
    taken = data.draw(st.integers(1, freed))
    one.hand_over(node, freed, taken)
    two.release([(node, freed)], freed, 0)
    two.allocate([(node, taken)], taken, 0)
    assert one == two


def test_tiresias_never_preempts_between_equal_priorities() -> None:
    # 1,000 jobs submitted in the same second on 8 GPUs, all short enough to stay in queue 0: equal priority
    # classes never preempt each other, so Tiresias runs them exactly like FIFO
    rows = [(f"j{i}", "v", 1 + i % 2, 0, 27 + i % 13) for i in range(1000)]
    t = jobs(*rows)
    tiresias = simulate(t, spec(v=(8,)), "tiresias")
    fifo = simulate(t, spec(v=(8,)), "fifo", placement="first-fit")
    assert tiresias.summary["overall"]["preemptions"] == 0
    assert tiresias.summary["overall"]["makespan"] <= fifo.summary["overall"]["makespan"]


def test_tiresias_demotion_still_preempts() -> None:
    # A crosses the threshold (60 GPU·s) at 60 while B waits: B (queue 0) is strictly better and preempts it
    t = jobs(("A", "v", 1, 0, 200), ("B", "v", 1, 10, 20))
    r = by_id(simulate(t, spec(v=(1,)), "tiresias:60").jobs)
    assert r["B"]["start"] == 60 and r["A"]["preemptions"] == 1


# ---- observers and the one clock ------------------------------------------------------------------------------------

class Learner(Observer):
    """Sets each job's estimate at its submission to the mean duration of the jobs it has seen end."""

    def __init__(self) -> None:
        self.durations: list[int] = []
        self.times: list[int] = []  # the second of every call, in call order
        self.ends: dict[str | None, int] = {}
        self.seen_other_vc = 0  # submissions estimated from another VC's ends
        self.finished_vcs: set[str] = set()
        self.control: Control | None = None

    def attach(self, control: Control) -> None:
        self.control = control

    def on_submit(self, job: int, now: int) -> None:
        assert self.control is not None
        self.times.append(now)
        assert all(t <= now for t in self.ends.values())  # it has only heard of ends the clock has reached
        self.seen_other_vc += bool(self.finished_vcs - {self.control.group_of(job)})
        mean = sum(self.durations) / len(self.durations) if self.durations else 100.0
        self.control.set_estimate(job, mean)

    def on_finish(self, job: int, now: int, outcome: str) -> None:
        assert self.control is not None and outcome == "completed"
        self.times.append(now)
        self.ends[self.control.jobs.job_id[job]] = now
        self.finished_vcs.add(self.control.group_of(job))
        self.durations.append(self.control.jobs.duration[job])


def test_an_observer_learns_across_vcs_on_one_clock() -> None:
    rows = []
    for i in range(40):
        rows.append((f"a{i}", "A", 1 + i % 3, i * 7, 5 + (i * 13) % 40))
        rows.append((f"b{i}", "B", 1 + i % 2, i * 11, 3 + (i * 17) % 50))
    t = jobs(*rows)
    learner = Learner()
    result = simulate(t, spec(A=(2, 2), B=(2,)), "qssf", observers=[learner])
    assert learner.times == sorted(learner.times) and len(learner.times) == 160  # one clock for both VCs
    ends = dict(zip(result.jobs["job_id"], result.jobs["end"], strict=True))
    assert learner.ends == ends  # each end heard exactly at its second
    assert learner.seen_other_vc > 0  # VC B's jobs were estimated from VC A's ends, and the other way round
    # the estimates the observer set are the ones QSSF used: the same run from a table gives the same jobs
    assert learner.control is not None and learner.control.jobs.estimate is not None
    table = pl.DataFrame({"job_id": learner.control.jobs.job_id, "estimate": learner.control.jobs.estimate})
    again = simulate(t, spec(A=(2, 2), B=(2,)), "qssf", estimates=table)
    assert again.jobs.equals(result.jobs)


def test_a_node_that_boots_at_100_is_used_at_100() -> None:
    class Boot(Observer):
        def attach(self, control: Control) -> None:
            control.set_node_state("v", 1, "off")
            control.set_node_state("v", 1, "booting", at=40)
            control.set_node_state("v", 1, "on", at=100)

    t = jobs(("A", "v", 8, 0, 50), ("S", "v", 2, 5, 10))
    result = simulate(t, spec(v=(4, 4)), "fifo", observers=[Boot()])
    r = by_id(result.jobs)
    assert r["A"]["start"] == 100 and r["A"]["end"] == 150
    assert r["S"]["start"] == 150  # FIFO: S waits behind A although node 0 is free
    line = result.timeline.filter(pl.col("time").is_in([0, 60, 120]))
    assert line.select("nodes_off", "nodes_booting", "nodes_on").rows() == [(1, 0, 1), (0, 1, 1), (0, 0, 2)]


def test_a_node_that_never_comes_back_is_an_error() -> None:
    class Off(Observer):
        def attach(self, control: Control) -> None:
            control.set_node_state("v", 0, "off")

    with pytest.raises(SimulationError, match="never finished"):
        simulate(jobs(("A", "v", 2, 0, 5)), spec(v=(2,)), "fifo", observers=[Off()])


def test_ticks_alone_do_not_keep_a_stuck_run_going_forever() -> None:
    class OffAndIdle(Observer):
        tick = 60

        def __init__(self) -> None:
            self.ticks = 0

        def attach(self, control: Control) -> None:
            control.set_node_state("v", 0, "off")

        def on_tick(self, now: int) -> None:
            self.ticks += 1

    watcher = OffAndIdle()
    with pytest.raises(SimulationError, match="never finished"):
        simulate(jobs(("A", "v", 2, 0, 5)), spec(v=(2,)), "fifo", observers=[watcher])
    assert watcher.ticks == 10_001  # the tick at the first submit, then 10,000 with nothing else to do


def test_a_busy_node_cannot_be_switched_off() -> None:
    class Evict(Observer):
        control: Control

        def attach(self, control: Control) -> None:
            self.control = control

        def on_start(self, job: int, now: int) -> None:
            self.control.set_node_state("v", 0, "off")

    with pytest.raises(ValueError, match="only an idle node"):
        simulate(jobs(("A", "v", 1, 0, 5)), spec(v=(2,)), "fifo", observers=[Evict()])


def test_ticks_come_every_period_while_jobs_remain() -> None:
    class Ticker(Observer):
        tick = 30

        def __init__(self) -> None:
            self.at: list[int] = []

        def on_tick(self, now: int) -> None:
            self.at.append(now)

    ticker = Ticker()
    plain = simulate(jobs(("A", "v", 1, 10, 100)), spec(v=(1,)), "fifo")
    result = simulate(jobs(("A", "v", 1, 10, 100)), spec(v=(1,)), "fifo", observers=[ticker])
    assert ticker.at == [10, 40, 70, 100]  # from the first submit; none after the last job ended at 110
    assert result.jobs.equals(plain.jobs)


# ---- work-based progress ------------------------------------------------------------------------------------------

class HalfSpeedWhenShared:
    """Half speed when a job shares a node with another job or spans more than one node."""

    def rate(self, jobs, job, alloc, sizes, neighbours) -> float:  # type: ignore[no-untyped-def]
        return 0.5 if neighbours or len(alloc) > 1 else 1.0


def test_a_neighbour_slows_a_job_down_and_moves_its_end() -> None:
    # A alone for 50 s (50 s of work left), then B arrives on the same node: both run at half speed
    t = jobs(("A", "v", 1, 0, 100), ("B", "v", 1, 50, 50))
    r = by_id(simulate(t, spec(v=(4,)), "fifo", speed=HalfSpeedWhenShared()).jobs)
    assert (r["A"]["end"], r["B"]["end"]) == (150, 150)


def test_a_split_job_runs_slower_and_speeds_up_when_its_neighbour_leaves() -> None:
    t = jobs(("S", "v", 6, 0, 100), ("N", "v", 1, 0, 20))
    r = by_id(simulate(t, spec(v=(4, 4)), "fifo", placement="first-fit", speed=HalfSpeedWhenShared()).jobs)
    # S spans two nodes: half speed for good; N shares node 1 with S: half speed, 20 s of work in 40 s
    assert r["N"]["end"] == 40 and r["S"]["end"] == 200


def test_srtf_ranks_by_work_left_under_a_speed_model() -> None:
    t = jobs(("A", "v", 1, 0, 100), ("B", "v", 1, 0, 100), ("C", "v", 1, 10, 30))
    plain = by_id(simulate(t, spec(v=(2,)), "srtf").jobs)
    slow = by_id(simulate(t, spec(v=(2,)), "srtf", speed=HalfSpeedWhenShared()).jobs)
    assert plain["C"]["start"] == 10 and slow["C"]["start"] == 10  # 95 (or 97.5) s left > 30: preempted
    assert slow["C"]["end"] > plain["C"]["end"]


# ---- plug-in API --------------------------------------------------------------------------------------------------

def test_hooks_that_would_be_ignored_are_rejected_when_the_class_is_defined() -> None:
    with pytest.raises(ConfigError, match="defines order.. but cannot be static"):
        type("Bad", (Policy,), {"static": True, "order": lambda self, q, now, a: None})
    with pytest.raises(ConfigError, match="defines reserve.. but must be blocking and not preemptive"):
        type("Bad", (Policy,), {"preemptive": True, "blocking": False, "reserve": lambda *a: None})
    with pytest.raises(ConfigError, match="defines victims.. but must be preemptive"):
        type("Bad", (Policy,), {"victims": lambda *a: []})
    with pytest.raises(ConfigError, match="defines linear_key.. but must be preemptive"):
        type("Bad", (Policy,), {"linear_key": lambda self, job: (1, 0)})


def test_a_victims_hook_chooses_who_is_preempted() -> None:
    class OldestFirstVictims(POLICIES["srtf"]):  # type: ignore[misc, valid-type]
        name = "srtf-oldest-victim"

        def victims(self, job: int, candidates: list[int], now: int) -> list[int]:
            return sorted(candidates)  # the earliest-arrived job first

    t = jobs(("A", "v", 1, 0, 100), ("B", "v", 1, 1, 90), ("C", "v", 1, 5, 10))
    default = by_id(simulate(t, spec(v=(2,)), "srtf").jobs)
    custom = by_id(simulate(t, spec(v=(2,)), OldestFirstVictims).jobs)
    assert (default["A"]["preemptions"], default["B"]["preemptions"]) == (1, 0)  # worst (most work left) first
    assert (custom["A"]["preemptions"], custom["B"]["preemptions"]) == (1, 0)
    t2 = jobs(("A", "v", 1, 0, 50), ("B", "v", 1, 1, 90), ("C", "v", 1, 5, 10))
    assert by_id(simulate(t2, spec(v=(2,)), "srtf").jobs)["B"]["preemptions"] == 1
    assert by_id(simulate(t2, spec(v=(2,)), OldestFirstVictims).jobs)["A"]["preemptions"] == 1


def test_jobs_expose_user_vc_and_name_to_policies() -> None:
    class UserRoundRobin(Policy):
        name = "by-user"

        def priority(self, job: int, now: int) -> tuple[str, int]:
            return (self.jobs.user[job] or "", self.jobs.submit[job])

    t = jobs(("A", "v", 1, 0, 10, "zed"), ("B", "v", 1, 0, 10, "amy"), ("C", "v", 1, 0, 10, "bob"))
    r = by_id(simulate(t, spec(v=(1,)), UserRoundRobin).jobs)
    assert [k for k, _ in sorted(r.items(), key=lambda kv: kv[1]["start"])] == ["B", "C", "A"]


def test_compat_mode_takes_only_the_artifacts_policies() -> None:
    with pytest.raises(ConfigError, match="policy 'las' does not exist in compatibility mode helios-artifact"):
        simulate(jobs(("A", "v", 8, 0, 10)), spec(v=(8,)), "las", compat="helios-artifact")


def test_register_placement_and_entry_point_plugins(tmp_path, monkeypatch) -> None:
    @register_placement
    class LastFit(FirstFit):
        name = "last-fit-test"

        def place(self, state, gpus, waited=0, cpus=0):  # type: ignore[no-untyped-def]
            free = state.usable(gpus, cpus)
            if free is None:
                return None
            from dlcluster.sim.placement.spread import fill
            return fill(free, range(len(free) - 1, -1, -1), gpus)

    try:
        result = simulate(jobs(("A", "v", 1, 0, 10)), spec(v=(2, 2)), placement="last-fit-test")
        assert result.placements["node"].to_list() == [1]
    finally:
        PLACEMENTS.pop("last-fit-test")
    (tmp_path / "plugin_mod.py").write_text(
        "from dlcluster.sim import Policy\n"
        "class Biggest(Policy):\n"
        "    name = 'biggest-first-plugin'\n"
        "    static = True\n"
        "    def priority(self, job, now):\n"
        "        return -self.jobs.gpu[job]\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    eps = [EntryPoint(name="biggest", value="plugin_mod:Biggest", group="dlcluster.policies")]
    monkeypatch.setattr(policies_module, "entry_points", lambda group: eps if group == "dlcluster.policies" else [])
    monkeypatch.setattr(policies_module, "_LOADED", set())
    try:
        assert get_policy("biggest-first-plugin").__name__ == "Biggest"
        r = by_id(simulate(jobs(("S", "v", 1, 0, 5), ("B", "v", 2, 0, 5), ("X", "v", 2, 0, 5)), spec(v=(2,)),
                           "biggest-first-plugin").jobs)
        assert (r["B"]["start"], r["S"]["start"]) == (0, 10)
    finally:
        POLICIES.pop("biggest-first-plugin", None)
        sys.modules.pop("plugin_mod", None)
    with pytest.raises(ConfigError, match="unknown placement 'nope'"):
        get_placement("nope")


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios(max_gpus=8), st.sampled_from(["fifo", "sjf", "srtf", "las:100", "tiresias:60", "fifo-easy"]))
def test_pooled_runs_never_double_allocate(scenario, policy: str) -> None:
    table, cluster = scenario
    result = simulate(table, cluster, policy, pooled=True, placement="first-fit")
    pooled = cluster.pooled()
    check_invariants(table.with_columns(pl.lit("all").alias("vc")), pooled,
                     _as_pooled(result))


def _as_pooled(result):  # type: ignore[no-untyped-def]
    """The result with every job's VC set to the pooled group, as the invariant check compares by VC."""
    from dlcluster.sim.run import SimResult

    return SimResult(result.jobs.with_columns(pl.lit("all").alias("vc")), result.timeline, result.placements,
                     result.summary)


def test_the_docs_observer_example_runs() -> None:
    from pathlib import Path

    text = (Path(__file__).resolve().parents[1] / "docs/simulator.md").read_text()
    code = text.split("## Observers", 1)[1].split("```python", 1)[1].split("```", 1)[0]
    # E is submitted before anything ended (estimate 3600 s), F after B ended (estimate 10 s): QSSF runs F first
    t = jobs(("A", "v", 1, 0, 100), ("B", "v", 1, 0, 10), ("E", "v", 2, 5, 50), ("F", "v", 2, 20, 50))
    trace = type("T", (), {"jobs": t})()
    scope = {"trace": trace, "spec": spec(v=(2,))}
    exec(compile(code, "docs/simulator.md", "exec"), scope)  # noqa: S102
    r = by_id(scope["result"].jobs)
    assert (r["F"]["start"], r["E"]["start"]) == (100, 150)


def test_a_node_turned_on_by_an_observer_serves_its_group_in_the_same_second() -> None:
    """An observer that only hears starts may switch a node on mid-second; the node's group gets a pass at once,
    also on the simulator's single-event shortcut."""
    class OnWhenWStarts(Observer):
        def attach(self, control: Control) -> None:
            self.control = control
            control.set_node_state("v", 1, "off")

        def on_start(self, job: int, now: int) -> None:
            if self.control.group_of(job) == "w":
                self.control.set_node_state("v", 1, "on")

    # X fills v's node 0 until 100; B waits for node 1, which comes on when A starts alone on w at second 7
    t = jobs(("X", "v", 4, 0, 100), ("B", "v", 4, 0, 10), ("A", "w", 1, 7, 5))
    r = by_id(simulate(t, spec(v=(4, 4), w=(1,)), "fifo", observers=[OnWhenWStarts()]).jobs)
    assert r["B"]["start"] == 7


def test_pooled_jobs_share_the_cluster_whatever_their_vc() -> None:
    # the openb pod lists label pods by QoS class while their node list is one VC: pooled, they all run
    table = jobs(("a", "LS", 4, 0, 10), ("b", "BE", 4, 0, 10), ("c", "openb", 4, 0, 10))
    cluster = spec(openb=(8,))
    with pytest.raises(InputError, match="VC 'LS' of job 'a' is not in the cluster spec"):
        simulate(table, cluster, "fifo")
    pooled = simulate(table, cluster, "fifo", pooled=True)
    assert {r["job_id"]: r["start"] for r in pooled.jobs.iter_rows(named=True)} == {"a": 0, "b": 0, "c": 10}
    # counting jobs of VCs outside the spec as unschedulable still applies when asked for
    skipped = simulate(table, cluster, "fifo", pooled=True, unknown_vc="unschedulable")
    assert skipped.summary["overall"]["unschedulable"] == 2
    assert [u["job_id"] for u in skipped.summary["unschedulable_jobs"]] == ["a", "b"]
