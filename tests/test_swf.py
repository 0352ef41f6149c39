"""The Standard Workload Format reader and writer."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from dlcluster.errors import InputError
from dlcluster.io import detect_format, read_trace
from dlcluster.io.swf import write
from dlcluster.schema import conform
from dlcluster.trace import Trace

HEADER = "; Version: 2.2\n; UnixStartTime: 1000000\n; TimeZoneString: Europe/Stockholm\n; Queues: 1=batch 2=gpu%20a\n"
GOOD = "1 0 10 100 4 -1 -1 4 -1 -1 1 3 -1 -1 1 -1 -1 -1\n"


def _write(tmp_path: Path, body: str, header: str = HEADER) -> Path:
    path = tmp_path / "kth.swf"
    path.write_text(header + body)
    return path


def test_records_map_onto_canonical_columns(tmp_path: Path) -> None:
    path = _write(tmp_path, GOOD + "\n"
                  "2 5 -1 -1 -1 -1 -1 2 -1 -1 0 -1 -1 -1 2 -1 -1 -1\n"
                  "  3 7 1 2 8 1.5 -1 8 -1 -1 4 3 -1 -1 3 -1 -1 -1\n")
    assert detect_format(path) == "swf"
    trace = read_trace(path)
    jobs = trace.jobs
    assert trace.timezone == "Europe/Stockholm"
    assert jobs["job_id"].to_list() == ["1", "2", "3"]
    assert jobs["cluster"].unique().to_list() == ["kth"]
    assert jobs["vc"].to_list() == ["batch", "gpu a", "3"]
    assert jobs["user"].to_list() == ["u3", None, "u3"]
    assert jobs["gpu_num"].to_list() == [4, 2, 8]
    assert jobs["submit_time"].to_list() == [1000000, 1000005, 1000007]
    assert jobs["start_time"].to_list() == [1000010, None, 1000008]
    assert jobs["end_time"].to_list() == [1000110, None, 1000010]
    assert jobs["duration"].to_list() == [100, None, 2]
    assert jobs["status"].cast(pl.String).to_list() == ["completed", "failed", "other"]


@pytest.mark.parametrize("suffix", [".swf", ".swf.gz", ".SWF.zst"])
def test_a_file_without_a_header_is_told_by_its_suffix_compressed_too(tmp_path: Path, suffix: str) -> None:
    # nohdr.swf.gz was refused: 'cannot tell the trace format' (the suffix was compared as .gz)
    import gzip

    import pyarrow as pa

    path = tmp_path / f"nohdr{suffix}"
    if suffix.endswith(".gz"):
        path.write_bytes(gzip.compress(GOOD.encode()))
    elif suffix.endswith(".zst"):
        with pa.CompressedOutputStream(str(path), "zstd") as out:
            out.write(GOOD.encode())
    else:
        path.write_text(GOOD)
    assert detect_format(path) == "swf"
    jobs = read_trace(path).jobs
    assert jobs["gpu_num"].to_list() == [4] and jobs["cluster"].to_list() == ["nohdr"]


def test_free_text_queues_header_keeps_numbers(tmp_path: Path) -> None:
    trace = read_trace(_write(tmp_path, GOOD, header="; Queues: queue 1 is the batch queue\n"))
    assert trace.jobs["vc"].to_list() == ["1"] and trace.timezone == "UTC"
    assert trace.jobs["submit_time"].to_list() == [0]


def _trace() -> Trace:
    jobs = conform(pl.DataFrame({
        "job_id": ["17", "4", "9", "12"],
        "cluster": ["mycluster"] * 4,
        "vc": ["vc b", "vcA", "vcA", "vc b"],
        "user": ["alice", "bob", None, "alice"],
        "gpu_num": [8, 1, 0, 2],
        "submit_time": [1600000100, 1600000000, 1600000050, 1600000200],
        "start_time": [1600000160, 1600000000, None, 1600000230],
        "end_time": [1600003760, 1600000010, None, None],
        "duration": [3600, 10, None, None],
        "queue_delay": [60, 0, None, 30],
        "status": ["completed", "failed", "cancelled", "running"],
    }))
    return Trace(jobs, format="test", timezone="Asia/Shanghai", source="x")


def test_round_trip_keeps_what_swf_holds(tmp_path: Path) -> None:
    original = _trace()
    out = write(original, tmp_path / "mycluster.swf")
    back = read_trace(out)
    assert back.timezone == "Asia/Shanghai"
    ordered = original.jobs.sort("submit_time")
    kept = ["job_id", "cluster", "vc", "gpu_num", "submit_time", "start_time", "end_time", "duration", "queue_delay"]
    assert back.jobs.select(kept).equals(ordered.select(kept))
    # SWF has no 'running': it comes back as other; the other statuses survive
    assert back.jobs["status"].cast(pl.String).to_list() == ["failed", "cancelled", "completed", "other"]
    # users are renumbered by first appearance but stay the same partition
    assert back.jobs["user"].to_list() == ["u1", None, "u2", "u2"]
    assert ordered["user"].to_list() == ["bob", None, "alice", "alice"]


def test_what_swf_cannot_hold_is_as_the_readme_says(tmp_path: Path) -> None:
    trace = _trace()
    trace = trace.with_jobs(trace.jobs.with_columns(pl.lit("train").alias("name"), pl.lit(16).alias("cpu_num"),
                                                    pl.lit(2).alias("node_num"), pl.col("status").replace("cancelled",
                                                                                                            "pending")))
    back = read_trace(write(trace, tmp_path / "other.swf")).jobs
    assert back["cluster"].unique().to_list() == ["other"]
    assert back.select(pl.col("name", "cpu_num", "node_num").is_null().all()).row(0) == (True, True, True)
    assert back["status"].cast(pl.String).to_list() == ["failed", "other", "completed", "other"]


def test_timeout_and_node_fail_are_written_as_failed(tmp_path: Path) -> None:
    # they were written as -1 and read back as other: a failure that --failures replay no longer retried
    trace = _trace()
    trace = trace.with_jobs(trace.jobs.with_columns(pl.Series("status", ["timeout", "node_fail", "cancelled",
                                                                         "completed"])))
    back = read_trace(write(trace, tmp_path / "t.swf")).jobs
    assert back["status"].cast(pl.String).to_list() == ["failed", "cancelled", "failed", "completed"]


def test_non_integer_ids_are_numbered_in_submit_order(tmp_path: Path) -> None:
    trace = _trace()
    trace = trace.with_jobs(trace.jobs.with_columns(pl.col("job_id") + "x"))
    back = read_trace(write(trace, tmp_path / "t.swf"))
    assert back.jobs["job_id"].to_list() == ["1", "2", "3", "4"]


def test_write_is_deterministic(tmp_path: Path) -> None:
    a = write(_trace(), tmp_path / "a.swf").read_bytes()
    b = write(_trace(), tmp_path / "b.swf").read_bytes()
    assert a == b and b"; Queues: 1=vc%20b 2=vcA\n" in a


@pytest.mark.parametrize(("fmt", "article"), [("openb", "an"), ("sacct", "a")])
def test_the_header_names_the_source_format(tmp_path: Path, fmt: str, article: str) -> None:
    trace = _trace()
    trace = Trace(trace.jobs, format=fmt, timezone=trace.timezone, source=trace.source)
    text = write(trace, tmp_path / "t.swf").read_text()
    assert f"; Note: written by dlcluster from {article} {fmt} trace; processors are GPUs\n" in text


def test_write_refuses_start_before_submit(tmp_path: Path) -> None:
    trace = _trace()
    trace = trace.with_jobs(trace.jobs.with_columns(pl.col("start_time") - 1000))
    with pytest.raises(InputError, match="job '4' starts before it is submitted"):
        write(trace, tmp_path / "t.swf")
    assert not (tmp_path / "t.swf").exists()


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (GOOD + "2 0 10 100 4 -1 -1 4 -1 -1 1 3 -1 -1 1 -1 -1\n", "line 6: record has 17 fields, expected 18"),
        (GOOD + "2 0 10 1x0 4 -1 -1 4 -1 -1 1 3 -1 -1 1 -1 -1 -1\n",
         "line 6, field 'run time': cannot parse '1x0' as a whole number"),
        ("1 0 10 100 4 -1 -1 4 -1 -1 1 3 -1 -1 1 -1 -1 abc\n", "line 5, field 'think time': cannot parse 'abc' as a number"),
        ("1 0 -7 100 4 -1 -1 4 -1 -1 1 3 -1 -1 1 -1 -1 -1\n",
         "line 5, field 'wait time': invalid value -7 (-1 means unknown)"),
        (GOOD + GOOD, "line 6, field 'job number': '1' occurs more than once"),
        # the job number is a number: spelt another way, it is the same job (and would write a duplicate job_id)
        (GOOD + GOOD.replace("1", "001", 1), "line 6, field 'job number': '001' is job 1 again, as '1' on line 5"),
        (GOOD + GOOD.replace("1", "1.0", 1), "line 6, field 'job number': '1.0' is job 1 again, as '1' on line 5"),
        ("1 -1 10 100 4 -1 -1 4 -1 -1 1 3 -1 -1 1 -1 -1 -1\n", "line 5, field 'submit time': submit time is unknown (-1)"),
    ],
)
def test_malformed_records_name_file_line_field(tmp_path: Path, body: str, message: str) -> None:
    path = _write(tmp_path, body)
    with pytest.raises(InputError) as err:
        read_trace(path)
    assert str(err.value) == f"{path}, {message}"


def test_bad_header_value(tmp_path: Path) -> None:
    path = _write(tmp_path, GOOD, header="; TimeZoneString: Mars/Olympus\n")
    with pytest.raises(InputError) as err:
        read_trace(path)
    assert str(err.value) == f"{path}, line 1, field 'TimeZoneString': unknown time zone 'Mars/Olympus'"


def test_lenient_drops_and_counts(tmp_path: Path) -> None:
    path = _write(tmp_path, GOOD + "2 0 10\n" + "3 0 10 x 4 -1 -1 4 -1 -1 1 3 -1 -1 1 -1 -1 -1\n"
                  + "4 0 10 100 4 -1 -1 4 -1 -1 1 3 -1 -1 1 -1 -1 -1\n")
    trace = read_trace(path, lenient=True)
    assert trace.jobs["job_id"].to_list() == ["1", "4"]
    assert trace.dropped == {"wrong field count": 1, "unparsable run time": 1}
