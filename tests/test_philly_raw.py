"""The raw Philly reader and writer (cluster_job_log JSON, machine list, utilisation files)."""

from __future__ import annotations

import gzip
import json
import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from test_sim_helpers import cli

from dlcluster.cluster import ClusterSpec
from dlcluster.errors import InputError
from dlcluster.io import detect_format, philly, read_trace
from dlcluster.schema import conform, validate
from dlcluster.trace import Trace


def _attempt(start: str, end: str, *placed: tuple[str, int]) -> dict[str, Any]:
    return {"start_time": start, "end_time": end,
            "detail": [{"ip": ip, "gpus": [f"gpu{i}" for i in range(n)]} for ip, n in placed]}


def _job(jobid: str, status: str, submitted: str, attempts: list[Any], vc: str = "vc1", user: str = "u1") -> dict:
    return {"status": status, "vc": vc, "jobid": jobid, "attempts": attempts, "submitted_time": submitted,
            "user": user}


JOBS = [
    _job("app_0", "Pass", "2017-10-03 02:40:13", [
        _attempt("2017-10-03 02:40:20", "2017-10-03 03:00:00", ("m1", 8), ("m2", 8)),
        _attempt("2017-10-03 04:00:00", "2017-10-03 05:00:00", ("m3", 4)),
    ]),
    _job("app_1", "Killed", "2017-10-04 10:00:00", []),
    _job("app_2", "Pass", "2017-10-05 10:00:00", [_attempt("2017-10-05 10:01:00", "None", ("m4", 1))]),
    _job("app_3", "Failed", "2017-10-06 10:00:00", [_attempt("2017-10-06 10:00:30", "None", ("m5", 2))], user="u2"),
    _job("app_4", "Pass", "2017-10-07 10:00:00", [], vc="vc2"),
    _job("app_5", "Failed", "2017-10-08 10:00:00", [_attempt("None", "2017-10-08 11:00:00", ("m6", 1))]),
]


def _folder(tmp_path: Path, jobs: list[Any], name: str = "philly") -> Path:
    folder = tmp_path / name
    folder.mkdir()
    (folder / "cluster_job_log").write_text(json.dumps(jobs, indent=1))
    return folder


def test_notebook_conventions(tmp_path: Path) -> None:
    trace = read_trace(_folder(tmp_path, JOBS))
    assert trace.format == "philly" and trace.timezone == "America/Los_Angeles"
    jobs = validate(trace.jobs).to_dicts()
    first = jobs[0]
    # 2017-10-03 02:40:13 PDT = 09:40:13 UTC
    assert first["submit_time"] == 1507023613
    assert first["start_time"] == 1507023620 and first["end_time"] == 1507032000  # first start, last end
    assert first["duration"] == 1507032000 - 1507023620 and first["queue_delay"] == 7
    assert (first["gpu_num"], first["node_num"]) == (16, 2)  # the first attempt's, not the second's 4
    assert [j["status"] for j in jobs] == ["completed", "cancelled", "running", "failed", "pending", "failed"]
    never = jobs[1]
    assert (never["start_time"], never["end_time"], never["gpu_num"], never["node_num"]) == (None, None, 0, None)
    assert jobs[2]["end_time"] is None and jobs[2]["duration"] is None
    assert jobs[5]["start_time"] is None and jobs[5]["end_time"] is not None
    assert {j["cluster"] for j in jobs} == {"philly"} and jobs[3]["user"] == "u2" and jobs[4]["vc"] == "vc2"


def test_jobs_that_never_started_are_noted_as_read_without_a_gpu_record(tmp_path: Path) -> None:
    # (app_1 killed and app_4 pending before any attempt read as 0 GPUs: counted as CPU jobs on a cluster of none,
    # unsaid)
    res = cli("info", str(_folder(tmp_path, JOBS)))
    assert res.returncode == 0, res.stderr
    assert res.stderr.splitlines() == [
        f"note: {tmp_path / 'philly'}: 2 jobs never started (no attempts) and have no GPU record: read as 0 GPUs, "
        "they count among CPU-only jobs"]


def test_attempts_table(tmp_path: Path) -> None:
    att = read_trace(_folder(tmp_path, JOBS)).attempts
    assert att["job_id"].to_list() == ["app_0", "app_0", "app_2", "app_3", "app_5"]
    assert att["attempt"].to_list() == [0, 1, 0, 0, 0]
    assert att["servers"].to_list()[:2] == [["m1", "m2"], ["m3"]]
    assert att["gpus"].to_list() == [16, 4, 1, 2, 1]
    assert att["end_time"].to_list()[2:4] == [None, None]


def test_dst_summer_winter_and_the_repeated_hour(tmp_path: Path) -> None:
    jobs = [_job("s", "Killed", "2017-07-01 12:00:00", []), _job("w", "Killed", "2017-12-01 12:00:00", []),
            _job("a", "Killed", "2017-11-05 01:30:00", [])]
    submit = read_trace(_folder(tmp_path, jobs)).jobs["submit_time"].to_list()
    # PDT is UTC-7, PST UTC-8; the repeated 01:30 on 2017-11-05 is taken as the earlier (PDT) instant
    assert submit == [1498935600, 1512158400, 1509870600]


def test_attempt_ending_in_the_repeated_hour_takes_the_later_instant(tmp_path: Path) -> None:
    # starts 01:50 PDT, runs 30 min, ends 01:20 PST: as naive wall clock the end precedes the start
    jobs = [_job("d", "Pass", "2017-11-05 01:40:00",
                 [_attempt("2017-11-05 01:50:00", "2017-11-05 01:20:00", ("m1", 1))])]
    trace = read_trace(_folder(tmp_path, jobs))
    assert trace.jobs["duration"].to_list() == [1800]
    assert trace.attempts["end_time"].to_list() == [1509873600]  # 09:20 UTC


def test_attempt_starting_in_the_repeated_hour_after_its_submit_takes_the_later_instant(tmp_path: Path) -> None:
    # submitted 01:50 PDT, started 01:10 PST (20 minutes later): it was refused as starting before its submit
    jobs = [_job("e", "Pass", "2017-11-05 01:50:00", [_attempt("2017-11-05 01:10:00", "2017-11-05 02:30:00", ("m1", 1))])]
    trace = read_trace(_folder(tmp_path, jobs))
    assert trace.jobs.select("queue_delay", "duration").row(0) == (1200, 4800)
    assert trace.attempts["start_time"].to_list() == [1509873000]  # 09:10 UTC


def test_a_job_killed_in_the_repeated_hour_before_it_started_ends_after_its_submit(tmp_path: Path) -> None:
    # submitted 01:50 PDT, killed while queued at 01:10 PST: its end was read as PDT, 40 minutes before its submit
    jobs = [_job("k", "Killed", "2017-11-05 01:50:00", [{"start_time": "None", "end_time": "2017-11-05 01:10:00",
                                                        "detail": []}])]
    trace = read_trace(_folder(tmp_path, jobs))
    assert trace.jobs.select("submit_time", "end_time").row(0) == (1509871800, 1509873000)  # 08:50, 09:10 UTC


def test_an_attempt_starting_in_the_repeated_hour_after_the_previous_attempt_takes_the_later_instant(
        tmp_path: Path) -> None:
    # attempts 01:10-01:50 PDT, then 01:05-01:30 PST, then 01:40-01:45 PST: each retry was read as PDT, before the
    # attempt it follows, and the job's run (first start to last end) came out shorter than its first attempt
    jobs = [_job("r", "Pass", "2017-11-05 00:50:00", [
        _attempt("2017-11-05 01:10:00", "2017-11-05 01:50:00", ("m1", 1)),
        _attempt("2017-11-05 01:05:00", "2017-11-05 01:30:00", ("m1", 1)),
        _attempt("2017-11-05 01:40:00", "2017-11-05 01:45:00", ("m1", 1))])]
    trace = read_trace(_folder(tmp_path, jobs))
    assert trace.jobs["duration"].to_list() == [5700]  # 01:10 PDT (08:10 UTC) to 01:45 PST (09:45 UTC)
    assert trace.attempts["start_time"].to_list() == [1509869400, 1509872700, 1509874800]
    assert trace.attempts["end_time"].to_list() == [1509871800, 1509874200, 1509875100]


def test_utilisation_is_lazy_utc_with_nulls(tmp_path: Path) -> None:
    folder = _folder(tmp_path, JOBS)
    (folder / "cluster_gpu_util").write_text(
        "time,machineId,gpu0_util,gpu1_util,gpu2_util,gpu3_util,gpu4_util,gpu5_util,gpu6_util,gpu7_util\n"
        "2017-11-05 01:30:00 PDT,m1,10.5,NA,NA,NA,NA,NA,NA,NA,\n"
        "2017-11-05 01:30:00 PST,m1,20,30,NA,NA,NA,NA,NA,NA,\n")
    (folder / "cluster_cpu_util").write_text("time,machine_id,cpu_util\n2017-12-01 00:00:00 PST,m2,NA\n")
    util = read_trace(folder).utilization
    assert util.available == ("gpu", "cpu")
    gpu = util.gpu().pl()
    assert gpu.columns == ["time", "machine_id"] + [f"gpu{i}_util" for i in range(8)]
    assert gpu["time"].to_list() == [1509870600, 1509874200]  # 08:30 and 09:30 UTC: the suffix decides
    assert gpu["gpu0_util"].to_list() == [10.5, 20.0] and gpu["gpu1_util"].to_list() == [None, 30.0]
    assert util.cpu().fetchall() == [(1512115200, "m2", None)]
    with pytest.raises(InputError, match="no cluster_mem_util file"):
        util.mem()


@pytest.mark.parametrize("suffix", [".gz", ".zst"])
def test_compressed_utilisation_files_read_like_plain_ones(tmp_path: Path, suffix: str) -> None:
    import pyarrow as pa

    plain = _folder(tmp_path, JOBS, "plain")
    (plain / "cluster_gpu_util").write_text(
        "time,machineId,gpu0_util,gpu1_util,gpu2_util,gpu3_util,gpu4_util,gpu5_util,gpu6_util,gpu7_util\n"
        "2017-11-05 01:30:00 PDT,m1,10.5,NA,NA,NA,NA,NA,NA,NA,\n"
        "2017-11-05 01:31:00 PDT,m2,20,30,NA,NA,NA,NA,NA,NA\n")
    (plain / "cluster_mem_util").write_text("time,machine_id,mem_total,mem_free\n2017-12-01 00:00:00 PST,m2,64,NA\n")
    packed = _folder(tmp_path, JOBS, "packed")
    for name in ("cluster_gpu_util", "cluster_mem_util"):
        data = (plain / name).read_bytes()
        with pa.output_stream(str(packed / (name + suffix)), compression="gzip" if suffix == ".gz" else "zstd") as out:
            out.write(data)
    util, want = read_trace(packed).utilization, read_trace(plain).utilization
    assert util.available == want.available == ("gpu", "mem")
    assert util.gpu().fetchall() == want.gpu().fetchall() and len(want.gpu().fetchall()) == 2
    assert util.mem().fetchall() == want.mem().fetchall() == [(1512115200, "m2", 64.0, None)]


def test_no_utilisation_files_means_none(tmp_path: Path) -> None:
    assert read_trace(_folder(tmp_path, JOBS)).utilization is None


def test_machine_list_pool_prefers_revised(shared_data: Path, tmp_path: Path) -> None:
    folder = _folder(tmp_path, JOBS)
    shutil.copy(shared_data / "philly/cluster_machine_list", folder)
    spec = read_trace(folder).cluster
    assert list(spec.vcs) == ["philly"] and Counter(spec.vcs["philly"]) == {2: 321, 8: 231}
    shutil.copy(shared_data / "philly/revised_machine_list.csv", folder)
    revised = read_trace(folder).cluster
    assert revised.total_nodes == 552 and revised.total_gpus != spec.total_gpus


def test_sniff(tmp_path: Path) -> None:
    folder = _folder(tmp_path, JOBS)
    assert detect_format(folder) == "philly"
    named = tmp_path / "cluster_job_log_sample"
    named.write_text("  [" + json.dumps(JOBS[0]) + "]")
    assert philly.sniff(named)
    notarray = tmp_path / "cluster_job_log"
    notarray.write_text('{"jobs": []}')
    assert not philly.sniff(notarray)


def _compressed(path: Path, jobs: Any, kind: str) -> Path:
    """``jobs`` as a job log written to ``path``, gzip- or zstd-compressed (zstd by pyarrow, a dependency: Python 3.11
    has no zstd module)."""
    data = json.dumps(jobs, indent=1).encode()
    if kind == "gzip":
        path.write_bytes(gzip.compress(data, mtime=0))
    else:
        import pyarrow as pa

        with pa.CompressedOutputStream(str(path), "zstd") as out:
            out.write(data)
    return path


@pytest.mark.parametrize(("kind", "suffix"), [("gzip", ".gz"), ("zstd", ".zst")])
def test_a_compressed_job_log_reads_like_the_plain_one(tmp_path: Path, kind: str, suffix: str) -> None:
    # (a cluster_job_log.gz or .zst was "cannot tell the trace format", and with --format philly its compressed bytes
    # were "expected a JSON array of jobs")
    plain = read_trace(_folder(tmp_path, JOBS))
    log = _compressed(tmp_path / f"cluster_job_log{suffix}", JOBS, kind)
    assert log.read_bytes()[:2] in (b"\x1f\x8b", b"\x28\xb5")
    folder = tmp_path / "packed"
    folder.mkdir()
    shutil.copy(log, folder)
    for path in (log, folder):
        trace = read_trace(path)
        assert trace.format == "philly"
        assert trace.jobs.equals(plain.jobs)
        assert trace.attempts.equals(plain.attempts)


def test_a_folder_holding_only_a_compressed_job_log_is_detected(tmp_path: Path) -> None:
    folder = tmp_path / "philly"
    folder.mkdir()
    _compressed(folder / "cluster_job_log.gz", JOBS, "gzip")
    assert philly.sniff(folder) and detect_format(folder) == "philly"
    assert philly.sniff(_compressed(tmp_path / "cluster_job_log_sample.zst", JOBS[:1], "zstd"))
    assert not philly.sniff(_compressed(tmp_path / "cluster_job_log_other.gz", {"jobs": []}, "gzip"))
    # beside a plain cluster_job_log, the plain one is read
    (folder / "cluster_job_log").write_text(json.dumps(JOBS[:2]))
    assert read_trace(folder).jobs["job_id"].to_list() == ["app_0", "app_1"]


def test_a_truncated_gzip_job_log_is_one_line_naming_it(tmp_path: Path) -> None:
    # 300 jobs, cut in half: the first bytes decode (the log is detected), the end of the stream is missing
    many = [_job(f"app_{i}", "Killed", "2017-10-04 10:00:00", []) for i in range(300)]
    folder = tmp_path / "philly"
    folder.mkdir()
    whole = _compressed(folder / "cluster_job_log.gz", many, "gzip").read_bytes()
    (folder / "cluster_job_log.gz").write_bytes(whole[:len(whole) // 2])
    for path in (folder, folder / "cluster_job_log.gz"):
        res = cli("info", str(path))
        assert res.returncode == 2, res.stderr
        assert res.stderr.strip().splitlines() == [
            f"error: {folder / 'cluster_job_log.gz'}: truncated or corrupt gzip file (unexpected end of file)"]


@pytest.mark.parametrize(
    ("jobs", "message"),
    [
        ([JOBS[0], _job("x", "Pass", "2017-13-01 00:00:00", [])],
         "record 1, field 'submitted_time': cannot parse '2017-13-01 00:00:00' as a time (YYYY-MM-DD HH:MM:SS)"),
        ([JOBS[0], JOBS[1], _job("x", "Pass", "2017-10-01 00:00:00", [
            _attempt("2017-10-01 00:00:00", "2017-10-01 01:00:00", ("m1", 1)),
            _attempt("2017-10-01 02:00:00", "yesterday", ("m1", 1))])],
         "record 2, field 'attempts[1].end_time': cannot parse 'yesterday' as a time (YYYY-MM-DD HH:MM:SS)"),
        ([_job("x", "Pass", "2017-10-01 00:00:00", [_attempt("later", "never", ("m1", 1))])],
         "record 0, field 'attempts[0].start_time': cannot parse 'later' as a time (YYYY-MM-DD HH:MM:SS)"),
        ([_job("x", "Succeeded", "2017-10-01 00:00:00", [])], "record 0, field 'status': unknown status 'Succeeded'"),
        ([{k: v for k, v in JOBS[1].items() if k != "attempts"}], "record 0, field 'attempts': field is missing"),
        ([JOBS[0], _job("x", "Pass", "2017-10-01 00:00:00", [{"start_time": "None", "end_time": "None",
                                                             "detail": [{"ip": 7, "gpus": []}]}])],
         "record 1, field 'attempts[0].detail[0].ip': expected a string, found 7"),
        ([JOBS[0], JOBS[0]], "record 1, field 'jobid': 'app_0' occurs more than once"),
        # the log's zone skips 02:00-03:00 on 2017-03-12: a well-formed time that does not exist there
        ([_job("x", "Pass", "2017-03-12 02:30:00", [])],
         "record 0, field 'submitted_time': '2017-03-12 02:30:00' is no such time in America/Los_Angeles "
         "(the clocks skip it when daylight saving starts)"),
        ([_job("x", "Pass", "2017-03-12 01:50:00", [_attempt("2017-03-12 02:30:00", "2017-03-12 04:00:00")])],
         "record 0, field 'attempts[0].start_time': '2017-03-12 02:30:00' is no such time in America/Los_Angeles "
         "(the clocks skip it when daylight saving starts)"),
        ([_job("x", "Pass", "2017-10-01 00:00:00", [_attempt("2017-10-01 05:00:00", "2017-10-01 04:00:00")])],
         "record 0, field 'attempts': the last attempt ends before the first attempt starts"),
        # killed while queued: an attempt that never started has only its end to check
        ([_job("x", "Killed", "2017-10-01 09:50:00", [{"start_time": "None", "end_time": "2017-10-01 08:00:00",
                                                      "detail": []}])],
         "record 0, field 'attempts': the last attempt ends before submitted_time"),
        # a value error in an earlier record wins over a structural error in a later one
        ([_job("x", "Nope", "2017-10-01 00:00:00", []), {"jobid": "y"}],
         "record 0, field 'status': unknown status 'Nope'"),
    ],
)
def test_malformed_records_name_file_record_field(tmp_path: Path, jobs: list[Any], message: str) -> None:
    log = _folder(tmp_path, jobs) / "cluster_job_log"
    with pytest.raises(InputError) as err:
        read_trace(log.parent)
    assert str(err.value) == f"{log}, {message}"


def test_not_an_array_and_broken_json(tmp_path: Path) -> None:
    log = tmp_path / "cluster_job_log"
    log.write_text('{"jobs": []}')
    with pytest.raises(InputError) as err:
        philly.read(log)
    assert str(err.value) == f"{log}: expected a JSON array of jobs"
    log.write_text("[" + json.dumps(JOBS[0]) + ", {\"status\": ")
    with pytest.raises(InputError, match=r"record 1: not valid JSON"):
        philly.read(log)


def test_lenient_drops_and_counts(tmp_path: Path) -> None:
    bad = [
        _job("b1", "Pass", "soon", []),
        {"status": "Pass"},
        _job("b2", "Pass", "2017-10-01 00:00:00", [_attempt("later", "None", ("m1", 1))]),
        JOBS[0],  # duplicate of record 0
    ]
    trace = read_trace(_folder(tmp_path, JOBS + bad), lenient=True)
    assert trace.jobs["job_id"].to_list() == [j["jobid"] for j in JOBS]
    assert trace.attempts["job_id"].unique(maintain_order=True).to_list() == ["app_0", "app_2", "app_3", "app_5"]
    assert trace.dropped == {"unparsable submitted_time": 1, "malformed jobid": 1,
                             "unparsable attempts.start_time": 1, "duplicate jobid": 1}


def test_lenient_counts_an_attempt_time_the_clocks_skip(tmp_path: Path) -> None:
    bad = _job("s", "Pass", "2017-03-12 01:50:00", [_attempt("2017-03-12 02:30:00", "2017-03-12 04:00:00")])
    trace = read_trace(_folder(tmp_path, [JOBS[0], bad]), lenient=True)
    assert trace.jobs["job_id"].to_list() == ["app_0"]
    assert trace.dropped == {"skipped time attempts.start_time": 1}


def test_round_trip_with_attempts(shared_data: Path, tmp_path: Path) -> None:
    folder = _folder(tmp_path, JOBS)
    shutil.copy(shared_data / "philly/cluster_machine_list", folder)
    trace = read_trace(folder)
    back = read_trace(philly.write(trace, tmp_path / "out"))
    assert back.jobs.equals(trace.jobs)
    assert back.attempts.equals(trace.attempts)
    assert back.cluster == trace.cluster


def test_round_trip_without_attempts_uses_synthetic_servers(tmp_path: Path) -> None:
    jobs = conform(pl.DataFrame({
        "job_id": ["a", "b", "c", "d"], "cluster": "philly", "vc": ["v1", "v1", "v2", "v2"],
        "user": ["u1", "u2", None, "u3"], "gpu_num": [20, 1, 0, 2], "node_num": [3, 1, 0, None],
        "submit_time": [1507023613, 1507100000, 1507200000, 1507300000],
        "start_time": [1507023620, 1507100060, 1507200000, None], "end_time": [1507030000, None, 1507200010, None],
        "duration": [6380, None, 10, None], "queue_delay": [7, 60, 0, None],
        "status": ["completed", "running", "cancelled", "pending"],
    }))
    spec = ClusterSpec({"a": (8, 8), "b": (2,)})
    folder = philly.write(Trace(jobs, "helios", timezone="UTC", cluster=spec), tmp_path / "out")
    back = read_trace(folder)
    # GPUs live only in attempts: the never-started job "d" comes back with gpu_num 0, all else intact
    assert back.jobs["gpu_num"].to_list() == [20, 1, 0, 0]
    assert back.jobs.drop("gpu_num").equals(jobs.drop("gpu_num"))
    assert back.attempts["servers"].to_list() == [["m0", "m1", "m2"], ["m0"], []]
    assert back.attempts["gpus"].to_list() == [20, 1, 0]
    assert back.cluster.vcs == {"philly": (8, 8, 2)}
    record = json.loads((folder / "cluster_job_log").read_text())[0]
    assert list(record) == ["status", "vc", "jobid", "attempts", "submitted_time", "user"]
    assert [len(d["gpus"]) for d in record["attempts"][0]["detail"]] == [7, 7, 6]
    assert record["submitted_time"] == "2017-10-03 02:40:13"  # Los Angeles wall clock whatever the trace's zone
