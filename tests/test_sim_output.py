"""What ``dlcluster simulate`` prints: policies as rows in 80 columns, human time units, per-VC rows, JSON; the
utilisation over the busy period in the summary; every policy's inputs checked before the first run."""

from __future__ import annotations

import json
import re
from pathlib import Path

import polars as pl
import pytest
from test_sim_helpers import cli, jobs, spec, write_trace

from dlcluster.cli import main
from dlcluster.sim import simulate

EIGHT = ("fifo", "sjf", "qssf", "srtf", "las", "tiresias", "fifo-easy", "qssf-easy")
H = 3600

# v (one 8-GPU node): b waits for a; w (one 4-GPU node): e waits a minute for c, d comes two days later
ROWS = (("a", "v", 8, 0, 3 * H), ("b", "v", 8, 60, H), ("c", "w", 1, 0, 90), ("e", "w", 4, 30, 600),
        ("d", "w", 1, 2 * 86400, 86400))


def _trace(tmp_path: Path) -> Path:
    return write_trace(tmp_path / "t.parquet", jobs(*ROWS), spec(v=(8,), w=(4,)))


def _covered_seconds(intervals: list[tuple[int, int]]) -> int:
    """Seconds covered by any [start, end): counted one by one (slow, independent of the library)."""
    return len({t for s, e in intervals for t in range(s, e)})


def _human(seconds: float) -> str:
    """The unit the table should use, written out by hand for this test's magnitudes."""
    for unit, size, below in (("s", 1, 60), ("min", 60, 3600), ("h", H, 48 * H), ("d", 86400, float("inf"))):
        if seconds < below:
            value = seconds / size
            return f"{value:.1f} {unit}" if value < 100 else f"{value:,.0f} {unit}"
    raise AssertionError


def _cells(line: str) -> list[str]:
    """A table row's cells: columns are at least two spaces apart, values hold one space at most (a row that starts
    with spaces has an empty first cell)."""
    return re.split(r" {2,}", line.rstrip())


def _quantile(values: list[float], q: float) -> float:
    v = sorted(values)
    pos = q * (len(v) - 1)
    lo = int(pos)
    return v[lo] + (v[min(lo + 1, len(v) - 1)] - v[lo]) * (pos - lo)


# --- summary fields -----------------------------------------------------------------------------------------------

def test_busy_period_and_its_utilisation_against_a_direct_count() -> None:
    result = simulate(jobs(*ROWS), spec(v=(8,), w=(4,)), "fifo")
    table = result.jobs
    for vc, gpus in (("v", 8), ("w", 4)):
        part = table.filter(pl.col("vc") == vc)
        period = _covered_seconds(list(zip(part["submit"], part["end"], strict=True)))
        busy = (part["gpu_num"] * (part["end"] - part["start"])).sum()  # fifo: no preemption, one run each
        got = result.summary["vcs"][vc]
        assert got["busy_period"] == period
        assert got["utilization_busy"] == pytest.approx(busy / (gpus * period))
        assert got["utilization"] == pytest.approx(busy / (gpus * (part["end"].max() - part["submit"].min())))
    # by hand: v busy [0, 4 h) fully used; w busy 690 s then 1 day
    assert result.summary["vcs"]["v"]["busy_period"] == 4 * H
    assert result.summary["vcs"]["w"]["busy_period"] == 690 + 86400
    assert result.summary["vcs"]["v"]["utilization_busy"] == pytest.approx(1.0)
    # overall: each VC's GPUs count while that VC had jobs
    busy_all = (table["gpu_num"] * (table["end"] - table["start"])).sum()
    overall = result.summary["overall"]
    assert overall["utilization_busy"] == pytest.approx(busy_all / (8 * 4 * H + 4 * (690 + 86400)))
    assert overall["busy_period"] == _covered_seconds(list(zip(table["submit"], table["end"], strict=True)))
    assert overall["utilization"] == pytest.approx(busy_all / (12 * (table["end"].max() - table["submit"].min())))


def test_busy_period_is_null_where_nothing_ran() -> None:
    result = simulate(jobs(("a", "v", 16, 0, 10), ("b", "w", 1, 0, 10)), spec(v=(8,), w=(4,)), "fifo")
    assert result.summary["vcs"]["v"]["jobs"] == 0
    assert result.summary["vcs"]["v"]["busy_period"] is None and result.summary["vcs"]["v"]["utilization_busy"] is None
    assert result.summary["overall"]["utilization_busy"] == pytest.approx(1 / 4)  # w alone: 1 of 4 GPUs, 10 s
    # v is listed, so its idle GPUs count in the overall capacity (they were left out: 4 GPUs, utilisation 1 / 4)
    assert result.summary["overall"]["gpus"] == 12 and result.summary["overall"]["utilization"] == pytest.approx(1 / 12)


# --- the terminal tables ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("columns", [80, 60])
def test_eight_policies_fit_the_terminal(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                         capsys: pytest.CaptureFixture[str], columns: int) -> None:
    trace = _trace(tmp_path)
    monkeypatch.setenv("COLUMNS", str(columns))
    main(["simulate", str(trace), "-p", ",".join(EIGHT), "--estimates", "oracle", "--by-vc", "-o",
          str(tmp_path / "out")])
    lines = capsys.readouterr().out.splitlines()
    assert max(len(line) for line in lines) <= columns, "\n".join(lines)
    cells = [_cells(line) for line in lines]
    vc_tables = len([line for line in lines if line.startswith("per VC")])  # more than one when narrow
    assert vc_tables >= 1
    for name in EIGHT:  # a row of its own in each whole-cluster table and per VC, its name in full
        assert len([c for c in cells if c[0] == name]) >= 3, (name, lines)
        assert len([c for c in cells if len(c) > 2 and c[1] == name]) == 2 * vc_tables, (name, lines)
    # each per-VC table names each VC once, on its first policy's row
    assert [c[0] for c in cells if len(c) > 2 and c[1] in EIGHT and c[0]] == ["v", "w"] * vc_tables


def test_whole_cluster_row_in_human_units(tmp_path: Path) -> None:
    trace, out = _trace(tmp_path), tmp_path / "out"
    res = cli("simulate", str(trace), "-p", "fifo", "-o", str(out))
    assert res.returncode == 0, res.stderr
    table = pl.read_parquet(out / "jobs.parquet")
    jct, queue = table["jct"].to_list(), table["queue_delay"].to_list()
    busy = (table["gpu_num"] * (table["end"] - table["start"])).sum()
    makespan = table["end"].max() - table["submit"].min()
    v, w = table.filter(pl.col("vc") == "v"), table.filter(pl.col("vc") == "w")
    busy_period = {"v": _covered_seconds(list(zip(v["submit"], v["end"], strict=True))),
                   "w": _covered_seconds(list(zip(w["submit"], w["end"], strict=True)))}
    expected = ["fifo", f"{table.height}", _human(sum(jct) / len(jct)), _human(_quantile(jct, 0.99)),
                _human(sum(queue) / len(queue)), _human(_quantile(queue, 0.99)), f"{busy / (12 * makespan):.3f}",
                f"{busy / (8 * busy_period['v'] + 4 * busy_period['w']):.3f}"]
    first = next(_cells(line) for line in res.stdout.splitlines() if line.startswith("fifo"))
    assert first == expected
    # by hand: JCTs 10,800, 14,340, 90, 660, 86,400 s; queueing 0, 10,740, 0, 60, 0 s
    assert expected[2:6] == ["6.2 h", "23.2 h", "36.0 min", "2.9 h"]
    runs = [_cells(line) for line in res.stdout.splitlines() if line.startswith("fifo")][2]
    covered = _covered_seconds(list(zip(table["submit"], table["end"], strict=True)))
    assert runs == ["fifo", "0", "0", _human(makespan), _human(covered)]  # unschedulable, preemptions, spans
    assert runs[3:] == ["3.0 d", "28.0 h"]  # [0, 4 h) and [2 d, 3 d)


def test_by_vc_rows_against_the_jobs_table(tmp_path: Path) -> None:
    trace, out = _trace(tmp_path), tmp_path / "out"
    res = cli("simulate", str(trace), "-p", "fifo,sjf", "--by-vc", "-o", str(out))
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("per VC"))
    rows = [c for line in lines[start:] if len(c := _cells(line)) > 2 and c[1] in ("fifo", "sjf")]
    assert [r[:2] for r in rows] == [["v", "fifo"], ["", "sjf"], ["w", "fifo"], ["", "sjf"]]
    for vc, gpus, (row_fifo, row_sjf) in (("v", 8, rows[:2]), ("w", 4, rows[2:])):
        for policy, row in (("fifo", row_fifo), ("sjf", row_sjf)):
            part = pl.read_parquet(out / policy / "jobs.parquet").filter(pl.col("vc") == vc)
            q, jct = part["queue_delay"].to_list(), part["jct"].to_list()
            busy = (part["gpu_num"] * (part["end"] - part["start"])).sum()
            period = _covered_seconds(list(zip(part["submit"], part["end"], strict=True)))
            span = part["end"].max() - part["submit"].min()
            assert row[2:] == [str(gpus), str(part.height), _human(sum(q) / len(q)), _human(_quantile(q, 0.99)),
                               _human(sum(jct) / len(jct)), _human(_quantile(jct, 0.99)),
                               f"{busy / (gpus * span):.3f}", f"{busy / (gpus * period):.3f}"]
    # w under fifo, by hand: e waited 60 s for c; busy util (90 + 2,400 + 86,400) / (4 × 87,090)
    assert rows[2][4] == "20.0 s" and rows[2][9] == f"{(90 + 2400 + 86400) / (4 * 87090):.3f}" == "0.255"


def test_json_prints_the_summaries(tmp_path: Path) -> None:
    trace = _trace(tmp_path)
    res = cli("simulate", str(trace), "-p", "sjf", "--json", "-o", str(tmp_path / "one"))
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout) == json.loads((tmp_path / "one/summary.json").read_text())
    res = cli("simulate", str(trace), "-p", "fifo,srtf", "--json", "-o", str(tmp_path / "two"))
    assert res.returncode == 0, res.stderr
    printed = json.loads(res.stdout)
    assert list(printed) == ["fifo", "srtf"]
    for name in printed:
        assert printed[name] == json.loads((tmp_path / "two" / name / "summary.json").read_text())


# --- every policy's inputs checked before the first run -----------------------------------------------------------

@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["-p", "fifo,sjf,qssf,srtf"],
         "error: policy 'qssf' needs duration estimates (--estimates FILE, or --estimates history|lgbm|oracle)"),
        (["-p", "fifo,sjf,qssf-easy"],
         "error: policy 'qssf-easy' needs duration estimates (--estimates FILE, or --estimates history|lgbm|oracle)"),
        (["-p", "fifo,las", "--compat", "helios-artifact"],
         "error: policy 'las' does not exist in compatibility mode helios-artifact; choose one of: fifo, sjf, qssf, "
         "srtf"),
    ],
)
def test_a_later_policy_that_cannot_run_fails_before_anything_is_written(tmp_path: Path, args: list[str],
                                                                        message: str) -> None:
    out = tmp_path / "out"
    res = cli("simulate", str(_trace(tmp_path)), *args, "-o", str(out))
    assert res.returncode == 2
    assert res.stderr.strip() == message
    assert not out.exists()


def test_estimates_naming_jobs_the_trace_lacks_are_noted(tmp_path: Path) -> None:
    # (a file made for another trace whose ids overlap this one's was used without a word)
    est, out = tmp_path / "est.csv", tmp_path / "out"
    est.write_text("job_id,duration\na,10800\nb,3600\nc,90\nd,60\ne,600\nzz,5\nzy,7\n")
    res = cli("simulate", str(_trace(tmp_path)), "-p", "qssf", "--estimates", str(est), "-o", str(out))
    assert res.returncode == 0, res.stderr
    assert (f"note: --estimates {est}: 2 estimates of 7 name no job of {tmp_path / 't.parquet'} (made for another "
            "trace?)") in res.stderr.splitlines()


def test_an_estimates_file_missing_a_job_fails_before_anything_is_written(tmp_path: Path) -> None:
    est, out = tmp_path / "est.csv", tmp_path / "out"
    est.write_text("job_id,duration\na,10800\nb,3600\nc,90\ne,600\n")  # no d
    res = cli("simulate", str(_trace(tmp_path)), "-p", "fifo,sjf,qssf", "--estimates", str(est), "-o", str(out))
    assert res.returncode == 2
    assert res.stderr.strip() == (f"error: {est}, field 'job_id': no duration estimate for job 'd' "
                                  "(1 simulated job(s) lack one)")
    assert not out.exists()
    # the first policy's run checks them itself, before writing anything
    res = cli("simulate", str(_trace(tmp_path)), "-p", "qssf,fifo", "--estimates", str(est), "-o", str(out))
    assert res.returncode == 2 and "no duration estimate for job 'd' (1 simulated job(s) lack one)" in res.stderr
    assert not out.exists()
    # outside the window the estimates need not cover: d is not simulated
    res = cli("simulate", str(_trace(tmp_path)), "-p", "fifo,qssf", "--estimates", str(est), "--end",
              "1970-01-01 01:00:00", "-o", str(out))
    assert res.returncode == 0, res.stderr
    assert sorted(p.name for p in out.iterdir()) == ["fifo", "qssf"]
