"""The workload model behind ``dlcluster synth``: a small dataclass tree with a JSON form.

Durations and positive queue waits are kept in ``log1p`` seconds (so zero-second jobs need
no special case), either as empirical quantiles at evenly spaced probabilities or as a
lognormal fitted from a mean and a median. Probabilities are plain ``{label: share}`` maps.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from scipy.special import ndtr

from dlcluster.cluster import ClusterSpec
from dlcluster.errors import ConfigError, InputError
from dlcluster.io._common import MAX_COUNT, MAX_SECONDS, MAX_TIME, MIN_TIME, TIME_RANGE, check_timezone
from dlcluster.synth.calendar import DAY

PRESET_DIR = Path(__file__).with_name("presets")
# GPU-count buckets: (label, smallest, largest) inclusive
BUCKETS: tuple[tuple[str, int, int], ...] = (("0", 0, 0), ("1", 1, 1), ("2-4", 2, 4), ("5-8", 5, 8),
                                             (">8", 9, 2**31 - 1))
# batches of this many GPUs or more make multi-GPU sessions, the others (1 GPU, or none) 1-GPU ones (see Batches)
SESSION_MIN_GPUS = 2
# statuses a finished-job model can produce; running/pending are snapshot artefacts, not outcomes
OUTCOMES = ("completed", "failed", "cancelled", "timeout", "node_fail", "other")
ANY = "any"  # duration key used for statuses without a distribution of their own
MAX_USERS = 50_000_000  # users of a model (no more than the jobs a trace may hold: synth.generate.MAX_JOBS)
TAIL_P = 1.0 - 0.01 * 10.0 ** (-np.arange(1, 21) / 10.0)  # 0.99206 .. 0.9999
TOO_LONG = 2 * MAX_SECONDS  # where a lognormal's draws are capped (refused when generated, not cast past int64)


def check_window(start: float, days: float) -> None:
    """Raise a one-line error unless ``start`` and ``days`` after it are times the trace readers accept."""
    # a trace written beyond MIN_TIME..MAX_TIME would be refused by every reader, dlcluster's own included
    if not MIN_TIME <= start <= MAX_TIME:
        raise ConfigError(f"start {start} is out of range (expected {TIME_RANGE})")
    if not start + days * DAY <= MAX_TIME:
        raise ConfigError(f"{days:g} days from start {start} are out of range (expected {TIME_RANGE})")


def bucket_of(gpus: int) -> str:
    """Label of the GPU-count bucket holding ``gpus``."""
    return next(label for label, lo, hi in BUCKETS if lo <= gpus <= hi)


@dataclass(frozen=True)
class Dist:
    """Seconds as empirical quantiles of ``log1p(seconds)``, or a lognormal (``mu``, ``sigma`` of ``ln seconds``,
    optionally truncated at ``max_seconds``)."""

    quantiles: tuple[float, ...] = ()
    mu: float | None = None
    sigma: float | None = None
    max_seconds: float | None = None
    # optional finer top: quantiles at TAIL_P, between the last two evenly spaced ones (the top percent
    # of a heavy tail interpolated in one step would put its mass log-uniformly up to the maximum)
    tail: tuple[float, ...] = ()

    def grid(self) -> tuple[np.ndarray, np.ndarray]:
        """Probabilities and ``log1p`` quantiles to interpolate between (quantile distributions)."""
        q = np.asarray(self.quantiles)
        probs = np.linspace(0.0, 1.0, len(q))
        if not self.tail:
            return probs, q
        return (np.concatenate([probs[:-1], TAIL_P, [1.0]]), np.concatenate([q[:-1], self.tail, [q[-1]]]))

    def __post_init__(self) -> None:
        if bool(self.quantiles) == (self.mu is not None):
            raise ConfigError("a distribution needs either quantiles or mu/sigma, not both or neither")
        if self.mu is not None and (self.sigma is None or self.sigma < 0):
            raise ConfigError("a lognormal distribution needs sigma >= 0")
        if self.quantiles and any(b < a for a, b in zip(self.quantiles, self.quantiles[1:], strict=False)):
            raise ConfigError("distribution quantiles must be non-decreasing")
        top = math.log1p(MAX_SECONDS)
        # (out of range, they drew negative or int64-overflowing seconds into a trace written with exit 0)
        if not all(0 <= q <= top for q in (*self.quantiles, *self.tail)):  # (NaN fails every comparison)
            raise ConfigError(f"distribution quantiles are log1p(seconds): each must be from 0 to {top:.2f} "
                              "(100 years)")
        if self.mu is not None and not (math.isfinite(self.mu) and self.mu <= math.log(MAX_SECONDS)
                                        and self.sigma is not None and math.isfinite(self.sigma)):
            raise ConfigError(f"a lognormal needs a finite mu of at most {math.log(MAX_SECONDS):.2f} (100 years) "
                              "and a finite sigma")
        if self.max_seconds is not None and not 0 < self.max_seconds <= MAX_SECONDS:
            raise ConfigError(f"max_seconds must be from 0 to {MAX_SECONDS:,} (100 years), got {self.max_seconds}")

    @classmethod
    def lognormal(cls, mean: float, median: float, max_seconds: float | None = None) -> Dist:
        """The lognormal (truncated at ``max_seconds`` if given) whose mean and median are these."""
        if median <= 0 or mean < median:
            raise ConfigError(f"lognormal needs 0 < median <= mean, got median {median}, mean {mean}")
        if mean == median:
            return cls(mu=math.log(median), sigma=0.0, max_seconds=max_seconds)
        if max_seconds is None:
            return cls(mu=math.log(median), sigma=math.sqrt(2.0 * math.log(mean / median)))
        if not mean < max_seconds / 2:
            raise ConfigError(f"a lognormal truncated at {max_seconds} s cannot have mean {mean}")
        # imported here: only building presets solves for a truncated lognormal, and SciPy's optimizers cost
        # every trace generator 0.1 s to import
        from scipy.optimize import brentq

        cap = math.log(max_seconds)

        def mu_for(sigma: float) -> float:
            # truncation lowers the median, so the untruncated one sits above it: F(median) = F(cap) / 2
            return brentq(lambda mu: ndtr((math.log(median) - mu) / sigma) - ndtr((cap - mu) / sigma) / 2,
                          math.log(median), cap + 5 * sigma)

        def mean_gap(sigma: float) -> float:
            mu = mu_for(sigma)
            truncated = math.exp(mu + sigma**2 / 2) * ndtr((cap - mu - sigma**2) / sigma) / ndtr((cap - mu) / sigma)
            return truncated - mean

        sigma = brentq(mean_gap, 1e-3, 10.0)
        return cls(mu=mu_for(sigma), sigma=sigma, max_seconds=max_seconds)


@dataclass(frozen=True)
class Queue:
    """Queue delay: the share of jobs that start at once, and the distribution of positive waits."""

    zero_share: float = 1.0
    positive: Dist | None = None


@dataclass(frozen=True)
class Bucket:
    """One GPU-count bucket: its status mix, durations per status, and queue delay."""

    status_mix: dict[str, float]
    durations: dict[str, Dist]
    queue: Queue = field(default_factory=Queue)
    # durations of single GPU counts with enough jobs of their own (used before ``durations`` by batched models)
    by_size: dict[int, Dist] = field(default_factory=dict)

    def duration_for(self, status: str) -> Dist:
        """The duration distribution of jobs ending with ``status``."""
        return self.durations.get(status) or self.durations[ANY]


@dataclass(frozen=True)
class Batches:
    """Bursty arrivals and correlated jobs: batches of jobs from one submitter, on a day-varying rate.

    A batch's jobs share GPU count, VC and user; their duration normal scores (the job's
    quantile in its size's distribution, as a standard normal) are ``vc shift + user shift +
    vc day shift + vc hour shift + batch score + job score``, so the marginals stay those of the model.
    """

    sizes: dict[int, float]  # share of batches with this many jobs
    gaps: Queue  # seconds between a batch's consecutive submissions (zero_share: the same second)
    day_rates: tuple[float, ...] = ()  # quantiles of the daily rate multiplier (mean 1); empty: no day variation
    day_corr: float = 0.0  # lag-1 correlation of consecutive days' multipliers (as normal scores)
    batch_sd: float = 0.0  # spread of a batch's duration score around its VC's (and user's)
    job_sd: float = 1.0  # spread of a job's duration score around its batch's
    user_sd: float = 0.0  # spread of users' duration-score shifts
    max_gap: int = 60  # the fit's batch rule: same submitter and size, at most this many seconds apart
    by_bucket: dict[str, dict[int, float]] = field(default_factory=dict)  # batch sizes per GPU bucket (else sizes)
    vc_day_sd: float = 0.0  # spread of a VC's day-to-day duration-score shift (busy weeks of long jobs)
    vc_day_corr: float = 0.0  # lag-1 correlation of a VC's consecutive days' shifts
    day_sequence: tuple[float, ...] = ()  # the source window's day multipliers in order (its calendar)
    # sessions: a submitter's multi-GPU batches in one VC, each at most ``session_gap`` seconds after the previous
    # one (0: none fitted), come together (their count per session: ``VcJobs.session_sizes``) this many seconds of the
    # arrival clock apart (:func:`~dlcluster.synth.calendar.arrival_clock`; a VC's own: ``VcJobs.session_gaps``)
    session_gap: int = 0
    session_gaps: Dist | None = None
    # beyond the chance its VC's mix gives, the probability that a session's batch has the GPU count of the one before
    session_same: float = 0.0
    # a VC's batches of one hour share a duration-score shift beyond its day's (sweeps of similar jobs): an AR(1)
    # over hours per VC with this spread and lag-1 correlation
    vc_hour_sd: float = 0.0
    vc_hour_corr: float = 0.0
    # 1-GPU sessions, by the same rule (``VcJobs.one_gpu_session_sizes``), this many seconds apart: a submitter's
    # steady stream of one small job every few minutes, for days
    one_gpu_session_gaps: Dist | None = None


@dataclass(frozen=True)
class VcJobs:
    """One VC's own jobs (batched models): its GPU-count mix and, per GPU count, its duration scores' mean and spread,
    or (GPU counts with enough jobs) their quantiles, which keep a VC's few longest jobs where a normal would not."""

    gpu_mix: dict[int, float]
    shifts: dict[int, float] = field(default_factory=dict)
    spreads: dict[int, float] = field(default_factory=dict)
    score_quantiles: dict[int, tuple[float, ...]] = field(default_factory=dict)
    # its own day-to-day duration-score shift (spread, lag-1 correlation of its AR(1) over days), used instead of
    # the pooled ``Batches.vc_day_sd``/``vc_day_corr``: one VC drifts slowly through weeks of long jobs, another not
    day_shift_sd: float | None = None
    day_shift_corr: float = 0.0
    # its own batch sizes per GPU bucket (buckets with enough batches; else the cluster's): a small VC never saw the
    # hyper-parameter sweeps of hundreds of jobs that a large one submits
    batch_sizes: dict[str, dict[int, float]] = field(default_factory=dict)
    # its day-to-day share of the cluster's batches: a lognormal multiplier (the spread of its log), whose log is an
    # AR(1) over days with this lag-1 correlation, so a VC has busy and quiet days of its own; and how its duration
    # shift follows that log (negative: its busy days bring sweeps of short jobs)
    rate_sd: float = 0.0
    rate_corr: float = 0.0
    rate_score_corr: float = 0.0
    # its multi-GPU batches per session (VCs with enough batches in sessions; else each batch is a session of its
    # own): one VC's campaigns run to a hundred batches, another's to a few
    session_sizes: dict[int, float] = field(default_factory=dict)
    # its 1-GPU batches per 1-GPU session, likewise
    one_gpu_session_sizes: dict[int, float] = field(default_factory=dict)
    # the pauses within its sessions of each kind (VCs with enough of them; else the cluster's): one VC's 1-GPU
    # sessions are a cron job's one batch every ten minutes, another's come and go
    session_gaps: Dist | None = None
    one_gpu_session_gaps: Dist | None = None


@dataclass(frozen=True)
class Users:
    """User popularity: ``count`` users; job shares from a Zipf exponent or an empirical top-share curve.

    ``top_share[i]`` is the share of jobs submitted by the busiest ``i/(len-1)`` of users.
    """

    count: int
    zipf: float | None = None
    top_share: tuple[float, ...] = ()


@dataclass(frozen=True)
class Model:
    """Everything ``generate`` needs to sample a trace shaped like its source."""

    name: str
    cluster: str
    timezone: str
    start: int  # UTC epoch of the source window's first local midnight
    days: float  # length of the source window
    jobs_per_day: float  # at profile weight 1
    weekly_profile: tuple[float, ...]  # 168 weights, Monday 00:00 local first, mean 1
    gpu_mix: dict[int, float]
    buckets: dict[str, Bucket]
    users: Users | None = None
    vcs: dict[str, tuple[int, ...]] = field(default_factory=dict)
    vc_share: dict[str, float] = field(default_factory=dict)
    # True: vc_share is each VC's share of GPU *time*, met by placing the largest jobs first
    # (presets whose VC mix is assumed); False: each VC's share of jobs, as fitted from a trace
    vc_share_of_gpu_time: bool = False
    provenance: str = ""
    # optional (absent in models saved before them; None/empty reproduces the unbatched generator exactly)
    batches: Batches | None = None
    vc_jobs: dict[str, VcJobs] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if len(self.weekly_profile) != 168:
            raise ConfigError(f"model {self.name!r}: weekly_profile needs 168 weights, has {len(self.weekly_profile)}")
        if not all(math.isfinite(w) and w >= 0 for w in self.weekly_profile) or not sum(self.weekly_profile) > 0:
            raise ConfigError(f"model {self.name!r}: weekly_profile weights must be finite, at least 0, and not all 0")
        for what, value in (("jobs_per_day", self.jobs_per_day), ("days", self.days)):
            if not (math.isfinite(value) and value > 0):
                raise ConfigError(f"model {self.name!r}: {what} must be a positive number, got {value}")
        try:
            check_timezone(self.timezone)
            check_window(self.start, self.days)
        except ConfigError as exc:
            raise ConfigError(f"model {self.name!r}: {exc}") from None
        self._check_shares("gpu_mix", self.gpu_mix)
        if self.vc_share:  # (empty: a model without VCs; every other mix is drawn from, so it needs shares)
            self._check_shares("vc_share", self.vc_share)
            nodeless = sorted(set(self.vc_share) - set(self.vcs)) if self.vcs else []
            if nodeless:  # (its jobs went to a VC that the trace's own cluster spec lacks: no simulation could run)
                raise ConfigError(f"model {self.name!r}: vc_share names VC {nodeless[0]!r} that vcs does not give "
                                  "nodes")
        for b, m in self.buckets.items():
            self._check_shares(f"bucket {b} status_mix", m.status_mix)
            unknown = sorted(set(m.status_mix) - set(OUTCOMES))
            if unknown:  # (it stopped generation with an internal error)
                raise ConfigError(f"model {self.name!r}: bucket {b} status_mix: unknown status {unknown[0]!r} "
                                  f"(known: {', '.join(OUTCOMES)})")
            self._check_share(f"bucket {b} queue zero_share", m.queue.zero_share)
        self._check_gpu_counts("gpu_mix", self.gpu_mix)
        if self.users is not None:
            self._check_users(self.users)
        needed = {bucket_of(g) for g, p in self.gpu_mix.items() if p > 0}
        if needed - set(self.buckets):
            raise ConfigError(f"model {self.name!r}: no bucket for GPU counts in {sorted(needed - set(self.buckets))}")
        if self.batches is not None:
            rates = self.batches.day_rates
            # (a negative or NaN rate stopped generation with an internal error from NumPy's Poisson draw)
            if not all(0 <= r < 1e6 for r in rates) or any(b < a for a, b in zip(rates, rates[1:], strict=False)):
                raise ConfigError(f"model {self.name!r}: batches day_rates are quantiles of a daily rate multiplier: "
                                  "finite, from 0, non-decreasing")
            for what, corr in (("day_corr", self.batches.day_corr), ("vc_day_corr", self.batches.vc_day_corr),
                               ("vc_hour_corr", self.batches.vc_hour_corr)):
                if not -1 <= corr <= 1:
                    raise ConfigError(f"model {self.name!r}: batches {what} is a correlation: from -1 to 1, got {corr}")
            for what, sd in (("vc_day_sd", self.batches.vc_day_sd), ("vc_hour_sd", self.batches.vc_hour_sd)):
                if not (math.isfinite(sd) and sd >= 0):
                    raise ConfigError(f"model {self.name!r}: batches {what} is a spread of normal scores: from 0, "
                                      f"got {sd}")
            self._check_share("batches gaps zero_share", self.batches.gaps.zero_share)
            self._check_share("batches session_same", self.batches.session_same)
            self._check_shares("batch sizes", self.batches.sizes, verb="sum")
            for bucket, sizes in self.batches.by_bucket.items():
                self._check_shares(f"batches by_bucket {bucket}", sizes, verb="sum")
        for vc, own in self.vc_jobs.items():
            self._check_shares(f"vc_jobs {vc} gpu_mix", own.gpu_mix)
            self._check_gpu_counts(f"vc_jobs {vc} gpu_mix", own.gpu_mix)
            if vc not in self.vc_share:
                raise ConfigError(f"model {self.name!r}: vc_jobs names VC {vc!r} that has no vc_share")
            shares = {f"batch_sizes {bucket}": sizes for bucket, sizes in own.batch_sizes.items()}
            for what, sizes in (("session_sizes", own.session_sizes), ("one_gpu_session_sizes", own.one_gpu_session_sizes)):
                if sizes:
                    shares[what] = sizes
            for what, sizes in shares.items():
                self._check_shares(f"vc_jobs {vc} {what}", sizes, verb="sum")
            for g, q in own.score_quantiles.items():
                if len(q) < 2 or any(b < a for a, b in zip(q, q[1:], strict=False)):
                    raise ConfigError(f"model {self.name!r}: vc_jobs {vc} score_quantiles {g} must be at least two "
                                      "non-decreasing values")

    def _check_shares(self, what: str, shares: Mapping[Any, float], verb: str = "sums") -> None:
        """Refuse a probability mix unless its shares are finite, at least 0 and sum to 1 (to saved rounding)."""
        # a negative share can balance the sum, and NaN passes any comparison; NumPy would refuse either, or
        # normalise it into a mix the file does not say
        bad = next(((key, p) for key, p in shares.items() if not (math.isfinite(p) and p >= 0)), None)
        if bad is not None:
            raise ConfigError(f"model {self.name!r}: {what}: the share of {bad[0]!r} is {bad[1]}; shares must be "
                              "finite and at least 0")
        if abs(sum(shares.values()) - 1.0) > 1e-3:
            raise ConfigError(f"model {self.name!r}: {what} {verb} to {sum(shares.values()):.4f}, not 1")

    def _check_share(self, what: str, share: float) -> None:
        """Refuse a single probability outside 0..1 (NaN included): drawn against, it would quietly act as 0 or 1."""
        if not 0 <= share <= 1:
            raise ConfigError(f"model {self.name!r}: {what} must be a share between 0 and 1, got {share}")

    def _check_users(self, users: Users) -> None:
        """Refuse a user count or popularity that generation could not draw from (NumPy stopped it, or ran out of
        memory building one weight per user)."""
        count = users.count
        if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= MAX_USERS:
            raise ConfigError(f"model {self.name!r}: users count must be a whole number from 1 to {MAX_USERS:,}, "
                              f"got {count}")
        if users.zipf is not None and not (math.isfinite(users.zipf) and users.zipf >= 0):
            raise ConfigError(f"model {self.name!r}: users zipf must be a finite number at least 0, got {users.zipf}")
        curve = users.top_share
        if users.zipf is None and (len(curve) < 2 or not all(0 <= a <= b <= 1 for a, b in zip(curve, curve[1:],
                                                                                            strict=False))):
            raise ConfigError(f"model {self.name!r}: users top_share must be at least two non-decreasing shares "
                              "from 0 to 1 (or give zipf)")

    def _check_gpu_counts(self, what: str, mix: Mapping[int, float]) -> None:
        """Refuse a GPU-count mix naming a count no bucket (and no trace reader) holds."""
        bad = next((g for g in mix if not 0 <= g <= MAX_COUNT), None)
        if bad is not None:
            raise ConfigError(f"model {self.name!r}: {what}: GPU count {bad} is out of range (expected 0 to "
                              f"{MAX_COUNT:,})")

    @property
    def cluster_spec(self) -> ClusterSpec | None:
        """The VC sizes as a :class:`ClusterSpec` (None when the source had none)."""
        return ClusterSpec(dict(self.vcs), source=f"synth:{self.name}") if self.vcs else None

    def to_json(self) -> str:
        """Compact, stable JSON (sorted keys) for preset files."""
        return json.dumps(_without_defaults(asdict(self)), sort_keys=True, separators=(",", ":")) + "\n"

    @classmethod
    def from_json(cls, text: str, source: str = "<model>") -> Model:
        """Parse :meth:`to_json` output, with a one-line error for a malformed file naming the field at fault."""
        try:
            raw = json.loads(text)
            if not isinstance(raw, dict):
                raise TypeError(f"expected a JSON object, got {type(raw).__name__}")
            return _model(raw)
        except ConfigError as exc:  # a well-formed file with an impossible value
            raise InputError(str(exc), path=source) from None
        except _MalformedField as exc:
            raise InputError(f"not a dlcluster synth model (field {exc.key!r}: {exc})", path=source) from exc
        except (json.JSONDecodeError, TypeError) as exc:
            raise InputError(f"not a dlcluster synth model ({type(exc).__name__}: {exc})", path=source) from exc


class _MalformedField(ValueError):
    """A top-level model field of the wrong shape or type (the message says which and why)."""

    def __init__(self, key: str, cause: Exception) -> None:
        detail = "missing" if isinstance(cause, KeyError) and cause.args == (key,) else str(cause)
        super().__init__(f"{type(cause).__name__}: {detail}")
        self.key = key


@contextmanager
def _field(key: str) -> Iterator[None]:
    """Name ``key`` in any shape or type error raised while reading it (a hand-edited file's mistakes)."""
    try:
        yield
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise _MalformedField(key, exc) from exc


# fields added after the first presets: left out at their defaults, so a model without them is written as before
_OPTIONAL = frozenset({"batches", "vc_jobs", "by_size", "tail", "vc_day_sd", "vc_day_corr", "score_quantiles",
                       "day_shift_sd", "day_shift_corr", "batch_sizes",
                       "rate_sd", "rate_corr", "rate_score_corr", "day_sequence",
                       "session_gap", "session_gaps", "session_sizes", "session_same", "vc_hour_sd",
                       "vc_hour_corr", "one_gpu_session_gaps", "one_gpu_session_sizes"})
_NULLABLE = frozenset({"day_shift_sd"})  # None is their default: a 0 is written


def _without_defaults(raw: Any) -> Any:
    if isinstance(raw, dict):
        return {k: _without_defaults(v) for k, v in raw.items()
                if not (k in _OPTIONAL and (v is None if k in _NULLABLE else not v))}
    if isinstance(raw, list):
        return [_without_defaults(v) for v in raw]
    return raw


def _dist(raw: dict[str, Any] | None) -> Dist | None:
    if raw is None:
        return None
    return Dist(tuple(raw["quantiles"]), raw["mu"], raw["sigma"], raw["max_seconds"], tuple(raw.get("tail", ())))


def _model(raw: dict[str, Any]) -> Model:
    fields: dict[str, Any] = {}
    readers: dict[str, Callable[[Any], Any]] = {
        "name": _text, "cluster": _text, "timezone": _text, "start": _whole, "days": float, "jobs_per_day": float,
        "weekly_profile": lambda weights: tuple(float(w) for w in weights), "gpu_mix": _mix, "buckets": _buckets,
        "users": _users, "vcs": _vcs, "vc_share": lambda shares: {vc: float(p) for vc, p in shares.items()},
        "vc_share_of_gpu_time": bool, "provenance": _text, "batches": _batches, "vc_jobs": _vc_jobs}
    required = ("name", "cluster", "timezone", "start", "days", "jobs_per_day", "weekly_profile", "gpu_mix", "buckets")
    for key, read in readers.items():
        with _field(key):
            if key in required or raw.get(key):  # (absent or empty optional fields keep their defaults)
                fields[key] = read(raw[key])
    return Model(**fields)


def _text(raw: Any) -> str:
    if not isinstance(raw, str):
        raise TypeError(f"expected a string, got {raw!r}")
    return raw


def _mix(raw: dict[str, Any]) -> dict[int, float]:
    return {int(g): float(p) for g, p in raw.items()}


def _buckets(raw: dict[str, Any]) -> dict[str, Bucket]:
    return {
        label: Bucket(
            b["status_mix"],
            {s: d for s, d in ((s, _dist(d)) for s, d in b["durations"].items()) if d is not None},
            Queue(b["queue"]["zero_share"], _dist(b["queue"]["positive"])),
            {int(g): _required(d) for g, d in b.get("by_size", {}).items()},
        )
        for label, b in raw.items()
    }


def _users(raw: dict[str, Any]) -> Users:
    return Users(raw["count"], raw["zipf"], tuple(raw["top_share"]))


def _vcs(raw: dict[str, Any]) -> dict[str, tuple[int, ...]]:
    def gpus(n: Any) -> int:
        if isinstance(n, bool) or not isinstance(n, int | float) or not math.isfinite(n) or n != int(n) or n < 0:
            raise ValueError(f"a node's GPU count must be a whole number at least 0, got {n!r}")
        return int(n)
    return {vc: tuple(gpus(n) for n in nodes) for vc, nodes in raw.items()}


def _vc_jobs(raw: dict[str, Any]) -> dict[str, VcJobs]:
    return {vc: VcJobs(_mix(v["gpu_mix"]),
                       {int(g): float(x) for g, x in v["shifts"].items()},
                       {int(g): float(x) for g, x in v["spreads"].items()},
                       {int(g): tuple(q) for g, q in v.get("score_quantiles", {}).items()},
                       None if v.get("day_shift_sd") is None else float(v["day_shift_sd"]),
                       float(v.get("day_shift_corr", 0.0)),
                       {b: {int(k): float(p) for k, p in m.items()} for b, m in v.get("batch_sizes", {}).items()},
                       float(v.get("rate_sd", 0.0)), float(v.get("rate_corr", 0.0)),
                       float(v.get("rate_score_corr", 0.0)),
                       {int(k): float(p) for k, p in v.get("session_sizes", {}).items()},
                       {int(k): float(p) for k, p in v.get("one_gpu_session_sizes", {}).items()},
                       _dist(v.get("session_gaps")), _dist(v.get("one_gpu_session_gaps")))
            for vc, v in raw.items()}


def _whole(value: Any) -> Any:
    """``int(value)``, but an infinite or NaN float as it is: the model's own check names it, int() cannot."""
    return value if isinstance(value, float) and not math.isfinite(value) else int(value)


def _required(raw: dict[str, Any]) -> Dist:
    dist = _dist(raw)
    if dist is None:
        raise ValueError("a distribution is null")
    return dist


def _batches(raw: dict[str, Any]) -> Batches:
    gaps = raw["gaps"]
    return Batches({int(k): float(p) for k, p in raw["sizes"].items()}, Queue(gaps["zero_share"], _dist(gaps["positive"])),
                   tuple(raw["day_rates"]), float(raw["day_corr"]), float(raw["batch_sd"]), float(raw["job_sd"]),
                   float(raw["user_sd"]), int(raw["max_gap"]),
                   {b: {int(k): float(p) for k, p in m.items()} for b, m in raw.get("by_bucket", {}).items()},
                   float(raw.get("vc_day_sd", 0.0)), float(raw.get("vc_day_corr", 0.0)),
                   tuple(raw.get("day_sequence", ())), int(raw.get("session_gap", 0)), _dist(raw.get("session_gaps")),
                   float(raw.get("session_same", 0.0)), float(raw.get("vc_hour_sd", 0.0)),
                   float(raw.get("vc_hour_corr", 0.0)), _dist(raw.get("one_gpu_session_gaps")))


def preset_names() -> list[str]:
    """Names of the bundled presets."""
    return sorted(p.stem for p in PRESET_DIR.glob("*.json"))


def load_preset(name: str) -> Model:
    """A bundled preset by name (``philly``, ``helios-venus``, ...)."""
    path = PRESET_DIR / f"{name}.json"
    if not path.is_file():
        raise ConfigError(f"unknown synth preset {name!r}; choose one of: {', '.join(preset_names())}")
    return Model.from_json(path.read_text(encoding="utf-8"), source=str(path))
