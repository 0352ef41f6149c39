"""The batched workload model: bursts, batch submissions, per-size and per-VC structure (issue 13)."""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from dlcluster.cluster import ClusterSpec
from dlcluster.errors import ConfigError
from dlcluster.io import read_trace
from dlcluster.io.cluster_spec import read_cluster_spec
from dlcluster.synth import Model, closeness, fit, generate
from dlcluster.synth.batched import mean_batch
from dlcluster.synth.model import ANY, Batches, Bucket, Dist, Queue, Users, VcJobs, bucket_of

SEEDS = (1, 2, 3, 4, 5)


def _toy(batches: Batches | None) -> Model:
    bucket = Bucket({"completed": 1.0}, {ANY: Dist.lognormal(600.0, 100.0)})
    return Model(name="toy", cluster="toy", timezone="UTC", start=1_700_006_400, days=20.0, jobs_per_day=3000.0,
                 weekly_profile=(1.0,) * 168, gpu_mix={1: 0.7, 4: 0.3}, buckets={"1": bucket, "2-4": bucket},
                 users=Users(40, zipf=1.0), vcs={"a": (8, 8), "b": (8,)}, vc_share={"a": 0.6, "b": 0.4},
                 batches=batches)


def _strip(raw: object, keys: set[str]) -> object:
    if isinstance(raw, dict):
        return {k: _strip(v, keys) for k, v in raw.items() if k not in keys}
    if isinstance(raw, list):
        return [_strip(v, keys) for v in raw]
    return raw


def _arrival_stats(jobs: pl.DataFrame) -> tuple[float, float]:
    gaps = np.diff(np.sort(jobs["submit_time"].to_numpy()))
    return float(gaps.std() / gaps.mean()), float((gaps == 0).mean())


def test_a_model_saved_before_the_batched_fields_loads_unchanged() -> None:
    model = _toy(None)
    old = _strip(json.loads(model.to_json()), {"batches", "vc_jobs", "by_size", "tail"})
    assert "batches" not in json.dumps(old)
    assert Model.from_json(json.dumps(old)) == model


def test_batches_share_size_vc_and_user_and_keep_their_gaps() -> None:
    batches = Batches(sizes={5: 1.0}, gaps=Queue(0.5, Dist(quantiles=(1.0, 3.0))))
    jobs = generate(_toy(batches), seed=3).jobs.sort("submit_time", maintain_order=True)
    plain = generate(_toy(None), seed=3).jobs
    assert jobs.height == pytest.approx(plain.height, rel=0.03)  # batches keep the job rate
    _, same = _arrival_stats(jobs)
    # four of a batch's five jobs follow a gap, half of those gaps are zero; other coincidences are rare
    assert same == pytest.approx(0.5 * 4 / 5, abs=0.02)
    pairs = jobs.with_columns(
        (pl.col("submit_time").diff() == 0).alias("same"),
        *(pl.col(c).shift().alias(f"prev_{c}") for c in ("gpu_num", "vc", "user")))
    tied = pairs.filter(pl.col("same"))
    for column in ("gpu_num", "vc", "user"):
        assert (tied[column] == tied[f"prev_{column}"]).mean() > 0.97
    assert _arrival_stats(jobs)[0] > _arrival_stats(plain)[0] + 0.3


def test_batched_generation_is_deterministic_and_round_trips() -> None:
    model = _toy(Batches(sizes={1: 0.5, 3: 0.5}, gaps=Queue(0.2, Dist(quantiles=(1.0, 4.0))),
                         day_rates=tuple(np.linspace(0.2, 1.8, 101)), day_corr=0.5, batch_sd=0.6, job_sd=0.5,
                         vc_day_sd=0.4, vc_day_corr=0.6, vc_hour_sd=0.3, vc_hour_corr=0.4))
    assert Model.from_json(model.to_json()) == model
    a = generate(model, days=5, seed=9).jobs
    assert a.equals(generate(Model.from_json(model.to_json()), days=5, seed=9).jobs)
    assert not a.equals(generate(model, days=5, seed=10).jobs)


def test_day_multipliers_spread_the_daily_counts() -> None:
    flat = _toy(Batches(sizes={1: 1.0}, gaps=Queue()))
    varied = dataclasses.replace(flat, batches=dataclasses.replace(
        flat.batches, day_rates=tuple(np.linspace(0.1, 1.9, 101))))
    def daily(model: Model) -> np.ndarray:
        return np.bincount((generate(model, seed=2).jobs["submit_time"].to_numpy() - model.start) // 86400)
    calm, busy = daily(flat), daily(varied)
    assert calm.std() / calm.mean() < 0.05
    assert busy.std() / busy.mean() > 0.4  # multipliers uniform on 0.1..1.9: CV about 0.52
    assert busy.sum() == pytest.approx(calm.sum(), rel=0.03)


def test_vc_day_shifts_are_fitted_back_from_a_generated_trace() -> None:
    # a VC's batches of one day share a duration shift (an AR(1) over days); fitting the generated trace finds its
    # spread and day-to-day correlation again, in standardised units (the parts' total variance is 0.82; the
    # correlation comes out a little low: each VC's 60 days are centred on their own mean)
    batches = Batches(sizes={3: 1.0}, gaps=Queue(), batch_sd=0.3, job_sd=0.3, vc_day_sd=0.8, vc_day_corr=0.7)
    vcs = {vc: (8, 8) for vc in "abcdef"}
    model = dataclasses.replace(_toy(batches), jobs_per_day=1500.0, users=None, gpu_mix={1: 1.0}, vcs=vcs,
                                vc_share={vc: 1 / 6 for vc in vcs}, vc_jobs={vc: VcJobs({1: 1.0}) for vc in vcs})
    refit = fit(generate(model, days=60, seed=3), cluster=ClusterSpec(dict(vcs))).batches
    assert refit is not None
    assert refit.vc_day_sd == pytest.approx(0.8 / math.sqrt(0.82), abs=0.05)
    assert refit.vc_day_corr == pytest.approx(0.7, abs=0.1)
    flat = generate(dataclasses.replace(model, batches=dataclasses.replace(batches, vc_day_sd=0.0)), days=60, seed=3)
    assert fit(flat, cluster=ClusterSpec(dict(vcs))).batches.vc_day_sd < 0.1  # type: ignore[union-attr]
    # without VC sizes the generator draws VCs after the run times: the day part stays in the batch part
    unsized = fit(dataclasses.replace(generate(model, days=60, seed=3), cluster=None)).batches
    assert unsized is not None and unsized.vc_day_sd == 0.0
    assert unsized.batch_sd == pytest.approx(math.hypot(refit.batch_sd, refit.vc_day_sd), abs=0.05)


def test_vc_hour_shifts_are_fitted_back_beyond_the_day_ones() -> None:
    # a VC's batches of one hour share a duration shift (an AR(1) over hours) on top of its day's; fitting the
    # generated trace finds the hour part's spread and hour-to-hour correlation, and the day and batch parts without
    # it (standardised: the parts' total variance is 0.70)
    batches = Batches(sizes={3: 1.0}, gaps=Queue(), batch_sd=0.3, job_sd=0.3, vc_day_sd=0.4, vc_day_corr=0.5,
                      vc_hour_sd=0.6, vc_hour_corr=0.5)
    vcs = {vc: (8, 8) for vc in "abcdef"}
    model = dataclasses.replace(_toy(batches), jobs_per_day=6000.0, users=None, gpu_mix={1: 1.0}, vcs=vcs,
                                vc_share={vc: 1 / 6 for vc in vcs}, vc_jobs={vc: VcJobs({1: 1.0}) for vc in vcs})
    cluster = ClusterSpec(dict(vcs))

    def refit(hour_sd: float, hour_corr: float) -> Batches:
        changed = dataclasses.replace(batches, vc_hour_sd=hour_sd, vc_hour_corr=hour_corr)
        out = fit(generate(dataclasses.replace(model, batches=changed), days=30, seed=3), cluster=cluster).batches
        assert out is not None
        return out
    total = math.sqrt(0.70)
    hourly = refit(0.6, 0.5)
    assert hourly.vc_hour_sd == pytest.approx(0.6 / total, abs=0.05)
    assert hourly.vc_hour_corr == pytest.approx(0.5, abs=0.05)
    assert hourly.vc_day_sd == pytest.approx(0.4 / total, abs=0.05)  # a day's mean of the hour part is not the day's
    assert hourly.batch_sd == pytest.approx(0.3 / total, abs=0.06)
    assert refit(0.6, 0.0).vc_hour_corr < 0.05
    assert refit(0.0, 0.0).vc_hour_sd < 0.1


def _two_vcs(**own: VcJobs) -> Model:
    """A batched toy of two 16-GPU VCs of 1-GPU jobs, with the given VCs' own jobs."""
    vcs = {"a": (8, 8), "b": (8, 8)}
    jobs = {vc: own.get(vc, VcJobs({1: 1.0})) for vc in vcs}
    return dataclasses.replace(_toy(Batches(sizes={1: 1.0}, gaps=Queue(), batch_sd=0.3, job_sd=0.3)),
                               jobs_per_day=1500.0, users=None, gpu_mix={1: 1.0}, vcs=vcs,
                               vc_share={"a": 0.5, "b": 0.5}, vc_jobs=jobs)


def test_a_vc_s_own_batch_sizes_and_busy_days_are_fitted_back() -> None:
    # VC a submits sweeps of 5 jobs, b single jobs; a's share of each day's batches varies (lognormal, AR(1) over
    # days) and its busy days bring shorter jobs: fitting a year of the generated trace finds all of it again (a's
    # spread a little low: its busy days take batches from b's, so its share of a day varies a little less)
    model = _two_vcs(a=VcJobs({1: 1.0}, batch_sizes={"1": {5: 1.0}}, rate_sd=0.5, rate_corr=0.5,
                              rate_score_corr=-0.8, day_shift_sd=0.6, day_shift_corr=0.5),
                     b=VcJobs({1: 1.0}, batch_sizes={"1": {1: 1.0}}))
    model = dataclasses.replace(model, vc_share={"a": 0.1, "b": 0.9}, jobs_per_day=600.0)
    trace = generate(model, days=365, seed=4)
    per_vc = trace.jobs.group_by("vc").len().sort("vc")["len"].to_list()
    assert per_vc[0] / sum(per_vc) == pytest.approx(0.1, abs=0.01)  # job shares kept, whatever the batch sizes
    refit = fit(trace, cluster=ClusterSpec(dict(model.vcs))).vc_jobs
    # (b's single jobs 160 s apart on average: the fit's 60-s rule joins some of them)
    assert refit["a"].batch_sizes["1"][5] > 0.9 and mean_batch(refit["b"].batch_sizes["1"]) < 2.0
    assert refit["a"].rate_sd == pytest.approx(0.5, abs=0.1)
    assert refit["a"].rate_corr == pytest.approx(0.5, abs=0.1)
    assert refit["a"].rate_score_corr < -0.5
    assert refit["b"].rate_sd < 0.1


def test_a_vc_s_busy_days_hold_its_batches_without_changing_their_number() -> None:
    calm = _two_vcs()
    busy = _two_vcs(a=VcJobs({1: 1.0}, rate_sd=1.5, rate_corr=0.9))
    def daily_a(model: Model) -> np.ndarray:
        jobs = generate(model, days=60, seed=6).jobs.filter(pl.col("vc") == "a")
        return np.bincount((jobs["submit_time"].to_numpy() - model.start) // 86400, minlength=60)
    quiet, bursty = daily_a(calm), daily_a(busy)
    assert bursty.sum() == pytest.approx(quiet.sum(), rel=0.02)
    assert bursty.std() / bursty.mean() > 3 * quiet.std() / quiet.mean()


def _sessions_of_a(**batches: object) -> Model:
    """VC a submits single 4-GPU jobs in sessions of six, 5 to 15 minutes apart, about one session a day; b single
    1-GPU jobs."""
    model = _two_vcs(a=VcJobs({4: 1.0}, session_sizes={6: 1.0}), b=VcJobs({1: 1.0}))
    pauses = Dist(quantiles=tuple(np.log1p(np.linspace(300.0, 900.0, 11))))
    return dataclasses.replace(model, gpu_mix={1: 0.5, 4: 0.5}, jobs_per_day=300.0, vc_share={"a": 0.02, "b": 0.98},
                               users=Users(40, zipf=1.0), batches=dataclasses.replace(
                                   model.batches, session_gap=3 * 3600, session_gaps=pauses, **batches))


def test_a_vc_s_sessions_bring_its_multi_gpu_batches_together_and_are_fitted_back() -> None:
    model = _sessions_of_a()
    trace = generate(model, days=120, seed=5)
    apart = generate(dataclasses.replace(model, batches=dataclasses.replace(model.batches, session_gaps=None)),
                     days=120, seed=5)
    a = trace.jobs.filter(pl.col("vc") == "a").sort("submit_time")
    assert a.height == pytest.approx(apart.jobs.filter(pl.col("vc") == "a").height, rel=0.02)  # as many jobs
    pause = a["submit_time"].diff().drop_nulls().to_numpy()
    # five of a session's six jobs follow a pause of 5 to 15 minutes; without sessions fewer than one in ten do
    assert ((pause >= 300) & (pause <= 900)).mean() == pytest.approx(5 / 6, abs=0.05)
    alone = np.diff(np.sort(apart.jobs.filter(pl.col("vc") == "a")["submit_time"].to_numpy()))
    assert ((alone >= 300) & (alone <= 900)).mean() < 0.1
    # a session is one user's
    runs = a.with_columns((pl.col("submit_time").diff().fill_null(10**9) > 900).cum_sum().alias("run"))
    assert runs.group_by("run").agg(pl.col("user").n_unique())["user"].max() == 1
    refit = fit(trace, cluster=ClusterSpec(dict(model.vcs)))
    assert refit.batches is not None and refit.batches.session_gap == 3 * 3600
    probs, q = refit.batches.session_gaps.grid()  # type: ignore[union-attr]
    assert 300 <= np.expm1(np.interp(0.5, probs, q)) <= 900
    # (a session starts at every sixth of a's batch arrivals, about a day apart: none within 3 hours of the last)
    assert refit.vc_jobs["a"].session_sizes == {6: 1.0}
    assert refit.vc_jobs["b"].session_sizes == {}  # 1-GPU batches make no sessions
    # busy days count a session once: a's sessions arrive as a Poisson process, so a has none
    assert refit.vc_jobs["a"].rate_sd < 0.15


def test_a_vc_s_1_gpu_sessions_keep_their_own_pace_apart_from_its_multi_gpu_ones_and_are_fitted_back() -> None:
    # VC a: 1-GPU jobs in sessions of five, each ten minutes after the one before (its own pauses; the cluster's are
    # 50 to 70 minutes), and 4-GPU jobs in sessions of six (the cluster's pauses, 5 to 15 minutes)
    ten = Dist(quantiles=(math.log1p(600.0),) * 11)
    model = _sessions_of_a(one_gpu_session_gaps=Dist(quantiles=tuple(np.log1p(np.linspace(3000.0, 4200.0, 11)))))
    a = VcJobs({1: 0.5, 4: 0.5}, session_sizes={6: 1.0}, one_gpu_session_sizes={5: 1.0}, one_gpu_session_gaps=ten)
    model = dataclasses.replace(model, vc_jobs={**model.vc_jobs, "a": a})
    assert Model.from_json(model.to_json()) == model
    trace = generate(model, days=120, seed=5)
    jobs = trace.jobs.filter(pl.col("vc") == "a")
    # (the same seed without 1-GPU sessions: as many jobs of each size, the 1-GPU ones apart)
    apart = generate(dataclasses.replace(model, vc_jobs={**model.vc_jobs, "a": dataclasses.replace(
        a, one_gpu_session_sizes={})}), days=120, seed=5).jobs.filter(pl.col("vc") == "a")
    assert dict(jobs.group_by("gpu_num").len().iter_rows()) == \
        pytest.approx(dict(apart.group_by("gpu_num").len().iter_rows()), rel=0.02)

    def pauses(part: pl.DataFrame, gpus: int) -> np.ndarray:
        return part.filter(pl.col("gpu_num") == gpus).sort("submit_time")["submit_time"].diff().drop_nulls().to_numpy()
    # four of a session's five 1-GPU jobs follow a pause of exactly ten minutes; five of six 4-GPU jobs one of 5 to 15
    assert (pauses(jobs, 1) == 600).mean() == pytest.approx(4 / 5, abs=0.05)
    assert (pauses(apart, 1) == 600).mean() < 0.01
    four = pauses(jobs, 4)
    assert ((four >= 300) & (four <= 900)).mean() == pytest.approx(5 / 6, abs=0.05)
    refit = fit(trace, cluster=ClusterSpec(dict(model.vcs)))
    own = refit.vc_jobs["a"]
    # (the busiest user submits to b too: the fit's batch rule joins a few of its jobs in a to one in b a minute
    # apart, and a's session then counts four)
    assert own.session_sizes == {6: 1.0} and own.one_gpu_session_sizes[5] > 0.8
    # (measured on the clock of the refitted hourly profile, which has some noise: within 3%)
    assert own.one_gpu_session_gaps is not None and own.one_gpu_session_gaps.quantiles[50] == pytest.approx(
        math.log1p(600.0), abs=0.03)


def test_the_arrival_clock_keeps_a_window_s_seconds_and_runs_slow_in_quiet_hours() -> None:
    from dlcluster.synth.calendar import arrival_clock

    starts = 10_000 + 3600 * np.arange(4)
    wall, clock = arrival_clock(starts, np.array([1.0, 1.0, 1.0, 0.5]), np.array([1.0, 3.0, 0.0, 1.0]))
    # the mean is 5 arrivals in 3.5 hours: the hours run at 0.7, 2.1, 0.001 (a floor: nothing expected) and 1.4
    assert np.diff(clock)[:4] == pytest.approx(3600 * np.array([0.7, 2.1, 0.001, 0.7]))
    assert clock[4] - clock[0] == pytest.approx(wall[4] - wall[0], abs=4.0)
    t = np.array([10_000.0, 12_345.0, 19_000.0, 22_000.0, 30_000.0])
    assert np.interp(np.interp(t, wall, clock), clock, wall) == pytest.approx(t)
    assert np.interp(10**9, wall, clock) - np.interp(10**9 - 100, wall, clock) == pytest.approx(100)  # (past it)


def test_a_session_s_batches_start_after_the_one_before_ends() -> None:
    from dlcluster.synth.batched import after_overlaps

    # session 0: the second batch starts 30 s into the first one's 50 s, the third well after; session 3: the second
    # starts 10 s after the first, which runs 100 s; a batch of its own never moves
    session = np.array([0, 0, 0, 3, 3, 5])
    first = np.array([100, 130, 1000, 50, 60, 7])
    span = np.array([50, 10, 0, 100, 0, 0])
    assert after_overlaps(session, first, span, 61).tolist() == [0, 81, 0, 0, 151, 0]
    # a moved batch pushes the next one only as far as it needs
    assert after_overlaps(np.zeros(3, dtype=np.int64), np.array([0, 10, 200]), np.array([100, 100, 0]), 61).tolist() \
        == [0, 151, 122]


def test_sessions_round_trip_and_a_model_without_them_generates_as_before() -> None:
    model = _sessions_of_a()
    assert Model.from_json(model.to_json()) == model
    old = dataclasses.replace(model, batches=dataclasses.replace(model.batches, session_gap=0, session_gaps=None),
                              vc_jobs={vc: dataclasses.replace(v, session_sizes={}) for vc, v in model.vc_jobs.items()})
    assert "session" not in old.to_json()
    # the session fields alone, without a VC's sizes, change nothing
    assert generate(old, days=10, seed=1).jobs.equals(generate(dataclasses.replace(
        model, vc_jobs=old.vc_jobs), days=10, seed=1).jobs)


def _session_pairs(jobs: pl.DataFrame) -> tuple[float, dict[int, int]]:
    """VC a's share of consecutive jobs of one session (pause ≤ 900 s) with the same GPU count; its jobs per count."""
    a = jobs.filter(pl.col("vc") == "a").sort("submit_time")
    pairs = a.with_columns(pl.col("submit_time").diff().alias("pause"), pl.col("gpu_num").shift().alias("before")) \
        .filter(pl.col("pause") <= 900)
    return float((pairs["gpu_num"] == pairs["before"]).mean()), dict(a.group_by("gpu_num").len().iter_rows())


def test_a_session_s_batches_keep_their_gpu_count_as_often_as_fitted_and_the_vc_keeps_its_mix() -> None:
    # VC a: single jobs of 2 or 4 GPUs, half each, in sessions of six; with session_same 0.6 a session's job has the
    # previous one's count 0.6 + 0.4 × 0.5 = 80% of the time (50% by chance), and a keeps its jobs of each count
    # (the same seed deals the same counts: only who gets which moves)
    model = dataclasses.replace(_sessions_of_a(session_same=0.6), gpu_mix={1: 0.5, 2: 0.25, 4: 0.25})
    model = dataclasses.replace(model, vc_jobs={**model.vc_jobs, "a": dataclasses.replace(
        model.vc_jobs["a"], gpu_mix={2: 0.5, 4: 0.5})})
    chance = dataclasses.replace(model, batches=dataclasses.replace(model.batches, session_same=0.0))
    trace = generate(model, days=240, seed=2)
    same, counts = _session_pairs(trace.jobs)
    same_by_chance, counts_by_chance = _session_pairs(generate(chance, days=240, seed=2).jobs)
    assert same == pytest.approx(0.8, abs=0.03) and same_by_chance == pytest.approx(0.5, abs=0.03)
    assert counts == counts_by_chance and min(counts.values()) > 500
    assert Model.from_json(model.to_json()) == model and "session_same" not in chance.to_json()
    refit = fit(trace, cluster=ClusterSpec(dict(model.vcs)))
    assert refit.batches is not None and refit.batches.session_same == pytest.approx(0.6, abs=0.05)


@pytest.mark.parametrize(("days", "seed"), [(2, 16), (3, 3), (3, 4)])
def test_a_session_running_past_a_short_window_s_end_is_cut_there(days: int, seed: int) -> None:
    # these windows of the philly preset end inside a session: its later batches fall after the end (their day once
    # overran the VC rate scores' days, and generation stopped with a NumPy error)
    from dlcluster.synth import load_preset

    model = load_preset("philly")
    trace = generate(model, days=days, seed=seed)
    submit = trace.jobs["submit_time"]
    assert trace.jobs.height > 0 and submit.min() >= model.start and submit.max() < model.start + days * 86_400
    assert generate(model, days=days, seed=seed).jobs.equals(trace.jobs)


@pytest.mark.parametrize(("days", "load", "seed"), [(0.01, 1.0, 2), (0.01, 1.0, 3), (1.0, 0.0001, 0)])
def test_a_window_without_a_batch_gives_an_empty_trace(days: float, load: float, seed: int) -> None:
    # (these drew no batch, and generation stopped with an IndexError)
    from dlcluster.synth import load_preset

    trace = generate(load_preset("philly"), days=days, load=load, seed=seed)
    assert trace.jobs.height == 0 and "submit_time" in trace.jobs.columns


def test_the_source_calendar_is_replayed_only_where_the_window_starts_with_the_source() -> None:
    calendar = tuple([0.0] * 5 + [4 / 3] * 15)  # five empty days, then busy ones (mean 1, as a fitted one)
    model = dataclasses.replace(_two_vcs(), batches=dataclasses.replace(
        _two_vcs().batches, day_rates=tuple(np.linspace(0.0, 1.5, 101)), day_sequence=calendar))
    def daily(**kwargs: object) -> np.ndarray:
        start = kwargs.get("start", model.start)
        jobs = generate(model, seed=8, **kwargs).jobs  # type: ignore[arg-type]
        return np.bincount((jobs["submit_time"].to_numpy() - start) // 86400, minlength=20)
    replayed = daily()
    assert replayed[:5].sum() == 0 and (replayed[5:] > 0).all()
    assert replayed.sum() == pytest.approx(model.jobs_per_day * 20, rel=0.03)
    assert daily(calendar="drawn")[:5].sum() > 0  # the empty days fall anywhere
    assert daily(start=model.start + 86400)[:4].sum() > 0  # another window draws its days
    assert daily(days=10)[:5].sum() > 0  # and so does a shorter one
    with pytest.raises(ConfigError, match="calendar"):
        generate(model, calendar="weekly")


def test_a_vc_s_score_quantiles_keep_its_own_shape() -> None:
    # two VCs share one run-time distribution: a's scores all lie above b's, so a's jobs are its top tenth
    bucket = Bucket({"completed": 1.0}, {ANY: Dist(quantiles=tuple(np.log1p(np.linspace(10, 10_000, 101))))})
    model = dataclasses.replace(_two_vcs(a=VcJobs({1: 1.0}, score_quantiles={1: tuple(np.linspace(1.3, 3.0, 101))}),
                                         b=VcJobs({1: 1.0}, score_quantiles={1: tuple(np.linspace(-3.0, 1.2, 101))})),
                                buckets={"1": bucket}, vc_share={"a": 0.1, "b": 0.9})
    jobs = generate(model, days=10, seed=2).jobs
    top = jobs["duration"].quantile(0.9)
    assert (jobs.filter(pl.col("vc") == "a")["duration"] >= top).mean() > 0.95  # type: ignore[operator]
    assert (jobs.filter(pl.col("vc") == "b")["duration"] >= top).mean() < 0.01  # type: ignore[operator]


@pytest.mark.parametrize(("own", "message"), [
    (VcJobs({1: 1.0}, batch_sizes={"1": {1: 0.5}}), "vc_jobs a batch_sizes 1 sum to 0.5000, not 1"),
    (VcJobs({1: 1.0}, score_quantiles={1: (1.0, 0.5)}), "vc_jobs a score_quantiles 1 must be at least two"),
    (VcJobs({1: 1.0}, session_sizes={2: 0.5, 3: 0.4}), "vc_jobs a session_sizes sum to 0.9000, not 1"),
    (VcJobs({1: 1.0}, one_gpu_session_sizes={2: 0.5, 3: 0.6}), "vc_jobs a one_gpu_session_sizes sum to 1.1000, not 1"),
])
def test_a_vc_s_malformed_own_jobs_are_refused(own: VcJobs, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        _two_vcs(a=own)


def test_a_vc_s_own_day_shift_of_zero_is_written_and_read_as_zero() -> None:
    model = _two_vcs(a=VcJobs({1: 1.0}, day_shift_sd=0.0))
    again = Model.from_json(model.to_json())
    assert again.vc_jobs["a"].day_shift_sd == 0.0 and again.vc_jobs["b"].day_shift_sd is None


# --- against the Philly table ------------------------------------------------------------------


@pytest.fixture(scope="module")
def philly() -> tuple[object, Model, list[object]]:
    data = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "philly"
    if not data.is_dir():
        pytest.skip("shared sample philly not available")
    real = read_trace(data / "jobs_processed.csv")
    model = fit(real, cluster=read_cluster_spec(data / "vc_nodes.csv"))
    return real, model, [generate(model, seed=s) for s in SEEDS]


def test_fit_philly_bursts_and_batch_submissions(philly) -> None:
    real, model, synthetic = philly
    assert model.batches is not None
    real_cv, real_same = _arrival_stats(real.jobs)
    cvs = []
    for trace in synthetic:
        cv, same = _arrival_stats(trace.jobs)
        cvs.append(cv)
        assert same == pytest.approx(real_same, rel=0.25)
    # the CV of gaps is dominated by a window's few longest pauses: its median over seeds is the claim
    assert float(np.median(cvs)) == pytest.approx(real_cv, rel=0.20)


def test_docs_1_gpu_sessions_cost_the_inter_arrival_cv_some(philly) -> None:
    from dlcluster.synth.compare import interarrival_cv

    _, model, _ = philly
    assert model.batches is not None
    streamless = dataclasses.replace(model, batches=dataclasses.replace(model.batches, one_gpu_session_gaps=None))
    median = float(np.median([interarrival_cv(generate(streamless, seed=s)) for s in SEEDS]))
    doc = " ".join((Path(__file__).resolve().parents[1] / "docs" / "synth.md").read_text(encoding="utf-8").split())
    assert f"(`one_gpu_session_gaps` removed) give a median of {median:.2f}, because" in doc


def test_fit_philly_per_size_medians_and_marginals(philly) -> None:
    real, _, synthetic = philly
    sizes = real.jobs.group_by("gpu_num").agg(pl.len().alias("n"), pl.col("duration").median().alias("median"))
    big = sizes.filter(pl.col("n") >= 200)
    assert big.height >= 4
    for trace in synthetic:
        got = trace.jobs.group_by("gpu_num").agg(pl.col("duration").median().alias("got"))
        both = big.join(got, on="gpu_num", how="left")
        assert ((both["got"] - both["median"]).abs() <= 0.15 * both["median"]).all(), both
        near = closeness(real, trace)
        # (README quotes the fit of `synth --fit`, without the cluster spec: see the test below)
        assert 0.004 <= round(near["ks_duration"], 3) <= 0.005 and near["ks_duration_1"] < 0.02
        # (a VC's streams of 1-GPU jobs move the mix by what is left of them when the window ends: seeds 1-5 0.0002 to
        # 0.0012; 0.0006 to 0.0010 before the model had 1-GPU sessions)
        assert near["tv_gpu_mix"] <= 0.0013
        # the same span, so the same number of jobs (jobs per day over the submissions' own window would also count
        # when the first of the few jobs of the source's near-empty first days happens to fall)
        assert abs(trace.jobs.height / real.jobs.height - 1.0) < 0.02
        # bursts cost the hour-of-day profile some of its fidelity (plain model: r >= 0.998)
        assert near["daily_profile_corr"] > 0.6


def test_docs_closeness_rows_of_the_batched_fit_and_the_preset(philly) -> None:
    # docs/synth.md's "How close are they" rows for the batched fit (seeds 1-5) and the philly preset (seed 1)
    from dlcluster.synth import load_preset

    real, _, synthetic = philly
    doc = (Path(__file__).resolve().parents[1] / "docs" / "synth.md").read_text(encoding="utf-8")
    keys = ("ks_duration", "ks_duration_1", "ks_duration_2-4", "ks_duration_5-8", "ks_duration_>8")

    def span(values: list[float], fmt: str) -> str:
        low, high = fmt.format(min(values)), fmt.format(max(values))
        return low if low == high else f"{low}–{high}"
    near = [closeness(real, t) for t in synthetic]
    cells = [span([n[k] for n in near], "{:.3f}") for k in keys]
    row = (f"| `fit` (batched, with the VC sizes) → `generate`, seeds 1–5 | {' | '.join(cells)} | "
           f"≤ {max(n['tv_gpu_mix'] for n in near):.4f} | ≤ {max(abs(n['job_rate_rel_error']) for n in near):.1%} | "
           f"{span([n['daily_profile_corr'] for n in near], '{:.2f}')} |")
    assert row in doc, row
    one = closeness(real, generate(load_preset("philly"), seed=1))
    row = (f"| `philly` preset (batched), seed 1 | {' | '.join(f'{one[k]:.3f}' for k in keys)} | "
           f"{one['tv_gpu_mix']:.4f} | {one['job_rate_rel_error']:+.1%} | {one['daily_profile_corr']:.2f} |")
    assert row in doc, row


def test_readme_synth_fit_of_the_philly_table_keeps_its_marginals() -> None:
    # README: "Fitting the Philly table and generating its span again (`synth --fit`) gives a duration KS distance of
    # 0.005 and a GPU-mix total-variation distance of 0.0005 to 0.0013 (seeds 1 to 5)": no cluster spec
    data = Path(__file__).resolve().parents[2] / "shared/data/philly"
    if not data.is_dir():
        pytest.skip("shared sample philly not available")
    real = read_trace(data / "jobs_processed.csv")
    model = fit(real)
    near = [closeness(real, generate(model, seed=s)) for s in SEEDS]
    ks, tv = [n["ks_duration"] for n in near], [n["tv_gpu_mix"] for n in near]
    assert (round(min(ks), 3), round(max(ks), 3)) == (0.005, 0.005)
    assert (round(min(tv), 4), round(max(tv), 4)) == (0.0005, 0.0013)


def test_fit_philly_vcs_keep_their_own_sizes(philly) -> None:
    real, model, synthetic = philly
    # a VC's GPU-count mix is its own: the 2869ce team submits mostly 8-GPU jobs, 6214e9 almost only 1-GPU
    def share8(jobs: pl.DataFrame, vc: str) -> float:
        own = jobs.filter(pl.col("vc") == vc)
        return float((own["gpu_num"] == 8).mean())
    for vc in ("2869ce", "6214e9"):
        assert share8(synthetic[0].jobs, vc) == pytest.approx(share8(real.jobs, vc), abs=0.1)


def _fidelity_rows(real, synthetic) -> list[str]:
    """The rows of docs/synth.md's Philly fidelity table, from the real table and the generated seeds."""
    from dlcluster.synth.compare import (daily_counts, interarrival_cv, same_second_share, session_sizes_kept,
                                         size_medians, size_seasons, sweep_gpu_time)

    def span(values: list[float], fmt: str) -> str:
        return f"{fmt.format(min(values))}–{fmt.format(max(values))}"

    def dispersion(trace) -> float:
        days = daily_counts(trace)
        return float(days.std() / days.mean())

    cvs = [interarrival_cv(t) for t in synthetic]
    rows = [f"| inter-arrival CV | {interarrival_cv(real):.2f} | {span(cvs, '{:.2f}')} "
            f"(median {float(np.median(cvs)):.2f}) |",
            f"| same-second share | {same_second_share(real):.2%} | "
            f"{span([same_second_share(t) for t in synthetic], '{:.2%}')} |",
            f"| daily count CV | {dispersion(real):.2f} | {span([dispersion(t) for t in synthetic], '{:.2f}')} |",
            f"| size seasons (weekly dispersion) | {size_seasons(real):.2f} | "
            f"{span([size_seasons(t) for t in synthetic], '{:.2f}')} |",
            f"| sessions keeping GPU count | {session_sizes_kept(real):.1%} | "
            f"{span([session_sizes_kept(t) for t in synthetic], '{:.1%}')} |",
            f"| GPU time in batches of 20+ jobs | {sweep_gpu_time(real):.1%} | "
            f"{span([sweep_gpu_time(t) for t in synthetic], '{:.1%}')} |"]
    counts = real.jobs["gpu_num"].value_counts().filter(pl.col("count") >= 200)
    for g in sorted(counts["gpu_num"].to_list()):
        got = [size_medians(t)[g] for t in synthetic]
        rows.append(f"| median run time, {g} GPU | {size_medians(real)[g]:,.0f} s | {span(got, '{:,.0f}')} s |")
    return rows


def test_docs_size_seasons_and_sessions_without_session_same(philly) -> None:
    from dlcluster.synth.compare import session_sizes_kept, size_seasons
    from dlcluster.synth.fit_batches import batch_column, batch_rows, session_kinds, sessions

    real, model, _ = philly
    assert model.batches is not None and model.batches.session_same == 0.4212  # (docs/synth.md's value)
    chance = dataclasses.replace(model, batches=dataclasses.replace(model.batches, session_same=0.0))
    generated = [generate(chance, seed=s) for s in SEEDS]
    seasons, kept = [size_seasons(t) for t in generated], [session_sizes_kept(t) for t in generated]
    doc = " ".join((Path(__file__).resolve().parents[1] / "docs" / "synth.md").read_text(encoding="utf-8").split())
    assert f"without `session_same`, the same seeds: {min(seasons):.2f}–{max(seasons):.2f})" in doc
    assert f"without `session_same`: {min(kept):.1%}–{max(kept):.1%})" in doc
    share, chance = session_kinds(sessions(batch_rows(batch_column(real.jobs))))
    assert f"On Philly {share:.1%} of them do against {chance:.1%} by chance" in doc


def test_docs_numbers_of_the_per_vc_fit(philly) -> None:
    from dlcluster.synth.compare import daily_counts
    from dlcluster.synth.fit_batches import batch_column

    real, model, synthetic = philly
    assert model.batches is not None
    calendar = model.batches.day_sequence
    assert max(calendar[:19]) < 0.04 < calendar[19]
    own = model.vc_jobs
    assert (round(mean_batch(own["0e4a51"].batch_sizes["1"]), 1), round(mean_batch(own["11cb48"].batch_sizes["1"]), 1)) \
        == (28.7, 1.2)
    assert (round(own["6214e9"].day_shift_corr, 2), round(own["103959"].day_shift_corr, 2)) == (0.99, 0.01)
    assert [round(own[vc].rate_score_corr, 2) for vc in ("6214e9", "11cb48", "6c71a0")] == [-0.68, -0.73, -0.71]
    # 101 score quantiles for exactly the VC cells of at least 30 timed jobs, own batch sizes for exactly the VC
    # buckets of at least 30 batches
    timed = real.jobs.filter(pl.col("duration").is_not_null() & pl.col("vc").is_in(list(own)))
    cells = {(vc, g) for vc, g, n in timed.group_by("vc", "gpu_num").len().iter_rows() if n >= 30}
    assert {(vc, g) for vc, v in own.items() for g in v.score_quantiles} == \
        {(vc, g) for vc, g in cells if g in own[vc].gpu_mix}
    assert {len(q) for v in own.values() for q in v.score_quantiles.values()} == {101}
    firsts = batch_column(real.jobs).filter(pl.col("gap").is_null() & pl.col("vc").is_in(list(own)))
    per_size = firsts.group_by("vc", "gpu_num").len()
    batches_of: dict[tuple[str, str], int] = {}
    for vc, g, n in per_size.iter_rows():
        batches_of[(vc, bucket_of(g))] = batches_of.get((vc, bucket_of(g)), 0) + n
    assert {(vc, b) for vc, v in own.items() for b in v.batch_sizes} == {k for k, n in batches_of.items() if n >= 30}

    # sessions of each kind: own sizes for exactly the VCs with at least 30 batches in them, own pauses for those
    # with at least 30 pauses; busy days counted in independent arrivals
    from dlcluster.synth.fit_batches import batch_rows, sessions, vc_rates

    def median(dist: Dist | None) -> int:
        assert dist is not None
        probs, q = dist.grid()
        return round(float(np.expm1(np.interp(0.5, probs, q))))

    per_batch = batch_rows(batch_column(real.jobs))
    for sizes, gaps, one_gpu in (("session_sizes", "session_gaps", False),
                                 ("one_gpu_session_sizes", "one_gpu_session_gaps", True)):
        found = sessions(per_batch, one_gpu=one_gpu).filter(pl.col("vc").is_in(list(own)))
        counted = found.group_by("vc").agg(pl.len().alias("n"), pl.col("pause").count().alias("pauses"))
        assert {vc for vc, v in own.items() if getattr(v, sizes)} == {vc for vc, n, _ in counted.iter_rows() if n >= 30}
        assert {vc for vc, v in own.items() if getattr(v, gaps)} == {vc for vc, _, k in counted.iter_rows() if k >= 30}
    means = {vc: round(mean_batch(v.session_sizes), 1) for vc, v in own.items() if v.session_sizes}
    assert (means.pop("11cb48"), max(own["11cb48"].session_sizes), len(means)) == (18.9, 182, 9)
    assert (min(means.values()), max(means.values())) == (1.5, 4.5)
    # (pauses in seconds of the arrival clock)
    assert model.batches.session_gap == 10_800 and median(model.batches.session_gaps) == 3_050
    # 11cb48's 1-GPU jobs: a few streams of thousands of batches, one every ten minutes
    streams = own["11cb48"].one_gpu_session_sizes
    assert (round(mean_batch(streams)), max(streams), median(own["11cb48"].one_gpu_session_gaps)) == (2_484, 8_910, 601)
    assert median(model.batches.one_gpu_session_gaps) == 662
    others = [round(mean_batch(v.one_gpu_session_sizes), 1) for vc, v in own.items()
              if v.one_gpu_session_sizes and vc != "11cb48"]
    assert (min(others), max(others), len(others)) == (1.4, 20.8, 10)
    in_batches = vc_rates(firsts.select("vc", "submit_time"), model.start)
    assert (round(own["2869ce"].rate_sd, 2), round(in_batches["2869ce"][0], 2)) == (0.45, 0.77)

    def batch_days_cv(trace) -> float:
        firsts = batch_column(trace.jobs).filter(pl.col("gap").is_null())
        counts = daily_counts(dataclasses.replace(trace, jobs=firsts))
        return round(float(counts.std() / counts.mean()), 2)
    cvs = [batch_days_cv(t) for t in synthetic[:3]]
    assert (batch_days_cv(real), min(cvs), max(cvs)) == (0.61, 0.63, 0.64)


def test_docs_run_times_are_about_as_hard_to_predict_as_the_real_ones(philly) -> None:
    # the "history-based prediction on a generated trace is about as hard as on a real one": docs/synth.md's
    # predictability table, LightGBM retrained daily on the real table and on seeds 1-3 of its fit
    from dlcluster.synth.compare import PREDICTION_ROWS, predictability

    real, _, synthetic = philly
    doc = (Path(__file__).resolve().parents[1] / "docs" / "synth.md").read_text(encoding="utf-8")
    got = [predictability(t) for t in (real, *synthetic[:3])]
    for key, label in PREDICTION_ROWS:
        fmt = "{:.1%}" if key == "within_100" else "{:.2f}"
        values = [g[key] for g in got[1:]]
        row = f"| {label} | {fmt.format(got[0][key])} | {fmt.format(min(values))}–{fmt.format(max(values))} |"
        assert row in doc, row
    above = [g["mdape"] / got[0]["mdape"] - 1.0 for g in got[1:]]
    assert (round(min(above), 2), round(max(above), 2)) == (0.0, 0.12)


def test_docs_fidelity_table_is_regenerated_verbatim(philly) -> None:
    real, _, synthetic = philly
    doc = (Path(__file__).resolve().parents[1] / "docs" / "synth.md").read_text(encoding="utf-8")
    for row in _fidelity_rows(real, synthetic):
        assert row in doc, row


def test_docs_numbers_of_the_batched_fit(philly) -> None:
    from dlcluster.synth.compare import daily_counts
    from dlcluster.synth.fit_batches import batch_column

    real, model, synthetic = philly
    per_batch = batch_column(real.jobs).group_by("batch").len()["len"]
    assert (per_batch.len(), round(float(per_batch.mean()), 1), int(per_batch.max())) == (23_961, 3.4, 1_063)
    batches = model.batches
    assert batches is not None and batches.max_gap == 60
    assert f"{batches.gaps.zero_share:.1%}" == "10.7%" and round(batches.day_corr, 2) == 0.64
    assert (round(batches.batch_sd, 2), round(batches.job_sd, 2)) == (0.63, 0.45)
    assert (round(batches.vc_day_sd, 2), round(batches.vc_day_corr, 2)) == (0.36, 0.67)
    assert (round(batches.vc_hour_sd, 2), round(batches.vc_hour_corr, 2)) == (0.52, 0.59)
    gaps = np.sort(np.diff(np.sort(real.jobs["submit_time"].to_numpy())))[:-5]
    assert round(float(gaps.std() / gaps.mean()), 1) == 7.8  # without the 5 longest pauses
    assert daily_counts(real)[:20].max() < 20  # the nearly empty first 20 days
    vc = real.jobs.group_by("vc").agg((pl.col("gpu_num") == 8).mean().alias("g8"), (pl.col("gpu_num") == 1).mean()
                                      .alias("g1"))
    shares = {v: (g8, g1) for v, g8, g1 in vc.iter_rows()}
    assert shares["2869ce"][0] > 0.5 and shares["6214e9"][1] > 0.95


def test_the_plain_model_has_no_bursts_and_the_tail_matters(philly) -> None:
    real, model, _ = philly
    plain = generate(fit(real, batched=False), seed=1)
    cv, same = _arrival_stats(plain.jobs)
    assert (round(cv, 1), f"{same:.1%}") == (1.4, "0.6%")
    # without the finer top percentile the 1-GPU mean run time is far above the real one
    strip = {label: dataclasses.replace(b, durations={k: dataclasses.replace(d, tail=()) for k, d in
                                                      b.durations.items()}) for label, b in model.buckets.items()}
    no_tail = generate(dataclasses.replace(model, buckets=strip), seed=1).jobs.filter(pl.col("gpu_num") == 1)
    with_tail = generate(model, seed=1).jobs.filter(pl.col("gpu_num") == 1)
    real_mean = real.jobs.filter(pl.col("gpu_num") == 1)["duration"].mean()
    assert (round(no_tail["duration"].mean()), round(real_mean)) == (13_845, 8_301)
    assert with_tail["duration"].mean() == pytest.approx(real_mean, rel=0.02)


def test_helios_presets_are_unbatched_and_unchanged_files() -> None:
    from dlcluster.synth.model import PRESET_DIR, load_preset

    for name in ("helios-venus", "helios-earth", "helios-saturn", "helios-uranus"):
        model = load_preset(name)
        assert model.batches is None and not model.vc_jobs
        assert model.to_json() == (PRESET_DIR / f"{name}.json").read_text(encoding="utf-8")
