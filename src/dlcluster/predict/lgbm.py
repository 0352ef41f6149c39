"""``lgbm``: a LightGBM duration model on what is known at submission, retrained on the driver's grid.

Features of a job are computed once, when it is submitted (:meth:`LgbmEstimator.predict`),
from its own row of the table and from state built by earlier ``observe``/``predict`` calls,
and stored; a retrain fits on the stored features of the jobs that had ended (the same
numbers the model saw, or will see, at serving time). Nothing is derived from the whole
table up front: category codes of users, VCs and names are handed out in order of first
appearance, so deleting or altering later jobs changes no earlier prediction, and the row
order of the table does not matter.
"""

from __future__ import annotations

import math
import re
from bisect import bisect_left, insort
from collections import deque
from typing import Any, ClassVar

import numpy as np
import polars as pl

from dlcluster.predict.duration import History
from dlcluster.predict.estimator import Estimator
from dlcluster.predict.lightgbm_import import lightgbm as lgb
from dlcluster.predict.single_row import SingleRowPredictor, single_row_predictor

RECENT = 10  # the user's (and group's) last RECENT ended jobs make the "recent" features
CLUSTER_RECENT = 100  # the cluster's recent median is over its last CLUSTER_RECENT ended jobs
MIN_TRAIN = 100  # no model before this many jobs have ended: History answers until then
MAX_TRAIN = 100_000  # train on the most recent MAX_TRAIN ended jobs (see LgbmEstimator)

# column of each feature in the stored matrix; the first three are categorical codes
FEATURES = ("user", "vc", "name", "gpu_num", "cpu_num", "node_num", "hour", "weekday", "history",
            "user_last", "user_mean", "user_median", "user_failed", "user_ended", "user_in_flight",
            "user_gpu_last", "user_gpu_mean", "since_user_submit", "cluster_median",
            "name_last", "name_mean", "user_name_last", "user_name_mean")
CATEGORICAL = (0, 1, 2)
NAN = math.nan

PARAMS: dict[str, Any] = {
    # a modest model: on the 183-day Saturn look-alike 31 leaves and 63 bins rank better than 63 leaves and
    # 255 bins (Spearman 0.268 vs 0.263) at 3/4 of the training CPU
    "objective": "regression", "learning_rate": 0.1, "num_leaves": 31, "min_data_in_leaf": 30,
    "max_bin": 63, "verbose": -1,
    # byte-identical models for identical input: fixed threads, seed, row-wise histograms, no bagging.
    # One thread: on a shared 2-core machine OpenMP's second thread spin-waits, and CPU time counts it
    # (measured on 100k rows: 0.4 s of CPU with one thread, 0.6 to 5.9 s with two)
    "num_threads": 1, "deterministic": True, "force_row_wise": True, "seed": 7,
}
ROUNDS = 100

_SPLIT = re.compile(r"[^a-z0-9]+")
_HEX = re.compile(r"[0-9a-f]{4,}")  # hashes, uuid parts, hex ids (with a digit in them)
_DIGITS = re.compile(r"[0-9]+")


def normalise_name(name: str) -> str:
    """Lower-case words of a job name without numbers, hex ids or punctuation ("train_resnet50_lr0.1" -> "train resnet lr")."""
    words = []
    for token in _SPLIT.split(name.lower()):
        if not token or (_HEX.fullmatch(token) and not token.isalpha()):
            continue  # an id with digits in it: it names one run, not a kind of job
        words.extend(_DIGITS.sub(" ", token).split())
    return " ".join(words)


def _median(values: list[float]) -> float:
    s = sorted(values)
    m = len(s)
    return s[m // 2] if m % 2 else 0.5 * (s[m // 2 - 1] + s[m // 2])


class LgbmEstimator(Estimator):
    """LightGBM on submission-time fields and online history features; ``History`` before the first model.

    Target: ``log1p(duration)`` with a squared loss (durations span six orders of magnitude;
    the accuracy bands are relative errors), prediction ``expm1`` of the output, at least 0.
    Each retrain fits ``ROUNDS`` trees on the stored features of the most recent
    :data:`MAX_TRAIN` ended jobs only: older jobs still shape the history features, and the cap
    keeps daily retraining over months of trace cheap. Measured on the 183-day Saturn look-alike
    (700k GPU jobs, 183 retrains, 63 leaves / 255 bins): capped at 50k jobs, 65 s of training
    CPU and Spearman 0.254; at 100k, 98 s and 0.263 (with the 31 leaves / 63 bins of
    :data:`PARAMS`: 76 s and 0.268).
    """

    name: ClassVar[str] = "lgbm"

    def __init__(self, retrain_every: int = 86400, max_train: int = MAX_TRAIN, rounds: int = ROUNDS,
                 params: dict[str, Any] | None = None) -> None:
        self.retrain_every = retrain_every
        self.max_train = max_train
        self.rounds = rounds
        self.params = {**PARAMS, **(params or {})}
        self.booster: lgb.Booster | None = None
        self._fast: SingleRowPredictor | None = None

    def attach(self, jobs: pl.DataFrame) -> None:
        """Keep the submission-time columns as lists (read one row at a time), start with no history or model."""
        self.jobs = jobs
        n = jobs.height
        self.history = History()
        self.history.attach(jobs)
        self.user, self.job_name, self.gpu = self.history.user, self.history.job_name, self.history.gpu
        self.vc, self.cpu, self.node, self.submit = (jobs[c].to_list() for c in ("vc", "cpu_num", "node_num",
                                                                                  "submit"))
        self.features = np.full((n, len(FEATURES)), NAN, dtype=np.float32)  # row j: job j's features at submission
        self.target = np.zeros(n, dtype=np.float32)  # log1p(duration), set when the job ends
        self.predicted = bytearray(n)  # 1 once the job's features are stored
        # category codes in order of first appearance (never from the whole table: that would leak the future)
        self.codes: tuple[dict[str, int], dict[str, int], dict[str, int]] = ({}, {}, {})
        self.normalised: dict[str, str] = {}  # raw name -> normalised name (a cache: the mapping is fixed)
        self.job_key: list[str | None] = [None] * n  # normalised name of each submitted job
        # per user: recent durations, recent failure flags, summary (last, mean, median, failed share, ended)
        self.user_recent: dict[str, deque[float]] = {}
        self.user_failed: dict[str, deque[int]] = {}
        self.user_stats: dict[str, tuple[float, float, float, float, float]] = {}
        self.user_submit: dict[str, int] = {}  # the user's last submission
        self.user_flight: dict[str, int] = {}  # submitted, not yet ended
        # per (user, GPUs), normalised name, (user, name): (last, mean of recent)
        self.group_recent: dict[tuple[Any, ...], deque[float]] = {}
        self.group_stats: dict[tuple[Any, ...], tuple[float, float]] = {}
        self.cluster_recent: deque[float] = deque()
        self.cluster_sorted: list[float] = []
        if self._fast is not None:
            self._fast.close()
        self.booster, self._fast = None, None

    def _code(self, kind: int, value: str | None) -> float:
        if value is None:
            return NAN
        codes = self.codes[kind]
        code = codes.get(value)
        if code is None:
            code = codes[value] = len(codes)
        return float(code)

    def _group(self, key: tuple[Any, ...], duration: float) -> None:
        recent = self.group_recent.get(key)
        if recent is None:
            recent = self.group_recent[key] = deque(maxlen=RECENT)
        recent.append(duration)
        self.group_stats[key] = (duration, sum(recent) / len(recent))

    def observe(self, job: int, end: int, duration: float, status: str | None) -> None:
        """Fold the ended job into the user's, its groups' and the cluster's recent durations."""
        self.history.observe(job, end, duration, status)
        self.target[job] = math.log1p(max(duration, 0.0))
        user = self.user[job]
        if user is not None:
            recent = self.user_recent.get(user)
            if recent is None:
                recent = self.user_recent[user] = deque(maxlen=RECENT)
                self.user_failed[user] = deque(maxlen=RECENT)
            recent.append(duration)
            failed = self.user_failed[user]
            if status is not None:  # unknown status: no evidence either way
                failed.append(status != "completed")
            ended = self.user_stats[user][4] + 1 if user in self.user_stats else 1.0
            self.user_stats[user] = (duration, sum(recent) / len(recent), _median(list(recent)),
                                     sum(failed) / len(failed) if failed else NAN, ended)
            if self.predicted[job]:
                self.user_flight[user] -= 1
            self._group((0, user, self.gpu[job]), duration)
        key = self.job_key[job] if self.predicted[job] else self._name_key(job)
        if key is not None:
            self._group((1, key), duration)
            if user is not None:
                self._group((2, user, key), duration)
        # the cluster's last CLUSTER_RECENT durations, also kept sorted for an O(1) median
        self.cluster_recent.append(duration)
        insort(self.cluster_sorted, duration)
        if len(self.cluster_recent) > CLUSTER_RECENT:
            old = self.cluster_recent.popleft()
            del self.cluster_sorted[bisect_left(self.cluster_sorted, old)]

    def _name_key(self, job: int) -> str | None:
        name = self.job_name[job]
        if name is None:
            return None
        key = self.normalised.get(name)
        if key is None:
            key = self.normalised[name] = normalise_name(name)
        return key

    def predict(self, job: int, now: int) -> float:
        """Compute and store the job's features, then the model's estimate (``History``'s before the first model)."""
        history = self.history.predict(job, now)
        user, gpu = self.user[job], self.gpu[job]
        key = self._name_key(job)
        self.job_key[job] = key
        submit = self.submit[job]
        if submit is None:
            submit = now
        stats = self.group_stats
        if user is not None:
            u = self.user_stats.get(user, (NAN, NAN, NAN, NAN, 0.0))
            last_submit = self.user_submit.get(user)
            self.user_submit[user] = now
            in_flight = self.user_flight.get(user, 0)
            self.user_flight[user] = in_flight + 1
            flight = float(in_flight)
            ug = stats.get((0, user, gpu), (NAN, NAN))
            un = stats.get((2, user, key), (NAN, NAN)) if key is not None else (NAN, NAN)
            since = NAN if last_submit is None else float(now - last_submit)
        else:
            u, ug, un, since, flight = (NAN, NAN, NAN, NAN, NAN), (NAN, NAN), (NAN, NAN), NAN, NAN
        nm = stats.get((1, key), (NAN, NAN)) if key is not None else (NAN, NAN)
        cluster = self.cluster_sorted
        m = len(cluster)
        median = NAN if not m else (cluster[m // 2] if m % 2 else 0.5 * (cluster[m // 2 - 1] + cluster[m // 2]))
        cpu, node = self.cpu[job], self.node[job]
        self.features[job] = (
            self._code(0, user), self._code(1, self.vc[job]), self._code(2, key),
            NAN if gpu is None else gpu, NAN if cpu is None else cpu, NAN if node is None else node,
            submit % 86400 // 3600, (submit // 86400 + 3) % 7,  # UTC hour; weekday, Monday = 0 (1970-01-01: Thu)
            history, *u, flight, *ug, since, median, *nm, *un)
        self.predicted[job] = 1
        if self._fast is None:
            return history
        return max(math.expm1(self._fast(job)), 0.0)

    def fit(self, finished: np.ndarray, now: int) -> None:
        """Retrain on the stored features of the most recent ended jobs (none before :data:`MIN_TRAIN` have ended)."""
        if len(finished) < MIN_TRAIN:
            return
        rows = finished[-self.max_train:]
        data = lgb.Dataset(self.features[rows], self.target[rows], feature_name=list(FEATURES),
                           categorical_feature=list(CATEGORICAL), params=self.params, free_raw_data=True)
        booster = lgb.train(self.params, data, num_boost_round=self.rounds)
        if self._fast is not None:
            self._fast.close()
        self.booster = booster
        self._fast = single_row_predictor(booster, self.features)
