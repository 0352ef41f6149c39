"""The Slurm sacct --parsable2 reader."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from dlcluster.errors import InputError
from dlcluster.io import detect_format, read_trace

HEADER = "JobID|JobName|User|Account|Partition|Submit|Start|End|Elapsed|State|NNodes|NCPUS|AllocTRES|ReqTRES\n"
TRES = "billing=8,cpu=32,gres/gpu=8,mem=256G,node=1"
BODY = (
    f"100|train|alice|acct|gpu|2020-06-09T18:41:01|2020-06-09T18:42:01|2020-06-09T19:42:01|01:00:00|COMPLETED|1|32|{TRES}|{TRES}\n"
    "100.batch|batch||acct||2020-06-09T18:42:01|2020-06-09T18:42:01|2020-06-09T19:42:01|01:00:00|COMPLETED|1|32|cpu=32,gres/gpu=8|\n"
    "100.extern|extern||acct||2020-06-09T18:42:01|2020-06-09T18:42:01|2020-06-09T19:42:01|01:00:00|COMPLETED|1|32|cpu=32|\n"
    "101_4|sweep \"v2\"|bob|acct||2020-06-09T19:00:00|2020-06-09T19:00:10|Unknown|1-02:00:05|RUNNING|2|16|"
    "cpu=16,gres/gpu:a100=2,gres/gpu:v100=1,node=2|\n"
    "101_4.0|step||acct||2020-06-09T19:00:10|2020-06-09T19:00:10|Unknown|1-02:00:05|RUNNING|2|16|cpu=16|\n"
    "102+0|het|carol|acct2||2020-06-09T19:00:00|Unknown|Unknown|00:00:00|PENDING|1|4||cpu=4,gres/gpu=1,node=1\n"
    "103|x|dave|acct|cpu|2020-06-09T20:00:00|None|2020-06-09T20:10:00|00:00:00|CANCELLED by 1234|1|2|cpu=2,node=1|"
    "cpu=2,gres/gpu:a100=1,gres/gpu=4\n"
)


def _write(tmp_path: Path, body: str, header: str = HEADER) -> Path:
    path = tmp_path / "mycluster.txt"
    path.write_text(header + body)
    return path


def test_jobs_steps_tres_states(tmp_path: Path) -> None:
    path = _write(tmp_path, BODY)
    assert detect_format(path) == "sacct"
    trace = read_trace(path)
    jobs = trace.jobs
    assert jobs["job_id"].to_list() == ["100", "101_4", "102+0", "103"]
    assert jobs["cluster"].unique().to_list() == ["mycluster"]
    # untyped gres/gpu; typed entries summed; ReqTRES when AllocTRES is empty; alloc without GPUs → 0
    assert jobs["gpu_num"].to_list() == [8, 3, 1, 0]
    assert jobs["vc"].to_list() == ["gpu", "acct", "acct2", "cpu"]
    assert jobs["name"].to_list() == ["train", 'sweep "v2"', "het", "x"]
    assert jobs["status"].cast(pl.String).to_list() == ["completed", "running", "pending", "cancelled"]
    assert jobs["cpu_num"].to_list() == [32, 16, 4, 2] and jobs["node_num"].to_list() == [1, 2, 1, 1]
    assert jobs["submit_time"][0] == 1591728061  # 2020-06-09T18:41:01Z
    assert jobs["start_time"].to_list()[2:] == [None, None]
    # End − Start when both known, else Elapsed (1-02:00:05 = 93605 s); none while pending, 0 if cancelled unstarted
    assert jobs["duration"].to_list() == [3600, 93605, None, 0]
    assert jobs["queue_delay"].to_list() == [60, 10, None, None]


def test_timezone_option_shifts_wall_clock(tmp_path: Path) -> None:
    trace = read_trace(_write(tmp_path, BODY), timezone="Asia/Shanghai")
    assert trace.jobs["submit_time"][0] == 1591728061 - 8 * 3600
    assert trace.timezone == "Asia/Shanghai"


def test_a_job_ending_in_the_repeated_autumn_hour_keeps_its_true_duration(tmp_path: Path) -> None:
    # 01:40 EDT to 01:10 EST on 2021-11-07: the clocks went back at 02:00 EDT while it ran (Elapsed 00:30:00); a job
    # wholly inside the repeated hour reads as its first occurrence
    body = (f"200|a|alice|lab|gpu|2021-11-07T01:20:00|2021-11-07T01:40:00|2021-11-07T01:10:00|00:30:00|COMPLETED|1|8|{TRES}|\n"
            f"201|b|bob|lab|gpu|2021-11-07T01:05:00|2021-11-07T01:10:00|2021-11-07T01:50:00|00:40:00|COMPLETED|1|8|{TRES}|\n")
    jobs = read_trace(_write(tmp_path, body), timezone="America/New_York").jobs
    assert jobs["duration"].to_list() == [1800, 2400]
    assert jobs["start_time"].to_list() == [1636263600, 1636261800]  # 05:40 and 05:10 UTC


def test_a_job_submitted_before_the_clocks_went_back_and_started_in_the_repeated_hour(tmp_path: Path) -> None:
    # submitted 01:50 EDT, started 01:10 EST (20 minutes later, the clocks went back at 02:00 EDT): it was refused as
    # starting before its submit
    body = f"300|a|alice|lab|gpu|2021-11-07T01:50:00|2021-11-07T01:10:00|2021-11-07T01:20:00|00:10:00|COMPLETED|1|8|{TRES}|\n"
    jobs = read_trace(_write(tmp_path, body), timezone="America/New_York").jobs
    assert jobs.select("submit_time", "start_time", "end_time", "queue_delay", "duration").row(0) == (
        1636264200, 1636265400, 1636266000, 1200, 600)


def test_a_job_cancelled_in_the_repeated_hour_before_it_started_ends_after_its_submit(tmp_path: Path) -> None:
    # submitted 01:50 PDT, cancelled while queued at 01:10 PST (20 minutes later): its end was read as 01:10 PDT,
    # 40 minutes before its submission
    body = "103|a|alice|lab|gpu|2017-11-05T01:50:00|None|2017-11-05T01:10:00|00:00:00|CANCELLED by 1|1|8||\n"
    jobs = read_trace(_write(tmp_path, body), timezone="America/Los_Angeles").jobs
    assert jobs.select("submit_time", "start_time", "end_time").row(0) == (1509871800, None, 1509873000)


def test_state_vocabulary(tmp_path: Path) -> None:
    states = ["TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY", "PREEMPTED", "REQUEUED", "FAILED"]
    body = "".join(f"{i}|j|u|a|p|2020-06-09T18:41:01|None|None|00:00:00|{s}|1|1||\n" for i, s in enumerate(states))
    jobs = read_trace(_write(tmp_path, body)).jobs
    assert jobs["status"].cast(pl.String).to_list() == ["timeout", "node_fail", "failed", "other", "pending", "failed"]


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (BODY + "104|j|u|a|p|2020-06-31T00:00:00|None|None|00:00:00|COMPLETED|1|1||\n",
         "line 9, field 'Submit': cannot parse '2020-06-31T00:00:00' as a time (%Y-%m-%dT%H:%M:%S)"),
        ("104|j|u|a|p|2020-06-09T18:41:01|None|None|00:00:00|EXPLODED|1|1||\n",
         "line 2, field 'State': unknown status 'EXPLODED'"),
        ("104|j|u|a|p|2020-06-09T18:41:01|None|None|00:00:00|COMPLETED|1|1|cpu=1,gres/gpu=many|\n",
         "line 2, field 'AllocTRES': bad GPU count in 'cpu=1,gres/gpu=many'"),
        ("104|j|u|a|p|2020-06-09T18:41:01|None|None|3h|COMPLETED|1|1||\n",
         "line 2, field 'Elapsed': cannot parse '3h' as an elapsed time ([D-]HH:MM:SS)"),
        ("104|j|u|a|p|2020-06-09T18:41:01|None|None|00:00:00|COMPLETED|1|1||\n"
         "104|j|u|a|p|2020-06-09T18:41:01|None|None|00:00:00|COMPLETED|1|1||\n",
         "line 3, field 'JobID': '104' occurs more than once"),
        # (spaces only are no id: the canonical CSV of such a trace was refused on read-back)
        ("  |j|u|a|p|2020-06-09T18:41:01|None|None|00:00:00|PENDING|1|1||\n",
         "line 2, field 'JobID': value is empty"),
        # a job cancelled while queued has no start to check its end against
        ("104|j|u|a|p|2020-01-05T01:50:00|None|2019-01-05T01:10:00|00:00:00|CANCELLED by 1|1|1||\n",
         "line 2, field 'End': '2019-01-05T01:10:00' is before the submit time (the job ends before it is submitted)"),
    ],
)
def test_malformed_rows_name_file_line_field(tmp_path: Path, body: str, message: str) -> None:
    path = _write(tmp_path, body)
    with pytest.raises(InputError) as err:
        read_trace(path, format="sacct")
    assert str(err.value) == f"{path}, {message}"


def test_missing_column(tmp_path: Path) -> None:
    path = _write(tmp_path, "1|x\n", header="JobID|JobName\n")
    with pytest.raises(InputError, match="missing column 'Submit'"):
        read_trace(path, format="sacct")


def test_lenient_drops_and_counts(tmp_path: Path) -> None:
    path = _write(tmp_path, BODY + "104|j|u|a|p|yesterday|None|None|00:00:00|COMPLETED|1|1||\n"
                  "105|j|u|a|p|2020-06-09T18:41:01|None|None|00:00:00|LOST|1|1||\n")
    trace = read_trace(path, lenient=True)
    assert trace.jobs["job_id"].to_list() == ["100", "101_4", "102+0", "103"]
    assert trace.dropped == {"unparsable Submit": 1, "unknown State": 1}


PENDING = "|x|erin|acct|gpu|2020-06-09T21:00:00|Unknown|Unknown|00:00:00|PENDING|1|4||cpu=4,gres/gpu=2,node=1\n"


def test_a_record_of_pending_array_tasks_is_one_job_per_task(tmp_path: Path) -> None:
    body = BODY + "104_[1-3,7%2]" + PENDING + "105_[9]" + PENDING
    jobs = read_trace(_write(tmp_path, body)).jobs
    assert jobs["job_id"].to_list()[4:] == ["104_1", "104_2", "104_3", "104_7", "105_9"]
    tasks = jobs.filter(pl.col("job_id").str.starts_with("104_"))
    assert tasks["status"].cast(pl.String).unique().to_list() == ["pending"]
    assert tasks["gpu_num"].to_list() == [2, 2, 2, 2]
    assert tasks["submit_time"].unique().to_list() == [1591736400]  # 2020-06-09T21:00:00Z


@pytest.mark.parametrize(("job_id", "message"), [
    ("104_[3-1]", "array tasks must be numbers and ranges"),
    ("104_[1-x]", "array tasks must be numbers and ranges"),
    ("104_[0-4000001]", "names more than 4,000,001 tasks"),
])
def test_an_unreadable_array_record_names_its_line(tmp_path: Path, job_id: str, message: str) -> None:
    path = _write(tmp_path, BODY + job_id + PENDING)
    with pytest.raises(InputError, match=rf"line 9.*JobID.*{message}"):
        read_trace(path)
    assert read_trace(path, lenient=True).jobs.height == 4


def test_an_array_task_listed_twice_is_a_duplicate(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"line 10.*'104_2' occurs more than once"):
        read_trace(_write(tmp_path, BODY + "104_2" + PENDING + "104_[1-3]" + PENDING))


@pytest.mark.parametrize("state", ["PENDING", "REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED"])
def test_a_pending_jobs_expected_start_is_no_start(tmp_path: Path, state: str) -> None:
    # Slurm shows a pending job's expected start (the backfill scheduler's estimate) in Start: the job has not started
    body = (f"300|a|alice|lab|gpu|2024-03-01T10:00:00|2024-03-01T10:00:00|2024-03-01T11:00:00|01:00:00|COMPLETED|1|8|{TRES}|\n"
            f"301|b|bob|lab|gpu|2024-03-01T10:30:00|2024-03-05T00:00:00|Unknown|00:00:00|{state}|1|8||{TRES}\n")
    jobs = read_trace(_write(tmp_path, body)).jobs
    assert jobs["status"].cast(pl.String).to_list() == ["completed", "pending"]
    assert jobs.select("start_time", "end_time", "duration", "queue_delay").row(1) == (None, None, None, None)
    assert jobs.select("start_time", "queue_delay", "duration").row(0) == (1709287200, 0, 3600)


GRES_HEADER = "JobID|User|Partition|Submit|Start|End|Elapsed|State|AllocGRES|ReqGRES\n"


def test_an_export_without_tres_reads_gpus_from_gres(tmp_path: Path) -> None:
    body = ("200|alice|gpu|2024-03-01T10:00:00|2024-03-01T10:05:00|2024-03-01T12:05:00|02:00:00|COMPLETED|gpu:4|gpu:4\n"
            "201|bob|gpu|2024-03-01T11:00:00|2024-03-01T11:00:00|2024-03-01T12:00:00|01:00:00|FAILED|"
            "gpu:tesla:2(IDX:0,2),mps:100|gpu:tesla:2\n"
            "202|carol|gpu|2024-03-01T11:00:00|Unknown|Unknown|00:00:00|PENDING||gpu:a100:1,gpu:v100:2,gpus:9\n"
            "203|dave|cpu|2024-03-01T11:00:00|2024-03-01T11:00:00|2024-03-01T11:01:00|00:01:00|COMPLETED||\n"
            "204|erin|gpu|2024-03-01T11:00:00|2024-03-01T11:00:00|2024-03-01T11:01:00|00:01:00|COMPLETED|gpu:k80|\n")
    path = _write(tmp_path, body, header=GRES_HEADER)
    assert detect_format(path) == "sacct"
    # untyped gpu:N; typed entries summed; ReqGRES when AllocGRES is empty; none → 0; a count left out is 1
    assert read_trace(path).jobs["gpu_num"].to_list() == [4, 2, 3, 0, 1]
    bad = _write(tmp_path, "200|a|gpu|2024-03-01T10:00:00|None|None|00:00:00|COMPLETED|gpu:tesla:x|\n", header=GRES_HEADER)
    with pytest.raises(InputError) as err:
        read_trace(bad)
    assert str(err.value) == f"{bad}, line 2, field 'AllocGRES': bad GPU count in 'gpu:tesla:x'"


def test_an_export_without_a_gpu_column_is_refused(tmp_path: Path) -> None:
    path = _write(tmp_path, "1|2024-03-01T10:00:00|PENDING\n", header="JobID|Submit|State\n")
    with pytest.raises(InputError) as err:
        read_trace(path)
    assert str(err.value) == (f"{path}: no GPU column: none of AllocTRES, ReqTRES, AllocGRES, ReqGRES (found: JobID, "
                              "Submit, State); export one with sacct --format=...,AllocTRES,ReqTRES")
