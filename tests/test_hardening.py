"""Regression tests for the hostile, absurd and degenerate inputs of issue 14, one named test per case,
and the error catalogue of docs/errors.md run example by example."""

from __future__ import annotations

import errno
import gzip
import importlib
import io
import json
import os
import re
import shlex
import time
from collections.abc import Callable
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dlcluster import atomic
from dlcluster.cli import main
from dlcluster.cli.long_runs import submit_window, wall_instant
from dlcluster.cluster import ClusterSpec
from dlcluster.errors import ConfigError, InputError
from dlcluster.io import read_trace
from dlcluster.io import _common, cluster_spec, parquet, philly
from dlcluster.sim import simulate
from dlcluster.trace import Trace

# the packages export functions of these names: the modules themselves
sim_prepare = importlib.import_module("dlcluster.sim.prepare")
sim_results = importlib.import_module("dlcluster.sim.results")
sim_engine = importlib.import_module("dlcluster.sim.engine")
sim_power = importlib.import_module("dlcluster.sim.power")
sim_failures = importlib.import_module("dlcluster.sim.failures")
demand = importlib.import_module("dlcluster.predict.demand")
synth_generate = importlib.import_module("dlcluster.synth.generate")
sim_speed = importlib.import_module("dlcluster.sim.speed")
ces_rules = importlib.import_module("dlcluster.services.ces.rules")

ROOT = Path(__file__).resolve().parents[1]
CSV = "job_id,submit_time,gpu_num,duration\n"
HELIOS = "job_id,user,vc,gpu_num,cpu_num,node_num,state,submit_time,start_time,end_time,duration,queue\n"
SACCT = "JobID|User|Partition|Submit|Start|End|State|AllocTRES|Elapsed|NCPUS|NNodes\n"
OPENB = ("name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,"
         "scheduled_time\n")
PHILLY_JOBS = "timestamp,duration,num_gpus,gpu_time,cluster\n"
SWF_RECORD = "1 {submit} 0 {run} {procs} -1 -1 {procs} -1 -1 1 1 -1 -1 1 -1 -1 -1\n"


def cli(*args: str) -> tuple[int, str, str]:
    """Run ``dlcluster ARGS`` in-process: exit status, stdout, stderr."""
    err, out = io.StringIO(), io.StringIO()
    with redirect_stderr(err), redirect_stdout(out):
        try:
            main(list(args))
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
    return code, out.getvalue(), err.getvalue()


def error_lines(err: str) -> list[str]:
    """The lines of stderr but notices (``note: ...``, e.g. the UTC one of a zoneless CSV): what went wrong."""
    return [line for line in err.strip().splitlines() if not line.startswith("note: ")]


def refused(*args: str) -> str:
    """The one stderr line (notices aside) of a command that must exit 2."""
    code, _, err = cli(*args)
    lines = error_lines(err)
    assert code == 2, err
    assert len(lines) == 1, err
    assert lines[0].startswith("error: "), lines[0]
    return lines[0]


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def _spec(tmp_path: Path, text: str = "vc,nodes\ndefault,2\n") -> Path:
    return _write(tmp_path / "spec.csv", text)


# --- overflow in every CSV-family reader: a row error, never an internal error --------------------------

OVERFLOW = [
    ("csv", "jobs.csv", CSV + "a,0,1,{v}\n", "duration"),
    ("csv", "jobs.csv", CSV + "a,0,{v},5\n", "gpu_num"),
    ("helios", "cluster_log.csv", HELIOS + "j,u,v,1,1,1,COMPLETED,2020-04-01 00:00:00,2020-04-01 00:00:00,"
                                           "2020-04-01 00:00:01,{v},0\n", "duration"),
    ("helios", "cluster_log.csv", HELIOS + "j,u,v,{v},1,1,COMPLETED,2020-04-01 00:00:00,2020-04-01 00:00:00,"
                                           "2020-04-01 00:01:00,60,0\n", "gpu_num"),
    ("philly-jobs", "jobs.csv", PHILLY_JOBS + "2017-10-09 07:01:55,{v},1,66.0,a\n", "duration"),
    ("philly-jobs", "jobs.csv", PHILLY_JOBS + "2017-10-09 07:01:55,60,{v},66.0,a\n", "num_gpus"),
    ("sacct", "s.txt", SACCT + "1|u|p|2024-01-01T00:00:00|||PENDING|||{v}|1\n", "NCPUS"),
    ("openb", "pods.csv", OPENB + "p,{v},1,1,1000,,LS,Succeeded,0,100,10\n", "cpu_milli"),
    ("openb", "pods.csv", OPENB + "p,1000,1,1,1000,,LS,Succeeded,{v},100,10\n", "creation_time"),
    ("swf", "t.swf", SWF_RECORD.format(submit=0, run="{v}", procs=1), "run time"),
    ("swf", "t.swf", SWF_RECORD.format(submit="{v}", run=5, procs=1), "submit time"),
]


@pytest.mark.parametrize("value", ["1e30", "inf", "1000000000000", "1e20"])
@pytest.mark.parametrize(("fmt", "name", "template", "field"), OVERFLOW, ids=[f"{o[0]}-{o[3]}" for o in OVERFLOW])
def test_overflowing_numbers_are_one_line_row_errors(tmp_path: Path, fmt: str, name: str, template: str, field: str,
                                                     value: str) -> None:
    path = _write(tmp_path / name, template.replace("{v}", value))
    line = refused("info", str(path), "--format", fmt)
    assert line.startswith(f"error: {path}, line ") and f"field '{field}': '{value}' is out of range" in line, line


@pytest.mark.parametrize(("fmt", "name", "template", "field"), OVERFLOW, ids=[f"{o[0]}-{o[3]}" for o in OVERFLOW])
def test_lenient_drops_and_counts_overflowing_rows(tmp_path: Path, fmt: str, name: str, template: str,
                                                   field: str) -> None:
    good = template.replace("{v}", "1").splitlines()[-1]
    if fmt != "philly-jobs":  # another id for the good row (the derived Philly table has none)
        sep = {"sacct": "|", "swf": " "}.get(fmt, ",")
        good = "77" + good[good.index(sep):]
    path = _write(tmp_path / name, template.replace("{v}", "1e30") + good + "\n")
    code, _, err = cli("info", str(path), "--format", fmt, "--json", "--lenient")
    assert code == 0, err
    assert error_lines(err) == [f"dropped 1 malformed row(s): 1 out-of-range {field}"]


def test_year_9999_is_out_of_range(tmp_path: Path) -> None:
    path = _write(tmp_path / "cluster_log.csv", HELIOS + "j,u,v,1,1,1,COMPLETED,9999-04-01 00:00:00,"
                                                        "9999-04-01 00:00:00,9999-04-01 00:01:00,60,0\n")
    assert refused("info", str(path), "--format", "helios") == (
        f"error: {path}, line 2, field 'submit_time': '9999-04-01 00:00:00' is out of range "
        "(expected a time between 1900-01-01 and 2200-01-01 UTC)")


@pytest.mark.parametrize(("value", "unit"), [("1600000000000", "ms"), ("1600000000000000", "us")])
def test_millisecond_epochs_suggest_the_time_unit(tmp_path: Path, value: str, unit: str) -> None:
    path = _write(tmp_path / "jobs.csv", CSV + f"a,{value},1,5\n")
    assert refused("info", str(path), "--format", "csv").endswith(f"; did you mean --time-unit {unit}?")
    assert read_trace(path, format="csv", time_unit=unit).jobs["submit_time"].to_list() == [1_600_000_000]


# --- silently accepted before ----------------------------------------------------------------------------

def test_sacct_negative_gres_gpu_is_refused(tmp_path: Path) -> None:
    path = _write(tmp_path / "s.txt", SACCT + "1|u|p|2024-01-01T00:00:00|2024-01-01T00:00:01|2024-01-01T00:01:00|"
                                               "COMPLETED|gres/gpu=-8|00:01:00|1|1\n")
    assert refused("info", str(path)) == (
        f"error: {path}, line 2, field 'AllocTRES': negative GPU count in 'gres/gpu=-8'")


def _canonical(**columns: list[object]) -> pl.DataFrame:
    base: dict[str, list[object]] = {
        "job_id": ["a"], "cluster": ["c"], "vc": ["default"], "user": [None], "name": [None], "gpu_num": [1],
        "gpu_milli": [None], "cpu_num": [None], "node_num": [None], "submit_time": [0], "start_time": [10],
        "end_time": [20], "duration": [10], "queue_delay": [10], "status": ["completed"]}
    base.update(columns)
    return pl.DataFrame(base, schema_overrides={"user": pl.String, "name": pl.String, "gpu_milli": pl.Int32,
                                                "cpu_num": pl.Int32, "node_num": pl.Int32})


def test_parquet_negative_gpus_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "t.parquet"
    _canonical(gpu_num=[-3]).write_parquet(path)
    assert refused("info", str(path)) == f"error: {path}, row 1, field 'gpu_num': negative value -3"


def test_parquet_counts_beyond_int32_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "t.parquet"
    _canonical(gpu_num=[10**12]).write_parquet(path)
    assert refused("info", str(path)) == (f"error: {path}, row 1, field 'gpu_num': 1000000000000 is out of range "
                                          "(expected a count of at most 2,147,483,647)")


def test_parquet_unknown_status_is_named_with_the_vocabulary(tmp_path: Path) -> None:
    path = tmp_path / "t.parquet"
    _canonical(status=["weird"]).write_parquet(path)
    assert refused("info", str(path)) == (
        f"error: {path}, row 1, field 'status': unknown status 'weird' (expected one of: completed, failed, "
        "cancelled, timeout, node_fail, running, pending, other)")
    assert read_trace(path, lenient=True).dropped == {"unknown status": 1}
    # a missing status is still a missing required value, as in a column of the canonical type
    _canonical(status=[None]).write_parquet(path)
    assert refused("info", str(path)) == f"error: {path}, row 1, field 'status': required value is empty"
    # (a column of lists stopped the reader with an internal error)
    _canonical().with_columns(pl.Series("status", [["completed"]])).write_parquet(path)
    assert refused("info", str(path)).startswith(f"error: {path}, field 'status': expected type Enum(")


def test_parquet_metadata_with_an_unknown_time_zone_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "t.parquet"
    parquet.write(Trace(_canonical(), format="synth", timezone="Mars/X"), path)
    assert refused("info", str(path)) == f"error: {path}: its dlcluster metadata holds an unknown time zone 'Mars/X'"


@pytest.mark.parametrize(("fmt", "name", "text", "field"), [
    ("csv", "jobs.csv", "job_id,submit_time,start_time,gpu_num,duration\na,100,50,1,5\n", "start_time"),
    ("helios", "cluster_log.csv", HELIOS + "j,u,v,1,1,1,COMPLETED,2020-04-01 00:10:00,2020-04-01 00:00:00,"
                                           "2020-04-01 00:20:00,600,0\n", "start_time"),
    ("sacct", "s.txt", SACCT + "1|u|p|2024-01-01T00:10:00|2024-01-01T00:00:00|2024-01-01T00:20:00|COMPLETED|"
                               "|00:20:00|1|1\n", "Start"),
    ("openb", "pods.csv", OPENB + "p,1000,1,1,1000,,LS,Succeeded,50,100,10\n", "scheduled_time"),
])
def test_start_before_submit_is_refused(tmp_path: Path, fmt: str, name: str, text: str, field: str) -> None:
    path = _write(tmp_path / name, text)
    line = refused("info", str(path), "--format", fmt)
    assert f"line 2, field '{field}'" in line and line.endswith("is before the submit time (negative queueing delay)")


def test_parquet_start_before_submit_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "t.parquet"
    _canonical(start_time=[-5], queue_delay=[None]).write_parquet(path)
    assert "field 'start_time': -5 is before the submit time" in refused("info", str(path))


def test_philly_first_attempt_before_submission_is_refused(tmp_path: Path) -> None:
    record = {"status": "Pass", "vc": "v", "jobid": "a", "user": "u", "submitted_time": "2017-10-01 01:00:00",
              "attempts": [{"start_time": "2017-10-01 00:00:00", "end_time": "2017-10-01 02:00:00",
                            "detail": [{"ip": "m1", "gpus": ["gpu0"]}]}]}
    _write(tmp_path / "cluster_job_log", json.dumps([record]))
    assert refused("info", str(tmp_path)) == (
        f"error: {tmp_path / 'cluster_job_log'}, record 0, field 'attempts': the first attempt starts before "
        "submitted_time (negative queueing delay)")


def test_start_after_end_is_an_error() -> None:
    with pytest.raises(ConfigError, match=r"^--start '2020-02-01' is after --end '2020-01-01': the window holds"):
        submit_window("2020-02-01", "2020-01-01", "UTC", wall=False)
    assert submit_window("2020-01-01", "2020-01-01", "UTC", wall=False) == (1577836800, 1577836800)


@pytest.mark.parametrize(("text", "expected"), [
    ("2020-01-01 08:00:00", 1577836800),  # Shanghai wall clock
    ("2020-01-01T00:00:00Z", 1577836800),
    ("2020-01-01T05:00:00+05:00", 1577836800),
    ("2020-01-01 05:00:00+05:00", 1577836800),
])
def test_start_with_an_explicit_offset_is_that_instant(text: str, expected: int) -> None:
    assert wall_instant(text, "--start", "Asia/Shanghai", wall=False) == expected


def test_a_window_from_a_fraction_of_a_second_starts_at_the_next_whole_second() -> None:
    # (--start 12:30:00.5 was floored: the submissions of 12:30:00, before it, were reported)
    for wall in (False, True):
        base = wall_instant("2020-09-13 12:30:00", "--start", "UTC", wall=wall)
        assert submit_window("2020-09-13 12:30:00.5", "2020-09-13 12:40:00.5", "UTC", wall) == (base + 1, base + 600)
        assert submit_window("2020-09-13 12:30:00", None, "UTC", wall) == (base, 2**62)


def test_start_with_an_offset_in_wall_clock_mode_is_the_trace_zones_wall_clock() -> None:
    # compatibility mode counts naive wall-clock seconds of the trace's zone
    assert wall_instant("2020-01-01T00:00:00Z", "--start", "Asia/Shanghai", wall=True) == 1577836800 + 8 * 3600


@pytest.mark.parametrize(("text", "timezone", "wall"), [
    ("9999-12-31 23:59:59", "America/Los_Angeles", False),  # its UTC instant is in year 10000
    ("0001-01-01", "Asia/Shanghai", False),  # ... in year 0
    ("0001-01-01T00:30:00+05:00", "UTC", True),
])
def test_a_time_at_the_ends_of_the_calendar_is_an_error(text: str, timezone: str, wall: bool) -> None:
    with pytest.raises(ConfigError) as err:
        wall_instant(text, "--end", timezone, wall=wall)
    assert str(err.value) == (f"--end {text!r}: too near the ends of the calendar (years 1 and 9999) to convert; "
                              "give a time within the trace's span")


def test_start_in_a_dst_gap_names_the_gap() -> None:
    with pytest.raises(ConfigError) as err:
        wall_instant("2021-03-14 02:30:00", "--start", "America/Los_Angeles", wall=False)
    assert str(err.value) == ("--start '2021-03-14 02:30:00': no such time in America/Los_Angeles (the clocks skip "
                              "it when daylight saving time begins); give a time outside the gap or with an offset "
                              "like +01:00")


def test_start_in_the_repeated_hour_is_its_earlier_instant() -> None:
    assert wall_instant("2021-11-07 01:30:00", "--start", "America/Los_Angeles", wall=False) == 1636273800


def test_start_after_end_on_the_command_line(tmp_path: Path) -> None:
    jobs = _write(tmp_path / "jobs.csv", CSV + "a,1577836800,1,60\n")
    assert refused("simulate", str(jobs), "--format", "csv", "--cluster", str(_spec(tmp_path)), "--start",
                   "2020-02-01", "--end", "2020-01-01", "-o", str(tmp_path / "out")) == (
        "error: --start '2020-02-01' is after --end '2020-01-01': the window holds no time")


@pytest.mark.parametrize(("value", "what"), [("-5", "negative value -5"), ("inf", "'inf' is out of range"),
                                             ("-inf", "negative value -inf")])
def test_negative_or_infinite_estimates_are_refused(tmp_path: Path, value: str, what: str) -> None:
    jobs = _write(tmp_path / "jobs.csv", CSV + "a,0,1,60\n")
    est = _write(tmp_path / "est.csv", f"job_id,duration\na,{value}\n")
    line = refused("simulate", str(jobs), "--format", "csv", "--cluster", str(_spec(tmp_path)), "--policy", "qssf",
                   "--estimates", str(est), "-o", str(tmp_path / "out"))
    assert line.startswith(f"error: {est}, line 2, field 'duration': {what}")


def test_control_characters_read_from_a_file_are_shown_escaped(tmp_path: Path) -> None:
    # (a header holding a terminal's colour escape was written raw to the terminal in the error)
    jobs = _write(tmp_path / "jobs.csv", CSV + "a,0,1,60\n")
    est = _write(tmp_path / "est.csv", "job_id\x1b[31mRED\x1b[0m,duration\na,5\n")
    line = refused("simulate", str(jobs), "--format", "csv", "--cluster", str(_spec(tmp_path)), "--policy", "qssf",
                   "--estimates", str(est), "-o", str(tmp_path / "out"))
    assert line == (f"error: {est}: expected columns job_id,duration (or jobname,priority); found: "
                    "job_id\\x1b[31mRED\\x1b[0m, duration")


def test_a_missing_estimate_names_the_estimates_file(tmp_path: Path) -> None:
    jobs = _write(tmp_path / "jobs.csv", CSV + "a,0,1,60\n")
    est = _write(tmp_path / "est.csv", "job_id,duration\nb,60\n")
    assert refused("simulate", str(jobs), "--format", "csv", "--cluster", str(_spec(tmp_path)), "--policy", "qssf",
                   "--estimates", str(est), "-o", str(tmp_path / "out")) == (
        f"error: {est}, field 'job_id': no duration estimate for job 'a' (1 simulated job(s) lack one)")


def test_duplicate_vcs_in_a_cluster_spec_are_refused(tmp_path: Path) -> None:
    path = _spec(tmp_path, "vc,nodes,gpus_per_node\na,2,8\nb,1,8\na,2,8\n")
    with pytest.raises(InputError) as err:
        cluster_spec.read_cluster_spec(path)
    assert str(err.value) == (f"{path}, line 4, field 'vc': VC 'a' is listed twice with the same node shape "
                              "(give one row per VC and node shape)")
    # one row per VC and node shape, as write_cluster_spec writes them, still adds up
    mixed = _spec(tmp_path, "vc,nodes,gpus_per_node\na,2,8\na,1,4\n")
    assert cluster_spec.read_cluster_spec(mixed).vcs == {"a": (8, 8, 4)}


def test_duplicate_vc_columns_in_a_helios_gpu_count_file_are_refused(tmp_path: Path) -> None:
    path = _write(tmp_path / "cluster_gpu_number.csv", "date,a,a,total\n2020-04-01,8,8,16\n")
    with pytest.raises(InputError, match=r"line 1: column 'a' appears more than once in the header$"):
        cluster_spec.read_cluster_spec(path)


def test_duplicate_map_keys_are_refused(tmp_path: Path) -> None:
    path = _write(tmp_path / "jobs.csv", "id,t,g,d\na,0,1,5\n")
    assert refused("info", str(path), "--format", "csv", "--map", "submit_time=t,gpu_num=g,submit_time=d") == (
        "error: --map: 'submit_time' is mapped twice")


@pytest.mark.parametrize("args", [("-o", ""), ("--output=",), ("--output", " ")])
def test_empty_output_path_is_refused(tmp_path: Path, args: tuple[str, ...]) -> None:
    jobs = _write(tmp_path / "jobs.csv", CSV + "a,0,1,5\n")
    flag = args[0].split("=")[0]
    assert refused("convert", str(jobs), "--format", "csv", *args) == f"error: {flag}: the path is empty"


def test_ambiguous_slash_dates_are_refused(tmp_path: Path) -> None:
    path = _write(tmp_path / "jobs.csv", CSV + "a,01/02/2020,1,5\nb,03/04/2020,1,5\n")
    assert refused("info", str(path), "--format", "csv") == (
        f"error: {path}, field 'submit_time': cannot tell whether '01/02/2020' is day/month/year or month/day/year "
        "(every date reads both as day/month and as month/day); write dates as YYYY-MM-DD")


@pytest.mark.parametrize(("rows", "expected"), [
    ("a,01/02/2020,1,5\nb,13/02/2020 10:00:00,1,5\n", ["2020-02-01 00:00:00", "2020-02-13 10:00:00"]),  # day first
    ("a,01/02/2020,1,5\nb,02/13/2020,1,5\n", ["2020-01-02 00:00:00", "2020-02-13 00:00:00"]),  # month first
])
def test_slash_dates_follow_the_reading_the_column_proves(tmp_path: Path, rows: str, expected: list[str]) -> None:
    trace = read_trace(_write(tmp_path / "jobs.csv", CSV + rows), format="csv")
    got = trace.jobs.select(pl.from_epoch("submit_time").dt.strftime("%Y-%m-%d %H:%M:%S"))["submit_time"].to_list()
    assert got == expected


def test_slash_dates_mixing_both_readings_are_refused(tmp_path: Path) -> None:
    path = _write(tmp_path / "jobs.csv", CSV + "a,13/02/2020,1,5\nb,02/13/2020,1,5\n")
    assert "some dates need day first and others month first" in refused("info", str(path), "--format", "csv")


# --- imprecise messages before ---------------------------------------------------------------------------

@pytest.mark.parametrize(("rows", "fields"), [
    ("a,0,1,5\nb,0,1,5,9\nc,0,1,5\n", 5),
    # (a truncated row was read with its missing fields empty; a row whose last field is empty is still read)
    ("a,0,1,5\nb,0,1\nc,0,1,\n\n", 3),
])
def test_a_wrong_number_of_fields_names_the_line_and_lenient_drops_it(tmp_path: Path, rows: str, fields: int) -> None:
    path = _write(tmp_path / "jobs.csv", CSV + rows)
    assert refused("info", str(path), "--format", "csv") == (
        f"error: {path}, line 3: has {fields} fields, the header names 4")
    trace = read_trace(path, format="csv", lenient=True)
    assert trace.jobs["job_id"].to_list() == ["a", "c"]
    assert dict(trace.dropped) == {"wrong number of fields": 1}


def test_a_separator_inside_quotes_ends_no_field(tmp_path: Path) -> None:
    quoted = _write(tmp_path / "quoted.csv", CSV + 'a,0,1,5\n"b,x",0\n"c\nd",0,1,\n')
    assert refused("info", str(quoted), "--format", "csv") == (
        f"error: {quoted}, line 3: has 2 fields, the header names 4")


def test_line_numbers_after_an_embedded_newline_are_physical_lines(tmp_path: Path) -> None:
    path = _write(tmp_path / "jobs.csv", "job_id,name,submit_time,gpu_num,duration\n"
                                         'a,"two\nlines",0,1,5\nb,x,0,one,5\n')
    assert refused("info", str(path), "--format", "csv") == (
        f"error: {path}, line 4, field 'gpu_num': cannot parse 'one' as a whole number")


def test_bytes_that_are_not_utf8_name_their_line(tmp_path: Path) -> None:
    path = tmp_path / "jobs.csv"
    path.write_bytes((CSV + "a,0,1,5\n").encode() + b"b,0,\xff,5\n")
    assert refused("info", str(path), "--format", "csv") == (
        f"error: {path}, line 3: not UTF-8 text (byte b'\\xff' cannot be decoded)")


def _cut_gzip(path: Path, text: str, keep: int | None = None) -> Path:
    """``text`` gzipped into ``path``, cut to ``keep`` bytes (default: half, which still decodes the first lines)."""
    data = gzip.compress(text.encode(), mtime=0)
    path.write_bytes(data[:len(data) // 2 if keep is None else keep])
    return path


def _many(header: str, row: Callable[[int], str], n: int = 3000) -> str:
    return header + "".join(row(i) for i in range(n))


@pytest.mark.parametrize("how", ["detected", "--format", "first line cut", "--estimates", "--cluster", "ces series",
                                 "ces first line cut", "ces trace"])
def test_a_truncated_gzip_names_the_file(tmp_path: Path, how: str) -> None:
    jobs_text = _many("job_id,cluster,vc,gpu_num,submit_time,status,duration\n",
                      lambda i: f"j{i},c,default,{1 + i % 7},{1600000000 + 37 * i},completed,{60 + i % 1000}\n")
    jobs, spec = _write(tmp_path / "jobs.csv", jobs_text), _spec(tmp_path)
    out = str(tmp_path / "out")
    if how in ("detected", "--format"):
        cut = _cut_gzip(tmp_path / "jobs.csv.gz", jobs_text)
        args = ["info", str(cut)] + (["--format", "csv"] if how == "--format" else [])
    elif how == "first line cut":  # too short to sniff: Python's gzip reads it, not Polars
        cut = _cut_gzip(tmp_path / "jobs.csv.gz", jobs_text, keep=20)
        args = ["info", str(cut)]
    elif how == "--estimates":
        cut = _cut_gzip(tmp_path / "est.csv.gz", _many("job_id,duration\n", lambda i: f"j{i},{60 + i}\n"))
        args = ["simulate", str(jobs), "--cluster", str(spec), "--policy", "qssf", "--estimates", str(cut), "-o", out]
    elif how == "--cluster":
        cut = _cut_gzip(tmp_path / "spec.csv.gz", _many("vc,nodes\n", lambda i: f"v{i},{1 + i % 9}\n"))
        args = ["simulate", str(jobs), "--cluster", str(cut), "-o", out]
    elif how == "ces trace":  # neither a series nor a known trace by its name: the sniffers read it
        cut = _cut_gzip(tmp_path / "jobs.gz", jobs_text, keep=20)
        args = ["ces", str(cut), "-o", out]
    else:
        series = _many("time,active,total\n", lambda i: f"{1600000000 + 60 * i},{i % 17},20\n", 20000)
        cut = _cut_gzip(tmp_path / "series.csv.gz", series, keep=20 if how == "ces first line cut" else None)
        args = ["ces", str(cut), "-o", out]
    assert refused(*args) == f"error: {cut}: truncated or corrupt gzip file (unexpected end of file)"


@pytest.mark.parametrize("how", ["detected", "--format", "first line cut", "ces series"])
def test_a_truncated_zstd_names_the_file(tmp_path: Path, how: str) -> None:
    # (cut short in its first line, a .csv.zst was "cannot tell the trace format": the sniffers saw its raw bytes)
    import pyarrow as pa  # (Python 3.11 has no zstd module; pyarrow is a dependency)

    if how == "ces series":
        text, name = _many("time,active,total\n", lambda i: f"{1600000000 + 60 * i},{i % 17},20\n", 20000), "s.csv.zst"
    else:
        text, name = _many(CSV, lambda i: f"j{i},{1600000000 + 37 * i},{1 + i % 7},{60 + i % 1000}\n"), "jobs.csv.zst"
    whole = tmp_path / "whole.zst"
    with pa.CompressedOutputStream(str(whole), "zstd") as out:
        out.write(text.encode())
    data = whole.read_bytes()
    cut = tmp_path / name
    cut.write_bytes(data[:20 if how == "first line cut" else len(data) // 2])
    args = {"detected": ["info", str(cut)], "--format": ["info", str(cut), "--format", "csv"],
            "first line cut": ["info", str(cut)], "ces series": ["ces", str(cut), "-o", str(tmp_path / "out")]}[how]
    assert refused(*args) == f"error: {cut}: truncated or corrupt zstd file (incomplete frame)"


def test_a_corrupt_gzip_names_the_file(tmp_path: Path) -> None:
    data = bytearray(gzip.compress(_many(CSV, lambda i: f"j{i},{i},1,{i % 97}\n").encode(), mtime=0))
    data[10:200] = bytes(range(190))  # the first deflate block is garbage: no line can be sniffed
    path = tmp_path / "jobs.csv.gz"
    path.write_bytes(bytes(data))
    assert refused("info", str(path)).startswith(f"error: {path}: truncated or corrupt gzip file (")
    assert refused("info", str(path), "--format", "csv") == (
        f"error: {path}: truncated or corrupt gzip file (corrupt deflate stream)")


def test_invalid_json_is_one_line(tmp_path: Path) -> None:
    log = _write(tmp_path / "cluster_job_log", '[{"jobid": "a",, "vc": "v"}]')
    assert refused("info", str(log), "--format", "philly") == (
        f"error: {log}, record 0: not valid JSON (parse error: invalid object key (must be a string))")


def test_pai_reader_honours_quoted_commas(tmp_path: Path) -> None:
    _write(tmp_path / "pai_job_table.csv", 'j1,i1,"u,1",Terminated,100,200\n')
    _write(tmp_path / "pai_task_table.csv", "j1,worker,1,Terminated,110,200,600,29.3,100,V100\n")
    trace = read_trace(tmp_path, format="pai")
    assert trace.jobs["user"].to_list() == ["u,1"]


# --- unbounded work from one value ------------------------------------------------------------------------

@pytest.mark.parametrize("depth", [1_000, 100_000])
def test_deeply_nested_philly_log_is_refused_before_parsing(tmp_path: Path, depth: int) -> None:
    log = _write(tmp_path / "cluster_job_log", "[" + "[" * depth + "]" * depth + "]")
    assert refused("info", str(log), "--format", "philly") == (
        f"error: {log}: JSON nested deeper than {philly.MAX_DEPTH} levels")


def _depth(value: object) -> int:
    if isinstance(value, list):
        return 1 + max((_depth(v) for v in value), default=0)
    if isinstance(value, dict):
        return 1 + max((_depth(v) for v in value.values()), default=0)
    return 0


_JSON = st.recursive(st.none() | st.integers() | st.text(alphabet='[]{}"\\ab', max_size=6),
                     lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text('[]"\\{', max_size=3),
                                                                                   inner, max_size=3),
                     max_leaves=40)


@settings(max_examples=300, deadline=None)
@given(value=_JSON, wrap=st.integers(0, philly.MAX_DEPTH + 2), chunk=st.integers(1, 9))
def test_depth_check_counts_brackets_outside_strings_across_chunks(value: object, wrap: int, chunk: int) -> None:
    text = "[" * wrap + json.dumps(value) + "]" * wrap
    too_deep = wrap + _depth(value) > philly.MAX_DEPTH
    try:
        philly._check_depth(io.BytesIO(text.encode()), Path("log"), chunk_bytes=chunk)
        refused_it = False
    except InputError:
        refused_it = True
    assert refused_it == too_deep


def test_nesting_inside_strings_does_not_count(tmp_path: Path) -> None:
    record = {"status": "Pass", "vc": "v", "jobid": "[" * 200 + '\\"{', "user": "u",
              "submitted_time": "2017-10-01 00:00:00", "attempts": []}
    _write(tmp_path / "cluster_job_log", json.dumps([record]))
    assert read_trace(tmp_path, format="philly").jobs["job_id"].to_list() == ["[" * 200 + '\\"{']


@pytest.mark.parametrize(("text", "message"), [
    ("vc,nodes,gpus_per_node\na,1,2147483648\n", "field 'gpus_per_node': '2147483648' is out of range "
                                                   "(expected at most 1,024)"),
    ("vc,nodes\na,1000000000\n", "field 'nodes': '1000000000' is out of range (expected at most 100,000)"),
    ("vc,nodes\na,60000\nb,60000\n", "the cluster has 120,000 nodes; at most 100,000 are supported"),
    ("vc,nodes\na,0\n", "the cluster spec has no nodes"),
])
def test_cluster_spec_limits_are_checked_up_front(tmp_path: Path, text: str, message: str) -> None:
    jobs = _write(tmp_path / "jobs.csv", CSV + "a,0,1,5\n")
    spec = _spec(tmp_path, text)
    line = refused("simulate", str(jobs), "--format", "csv", "--cluster", str(spec), "-o", str(tmp_path / "out"))
    assert line.startswith(f"error: {spec}") and line.endswith(message), line


def test_helios_gpu_counts_beyond_the_node_limit_are_refused(tmp_path: Path) -> None:
    path = _write(tmp_path / "cluster_gpu_number.csv", "date,a,total\n2020-04-01,2147483647,2147483647\n")
    with pytest.raises(InputError, match="the cluster has 268,435,456 nodes; at most 100,000 are supported"):
        cluster_spec.read_cluster_spec(path)


@pytest.mark.parametrize(("args", "message"), [
    (("--days", "1e9"), "--days 1e+09 is above the limit of 36,525 days (100 years)"),
    (("--days", "1", "--seed", "-5"), "--seed must be a non-negative integer, got -5"),
    (("--days", "1", "--load", "1e-12"), "--load 1e-12 is outside the supported range 1e-09..1e+09"),
    (("--days", "36000", "--load", "1000"), "36000 days at load 1000 would make about"),
])
def test_synth_limits_are_checked_up_front(tmp_path: Path, args: tuple[str, ...], message: str) -> None:
    line = refused("synth", "--preset", "philly", *args, "-o", str(tmp_path / "t.parquet"))
    assert line.startswith(f"error: {message}"), line
    assert not (tmp_path / "t.parquet").exists()


def test_simulate_load_limits_are_checked(tmp_path: Path) -> None:
    jobs = _write(tmp_path / "jobs.csv", CSV + "a,0,1,5\nb,100,1,5\n")
    line = refused("simulate", str(jobs), "--format", "csv", "--cluster", str(_spec(tmp_path)), "--load", "1e-300",
                   "-o", str(tmp_path / "out"))
    assert line == "error: --load 1e-300 is outside the supported range 1e-09..1e+09"
    with pytest.raises(ConfigError, match="stretches the 10,000,000,000 s of arrivals beyond"):
        sim_prepare._scale(pl.DataFrame({"submit": [0, 10**10]}), 1e-9)


@pytest.mark.parametrize("load", ["3.7", "2", "3", "0.7", "1.3", "2.9"])
def test_load_floors_each_inter_arrival_time_divided_exactly(load: str) -> None:
    # (--load 3.7 put a job submitted 4,218 s after the first at 1,139 s: 1 / load times the offset, rounded down)
    offsets = list(range(0, 50_000, 7)) + [4218, 37 * 114]
    scaled = sim_prepare._scale(pl.DataFrame({"submit": [1_700_000_000 + o for o in offsets]}), float(load))
    tenths = round(float(load) * 10)  # the load in tenths: the exact quotient in integers
    assert scaled["submit"].to_list() == [1_700_000_000 + o * 10 // tenths for o in offsets]


def test_timeline_step_is_60_s_up_to_the_bound_and_a_multiple_beyond() -> None:
    bound = sim_results.MAX_SAMPLES
    assert sim_results.timeline_step(0, 60 * (bound - 1)) == 60
    assert sim_results.timeline_step(0, 60 * bound) == 120
    for span in (10**9, 10**11, 3 * 10**15):
        step = sim_results.timeline_step(7, 7 + span)
        assert step % 60 == 0 and span // step + 1 <= bound and span // (step - 60) + 1 > bound


def test_a_job_of_1e11_seconds_gets_a_bounded_timeline() -> None:
    jobs = pl.DataFrame({"job_id": ["long", "short"], "vc": ["a", "a"], "gpu_num": [2, 1],
                         "submit_time": [0, 5], "duration": [10**11, 60]})
    result = simulate(jobs, ClusterSpec({"a": (8,)}), "fifo")
    timeline = result.timeline
    step = sim_results.timeline_step(0, 10**11)
    assert timeline.height == 10**11 // step + 1 <= sim_results.MAX_SAMPLES
    assert timeline["time"].diff().drop_nulls().unique().to_list() == [step]
    # the short job runs between two samples; at every sample the long job holds its 2 GPUs
    assert timeline["idle_gpus"].unique().to_list() == [6]
    assert result.jobs.sort("job_id")["end"].to_list() == [10**11, 65]
    assert result.summary["overall"]["makespan"] == 10**11


def test_load_1e_minus_9_runs_with_a_coarse_timeline(tmp_path: Path) -> None:
    jobs = _write(tmp_path / "jobs.csv", CSV + "a,0,1,10\nb,100000,1,10\nc,200000,1,100000\n")
    out = tmp_path / "out"
    code, _, err = cli("simulate", str(jobs), "--format", "csv", "--cluster", str(_spec(tmp_path)), "--load", "1e-9",
                       "-o", str(out))
    assert code == 0, err
    timeline = pl.read_parquet(out / "timeline.parquet")
    assert timeline.height <= sim_results.MAX_SAMPLES
    done = pl.read_parquet(out / "jobs.parquet").sort("job_id")
    # inter-arrival times divided by the load, floored to whole seconds (a float division)
    assert np.allclose(done["submit"].to_numpy(), [0, 100_000 * 10**9, 200_000 * 10**9], rtol=0, atol=1)


def test_a_periodic_controller_over_an_absurd_span_is_refused_up_front(tmp_path: Path) -> None:
    jobs = _write(tmp_path / "jobs.csv", CSV + "a,0,1,10\nb,100000,1,10\n")
    line = refused("simulate", str(jobs), "--format", "csv", "--cluster", str(_spec(tmp_path)), "--load", "1e-9",
                   "--power", "ces", "-o", str(tmp_path / "out"))
    assert line.startswith(f"error: a periodic controller (such as --power ces) would step more than "
                           f"{sim_engine.MAX_TICKS:,} times over the 100,000,000,000,010 s")  # b's end: its run too


def test_a_periodic_controller_over_a_century_long_job_is_refused_up_front(tmp_path: Path) -> None:
    # the arrivals span 0 s, but the controller would tick every 600 s while the job runs: 5.26 million steps
    # (this ran for minutes and gigabytes before stopping)
    jobs = _write(tmp_path / "jobs.csv", CSV + f"a,0,1,{_common.MAX_SECONDS}\n")
    start = time.perf_counter()
    line = refused("simulate", str(jobs), "--format", "csv", "--cluster", str(_spec(tmp_path)), "--power", "ces",
                   "-o", str(tmp_path / "out"))
    assert time.perf_counter() - start < 60
    assert line == (f"error: a periodic controller (such as --power ces) would step more than {sim_engine.MAX_TICKS:,} "
                    "times over the 3,155,760,000 s from the first arrival to the earliest the last job can end; "
                    "shorten the trace or its longest jobs, or raise --load")
    assert not (tmp_path / "out").exists()


# --- every exception path mapped ---------------------------------------------------------------------------

def test_output_under_a_file_is_one_line(tmp_path: Path) -> None:
    jobs = _write(tmp_path / "jobs.csv", CSV + "a,0,1,5\n")
    blocker = _write(tmp_path / "taken", "x")
    assert refused("convert", str(jobs), "--format", "csv", "-o", str(blocker / "t.parquet")) == (
        f"error: cannot write into {blocker}: {blocker} is a file, not a folder")


def test_output_onto_a_link_or_a_device_is_refused_and_leaves_it(tmp_path: Path) -> None:
    # the temporary file was renamed over it: as root, -o /dev/null replaced the system's /dev/null
    jobs = _write(tmp_path / "jobs.csv", CSV + "a,0,1,5\n")
    real = _write(tmp_path / "real.csv", "kept\n")
    link = tmp_path / "link.csv"
    link.symlink_to(real)
    fifo = tmp_path / "pipe.csv"
    os.mkfifo(fifo)
    for target in (link, fifo):
        assert refused("convert", str(jobs), "--format", "csv", "-o", str(target)) == (
            f"error: cannot write {target}: it is a link or a device, not a regular file; outputs are written to a "
            "temporary file renamed into place, so name a regular file")
    assert link.is_symlink() and real.read_text() == "kept\n" and fifo.is_fifo()


def _raises(exc: BaseException) -> Callable[..., None]:
    """A stand-in for a library function that fails with ``exc`` whatever it is given."""

    def fail(*args: object, **kwargs: object) -> None:
        raise exc

    return fail


def test_output_in_proc_is_one_line(tmp_path: Path) -> None:
    jobs = _write(tmp_path / "jobs.csv", CSV + "a,0,1,5\n")
    line = refused("convert", str(jobs), "--format", "csv", "-o", "/proc/dlcluster-test.parquet")
    assert line.startswith("error: cannot write /proc/dlcluster-test.parquet: ")


def test_a_full_disk_is_one_line_and_leaves_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    jobs = _write(tmp_path / "jobs.csv", CSV + "a,0,1,5\n")

    monkeypatch.setattr(pl.DataFrame, "write_csv", _raises(OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))))
    out = tmp_path / "out.csv"
    assert refused("convert", str(jobs), "--format", "csv", "-o", str(out)) == (
        f"error: cannot write {out}: no space left on device")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["jobs.csv"]


def test_a_polars_write_error_from_a_full_disk_is_one_line(tmp_path: Path) -> None:
    def write(tmp: Path) -> None:
        raise pl.exceptions.ComputeError("failed to write: No space left on device (os error 28)")

    # (in the OS's words, as for an OSError: the same full disk was worded four ways)
    with pytest.raises(atomic.OutputError) as raised:
        atomic.write_atomic(tmp_path / "out.parquet", write)
    assert str(raised.value) == f"cannot write {tmp_path / 'out.parquet'}: no space left on device"
    assert list(tmp_path.iterdir()) == []


def test_permission_denied_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    jobs = _write(tmp_path / "jobs.csv", CSV + "a,0,1,5\n")

    denied = PermissionError(errno.EACCES, os.strerror(errno.EACCES))
    monkeypatch.setattr(atomic.tempfile, "mkstemp", _raises(denied))
    out = tmp_path / "out.parquet"
    assert refused("convert", str(jobs), "--format", "csv", "-o", str(out)) == (
        f"error: cannot write {out}: permission denied")


def test_an_unreadable_input_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    jobs = _write(tmp_path / "jobs.csv", CSV + "a,0,1,5\n")

    denied = PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(jobs))
    monkeypatch.setattr(pl, "read_csv", _raises(denied))
    assert refused("info", str(jobs), "--format", "csv") == f"error: {jobs}: permission denied"


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="no /dev/zero here")
def test_a_device_is_not_read_forever() -> None:
    assert refused("info", "/dev/zero", "--format", "csv") == "error: /dev/zero: is not a regular file"


def test_a_usage_error_is_one_line(tmp_path: Path) -> None:
    assert refused("info", str(tmp_path), "--bogus") == "error: No such option '--bogus'. (see dlcluster info --help)"


def test_debug_shows_the_traceback_of_bad_input_and_keeps_its_status(tmp_path: Path) -> None:
    missing = tmp_path / "missing.csv"
    code, _, err = cli("--debug", "info", str(missing))
    assert code == 2  # (1 is for dlcluster's own bugs)
    assert err.startswith("Traceback (most recent call last):") and "InputError" in err
    assert error_lines(err)[-1] == f"error: {missing}: no such file or folder"


def test_a_real_bug_is_still_an_internal_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    jobs = _write(tmp_path / "jobs.csv", CSV + "a,0,1,5\n")

    bug = ZeroDivisionError("division by zero\nsecond line")
    monkeypatch.setattr("dlcluster.cli.trace_cmds.trace_info", _raises(bug))
    code, _, err = cli("info", str(jobs), "--format", "csv")
    assert code == 1
    assert error_lines(err) == [
        "internal error: ZeroDivisionError: division by zero second line (run with --debug for details)"]


# --- degenerate but valid -----------------------------------------------------------------------------------

def test_an_empty_window_simulates_nothing_and_succeeds(tmp_path: Path) -> None:
    jobs = _write(tmp_path / "jobs.csv", CSV + "a,1577836800,1,60\n")
    out = tmp_path / "out"
    code, _, err = cli("simulate", str(jobs), "--format", "csv", "--cluster", str(_spec(tmp_path)), "--start",
                       "2021-01-01", "-o", str(out))
    assert code == 0, err
    assert json.loads((out / "summary.json").read_text())["overall"]["jobs"] == 0
    assert pl.read_parquet(out / "timeline.parquet").height == 0


def test_zero_duration_jobs_and_a_single_job_simulate(tmp_path: Path) -> None:
    jobs = pl.DataFrame({"job_id": ["a", "b"], "vc": ["v", "v"], "gpu_num": [1, 1], "submit_time": [0, 0],
                         "duration": [0, 0]})
    result = simulate(jobs, ClusterSpec({"v": (8,)}), "fifo")
    assert result.jobs["end"].to_list() == [0, 0] and result.jobs["queue_delay"].to_list() == [0, 0]
    one = simulate(jobs.head(1).with_columns(pl.lit(90).alias("duration")), ClusterSpec({"v": (8,)}), "fifo")
    assert one.jobs["end"].to_list() == [90]
    assert one.timeline["idle_gpus"].to_list() == [7, 7]  # samples at 0 and 60 s


def test_a_ten_year_span_simulates_quickly_with_a_coarsened_timeline(tmp_path: Path) -> None:
    years = 10 * 365 * 86400
    n = 200
    jobs = pl.DataFrame({"job_id": [str(i) for i in range(n)], "vc": ["v"] * n, "gpu_num": [1] * n,
                         "submit_time": np.linspace(0, years, n).astype(np.int64), "duration": [3600] * n})
    began = time.perf_counter()
    result = simulate(jobs, ClusterSpec({"v": (8,)}), "fifo")
    elapsed = time.perf_counter() - began
    step = result.timeline["time"][1] - result.timeline["time"][0]
    assert step == sim_results.timeline_step(0, years + 3600) == 360
    assert result.timeline.height <= sim_results.MAX_SAMPLES
    assert result.summary["overall"]["jobs"] == n
    assert elapsed < 60  # the bound for each case; a regression to per-60-s work over 10 years is far slower


def test_a_ten_year_trace_reads_and_converts(tmp_path: Path) -> None:
    path = _write(tmp_path / "jobs.csv", CSV + "a,946684800,1,60\nb,1262304000,1,60\n")  # 2000 and 2010
    out = tmp_path / "t.parquet"
    code, _, err = cli("convert", str(path), "--format", "csv", "-o", str(out))
    assert code == 0, err
    assert read_trace(out).jobs["submit_time"].to_list() == [946684800, 1262304000]


# --- the catalogue of docs/errors.md ------------------------------------------------------------------------

DOC = ROOT / "docs" / "errors.md"


def _catalogue() -> tuple[dict[str, str], list[tuple[list[str], str]]]:
    """The files (``file=NAME`` blocks) and the examples (``$ dlcluster ...`` and the line after) of errors.md."""
    files: dict[str, str] = {}
    examples: list[tuple[list[str], str]] = []
    for info, body in re.findall(r"```([^\n]*)\n(.*?)```", DOC.read_text(encoding="utf-8"), flags=re.S):
        named = re.search(r"file=(\S+)", info)
        if named:
            assert named.group(1) not in files, f"{named.group(1)} is shown twice"
            files[named.group(1)] = body
        elif info.strip() == "console":
            command, line = body.rstrip("\n").split("\n")
            assert command.startswith("$ dlcluster ")
            examples.append((shlex.split(command[len("$ dlcluster "):]), line))
    return files, examples


FILES, EXAMPLES = _catalogue()


def test_the_catalogue_has_one_example_per_class() -> None:
    assert len(EXAMPLES) >= 12
    headings = re.findall(r"^## (.+)$", DOC.read_text(encoding="utf-8"), flags=re.M)
    assert len(headings) >= 12


@pytest.mark.parametrize(("args", "line"), EXAMPLES, ids=[" ".join(a[:2]) + f"-{i}" for i, (a, _) in
                                                           enumerate(EXAMPLES)])
def test_catalogue_example(args: list[str], line: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name, body in FILES.items():
        (tmp_path / name).write_text(body)
    monkeypatch.chdir(tmp_path)
    assert refused(*args) == line


def test_the_documented_limits_are_the_codes() -> None:
    text = DOC.read_text(encoding="utf-8")
    assert (_common.MIN_TIME, _common.MAX_TIME) == (-2_208_988_800, 7_258_118_400)  # 1900-01-01, 2200-01-01 UTC
    assert "1900-01-01 to 2200-01-01 UTC" in text
    assert _common.MAX_SECONDS == 100 * 365.25 * 86400 and f"{_common.MAX_SECONDS:,} s (100 years)" in text
    assert f"{_common.MAX_COUNT:,} (and not negative)" in text
    for value, name in ((cluster_spec.MAX_NODES, "MAX_NODES"), (cluster_spec.MAX_GPUS_PER_NODE, "MAX_GPUS_PER_NODE"),
                        (cluster_spec.MAX_CPUS_PER_NODE, "MAX_CPUS_PER_NODE")):
        assert f"| {value:,} | `cluster.{name}` |" in text
    assert sim_failures.MAX_POOL_GPUS == cluster_spec.MAX_NODES
    assert f"| {sim_failures.MAX_POOL_GPUS:,} | `sim.failures.MAX_POOL_GPUS` |" in text
    assert f"| {philly.MAX_DEPTH} levels |" in text
    assert sim_prepare.LOAD_RANGE == synth_generate.LOAD_RANGE
    assert f"| {sim_prepare.LOAD_RANGE[0]:g} to {sim_prepare.LOAD_RANGE[1]:g} |" in text
    assert f"| {synth_generate.MAX_DAYS:,} days (100 years) |" in text and synth_generate.MAX_DAYS == 36_525
    assert f"| {synth_generate.MAX_JOBS:,} |" in text
    from dlcluster.synth.model import MAX_USERS

    assert MAX_USERS == synth_generate.MAX_JOBS and f"| {MAX_USERS:,} | `synth.model.MAX_USERS` |" in text
    from dlcluster.sweep.executors import MAX_WORKERS

    assert f"| `sweep --workers` | 1 to {MAX_WORKERS:,}, and no more workers start than the experiment has " \
        "cells | `sweep.executors.MAX_WORKERS` |" in text
    assert f"| {sim_results.MAX_SAMPLES:,}; a longer run samples every k·60 s |" in text
    assert f"| {sim_engine.MAX_TICKS:,} | `sim.engine.MAX_TICKS` |" in text
    assert f"| {sim_power.MAX_BOOT_SECONDS:,} s (one day) | `sim.power.MAX_BOOT_SECONDS` |" in text
    assert sim_power.MAX_BOOT_SECONDS == 86_400
    assert f"| {sim_power.MAX_WATTS:,} W | `sim.power.MAX_WATTS` |" in text
    assert f"| {ces_rules.MIN_RISK:g} to {1 - ces_rules.MIN_RISK:g} | `services.ces.rules.MIN_RISK` |" in text
    assert f"| {sim_speed.MIN_FACTOR:g} to 1 | `sim.speed.MIN_FACTOR` |" in text
    assert f"| {sim_speed.MAX_SERVERS:,} | `sim.speed.MAX_SERVERS` |" in text
    from dlcluster.cli.ces_cmd import ces

    step = next(p for p in ces.params if p.name == "step").type
    assert (step.min, step.max) == (60, 86_400) and "| 60 to 86,400 s | `cli.ces_cmd` |" in text
    assert f"| `simulate --retries` | {sim_failures.MAX_RETRIES:,} | `sim.failures.MAX_RETRIES` |" in text
    assert f"| {demand.MAX_DAYS:,} days (ten years) | `predict.demand.MAX_DAYS` |" in text
    assert f"| {_common.MAX_SECONDS // 60:,} minutes (100 years), a finite number |" in text


def test_an_output_that_is_the_input_is_refused_and_the_input_kept(tmp_path: Path) -> None:
    # (the atomic write replaced the user's trace with the estimates, a generated trace or its canonical form)
    text = CSV + "a,0,1,5\nb,60,2,300\n"
    jobs = _write(tmp_path / "jobs.csv", text)
    link = tmp_path / "link.csv"
    link.symlink_to(jobs)
    model = tmp_path / "model.json"
    for args, option, target in [
        (("predict", "run", str(jobs), "--format", "csv", "-o", str(jobs)), "--output", jobs),
        (("convert", str(jobs), "--format", "csv", "-o", str(link)), "-o", link),
        (("synth", "--fit", str(jobs), "--fit-format", "csv", "--days", "1", "-o", str(jobs)), "-o", jobs),
        (("synth", "--fit", str(jobs), "--fit-format", "csv", "--days", "1", "-o", str(tmp_path / "g.parquet"),
          "--save-model", str(jobs)), "--save-model", jobs),
    ]:
        assert refused(*args) == (f"error: {option} {target}: is the input {jobs} itself; choose another path for "
                                  "the output")
        assert jobs.read_text() == text
    assert refused("synth", "--preset", "philly", "--days", "1", "-o", str(model), "--save-model", str(model)) == (
        f"error: --save-model {model}: is the -o file too; choose another path for the model")
    assert not model.exists()


def test_an_output_onto_a_file_of_an_input_folder_is_refused_and_the_folder_kept(tmp_path: Path) -> None:
    # (predict run and convert replaced a Helios folder's cluster_log.csv with their output: exit 0, the trace gone)
    folder = tmp_path / "venus"
    assert cli("synth", "--preset", "helios-venus", "--days", "1", "--seed", "1", "--format", "helios", "-o",
               str(folder))[0] == 0
    log = folder / "cluster_log.csv"
    before = log.read_bytes()
    for args, option in [(("predict", "run", str(folder), "-o", str(log)), "--output"),
                         (("convert", str(folder), "-o", str(log)), "-o"),
                         (("synth", "--fit", str(folder), "--days", "1", "-o", str(log)), "-o")]:
        assert refused(*args) == (f"error: {option} {log}: is in the input folder {folder}, whose files the command "
                                  "reads; choose a path outside it for the output")
        assert log.read_bytes() == before


def test_an_output_folder_that_holds_an_input_is_refused_and_the_input_kept(tmp_path: Path) -> None:
    # (each input below has the name of a file its command writes in that folder, or lies where a report removes
    # files it did not write: all were replaced or removed)
    text = CSV + "a,0,1,5\nb,60,2,300\n"
    out = tmp_path / "out"
    (out / "tables").mkdir(parents=True)
    spec = _spec(tmp_path)
    cases = [
        (out / "jobs.csv", ("simulate", "{input}", "--format", "csv", "--cluster", str(spec), "-o", str(out)),
         "--output"),
        (out / "fifo" / "jobs.csv", ("simulate", "{input}", "--format", "csv", "-p", "fifo,sjf", "-o", str(out)),
         "--output"),
        (out / "predictions.csv", ("predict", "eval", "{input}", "--format", "csv", "-o", str(out)), "--output"),
        (out / "steps.csv", ("ces", "{input}", "--format", "csv", "-o", str(out)), "--output"),
        (out / "tables" / "x.csv", ("characterize", "{input}", "--format", "csv", "-o", str(out)), "-o"),
    ]
    for path, args, option in cases:
        path.parent.mkdir(parents=True, exist_ok=True)
        _write(path, text)
        assert refused(*(str(path) if a == "{input}" else a for a in args)) == (
            f"error: {option} {out}: holds the input {path}, which writing there could replace or remove; choose "
            "another folder for the output")
        assert path.read_text() == text
    # a cluster file in the folder counts too
    inside = _spec(out)
    trace = _write(tmp_path / "jobs.csv", text)
    assert refused("simulate", str(trace), "--format", "csv", "--cluster", str(inside), "-o", str(out)).startswith(
        f"error: --output {out}: holds the input {inside},")
