"""The derived Philly job table reader."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

from dlcluster.errors import InputError
from dlcluster.io import read_trace

HEADER = "timestamp,duration,num_gpus,gpu_time,cluster\n"


def _write(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "jobs_processed.csv"
    path.write_text(HEADER + body)
    return path


def test_real_table_has_82247_jobs(shared_data: Path) -> None:
    trace = read_trace(shared_data / "philly/jobs_processed.csv")
    assert trace.format == "philly-jobs"
    assert trace.jobs.height == 82247
    assert trace.jobs["job_id"][0] == "0" and trace.jobs["job_id"][-1] == "82246"
    assert trace.jobs["gpu_num"].min() >= 1


def test_cli_info_json_reports_82247_jobs(shared_data: Path) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "dlcluster", "info", str(shared_data / "philly/jobs_processed.csv"), "--json"],
        capture_output=True, text=True, check=True,
    )
    info = json.loads(out.stdout)
    assert info["jobs"] == 82247 and info["format"] == "philly-jobs"
    for key in ("format", "jobs", "gpu_jobs", "vcs", "users", "start", "end", "status_counts"):
        assert key in info


def test_local_wall_clock_becomes_utc(tmp_path: Path) -> None:
    # 2017-10-09 07:01:55 PDT (UTC-7) = 14:01:55 UTC; 2017-12-01 08:00:00 PST (UTC-8) = 16:00 UTC
    trace = read_trace(_write(tmp_path, "2017-10-09 07:01:55,66.0,1,66.0,11cb48\n2017-12-01 08:00:00,5,2,10,ab\n"),
                       format="philly-jobs")
    assert trace.jobs["submit_time"].to_list() == [1507557715, 1512144000]
    assert trace.jobs.schema["submit_time"] == pl.Int64


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("2017-10-09 07:01:55,66.0,1,66.0,a\n2017-13-09 07:01:55,66.0,1,66.0,a\n",
         "line 3, field 'timestamp': cannot parse '2017-13-09 07:01:55' as a time (YYYY-MM-DD HH:MM:SS)"),
        ("2017-10-09 07:01:55,-5,1,66.0,a\n", "line 2, field 'duration': negative value -5"),
        ("2017-10-09 07:01:55,5,two,66.0,a\n", "line 2, field 'num_gpus': cannot parse 'two' as a whole number of GPUs"),
        ("2017-10-09 07:01:55,66.0,1,66.0,  \n", "line 2, field 'cluster': value is empty"),
    ],
)
def test_malformed_rows_name_file_line_field(tmp_path: Path, body: str, message: str) -> None:
    path = _write(tmp_path, body)
    with pytest.raises(InputError) as err:
        read_trace(path, format="philly-jobs")
    assert str(err.value) == f"{path}, {message}"


def test_missing_column(tmp_path: Path) -> None:
    path = tmp_path / "j.csv"
    path.write_text("timestamp,duration,cluster\n2017-10-09 07:01:55,1,a\n")
    with pytest.raises(InputError, match=r"missing column 'num_gpus'"):
        read_trace(path, format="philly-jobs")


def test_lenient_drops_and_counts(tmp_path: Path) -> None:
    path = _write(tmp_path, "2017-10-09 07:01:55,66,1,66,a\nbad,1,1,1,a\n2017-10-09 07:01:55,-1,1,1,a\n"
                            "2017-10-09 07:01:55,3,1,3,a\n")
    trace = read_trace(path, format="philly-jobs", lenient=True)
    assert trace.jobs["job_id"].to_list() == ["0", "3"]
    assert trace.dropped == {"unparsable timestamp": 1, "negative duration": 1}


def test_job_ids_count_data_rows_not_lines(tmp_path: Path) -> None:
    # a blank line made the ids skip a number (0, 1, 3): the id is the row's index among the table's rows
    path = _write(tmp_path, "2017-10-09 07:01:55,66,1,66,a\n2017-10-09 07:02:55,6,1,6,a\n\n2017-10-09 07:03:55,3,1,3,a\n")
    assert read_trace(path, format="philly-jobs").jobs["job_id"].to_list() == ["0", "1", "2"]


def test_cli_error_is_one_line_exit_2(tmp_path: Path) -> None:
    path = _write(tmp_path, "2017-10-09 07:01:55,-5,1,66.0,a\n")
    out = subprocess.run([sys.executable, "-m", "dlcluster", "info", str(path), "-f", "philly-jobs"],
                         capture_output=True, text=True)
    assert out.returncode == 2
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and "line 2, field 'duration': negative value -5" in lines[0]
    assert "Traceback" not in out.stderr
