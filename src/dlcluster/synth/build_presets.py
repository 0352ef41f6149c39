"""Re-fit the bundled presets from the public data: ``python -m dlcluster.synth.build_presets [DATA_DIR]``.

``DATA_DIR`` defaults to ``../shared/data`` beside the repository. Every assumption a preset
makes beyond its data is written into its ``provenance`` field.
"""

from __future__ import annotations

import dataclasses
import math
import sys
from pathlib import Path

import numpy as np
import polars as pl
from scipy.optimize import brentq

from dlcluster.atomic import write_text_atomic
from dlcluster.io import read_trace
from dlcluster.io.cluster_spec import read_cluster_spec
from dlcluster.synth.calendar import DAY, hour_bins
from dlcluster.synth.fit import fit
from dlcluster.synth.model import ANY, PRESET_DIR, Bucket, Dist, Model, Queue, Users

# Philly study (ATC'19) Table 6: passed / killed / unsuccessful jobs
PHILLY_OUTCOMES = {"completed": 66_696, "cancelled": 12_996, "failed": 16_568}
PHILLY_USERS = 300  # the study: "hundreds of users"
ZIPF = 1.0  # assumed heavy tail of jobs per user (no user column in the public summaries)
HELIOS_TZ = "Asia/Shanghai"
HELIOS_START = "2020-04-01"
HELIOS_DAYS = 183  # 2020-04-01 .. 2020-09-30
HELIOS_USERS = 200  # assumed: the public summary has no user counts
SPLIT_VCS = 22  # Saturn/Uranus: about the number of VCs holding GPUs in Venus (23) and Earth (21)
QUEUE_ZERO_SHARE = 0.6  # assumed: Helios median waits are 0, so at least half the jobs start at once
QUEUE_SIGMA = 2.0  # assumed spread of positive waits; mu then matches the published mean
MAX_LOG2_GPUS = 7  # largest job: 128 GPUs, or the largest power of two a VC can hold
P1_FLOOR = 0.55  # published median GPU count is 1: keep P(1) clearly above one half
# assumed generic working-hours shape (no Helios hourly data may be fitted): cosine over the day,
# +-DAY_SWING around the mean, lowest at LOW_HOUR local time; weekends at WEEKEND of a weekday
DAY_SWING, LOW_HOUR, WEEKEND = 0.5, 5, 0.8


def working_hours_profile() -> tuple[float, ...]:
    """168 hour-of-week weights (Monday 00:00 first, mean 1) of the assumed working-hours shape."""
    hours = np.arange(168)
    daily = 1.0 - DAY_SWING * np.cos(2 * np.pi * ((hours % 24) + 0.5 - LOW_HOUR) / 24)
    weights = daily * np.where(hours >= 5 * 24, WEEKEND, 1.0)
    return tuple(round(float(w), 4) for w in weights / weights.mean())


def philly(data: Path) -> Model:
    """The Philly preset: fitted from ``philly/jobs_processed.csv`` plus published status and user shapes."""
    spec = read_cluster_spec(data / "philly/vc_nodes.csv")
    trace = read_trace(data / "philly/jobs_processed.csv", format="philly-jobs")
    model = fit(trace, cluster=spec, name="philly")
    total = sum(PHILLY_OUTCOMES.values())
    outcomes = {s: round(n / total, 6) for s, n in sorted(PHILLY_OUTCOMES.items())}
    buckets = {label: Bucket(outcomes, {ANY: b.durations[ANY]}, Queue(), b.by_size) for label, b in model.buckets.items()}
    batches = model.batches
    assert batches is not None
    outside = trace.jobs.filter(~pl.col("vc").is_in(list(spec.vcs))).height
    return dataclasses.replace(
        model, buckets=buckets, users=Users(PHILLY_USERS, zipf=ZIPF),  # users drawn per batch

        provenance=(
            f"Fitted from philly/jobs_processed.csv ({trace.jobs.height:,} jobs, Pollux-derived from philly-traces, "
            "CC-BY-4.0): arrival rate, weekly profile (America/Los_Angeles), GPU mix, durations per GPU bucket "
            "(101 log quantiles and a finer top percentile) and per GPU count with >= 200 jobs (by_size). "
            f"Batches (dlcluster.synth.fit_batches, same table): a VC's same-size jobs at most {batches.max_gap} s "
            "apart form a batch (the table has no users, so the VC stands for the submitter); batch sizes per GPU "
            f"bucket, within-batch gaps ({batches.gaps.zero_share:.1%} in the same second), daily multipliers of the "
            f"batch rate (quantiles, lag-1 correlation {batches.day_corr}); duration normal scores per VC and GPU count "
            f"(vc_jobs: mean and spread) with batch spread {batches.batch_sd}, job spread {batches.job_sd} and a VC-hour "
            f"part (spread {batches.vc_hour_sd}, lag-1 correlation {batches.vc_hour_corr}: a VC's batches of one hour "
            "have similar run times beyond its day's); each "
            f"VC's own GPU-count mix (vc_jobs); sessions: a VC's multi-GPU batches at most {batches.session_gap} s "
            "apart, sizes per VC with >= 30 sessions, pauses between them. VC sizes: philly/vc_nodes.csv (8-GPU nodes, Helios artifact); VC "
            f"shares from the jobs of those 11 VCs ({outside} jobs of 4 other VCs left out). The table has no status, user "
            "or start time: status mix = Philly study Table 6 (passed 69.3% -> completed, killed 13.5% -> "
            "cancelled, unsuccessful 17.2% -> failed), drawn independently of size and duration; users: "
            f"{PHILLY_USERS} ('hundreds of users', study) with Zipf({ZIPF}) popularity (assumed shape), one per batch (and session); "
            "queue delay 0 (no start times in the source)."
        ),
    )


def _gpu_mix(mean: float, largest: int) -> dict[int, float]:
    # geometric over powers of two with the published mean; P(1) >= P1_FLOOR keeps the published median of 1
    k = np.arange(largest + 1)
    g = 2.0**k

    def mix(r: float, p1: float | None) -> np.ndarray:
        p = r**k
        if p1 is None:
            return p / p.sum()
        tail = p[1:] / p[1:].sum() * (1.0 - p1)
        return np.concatenate([[p1], tail])

    p = mix(brentq(lambda r: float(mix(r, None) @ g) - mean, 1e-6, 50.0), None)
    if p[0] < P1_FLOOR:
        p = mix(brentq(lambda r: float(mix(r, P1_FLOOR) @ g) - mean, 1e-6, 50.0), P1_FLOOR)
    return {int(x): float(y) for x, y in zip(g, p, strict=True)}


def _helios_vcs(data: Path, name: str, gpus: int) -> tuple[dict[str, tuple[int, ...]], str]:
    path = data / f"helios/{name}/cluster_gpu_number.csv"
    if path.is_file():
        daily = pl.read_csv(path).drop("date", "total")
        nodes = {vc: round(daily[vc].mean() / 8) for vc in daily.columns}
        vcs = {vc: (8,) * n for vc, n in sorted(nodes.items()) if n > 0}
        total = sum(map(sum, vcs.values()))
        return vcs, (f"VC sizes: each VC's mean daily GPU count in helios/{name}/cluster_gpu_number.csv rounded to "
                     f"whole 8-GPU nodes ({len(vcs)} VCs, {total} GPUs; VCs rounding to 0 nodes left out)")
    n_nodes = round(gpus / 8)
    per = np.full(SPLIT_VCS, n_nodes // SPLIT_VCS)
    per[: n_nodes % SPLIT_VCS] += 1
    vcs = {f"vc{name[:2].capitalize()}{i:02d}": (8,) * int(n) for i, n in enumerate(per)}
    return vcs, (f"VC sizes: no per-VC file for {name}; the summary's {gpus} GPUs split into {n_nodes} 8-GPU nodes "
                 f"over {SPLIT_VCS} near-equal VCs (assumed; about the VC count of Venus and Earth)")


def _queue(mean: float) -> Queue:
    mu = math.log(mean / (1.0 - QUEUE_ZERO_SHARE)) - QUEUE_SIGMA**2 / 2.0
    return Queue(QUEUE_ZERO_SHARE, Dist(mu=mu, sigma=QUEUE_SIGMA))


def _bucket(row: dict, kind: str) -> Bucket:
    mix = {"completed": row[f"complete_rate_{kind}"], "cancelled": row[f"cancel_rate_{kind}"],
           "failed": row[f"fail_rate_{kind}"]}
    total = sum(mix.values())
    run = Dist.lognormal(row[f"avg_run_time_{kind}"], row[f"med_run_time_{kind}"], max_seconds=HELIOS_DAYS * DAY)
    return Bucket({s: round(p / total, 6) for s, p in sorted(mix.items())}, {ANY: run},
                  _queue(row[f"avg_que_time_{kind}"]))


def helios(data: Path, row: dict) -> Model:
    """A Helios preset from one row of ``helios/cluster_summary.csv`` (and VC sizes where present)."""
    name = row["id"].lower()
    vcs, vc_note = _helios_vcs(data, name, int(row["gpu_num"]))
    largest = min(MAX_LOG2_GPUS, int(math.log2(max(map(sum, vcs.values())))))
    gpu_share = row["gpu_job_num"] / row["job_num"]
    gpu_mix = {0: round(1.0 - gpu_share, 6)} | {
        g: round(p * gpu_share, 6) for g, p in _gpu_mix(row["avg_gpu_num"], largest).items()}
    gpu_mix[1] = round(gpu_mix[1] + 1.0 - sum(gpu_mix.values()), 6)
    start = int(pl.Series([HELIOS_START]).str.to_datetime().dt.replace_time_zone(HELIOS_TZ).dt.epoch("s")[0])
    profile = working_hours_profile()
    _, exposure, how = hour_bins(start, HELIOS_DAYS, HELIOS_TZ)
    weights = float((np.asarray(profile)[how] * exposure).sum())
    gpu = _bucket(row, "gpu")
    vc_gpus = {vc: sum(n) for vc, n in vcs.items()}
    return Model(
        name=f"helios-{name}", cluster=name, timezone=HELIOS_TZ, start=start, days=float(HELIOS_DAYS),
        jobs_per_day=round(24.0 * row["job_num"] / weights, 4), weekly_profile=profile, gpu_mix=gpu_mix,
        buckets={"0": _bucket(row, "cpu"), "1": gpu, "2-4": gpu, "5-8": gpu, ">8": gpu},
        users=Users(HELIOS_USERS, zipf=ZIPF), vcs=vcs,
        vc_share={vc: round(g / sum(vc_gpus.values()), 6) for vc, g in vc_gpus.items()},
        vc_share_of_gpu_time=True,
        provenance=(
            f"From helios/cluster_summary.csv (Helios SC'21 artifact, HeliosData CC-BY-4.0), row {row['id']}: "
            f"{row['job_num']:,} jobs over {HELIOS_START} + {HELIOS_DAYS} days (Asia/Shanghai) -> arrival rate; "
            "CPU/GPU job shares; run time per CPU/GPU: lognormal truncated at the window with the published mean "
            "and median; "
            "complete/cancel/fail rates per CPU/GPU (timeout and node_fail count as failed there); GPU mix: "
            "geometric over powers of two up to the largest VC (max 128) with the published mean, P(1) held at "
            f">= {P1_FLOOR} (assumed) for the published median of 1; the same run-time and status mix in "
            "every GPU bucket. Queue: "
            f"{QUEUE_ZERO_SHARE:.0%} zero waits (median 0 published; share assumed), positive waits lognormal "
            f"sigma {QUEUE_SIGMA} (assumed) matching the published mean. Weekly profile: assumed generic "
            f"working-hours shape (cosine over the day, +-{DAY_SWING:.0%}, lowest at {LOW_HOUR:02d}:00 local, "
            f"weekends x{WEEKEND}); no Helios hourly data is fitted. Users: "
            f"{HELIOS_USERS} with Zipf({ZIPF}) popularity (assumed). {vc_note}; each VC's share of GPU time proportional "
            "to its GPUs (assumed), the largest jobs placed first among the VCs that can hold them."
        ),
    )


def build(data: Path, out: Path = PRESET_DIR) -> list[Path]:
    """Fit every preset from ``data`` and write them to ``out``; returns the files written.

    The Helios presets stay unbatched: the public summary and ../shared/reference say nothing of
    batches, day-to-day variation or run time per GPU count, so any such structure would be invented.
    """
    models = [philly(data)]
    summary = pl.read_csv(data / "helios/cluster_summary.csv").filter(pl.col("id") != "total")
    models += [helios(data, row) for row in summary.iter_rows(named=True)]
    return [write_text_atomic(out / f"{m.name}.json", m.to_json()) for m in models]


def main(argv: list[str] | None = None) -> None:
    """Command-line entry: rebuild the presets from a data folder."""
    args = sys.argv[1:] if argv is None else argv
    data = Path(args[0]) if args else Path(__file__).resolve().parents[3].parent / "shared" / "data"
    for path in build(data):
        print(f"wrote {path} ({path.stat().st_size:,} bytes)")


if __name__ == "__main__":
    main()
