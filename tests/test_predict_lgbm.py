"""The ``lgbm`` duration estimator: better than ``history`` where durations are learnable, never sees the future."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest

from dlcluster.predict import make_estimator, prediction_metrics, replay
from dlcluster.predict.duration import History
from dlcluster.predict.lgbm import MIN_TRAIN, LgbmEstimator, normalise_name
from dlcluster.schema import conform

DAY = 86400
START = 1_600_000_000 // DAY * DAY  # a midnight UTC
TASKS = {"train": 1.0, "finetune": 0.4, "eval": 0.05}  # how long each kind of job runs, relative to training


def _trace(n: int = 3000, days: int = 20, seed: int = 3) -> pl.DataFrame:
    """Durations = user scale × GPU factor × task factor × noise; names unique per run, their kind in the words."""
    rng = np.random.default_rng(seed)
    users = rng.integers(0, 30, n)
    scale = np.exp(rng.uniform(5.0, 9.0, 30))  # per user: ~2.5 min .. ~2.25 h
    gpus = rng.choice([1, 2, 4, 8], n, p=[0.5, 0.25, 0.15, 0.1])
    tasks = rng.choice(list(TASKS), n)
    duration = np.maximum(1, np.round(scale[users] * gpus ** 0.5 * np.array([TASKS[t] for t in tasks])
                                      * rng.lognormal(0.0, 0.25, n))).astype(np.int64)
    submit = START + np.round(rng.uniform(0, days * DAY, n) / 600).astype(np.int64) * 600  # same-second ties
    names = [f"{t}_resnet{rng.integers(18, 152)}_lr0.{rng.integers(1, 9)}_run{i}" for i, t in enumerate(tasks)]
    status = rng.choice(["completed", "failed", "cancelled"], n, p=[0.8, 0.1, 0.1])
    return conform(pl.DataFrame({
        "job_id": [f"j{i:05d}" for i in range(n)], "cluster": "c", "vc": [f"vc{u % 3}" for u in users],
        "user": [f"u{u}" for u in users], "name": names, "gpu_num": gpus, "cpu_num": gpus * 4, "node_num": 1,
        "submit_time": submit, "start_time": submit, "end_time": submit + duration, "duration": duration,
        "status": status}))


TRACE = _trace()


def _lgbm(jobs: pl.DataFrame) -> np.ndarray:
    return replay(LgbmEstimator(), jobs)[0]


def _metrics(pred: np.ndarray, jobs: pl.DataFrame) -> dict:
    return prediction_metrics(pred, jobs["duration"].to_numpy().astype(float), jobs["gpu_num"].to_numpy())


@pytest.fixture(scope="module")
def predicted() -> np.ndarray:
    return _lgbm(TRACE)


def test_normalised_names_keep_the_words() -> None:
    assert normalise_name("train_resnet50_lr0.1_run3") == "train resnet lr run"
    assert normalise_name("Eval-BERT 9f1c2e3a-47b1-4c5e-9a0d-1f2e3d4c5b6a") == "eval bert"
    assert normalise_name("12345") == ""


def test_the_registry_builds_it() -> None:
    assert isinstance(make_estimator("lgbm"), LgbmEstimator)


def test_beats_history_where_durations_follow_user_gpus_and_name(predicted: np.ndarray) -> None:
    ours = _metrics(predicted, TRACE)
    theirs = _metrics(replay(History(), TRACE)[0], TRACE)
    assert ours["spearman"] > theirs["spearman"]
    assert ours["within_50"] > theirs["within_50"]
    assert ours["jobs"] == theirs["jobs"] == TRACE.height


def test_later_jobs_change_no_earlier_prediction(predicted: np.ndarray) -> None:
    cut = START + 12 * DAY + 3600  # mid-day: the day's model was trained on jobs ended by midnight
    before = (TRACE["submit_time"] < cut).to_numpy()
    later = pl.col("submit_time") >= cut
    rng = np.random.default_rng(1)
    new_duration = pl.Series(rng.integers(1, 10 * DAY, TRACE.height))
    altered = TRACE.with_columns(
        pl.when(later).then(new_duration).otherwise(pl.col("duration")).alias("duration"),
        pl.when(later).then(pl.lit("intruder")).otherwise(pl.col("user")).alias("user"),
        pl.when(later).then(pl.lit("zzz_other_job")).otherwise(pl.col("name")).alias("name"),
        pl.when(later).then(pl.lit(64, pl.Int32)).otherwise(pl.col("gpu_num")).alias("gpu_num"),
    ).with_columns((pl.col("submit_time") + pl.col("duration")).alias("end_time"))
    deleted = TRACE.filter(~later)
    assert 0 < before.sum() < TRACE.height
    assert _lgbm(deleted).tobytes() == predicted[before].tobytes()
    assert _lgbm(altered)[before].tobytes() == predicted[before].tobytes()
    # the future did change: the altered jobs themselves are predicted differently
    assert not np.array_equal(_lgbm(altered)[~before], predicted[~before])


def test_row_order_changes_nothing(predicted: np.ndarray) -> None:
    shuffled = TRACE.sample(fraction=1.0, shuffle=True, seed=11)
    got = dict(zip(shuffled["job_id"].to_list(), _lgbm(shuffled).tolist(), strict=True))
    again = np.array([got[j] for j in TRACE["job_id"].to_list()])
    assert again.tobytes() == predicted.tobytes()


def test_two_runs_are_identical(predicted: np.ndarray) -> None:
    assert _lgbm(TRACE).tobytes() == predicted.tobytes()


def test_history_answers_until_enough_jobs_have_ended(predicted: np.ndarray) -> None:
    submit, end = TRACE["submit_time"].to_numpy(), TRACE["end_time"].to_numpy()
    ends = np.sort(end)
    # a job's model was trained at the last midnight before its submission, on the jobs ended by then
    known = np.searchsorted(ends, submit // DAY * DAY, side="right")
    early = known < MIN_TRAIN
    history = replay(History(), TRACE)[0]
    assert early.sum() > 50 and (~early).sum() > 50
    assert predicted[early].tobytes() == history[early].tobytes()
    assert not np.array_equal(predicted[~early], history[~early])


def test_without_users_or_names_it_still_learns_from_gpus() -> None:
    anon = TRACE.with_columns(pl.lit(None, pl.String).alias("user"), pl.lit(None, pl.String).alias("name"))
    estimator = LgbmEstimator()
    pred, driver = replay(estimator, anon)
    assert np.isfinite(pred).all() and (pred >= 0).all()
    assert estimator.booster is not None and driver.retrains > 0
    # history is one global mean here; the model sees the GPU count (durations grow with its square root)
    late = (anon["submit_time"] >= START + 5 * DAY).to_numpy()
    gpus = anon["gpu_num"].to_numpy()
    assert np.median(pred[late & (gpus == 8)]) > np.median(pred[late & (gpus == 1)])


def test_the_public_prediction_path_gives_the_same_numbers(predicted: np.ndarray,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    import dlcluster.predict.single_row as single_row

    def unavailable(*args: object) -> None:
        raise AttributeError("no private LightGBM handle")

    monkeypatch.setattr(single_row, "FastPredictor", unavailable)
    assert _lgbm(TRACE).tobytes() == predicted.tobytes()


def test_the_docs_describe_the_model_the_code_trains() -> None:
    """docs/predict.md's lgbm row: its size, windows and limits, as lgbm.py sets them."""
    from dlcluster.predict import lgbm

    row = next(line for line in (Path(__file__).resolve().parents[1] / "docs/predict.md").read_text().splitlines()
               if line.startswith("| `lgbm`"))
    for phrase in (f"{lgbm.ROUNDS} trees of {lgbm.PARAMS['num_leaves']} leaves",
                   f"over their last {lgbm.RECENT} ended jobs", f"over its last {lgbm.CLUSTER_RECENT} ended jobs",
                   f"(at most {lgbm.MAX_TRAIN:,} most recent)", f"`history` answers until the first daily retrain after {lgbm.MIN_TRAIN} jobs"):
        assert phrase in row, phrase
    assert lgbm.PARAMS["num_threads"] == 1 and lgbm.PARAMS["deterministic"] and "one thread, deterministic" in row
