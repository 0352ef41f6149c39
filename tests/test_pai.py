"""The Alibaba PAI 2020 reader (generated fixtures in the raw header-less layout)."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from dlcluster.errors import InputError
from dlcluster.io import detect_format, read_trace

JOBS = (
    "j1,i1,u1,Terminated,100000.0,103600.0\n"
    "j2,i2,u2,Running,200000,\n"
    "j3,i3,,Failed,300000,300010\n"
    "j4,i4,u1,Waiting,400000,\n"
)
TASKS = (
    "j1,worker,4,Terminated,100060.0,103600.0,600.0,29.3,50.0,V100\n"
    "j1,ps,1,Terminated,100030,103600,200,10,,\n"
    "j2,tensorflow,3,Running,200100,,100,10,33.0,T4\n"
    "j3,worker,1,Failed,300005,300010,100,1,,\n"
    "j3,evaluator,2,Failed,300002,300010,50,1,100,MISC\n"
)


def _folder(tmp_path: Path, jobs: str = JOBS, tasks: str = TASKS, headers: bool = True) -> Path:
    if headers:
        (tmp_path / "pai_job_table.header").write_text("job_name,inst_id,user,status,start_time,end_time\n")
        (tmp_path / "pai_task_table.header").write_text(
            "job_name,task_name,inst_num,status,start_time,end_time,plan_cpu,plan_mem,plan_gpu,gpu_type\n")
    (tmp_path / "pai_job_table.csv").write_text(jobs)
    (tmp_path / "pai_task_table.csv").write_text(tasks)
    return tmp_path


def test_jobs_aggregate_their_tasks(tmp_path: Path) -> None:
    folder = _folder(tmp_path)
    assert detect_format(folder) == "pai" and detect_format(folder / "pai_job_table.csv") == "pai"
    trace = read_trace(folder)
    jobs = trace.jobs
    assert jobs["job_id"].to_list() == ["j1", "j2", "j3", "j4"]
    assert jobs["user"].to_list() == ["u1", "u2", None, "u1"]
    # j1: 4 × 50% = 2 whole GPUs; j2: 3 × 33% = 0.99 GPU → 1 GPU at 990 milli; j3: 2 × 100%; j4: no tasks
    assert jobs["gpu_num"].to_list() == [2, 1, 2, 0]
    assert jobs["gpu_milli"].to_list() == [1000, 990, 1000, None]
    assert jobs["cpu_num"].to_list() == [26, 3, 2, None]
    assert jobs["vc"].to_list() == ["V100", "T4", "MISC", "unknown"]
    assert jobs["status"].cast(pl.String).to_list() == ["completed", "running", "failed", "pending"]
    assert jobs["cluster"].unique().to_list() == ["pai"]


def test_times_are_shanghai_wall_clock(tmp_path: Path) -> None:
    trace = read_trace(_folder(tmp_path))
    jobs = trace.jobs
    assert trace.timezone == "Asia/Shanghai"
    assert jobs["submit_time"].to_list() == [100000 - 28800, 200000 - 28800, 300000 - 28800, 400000 - 28800]
    assert jobs["start_time"].to_list() == [100030 - 28800, 200100 - 28800, 300002 - 28800, None]
    assert jobs["duration"].to_list() == [3570, None, 8, None]
    assert jobs["queue_delay"].to_list() == [30, 100, 2, None]
    # t = 100000 s is day 1, 03:46:40 of the UTC+8 wall clock
    local = jobs.select(trace.local_times().dt.strftime("%H:%M:%S"))["submit_time"][0]
    assert local == "03:46:40"


def test_fractional_gpu_shares_do_not_round_up_a_whole_gpu(tmp_path: Path) -> None:
    tasks = "".join(f"j1,t{i},1,Terminated,100000,100001,100,1,10,T4\n" for i in range(30))
    jobs = read_trace(_folder(tmp_path, jobs="j1,i,u,Terminated,100000,100001\n", tasks=tasks)).jobs
    assert jobs["gpu_num"].to_list() == [3] and jobs["gpu_milli"].to_list() == [1000]


def test_documented_columns_without_header_files(tmp_path: Path) -> None:
    assert read_trace(_folder(tmp_path, headers=False), format="pai").jobs.height == 4


def test_header_file_reorders_columns(tmp_path: Path) -> None:
    folder = _folder(tmp_path, jobs="u9,Terminated,100,200,jx,i\n", tasks="jx,w,1,Terminated,150,200,100,1,100,P100\n")
    (folder / "pai_job_table.header").write_text("user,status,start_time,end_time,job_name,inst_id\n")
    jobs = read_trace(folder).jobs
    assert jobs["job_id"].to_list() == ["jx"] and jobs["user"].to_list() == ["u9"]


def test_a_header_file_with_a_byte_order_mark_reads(tmp_path: Path) -> None:
    # Windows editors start a saved file with one: it was read as part of the first column's name
    folder = _folder(tmp_path)
    (folder / "pai_job_table.header").write_text("\ufeffjob_name,inst_id,user,status,start_time,end_time\n",
                                                 encoding="utf-8")
    assert read_trace(folder).jobs.height == 4


@pytest.mark.parametrize(
    ("jobs", "tasks", "table", "message"),
    [
        (JOBS + "j5,i5,u1,Exploded,1,2\n", TASKS, "pai_job_table.csv", "line 5, field 'status': unknown status 'Exploded'"),
        (JOBS + "j1,i5,u1,Failed,1,2\n", TASKS, "pai_job_table.csv", "line 5, field 'job_name': 'j1' occurs more than once"),
        ("j1,i1,u1,Terminated,soon,103600.0\n", TASKS, "pai_job_table.csv",
         "line 1, field 'start_time': cannot parse 'soon' as seconds"),
        (JOBS, TASKS + "j4,w,1,Waiting,1,,100,1,-50,T4\n", "pai_task_table.csv",
         "line 6, field 'plan_gpu': negative value -50"),
    ],
)
def test_malformed_rows_name_file_line_field(tmp_path: Path, jobs: str, tasks: str, table: str, message: str) -> None:
    folder = _folder(tmp_path, jobs=jobs, tasks=tasks)
    with pytest.raises(InputError) as err:
        read_trace(folder)
    assert str(err.value) == f"{folder / table}, {message}"


def test_wrong_field_count(tmp_path: Path) -> None:
    folder = _folder(tmp_path, jobs="j1,i1,u1,Terminated,1\n")
    with pytest.raises(InputError) as err:
        read_trace(folder)
    assert str(err.value) == f"{folder / 'pai_job_table.csv'}: line 1 has 5 fields but the header names 6"


def test_lenient_drops_jobs_with_bad_tasks(tmp_path: Path) -> None:
    folder = _folder(tmp_path, jobs=JOBS + "j5,i5,u1,Exploded,1,2\n", tasks=TASKS + "j2,x,one,Running,1,,1,1,1,T4\n")
    trace = read_trace(folder, lenient=True)
    assert trace.jobs["job_id"].to_list() == ["j1", "j3", "j4"]
    assert trace.dropped == {"unknown status": 1, "task unparsable inst_num": 1, "job with a dropped task row": 1}


@pytest.mark.parametrize(("old", "new", "message", "dropped"), [
    # j3 ends at 300001 but its first task starts at 300002: header-less table, job row 3 = line 3
    ("j3,i3,,Failed,300000,300010", "j3,i3,,Failed,300000,300001",
     "pai_job_table.csv, line 3, field 'end_time': '300001' is before the start time (negative duration)",
     ("j3", "end before start")),
    # j1 is submitted at 100050; its first task (line 2 of the task table) starts at 100030: the task is named
    ("j1,i1,u1,Terminated,100000.0", "j1,i1,u1,Terminated,100050.0",
     "pai_task_table.csv, line 2, field 'start_time': '100030' is before the submit time (negative queueing delay)",
     ("j1", "start before submit")),
])
def test_a_job_and_its_tasks_out_of_order_name_the_row_at_fault(tmp_path: Path, old: str, new: str, message: str,
                                                                  dropped: tuple[str, str]) -> None:
    folder = _folder(tmp_path, jobs=JOBS.replace(old, new))
    with pytest.raises(InputError) as err:
        read_trace(folder)
    assert str(err.value) == f"{folder}/{message}"
    lenient = read_trace(folder, lenient=True)
    job, reason = dropped
    assert job not in lenient.jobs["job_id"].to_list() and lenient.dropped == {reason: 1}
