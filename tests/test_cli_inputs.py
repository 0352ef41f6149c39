"""Every command that reads a trace takes the same input options (--format, --map, --time-unit, --tz, --lenient)
through one loader, and says when it assumed UTC for a source without a time zone."""

from __future__ import annotations

import json
import random
from pathlib import Path

import polars as pl
import pytest
from test_docs_examples import _sacct_export
from test_sim_helpers import cli

T0 = 1_700_000_000  # 2023-11-14 22:13:20 UTC
MAPPING = ("job_id=jid,vc=queue,gpu_num=gpus,submit_time=submitted_ms,start_time=started_ms,end_time=ended_ms,"
           "user=user_name,status=state")
OPTIONS = ["--map", MAPPING, "--time-unit", "ms", "--tz", "Asia/Shanghai", "--lenient"]
JOBS = 240


def _plain_csv(folder: Path) -> tuple[Path, Path, pl.DataFrame]:
    """A CSV of 240 jobs over ten days under its own column names (times in epoch ms), one malformed row; a spec
    of its two VCs; and the good rows as the test computes them (seconds)."""
    rng = random.Random(4)
    rows = []
    for i in range(JOBS):
        submit = T0 + i * 3600 + rng.randint(0, 600)
        start = submit + rng.randint(0, 300)
        end = start + rng.choice([60, 600, 3600, 7200, 20000])
        rows.append((f"j{i}", "ab"[i % 2], rng.choice([1, 2, 4, 8]), submit, start, end, f"u{i % 5}",
                     "failed" if i % 4 == 0 else "completed"))
    lines = ["jid,queue,gpus,submitted_ms,started_ms,ended_ms,user_name,state"]
    lines += [f"{j},{q},{g},{s * 1000},{b * 1000},{e * 1000},{u},{st}" for j, q, g, s, b, e, u, st in rows]
    lines.insert(7, "broken,a,many,1,2,3,u1,completed")  # gpus is not a number: dropped under --lenient
    path = folder / "jobs.csv"
    path.write_text("\n".join(lines) + "\n")
    spec = folder / "spec.csv"
    spec.write_text("vc,nodes,gpus_per_node\na,2,8\nb,2,8\n")
    table = pl.DataFrame(rows, schema=["job_id", "vc", "gpu_num", "submit", "start", "end", "user", "status"],
                         orient="row")
    return path, spec, table


@pytest.fixture(scope="module")
def plain(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, pl.DataFrame]:
    return _plain_csv(tmp_path_factory.mktemp("plain"))


def _ok(res) -> None:
    assert res.returncode == 0, res.stderr
    # --lenient dropped the malformed row and said so; --tz was given, so no time zone was assumed
    assert "dropped 1 malformed row(s): 1 unparsable gpus" in res.stderr
    assert "UTC assumed" not in res.stderr


def test_info_and_convert(plain: tuple[Path, Path, pl.DataFrame], tmp_path: Path) -> None:
    csv, _, table = plain
    res = cli("info", str(csv), "--format", "csv", *OPTIONS, "--json")
    _ok(res)
    info = json.loads(res.stdout)
    assert (info["jobs"], info["vcs"], info["users"], info["timezone"]) == (JOBS, 2, 5, "Asia/Shanghai")
    res = cli("convert", str(csv), "--format", "csv", *OPTIONS, "-o", str(tmp_path / "t.parquet"))
    _ok(res)
    got = pl.read_parquet(tmp_path / "t.parquet").sort("submit_time")
    assert got["submit_time"].to_list() == table["submit"].to_list()
    assert got["duration"].to_list() == (table["end"] - table["start"]).to_list()


def test_simulate_reads_a_plain_csv_through_map(plain: tuple[Path, Path, pl.DataFrame], tmp_path: Path) -> None:
    csv, spec, table = plain
    res = cli("simulate", str(csv), "--format", "csv", *OPTIONS, "--cluster", str(spec), "-o", str(tmp_path / "s"))
    _ok(res)
    jobs = pl.read_parquet(tmp_path / "s/jobs.parquet").sort("job_id")
    expected = table.sort("job_id")
    assert jobs["job_id"].to_list() == expected["job_id"].to_list()
    assert jobs["submit"].to_list() == expected["submit"].to_list()
    assert jobs["gpu_num"].to_list() == expected["gpu_num"].to_list()
    assert jobs["duration"].to_list() == (expected["end"] - expected["start"]).to_list()


def test_characterize_reads_a_plain_csv_through_map(plain: tuple[Path, Path, pl.DataFrame], tmp_path: Path) -> None:
    csv, _, table = plain
    res = cli("characterize", str(csv), "--format", "csv", *OPTIONS, "-o", str(tmp_path / "r"))
    _ok(res)
    row = pl.read_csv(tmp_path / "r/tables/cluster_summary.csv").row(0, named=True)
    assert row["job_num"] == JOBS and row["gpu_job_num"] == JOBS
    assert row["avg_que_time_gpu"] == pytest.approx((table["start"] - table["submit"]).mean(), abs=1e-3)
    assert row["fail_rate"] == pytest.approx((table["status"] == "failed").mean())


def test_synth_fit_predict_and_ces_take_the_same_options(plain: tuple[Path, Path, pl.DataFrame],
                                                         tmp_path: Path) -> None:
    csv, spec, table = plain
    res = cli("synth", "--fit", str(csv), "--fit-format", "csv", *OPTIONS, "--save-model", str(tmp_path / "m.json"),
              "--days", "2", "-o", str(tmp_path / "s.parquet"))
    _ok(res)
    model = json.loads((tmp_path / "m.json").read_text())
    assert model["timezone"] == "Asia/Shanghai" and model["jobs_per_day"] * model["days"] == pytest.approx(JOBS, 0.01)
    res = cli("predict", "eval", str(csv), "--format", "csv", *OPTIONS, "--estimator", "oracle", "--json")
    _ok(res)
    assert json.loads(res.stdout)["jobs"] == JOBS
    res = cli("predict", "run", str(csv), "--format", "csv", *OPTIONS, "-o", str(tmp_path / "est.csv"))
    _ok(res)
    assert pl.read_csv(tmp_path / "est.csv")["job_id"].sort().to_list() == table["job_id"].sort().to_list()
    res = cli("ces", str(csv), "--format", "csv", *OPTIONS, "--cluster", str(spec), "--test-days", "3", "--json")
    _ok(res)
    assert json.loads(res.stdout)["days"] == pytest.approx(3, abs=0.1)


def test_trace_options_where_there_is_no_trace_are_refused(tmp_path: Path) -> None:
    res = cli("synth", "--preset", "philly", "--tz", "UTC", "--lenient", "-o", str(tmp_path / "t.parquet"))
    assert res.returncode == 2
    assert res.stderr.strip() == "error: --lenient, --tz: options of the --fit trace; give --fit TRACE"
    series = tmp_path / "series.csv"
    series.write_text("time,active,total\n0,1,4\n60,2,4\n")
    res = cli("ces", str(series), "--map", "a=b")
    assert res.returncode == 2
    assert res.stderr.strip() == (f"error: --map: options of a trace, but {series} is a demand series "
                                  "(time, used|active, total)")


@pytest.mark.parametrize(("command", "args", "message"), [
    ("simulate", ["--start="], "error: --start '': expected a time like 2017-10-01 00:00:00"),
    ("simulate", ["--end", ""], "error: --end '': expected a time like 2017-10-01 00:00:00"),
    ("predict", ["--start="], "error: --start '': expected a time like 2017-10-01 00:00:00"),
    ("info", ["--tz", ""], "error: unknown time zone '' (use an IANA name such as Asia/Shanghai)"),
])
def test_an_empty_option_value_is_refused_not_ignored(plain: tuple[Path, Path, pl.DataFrame], tmp_path: Path,
                                                      command: str, args: list[str], message: str) -> None:
    """``--start=`` (an unset shell variable) must not quietly mean "no window", nor ``--tz ""`` "no zone"."""
    trace, spec, _ = plain
    extra = {"simulate": ["--cluster", str(spec), "-o", str(tmp_path / "out")], "predict": ["eval"], "info": []}
    before = ["eval"] if command == "predict" else []
    after = [a for a in extra[command] if a != "eval"]
    res = cli(command, *before, str(trace), "--format", "csv", *OPTIONS[:4], "--lenient", *after, *args)
    assert res.returncode == 2, res.stderr
    assert res.stderr.strip().splitlines()[-1] == message


# --- the time zone notice -------------------------------------------------------------------------------------

def test_a_source_without_a_time_zone_gets_a_one_line_notice(tmp_path: Path) -> None:
    sacct = tmp_path / "jobs.txt"
    _sacct_export(sacct)
    notice = f"note: {sacct}: sacct times carry no time zone; UTC assumed (pass --tz ZONE)"
    res = cli("info", str(sacct), "--json")
    assert res.returncode == 0, res.stderr
    assert res.stderr.splitlines() == [notice]
    assert json.loads(res.stdout)["timezone"] == "UTC"
    res = cli("info", str(sacct), "--tz", "Europe/Paris", "--json")
    assert res.returncode == 0 and res.stderr == ""
    assert json.loads(res.stdout)["timezone"] == "Europe/Paris"
    # the same trace once converted carries its zone: no notice, though it remembers it came from sacct
    res = cli("convert", str(sacct), "--tz", "Europe/Paris", "-o", str(tmp_path / "t.parquet"))
    assert res.returncode == 0 and "UTC assumed" not in res.stderr
    res = cli("info", str(tmp_path / "t.parquet"), "--json")
    assert res.returncode == 0 and res.stderr == ""
    assert json.loads(res.stdout)["format"] == "sacct"


def test_a_csv_with_wall_clock_times_gets_the_notice_and_a_zoned_format_none(tmp_path: Path) -> None:
    csv = tmp_path / "plain.csv"
    csv.write_text("id,when,gpus\n1,2024-03-01 10:00:00,1\n2,2024-03-01 11:00:00,2\n")
    mapping = ["--format", "csv", "--map", "job_id=id,submit_time=when,gpu_num=gpus"]
    res = cli("info", str(csv), *mapping, "--json")
    assert res.returncode == 0, res.stderr
    assert res.stderr.splitlines() == [f"note: {csv}: csv times carry no time zone; UTC assumed (pass --tz ZONE)"]
    assert json.loads(res.stdout)["start"] == "2024-03-01T10:00:00Z"
    res = cli("info", str(csv), *mapping, "--tz", "Asia/Shanghai", "--json")
    assert res.returncode == 0 and res.stderr == ""
    assert json.loads(res.stdout)["start"] == "2024-03-01T02:00:00Z"
    # a Helios folder's times are Shanghai wall clock by definition: nothing assumed
    helios = tmp_path / "helios"
    helios.mkdir()
    (helios / "cluster_log.csv").write_text(
        "job_id,user,vc,jobname,gpu_num,cpu_num,node_num,state,submit_time,start_time,end_time,duration,queue\n"
        "1,u1,vcA,a,1,4,1,COMPLETED,2020-04-01 10:00:00,2020-04-01 10:00:05,2020-04-01 11:00:05,3600,5\n")
    res = cli("info", str(helios), "--json")
    assert res.returncode == 0, res.stderr
    assert "UTC assumed" not in res.stderr and json.loads(res.stdout)["timezone"] == "Asia/Shanghai"


@pytest.mark.parametrize(("times", "what"), [
    # times that name their instant: only the local hour of day is left to a zone ("carry no time zone" was false)
    ("2024-03-01T10:00:00+02:00,2024-03-01T11:00:00Z", "times give no zone for the local hour of day"),
    ("1709280000,1709283600", "times give no zone for the local hour of day"),
    ("2024-03-01 10:00:00,2024-03-01 11:00:00", "times carry no time zone"),
])
def test_the_notice_says_what_the_zone_is_assumed_for(tmp_path: Path, times: str, what: str) -> None:
    csv = tmp_path / "jobs.csv"
    first, second = times.split(",")
    csv.write_text(f"job_id,submit_time,gpu_num,duration\na,{first},1,60\nb,{second},1,60\n")
    res = cli("info", str(csv), "--format", "csv", "--json")
    assert res.returncode == 0, res.stderr
    assert res.stderr.splitlines() == [f"note: {csv}: csv {what}; UTC assumed (pass --tz ZONE)"]


def test_info_on_an_empty_trace_shows_no_span(tmp_path: Path) -> None:
    # the table printed 'start None' and 'end None'
    csv = tmp_path / "empty.csv"
    csv.write_text("job_id,submit_time,gpu_num,duration\n")
    res = cli("info", str(csv), "--format", "csv", "--tz", "UTC")
    assert res.returncode == 0, res.stderr
    rows = {line.strip("│ ").split()[0]: line.strip("│ ").split()[1:] for line in res.stdout.splitlines()
            if line.startswith("│")}
    assert rows["start"] == ["│", "–"] and rows["end"] == ["│", "–"] and "None" not in res.stdout
    assert json.loads(cli("info", str(csv), "--format", "csv", "--tz", "UTC", "--json").stdout)["start"] is None


def test_map_or_time_unit_read_a_file_of_no_known_format_as_csv(tmp_path: Path) -> None:
    path = tmp_path / "odd.csv"
    path.write_text("id,t,g,d\na,1600000000000,2,60\n")
    mapping = "job_id=id,submit_time=t,gpu_num=g,duration=d"
    refused = cli("info", str(path), "--json")
    assert refused.returncode == 2 and "cannot tell the trace format; pass --format" in refused.stderr
    # the same as with --format csv
    for extra in (["--map", mapping, "--time-unit", "ms"], ["--map", mapping, "--time-unit", "ms", "--format", "csv"]):
        done = cli("info", str(path), *extra, "--json")
        assert done.returncode == 0, done.stderr
        info = json.loads(done.stdout)
        assert (info["format"], info["gpu_jobs"], info["start"]) == ("csv", 1, "2020-09-13T12:26:40Z")
