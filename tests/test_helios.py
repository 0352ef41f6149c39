"""The Helios reader and writer (cluster folder with cluster_log.csv and cluster_gpu_number.csv)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

from dlcluster.cluster import ClusterSpec
from dlcluster.errors import InputError
from dlcluster.io import detect_format, helios, read_trace
from dlcluster.schema import conform, validate
from dlcluster.trace import Trace

HEADER = "job_id,user,vc,gpu_num,cpu_num,node_num,state,submit_time,start_time,end_time,duration,queue\n"
GOOD = (
    "101,u1,vcA,8,32,1,COMPLETED,2020-04-01 08:00:00,2020-04-01 08:00:10,2020-04-01 09:00:10,3600,10\n"
    "102,u2,vcB,0,4,1,FAILED,2020-04-01 09:00:00,2020-04-01 09:00:00,2020-04-01 09:00:05,5,0\n"
    "103,u1,vcA,2,8,1,PENDING,2020-04-02 00:30:00,,,,\n"
    "104,u3,vcA,1,2,1,SUSPENDED,2020-04-02 01:00:00,2020-04-02 01:00:00,2020-04-02 02:00:00,3600,0\n"
)


def _folder(tmp_path: Path, body: str, name: str = "Venus") -> Path:
    folder = tmp_path / name
    folder.mkdir()
    (folder / "cluster_log.csv").write_text(HEADER + body)
    return folder


def test_reads_shanghai_wall_clock_as_utc_and_maps_fields(tmp_path: Path) -> None:
    trace = read_trace(_folder(tmp_path, GOOD))
    jobs = trace.jobs
    assert trace.format == "helios" and trace.timezone == "Asia/Shanghai"
    assert jobs["cluster"].unique().to_list() == ["venus"]
    # 2020-04-01 08:00:00 in Shanghai (UTC+8, no DST) is 2020-04-01 00:00:00 UTC
    assert jobs["submit_time"][0] == 1585699200
    assert jobs["start_time"][0] == 1585699210 and jobs["end_time"][0] == 1585702810
    assert jobs["status"].cast(pl.String).to_list() == ["completed", "failed", "pending", "other"]
    assert jobs["duration"].to_list() == [3600, 5, None, 3600]
    assert jobs["queue_delay"].to_list() == [10, 0, None, 0]
    assert jobs.row(2, named=True)["start_time"] is None and jobs["gpu_num"].to_list() == [8, 0, 2, 1]
    validate(jobs)


def test_sniff_folder_and_file(tmp_path: Path) -> None:
    folder = _folder(tmp_path, GOOD)
    assert detect_format(folder) == "helios"
    assert detect_format(folder / "cluster_log.csv") == "helios"
    other = tmp_path / "x.csv"
    other.write_text("job_id,user,vc\n1,u,v\n")
    assert not helios.sniff(other)


def test_cluster_option_and_timezone_option(tmp_path: Path) -> None:
    trace = read_trace(_folder(tmp_path, GOOD), cluster="mine", timezone="UTC")
    assert trace.jobs["cluster"][0] == "mine"
    assert trace.jobs["submit_time"][0] == 1585728000  # 08:00 read as UTC


def test_attaches_cluster_spec_at_date(shared_data: Path, tmp_path: Path) -> None:
    folder = _folder(tmp_path, GOOD, name="venus")
    numbers = shared_data / "helios/venus/cluster_gpu_number.csv"
    shutil.copy(numbers, folder / "cluster_gpu_number.csv")
    table = pl.read_csv(numbers)
    assert read_trace(folder).cluster.total_gpus == table["total"][-1]
    on_day = table.filter(pl.col("date") == "2020-09-10")["total"][0]
    assert read_trace(folder, cluster_date="2020-09-10").cluster.total_gpus == on_day


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (GOOD.splitlines(keepends=True)[0]
         + "105,u1,vcA,1,1,1,COMPLETED,2020-04-31 08:00:00,2020-04-01 08:00:10,2020-04-01 09:00:10,3600,10\n",
         "line 3, field 'submit_time': cannot parse '2020-04-31 08:00:00' as a time (YYYY-MM-DD HH:MM:SS)"),
        ("105,u1,vcA,1,1,1,COMPLETED,2020-04-01 08:00:00,2020-04-01 08:00:10,2020-04-01 09:00:10,-3600,10\n",
         "line 2, field 'duration': negative value -3600"),
        ("105,u1,vcA,1.5,1,1,COMPLETED,2020-04-01 08:00:00,2020-04-01 08:00:10,2020-04-01 09:00:10,3600,10\n",
         "line 2, field 'gpu_num': cannot parse '1.5' as a whole number of GPUs"),
        ("105,u1,vcA,1,1,1,DONE,2020-04-01 08:00:00,2020-04-01 08:00:10,2020-04-01 09:00:10,3600,10\n",
         "line 2, field 'state': unknown status 'DONE'"),
        ("105,u1,vcA,1,1,1,COMPLETED,2020-04-01 08:00:00,,2020-04-01 09:00:10,3600,10\n",
         "line 2, field 'start_time': value is empty (required unless the job is pending or cancelled)"),
        (GOOD.splitlines(keepends=True)[0] * 2, "line 3, field 'job_id': '101' occurs more than once"),
        # only spaces is no id or VC (the canonical CSV of the trace could not be read back)
        ("  ,u1,vcA,1,1,1,COMPLETED,2020-04-01 08:00:00,2020-04-01 08:00:10,2020-04-01 09:00:10,3600,10\n",
         "line 2, field 'job_id': value is empty"),
        ("105,u1,  ,1,1,1,COMPLETED,2020-04-01 08:00:00,2020-04-01 08:00:10,2020-04-01 09:00:10,3600,10\n",
         "line 2, field 'vc': value is empty"),
        # a job cancelled while queued has no start: its end is checked against its submit
        ("105,u1,vcA,1,1,1,CANCELLED,2020-04-01 08:00:00,,2020-04-01 07:00:00,,\n",
         "line 2, field 'end_time': '2020-04-01 07:00:00' is before the submit time (the job ends before it is "
         "submitted)"),
    ],
)
def test_malformed_rows_name_file_line_field(tmp_path: Path, body: str, message: str) -> None:
    path = _folder(tmp_path, body) / "cluster_log.csv"
    with pytest.raises(InputError) as err:
        read_trace(path.parent)
    assert str(err.value) == f"{path}, {message}"


def test_missing_column(tmp_path: Path) -> None:
    path = tmp_path / "cluster_log.csv"
    path.write_text(HEADER.replace(",queue", "") + "1,u,v,1,1,1,COMPLETED,2020-04-01 08:00:00,,,\n")
    with pytest.raises(InputError) as err:
        helios.read(path)
    assert str(err.value).startswith(f"{path}: missing column 'queue'")


def test_lenient_drops_and_counts(tmp_path: Path) -> None:
    bad = (
        "201,u1,vcA,x,1,1,COMPLETED,2020-04-01 08:00:00,2020-04-01 08:00:10,2020-04-01 09:00:10,3600,10\n"
        "202,u1,vcA,1,1,1,WEIRD,2020-04-01 08:00:00,2020-04-01 08:00:10,2020-04-01 09:00:10,3600,10\n"
        "203,u1,vcA,1,1,1,COMPLETED,2020-04-01 08:00:00,2020-04-01 08:00:10,2020-04-01 09:00:10,3600,-1\n"
    )
    trace = read_trace(_folder(tmp_path, GOOD + bad), lenient=True)
    assert trace.jobs["job_id"].to_list() == ["101", "102", "103", "104"]
    assert trace.dropped == {"unparsable gpu_num": 1, "unknown state": 1, "negative queue": 1}


def _canonical() -> Trace:
    jobs = pl.DataFrame({
        "job_id": ["1", "2", "3", "4"], "cluster": "saturn", "vc": ["vcA", "vcB", "vcA", "vcA"],
        "user": ["u1", None, "u2", "u3"], "gpu_num": [8, 0, 16, 1], "cpu_num": [32, 2, None, 4],
        "node_num": [1, 1, 2, None], "submit_time": [1585699200, 1585700000, 1585800000, 1586000000],
        "start_time": [1585699210, 1585700000, None, 1586000100], "end_time": [1585702810, 1585700300, None, None],
        "duration": [3600, 300, None, None], "queue_delay": [10, 0, None, 100],
        "status": ["completed", "timeout", "pending", "running"],
    })
    spec = ClusterSpec({"vcA": (8, 8, 4), "vcB": (8,)})
    return Trace(conform(jobs), "helios", timezone="Asia/Shanghai", cluster=spec)


def test_write_read_round_trip(tmp_path: Path) -> None:
    trace = _canonical()
    folder = helios.write(trace, tmp_path / "saturn")
    back = read_trace(folder)
    assert back.jobs.equals(trace.jobs)
    assert {vc: back.cluster.gpus(vc) for vc in back.cluster.vcs} == {"vcA": 20, "vcB": 8}
    numbers = pl.read_csv(folder / "cluster_gpu_number.csv")
    # submits 2020-04-01 08:00 .. 2020-04-04 19:33 Shanghai time: four local days
    assert numbers["date"].to_list() == ["2020-04-01", "2020-04-02", "2020-04-03", "2020-04-04"]
    assert numbers.columns == ["date", "vcA", "vcB", "total"] and set(numbers["total"]) == {28}
    assert (folder / "cluster_log.csv").read_text().splitlines()[1] == (
        "1,u1,vcA,8,32,1,COMPLETED,2020-04-01 08:00:00,2020-04-01 08:00:10,2020-04-01 09:00:10,3600,10")


def test_cli_info_json(tmp_path: Path) -> None:
    folder = helios.write(_canonical(), tmp_path / "saturn")
    out = subprocess.run([sys.executable, "-m", "dlcluster", "info", str(folder), "--json"],
                         capture_output=True, text=True, check=True)
    info = json.loads(out.stdout)
    assert info["format"] == "helios" and info["timezone"] == "Asia/Shanghai"
    assert info["jobs"] == 4 and info["gpu_jobs"] == 3 and info["vcs"] == 2 and info["users"] == 3
    assert info["start"] == "2020-04-01T00:00:00Z"
    assert info["status_counts"] == {"completed": 1, "timeout": 1, "running": 1, "pending": 1}


def test_cli_error_is_one_line_exit_2(tmp_path: Path) -> None:
    folder = _folder(tmp_path, GOOD.replace("COMPLETED", "DONE"))
    out = subprocess.run([sys.executable, "-m", "dlcluster", "info", str(folder)], capture_output=True, text=True)
    assert out.returncode == 2 and "Traceback" not in out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and "cluster_log.csv, line 2, field 'state': unknown status 'DONE'" in lines[0]


def test_an_empty_duration_or_queue_is_the_difference_of_the_rows_times(tmp_path: Path) -> None:
    # the release defines duration = end − start and queue = start − submit: an empty cell is no unknown run time
    body = ("1,u1,vcA,1,4,1,COMPLETED,2020-04-01 00:10:00,2020-04-01 00:20:00,2020-04-01 01:00:00,,\n"
            "2,u1,vcA,1,4,1,RUNNING,2020-04-01 00:10:00,2020-04-01 00:20:00,,,\n"
            "3,u1,vcA,1,4,1,CANCELLED,2020-04-01 00:10:00,,,,\n")
    jobs = read_trace(_folder(tmp_path, body)).jobs
    assert jobs["duration"].to_list() == [2400, None, None]
    assert jobs["queue_delay"].to_list() == [600, 600, None]


def test_a_user_of_only_spaces_is_no_user(tmp_path: Path) -> None:
    body = "105,  ,vcA,1,1,1,COMPLETED,2020-04-01 08:00:00,2020-04-01 08:00:10,2020-04-01 09:00:10,3600,10\n"
    assert read_trace(_folder(tmp_path, body)).jobs["user"].to_list() == [None]


def test_the_cluster_is_the_folders_name_whatever_the_working_folder(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    folder = _folder(tmp_path, GOOD)
    monkeypatch.chdir(folder)
    for given in ("cluster_log.csv", ".", "../Venus/./cluster_log.csv"):
        assert read_trace(Path(given)).jobs["cluster"].unique().to_list() == ["venus"]


def test_a_time_the_clocks_skip_is_no_such_time(tmp_path: Path) -> None:
    path = _folder(tmp_path, "1,u1,vcA,1,4,1,COMPLETED,2017-03-12 02:30:00,2017-03-12 03:20:00,"
                             "2017-03-12 04:00:00,2400,0\n") / "cluster_log.csv"
    with pytest.raises(InputError) as err:
        read_trace(path.parent, timezone="America/Los_Angeles")
    assert str(err.value) == (f"{path}, line 2, field 'submit_time': '2017-03-12 02:30:00' is no such time in "
                              "America/Los_Angeles (the clocks skip it when daylight saving starts)")


def test_an_end_in_the_repeated_hour_before_its_start_takes_the_later_instant(tmp_path: Path) -> None:
    # started 01:50 PDT, ended 01:20 PST: the row's duration (1800) and queue (2400) say so
    body = "1,u1,vcA,1,4,1,COMPLETED,2017-11-05 01:10:00,2017-11-05 01:50:00,2017-11-05 01:20:00,1800,2400\n"
    job = read_trace(_folder(tmp_path, body), timezone="America/Los_Angeles").jobs.row(0, named=True)
    assert (job["submit_time"], job["start_time"], job["end_time"]) == (1509869400, 1509871800, 1509873600)


def test_a_job_cancelled_in_the_repeated_hour_before_it_started_ends_after_its_submit(tmp_path: Path) -> None:
    # submitted 01:50 PDT, cancelled in the queue at 01:10 PST: its end was read as PDT, before its submit
    body = "1,u1,vcA,1,4,1,CANCELLED,2017-11-05 01:50:00,,2017-11-05 01:10:00,,\n"
    job = read_trace(_folder(tmp_path, body), timezone="America/Los_Angeles").jobs.row(0, named=True)
    assert (job["submit_time"], job["end_time"]) == (1509871800, 1509873000)
