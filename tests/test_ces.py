"""CES: demand series, the online forecaster (no look-ahead), the controllers, the open loop, and the closed loop in the
simulator (node states, boots, energy)."""

from __future__ import annotations

import datetime
import json
import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_sim_helpers import by_id, check_invariants, cli, jobs, scenarios, spec, write_trace

from dlcluster.errors import ConfigError, InputError
from dlcluster.predict.demand import from_timeline, from_trace, read_series, resample
from dlcluster.predict.forecast import BASELINES, Calendar, DemandForecaster, Target, baselines, horizon, outcomes
from dlcluster.services.ces.artifact import artifact_controller
from dlcluster.services.ces.closed_loop import PowerManager
from dlcluster.services.ces.open_loop import open_loop
from dlcluster.services.ces.params import PRESETS, RuleParams
from dlcluster.services.ces.rules import HeliosRule, QuantileRule, make_controller
from dlcluster.sim import simulate
from dlcluster.sim.power import NODE_STATES_SCHEMA, PowerModel, energy, node_spans, read_power_model

STEP = 600
DAY = 86_400


def _daily(days: int, seed: int = 0, base: float = 100.0) -> pl.DataFrame:
    """A regular 10-minute demand series with a daily cycle and noise (200 nodes in all)."""
    rng = np.random.default_rng(seed)
    n = days * 144
    t = np.arange(n)
    used = base + 40 * np.sin(2 * np.pi * t / 144) + rng.normal(0, 4, n)
    return pl.DataFrame({"time": 1_600_000_200 + t * STEP - 1_600_000_200 % STEP,
                         "used": np.clip(np.rint(used), 0, 200).astype(np.int64),
                         "total": np.full(n, 200, dtype=np.int64)})


# ---- demand series ----------------------------------------------------------------------------------------------

def test_read_series_names_the_bad_row(tmp_path: Path) -> None:
    good = tmp_path / "s.csv"
    good.write_text("time,active,total\n2017-10-03 00:00:00,3,5\n2017-10-03 00:01:00,4,5\n")
    s = read_series(good)
    assert s.rows() == [(1506988800, 3, 5), (1506988860, 4, 5)]
    good.write_text("time, active, total\n2017-10-03 00:00:00, 3, 5\n2017-10-03 00:01:00, 4, 5\n")  # as docs write it
    assert read_series(good).rows() == s.rows()
    for body, message in (("time,active,total\n2017-10-03 00:00:00,3,5\n2017-10-03 00:01:00,x,5\n",
                           "line 3, field 'active': not a whole number"),
                          ("time,active,total\n2017-10-03 00:00:00,3,5\n2017-10-03 00:01:00,,5\n",
                           "line 3, field 'active': empty"),  # (it said "not a whole number: None")
                          ("time,active,total\n2017-10-03 00:00:00,6,5\n2017-10-03 00:01:00,4,5\n",
                           "line 2, field 'active': more busy nodes than total nodes"),
                          ("time,active,total\n2017-10-03 00:01:00,3,5\n2017-10-03 00:00:00,4,5\n",
                           "line 3, field 'time': times must increase"),
                          ("time,total\n2017-10-03 00:00:00,5\n", "missing column 'used (or active)'"),
                          # (epoch milliseconds were read as seconds of the year 49,891: exit 0, or an internal error)
                          ("time,active,total\n1506988800000,3,5\n1506988860000,4,5\n",
                           "line 2, field 'time': 1506988800000 is out of range (expected a time between 1900-01-01 "
                           "and 2200-01-01 UTC); the times must be epoch seconds, not milliseconds"),
                          ("time,active,total\n1506988800,3,5\n-9999999999,4,5\n",
                           "line 3, field 'time': -9999999999 is out of range (expected a time between 1900-01-01 and "
                           "2200-01-01 UTC)"),
                          ("time,active, time\n2017-10-03 00:00:00,3,5\n", "column 'time' appears twice"),
                          # (as floats, counts near 2**63 made every step a shortage with every node powered)
                          ("time,active,total\n1506988800,3,5\n1506988860,4,9223372036854775807\n",
                           "line 3, field 'total': at most 100,000 nodes are supported")):
        bad = tmp_path / "bad.csv"
        bad.write_text(body)
        with pytest.raises(InputError) as caught:
            read_series(bad)
        assert message in str(caught.value)


def test_resample_takes_the_step_maximum_and_fills_gaps() -> None:
    s = pl.DataFrame({"time": [0, 60, 540, 1800], "used": [1, 5, 2, 3], "total": [9, 9, 9, 9]})
    assert resample(s, 600).rows() == [(0, 5, 9), (600, 5, 9), (1200, 5, 9), (1800, 3, 9)]


def test_demand_from_a_trace_packs_busy_gpus_onto_the_fewest_nodes() -> None:
    t = jobs(("a", "v", 3, 0, 120), ("b", "v", 6, 0, 60), ("c", "w", 1, 0, 60)).with_columns(
        start_time=pl.col("submit_time"), end_time=pl.col("submit_time") + pl.col("duration"))
    s, capped = from_trace(t, spec(v=(8, 8, 4), w=(8,)))
    # at 0: v holds 9 GPUs (two 8-GPU nodes), w holds 1 (one node); at 60 only a's 3 GPUs remain
    assert s.select("time", "used", "used_gpus", "total").rows() == [(0, 3, 10, 4), (60, 1, 3, 4), (120, 0, 0, 4)]
    assert capped == {}
    # a spec smaller than the trace's VC: its demand is capped at its nodes, and said so
    s, capped = from_trace(t, spec(v=(4, 4), w=(8,)))
    assert s["used"].to_list() == [3, 1, 0] and capped == {"v": (9, 8)}
    # sampled at whole minutes, as a simulation's timeline: a job between two of them is not seen
    t = jobs(("a", "v", 3, 0, 120), ("short", "w", 8, 70, 40)).with_columns(
        start_time=pl.col("submit_time"), end_time=pl.col("submit_time") + pl.col("duration"))
    assert from_trace(t, spec(v=(8,), w=(8,)))[0]["used"].to_list() == [1, 1, 0]


# ---- forecaster -----------------------------------------------------------------------------------------------

def _timeline(rows: Sequence[tuple[int, str, int, int]], gpus: dict[str, int]) -> pl.DataFrame:
    """A hand-made simulation timeline from ``(time, vc, busy nodes, idle GPUs)`` rows."""
    return pl.DataFrame([{"time": t, "vc": vc, "total_gpus": gpus[vc], "idle_gpus": idle, "nodes_busy": busy,
                          "nodes_shared": 0} for t, vc, busy, idle in rows])


def test_demand_from_a_timeline_counts_a_vc_past_its_last_end_as_idle() -> None:
    # VC w's timeline ends at 60 (its last job done), v's at 180: w's two nodes stay in the total, idle
    rows = [(0, "v", 1, 4), (0, "w", 2, 0), (60, "v", 2, 0), (60, "w", 1, 4), (120, "v", 1, 6), (180, "v", 0, 8)]
    timeline = _timeline(rows, {"v": 8, "w": 8})
    cluster = spec(v=(4, 4), w=(4, 4))
    series = from_timeline(timeline, cluster)
    assert series.to_dict(as_series=False) == {"time": [0, 60, 120, 180], "used": [3, 3, 1, 0], "total": [4] * 4,
                                               "used_gpus": [12, 12, 2, 0], "total_gpus": [16] * 4}
    assert from_timeline(timeline, cluster, until=60)["time"].to_list() == [0, 60]
    # a run with power management counts its nodes by state: no cluster spec needed
    powered = timeline.with_columns(nodes_on=pl.lit(1), nodes_off=pl.lit(1))
    assert from_timeline(powered).equals(series)
    # a pooled run's one VC has every node of the spec
    pooled = _timeline([(0, "all", 3, 4), (60, "all", 1, 12)], {"all": 16})
    assert from_timeline(pooled, cluster)["total"].to_list() == [4, 4]
    for table, cluster_, message in (
            (timeline, None, "records no node counts"),
            (timeline, spec(v=(4, 4)), "VC 'w' of the timeline is not in the cluster spec"),
            (timeline, spec(v=(4,), w=(4, 4)), "VC 'v' has 2 busy nodes at a time, but 1 node\\(s\\) in all")):
        with pytest.raises(InputError, match=message):
            from_timeline(table, cluster_)


def test_ces_reads_a_simulation_s_output_folder(tmp_path: Path) -> None:
    # three days of a small cluster's jobs, simulated; ces on the run's folder replays its timeline's demand up to
    # the last submission, the same figures as that series written as a CSV
    cluster = spec(v=(8,) * 4, w=(8,) * 2)
    t = jobs(*((f"j{i}", "vw"[i % 3 == 0], 8 * (1 + i % 2), 1800 * i + 97 * (i % 5), 3000 + 400 * (i % 7))
               for i in range(200)))
    trace = write_trace(tmp_path / "t.parquet", t, cluster)
    out = tmp_path / "run"
    assert cli("simulate", str(trace), "-p", "fifo,sjf", "-o", str(out)).returncode == 0
    series = from_timeline(pl.read_parquet(out / "sjf/timeline.parquet"), cluster,
                           until=int(pl.read_parquet(out / "sjf/jobs.parquet")["submit"].max()))
    assert series["time"][-1] < pl.read_parquet(out / "sjf/timeline.parquet")["time"].max()
    f = tmp_path / "series.csv"
    series.select("time", "used", "total").write_csv(f)
    cluster_file = tmp_path / "cluster.csv"
    cluster_file.write_text("vc,node num\nv,4\nw,2\n")
    want = cli("ces", str(f), "--json", "--test-days", "1")
    got = cli("ces", str(out / "sjf"), "--json", "--test-days", "1", "--cluster", str(cluster_file))
    assert want.returncode == 0 and got.returncode == 0, got.stderr
    assert {k: v for k, v in json.loads(got.stdout).items() if k != "source"} == \
        {k: v for k, v in json.loads(want.stdout).items() if k != "source"}
    powered = tmp_path / "on"  # (--power on: no node changes state, so no node counts, as docs/ces.md says)
    assert cli("simulate", str(trace), "-p", "fifo", "--power", "on", "-o", str(powered)).returncode == 0
    for args, message in (((str(out),), f"{out} holds one run per policy: pass one of its folders (fifo, sjf)"),
                          ((str(powered),), "records no node counts: give the run's cluster spec"),
                          ((str(out / "sjf"),), "records no node counts: give the run's cluster spec"),
                          ((str(out / "sjf/timeline.parquet"), "--tz", "UTC"), "--tz: options of a trace")):
        run = cli("ces", *args)
        assert run.returncode == 2 and message in run.stderr and len(run.stderr.strip().splitlines()) == 1, run.stderr


def test_no_forecast_reads_the_future() -> None:
    """Changing the series after step T changes no feature row, model or forecast at or before T."""
    y = _daily(12)["used"].to_list()
    cut = 9 * 144
    altered = y[: cut + 1] + [v * 3 + 7 for v in y[cut + 1:]]
    targets = (horizon(1), horizon(18), Target(0, 30), Target(1, 7, "max"))
    a, b = (DemandForecaster(STEP, 0, targets) for _ in range(2))
    a.extend(y)
    b.extend(altered)
    for f in (a, b):
        f.fit(until=cut + 1)
    for k in range(len(targets)):
        assert np.array_equal(a._rows[k][: cut + 1], b._rows[k][: cut + 1], equal_nan=True)  # noqa: SLF001
    assert np.array_equal(a.forecast_all(range(cut - 100, cut + 1)), b.forecast_all(range(cut - 100, cut + 1)))


@settings(max_examples=40, deadline=None)
@given(values=st.lists(st.integers(0, 400), min_size=64, max_size=700), step=st.sampled_from([300, 600, 3600]),
       t0=st.integers(1_400_000_000, 1_600_000_000), cuts=st.lists(st.integers(1, 700), max_size=6),
       start=st.integers(0, 40), length=st.integers(1, 200), stat=st.sampled_from(["mean", "max"]))
def test_feature_rows_are_the_same_bits_in_blocks_and_one_by_one(
        values: list[int], step: int, t0: int, cuts: list[int], start: int, length: int, stat: str) -> None:
    """Rows computed as vectorised blocks (at a fit) equal rows computed one origin at a time (at each forecast)."""
    y = [v / 7 for v in values]  # fractions, so that sums and squares round
    targets = (horizon(1), Target(start, start + length, stat), Target(0, 30, "max"))
    calendar = Calendar("US", (datetime.date(2017, 11, 20),))
    blocks, single = (DemandForecaster(step, t0, targets, calendar) for _ in range(2))
    for f in (blocks, single):
        f.extend(y)
    for upto in [*sorted(c for c in cuts if c <= len(y)), len(y)]:  # blocks of any size, in order
        blocks._fill(upto)  # noqa: SLF001
    for upto in range(1, len(y) + 1):
        single._fill(upto)  # noqa: SLF001
    for k in range(len(targets)):
        assert np.array_equal(blocks._rows[k][: len(y)], single._rows[k][: len(y)], equal_nan=True)  # noqa: SLF001


@settings(max_examples=40, deadline=None)
@given(values=st.lists(st.integers(0, 400), min_size=40, max_size=1200), step=st.sampled_from([600, 3600, 7200]),
       t0=st.integers(1_400_000_000, 1_600_000_000), start=st.integers(0, 12), length=st.integers(1, 12),
       stat=st.sampled_from(["mean", "max"]))
def test_the_latest_rows_are_the_same_bits_as_rows_one_by_one(
        values: list[int], step: int, t0: int, start: int, length: int, stat: str) -> None:
    """The rows a forecast computes for the latest origin (unrolled once the series is a week long) equal the rows
    computed one origin at a time."""
    y = [v / 7 for v in values]
    targets = (horizon(1), Target(start, start + length, stat), Target(1, 7, "max"))
    f = DemandForecaster(step, t0, targets, Calendar("US", (datetime.date(2017, 11, 20),)))
    f.extend(y)
    for i in range(len(y)):
        want = [f._shared(i) + f._specific(i, t) for t in targets]  # noqa: SLF001
        assert np.array_equal(np.array(f._latest_rows(i)), np.array(want), equal_nan=True)  # noqa: SLF001


@pytest.mark.parametrize("step", [600, 3600])
def test_the_forecaster_trains_on_the_last_56_days_whatever_the_step(step: int, monkeypatch: pytest.MonkeyPatch) -> None:
    from dlcluster.predict import lightgbm_capi

    rows = []
    real = lightgbm_capi.train
    monkeypatch.setattr(lightgbm_capi, "train", lambda params, x, *rest: rows.append(len(x)) or real(params, x, *rest))
    per_day = 86_400 // step
    f = DemandForecaster(step, 0, (horizon(1), Target(0, 3)))
    f.extend([float(v % 17) for v in range(80 * per_day)])
    f.fit()
    # the last origins whose outcomes are known: 56 days of them, each target's window ending inside the series
    assert rows == [56 * per_day, 56 * per_day]


def test_open_loop_decisions_before_t_ignore_the_series_after_t() -> None:
    series = _daily(12)
    first = series.height - 3 * 144
    cut = first + 144
    altered = series.with_columns(pl.when(pl.int_range(pl.len()) > cut).then(pl.col("used") // 3)
                                  .otherwise(pl.col("used")).alias("used"))
    for rule in (make_controller("helios", "philly"), QuantileRule()):
        a = open_loop(series, rule, step=STEP, test_days=3).steps
        rule = make_controller("helios", "philly") if isinstance(rule, HeliosRule) else QuantileRule()
        b = open_loop(altered, rule, step=STEP, test_days=3).steps
        assert a.head(cut - first + 1).equals(b.head(cut - first + 1))
        assert not a.equals(b)  # the alteration did change later decisions


def test_truth_and_baselines() -> None:
    y = [float(v) for v in range(300)]
    assert outcomes(y, Target(0, 3))[10] == 11.0 and outcomes(y, Target(1, 4, "max"))[10] == 13.0
    assert math.isnan(outcomes(y, horizon(2))[298])  # past the end
    naive = baselines(y, STEP, horizon(6))
    assert naive["last"][200] == 200.0
    assert naive["yesterday"][200] == 62.0  # 200 + 6 - 144
    assert math.isnan(naive["last_week"][200])


def test_the_quantile_model_covers_about_its_quantile() -> None:
    y = _daily(20, seed=3)["used"].to_list()
    f = DemandForecaster(STEP, 0, (Target(1, 7, "max"),), quantile=0.9)
    f.extend(y)
    f.fit(until=16 * 144)
    origins = range(16 * 144, 20 * 144 - 7)
    peaks = outcomes(y, Target(1, 7, "max"))
    covered = np.mean([f.forecast_all([o])[0, 0] >= peaks[o] for o in origins[::7]])
    assert 0.8 <= covered <= 0.99


def test_the_rule_s_extreme_risks_train_a_quantile_model() -> None:
    from dlcluster.services.ces.rules import MIN_RISK

    y = _daily(3, seed=3)["used"].to_list()
    for risk in (MIN_RISK, 1 - MIN_RISK):
        rule = QuantileRule(risk=risk)
        f = DemandForecaster(STEP, 0, rule.targets, quantile=rule.quantile)
        f.extend(y)
        assert f.fit().forecast()[0] >= 0


def test_the_same_input_gives_the_same_forecasts_byte_for_byte() -> None:
    y = _daily(8, seed=5)["used"].to_list()
    runs = []
    for _ in range(2):
        f = DemandForecaster(STEP, 0, (horizon(6), Target(0, 30)), quantile=None)
        f.extend(y)
        f.fit(until=6 * 144)
        runs.append(f.forecast_all(range(6 * 144, 8 * 144)).tobytes())
    assert runs[0] == runs[1]


def test_single_step_and_batch_forecasts_agree() -> None:
    y = _daily(6)["used"].to_list()
    f = DemandForecaster(STEP, 0, (horizon(6), Target(0, 30)))
    f.extend(y[: 5 * 144])
    f.fit()
    batch = f.forecast_all([5 * 144 - 1])[0]
    assert f.forecast() == pytest.approx(batch.tolist(), rel=1e-12)


def test_feature_rows_computed_one_by_one_equal_those_computed_in_blocks_bit_for_bit() -> None:
    """On a series of arbitrary floats (no integer sums to hide rounding): the rows of a forecast at a new origin
    are exactly the rows a retrain computes for it in a block."""
    y = np.random.default_rng(5).gamma(2.0, 37.3, 4 * 144).tolist()
    targets = (horizon(6), Target(0, 30), Target(1, 7, "max"))
    f = DemandForecaster(STEP, 0, targets)
    f.extend(y)
    one_by_one = [[f._shared(i) + f._specific(i, t) for t in targets] for i in range(len(y))]
    f._fill(len(y))  # one block past the first origins
    for i, rows in enumerate(one_by_one):
        for k, row in enumerate(rows):
            assert np.array_equal(np.array(row), f._rows[k][i], equal_nan=True), (i, k)


@settings(max_examples=25, deadline=None)
@given(asked=st.lists(st.booleans(), min_size=300, max_size=300))
def test_a_forecast_is_the_same_whichever_steps_were_forecast_before(asked: list[bool]) -> None:
    """A forecaster asked only at some steps (rows of the skipped origins computed later, in blocks) forecasts
    exactly what one asked at every step forecasts, and trains on the same rows."""
    y = _daily(5, seed=2)["used"].to_list()
    targets = (horizon(6), Target(0, 30))
    every, some = (DemandForecaster(STEP, 0, targets) for _ in range(2))
    for f in (every, some):
        f.extend(y[: 3 * 144])
        f.fit()
    for i, value in enumerate(y[3 * 144: 3 * 144 + len(asked)]):
        every.extend((value,))
        some.extend((value,))
        expected = every.forecast()
        if asked[i]:
            assert some.forecast() == expected
    every.fit()
    some.fit()
    assert every.forecast() == some.forecast()


def test_holidays_come_from_the_country_calendar() -> None:
    us = Calendar("US")
    assert us.holiday(17532) == 1.0  # 2018-01-01
    assert Calendar("us") == us  # ISO codes in any case (the holidays library knows only upper case)
    assert us.holiday(17533) == 0.0
    deadline = Calendar(events=(np.datetime64("2020-09-10").astype(object),))
    day = (np.datetime64("2020-09-05") - np.datetime64("1970-01-01")).astype(int)
    assert deadline.event(int(day)) == 1.0 and deadline.event(int(day) + 10) == 0.0
    with pytest.raises(ConfigError, match="no public-holiday calendar"):
        Calendar("XX").holiday(17532)


# ---- controllers -----------------------------------------------------------------------------------------------

def _window_means(p: np.ndarray, i: int, f: int) -> tuple[float, float]:
    return float(np.mean(p[i: i + f])), float(np.mean(p[i: i + 2 * f]))


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_the_helios_rule_decides_as_the_artifact(data: st.DataObject) -> None:
    """Fed the same forecast, the rule powers exactly the nodes the artifact's loop does (after its warm-up)."""
    n = data.draw(st.integers(10, 80))
    used = np.array(data.draw(st.lists(st.integers(0, 60), min_size=n, max_size=n)))
    forecast = np.array(data.draw(st.lists(st.integers(0, 60), min_size=n, max_size=n)))
    total = np.full(n, 64)
    params = RuleParams(data.draw(st.integers(1, 6)), data.draw(st.integers(1, 8)), data.draw(st.sampled_from([0, 0.5, 1])),
                        data.draw(st.sampled_from([0, 1])), data.draw(st.integers(1, 4)), data.draw(st.integers(0, 8)),
                        data.draw(st.integers(0, 12)))
    expected = artifact_controller(used, total, forecast, params)["active"]
    rule = HeliosRule(params)
    active = list(expected[:6])  # the artifact's warm-up: demand plus buffer, uncapped
    for i in range(6, n):
        active.append(rule.step(i, used.tolist(), active[-1], 64,
                                lambda i=i: _window_means(forecast, i, params.future)))
    assert active[6:] == expected[6:].tolist()


def test_the_quantile_rule_wakes_before_the_peak_and_sheds_after_keep() -> None:
    rule = QuantileRule(risk=0.1, lookahead=3, margin=2, de_threshold=4, keep=2, headroom=1)
    used = [10.0] * 10
    assert rule.step(5, used, 12, 100, lambda: [30.0]) == 33  # forecast peak 30 + margin + headroom
    assert rule.step(6, used, 33, 100, lambda: [10.0]) == 33  # within keep: no shedding
    assert rule.step(7, used, 33, 100, lambda: [10.0]) == 12  # demand 10 + margin
    assert rule.step(8, used, 12, 100, lambda: [11.0]) == 14  # a rise of 2 wakes at once (plus headroom)
    assert rule.step(9, used, 14, 100, lambda: [10.0]) == 14  # 14 - 12 < de_threshold: keep


def test_bad_controller_settings_are_config_errors() -> None:
    with pytest.raises(ConfigError, match="--risk"):
        QuantileRule(risk=1.5)
    for risk in (1e-8, 1 - 1e-8):  # (LightGBM stopped with "Check failed: alpha_ > 0 && alpha_ < 1")
        with pytest.raises(ConfigError, match=r"^--risk must be from 1e-06 to 0\.999999 \(a probability of shortage\)"):
            QuantileRule(risk=risk)
    with pytest.raises(ConfigError, match=r"^--ces-rule 'magic': choose helios or quantile$"):
        make_controller("magic")
    with pytest.raises(ConfigError, match="--buffer"):
        make_controller("helios", "venus", buffer=-1)
    assert make_controller("helios", "venus", buffer=9).params == RuleParams(3, 18, 0.5, 1, 2, 9, 12)  # type: ignore[attr-defined]


# ---- open loop on the real Philly series ----------------------------------------------------------------------

@pytest.fixture(scope="module")
def philly_series() -> pl.DataFrame:
    """The Philly node series at 10 minutes, up to the end of the artifact's test window (2017-12-14)."""
    path = Path(__file__).resolve().parents[2] / "shared/data/philly/node_sequence_minutely.csv"
    if not path.exists():
        pytest.skip("shared sample philly/node_sequence_minutely.csv not available")
    s = resample(read_series(path), STEP)
    return s.filter(pl.col("time") < 1513296000)  # 2017-12-15 00:00 UTC


def test_the_forecast_beats_every_naive_baseline_on_philly(philly_series: pl.DataFrame) -> None:
    run = open_loop(philly_series, make_controller("helios", "philly"), step=STEP, calendar=Calendar("US"))
    for row in run.horizons.iter_rows(named=True):
        for name in BASELINES:
            assert row["rmse"] < row[f"rmse_{name}"], (row["target"], name)


def test_philly_open_loop_figures(philly_series: pl.DataFrame) -> None:
    """The figures docs/ces.md quotes for the honest open loop, Dec 1-14, 2017 (all 420 nodes)."""
    helios = open_loop(philly_series, make_controller("helios", "philly"), step=STEP, calendar=Calendar("US")).stats
    quantile = open_loop(philly_series, QuantileRule(), step=STEP, calendar=Calendar("US")).stats
    assert round(helios["mean_off_nodes"], 1) == 91.9 and helios["shortages"] == 5
    assert round(helios["utilization_powered"], 1) == 88.1
    assert round(quantile["mean_off_nodes"], 1) == 92.2 and quantile["shortages"] == 0
    assert round(quantile["utilization_powered"], 1) == 88.3


# ---- closed loop ------------------------------------------------------------------------------------------------

class Scripted:
    """A controller that answers a scripted number of powered nodes per step (the last one from then on)."""

    targets = (Target(0, 1),)
    quantile = None

    def __init__(self, answers: Sequence[int]) -> None:
        self.answers = list(answers)

    def initial(self, used: float, total: int) -> int:
        return total

    def describe(self) -> dict[str, object]:
        return {"rule": "scripted"}

    def step(self, i: int, used: Sequence[float], powered: int, total: int, forecast: object) -> int:
        return self.answers[min(i, len(self.answers) - 1)]


def _manager(answers: Sequence[int], boot: int = 50, step: int = 30) -> PowerManager:
    return PowerManager(Scripted(answers), step=step, boot_seconds=boot, min_idle=0)  # type: ignore[arg-type]


def test_a_job_arriving_when_its_vcs_free_nodes_are_off_waits_exactly_the_boot() -> None:
    # at t = 0 the controller powers everything idle off; B arrives at 100 to a VC whose only free nodes are off
    t = jobs(("A", "v", 8, 0, 1000), ("B", "v", 8, 100, 10), ("C", "w", 4, 0, 10))
    result = simulate(t, spec(v=(8, 8, 8), w=(4,)), "fifo", observers=[_manager([0], boot=70)], power=PowerModel())
    r = by_id(result.jobs)
    assert r["A"]["queue_delay"] == 0 and r["C"]["queue_delay"] == 0  # they started before the first step
    assert r["B"]["start"] == 170 and r["B"]["queue_delay"] == 70
    states = result.node_states.filter(pl.col("vc") == "v")
    assert states.filter(pl.col("state") == "booting").rows() == [(100, "v", 1, "booting")]  # one node, the lowest
    assert result.summary["energy"]["boot_delayed_jobs"] == 1
    assert result.summary["energy"]["boot_delay_seconds"] == 70


def test_a_pooled_run_counts_its_boot_delayed_jobs() -> None:
    # pooled, the placements and node states name the one group "all" while each job keeps its own VC
    t = jobs(("A", "v", 8, 0, 1000), ("B", "w", 8, 100, 10))
    result = simulate(t, spec(v=(8,), w=(8, 8)), "fifo", pooled=True, observers=[_manager([0], boot=70)],
                      power=PowerModel())
    r = by_id(result.jobs)
    assert (r["B"]["vc"], r["B"]["start"], r["B"]["queue_delay"]) == ("w", 170, 70)
    assert set(result.node_states["vc"]) == {"all"}
    assert (result.summary["energy"]["boot_delayed_jobs"], result.summary["energy"]["boot_delay_seconds"]) == (1, 70)


def _not_on(states: pl.DataFrame, end: int) -> pl.DataFrame:
    """Intervals [since, until) during which each (vc, node) was not on."""
    spans = states.with_columns(pl.col("time").shift(-1).over("vc", "node").fill_null(end).alias("until"))
    return spans.filter(pl.col("state") != "on").select("vc", "node", pl.col("time").alias("since"), "until")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios(), st.lists(st.integers(0, 8), min_size=1, max_size=12), st.integers(0, 40))
def test_a_node_that_is_not_on_never_hosts_a_job(scenario, answers: list[int], boot: int) -> None:
    """Random power decisions on fragmented multi-GPU clusters: every invariant holds, and no job runs on a node
    while it is off or booting."""
    table, cluster = scenario
    result = simulate(table, cluster, "fifo", observers=[_manager(answers, boot=boot, step=7)], power=PowerModel(),
                      unknown_vc="unschedulable")
    check_invariants(table, cluster, result)
    dark = _not_on(result.node_states, 2**40)
    clash = result.placements.join(dark, on=["vc", "node"]).filter(
        (pl.col("start") < pl.col("until")) & (pl.col("end") > pl.col("since")))
    assert clash.height == 0


class _NodeByNode(PowerManager):
    """A power manager that counts every VC node by node, as it must for VCs of mixed node sizes."""

    def attach(self, control: object) -> None:
        super().attach(control)  # type: ignore[arg-type]
        self.uniform = [False] * len(self.groups)
        self._one_size, self._mixed = [], list(range(len(self.groups)))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios(uniform=True, max_gpus=20), st.lists(st.integers(0, 8), min_size=1, max_size=12),
       st.integers(0, 40))
def test_one_size_vcs_are_counted_as_node_by_node(scenario, answers: list[int], boot: int) -> None:
    """On VCs of one node size the manager reads idle and booting nodes off counters; it boots the same nodes at the
    same seconds as when it looks at every node."""
    table, cluster = scenario
    runs = [simulate(table, cluster, "fifo", observers=[kind(Scripted(answers), step=7, boot_seconds=boot, min_idle=0)],
                     power=PowerModel(), unknown_vc="unschedulable") for kind in (PowerManager, _NodeByNode)]
    assert runs[0].node_states.equals(runs[1].node_states)
    assert runs[0].jobs.equals(runs[1].jobs)


def test_energy_adds_up_over_states_on_a_hand_made_case() -> None:
    model = PowerModel(node_watts=100, gpu_idle_watts=10, gpu_busy_watts=60, off_watts=5, boot_watts=200,
                       boot_seconds=30)
    # two VCs: (2 GPUs, 4 GPUs) and (2 GPUs); node 1 of a goes off at 100, boots at 400, is on at 430
    log = pl.DataFrame([(100, "a", 1, "off"), (400, "a", 1, "booting"), (430, "a", 1, "on")],
                       schema=NODE_STATES_SCHEMA, orient="row")
    out = energy(model, spec(a=(2, 4), b=(2,)), node_spans(log), busy_gpu_seconds=500, start=0, end=1000)
    idle2, idle4 = 100 + 2 * 10, 100 + 4 * 10
    joules = (500 * 50  # busy GPU-seconds at 60 - 10 W extra
              + idle2 * 1000 * 2  # the two 2-GPU nodes, always on
              + idle4 * (100 + 570) + 5 * 300 + 200 * 30)  # the 4-GPU node: on, off, booting
    assert out["energy_kwh"] * 3.6e6 == pytest.approx(joules, rel=1e-12)
    assert out["always_on_kwh"] * 3.6e6 == pytest.approx(500 * 50 + (2 * idle2 + idle4) * 1000, rel=1e-12)
    assert (out["node_hours_off"], out["node_hours_booting"], out["wakeups"]) == (300 / 3600, 30 / 3600, 1)
    assert out["node_hours_on"] == pytest.approx((3000 - 330) / 3600)


def test_the_forecaster_is_retrained_as_its_history_doubles_then_every_retrain_every(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Retrains at simulated days 2, 4, 8, 16 and 32, then every 28 days, each on the demand known then."""
    fits: list[tuple[int, int]] = []

    def fit(self: DemandForecaster, until: int | None = None) -> DemandForecaster:
        fits.append((self.t0 + (len(self.y) - 1) * self.step, len(self.y)))  # (the tick's second, steps known)
        return self

    monkeypatch.setattr(DemandForecaster, "fit", fit)
    day = 86_400
    t = jobs(("A", "v", 8, 0, 100 * day))  # one job for 100 days: the controller ticks throughout
    manager = PowerManager(Scripted([1]), step=3600, min_idle=0)  # type: ignore[arg-type]
    simulate(t, spec(v=(8, 8)), "fifo", observers=[manager], power=PowerModel())
    assert [when // day for when, _ in fits] == [2, 4, 8, 16, 32, 60, 88]
    assert [known for _, known in fits] == [when // 3600 + 1 for when, _ in fits]
    assert manager.describe()["retrains"] == 7


def test_energy_in_a_run_matches_its_node_states(tmp_path: Path) -> None:
    t = jobs(("A", "v", 4, 0, 600), ("B", "v", 4, 900, 300))
    result = simulate(t, spec(v=(4, 4)), "fifo", observers=[_manager([1, 0], boot=60)], power=PowerModel())
    e = result.summary["energy"]
    window = 1260 - 0  # B waits 60 s for a boot: ends at 900 + 60 + 300
    assert e["window_seconds"] == window
    m = PowerModel()
    idle = m.idle_watts(4)
    assert e["always_on_kwh"] * 3.6e6 == pytest.approx(2 * idle * window + 900 * 4 * (m.gpu_busy_watts - m.gpu_idle_watts))
    # the time-weighted states add up to two nodes over the window
    assert (e["node_hours_on"] + e["node_hours_off"] + e["node_hours_booting"]) * 3600 == pytest.approx(2 * window)
    assert e["saved_pct"] > 0


def test_energy_and_the_timeline_cover_the_run_s_window_with_a_validation_pool() -> None:
    from dlcluster.sim.failures import FailureModel

    # j: submitted at 0, validated 0..60, on the cluster 60..1060; the node is on (and idle) during validation
    t = jobs(("j", "v", 2, 0, 1000)).with_columns(pl.Series("status", ["completed"]))
    pool = FailureModel(validation_seconds=60, validation_gpus=1)
    result = simulate(t, spec(v=(8,)), "fifo", failures=pool, power=PowerModel(node_watts=500, gpu_idle_watts=50))
    e = result.summary["energy"]
    assert result.summary["overall"]["makespan"] == e["window_seconds"] == 1060
    assert e["energy_kwh"] == pytest.approx((900 * 1060 + 2 * 250 * 1000) / 3.6e6)  # 0.4039
    assert result.timeline["time"].to_list() == list(range(0, 1061, 60))
    # every job caught on the pool (it fails after 30 s): the run's 30 s, not 0 kWh
    t = t.with_columns(pl.Series("status", ["failed"]), pl.lit(30).alias("duration"))
    e = simulate(t, spec(v=(8,)), "fifo", failures=pool, power=PowerModel()).summary["energy"]
    assert e["window_seconds"] == 30 and e["energy_kwh"] == pytest.approx(900 * 30 / 3.6e6)


def test_powered_utilization_counts_a_vc_after_its_last_job() -> None:
    # VC a's one job ends at 600, VC b's at 3000: a's timeline stops at 600, but its node stays on until 3000
    t = jobs(("A", "a", 8, 0, 600), ("B", "b", 8, 0, 3000))
    result = simulate(t, spec(a=(8,), b=(8,)), "fifo", power=PowerModel())
    assert result.timeline.group_by("vc").len().sort("vc")["len"].to_list() == [11, 51]  # samples 0, 60, ..
    # both nodes busy at samples 0..540, one at 600..2940, none at 3000: over 2 powered nodes at each of 51
    assert result.summary["energy"]["utilization_powered"] == pytest.approx((10 * 2 + 40 * 1) / (51 * 2))


def test_the_reports_powered_nodes_count_a_vc_after_its_last_job() -> None:
    from dlcluster.analysis.simruns import powered_timeline

    # the controller powers the idle node of VC a off at 900, after a's job ended at 600; b's job runs to 7200
    t = jobs(("A", "a", 8, 0, 600), ("B", "b", 8, 0, 7200))
    result = simulate(t, spec(a=(8, 8), b=(8,)), "fifo", observers=[_manager([3, 3, 3, 3, 3, 2], step=180)],
                      power=PowerModel())
    assert result.node_states.select("time", "vc", "state").rows() == [(900, "a", "off")]
    panel = powered_timeline(result.timeline, result.node_states, points=10_000)
    # 3 nodes powered in hour 0 until 900 (15 samples), then 2 for its other 45 samples and in hours 1 and 2 (the
    # sample at 7200, when nothing runs)
    assert panel.rows() == [(0.0, pytest.approx((10 * 2 + 50 * 1) / 60), pytest.approx((15 * 3 + 45 * 2) / 60)),
                            (1.0, 1.0, 2.0), (2.0, 0.0, 2.0)]
    e = result.summary["energy"]
    assert e["mean_powered_nodes"] == pytest.approx((900 * 3 + 6300 * 2) / 7200)


def test_power_none_leaves_every_output_unchanged(tmp_path: Path) -> None:
    cluster = spec(v=(8, 8), w=(4,))
    t = jobs(*((f"j{i}", "vw"[i % 2], 1 + i % 4, 37 * i, 100 + 13 * i) for i in range(40)))
    trace = write_trace(tmp_path / "t.parquet", t, cluster)
    outs = []
    for extra in ((), ("--power", "none")):
        out = tmp_path / f"out{len(extra)}"
        assert cli("simulate", str(trace), "-p", "fifo,sjf", "-o", str(out), *extra).returncode == 0
        outs.append(out)
    for f in ("fifo/jobs.parquet", "fifo/timeline.parquet", "sjf/placements.parquet"):
        assert (outs[0] / f).read_bytes() == (outs[1] / f).read_bytes()
    a, b = (json.loads((o / "fifo/summary.json").read_text()) for o in outs)
    for s in (a, b):
        s.pop("wall_seconds")
        s["overall"].pop("wall_seconds"), s["overall"].pop("events_per_second")
    assert a == b and "energy" not in a and not (outs[0] / "fifo/node_states.parquet").exists()


def test_simulate_power_ces_writes_energy_and_node_states(tmp_path: Path) -> None:
    cluster = spec(v=(8,) * 6)
    t = jobs(*((f"j{i}", "v", 8, 3600 * i, 1800) for i in range(72)))
    trace = write_trace(tmp_path / "t.parquet", t, cluster)
    out = tmp_path / "out"
    run = cli("simulate", str(trace), "-o", str(out), "--power", "ces", "--boot-seconds", "120", "--buffer", "1")
    assert run.returncode == 0, run.stderr
    summary = json.loads((out / "summary.json").read_text())
    e = summary["energy"]
    for key in ("energy_kwh", "always_on_kwh", "saved_pct", "node_hours_off", "wakeups", "boot_delayed_jobs",
                "boot_delay_seconds"):
        assert key in e
    assert e["model"]["boot_seconds"] == 120 and e["controller"]["rule"] == "helios"
    timeline = pl.read_parquet(out / "timeline.parquet")
    assert {"nodes_on", "nodes_off"} <= set(timeline.columns)
    assert (timeline["nodes_on"] + timeline["nodes_off"] + timeline.get_column("nodes_booting", default=0) == 6).all()
    assert e["saved_pct"] > 10  # one busy node of six, half the time: most nodes sleep
    assert pl.read_parquet(out / "node_states.parquet").height == 2 * e["wakeups"] + pl.read_parquet(
        out / "node_states.parquet").filter(pl.col("state") == "off").height


def test_bad_power_options_are_one_line_errors(tmp_path: Path) -> None:
    trace = write_trace(tmp_path / "t.parquet", jobs(("a", "v", 1, 0, 10)), spec(v=(8,)))
    bad = tmp_path / "power.toml"
    bad.write_text("idle_wats = 3\n")
    cases = ((("--power", "ces", "--power-model", str(bad)), "field 'idle_wats': unknown setting"),
             (("--buffer", "4"), "--buffer needs --power ces"),
             (("--power", "solar"), "--power 'solar': choose none, on or ces"),
             (("--power", "on", "--risk", "0.1"), "--risk needs --power ces"),
             (("--boot-seconds", "10",), "--boot-seconds needs --power ces"),
             # options that would change nothing: with --power on no node boots; the quantile rule has no preset
             (("--power", "on", "--boot-seconds", "10"), "--boot-seconds needs --power ces"),
             (("--power", "ces", "--ces-rule", "quantile", "--ces-preset", "venus"),
              "--ces-preset is an option of the helios rule"),
             (("--power", "ces", "--compat", "helios-artifact"), "compatibility mode (--compat helios-artifact) keeps"),
             (("--power", "ces", "--ces-rule", "quantile", "--risk", "2"), "--risk must be from 1e-06 to 0.999999"),
             (("--power", "ces", "--ces-rule", "quantile", "--buffer", "3"), "--buffer is an option of the helios rule"),
             # the option is named, not a power-model key the command line never gave
             (("--power", "ces", "--boot-seconds", "86401"), "error: --boot-seconds must be at most 86,400 (one day), "
              "got 86,401"),
             # the option named, its exact names only (as --power and --ces-preset)
             (("--power", "ces", "--ces-rule", "Quantile"), "error: --ces-rule 'Quantile': choose helios or quantile"),
             (("--power", "ces", "--ces-rule", "magic", "--risk", "0.1"), "error: --ces-rule 'magic': choose helios"),
             # refused up front, even by a run too short for the controller ever to retrain
             (("--power", "ces", "--holidays", "XX"), "no public-holiday calendar for country 'XX'"))
    for args, message in cases:
        run = cli("simulate", str(trace), "-o", str(tmp_path / "o"), *args)
        assert run.returncode == 2 and message in run.stderr and "Traceback" not in run.stderr, run.stderr
        assert len(run.stderr.strip().splitlines()) == 1


def test_read_power_model(tmp_path: Path) -> None:
    f = tmp_path / "p.toml"
    f.write_text("node_watts = 300\nboot_seconds = 90\n")
    assert read_power_model(f) == PowerModel(node_watts=300, boot_seconds=90)
    assert read_power_model(f, boot_seconds=10).boot_seconds == 10
    # the defaults docs/ces.md derives: an idle 8-GPU node draws 900 W, a fully busy one 2,900 W
    m = PowerModel()
    assert m.idle_watts(8) == 900 and m.idle_watts(8) + 8 * (m.gpu_busy_watts - m.gpu_idle_watts) == 2900
    # (inf, true and 1.5 were accepted: an energy of inf, 1 W, a boot ending mid-second)
    for text, message in (("off_watts = -1\n", "off_watts must be a finite number >= 0, got -1"),
                          ("node_watts = inf\n", "node_watts must be a finite number >= 0, got inf"),
                          ("node_watts = true\n", "node_watts must be a finite number >= 0, got True"),
                          ("boot_seconds = 1.5\n", "boot_seconds must be a whole number of seconds, got 1.5"),
                          # (finite but huge: summary.json held Infinity and NaN)
                          ("node_watts = 1e308\n", "node_watts must be at most 1,000,000 W, got 1e+308"),
                          ("off_watts = 1000001\n", "off_watts must be at most 1,000,000 W, got 1000001")):
        f.write_text(text)
        with pytest.raises(InputError) as info:
            read_power_model(f)
        assert str(info.value) == f"{f}: {message}"


# ---- the ces command -----------------------------------------------------------------------------------------

def test_ces_json_and_outputs(tmp_path: Path) -> None:
    series = _daily(9)
    f = tmp_path / "series.csv"
    series.write_csv(f)
    out = tmp_path / "out"
    run = cli("ces", str(f), "--json", "--test-days", "3", "-o", str(out), "--events", "2020-09-20,2020-09-25")
    assert run.returncode == 0, run.stderr
    got = json.loads(run.stdout)
    for key in ("changes_per_day", "wakeups_per_day", "mean_off_nodes", "utilization_total", "utilization_powered",
                "rmse", "smape", "shortages"):
        assert key in got
    assert got["days"] == 3 and len(got["horizons"]) == 4 and got["events"] == ["2020-09-20", "2020-09-25"]
    steps = pl.read_parquet(out / "steps.parquet")
    assert steps.height == 3 * 144
    assert steps.columns == ["time", "used", "total", "forecast", "active", "change", "lack"]
    assert all((out / name).stat().st_size > 0 for name in ("ces.png", "ces.svg", "horizons.parquet"))
    assert json.loads((out / "summary.json").read_text()) == got
    # the printed forecast error is the next step's, the first row of horizons.parquet (the steps' forecast is the
    # rule's mean over its window, as docs/ces.md says)
    horizons = pl.read_parquet(out / "horizons.parquet")
    assert horizons.height == 4 and (horizons["rmse"][0], horizons["smape"][0]) == (got["rmse"], got["smape"])
    # the same series saved with a byte-order mark (as Excel saves CSV) is still a series, with the same figures
    bom = tmp_path / "bom.csv"
    bom.write_bytes(b"\xef\xbb\xbf" + f.read_bytes())
    again = cli("ces", str(bom), "--json", "--test-days", "3", "--events", "2020-09-20,2020-09-25")
    assert again.returncode == 0, again.stderr
    assert {k: v for k, v in json.loads(again.stdout).items() if k != "source"} == \
        {k: v for k, v in got.items() if k != "source"}


def test_a_zstd_series_is_a_series_with_the_plain_file_s_figures(tmp_path: Path) -> None:
    # (a .csv.gz series was one, a .csv.zst was taken for a trace: "cannot tell the trace format")
    import pyarrow as pa  # (Python 3.11 has no zstd module; pyarrow is a dependency)

    plain, packed = tmp_path / "series.csv", tmp_path / "series.csv.zst"
    _daily(9).write_csv(plain)
    with pa.CompressedOutputStream(str(packed), "zstd") as out:
        out.write(plain.read_bytes())
    runs = [cli("ces", str(f), "--json", "--test-days", "3") for f in (plain, packed)]
    assert all(r.returncode == 0 for r in runs), runs[1].stderr
    got, want = ({k: v for k, v in json.loads(r.stdout).items() if k != "source"} for r in reversed(runs))
    assert got == want and got["days"] == 3


def test_the_forecaster_s_calendar_is_utc_whatever_the_trace_s_zone(tmp_path: Path) -> None:
    """docs/ces.md: hours, weekdays and holidays are UTC's; the trace's time zone changes no figure."""
    from dlcluster.io.parquet import write
    from dlcluster.schema import conform
    from dlcluster.trace import Trace

    rows = [(f"j{i}", "v", 8, i * 5 * 3600, 3 * 3600) for i in range(6 * 24 // 5)]
    t = jobs(*rows).with_columns(start_time=pl.col("submit_time"), end_time=pl.col("submit_time") + pl.col("duration"),
                                 cluster=pl.lit("test"), status=pl.lit("completed"))
    got = []
    for zone in ("UTC", "Asia/Shanghai"):
        path = write(Trace(conform(t), "parquet", timezone=zone, cluster=spec(v=(8, 8))),
                     tmp_path / f"{zone[:4]}.parquet")
        run = cli("ces", str(path), "--test-days", "1", "--holidays", "CN", "--json")
        assert run.returncode == 0, run.stderr
        got.append({k: v for k, v in json.loads(run.stdout).items() if k != "source"})
    assert got[0] == got[1]


def test_a_compat_run_leaves_no_earlier_horizons_in_its_folder(shared_data: Path, tmp_path: Path) -> None:
    series = tmp_path / "s.csv"
    _daily(9).write_csv(series)
    assert cli("ces", str(series), "--test-days", "3", "-o", str(tmp_path / "out")).returncode == 0
    assert (tmp_path / "out/horizons.parquet").is_file()
    run = cli("ces", str(shared_data / "philly/node_sequence_minutely.csv"), "--compat", "helios-artifact",
              "-o", str(tmp_path / "out"))
    assert run.returncode == 0, run.stderr
    assert not (tmp_path / "out/horizons.parquet").exists() and (tmp_path / "out/steps.parquet").is_file()


def test_ces_compat_on_philly_reproduces_the_artifact(shared_data: Path) -> None:
    run = cli("ces", str(shared_data / "philly/node_sequence_minutely.csv"), "--cluster-preset", "philly",
              "--compat", "helios-artifact", "--json")
    assert run.returncode == 0, run.stderr
    got = json.loads(run.stdout)
    # docs/ces.md's row for --compat, from the command on the whole file: it keeps the artifact's window
    assert (round(got["mean_off_nodes"], 2), round(got["utilization_powered"], 3), got["shortages"]) == \
        (94.19, 88.721, 6)


def test_ces_on_the_whole_philly_file_replays_its_last_14_days(shared_data: Path, tmp_path: Path) -> None:
    """docs/ces.md: the honest rows replay the artifact's window; the command replays the file's own last 14 days,
    which start and end 18 h 50 min later, and gives other figures."""
    run = cli("ces", str(shared_data / "philly/node_sequence_minutely.csv"), "--holidays", "US", "--json",
              "-o", str(tmp_path / "out"))
    assert run.returncode == 0, run.stderr
    steps = pl.read_parquet(tmp_path / "out/steps.parquet")["time"]
    # 2017-12-01 18:50 and 2017-12-15 18:40 UTC: the fixture's window is 2017-12-01 00:00 to 2017-12-14 23:50
    assert (steps.min(), steps.max()) == (1512154200, 1513363200)
    assert (1512154200 - 1512086400, 1513363200 - 1513295400) == (18 * 3600 + 50 * 60,) * 2
    assert round(json.loads(run.stdout)["mean_off_nodes"], 1) != 91.9


def test_ces_errors_are_one_line(tmp_path: Path) -> None:
    f = tmp_path / "short.csv"
    _daily(2).write_csv(f)
    # two days hold no test day after the two training days, whatever --test-days says: lowering it cannot help
    run = cli("ces", str(f), "--test-days", "0.01")
    assert (run.returncode, run.stderr) == (2, f"error: {f}: the series has 2.00 days; training needs at least 2 days "
                                               "before the 0.01 test days (the series is too short: it needs more than "
                                               "the 2 training days)\n")
    for args, message in ((("--test-days", "1"), "training needs at least 2 days"),
                          (("--test-days", "nan"), "--test-days must be a positive number of days, got nan"),
                          (("--test-days", "inf"), "--test-days must be a positive number of days, got inf"),
                          (("--test-days", "-1"), "--test-days must be a positive number of days, got -1"),
                          (("--test-days", "0"), "--test-days must be a positive number of days, got 0"),
                          # (days × steps a day overflowed: internal error)
                          (("--test-days", "1e308"), "training needs at least 2 days before the 1e+308 test days"),
                          (("--rule", "fuzzy"), "error: --rule 'fuzzy': choose helios or quantile"),
                          (("--compat", "helios-artifact", "--rule", "quantile"), "drop --rule"),
                          # options that would be ignored are refused
                          (("--compat", "helios-artifact", "--test-days", "3"), "drop --rule, --buffer, --step, "
                           "--test-days, --holidays and --events"),
                          (("--rule", "quantile", "--buffer", "5"), "--buffer is an option of the helios rule"),
                          (("--rule", "quantile", "--cluster-preset", "venus"),
                           "--cluster-preset is an option of the helios rule"),
                          (("--risk", "0.5",), "--risk is an option of the quantile rule"),
                          (("--events", "2017-02-30"), "--events: '2017-02-30' is not a date YYYY-MM-DD")):
        run = cli("ces", str(f), *args)
        assert run.returncode == 2 and message in run.stderr and "Traceback" not in run.stderr, run.stderr
    # the options are checked before the input is read
    run = cli("ces", str(tmp_path / "no-such.csv"), "--test-days", "-1")
    assert (run.returncode, run.stderr) == (2, "error: --test-days must be a positive number of days, got -1\n")
    # six days are enough days, but at two steps a day too few steps for the rule's 60-step forecast (this stopped
    # with an internal error)
    _daily(6).write_csv(f)
    run = cli("ces", str(f), "--step", "43200", "--test-days", "1")
    assert (run.returncode, run.stderr) == (2, "error: --step 43200: the 11 steps before the test days are too few "
                                               "to train forecasts 60 steps ahead (use a shorter --step or fewer "
                                               "--test-days)\n")
    # a step that does not divide a day replayed fewer days than it reported (a day of steps is the forecast's lag)
    for step in ("43201", "50000", "7000"):
        run = cli("ces", str(f), "--step", step, "--test-days", "1")
        assert (run.returncode, run.stderr) == (2, f"error: --step {step}: must divide a day (86,400 s) evenly, e.g. "
                                                   "300, 600, 900 or 3600\n")


def test_the_simulate_legend_defines_powered_util_only_when_energy_is_shown(tmp_path: Path) -> None:
    trace = write_trace(tmp_path / "t.parquet", jobs(("a", "v", 1, 0, 60)), spec(v=(8,)))
    defined = "powered util: busy nodes / powered nodes"
    texts = [" ".join(cli("simulate", str(trace), "-o", str(tmp_path / p), "--power", p).stdout.split())
             for p in ("none", "on")]
    assert [defined in t for t in texts] == [False, True]


def test_ces_input_errors_name_the_file(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere.csv"
    run = cli("ces", str(missing))
    assert (run.returncode, run.stderr) == (2, f"error: {missing}: no such file or folder\n")
    # a trace with submissions only (no start or end time) holds no demand
    t = jobs(("a", "v", 1, 0, 60)).with_columns(start_time=pl.lit(None, pl.Int64), end_time=pl.lit(None, pl.Int64))
    trace = write_trace(tmp_path / "t.parquet", t, spec(v=(8,)))
    run = cli("ces", str(trace))
    assert (run.returncode, run.stderr) == (2, f"error: {trace}, field 'start_time': no GPU job of the trace has "
                                               "both a start and an end time: no demand to count\n")
    # only CPU jobs: they have their times, but no GPU demand
    cpu = jobs(("a", "v", 0, 0, 60), ("b", "v", 0, 30, 60)).with_columns(
        start_time=pl.col("submit_time"), end_time=pl.col("submit_time") + pl.col("duration"))
    trace = write_trace(tmp_path / "cpu.parquet", cpu, spec(v=(8,)))
    run = cli("ces", str(trace))
    assert (run.returncode, run.stderr) == (2, f"error: {trace}, field 'gpu_num': no job of the trace uses a GPU: "
                                               "no demand to count\n")


def test_a_demand_series_longer_than_ten_years_is_refused_before_it_is_built(tmp_path: Path) -> None:
    """A two-row series from 1970 to 2020 used to be filled per step: 6.3 GB."""
    series = tmp_path / "s.csv"
    series.write_text("time,active,total\n0,1,10\n1600000000,1,10\n")
    run = cli("ces", str(series))
    assert (run.returncode, run.stderr) == (2, f"error: {series}, field 'time': the demand series would span 18,519 "
                                               "days; at most 3,652 (ten years)\n")
    # a trace whose submissions span eleven years; a job running long after the last submission is cut there
    t = jobs(("a", "v", 1, 0, 60), ("b", "v", 1, 11 * 365 * 86_400, 60)).with_columns(
        start_time=pl.col("submit_time"), end_time=pl.col("submit_time") + pl.col("duration"))
    trace = write_trace(tmp_path / "t.parquet", t, spec(v=(8,)))
    run = cli("ces", str(trace))
    assert (run.returncode, run.stderr) == (2, f"error: {trace}, field 'end_time': the demand series would span "
                                               "4,015 days; at most 3,652 (ten years)\n")
    drain = jobs(("a", "v", 1, 0, 90 * 365 * 86_400), ("b", "v", 1, 3 * 86_400, 60)).with_columns(
        start_time=pl.col("submit_time"), end_time=pl.col("submit_time") + pl.col("duration"))
    series_of = from_trace(drain, spec(v=(8,)), until=3 * 86_400)[0]
    assert series_of["time"].to_list()[-1] == 3 * 86_400 and series_of.height == 3 * 1440 + 1


def test_ces_on_a_trace_stops_at_the_last_submission_and_flags_constant_demand(tmp_path: Path) -> None:
    # one job a day for 6 days, each 1 h on 8 GPUs, then one job that runs 60 days: its tail is no workload
    rows = [(f"d{i}", "v", 8, i * DAY, 3600) for i in range(6)] + [("long", "v", 8, 6 * DAY, 60 * DAY)]
    t = jobs(*rows).with_columns(start_time=pl.col("submit_time"), end_time=pl.col("submit_time") + pl.col("duration"))
    trace = write_trace(tmp_path / "t.parquet", t, spec(v=(8, 8)))
    run = cli("ces", str(trace), "--test-days", "1", "--json")
    assert run.returncode == 0, run.stderr
    got = json.loads(run.stdout)
    # the replayed day is the one before the last submission (one job that hour), not the 60-day tail where the
    # long job alone keeps one node busy: a constant the command would flag
    assert "notes" not in got and 0 < got["utilization_total"] < 50
    flat = tmp_path / "flat.csv"
    pl.DataFrame({"time": [i * 600 for i in range(4 * 144)], "used": [3] * (4 * 144), "total": [9] * (4 * 144)}) \
        .write_csv(flat)
    run = cli("ces", str(flat), "--test-days", "1")
    assert run.returncode == 0 and "note: the demand is constant (3 busy nodes)" in run.stderr


def test_ces_notes_replayed_steps_without_samples(tmp_path: Path) -> None:
    """A gap in the series is filled with the step before; the figures count those steps, so the command says how
    many there are (a five-day hole in the replayed days had made the forecast error look better, unsaid)."""
    series = _daily(9)
    f = tmp_path / "gap.csv"
    series.filter((pl.col("time") < series["time"][0] + 7 * DAY) | (pl.col("time") >= series["time"][0] + 8 * DAY)) \
        .write_csv(f)
    run = cli("ces", str(f), "--test-days", "3", "--json")
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout)["notes"] == ["144 of the 432 replayed steps have no sample in the series: each "
                                               "repeats the step before, and the figures count it as observed"]
    whole = tmp_path / "whole.csv"
    series.write_csv(whole)
    run = cli("ces", str(whole), "--test-days", "3")
    assert run.returncode == 0 and "note:" not in run.stderr, run.stderr


def test_ces_notes_running_jobs_and_pools_a_trace(tmp_path: Path) -> None:
    rows = [(f"{vc}{i}", vc, 8, i * DAY, 3600) for i in range(6) for vc in ("v", "w")]
    t = jobs(*rows).with_columns(start_time=pl.col("submit_time"), end_time=pl.col("submit_time") + pl.col("duration"))
    # a snapshot's running job: a start, no end
    ended = t.with_columns(status=pl.lit("completed"))
    running = ended.head(1).with_columns(job_id=pl.lit("r"), end_time=pl.lit(None), submit_time=pl.lit(3 * DAY),
                                         start_time=pl.lit(3 * DAY), status=pl.lit("running")).cast(ended.schema)
    from dlcluster.io.parquet import write
    from dlcluster.schema import conform
    from dlcluster.trace import Trace

    table = conform(pl.concat([ended, running]).sort("submit_time").with_columns(cluster=pl.lit("test")))
    trace = write(Trace(table, "parquet", cluster=spec(v=(8,), w=(8,))), tmp_path / "t.parquet")
    run = cli("ces", str(trace), "--test-days", "1", "--json")
    assert run.returncode == 0, run.stderr
    assert f"note: {trace}: 1 GPU job(s) with a start and no end (still running) left out of the demand" in run.stderr
    # --pooled: one VC of every node, as simulate --pooled (VCs of the trace that a spec lacks are no matter then)
    other = write_trace(tmp_path / "o.parquet", t.with_columns(vc=pl.lit("qos")), spec(v=(8,), w=(8,)))
    assert cli("ces", str(other), "--test-days", "1").returncode == 2
    pooled = cli("ces", str(other), "--test-days", "1", "--json", "--pooled")
    assert pooled.returncode == 0, pooled.stderr
    assert json.loads(pooled.stdout)["utilization_total"] > 0
    series = tmp_path / "s.csv"
    _daily(4).write_csv(series)
    run = cli("ces", str(series), "--pooled")
    assert (run.returncode, run.stderr) == (2, f"error: --pooled: options of a trace, but {series} is a demand series "
                                               "(time, used|active, total)\n")


def test_ces_names_the_vcs_a_cluster_file_lacks(tmp_path: Path) -> None:
    # (their jobs were dropped from the demand without a word; with no VC in the file the demand was all 0)
    rows = [(f"{vc}{i}", vc, 8, i * DAY, 3600) for i in range(6) for vc in ("v", "w")]
    t = jobs(*rows).with_columns(start_time=pl.col("submit_time"), end_time=pl.col("submit_time") + pl.col("duration"))
    trace = write_trace(tmp_path / "t.parquet", t, spec(v=(8, 8), w=(8,)))
    only_v, none = tmp_path / "v.csv", tmp_path / "x.csv"
    only_v.write_text("vc,nodes,gpus_per_node\nv,2,8\n")
    none.write_text("vc,nodes,gpus_per_node\nx,2,8\n")
    run = cli("ces", str(trace), "--test-days", "1", "--cluster", str(only_v))
    assert run.returncode == 0
    assert f"note: {trace}: 6 GPU job(s) of VCs not in the cluster spec left out of the demand: w\n" in run.stderr
    # a spec smaller than the trace's VC: the demand is capped at the VC's nodes, and a note says so (it was silent)
    small = tmp_path / "small.csv"
    small.write_text("vc,nodes,gpus_per_node\nv,1,4\nw,1,8\n")
    run = cli("ces", str(trace), "--test-days", "1", "--cluster", str(small))
    assert run.returncode == 0
    assert (f"note: {trace}: 1 VC(s) had more GPUs busy at a time than the cluster spec gives them, their demand "
            "capped at all their nodes: v (8 of 4)") in " ".join(run.stderr.split())
    run = cli("ces", str(trace), "--test-days", "1", "--cluster", str(none))
    assert (run.returncode, run.stderr) == (2, f"error: {trace}, field 'vc': no GPU job's VC is in the cluster spec "
                                               f"({none}): VCs v, w\n")
    series = tmp_path / "s.csv"
    _daily(4).write_csv(series)
    run = cli("ces", str(series), "--cluster", str(only_v))  # (it was ignored)
    assert (run.returncode, run.stderr) == (2, f"error: --cluster: options of a trace, but {series} is a demand "
                                               "series (time, used|active, total)\n")


def test_a_job_that_fits_only_a_big_node_gets_one_booted() -> None:
    # every node off at 0; j1 (2 GPUs) fits only the 2-GPU node: booting the 1-GPU node first would strand it
    t = jobs(("j0", "a", 1, 0, 0), ("j1", "b", 2, 1, 5))
    result = simulate(t, spec(a=(1,), b=(1, 2)), "fifo", observers=[_manager([0], boot=0, step=7)],
                      power=PowerModel())
    assert by_id(result.jobs)["j1"]["start"] == 1
    assert result.node_states.filter(pl.col("state") == "booting").select("vc", "node").rows() == [("b", 1)]


def test_a_gang_as_large_as_a_mixed_vc_gets_enough_gpus_booted() -> None:
    # every node off at 0; j1 needs all 4 GPUs of nodes (1, 1, 2): counting nodes alone would boot 2 of 3 and wait
    t = jobs(("j0", "a", 1, 0, 0), ("j1", "b", 4, 1, 5))
    result = simulate(t, spec(a=(1,), b=(1, 1, 2)), "fifo", observers=[_manager([0], boot=0, step=7)],
                      power=PowerModel())
    assert by_id(result.jobs)["j1"]["start"] == 1


def test_a_csv_that_is_neither_series_nor_trace_is_named_as_such(tmp_path: Path) -> None:
    path = tmp_path / "throughput.csv"  # a per-10-minute job count, as the Helios throughput files: not node demand
    path.write_text("time,submit_job_all,start_job_all\n2020-04-01 00:00:00,6,6\n")
    res = cli("ces", str(path))
    assert (res.returncode, res.stderr.strip()) == (2, (
        f"error: {path}: neither a demand series (columns time, used, active or busy, and total: nodes), a "
        "simulation's output folder, nor a trace of a known format; for a trace pass --format (parquet, helios, "
        "philly, philly-jobs, pai, openb, swf, sacct, csv)"))


def test_a_series_whose_name_holds_a_star_is_that_file(tmp_path: Path) -> None:
    # (Polars took the name for a pattern: it read every CSV the star matched)
    (tmp_path / "a*.csv").write_text("time,used,total\n0,1,5\n60,2,5\n")
    (tmp_path / "ab.csv").write_text("time,used,total\n0,4,5\n60,4,5\n120,4,5\n")
    assert read_series(tmp_path / "a*.csv").rows() == [(0, 1, 5), (60, 2, 5)]


def test_the_docs_preset_table_and_defaults_are_the_code_s() -> None:
    """docs/ces.md's preset table, the quantile rule's defaults and the forecaster's size, as the code has them."""
    import dataclasses
    import re

    docs = (Path(__file__).resolve().parents[1] / "docs/ces.md").read_text()
    header = "| preset | history | future | his_threshold | fut_threshold | de_threshold | buffer | keep |"
    table = docs[docs.index(header):].split("\n\n")[0].splitlines()[2:]
    rows = {cells[0]: cells[1:] for cells in ([c.strip() for c in line.strip("|").split("|")] for line in table)}
    assert set(rows) == set(PRESETS)
    for name, values in rows.items():
        params = dataclasses.asdict(PRESETS[name])
        assert list(params) == header.strip("| ").split(" | ")[1:]  # (the columns are RuleParams' fields)
        assert [float(v) for v in values] == list(params.values()), name
    q = QuantileRule()
    for phrase in (f"the next `lookahead` steps ({q.lookahead}:", f"a `margin` of {q.margin}",
                   f"with {q.headroom} nodes of `headroom`", f"at least {q.de_threshold} below the powered nodes",
                   f"within {q.keep} steps of a wake-up", f"(`--risk`, default {q.risk})"):
        assert phrase in re.sub(r"\s+", " ", docs), phrase
    fc = DemandForecaster(600, 0, (horizon(1),))
    assert f"{fc.trees} trees of {fc.leaves} leaves" in docs


@pytest.mark.parametrize(("rule", "first_target"), [
    (HeliosRule(PRESETS["philly"]), Target(0, PRESETS["philly"].future, "mean")),
    (QuantileRule(), Target(1, QuantileRule().lookahead + 1, "max")),
])
def test_the_steps_forecast_column_is_the_rule_s_own_first_forecast(rule, first_target: Target) -> None:
    """docs/ces.md: ``forecast`` in steps.parquet is the helios rule's mean over the next ``future`` steps, the
    quantile rule's peak quantile (not the next step's forecast behind the printed RMSE)."""
    series = _daily(9)
    steps = open_loop(series, rule, step=STEP, test_days=3).steps
    assert rule.targets[0] == first_target
    alone = DemandForecaster(STEP, int(series["time"][0]), (first_target,), Calendar(), quantile=rule.quantile)
    alone.extend(series["used"].cast(pl.Float64).to_list())
    first = series.height - steps.height
    alone.fit(until=first)
    assert steps["forecast"].to_list() == alone.forecast_all(range(first, series.height))[:, 0].tolist()
