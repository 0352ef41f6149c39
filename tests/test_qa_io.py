"""Regression tests for odd-but-legal input and output paths found in QA of the readers and the CLI."""

from __future__ import annotations

import gzip
import importlib
import json
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

from dlcluster.errors import ConfigError, InputError
from dlcluster.io import detect_format, read_trace

PHILLY_JOBS = "timestamp,duration,num_gpus,gpu_time,cluster\n"
ROW = "2017-10-09 07:01:55,66.0,1,66.0,a\n"
HELIOS = "job_id,user,vc,gpu_num,cpu_num,node_num,state,submit_time,start_time,end_time,duration,queue\n"
SACCT = "JobID|User|Partition|Submit|Start|End|State|AllocTRES\n"
OPENB = ("name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,"
         "scheduled_time\n")


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "dlcluster", *args], capture_output=True, text=True, check=False)


def test_file_name_with_glob_characters_is_read_literally(tmp_path: Path) -> None:
    (tmp_path / "jobs[1].csv").write_text(PHILLY_JOBS + ROW)
    (tmp_path / "a*.csv").write_text(PHILLY_JOBS + ROW)
    (tmp_path / "ab.csv").write_text(PHILLY_JOBS + ROW + ROW)  # would match the pattern 'a*.csv'
    assert read_trace(tmp_path / "jobs[1].csv", format="philly-jobs").jobs.height == 1
    assert read_trace(tmp_path / "a*.csv", format="philly-jobs").jobs.height == 1


@pytest.mark.parametrize(
    ("fmt", "where", "message"),
    [
        ("philly-jobs", "", "is a folder, expected a file"),
        ("csv", "", "is a folder, expected a file"),
        ("parquet", "", "is a folder, expected a file"),
        ("helios", "/cluster_log.csv", "no such file"),
        ("philly", "/cluster_job_log", "no such file"),
    ],
)
def test_folder_for_a_file_format_is_a_one_line_error(tmp_path: Path, fmt: str, where: str, message: str) -> None:
    folder = tmp_path / "empty"
    folder.mkdir()
    with pytest.raises(InputError) as err:
        read_trace(folder, format=fmt)
    assert str(err.value) == f"{folder}{where}: {message}"


@pytest.mark.parametrize(
    ("fmt", "name", "text"),
    [
        ("philly-jobs", "jobs.csv", PHILLY_JOBS + ROW),
        ("sacct", "s.txt", SACCT + "1|u|p|2024-01-01T00:00:00|||PENDING|\n"),
        ("helios", "cluster_log.csv", HELIOS + "j,u,v,1,1,1,PENDING,2020-04-01 00:00:00,,,,\n"),
    ],
)
def test_unknown_time_zone_is_a_config_error(tmp_path: Path, fmt: str, name: str, text: str) -> None:
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(ConfigError, match=r"^unknown time zone 'Mars/Base' \(use an IANA name"):
        read_trace(path, format=fmt, timezone="Mars/Base")


def test_cli_unknown_time_zone_exits_2_with_one_line(tmp_path: Path) -> None:
    path = tmp_path / "jobs.csv"
    path.write_text(PHILLY_JOBS + ROW)
    res = _cli("info", str(path), "--tz", "Mars/Base")
    assert res.returncode == 2
    expected = "error: unknown time zone 'Mars/Base' (use an IANA name such as Asia/Shanghai)"
    assert res.stderr.strip().splitlines() == [expected]


def test_a_known_zone_in_the_wrong_case_is_named(tmp_path: Path) -> None:
    path = tmp_path / "jobs.csv"
    path.write_text(PHILLY_JOBS + ROW)
    for given, meant in (("utc", "UTC"), ("asia/shanghai", "Asia/Shanghai")):
        res = _cli("info", str(path), "--tz", given)
        assert (res.returncode, res.stderr.strip()) == (2, f"error: unknown time zone {given!r} (did you mean {meant!r}?)")


def test_sacct_row_without_jobid_is_reported_not_dropped(tmp_path: Path) -> None:
    path = tmp_path / "export.txt"
    path.write_text(SACCT + "1|u|p|2024-01-01T00:00:00|||PENDING|\n|u|p|2024-01-01T00:00:00|||PENDING|\n")
    with pytest.raises(InputError) as err:
        read_trace(path, format="sacct")
    assert str(err.value) == f"{path}, line 3, field 'JobID': value is empty"
    trace = read_trace(path, format="sacct", lenient=True)
    assert trace.jobs["job_id"].to_list() == ["1"] and trace.dropped == {"missing JobID": 1}


def test_a_required_value_that_means_none_and_an_empty_status_say_so(tmp_path: Path) -> None:
    # (they said "value is empty" of 'nan' and 'Unknown', and "unknown status None" of an empty status)
    from dlcluster.predict import read_estimates

    cases = ((read_estimates, "est.csv", "job_id,duration\na,nan\n", "field 'duration': no value ('nan')"),
             # (C's printf writes a negative NaN as -nan: it said "'-nan' is out of range (expected at most ...)")
             (read_estimates, "est.csv", "job_id,duration\na,-nan\n", "field 'duration': no value ('-nan')"),
             (lambda p: read_trace(p, format="sacct"), "export.txt", SACCT + "1|u|p|Unknown|||PENDING|\n",
              "field 'Submit': no value ('Unknown')"),
             (lambda p: read_trace(p, format="csv"), "jobs.csv",
              "job_id,vc,gpu_num,submit_time,duration,status\na,v,1,0,60,\n", "field 'status': value is empty"))
    for read, name, text, message in cases:
        path = tmp_path / name
        path.write_text(text)
        with pytest.raises(InputError) as err:
            read(path)
        assert str(err.value).startswith(f"{path}, line 2, {message}")


@pytest.mark.parametrize(
    ("fmt", "name", "text", "options", "where"),
    [
        ("helios", "cluster_log.csv",
         HELIOS + "j1,u,v,1,1,1,COMPLETED,2020-04-01 00:00:00,2020-04-01 00:10:00,2020-04-01 00:05:00,300,600\n",
         {}, "field 'end_time': '2020-04-01 00:05:00'"),
        ("openb", "openb_pod_list_x.csv", OPENB + "p1,1000,10,1,1000,,LS,Succeeded,0,5,10\n", {},
         "field 'deletion_time': '5'"),
        ("csv", "jobs.csv", "submit,start,end,gpus\n100,200,150,1\n",
         {"mapping": {"submit_time": "submit", "start_time": "start", "end_time": "end", "gpu_num": "gpus"}},
         "field 'end': '150'"),
    ],
)
def test_end_before_start_is_a_negative_duration_error(tmp_path: Path, fmt: str, name: str, text: str,
                                                       options: dict, where: str) -> None:
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(InputError) as err:
        read_trace(path, format=fmt, **options)
    assert str(err.value) == f"{path}, line 2, {where} is before the start time (negative duration)"
    trace = read_trace(path, format=fmt, lenient=True, **options)
    assert trace.jobs.height == 0 and trace.dropped == {"end before start": 1}


@pytest.mark.parametrize(
    ("fmt", "name", "text", "field", "value"),
    [
        ("philly-jobs", "jobs_processed.csv", "timestamp,duration,num_gpus,gpu_time,cluster\n"
         "2017-03-12 02:30:00,60.0,1,60.0,a\n", "timestamp", "2017-03-12 02:30:00"),
        ("csv", "jobs.csv", "job_id,submit_time,gpu_num\na,2017-03-12 02:30:00,1\n", "submit_time",
         "2017-03-12 02:30:00"),
        ("sacct", "c.txt", "JobID|JobName|User|Account|Partition|Submit|Start|End|Elapsed|State|NNodes|NCPUS|AllocTRES|"
         "ReqTRES\n7|a|u|l|gpu|2017-03-12T01:50:00|2017-03-12T02:10:00|2017-03-12T03:40:00|00:30:00|COMPLETED|1|8||\n",
         "Start", "2017-03-12T02:10:00"),
    ],
)
def test_a_time_the_clocks_skip_is_named_as_such(tmp_path: Path, fmt: str, name: str, text: str, field: str,
                                                 value: str) -> None:
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(InputError) as err:
        read_trace(path, format=fmt, timezone="America/Los_Angeles")
    assert str(err.value) == (f"{path}, line 2, field '{field}': '{value}' is no such time in America/Los_Angeles "
                              "(the clocks skip it when daylight saving starts)")
    assert read_trace(path, format=fmt, timezone="America/Los_Angeles", lenient=True).dropped == \
        {f"skipped time {field}": 1}


@pytest.mark.parametrize("fmt", ["csv", "philly-jobs", "helios", "swf", "sacct"])
def test_a_binary_file_is_a_one_line_error_without_its_bytes(tmp_path: Path, fmt: str) -> None:
    path = tmp_path / "bin.csv"
    path.write_bytes(b"\x7fELF\x02\x01\x01\x00" + bytes(range(256)) * 4)
    with pytest.raises(InputError) as err:
        read_trace(path, format=fmt)
    assert str(err.value) == f"{path}: not a text file (it holds NUL bytes): a CSV or text export was expected"


def test_a_byte_order_mark_does_not_hide_the_format(tmp_path: Path) -> None:
    # spreadsheet programs save UTF-8 CSV with a byte-order mark
    path = tmp_path / "jobs_processed.csv"
    path.write_text("\ufefftimestamp,duration,num_gpus,gpu_time,cluster\n2017-10-01 00:00:00,60.0,1,60.0,a\n",
                    encoding="utf-8")
    assert detect_format(path) == "philly-jobs"
    assert read_trace(path).jobs["gpu_num"].to_list() == [1]


@pytest.mark.parametrize(("row", "message"), [
    ("2020-04-01 00:09:00,2020-04-01 00:09:00,2020-04-01 00:10:00,999,0",
     "field 'duration': '999' is not the row's end_time − start_time"),
    ("2020-04-01 00:08:00,2020-04-01 00:09:00,2020-04-01 00:10:00,60,0",
     "field 'queue': '0' is not the row's start_time − submit_time"),
])
def test_a_helios_row_whose_duration_or_queue_contradicts_its_times_is_refused(tmp_path: Path, row: str,
                                                                                message: str) -> None:
    path = tmp_path / "cluster_log.csv"
    path.write_text(HELIOS + f"5,u3,vcB,1,4,1,COMPLETED,{row}\n")
    with pytest.raises(InputError) as err:
        read_trace(path, format="helios")
    assert str(err.value) == f"{path}, line 2, {message}"


def test_a_gzipped_csv_is_detected_and_read_with_its_line_numbers(tmp_path: Path) -> None:
    header = "timestamp,duration,num_gpus,gpu_time,cluster\n"
    good = tmp_path / "jobs_processed.csv.gz"
    good.write_bytes(gzip.compress((header + "2017-10-01 00:00:00,60.0,2,120.0,a\n").encode()))
    assert detect_format(good) == "philly-jobs"
    assert read_trace(good).jobs["gpu_num"].to_list() == [2]
    canonical = tmp_path / "jobs.csv.gz"
    canonical.write_bytes(gzip.compress(b"job_id,cluster,vc,gpu_num,submit_time,status\na,c,v,1,1600000000,completed\n"))
    assert detect_format(canonical) == "csv"
    wide = tmp_path / "wide.csv.gz"
    wide.write_bytes(gzip.compress((header + "2017-10-01 00:00:00,60.0,2,120.0,a\n"
                                    "2017-10-01 00:00:01,60.0,1,60.0,a,extra\n").encode()))
    with pytest.raises(InputError) as err:
        read_trace(wide)
    assert str(err.value) == f"{wide}, line 3: has 6 fields, the header names 5"


def test_a_compressed_trace_gets_the_cluster_name_of_the_plain_file(tmp_path: Path) -> None:
    # (jobs.csv.gz was cluster 'jobs.csv' where jobs.csv is 'jobs')
    text = "job_id,vc,gpu_num,submit_time,duration\na,v,1,1600000000,60\n"
    (tmp_path / "jobs.csv").write_text(text)
    (tmp_path / "z" / "jobs.csv.gz").parent.mkdir()
    (tmp_path / "z" / "jobs.csv.gz").write_bytes(gzip.compress(text.encode()))
    names = [read_trace(p, format="csv", timezone="UTC").jobs["cluster"].to_list()
             for p in (tmp_path / "jobs.csv", tmp_path / "z" / "jobs.csv.gz")]
    assert names == [["jobs"], ["jobs"]]


def _zstd(path: Path, text: str) -> Path:
    """``text`` zstd-compressed into ``path`` (by pyarrow, a dependency: Python 3.11 has no zstd module)."""
    import pyarrow as pa

    with pa.CompressedOutputStream(str(path), "zstd") as out:
        out.write(text.encode())
    return path


def test_a_zstd_csv_is_detected_and_read_like_the_plain_file(tmp_path: Path) -> None:
    # (a .csv.gz was detected, a .csv.zst was not: "cannot tell the trace format"; nor did its header reach a sniffer)
    text = "job_id,cluster,vc,gpu_num,submit_time,status,duration\n" + "".join(
        f"j{i},c,v{i % 3},{1 + i % 8},{1600000000 + 37 * i},{('completed', 'failed')[i % 2]},{60 + i}\n"
        for i in range(500))
    plain = tmp_path / "jobs.csv"
    plain.write_text(text)
    packed = _zstd(tmp_path / "jobs.csv.zst", text)
    assert packed.read_bytes()[:4] == b"\x28\xb5\x2f\xfd"
    assert detect_format(packed) == detect_format(plain) == "csv"
    assert read_trace(packed).jobs.equals(read_trace(plain).jobs)
    # a format told by its header alone, and a bad row's line number (the slow path decodes the file too)
    good = _zstd(tmp_path / "jobs_processed.csv.zst", PHILLY_JOBS + ROW)
    assert detect_format(good) == "philly-jobs" and read_trace(good).jobs["gpu_num"].to_list() == [1]
    export = _zstd(tmp_path / "export.txt.zst", SACCT + "1|u|p|2024-01-01T00:00:00|||PENDING|\n")
    assert detect_format(export) == "sacct" and read_trace(export).jobs["job_id"].to_list() == ["1"]
    wide = _zstd(tmp_path / "wide.csv.zst", PHILLY_JOBS + ROW + "2017-10-09 07:01:56,60.0,1,60.0,a,extra\n")
    with pytest.raises(InputError) as err:
        read_trace(wide)
    assert str(err.value) == f"{wide}, line 3: has 6 fields, the header names 5"
    # the command line: the same summary as the plain file's
    info, plain_info = _cli("info", str(packed), "--json"), _cli("info", str(plain), "--json")
    assert info.returncode == 0, info.stderr
    assert json.loads(info.stdout) == json.loads(plain_info.stdout)
    assert json.loads(info.stdout)["jobs"] == 500


def test_a_csv_job_ending_in_the_repeated_autumn_hour_is_not_a_negative_duration(tmp_path: Path) -> None:
    # 01:40 EDT to 01:10 EST on 2021-11-07 (the clocks went back at 02:00 EDT while it ran): 30 minutes
    path = tmp_path / "jobs.csv"
    path.write_text("job_id,submit_time,start_time,end_time,gpu_num,vc\n"
                    "a,2021-11-07 01:10:00,2021-11-07 01:40:00,2021-11-07 01:10:00,1,v\n"
                    "b,2021-11-07 01:00:00,2021-11-07 01:05:00,2021-11-07 01:35:00,1,v\n")
    jobs = read_trace(path, format="csv", timezone="America/New_York").jobs
    assert jobs["duration"].to_list() == [1800, 1800]
    assert jobs["start_time"].to_list() == [1636263600, 1636261500]
    # submitted 01:50 EDT, started 01:10 EST: 20 minutes in the queue (it was refused as starting before its submit)
    path.write_text("job_id,submit_time,start_time,end_time,gpu_num,vc\n"
                    "c,2021-11-07 01:50:00,2021-11-07 01:10:00,2021-11-07 01:20:00,1,v\n")
    jobs = read_trace(path, format="csv", timezone="America/New_York").jobs
    assert jobs.select("queue_delay", "duration").row(0) == (1200, 600)


def test_convert_to_csv_says_how_to_read_the_time_zone_back(tmp_path: Path) -> None:
    # a CSV keeps no time zone: read back as UTC, its local hours and days moved (Parquet and SWF keep it)
    src = tmp_path / "jobs.csv"
    src.write_text(PHILLY_JOBS + ROW)
    zone = read_trace(src).timezone
    assert zone != "UTC"
    for name, noted in (("out.csv", True), ("out.swf", False), ("out.parquet", False)):
        res = _cli("convert", str(src), "-o", str(tmp_path / name))
        note = f"note: {name} keeps no time zone: read it with --tz {zone} for local hours and days"
        assert res.returncode == 0 and (note in res.stderr) == noted, res.stderr
    back = read_trace(tmp_path / "out.csv", timezone=zone)
    assert back.timezone == zone and back.jobs.equals(read_trace(tmp_path / "out.parquet").jobs)


def test_convert_to_swf_says_it_keeps_no_gpu_shares(tmp_path: Path) -> None:
    # a job at 250 per mille of a GPU came back from SWF as holding a whole GPU, without a word
    src = tmp_path / "jobs.csv"
    src.write_text("job_id,vc,gpu_num,gpu_milli,submit_time,duration\na,v,1,250,0,60\nb,v,1,1000,5,60\nc,v,2,,9,60\n")
    for name, noted in (("out.swf", True), ("out.parquet", False), ("out.csv", False)):
        res = _cli("convert", str(src), "--format", "csv", "-o", str(tmp_path / name))
        note = (f"note: {name} keeps no GPU shares (gpu_milli): 1 job(s) that held part of a GPU read back as holding "
                "whole GPUs")
        assert res.returncode == 0 and (note in res.stderr) == noted, res.stderr
    assert read_trace(tmp_path / "out.swf").jobs["gpu_milli"].null_count() == 3


def test_convert_to_swf_says_which_statuses_and_ends_it_keeps_not(tmp_path: Path) -> None:
    # timeout and node_fail came back from SWF as other, and a running job as ended, without a word
    src = tmp_path / "jobs.csv"
    src.write_text("job_id,vc,user,submit_time,start_time,end_time,duration,gpu_num,status\n"
                   "1,v,u,1600000000,1600000000,1600003600,3600,1,timeout\n"
                   "2,v,u,1600000100,1600000100,1600000200,100,8,node_fail\n"
                   "3,v,u,1600000200,1600000200,,1800,2,running\n"
                   "4,v,u,1600000300,,,,2,pending\n")
    notes = ["note: out.swf keeps no timeout or node_fail status: 2 timeout/node_fail job(s) are written as failed",
             "note: out.swf keeps no missing end: 1 job(s) that started and have no end (running, or with the end "
             "unrecorded) are written with their run time (so far) and read back as ended at start + that time"]
    for name, noted in (("out.swf", True), ("out.parquet", False), ("out.csv", False)):
        res = _cli("convert", str(src), "--format", "csv", "--tz", "UTC", "-o", str(tmp_path / name))
        assert res.returncode == 0, res.stderr
        assert [line for line in res.stderr.splitlines() if line.startswith("note:")] == (notes if noted else [])
    back = read_trace(tmp_path / "out.swf").jobs
    assert back["status"].cast(pl.String).to_list() == ["failed", "failed", "other", "other"]
    assert back["end_time"].to_list() == [1600003600, 1600000200, 1600002000, None]


def test_convert_to_csv_says_an_ended_job_without_an_end_reads_back_with_one(tmp_path: Path) -> None:
    # a job cancelled after it started, with a run time but no end, read back from CSV with end = start + run time
    (tmp_path / "h5").mkdir()
    (tmp_path / "h5" / "cluster_log.csv").write_text(
        HELIOS + "j1,u,v,1,4,1,CANCELLED,2020-04-01 00:10:00,2020-04-01 00:20:00,,100,600\n"
        "j2,u,v,1,4,1,RUNNING,2020-04-01 00:10:00,2020-04-01 00:20:00,,100,600\n")
    note = ("note: out.csv keeps no missing end: 1 job(s) that started and are not running read back as ended at "
            "start + run time")
    for name, noted in (("out.csv", True), ("out.parquet", False)):
        res = _cli("convert", str(tmp_path / "h5"), "-o", str(tmp_path / name))
        assert res.returncode == 0 and (note in res.stderr) == noted, res.stderr


def test_convert_to_csv_or_swf_says_it_keeps_no_cluster_spec(tmp_path: Path) -> None:
    # a synth Parquet trace lost its cluster spec in CSV or SWF, without a word: simulate then asked for --cluster
    from dataclasses import replace

    from dlcluster.cluster import ClusterSpec
    from dlcluster.io import parquet

    src = tmp_path / "jobs.csv"
    src.write_text("job_id,vc,gpu_num,submit_time,duration\na,v,1,0,60\n")
    trace = replace(read_trace(src, format="csv"), cluster=ClusterSpec.uniform({"v": 2}))
    parquet.write(trace, tmp_path / "spec.parquet")
    for name, noted in (("out.csv", True), ("out.swf", True), ("out.parquet", False)):
        res = _cli("convert", str(tmp_path / "spec.parquet"), "-o", str(tmp_path / name))
        note = (f"note: {name} keeps no cluster spec: simulate, ces and characterize of it will need --cluster FILE "
                "(a Parquet output keeps it)")
        assert res.returncode == 0 and (note in res.stderr) == noted, res.stderr
    assert read_trace(tmp_path / "out.parquet").cluster is not None
    plain = _cli("convert", str(src), "--format", "csv", "--tz", "UTC", "-o", str(tmp_path / "plain.swf"))
    assert plain.returncode == 0 and "note" not in plain.stderr, plain.stderr


def test_convert_of_a_philly_folder_says_it_keeps_no_attempts(tmp_path: Path) -> None:
    # a job's two attempts were gone from the Parquet or CSV, without a word (failures replay and characterize use them)
    folder = tmp_path / "ph"
    folder.mkdir()
    attempt = {"detail": [{"ip": "m1", "gpus": ["gpu0", "gpu1"]}]}
    (folder / "cluster_job_log").write_text(json.dumps([{
        "status": "Pass", "vc": "vc1", "jobid": "application_1", "submitted_time": "2017-10-01 09:50:00", "user": "u1",
        "attempts": [{"start_time": "2017-10-01 10:00:00", "end_time": "2017-10-01 10:30:00", **attempt},
                     {"start_time": "2017-10-01 11:00:00", "end_time": "2017-10-01 12:00:00", **attempt}]}]))
    for name in ("out.parquet", "out.csv", "out.swf"):
        res = _cli("convert", str(folder), "-o", str(tmp_path / name))
        note = (f"note: {name} keeps no attempts table: the 2 attempts of 1 job read back as one run per job, from its "
                "first start to its last end (simulate --failures replay and characterize's failures read them from "
                "the Philly folder)")
        assert res.returncode == 0 and note in res.stderr, res.stderr
    plain = _cli("convert", str(tmp_path / "out.parquet"), "-o", str(tmp_path / "again.parquet"))
    assert plain.returncode == 0 and "attempts" not in plain.stderr, plain.stderr


def test_convert_onto_a_folder_is_a_one_line_error(tmp_path: Path) -> None:
    src = tmp_path / "jobs.csv"
    src.write_text(PHILLY_JOBS + ROW)
    (tmp_path / "out.parquet").mkdir()
    res = _cli("convert", str(src), "-o", str(tmp_path / "out.parquet"))
    assert res.returncode == 2
    assert res.stderr.strip() == f"error: -o {tmp_path / 'out.parquet'}: is a folder, expected a parquet file name"


def test_convert_bad_suffix_does_not_point_at_the_input_format_option(tmp_path: Path) -> None:
    src = tmp_path / "jobs.csv"
    src.write_text(PHILLY_JOBS + ROW)
    res = _cli("convert", str(src), "-o", str(tmp_path / "out.txt"))
    assert res.returncode == 2
    assert "--format" not in res.stderr and "use .parquet/.swf/.csv" in res.stderr


def test_synth_folder_format_onto_a_file_is_a_one_line_error(tmp_path: Path) -> None:
    target = tmp_path / "taken"
    target.write_text("x")
    res = _cli("synth", "--preset", "philly", "--days", "0.1", "-f", "helios", "-o", str(target))
    assert res.returncode == 2
    assert res.stderr.strip() == f"error: -o {target}: is a file, but the helios format is written as a folder"
    assert target.read_text() == "x"


# per folder format, two steps of its writer: one before its job log is written, one after (the cluster file)
FOLDER_WRITER_STEPS = {"helios": ("conform", "_gpu_number_table"), "philly": ("_records", "write_text_atomic")}


@pytest.mark.parametrize("fmt", list(FOLDER_WRITER_STEPS))
def test_synth_interrupted_while_writing_a_folder_leaves_no_new_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                       fmt: str) -> None:
    """Ctrl-C while ``synth --format helios/philly -o NEWDIR`` writes leaves no NEWDIR, empty or half written, and no
    temporary folder; an existing complete folder is left as it was."""
    from dlcluster.cli import main

    module = importlib.import_module(f"dlcluster.io.{fmt}")
    args = ["synth", "--preset", "helios-venus", "--days", "1", "-f", fmt, "-o"]

    def interrupt(*_args: object) -> None:
        raise KeyboardInterrupt

    for step in FOLDER_WRITER_STEPS[fmt]:
        with monkeypatch.context() as patched, pytest.raises(SystemExit) as stopped:
            patched.setattr(module, step, interrupt)
            main([*args, str(tmp_path / "new")])
        assert stopped.value.code == 130
        assert list(tmp_path.iterdir()) == [], step
    done = tmp_path / "done"
    main([*args, str(done)])
    before = {p.name: p.read_bytes() for p in done.iterdir()}
    monkeypatch.setattr(module, FOLDER_WRITER_STEPS[fmt][0], interrupt)
    with pytest.raises(SystemExit):
        main([*args, str(done), "--seed", "2"])
    assert {p.name: p.read_bytes() for p in done.iterdir()} == before


def test_synth_refuses_to_mix_two_folder_formats(tmp_path: Path) -> None:
    folder = tmp_path / "trace"
    assert _cli("synth", "--preset", "philly", "--days", "0.1", "-f", "helios", "-o", str(folder)).returncode == 0
    res = _cli("synth", "--preset", "philly", "--days", "0.1", "-f", "philly", "-o", str(folder))
    assert res.returncode == 2
    assert res.stderr.strip() == f"error: -o {folder}: already holds a helios trace; write the philly trace to " \
                                 "another folder"
    assert not (folder / "cluster_job_log").exists()
    assert read_trace(folder).format == "helios"


def test_an_option_the_format_does_not_take_is_named(tmp_path: Path) -> None:
    from dlcluster.errors import ConfigError
    from dlcluster.io import read_trace

    path = tmp_path / "pods.csv"
    path.write_text("name,cpu_milli,memory_mib,num_gpu,gpu_milli\np0,1000,1024,1,1000\n")
    with pytest.raises(ConfigError, match=r"^--tz does not apply to the openb format"):
        read_trace(path, timezone="Asia/Tokyo")
    with pytest.raises(ConfigError, match=r"^--map does not apply to the openb format"):
        read_trace(path, mapping={"job_id": "name"})
    assert read_trace(path).jobs.height == 1


def test_info_ends_a_trace_without_end_times_at_its_last_submit_plus_duration(tmp_path: Path) -> None:
    # (the span ended at the last submission, while the GPU-hours counted the runs after it)
    path = tmp_path / "t.csv"
    path.write_text("job_id,submit_time,gpu_num,duration\na,1600000000,2,3600\nb,1600000100,1,60\n")
    got = json.loads(subprocess.run([sys.executable, "-m", "dlcluster", "info", str(path), "--format", "csv", "--tz",
                                     "UTC", "--json"], capture_output=True, text=True, check=True).stdout)
    assert (got["start"], got["end"], got["gpu_hours"]) == ("2020-09-13T12:26:40Z", "2020-09-13T13:26:40Z", 2.0)
    # a job still running (no end) ran its duration so far from its start, not from its submit
    path.write_text("job_id,submit_time,start_time,gpu_num,duration,status\na,1600000000,1600036000,1,3600,running\n")
    got = json.loads(subprocess.run([sys.executable, "-m", "dlcluster", "info", str(path), "--format", "csv", "--tz",
                                     "UTC", "--json"], capture_output=True, text=True, check=True).stdout)
    assert got["end"] == "2020-09-13T23:26:40Z"


@pytest.mark.parametrize(("command", "message"), [
    (["convert", "IN"], "is a folder, expected a file name ending .parquet/.swf/.csv\n"),
    (["synth", "--preset", "philly", "--days", "1"],
     "is a folder, expected a file name ending .parquet/.swf/.csv (or --format helios or philly, written as a folder)\n"),
])
def test_an_existing_folder_as_a_file_output_says_so(tmp_path: Path, command: list[str], message: str) -> None:
    # (it said "cannot tell the output format from suffix ''")
    source = tmp_path / "t.csv"
    source.write_text("job_id,submit_time,gpu_num,duration\na,1600000000,2,3600\n")
    (tmp_path / "adir").mkdir()
    args = [str(source) if a == "IN" else a for a in command]
    done = subprocess.run([sys.executable, "-m", "dlcluster", *args, "-o", str(tmp_path / "adir")], capture_output=True,
                          text=True)
    assert (done.returncode, done.stderr) == (2, f"error: -o {tmp_path / 'adir'}: {message}")
