"""Counts in messages read as English: one job, two jobs."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from dlcluster.text import count


def test_count_is_singular_only_for_one() -> None:
    assert [count(n, "job") for n in (0, 1, 2, 2400)] == ["0 jobs", "1 job", "2 jobs", "2,400 jobs"]
    assert [count(d, "day") for d in (1.0, 0.5, 14.0)] == ["1 day", "0.5 days", "14 days"]


def test_convert_of_one_job_says_one_job(tmp_path: Path) -> None:
    src, out = tmp_path / "one.csv", tmp_path / "one.parquet"
    src.write_text("job_id,submit_time,start_time,end_time,gpu_num\na,1600000000,1600000010,1600000070,1\n")
    res = subprocess.run([sys.executable, "-m", "dlcluster", "convert", str(src), "--format", "csv", "-o", str(out)],
                         capture_output=True, text=True, check=False)
    assert res.returncode == 0, res.stderr
    assert f"wrote 1 job to {out}" in " ".join(res.stderr.split())
