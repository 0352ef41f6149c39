"""Regression tests for defects found reviewing the simulator as a user (one test per defect)."""

from __future__ import annotations

import errno
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from test_sim_helpers import SUMMARY_KEYS, cli, interruptible, jobs, spec, write_trace

from dlcluster.cli import INTERRUPTED, Terminated, main, raise_terminated, simulate_cmd
from dlcluster.errors import ConfigError, InputError
from dlcluster.sim import simulate
from dlcluster.sim.results import _jain

OUTPUTS = ("jobs.parquet", "timeline.parquet", "placements.parquet", "summary.json")


def test_fairness_does_not_depend_on_the_order_users_come_in() -> None:
    # group_by("user") returns users in a different order on every run; the float sums must not care
    values = np.random.default_rng(5).lognormal(0, 2, 2_000)
    expected = _jain(pl.Series(values))
    for seed in range(5):
        assert _jain(pl.Series(np.random.default_rng(seed).permutation(values))) == expected


def test_fairness_of_a_run_is_the_same_bits_every_time() -> None:
    # (a user's mean slowdown came from Polars' parallel group_by, which adds floats in a varying order: the summary's
    # fairness changed in its last bits from one run to the next); each user's slowdowns are added in sorted order
    from dlcluster.sim.results import _stats

    rng = np.random.default_rng(7)
    n = 20_000
    table = pl.DataFrame({"user": rng.integers(0, 300, n).astype(str), "slowdown": rng.lognormal(0, 2, n),
                          "jct": rng.integers(1, 10**6, n), "queue_delay": rng.integers(0, 10**5, n),
                          "bounded_slowdown": rng.lognormal(0, 1, n), "submit": rng.integers(0, 10**6, n),
                          "preemptions": np.zeros(n, dtype=np.int64)}).with_columns(end=pl.col("submit") + pl.col("jct"))
    means = [np.cumsum(np.sort(part["slowdown"].to_numpy()))[-1] / part.height
             for _, part in table.group_by("user")]
    assert _stats(table, 1.0, 8, 0)["fairness"] == _jain(pl.Series(means))


def test_empty_run_still_has_every_summary_key() -> None:
    result = simulate(jobs(), spec(v=(8,)), "fifo")
    assert SUMMARY_KEYS <= set(result.summary["overall"])
    assert result.summary["overall"]["jobs"] == 0 and result.summary["overall"]["mean_jct"] is None


def test_vc_whose_every_job_is_too_big_is_listed_with_its_count() -> None:
    result = simulate(jobs(("a", "v", 16, 0, 10), ("b", "w", 1, 0, 10)), spec(v=(8,), w=(8,)), "fifo")
    assert set(result.summary["vcs"]) == {"v", "w"}
    assert result.summary["vcs"]["v"]["unschedulable"] == 1 and result.summary["vcs"]["v"]["jobs"] == 0
    assert SUMMARY_KEYS <= set(result.summary["vcs"]["v"])


@pytest.mark.parametrize(
    ("table", "message"),
    [
        (jobs(("a", "v", 1, 0, 10), ("b", "v", 1, 5, -50)), "<jobs>, field 'duration': job 'b' has a negative duration"),
        (jobs(("a", "v", 1, None, 10)),
         "<jobs>, field 'submit_time': job 'a' has no submit time; a simulation needs one for every GPU job"),
    ],
)
def test_impossible_job_times_are_one_line_errors(table: pl.DataFrame, message: str) -> None:
    with pytest.raises(InputError) as info:
        simulate(table, spec(v=(8,)), "fifo")
    assert str(info.value) == message


@pytest.mark.parametrize("load", [float("nan"), float("inf")])
def test_load_must_be_finite(load: float) -> None:
    with pytest.raises(ConfigError, match="--load must be a positive finite number"):
        simulate(jobs(("a", "v", 1, 0, 10), ("b", "v", 1, 5, 10)), spec(v=(8,)), "fifo", load=load)


@pytest.mark.parametrize(("args", "message"), [
    (["--failures", "replay", "--no-retry-within", "nan"],
     "error: --no-retry-within must be a number of minutes up to 52,596,000 (100 years), got nan\n"),
    (["--failures", "replay", "--retries", "2", "--no-retry-within", "1e300"],
     "error: --no-retry-within must be a number of minutes up to 52,596,000 (100 years), got 1e+300\n"),
    (["--failures", "replay", "--validation-minutes", "inf", "--validation-gpus", "4"],
     "error: --validation-minutes must be a number of minutes up to 52,596,000 (100 years), got inf\n"),
    # a hundred million retries of one failed job ran for more than ten minutes
    (["--failures", "replay", "--retries", "100000000"], "error: --retries must be from 0 to 1,000, got 100000000\n"),
    # a boot of a century kept the controller ticking for a century of simulated time
    (["--power", "ces", "--boot-seconds", "3155760000"],
     "error: --boot-seconds must be at most 86,400 (one day), got 3,155,760,000\n"),
    # options that would change nothing (they were accepted and ignored)
    (["--failures", "replay", "--no-retry-within", "5"],
     "error: --no-retry-within limits retries: it needs --retries N\n"),
    (["--failures", "replay", "--validation-keeps-progress"],
     "error: --validation-keeps-progress needs --validation-minutes and --validation-gpus\n"),
    (["--placement", "relax:10", "--relax-after", "20"],
     "error: --relax-after: --placement relax:10 already gives the time to wait; give it once\n"),
    (["-p", "fifo,sjf", "--estimates", "oracle"],
     "error: --estimates: no policy given (fifo, sjf) reads duration estimates (`dlcluster policies` tells which do)\n"),
    # a pool of 1e14 GPUs ran out of memory; one of 1e8 took 17 s and 3.3 GB for a few thousand jobs
    (["--failures", "replay", "--validation-minutes", "5", "--validation-gpus", "100001"],
     "error: --validation-gpus must be at most 100,000 (the pool is a VC of one-GPU nodes, and a cluster holds at "
     "most that many nodes), got 100,001\n"),
    # (nodes of 1e17 CPUs were simulated, and reported, without a word)
    (["--cpus-per-gpu", "125001"],
     "error: --cpus-per-gpu 125,001: a node of 8 GPUs would have 1,000,008 CPUs; at most 1,000,000 are supported\n"),
    # (a negative seed was run and written to the summary; synth refused it)
    (["--seed", "-1", "--placement", "random"], "error: --seed must be a non-negative integer, got -1\n"),
])
def test_option_values_beyond_their_range_are_one_line_errors(tmp_path: Path, args: list[str], message: str) -> None:
    trace = write_trace(tmp_path / "t.parquet", jobs(("a", "v", 1, 0, 10)), spec(v=(8,)))
    res = cli("simulate", str(trace), *args, "-o", str(tmp_path / "out"))
    assert (res.returncode, res.stderr) == (2, message)
    assert not (tmp_path / "out").exists()


def test_replaying_failures_of_a_trace_without_any_says_so(tmp_path: Path) -> None:
    # (the run went on without a word: every failure count 0, as if nothing had failed)
    trace = write_trace(tmp_path / "t.parquet", jobs(("a", "v", 1, 0, 10)), spec(v=(8,)))
    res = cli("simulate", str(trace), "--failures", "replay", "--retries", "1", "-o", str(tmp_path / "out"))
    assert res.returncode == 0
    assert f"note: {trace} records no failed job: --failures replay has no failure to replay\n" in res.stderr
    no_status = tmp_path / "t.csv"
    no_status.write_text("job_id,vc,gpu_num,submit_time,duration\na,v,1,0,10\n")
    cluster = tmp_path / "c.csv"
    cluster.write_text("vc,nodes,gpus_per_node\nv,1,8\n")
    res = cli("simulate", str(no_status), "--format", "csv", "--cluster", str(cluster), "--failures", "replay",
              "-o", str(tmp_path / "out2"))
    assert res.returncode == 0
    assert f"note: {no_status} records no job outcome (status): --failures replay has no failure to replay\n" \
        in res.stderr


def test_a_trace_whose_only_failures_are_recorded_attempts_gets_no_note(tmp_path: Path) -> None:
    # (a Philly log's job that passed at its second attempt: its first failed, and the note said none had)
    attempts = [{"start_time": start, "end_time": end, "detail": [{"ip": "m0", "gpus": ["gpu0"]}]}
                for start, end in (("2017-09-04 00:00:00", "2017-09-04 00:01:40"),
                                   ("2017-09-04 00:02:00", "2017-09-04 00:02:50"))]
    folder = tmp_path / "ph"
    folder.mkdir()
    (folder / "cluster_job_log").write_text(json.dumps([{"status": "Pass", "vc": "v", "jobid": "j", "user": "u",
                                                         "submitted_time": "2017-09-04 00:00:00",
                                                         "attempts": attempts}]))
    (folder / "cluster_machine_list").write_text("machineId, number of GPUs, single GPU mem\nm0,4,\n")
    res = cli("simulate", str(folder), "--pooled", "--failures", "replay", "-o", str(tmp_path / "out"))
    assert res.returncode == 0, res.stderr
    assert "note" not in res.stderr
    assert pl.read_parquet(tmp_path / "out" / "jobs.parquet")["status"].to_list() == ["failed"]


def test_a_reused_output_folder_holds_only_the_new_run(tmp_path: Path) -> None:
    # (an earlier run's policy folders, top-level tables and CSV copies stayed, and `report` read them as this run's)
    trace = write_trace(tmp_path / "t.parquet", jobs(("a", "v", 1, 0, 10)), spec(v=(8,)))
    out = tmp_path / "out"

    def run(*args: str) -> set[str]:
        assert cli("simulate", str(trace), *args, "-o", str(out)).returncode == 0
        return {str(p.relative_to(out)) for p in out.rglob("*")}

    run("-p", "fifo,sjf", "--csv")
    assert run("-p", "fifo,srtf") == {"fifo", "srtf", *(f"{p}/{f}" for p in ("fifo", "srtf") for f in (
        "jobs.parquet", "timeline.parquet", "placements.parquet", "summary.json"))}
    (out / "notes").mkdir()
    (out / "notes" / "mine.txt").write_text("keep\n")
    assert run("-p", "srtf", "--csv") == {"jobs.parquet", "timeline.parquet", "placements.parquet", "summary.json",
                                          "jobs.csv", "timeline.csv", "notes", "notes/mine.txt"}
    assert run("-p", "srtf") == {"jobs.parquet", "timeline.parquet", "placements.parquet", "summary.json", "notes",
                                 "notes/mine.txt"}
    # and back to several policies: the single run's files at the top go
    assert run("-p", "fifo,srtf") == {"fifo", "srtf", "notes", "notes/mine.txt", *(f"{p}/{f}" for p in ("fifo", "srtf")
                                      for f in ("jobs.parquet", "timeline.parquet", "placements.parquet", "summary.json"))}


@pytest.mark.parametrize("stop", [KeyboardInterrupt, Terminated, OSError(errno.ENOSPC, "No space left on device")])
def test_an_interrupted_or_failed_rerun_leaves_the_earlier_run_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                     stop: BaseException) -> None:
    # (the earlier run's policy folders were removed before the first policy ran: Ctrl-C left nothing, or a subset
    # that looked like a whole run; a full disk left a single run's new jobs.parquet beside its old summary)
    trace = write_trace(tmp_path / "t.parquet", jobs(("a", "v", 1, 0, 10)), spec(v=(8,)))
    out = tmp_path / "out"
    assert cli("simulate", str(trace), "-p", "fifo,sjf", "-o", str(out)).returncode == 0
    def contents() -> dict[Path, bytes | None]:
        return {p.relative_to(out): p.read_bytes() if p.is_file() else None for p in out.rglob("*")}

    before = contents()
    real = simulate_cmd._write_outputs

    def stopped(result: object, outdir: Path, csv: bool) -> None:
        real(result, outdir, csv)  # type: ignore[arg-type]
        raise stop

    monkeypatch.setattr(simulate_cmd, "_write_outputs", stopped)
    for policies in ("fifo,sjf", "fifo"):  # after the first new policy folder; a single run's files at the top
        with pytest.raises(SystemExit) as exit_:
            main(["simulate", str(trace), "-p", policies, "--load", "2", "-o", str(out)])
        assert exit_.value.code == {KeyboardInterrupt: 130, Terminated: 143}.get(stop, 2)
        assert contents() == before  # (and no staging folder left)


def test_output_that_is_a_file_is_a_one_line_error_before_the_run(tmp_path: Path) -> None:
    trace = write_trace(tmp_path / "t.parquet", jobs(("a", "v", 1, 0, 10)), spec(v=(8,)))
    target = tmp_path / "taken"
    target.write_text("keep me\n")
    res = cli("simulate", str(trace), "-o", str(target))
    assert res.returncode == 2
    assert res.stderr == f"error: --output {target}: exists and is not a folder\n"
    assert target.read_text() == "keep me\n"


def test_a_run_that_simulated_no_job_says_so(tmp_path: Path) -> None:
    trace = write_trace(tmp_path / "t.parquet", jobs(("a", "v", 1, 0, 10), ("b", "w", 1, 5, 10)), spec(v=(8,), w=(8,)))
    empty = cli("simulate", str(trace), "--start", "2030-01-01", "-o", str(tmp_path / "o1"))
    assert empty.returncode == 0
    assert "note: no job was simulated: the trace holds no GPU job submitted between --start and --end\n" in empty.stderr
    other = tmp_path / "other.csv"
    other.write_text("vc,nodes\nzz,1\n")
    none_fit = cli("simulate", str(trace), "--cluster", str(other), "--skip-unknown-vcs", "-o", str(tmp_path / "o2"))
    assert "note: no job was simulated: 2 job(s) could not run on this cluster\n" in none_fit.stderr
    ran = cli("simulate", str(trace), "-o", str(tmp_path / "o3"))
    assert ran.returncode == 0 and "note: no job" not in ran.stderr


def test_error_output_is_exactly_one_line(tmp_path: Path) -> None:
    # the progress bar used to print a blank line before the error when stderr is not a terminal
    trace = write_trace(tmp_path / "t.parquet", jobs(("a", "v", 1, 0, 10)), spec(v=(8,)))
    res = cli("simulate", str(trace), "-p", "qssf", "-o", str(tmp_path / "out"))
    assert res.returncode == 2
    assert res.stderr == "error: policy 'qssf' needs duration estimates (--estimates FILE, or --estimates history|lgbm|oracle)\n"


@pytest.mark.parametrize(("sig", "status"), [(signal.SIGINT, 130), (signal.SIGTERM, 143), (signal.SIGHUP, 129)])
def test_ctrl_c_or_sigterm_exits_and_leaves_no_output(tmp_path: Path, sig: signal.Signals, status: int) -> None:
    # (SIGTERM: kill, timeout, a batch scheduler's cancel; SIGHUP: the terminal closed; both ended the process before
    # its temporary files went)
    # hundreds of long 1-GPU jobs under LAS with a short quantum on one node: hours of simulation
    table = jobs(*((f"j{i}", "v", 1, i, 10_000_000) for i in range(400)))
    trace, out = write_trace(tmp_path / "t.parquet", table, spec(v=(8,))), tmp_path / "out"
    script = (f"import sys; sys.argv = ['dlcluster', 'simulate', {str(trace)!r}, '-p', 'las:61', '-o', {str(out)!r}]; "
              "from dlcluster.cli import run; print('ready', flush=True); run()")
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=interruptible)
    try:
        assert proc.stdout.readline() == "ready\n"
        time.sleep(1.0)  # inside main() now: whatever it is doing, Ctrl-C must end it cleanly
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == status, err
    assert err == INTERRUPTED + "\n"
    assert not out.exists() or not any(out.iterdir())


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGHUP])
def test_a_command_started_with_ctrl_c_or_sighup_ignored_keeps_ignoring_it(tmp_path: Path, sig: signal.Signals) -> None:
    # (`trap '' INT`, a script's `cmd &`: importing Polars took the "ignore" away, and Ctrl-C in the terminal ended
    # a background run; `nohup` ignores SIGHUP, which a command must then keep ignoring)
    table = jobs(*((f"j{i}", "v", 1, i, 10_000_000) for i in range(400)))
    trace, out = write_trace(tmp_path / "t.parquet", table, spec(v=(8,))), tmp_path / "out"
    script = (f"import signal, sys; signal.signal({int(sig)}, signal.SIG_IGN); "
              f"sys.argv = ['dlcluster', 'simulate', {str(trace)!r}, '-p', 'las:61', '-o', {str(out)!r}]; "
              "from dlcluster.cli import run; print('ready', flush=True); run()")
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline() == "ready\n"
        time.sleep(1.0)
        # the kernel's view: the signal (bit signum - 1 of the masks) ignored, not caught by a handler that may end
        # the run
        status = dict(line.split(":\t") for line in Path(f"/proc/{proc.pid}/status").read_text().splitlines()
                      if line.startswith(("SigIgn", "SigCgt")))
        bit = int(sig) - 1
        assert (int(status["SigIgn"], 16) >> bit & 1, int(status["SigCgt"], 16) >> bit & 1) == (1, 0)
        proc.send_signal(sig)
        time.sleep(1.0)
        assert proc.poll() is None  # still simulating
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 143, err


def test_a_sigterm_that_a_library_turns_into_a_plain_keyboardinterrupt_still_exits_143(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Ray's ray.wait raises KeyboardInterrupt for a signal whose handler raised while it waited: a Ray sweep stopped
    # by SIGTERM exited 130 when the signal landed there
    def interrupted_load(*args: object, **kwargs: object) -> None:
        try:
            raise_terminated(signal.SIGTERM, None)
        except KeyboardInterrupt:
            raise KeyboardInterrupt from None

    monkeypatch.setattr(simulate_cmd, "load", interrupted_load)
    with pytest.raises(SystemExit) as err:
        main(["simulate", str(tmp_path / "t.csv"), "-o", str(tmp_path / "out")])
    assert err.value.code == 143
    # the next command of the same process is not taken for one that a SIGTERM stopped
    def ctrl_c(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(simulate_cmd, "load", ctrl_c)
    with pytest.raises(SystemExit) as err:
        main(["simulate", str(tmp_path / "t.csv"), "-o", str(tmp_path / "out")])
    assert err.value.code == 130


def test_fairness_is_over_known_users_and_null_without_any() -> None:
    # one 1-GPU node: b waits 10 s behind a, so u2's slowdown is 2 and u1's is 1
    two = jobs(("a", "v", 1, 0, 10, "u1"), ("b", "v", 1, 0, 10, "u2"))
    fair = simulate(two, spec(v=(1,)), "fifo").summary["overall"]["fairness"]
    assert fair == pytest.approx((1 + 2) ** 2 / (2 * (1 + 4)))
    anonymous = two.with_columns(pl.lit(None, pl.String).alias("user"))
    assert simulate(anonymous, spec(v=(1,)), "fifo").summary["overall"]["fairness"] is None


@pytest.mark.parametrize("command", [["simulate"], ["ces"], ["predict", "eval"]])
def test_an_unwritable_output_folder_is_refused_before_any_work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                capsys: pytest.CaptureFixture,
                                                                command: list[str]) -> None:
    # (a read-only file system was found only once the run was done, after seconds or minutes of work)
    trace = write_trace(tmp_path / "t.parquet", jobs(("a", "v", 1, 0, 10)), spec(v=(8,)))
    monkeypatch.setattr("os.access", lambda path, mode: not mode & os.W_OK)  # (tests may run as root)

    def no_work(*args: object, **kwargs: object) -> None:
        raise AssertionError("the trace was read")

    monkeypatch.setattr("dlcluster.io.read_trace", no_work)
    with pytest.raises(SystemExit) as exit_:
        main([*command, str(trace), "-o", str(tmp_path / "out")])
    assert exit_.value.code == 2
    assert capsys.readouterr().err == f"error: --output {tmp_path / 'out'}: {tmp_path} is not writable\n"


def test_rerunning_into_a_folder_of_policies_replaces_them_however_a_policy_was_spelt(tmp_path: Path,
                                                                                       capsys: pytest.CaptureFixture
                                                                                       ) -> None:
    # (las:0300's folder holds a summary of las:300: a rerun refused it as in the way, a single run left it behind)
    trace = write_trace(tmp_path / "t.parquet", jobs(("a", "v", 1, 0, 10)), spec(v=(8,)))
    out = tmp_path / "out"
    for _ in range(2):
        assert cli("simulate", str(trace), "-p", "fifo,las:0300", "-o", str(out)).returncode == 0
    assert sorted(p.name for p in out.iterdir()) == ["fifo", "las:0300"]
    assert cli("simulate", str(trace), "-o", str(out)).returncode == 0
    assert sorted(p.name for p in out.iterdir()) == sorted(OUTPUTS)
    # a file where a policy's folder goes is refused before any run
    (out / "sjf").write_text("the user's\n")
    with pytest.raises(SystemExit) as exit_:
        main(["simulate", str(trace), "-p", "fifo,sjf", "-o", str(out)])
    assert exit_.value.code == 2
    assert capsys.readouterr().err == (f"error: --output {out}: sjf is in the way (not a folder of an earlier simulate "
                                       "run); move it, or choose another output folder\n")
    assert (out / "sjf").read_text() == "the user's\n"


def test_a_report_refuses_to_replace_the_folder_it_reads(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    # (`simulate -o tables`, then `report tables -o .`: the report replaced tables/, runs and all, with exit 0)
    trace = write_trace(tmp_path / "t.parquet", jobs(("a", "v", 1, 0, 10)), spec(v=(8,)))
    runs = tmp_path / "tables"
    assert cli("simulate", str(trace), "-p", "fifo,sjf", "-o", str(runs)).returncode == 0
    with pytest.raises(SystemExit) as exit_:
        main(["report", str(runs), "-o", str(tmp_path)])
    assert exit_.value.code == 2
    assert capsys.readouterr().err == (f"error: -o {tmp_path}: its tables/ holds the input {runs}, which the report "
                                       "replaces; choose another folder for the report\n")
    assert (runs / "fifo" / "summary.json").is_file()
    # a trace folder fitted and written into itself, likewise
    helios = tmp_path / "h"
    assert cli("synth", "--preset", "helios-venus", "--days", "1", "--load", "0.1", "--format", "helios", "-o",
               str(helios)).returncode == 0
    refit = cli("synth", "--fit", str(helios / "cluster_log.csv"), "--format", "helios", "-o", str(helios))
    assert refit.returncode == 2 and "holds the input" in refit.stderr
