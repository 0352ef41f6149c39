"""Any CSV/Parquet job table through a column mapping (``--format csv``)."""

from __future__ import annotations

import datetime as dt
import json
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

from dlcluster.errors import ConfigError, InputError
from dlcluster.io import read_trace
from dlcluster.io.csv_mapped import write

SOURCE = (
    "id,submitted,began,ended,runtime_s,gpus,queue,who,state\n"
    "a,2020-06-09 18:41:01,2020-06-09 18:42:01,2020-06-09 19:42:01,3600.7,8,q1,alice,Succeeded\n"
    "b,2020-06-09 19:00:00,,,,1,q2,,QUEUED\n"
    "c,2020-06-09 19:30:00,2020-06-09 19:30:30,2020-06-09 19:31:00,,0,q2,bob,killed\n"
)
MAPPING = {"job_id": "id", "submit_time": "submitted", "start_time": "began", "end_time": "ended",
           "duration": "runtime_s", "gpu_num": "gpus", "vc": "queue", "user": "who", "status": "state"}


def _write(tmp_path: Path, text: str, name: str = "jobs.csv") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_mapping_and_wall_clock_times(tmp_path: Path) -> None:
    trace = read_trace(_write(tmp_path, SOURCE), format="csv", mapping=MAPPING, timezone="Europe/Berlin")
    jobs = trace.jobs
    assert jobs["job_id"].to_list() == ["a", "b", "c"]
    assert jobs["cluster"].unique().to_list() == ["jobs"]
    # 18:41:01 CEST (UTC+2) = 16:41:01 UTC
    assert jobs["submit_time"][0] == int(dt.datetime(2020, 6, 9, 16, 41, 1, tzinfo=dt.UTC).timestamp())
    assert jobs["duration"].to_list() == [3600, None, 30]  # given (sub-second dropped), else end − start
    assert jobs["queue_delay"].to_list() == [60, None, 30]
    assert jobs["status"].cast(pl.String).to_list() == ["completed", "pending", "cancelled"]
    assert jobs["vc"].to_list() == ["q1", "q2", "q2"] and jobs["user"].to_list() == ["alice", None, "bob"]


def test_same_named_columns_and_defaults(tmp_path: Path) -> None:
    path = _write(tmp_path, "submit_time,gpu_num,duration\n1000,2,5\n2000,0,\n")
    jobs = read_trace(path, format="csv", cluster="mine").jobs
    assert jobs["job_id"].to_list() == ["0", "1"] and jobs["vc"].to_list() == ["default", "default"]
    assert jobs["cluster"].to_list() == ["mine", "mine"] and jobs["status"].cast(pl.String).to_list() == ["other"] * 2
    assert jobs["submit_time"].to_list() == [1000, 2000]


def test_numeric_millisecond_epochs(tmp_path: Path) -> None:
    path = _write(tmp_path, "t,g\n1591720861123,1\n")
    jobs = read_trace(path, format="csv", mapping={"submit_time": "t", "gpu_num": "g"}, time_unit="ms").jobs
    assert jobs["submit_time"].to_list() == [1591720861]
    # a mapping or a time unit, options of a csv input only, say what a file of no known format is
    assert read_trace(path, mapping={"submit_time": "t", "gpu_num": "g"}, time_unit="ms").jobs.equals(jobs)


def test_time_unit_scales_times_not_durations(tmp_path: Path) -> None:
    path = _write(tmp_path, "submit_time,start_time,gpu_num,duration,queue_delay\n1591720861000,1591720871000,1,60,10\n")
    jobs = read_trace(path, format="csv", time_unit="ms").jobs
    assert jobs.select("start_time", "duration", "queue_delay", "end_time").row(0) == \
        (1591720871, 60, 10, 1591720931)


def test_explicit_offsets_are_kept(tmp_path: Path) -> None:
    path = _write(tmp_path, "submit_time,gpu_num\n2020-06-09T19:00:00+02:00\n2020-06-09T17:00:00Z,1\n"
                  .replace("+02:00\n", "+02:00,1\n"))
    jobs = read_trace(path, format="csv", timezone="Asia/Tokyo").jobs
    assert jobs["submit_time"][0] == jobs["submit_time"][1]


def test_parquet_source(tmp_path: Path) -> None:
    path = tmp_path / "p.parquet"
    pl.DataFrame({"sub": [dt.datetime(2020, 1, 1)], "g": [4]}).write_parquet(path)
    jobs = read_trace(path, format="csv", mapping={"submit_time": "sub", "gpu_num": "g"}, timezone="Asia/Shanghai").jobs
    assert jobs["submit_time"].to_list() == [int(dt.datetime(2019, 12, 31, 16, tzinfo=dt.UTC).timestamp())]
    assert jobs["gpu_num"].to_list() == [4]


def test_a_parquet_duration_reads_as_seconds_and_an_unmapped_list_is_ignored(tmp_path: Path) -> None:
    # (casting every column to text made either an internal error)
    path = tmp_path / "p.parquet"
    pl.DataFrame({"id": ["a"], "sub": [1600000000], "g": [1], "dur": [dt.timedelta(seconds=90, microseconds=5)],
                  "tags": [["x", "y"]]}).write_parquet(path)
    jobs = read_trace(path, format="csv", mapping={"job_id": "id", "submit_time": "sub", "gpu_num": "g",
                                                   "duration": "dur"}).jobs
    assert jobs.select("job_id", "duration").row(0) == ("a", 90)


def test_a_mapped_parquet_list_column_is_refused_in_one_line(tmp_path: Path) -> None:
    path = tmp_path / "p.parquet"
    pl.DataFrame({"id": [["x", "y"]], "sub": [1600000000], "g": [1]}).write_parquet(path)
    with pytest.raises(InputError) as err:
        read_trace(path, format="csv", mapping={"job_id": "id", "submit_time": "sub", "gpu_num": "g"})
    assert str(err.value) == (f"{path}, field 'id': holds List(String) values, not one value a row "
                              "(for canonical 'job_id')")


def test_columns_named_like_the_readers_own_are_plain_columns(tmp_path: Path) -> None:
    # a column _row was an internal error, and _index (common in Elasticsearch exports) was replaced by row numbers
    text = "_index,submit_time,gpu_num,_row,_wide,_i,_duration,_bad0\n"
    path = _write(tmp_path, text + "jobA,1600000000,1,x,y,z,5,w\njobB,1600000000,1,x,y,z,5,w\n")
    jobs = read_trace(path, format="csv", mapping={"job_id": "_index", "vc": "_row"}).jobs
    assert jobs.select("job_id", "vc", "duration").rows() == [("jobA", "x", None), ("jobB", "x", None)]
    path = _write(tmp_path, text + "jobA,1600000000,1,x,y,z,5,w\njobB,1600000000\n", "short.csv")
    with pytest.raises(InputError) as err:
        read_trace(path, format="csv", mapping={"job_id": "_index"})
    assert str(err.value) == f"{path}, line 3: has 2 fields, the header names 8"
    pl.DataFrame({"_index": ["jobA"], "_row": [1600000000], "gpu_num": [1]}).write_parquet(tmp_path / "p.parquet")
    jobs = read_trace(tmp_path / "p.parquet", format="csv", mapping={"job_id": "_index", "submit_time": "_row"}).jobs
    assert jobs.select("job_id", "submit_time").rows() == [("jobA", 1600000000)]


def test_round_trip_is_lossless(tmp_path: Path) -> None:
    original = read_trace(_write(tmp_path, SOURCE), format="csv", mapping=MAPPING)
    original = original.with_jobs(original.jobs.with_columns(
        pl.Series("name", ["x,y", "", None]), pl.Series("gpu_milli", [500, None, None], pl.Int32)))
    out = write(original, tmp_path / "jobs_out.csv")
    back = read_trace(out, format="csv")
    assert back.jobs.equals(original.jobs.with_columns(pl.lit("jobs").alias("cluster")))


def test_missing_canonical_column_suggests_map(tmp_path: Path) -> None:
    path = _write(tmp_path, SOURCE)
    with pytest.raises(InputError) as err:
        read_trace(path, format="csv", mapping={"submit_time": "submitted"})
    assert str(err.value) == (f"{path}: no column for canonical 'gpu_num' (found: id, submitted, began, ended, "
                              "runtime_s, gpus, queue, who, state); name it with --map gpu_num=COLUMN")


def test_mapping_to_absent_column_and_unknown_key(tmp_path: Path) -> None:
    path = _write(tmp_path, SOURCE)
    with pytest.raises(InputError, match=r"missing column 'gpu' \(mapped to gpu_num"):
        read_trace(path, format="csv", mapping={**MAPPING, "gpu_num": "gpu"})
    with pytest.raises(ConfigError, match="'gpus' is not a canonical column"):
        read_trace(path, format="csv", mapping={"gpus": "gpus"})


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ("d,2020-06-09 20:00:00,,,,1,q,u,exploded", "line 5, field 'state': unknown status 'exploded'"),
        ("d,2020-06-09 25:00:00,,,,1,q,u,done", "line 5, field 'submitted': cannot parse '2020-06-09 25:00:00' as a "
                                                 "date-time like the first one"),
        ("d,2020-06-09 20:00:00,,,,1.5,q,u,done", "line 5, field 'gpus': cannot parse '1.5' as a whole number"),
        ("d,2020-06-09 20:00:00,,,-3,1,q,u,done", "line 5, field 'runtime_s': negative value -3"),
        ("a,2020-06-09 20:00:00,,,,1,q,u,done", "line 5, field 'id': 'a' occurs more than once"),
        (" a ,2020-06-09 20:00:00,,,,1,q,u,done", "line 5, field 'id': ' a ' occurs more than once"),  # (trimmed)
        ("  ,2020-06-09 20:00:00,,,,1,q,u,done", "line 5, field 'id': value is empty"),
        # a run time that is not the row's own end − start (the Helios reader refuses such a row too); a second
        # either way is the rounding of sub-second parts (row a: 3600.7 s against 3,600 s)
        ("d,2020-06-09 20:00:00,2020-06-09 20:00:10,2020-06-09 20:01:00,5000,1,q,u,done",
         "line 5, field 'runtime_s': '5000' is not the row's end_time − start_time in seconds (--time-unit applies to "
         "times only)"),
    ],
)
def test_malformed_rows_name_file_line_field(tmp_path: Path, row: str, message: str) -> None:
    path = _write(tmp_path, SOURCE + row + "\n")
    with pytest.raises(InputError) as err:
        read_trace(path, format="csv", mapping=MAPPING)
    assert str(err.value) == f"{path}, {message}"


def test_a_queue_delay_that_is_not_start_minus_submit_is_refused(tmp_path: Path) -> None:
    # (as a duration off end − start is; a second either way is the rounding of sub-second parts)
    path = _write(tmp_path, "job_id,submit_time,start_time,end_time,gpu_num,queue_delay,duration\n"
                            "a,1600000000,1600000100,1600000200,1,100.9,100\nb,1600000000,1600000100,1600000200,1,5000,100\n")
    with pytest.raises(InputError) as err:
        read_trace(path, format="csv")
    assert str(err.value) == (f"{path}, line 3, field 'queue_delay': '5000' is not the row's start_time − submit_time "
                              "in seconds (--time-unit applies to times only)")


def test_an_end_before_the_submit_of_a_job_that_never_started_is_refused(tmp_path: Path) -> None:
    path = _write(tmp_path, "job_id,submit_time,end_time,gpu_num,status\na,1600000000,1590000000,1,completed\n")
    with pytest.raises(InputError) as err:
        read_trace(path, format="csv")
    assert str(err.value) == (f"{path}, line 2, field 'end_time': '1590000000' is before the submit time "
                              "(the job ends before it is submitted)")


def test_a_job_cancelled_in_the_repeated_hour_before_it_started_ends_after_its_submit(tmp_path: Path) -> None:
    # submitted 01:50 PDT, cancelled while queued at 01:10 PST (20 minutes later): its end was read as 01:10 PDT
    path = _write(tmp_path, "job_id,submit_time,start_time,end_time,gpu_num,status\n"
                            "a,2017-11-05 01:50:00,,2017-11-05 01:10:00,1,cancelled\n")
    jobs = read_trace(path, format="csv", timezone="America/Los_Angeles").jobs
    assert jobs.select("submit_time", "start_time", "end_time").row(0) == (1509871800, None, 1509873000)
    path = _write(tmp_path, "job_id,submit_time,end_time,gpu_num,status\n"  # (no start column at all)
                            "a,2017-11-05 01:50:00,2017-11-05 01:10:00,1,cancelled\n", "nostart.csv")
    jobs = read_trace(path, format="csv", timezone="America/Los_Angeles").jobs
    assert jobs.select("submit_time", "end_time").row(0) == (1509871800, 1509873000)


def test_names_are_trimmed_so_predicted_estimates_find_their_jobs(tmp_path: Path) -> None:
    # the estimates reader trims job ids, as the Helios reader does: "  x" in the trace matched no estimate
    trace = _write(tmp_path, "job_id,vc,gpu_num,submit_time,duration,user,cluster\n  x , v ,1,0,60, u, c\n"
                             "y,v,1,5,30,u,c\n")
    jobs = read_trace(trace, format="csv").jobs
    assert jobs.select("job_id", "vc", "user", "cluster").rows() == [("x", "v", "u", "c"), ("y", "v", "u", "c")]
    cluster = _write(tmp_path, "vc,nodes,gpus_per_node\nv,1,8\n", "cluster.csv")
    run = [sys.executable, "-m", "dlcluster"]
    est = tmp_path / "est.csv"
    done = subprocess.run([*run, "predict", "run", str(trace), "--format", "csv", "-o", str(est)], capture_output=True,
                          text=True, check=False)
    assert done.returncode == 0, done.stderr
    done = subprocess.run([*run, "simulate", str(trace), "--format", "csv", "--cluster", str(cluster), "-p", "qssf",
                           "--estimates", str(est), "-o", str(tmp_path / "sim")], capture_output=True, text=True,
                          check=False)
    assert done.returncode == 0, done.stderr


def test_a_column_mapped_elsewhere_does_not_also_fill_its_namesake(tmp_path: Path) -> None:
    # the README's Philly example maps vc=cluster: the source column "cluster" also filled canonical cluster
    path = _write(tmp_path, "timestamp,num_gpus,cluster,duration\n0,1,v1,60\n5,2,v2,60\n")
    jobs = read_trace(path, format="csv", mapping={"submit_time": "timestamp", "gpu_num": "num_gpus",
                                                    "vc": "cluster"}).jobs
    assert jobs["vc"].to_list() == ["v1", "v2"] and jobs["cluster"].to_list() == ["jobs", "jobs"]
    both = read_trace(path, format="csv", mapping={"submit_time": "timestamp", "gpu_num": "num_gpus",
                                                   "vc": "cluster", "cluster": "cluster"}).jobs
    assert both["cluster"].to_list() == ["v1", "v2"]  # (given both ways, it fills both)


def test_lenient_drops_and_counts(tmp_path: Path) -> None:
    path = _write(tmp_path, SOURCE + "d,2020-06-09 20:00:00,,,,x,q,u,done\ne,2020-06-09 20:00:00,,,,1,q,u,lost\n"
                  "f,2020-06-09 20:00:00,,,,1,q,u,DONE\n")
    trace = read_trace(path, format="csv", mapping=MAPPING, lenient=True)
    assert trace.jobs["job_id"].to_list() == ["a", "b", "c", "f"]
    assert trace.dropped == {"unparsable gpus": 1, "unknown state": 1}


def test_cli_info_with_map(tmp_path: Path) -> None:
    path = _write(tmp_path, SOURCE)
    spec = ",".join(f"{k}={v}" for k, v in MAPPING.items())
    out = subprocess.run([sys.executable, "-m", "dlcluster", "info", str(path), "--format", "csv", "--map", spec,
                          "--json"], capture_output=True, text=True, check=True)
    info = json.loads(out.stdout)
    assert info["format"] == "csv" and info["jobs"] == 3 and info["gpu_jobs"] == 2 and info["users"] == 2
    assert info["status_counts"] == {"completed": 1, "cancelled": 1, "pending": 1}
    assert info["start"] == "2020-06-09T18:41:01Z"


def test_cli_missing_column_exits_2(tmp_path: Path) -> None:
    path = _write(tmp_path, SOURCE)
    out = subprocess.run([sys.executable, "-m", "dlcluster", "info", str(path), "--format", "csv"],
                         capture_output=True, text=True)
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert "no column for canonical 'submit_time'" in out.stderr and "--map submit_time=COLUMN" in out.stderr


def test_a_table_of_starts_and_durations_gets_its_ends(tmp_path: Path) -> None:
    # (without end times no job was ever running: characterize put every job at load 0 and drew no utilisation)
    path = tmp_path / "sd.csv"
    path.write_text("job_id,submit_time,start_time,duration,gpu_num,status\na,100,160,3600,4,completed\n"
                    "b,200,,,1,pending\nc,300,400,50,2,running\nd,500,500,60,1,failed\n")
    jobs = read_trace(path, format="csv").jobs
    assert jobs["end_time"].to_list() == [3760, None, None, 560]
    assert jobs["duration"].to_list() == [3600, None, 50, 60]
