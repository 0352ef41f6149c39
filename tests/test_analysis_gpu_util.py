"""Section 4: the out-of-core join of attempts with a per-minute ``cluster_gpu_util`` file."""

from __future__ import annotations

import datetime as dt
import gzip
from pathlib import Path

import polars as pl
import pytest

from dlcluster.analysis.gpu_util import (
    job_gpu_utilization,
    utilization_by_servers,
    utilization_by_size_status,
)
from dlcluster.analysis.locality import servers_vs_queue
from dlcluster.errors import InputError
from dlcluster.schema import ATTEMPT_SCHEMA, conform

HEADER = "time,machineId," + ",".join(f"gpu{i}_util" for i in range(8)) + "\n"


def _utc(text: str) -> int:
    return int(dt.datetime.fromisoformat(text + "+00:00").timestamp())


def _row(time: str, machine: str, values: list[str]) -> str:
    return f"{time},{machine},{','.join(values)},\n"  # the real file ends rows with a comma


@pytest.fixture
def util_file(tmp_path: Path) -> Path:
    path = tmp_path / "cluster_gpu_util"
    rows = [
        # 01:30 happens twice on 2017-11-05 in Los Angeles: PDT = 08:30 UTC, PST = 09:30 UTC
        _row("2017-11-05 01:29:00 PDT", "m1", ["10"] * 8),
        _row("2017-11-05 01:30:00 PDT", "m1", ["20"] + ["NA"] * 7),
        _row("2017-11-05 01:30:00 PST", "m1", ["40"] * 8),
        _row("2017-11-05 01:31:00 PST", "m1", ["80"] * 8),
        _row("2017-11-05 01:10:00 PDT", "m2", ["NA"] * 8),
        _row("2017-11-05 01:20:00 PDT", "m2", ["50"] * 8),
    ]
    path.write_text(HEADER + "".join(rows), encoding="utf-8")
    return path


def _attempts() -> pl.DataFrame:
    rows = [
        ("j1", 0, _utc("2017-11-05 08:30:00"), _utc("2017-11-05 09:31:00"), ["m1"], 8),
        ("j2", 0, _utc("2017-11-05 08:00:00"), _utc("2017-11-05 09:00:00"), ["m2"], 16),
        ("j2", 1, _utc("2017-11-05 09:31:00"), _utc("2017-11-05 10:00:00"), ["m1", "m3"], 16),
        ("j3", 0, _utc("2017-11-05 08:00:00"), _utc("2017-11-05 09:00:00"), ["m3"], 1),
    ]
    return pl.DataFrame(rows, schema=ATTEMPT_SCHEMA, orient="row")


def test_join_handles_dst_na_and_trailing_commas(util_file: Path) -> None:
    out = {r["job_id"]: r for r in job_gpu_utilization(_attempts(), util_file, memory_limit="200MB").iter_rows(named=True)}
    assert set(out) == {"j1", "j2"}  # m3 reports nothing
    # j1: the PDT 01:30 sample (one GPU, 20) and the PST 01:30 one (8 × 40); not 01:29 nor 01:31
    assert out["j1"]["samples"] == 9 and out["j1"]["gpu_util"] == pytest.approx((20 + 8 * 40) / 9)
    # j2: m2's NA row adds nothing; 8 × 50 on m2, then 8 × 80 on m1
    assert out["j2"]["samples"] == 16 and out["j2"]["gpu_util"] == pytest.approx(65.0)


def test_also_accepts_the_folder(util_file: Path) -> None:
    a = job_gpu_utilization(_attempts(), util_file)
    assert job_gpu_utilization(_attempts(), util_file.parent).equals(a)


def test_a_gzipped_file_joins_like_the_plain_one(util_file: Path, tmp_path: Path) -> None:
    packed = tmp_path / "packed" / "cluster_gpu_util.gz"
    packed.parent.mkdir()
    packed.write_bytes(gzip.compress(util_file.read_bytes()))
    want = job_gpu_utilization(_attempts(), util_file)
    assert want.height == 2
    assert job_gpu_utilization(_attempts(), packed).equals(want)
    assert job_gpu_utilization(_attempts(), packed.parent).equals(want)


def test_the_file_named_is_the_one_joined(util_file: Path) -> None:
    # a folder holding both: the plain file is the folder's, the compressed one is read when named
    other = util_file.read_text().replace(",40,40,40,", ",0,0,0,")
    (util_file.parent / "cluster_gpu_util.gz").write_bytes(gzip.compress(other.encode()))
    plain, named = (job_gpu_utilization(_attempts(), p)
                    for p in (util_file.parent, util_file.parent / "cluster_gpu_util.gz"))
    assert plain.equals(job_gpu_utilization(_attempts(), util_file))
    assert plain["gpu_util"].to_list() != named["gpu_util"].to_list()


def test_tables_3_and_5(util_file: Path) -> None:
    jobs = conform(pl.DataFrame({"job_id": ["j1", "j2", "j3"], "status": ["completed", "failed", "cancelled"],
                                 "gpu_num": [8, 16, 1], "queue_delay": [5, 50, 0]}))
    util = job_gpu_utilization(_attempts(), util_file)
    t3 = {r["gpus"]: r for r in utilization_by_size_status(util, _attempts(), jobs).iter_rows(named=True)}
    assert t3["8"]["completed"] == pytest.approx((20 + 320) / 9) and t3["8"]["failed"] is None
    assert t3["16"]["failed"] == pytest.approx(65.0)
    assert t3["all"]["all"] == pytest.approx(((20 + 320) / 9 + 65) / 2)
    # a job still running is in no outcome's column, so not in "all" either (it was: failed 65, all 57)
    running = jobs.with_columns(pl.when(pl.col("job_id") == "j1").then(pl.lit("running")).otherwise(pl.col("status"))
                                .cast(jobs["status"].dtype).alias("status"))
    t3 = {r["gpus"]: r for r in utilization_by_size_status(util, _attempts(), running).iter_rows(named=True)}
    assert "8" not in t3 and t3["all"]["failed"] == t3["all"]["all"] == pytest.approx(65.0)
    t5 = utilization_by_servers(util, _attempts())
    assert t5.select("servers_spanned", "jobs").rows() == [(1, 1)]  # j2's first attempt used one server
    loc = servers_vs_queue(_attempts(), jobs)
    assert loc.select("bucket", "servers_spanned", "p50").rows() == [("5-8", 1, 5.0), (">8", 1, 50.0)]


def test_a_bad_value_is_refused_with_its_line_and_column(tmp_path: Path) -> None:
    path = tmp_path / "cluster_gpu_util"
    path.write_text(HEADER + _row("2017-11-05 01:29:00 PDT", "m1", ["10"] * 8)
                    + _row("2017-11-05 01:30:00 PDT", "m1", ["10", "abc"] + ["NA"] * 6), encoding="utf-8")
    with pytest.raises(InputError) as info:
        job_gpu_utilization(_attempts(), path)
    assert str(info.value) == f'{path}, line 3, field \'gpu1_util\': could not convert string "abc" to \'DOUBLE\''


def test_a_cut_gzip_file_is_refused_naming_it(tmp_path: Path) -> None:
    rows = "".join(_row(f"2017-11-05 01:{m % 60:02d}:00 PDT", f"m{m}", [str(m % 100)] * 8) for m in range(100_000))
    data = gzip.compress((HEADER + rows).encode())
    path = tmp_path / "cluster_gpu_util.gz"
    path.write_bytes(data[: len(data) // 2])  # the header reads; the rows end mid-stream
    with pytest.raises(InputError, match=r"cluster_gpu_util\.gz: cannot read the GPU utilisation samples: "
                       r"IO Error: Unexpected end of GZIP stream"):
        job_gpu_utilization(_attempts(), path)
