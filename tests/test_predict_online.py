"""Estimators inside the simulator: predictions at the simulated submission, from simulated ends only."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest

from dlcluster.cluster import ClusterSpec
from dlcluster.predict import Estimator, make_estimator
from dlcluster.predict.online import OnlineEstimates
from dlcluster.schema import conform
from dlcluster.sim import simulate

SPEC = ClusterSpec({"a": (8, 8), "b": (4,)})


def _trace(n: int = 400, seed: int = 3) -> pl.DataFrame:
    """Multi-GPU jobs of a few users on two small VCs, dense enough that jobs queue."""
    rng = np.random.default_rng(seed)
    users = rng.integers(0, 6, n)
    gpus = rng.choice([1, 2, 4, 8], n)
    vc = np.where(rng.random(n) < 0.7, "a", "b")
    gpus = np.where(vc == "b", np.minimum(gpus, 4), gpus)
    duration = (rng.lognormal(6, 1, n) * (1 + users)).astype(np.int64) + 1
    submit = np.sort(rng.integers(0, 40 * 3600, n)) + 1_600_000_000
    return conform(pl.DataFrame({
        "job_id": [f"j{i:04d}" for i in range(n)], "cluster": "c", "vc": vc, "user": [f"u{u}" for u in users],
        "gpu_num": gpus, "submit_time": submit, "end_time": submit + duration, "duration": duration,
        "status": "completed",
    }))


def _online(jobs: pl.DataFrame, estimator: Estimator, policy: str = "qssf", load: float = 1.0
            ) -> tuple[dict[str, float], OnlineEstimates, pl.DataFrame]:
    obs = OnlineEstimates(estimator, jobs)
    result = simulate(jobs, SPEC, policy, observers=[obs], load=load)
    ids = obs.control.jobs.job_id
    return dict(zip(ids, obs.predicted, strict=True)), obs, result.jobs


class Recording(Estimator):
    """Remembers what it was told, and when."""

    name = "recording"

    def __init__(self) -> None:
        self.seen: list[tuple[str, int, int]] = []  # (event, job, time)

    def observe(self, job: int, end: int, duration: float, status: str | None) -> None:
        self.seen.append(("end", job, end))

    def predict(self, job: int, now: int) -> float:
        self.seen.append(("submit", job, now))
        return 100.0


def test_the_estimator_learns_exactly_the_simulated_ends_before_each_prediction() -> None:
    jobs = _trace()
    rec = Recording()
    _, obs, result = _online(jobs, rec, load=3.0)  # dense arrivals: simulated ends are far from the recorded ones
    ids = obs.control.jobs.job_id
    sim_end = dict(zip(result["job_id"], result["end"], strict=True))
    sim_submit = dict(zip(result["job_id"], result["submit"], strict=True))
    known: set[str] = set()
    for event, job, t in rec.seen:
        if event == "end":
            assert sim_end[ids[job]] == t  # told at the simulated end, with that end
            known.add(ids[job])
        else:
            assert sim_submit[ids[job]] == t
            assert known == {j for j, e in sim_end.items() if e <= t}  # everything ended by now, nothing later
    assert sum(e == "submit" for e, _, _ in rec.seen) == result.height


@pytest.mark.parametrize("name", ["history", "lgbm"])
def test_jobs_submitted_later_change_no_earlier_prediction(name: str) -> None:
    jobs = _trace(600)
    t = int(jobs["submit_time"].quantile(0.6))
    before, _, _ = _online(jobs, make_estimator(name), load=2.0)
    later = pl.col("submit_time") > t
    altered = jobs.with_columns(pl.when(later).then(pl.col("duration") * 7 + 5).otherwise("duration").alias("duration"),
                                pl.when(later).then(pl.lit("intruder")).otherwise("user").alias("user"))
    altered = altered.with_columns((pl.col("submit_time") + pl.col("duration")).alias("end_time"))
    for changed in (jobs.filter(~later), altered):
        after, _, _ = _online(changed, make_estimator(name), load=2.0)
        early = jobs.filter(~later)["job_id"]
        assert all(after[j] == before[j] for j in early)
    assert any(after[j] != before[j] for j in jobs.filter(later)["job_id"])  # the alteration did reach later jobs


def test_history_online_differs_from_the_recorded_timeline_under_load() -> None:
    # on the recorded timeline jobs end as they did; under --load 3 they end later in simulated time
    jobs = _trace()
    online, _, _ = _online(jobs, make_estimator("history"), load=3.0)
    from dlcluster.predict import history_estimates

    recorded = dict(history_estimates(jobs).iter_rows())
    assert any(online[j] != recorded[j] for j in online)


def test_qssf_with_online_estimates_matches_qssf_with_the_same_estimates_as_a_file() -> None:
    jobs = _trace()
    online, obs, result = _online(jobs, make_estimator("history"))
    fixed = pl.DataFrame({"job_id": list(online), "estimate": list(online.values())})
    again = simulate(jobs, SPEC, "qssf", estimates=fixed)
    assert again.jobs.equals(result)
    summary = obs.summary()
    assert summary["estimator"] == "history" and summary["jobs"] == result.height
    assert not any(math.isnan(v) for v in online.values())


def test_a_job_still_running_in_the_trace_is_neither_learnt_nor_scored() -> None:
    # (its time so far, 10 s, was learnt as a run time: the next job of its user was predicted at 10 s, not at the
    # 3,600 s of no history that predict run gives, and it was scored as if it had run 10 s)
    jobs = conform(pl.DataFrame({
        "job_id": ["r", "x"], "cluster": "c", "vc": "a", "user": "u1", "gpu_num": 1,
        "submit_time": [1_600_000_000, 1_600_000_100], "start_time": [1_600_000_000, 1_600_000_100],
        "end_time": [None, 1_600_000_600], "duration": [10, 500], "status": ["running", "completed"]}))
    from dlcluster.predict import history_estimates

    for name in ("history", "lgbm"):
        online, obs, _ = _online(jobs, make_estimator(name))
        assert online == dict(history_estimates(jobs).iter_rows()) == {"r": 3600.0, "x": 3600.0}
        summary = obs.summary()
        assert (summary["jobs"], summary["mae"]) == (1, 3100.0)
    from dlcluster.predict.estimates import estimates_quality

    fixed = pl.DataFrame({"job_id": ["r", "x"], "estimate": [3600.0, 3600.0]})
    result = simulate(jobs, SPEC, "qssf", estimates=fixed)
    assert {k: estimates_quality(fixed, result.jobs, jobs)[k] for k in ("jobs", "mae")} == {"jobs": 1, "mae": 3100.0}


def test_lgbm_under_the_artifact_clock_takes_the_hour_of_the_trace_wall_clock() -> None:
    # (its clock counts from the first job: the hour and weekday features were hours since that job, the retrains
    # a grid from it)
    from dlcluster.predict.lgbm import FEATURES, LgbmEstimator
    from dlcluster.sim.compat import wall_seconds

    jobs = _trace(300)
    hours = {}
    for compat in (None, "helios-artifact"):
        est = LgbmEstimator()
        obs = OnlineEstimates(est, jobs)
        simulate(jobs, SPEC, "qssf", observers=[obs], compat=compat, timezone="Asia/Shanghai")
        hours[compat] = dict(zip(obs.control.jobs.job_id, est.features[:, FEATURES.index("hour")], strict=True))
    utc = dict(zip(jobs["job_id"], jobs["submit_time"] % 86400 // 3600, strict=True))
    wall = dict(zip(jobs["job_id"], jobs.select(wall_seconds(pl.col("submit_time"), "Asia/Shanghai") % 86400 // 3600)
                    .to_series(), strict=True))
    assert hours[None] == {j: utc[j] for j in hours[None]}
    assert hours["helios-artifact"] == {j: wall[j] for j in hours["helios-artifact"]}
    assert any(utc[j] != wall[j] for j in hours["helios-artifact"])


def test_the_docs_estimator_example_runs_on_both_timelines() -> None:
    from pathlib import Path

    from dlcluster.predict import replay

    doc = (Path(__file__).parent.parent / "docs/predict.md").read_text()
    code = doc.split("## Writing an estimator", 1)[1].split("```python\n", 1)[1].split("```", 1)[0]
    namespace: dict[str, object] = {}
    exec(code, namespace)  # noqa: S102 - the documented example, run as written
    make = namespace["RecentMedian"]
    jobs = _trace()
    values, driver = replay(make(), jobs)  # type: ignore[operator]
    assert driver.predictions == jobs.height and not np.isnan(values).any()
    # the first job of each user knows nothing yet; a later one gets the median of that user's ended jobs
    by_user = jobs.with_columns(pl.Series("estimate", values)).sort("submit_time")
    firsts = by_user.group_by("user", maintain_order=True).first()
    assert set(firsts["estimate"].to_list()) == {3600.0}
    online, _, result = _online(jobs, make())  # type: ignore[operator]
    assert len(online) == result.height


def test_replay_reports_progress_every_percent_and_at_the_end() -> None:
    from dlcluster.predict import replay

    jobs = _trace(450)
    calls: list[tuple[int, int]] = []
    replay(make_estimator("history"), jobs, progress=lambda done, total: calls.append((done, total)))
    assert calls[-1] == (450, 450) and all(t == 450 for _, t in calls)
    assert [d for d, _ in calls] == sorted({d for d, _ in calls})  # increasing, no repeats
    assert len(calls) == 450 // 4 + (450 % 4 != 0)  # every 4 jobs (1% of 450, at least one), then the last
