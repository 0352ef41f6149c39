"""``dlcluster simulate`` and ``dlcluster policies``."""

from __future__ import annotations

import contextlib
import json
import math
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, cast

import click
from rich.table import Table
from rich.text import Text

from dlcluster.atomic import atomic_folder, in_the_way
from dlcluster.cli import Console, app, echo
from dlcluster.cli.long_runs import progress_bar, submit_window, wall_instant
from dlcluster.cli.options import PATH, ces_options, load, output_folder, trace_options
from dlcluster.cli.sim_tables import ENERGY_LEGEND, LEGEND, simulate_tables
from dlcluster.errors import ConfigError, InputError, UnknownVCError
from dlcluster.predict import estimates_quality, is_estimator_name, make_estimator, read_estimates

if TYPE_CHECKING:  # the simulator is imported only when a command runs, to keep start-up light
    from collections.abc import Callable

    import polars as pl

    from dlcluster.services.ces.closed_loop import PowerManager
    from dlcluster.sim import SimResult
    from dlcluster.sim.failures import FailureModel
    from dlcluster.sim.framework import Policy
    from dlcluster.sim.power import PowerModel
    from dlcluster.sim.cycle import SpeedModel
    from dlcluster.trace import Trace


OUTPUT_FILES = ("jobs.parquet", "timeline.parquet", "placements.parquet", "node_states.parquet", "summary.json",
                "jobs.csv", "timeline.csv")


def _earlier_run(output: Path) -> list[str]:
    """What an earlier run left in ``output`` (names in it, a folder's ending in ``/``), replaced as a whole by this
    run's outputs so that no folder mixes two runs: its files at the top, and its policy folders (those holding a
    simulation's ``summary.json``)."""
    if not output.is_dir():
        return []
    earlier = list(OUTPUT_FILES)
    for folder in sorted(output.iterdir()):
        summary = folder / "summary.json"
        # (a hidden folder is a run's staging folder, this one's among them)
        if folder.is_dir() and not folder.is_symlink() and not folder.name.startswith(".") and summary.is_file():
            with contextlib.suppress(ValueError, OSError):
                doc = json.loads(summary.read_text(encoding="utf-8"))
                if isinstance(doc, dict) and {"policy", "overall"} <= doc.keys():
                    earlier.append(f"{folder.name}/")
    return earlier


def _write_outputs(result: SimResult, outdir: Path, csv: bool) -> None:
    """Write one run's tables and summary into the empty folder ``outdir`` (the summary last)."""
    outdir.mkdir(exist_ok=True)
    result.jobs.write_parquet(outdir / "jobs.parquet", compression="zstd")
    # without column statistics: a timeline (a row per VC every minute) is read whole, and computing them was a fifth
    # of the time its writing took
    result.timeline.write_parquet(outdir / "timeline.parquet", compression="zstd", statistics=False)
    result.placements.write_parquet(outdir / "placements.parquet", compression="zstd")
    if result.node_states.height:
        result.node_states.write_parquet(outdir / "node_states.parquet")
    if csv:
        result.jobs.write_csv(outdir / "jobs.csv")
        result.timeline.write_csv(outdir / "timeline.csv")
    (outdir / "summary.json").write_text(json.dumps(result.summary, indent=2) + "\n", encoding="utf-8")


def _check_policies(classes: dict[str, type[Policy]], compat: str | None, estimates: str | None) -> None:
    """Refuse, before the first run, a policy that compatibility mode lacks or whose estimates are missing: a
    later policy's failure would otherwise come after the earlier ones were written."""
    from dlcluster.sim.compat import COMPAT_MODES

    if compat is not None:
        if compat not in COMPAT_MODES:
            raise ConfigError(f"unknown compatibility mode {compat!r}; choose one of: {', '.join(COMPAT_MODES)}")
        for cls in classes.values():
            COMPAT_MODES[compat].check(cls.name)
    for cls in classes.values():
        if cls.needs_estimates and estimates is None:
            raise ConfigError(f"policy {cls.name!r} needs duration estimates (--estimates FILE, or --estimates "
                              "history|lgbm|oracle)")
    if estimates is not None and not any(c.needs_estimates or c.uses_estimates for c in classes.values()):
        raise ConfigError(f"--estimates: no policy given ({', '.join(classes)}) reads duration estimates "
                          "(`dlcluster policies` tells which do)")


def _note_strays(est: pl.DataFrame, trace: Trace, source: str, trace_path: Path) -> None:
    """A note when estimates name jobs the trace lacks: a file made for another trace, or an older one of this,
    would otherwise be used without a word."""
    import polars as pl

    from dlcluster.cli import err_console
    from dlcluster.text import count

    strays = est.filter(~pl.col("job_id").is_in(trace.jobs["job_id"].implode())).height
    if strays:
        err_console.print(f"note: --estimates {source}: {count(strays, 'estimate')} of {est.height:,} name no job of "
                          f"{trace_path} (made for another trace?)", soft_wrap=True)


def _check_estimates_cover(simulated: pl.Series, est: pl.DataFrame, path: str) -> None:
    """Refuse an estimates file that lacks a job the runs simulate (checked once, before the first run)."""
    missing = simulated.filter(~simulated.is_in(est["job_id"].implode()))
    if missing.len():
        raise InputError(f"no duration estimate for job {missing[0]!r} ({missing.len()} simulated job(s) lack one)",
                         path=path, field="job_id")


def _simulable(trace: Trace, lenient: bool, path: Path) -> Trace:
    """``trace`` when every GPU job has a duration and a submit time. A job still running or pending when the trace
    was taken has none: refused, or with ``--lenient`` left out and counted on stderr."""
    import polars as pl

    from dlcluster.cli import err_console
    from dlcluster.sim.prepare import REPLAY_NEEDS, unreplayable

    lacking = unreplayable()
    bad = trace.jobs.filter(lacking)
    if not bad.height:
        return trace
    if not lenient:
        first = bad.row(0, named=True)
        field = next(c for c in REPLAY_NEEDS if first[c] is None)
        raise InputError(f"job {first['job_id']!r} has no {REPLAY_NEEDS[field]}; a simulation needs one for every GPU "
                         f"job (--lenient leaves out the {bad.height:,} GPU job(s) without one)", path=path,
                         field=field)
    if bad.height == trace.jobs.filter(pl.col("gpu_num") > 0).height:
        raise InputError(f"no GPU job has both a duration and a submit time (all {bad.height:,} lack one): "
                         "nothing to simulate", path=path)
    err_console.print(Text.assemble((f"left out {bad.height:,} GPU job(s) without a duration or submit time",
                                     "yellow"), " (running or pending when the trace was taken)"), soft_wrap=True)
    return replace(trace, jobs=trace.jobs.filter(~lacking))


class Settings(NamedTuple):
    """What ``simulate``'s options make before any trace is read (each checked): the policies and the models."""

    names: list[str]
    classes: dict[str, type[Policy]]
    placement: str
    speed: SpeedModel | None
    failure_model: FailureModel | None
    make_power: Callable[[], tuple[PowerManager | None, PowerModel]] | None


def settings(options: dict[str, Any]) -> Settings:
    """Check every option of ``simulate`` that does not need the trace, and make what they name: ``options`` are
    the command's parameters by name (``dlcluster sweep`` checks each of its cells with this before running any)."""
    from dlcluster.sim.policies import get_policy
    from dlcluster.sim.prepare import check_seed
    from dlcluster.sim.speed import speed_model as make_speed_model

    o = options
    names = [p.strip() for p in o["policy"].split(",") if p.strip()]
    if not names:
        raise ConfigError("--policy: give at least one policy")
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:  # (one run, written in the layout of several)
        raise ConfigError(f"--policy: {', '.join(repr(n) for n in twice)} is named more than once")
    classes = {name: get_policy(name) for name in names}  # every name checked before the first run
    compat = o["compat"]
    _check_policies(classes, compat, o["estimates"])
    if compat is not None:  # checked before the trace is read (the library refuses them too, later)
        for given, refused, why in (
                (f"--speed-model {o['speed_model']}", o["speed_model"] != "none", "runs every job at full speed"),
                (f"--failures {o['failures']}", o["failures"] != "none", "replays no failures"),
                ("--power ces", o["power"] == "ces", "keeps every node on, as the artifact does; use --power on for "
                 "its energy")):
            if refused:
                raise ConfigError(f"{given}: compatibility mode (--compat {compat}) {why}")
    speed = make_speed_model(o["speed_model"])  # a file is read and checked before any run
    slowest = getattr(speed, "slowest", None)  # every policy against it too (LAS's quantum), before the first run
    if callable(slowest):
        for cls in classes.values():
            cls.check_speed(slowest())
    failure_model = _failure_model(o["failures"], o["retries"], o["no_retry_within"], o["validation_minutes"],
                                   o["validation_gpus"], o["keep_progress"])
    make_power = _power_manager(o["power"], o["ces_rule"], o["ces_preset"], o["buffer"], o["risk"],
                                o["boot_seconds"], o["power_model"], o["holidays"], o["events"])
    check_seed(o["seed"])  # (here too: a sweep checks its cells' options before any cell runs)
    for option in ("start", "end"):  # their syntax now (the trace's time zone places them once it is read)
        if o[option] is not None:
            wall_instant(o[option], f"--{option}", "UTC", True)
    placement = o["placement"]
    if o["relax_after"] is not None:
        if placement.startswith("relax:"):
            raise ConfigError(f"--relax-after: --placement {placement} already gives the time to wait; give it once")
        if placement != "relax":
            raise ConfigError(f"--relax-after needs --placement relax (got --placement {placement})")
        placement = f"relax:{o['relax_after']}"
    return Settings(names, classes, placement, speed, failure_model, make_power)


@app.command()
@click.argument("trace_path", type=PATH, metavar="TRACE")
@click.option("--policy", "-p", default="fifo", show_default=True, help="Policy, or several comma-separated "
              "(fifo,sjf,qssf).")
@click.option("--placement", default="consolidate", show_default=True, help="Placement (see `dlcluster policies`); "
              "relax:T waits T s for consolidation.")
@click.option("--relax-after", type=int, help="Seconds for --placement relax (same as relax:T).")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of random choices (random placement): same "
              "seed, same output.")
@click.option("--output", "-o", type=PATH, required=True, help="Output folder (one subfolder per policy if several).")
@click.option("--cluster", type=PATH, help="Cluster spec file (default: the trace's own).")
@click.option("--cluster-date", help="Day of a Helios GPU-count file to use as spec.")
@click.option("--cpus-per-gpu", type=click.IntRange(min=1), help="Model CPUs: every node gets N × its GPUs CPUs (for "
              "a spec without CPUs); jobs then also need their cpu_num.")
@click.option("--start", help="Keep jobs submitted at or after this time, 'YYYY-MM-DD[ HH:MM:SS]' on the trace's wall "
              "clock (its time zone, not the machine's).")
@click.option("--end", help="Keep jobs submitted at or before this time (as --start).")
@click.option("--compat", help="Reproduce a published simulator: helios-artifact (fifo, sjf, qssf, srtf; consolidate "
              "placement only).")
@click.option("--estimates", help="Predicted durations: a CSV job_id,duration (or the artifact's jobname,priority) in "
              "seconds, or a built-in estimator that predicts each job at its simulated submission from the jobs "
              "ended in the simulation: history (mean duration of the user's earlier jobs), lgbm (LightGBM, retrained "
              "daily) or oracle (true duration). Required by qssf and qssf-easy, used by fifo-easy if given.")
@click.option("--load", "load_factor", type=float, default=1.0, show_default=True, help="Divide inter-arrival times "
              "by this factor (2 = arrivals twice as dense; durations unchanged).")
@click.option("--pooled", is_flag=True, help="Share the whole cluster as one VC (every job runs there, whatever its "
              "VC).")
@click.option("--skip-unknown-vcs", "skip_unknown", is_flag=True, help="Count jobs of VCs missing from the spec as "
              "unschedulable.")
@click.option("--csv", is_flag=True, help="Also write jobs.csv and timeline.csv.")
@click.option("--power", default="none", show_default=True, help="Power: none; on (every node always on, energy "
              "reported); or ces (a controller powers idle nodes off from a demand forecast; nodes boot for waiting "
              "jobs).")
@click.option("--ces-rule", default="helios", show_default=True, help="ces controller: helios (the study's rule) or "
              "quantile (keep the forecast peak's 1-risk quantile powered).")
@click.option("--ces-preset", help="helios rule hyperparameters: philly (the default), venus, earth, saturn, uranus.")
@ces_options
@click.option("--boot-seconds", type=click.IntRange(min=0), help="Seconds from power-on until a node hosts jobs, "
              "at most 86,400 (default: the power model's, 300).")
@click.option("--power-model", type=PATH, help="TOML file of node watts by state and boot seconds (see "
              "docs/ces.md); default: an 8×V100 server.")
@click.option("--failures", default="none", show_default=True, help="none, or replay: each job ends as the trace says "
              "(its status), failed jobs may be retried, and the summary counts GPU time lost.")
@click.option("--retries", type=click.IntRange(min=0), default=0, show_default=True, help="replay: resubmit a failed "
              "job up to N times, each attempt with its own run time (Philly's recorded attempts, else the same run).")
@click.option("--no-retry-within", type=float, help="replay: minutes; do not retry a job whose attempt failed this "
              "early.")
@click.option("--validation-minutes", type=float, help="replay: run every job first for up to V minutes on one GPU of "
              "a validation pool; jobs that fail there never reach the cluster.")
@click.option("--validation-gpus", type=click.IntRange(min=0), default=0, show_default=True, help="replay: GPUs of "
              "the validation pool.")
@click.option("--validation-keeps-progress", "keep_progress", is_flag=True, help="replay: a validated job goes on "
              "from where validation left it (default: it starts over).")
@click.option("--speed-model", default="none", show_default=True, help="Job speed by placement: none (full speed "
              "always), philly (slower when spread over more servers than needed or sharing one; factors from the "
              "Philly study) or a TOML file of factors (docs/simulator.md).")
@click.option("--by-vc", is_flag=True, help="Also print one row per VC and policy.")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON instead of tables (several policies: "
              "one object of summaries by policy).")
@trace_options
def simulate(
    trace_path: Path,
    policy: str,
    placement: str,
    relax_after: int | None,
    seed: int,
    output: Path,
    cluster: Path | None,
    cluster_date: str | None,
    cpus_per_gpu: int | None,
    start: str | None,
    end: str | None,
    compat: str | None,
    estimates: str | None,
    load_factor: float,
    pooled: bool,
    skip_unknown: bool,
    csv: bool,
    power: str,
    ces_rule: str,
    ces_preset: str | None,
    buffer: int | None,
    risk: float | None,
    boot_seconds: int | None,
    power_model: Path | None,
    holidays: str | None,
    events: str | None,
    failures: str,
    retries: int,
    no_retry_within: float | None,
    validation_minutes: float | None,
    validation_gpus: int,
    keep_progress: bool,
    speed_model: str,
    by_vc: bool,
    as_json: bool,
    fmt: str | None,
    lenient: bool,
    mapping: str | None,
    time_unit: str | None,
    tz: str | None,
) -> None:
    """Simulate scheduling policies on a trace; write jobs, timeline and placements (Parquet) and summary.json."""
    from dlcluster.predict.online import OnlineEstimates
    from dlcluster.sim import simulate as run

    # (locals() here are exactly the command's parameters: settings checks them as the sweep's cells are checked)
    names, classes, placement, speed, failure_model, make_power = settings(locals())
    output_folder(output, trace_path, cluster, power_model,
                  Path(speed_model) if speed_model not in ("philly", "none") else None)
    extra: dict[str, Any] = {"cluster_date": cluster_date} if cluster_date and cluster is None else {}
    trace = _simulable(load(trace_path, fmt, lenient=lenient, mapping=mapping, time_unit=time_unit, tz=tz, **extra),
                       lenient, trace_path)
    if failure_model is not None:
        _note_nothing_to_replay(trace, trace_path)
    if cluster is not None:
        from dlcluster.io.cluster_spec import read_cluster_spec

        spec = read_cluster_spec(cluster, cluster_date)
    elif trace.cluster is not None:
        spec = trace.cluster
    else:
        raise ConfigError(f"{trace_path} carries no cluster spec; pass --cluster FILE")
    if cpus_per_gpu is not None:
        if spec.cpus is not None:
            raise ConfigError(f"--cpus-per-gpu: the cluster spec ({spec.source or trace_path}) already gives CPUs per node")
        spec = spec.with_cpus_per_gpu(cpus_per_gpu)
    wall = compat is not None
    window = submit_window(start, end, trace.timezone, wall)
    # a built-in estimator runs inside each simulation (online); a file's estimates are fixed up front
    online = estimates is not None and is_estimator_name(estimates)
    est = read_estimates(estimates) if estimates is not None and not online else None
    if est is not None:
        _note_strays(est, trace, str(estimates), trace_path)
    readers = [name for name in names if classes[name].needs_estimates or classes[name].uses_estimates]
    # the run of the first policy checks the estimates before it writes anything; a later one, after the earlier
    # runs were written: check them here then
    if est is not None and readers and readers[0] != names[0]:
        from dlcluster.sim.prepare import prepare

        with _unknown_vcs_hint():
            simulated = prepare(trace.jobs, spec, compat=compat is not None, pooled=pooled,
                                unknown_vc="unschedulable" if skip_unknown else "error", window=window,
                                timezone=trace.timezone, load=load_factor, source=str(trace_path)).jobs["job_id"]
        _check_estimates_cover(simulated, est, str(estimates))
    console = Console(stderr=True)
    summaries: dict[str, dict[str, Any]] = {}
    blocked = in_the_way(output, [f"{name}/" for name in names], _earlier_run(output)) if len(names) > 1 else None
    if blocked is not None:  # (found before the runs, not once they are done)
        raise ConfigError(f"--output {output}: {blocked} is in the way (not a folder of an earlier simulate run); "
                          "move it, or choose another output folder")
    # every policy's files are written into a staging folder, which replaces the earlier run (as it is then: another
    # run may have written the folder meanwhile) only once all are there
    with atomic_folder(output, lambda: _earlier_run(output)) as staged, _unknown_vcs_hint(), \
            progress_bar(console) as bar:
        for name in names:
            task = bar.add_task(name, total=None)

            def progress(what: str, done: int, total: int | None, task: Any = task, name: str = name) -> None:
                bar.update(task, completed=done, total=total, description=f"{name}: {what} done")

            cls = classes[name]
            observer = (OnlineEstimates(make_estimator(cast(str, estimates)), trace.jobs)
                        if online and (cls.needs_estimates or cls.uses_estimates) else None)
            manager, model = make_power() if make_power is not None else (None, None)
            observers = [o for o in (observer, manager) if o is not None]
            result = run(trace.jobs, spec, name, placement=placement, compat=compat, estimates=est, pooled=pooled,
                         unknown_vc="unschedulable" if skip_unknown else "error", window=window,
                         timezone=trace.timezone, load=load_factor, seed=seed, source=str(trace_path),
                         observers=observers, power=model, speed=speed, failures=failure_model,
                         attempts=trace.attempts if failure_model is not None else None,
                         estimates_source=str(estimates) if est is not None else None,
                         progress=progress)
            if observer is not None:
                result.summary["estimates"] = {"source": estimates, **observer.summary()}
            if manager is not None:
                result.summary["energy"]["controller"] = manager.describe()
            elif est is not None and (cls.needs_estimates or cls.uses_estimates):
                result.summary["estimates"] = {"source": estimates, **estimates_quality(est, result.jobs, trace.jobs)}
            _write_outputs(result, staged / name if len(names) > 1 else staged, csv)
            summaries[name] = result.summary
    if as_json:
        echo(json.dumps(summaries[names[0]] if len(names) == 1 else summaries))
    else:
        out = Console()
        for table in simulate_tables(summaries, out.width, by_vc):
            out.print(table)
            out.print()
        energy = any("energy" in summary for summary in summaries.values())
        out.print(LEGEND + (ENERGY_LEGEND if energy else ""), highlight=False)
    overall = summaries[names[0]]["overall"]
    if overall["jobs"] == 0:  # an empty table must not pass for a result
        why = (f"{overall['unschedulable']:,} job(s) could not run on this cluster" if overall.get("unschedulable")
               else "the trace holds no GPU job" + (" submitted between --start and --end" if window else ""))
        console.print(f"note: no job was simulated: {why}", soft_wrap=True, highlight=False)
    walls = ", ".join(f"{name} {s['wall_seconds']:.2f} s" for name, s in summaries.items())
    console.print(f"wrote {output} (simulated in {walls})", soft_wrap=True, highlight=False)


@contextlib.contextmanager
def _unknown_vcs_hint() -> Iterator[None]:
    """Say what to do about jobs whose VC the cluster spec lacks (e.g. pods labelled by QoS class)."""
    try:
        yield
    except UnknownVCError as exc:
        raise InputError(f"{exc.detail}; --pooled runs every job on the whole cluster as one VC, --skip-unknown-vcs "
                         "counts such jobs as unschedulable", path=exc.path, field=exc.field) from None


def _need(flags: list[str]) -> str:
    """'--a needs' or '--a, --b need'."""
    return f"{', '.join(flags)} {'needs' if len(flags) == 1 else 'need'}"


def _minutes(option: str, minutes: float | None) -> int | None:
    """``minutes`` as whole seconds, or None; a value that is not a number of minutes up to 100 years is an error."""
    from dlcluster.io._common import MAX_SECONDS

    if minutes is None:
        return None
    if not (math.isfinite(minutes) and abs(minutes) * 60 <= MAX_SECONDS):
        raise ConfigError(f"{option} must be a number of minutes up to {MAX_SECONDS // 60:,} (100 years), "
                          f"got {minutes}")
    if minutes > 0 and round(minutes * 60) == 0:  # (refused below as "not positive", which it is)
        raise ConfigError(f"{option} {minutes:g} is less than a second, and the clock counts whole seconds")
    return round(minutes * 60)


def _note_nothing_to_replay(trace: Trace, path: Path) -> None:
    """A note when ``--failures replay`` would replay nothing: no job of the trace failed (or none has a status), and
    no job has more than one recorded attempt (all but a job's last attempt failed)."""
    import polars as pl

    from dlcluster.cli import err_console
    from dlcluster.sim.failures import FAILED

    status = trace.jobs["status"].cast(pl.String)
    retried = trace.attempts is not None and bool(trace.attempts["job_id"].is_duplicated().any())
    if not status.is_in(FAILED).any() and not retried:
        what = "records no job outcome (status)" if status.is_in(["completed", "cancelled"]).sum() == 0 else \
            "records no failed job"
        err_console.print(f"note: {path} {what}: --failures replay has no failure to replay", soft_wrap=True)


def _failure_model(failures: str, retries: int, no_retry_within: float | None, validation_minutes: float | None,
                   validation_gpus: int, keep_progress: bool) -> FailureModel | None:
    """The failure model of ``--failures replay`` and its options (None for ``--failures none``)."""
    from dlcluster.sim.failures import FailureModel

    if failures not in ("none", "replay"):
        raise ConfigError(f"--failures {failures!r}: choose none or replay")
    given = {"--retries": retries != 0, "--no-retry-within": no_retry_within is not None,
             "--validation-minutes": validation_minutes is not None, "--validation-gpus": validation_gpus != 0,
             "--validation-keeps-progress": keep_progress}
    if failures == "none":
        used = [flag for flag, set_ in given.items() if set_]
        if used:
            raise ConfigError(f"{_need(used)} --failures replay")
        return None
    model = FailureModel(retries=retries, no_retry_within=_minutes("--no-retry-within", no_retry_within),
                         validation_seconds=_minutes("--validation-minutes", validation_minutes),
                         validation_gpus=validation_gpus, keep_progress=keep_progress)
    # options that would be ignored are refused, as the ones above
    if no_retry_within is not None and retries == 0:
        raise ConfigError("--no-retry-within limits retries: it needs --retries N")
    if keep_progress and not model.validates:
        raise ConfigError("--validation-keeps-progress needs --validation-minutes and --validation-gpus")
    return model


def _power_manager(power: str, rule: str, preset: str | None, buffer: int | None, risk: float | None,
                   boot_seconds: int | None, power_model: Path | None, holidays: str | None, events: str | None,
                   ) -> Callable[[], tuple[PowerManager | None, PowerModel]] | None:
    """A factory of a fresh power manager (None for ``--power on``) and the power model, per run; None for
    ``--power none``. Checks every option before any run."""
    if power not in ("none", "on", "ces"):
        raise ConfigError(f"--power {power!r}: choose none, on or ces")
    ces_only = {"--ces-rule": rule != "helios", "--ces-preset": preset is not None, "--buffer": buffer is not None,
                "--risk": risk is not None, "--holidays": holidays is not None, "--events": events is not None,
                # (with --power on no node is ever off, so none boots)
                "--boot-seconds": boot_seconds is not None}
    model_only = {"--power-model": power_model is not None}
    for flags, needed, allowed in ((ces_only, "--power ces", ("ces",)), (model_only, "--power on or ces", ("on", "ces"))):
        given = [flag for flag, set_ in flags.items() if set_]
        if given and power not in allowed:
            raise ConfigError(f"{_need(given)} {needed}")
    if power == "none":
        return None
    from dlcluster.cli.ces_cmd import PRESET_NAMES
    from dlcluster.predict.forecast import Calendar, parse_events
    from dlcluster.services.ces.closed_loop import PowerManager
    from dlcluster.services.ces.rules import make_controller
    from dlcluster.sim.power import MAX_BOOT_SECONDS, PowerModel, read_power_model

    if preset is not None and preset not in PRESET_NAMES:
        raise ConfigError(f"--ces-preset {preset!r}: choose one of {', '.join(PRESET_NAMES)}")
    if boot_seconds is not None and boot_seconds > MAX_BOOT_SECONDS:  # (the option's, not a power-model file's)
        raise ConfigError(f"--boot-seconds must be at most {MAX_BOOT_SECONDS:,} (one day), got {boot_seconds:,}")
    if power_model is not None:
        model = read_power_model(power_model, boot_seconds)
    else:
        model = PowerModel() if boot_seconds is None else PowerModel(boot_seconds=boot_seconds)
    if power == "on":
        return lambda: (None, model)
    make_controller(rule, preset, buffer=buffer, risk=risk)  # checks the values now
    calendar = Calendar(holidays, parse_events(events))

    def make() -> tuple[PowerManager | None, PowerModel]:
        return PowerManager(make_controller(rule, preset, buffer=buffer, risk=risk), boot_seconds=model.boot_seconds,
                            calendar=calendar), model

    return make


@app.command()
def policies() -> None:
    """List scheduling policies and placements."""
    from dlcluster.sim.placement import PLACEMENTS
    from dlcluster.sim.policies import POLICIES

    console = Console()
    table = Table(title="policies", show_header=False)
    for name, cls in POLICIES.items():
        queue = "queue kept sorted" if cls.static else "queue re-sorted every pass"
        table.add_row(f"{name}:{cls.parameter.upper()}" if cls.parameter else name, cls.help, queue)
    console.print(table)
    table = Table(title="placements", show_header=False)
    first: dict[type, str] = {}
    for name, cls in PLACEMENTS.items():
        alias = first.setdefault(cls, name)
        table.add_row("relax:T" if name == "relax" else name, cls.help if alias == name else f"same as {alias}")
    console.print(table)
