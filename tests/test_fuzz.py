"""Fuzzing every input format through the CLI: a corrupted file is either read (exit 0) or refused with
exactly one stderr line that names the file (exit 2); never an internal error (exit 1).

Each format starts from a small valid file; Hypothesis corrupts it (a cell replaced by a hostile value,
a row made wider or narrower, bytes that are not UTF-8, a byte order mark, CRLF line ends, the file cut
short, JSON nested deeply or given the wrong types) and the command runs in-process. Examples are
derandomised, so a run is repeatable; a hundred per format keep the whole file to well under a minute.
"""

from __future__ import annotations

import io
import os
import json
import tempfile
from collections.abc import Callable
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass
from pathlib import Path

import polars as pl
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dlcluster.cli import main

# a longer hunt: DLCLUSTER_FUZZ_EXAMPLES=1000 DLCLUSTER_FUZZ_RANDOM=1 (new examples every run)
EXAMPLES = int(os.environ.get("DLCLUSTER_FUZZ_EXAMPLES", "100"))
DERANDOMIZE = not os.environ.get("DLCLUSTER_FUZZ_RANDOM")
FUZZ = settings(max_examples=EXAMPLES, deadline=None, derandomize=DERANDOMIZE, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

HOSTILE = ["", " ", "-1", "-0", "0", "1e30", "-1e30", "inf", "-inf", "nan", "NaN", "9" * 25, "-" + "9" * 25,
           "1e-300", "0x10", "1_000", "２", "\x00", '"', '""', "a,b", "a|b", "1,5", "\t", "None", "Unknown", "é",
           "9999-12-31 23:59:59", "0000-00-00 00:00:00", "2020-02-30 00:00:00", "1500000000000",
           "1500000000000000", "9223372036854775807", "-9223372036854775809", "2147483648", "4294967296",
           "2021-03-14 02:30:00", "01/02/2020", "13/13/2020", "2020-01-01T00:00:00Z", "PENDING", "COMPLETED",
           "gres/gpu=-8", "gres/gpu=99999999999", "gres/gpu:a=1,gres/gpu:b=x", "999999999-00:00:00", "1-25:00:00"]


@dataclass(frozen=True)
class Format:
    """A valid sample of one input format: the file(s) to write and the trace path to read."""

    name: str
    files: dict[str, str]
    target: str  # the path given to the CLI, relative to the example's folder
    separator: str = ","
    header: bool = True


SAMPLES = [
    Format("csv", {"jobs.csv": "job_id,submit_time,gpu_num,duration,start_time,end_time,status,vc,user\n"
                               "a,1600000000,1,60,1600000010,1600000070,completed,v1,u1\n"
                               "b,1600000100,2,120,1600000100,1600000220,failed,v2,u2\n"}, "jobs.csv"),
    Format("helios", {"cluster_log.csv": "job_id,user,vc,gpu_num,cpu_num,node_num,state,submit_time,start_time,"
                                         "end_time,duration,queue\n"
                                         "j1,u1,v1,1,4,1,COMPLETED,2020-04-01 00:00:00,2020-04-01 00:00:10,"
                                         "2020-04-01 00:01:10,60,10\n"
                                         "j2,u2,v2,8,32,1,FAILED,2020-04-01 01:00:00,2020-04-01 01:00:00,"
                                         "2020-04-01 02:00:00,3600,0\n"}, "cluster_log.csv"),
    Format("sacct", {"s.txt": "JobID|User|Partition|Submit|Start|End|State|AllocTRES|Elapsed|NCPUS|NNodes\n"
                              "1|u|p|2024-01-01T00:00:00|2024-01-01T00:00:05|2024-01-01T01:00:05|COMPLETED|"
                              "cpu=4,gres/gpu=1|01:00:00|4|1\n"
                              "2|u|p|2024-01-01T00:10:00|||PENDING||00:00:00|8|1\n"}, "s.txt", separator="|"),
    Format("swf", {"t.swf": "; UnixStartTime: 1600000000\n; TimeZoneString: UTC\n"
                            "1 0 10 60 1 -1 -1 1 -1 -1 1 1 -1 -1 1 -1 -1 -1\n"
                            "2 100 0 120 2 -1 -1 2 -1 -1 0 2 -1 -1 1 -1 -1 -1\n"}, "t.swf", separator=" ",
           header=False),
    Format("philly-jobs", {"jobs.csv": "timestamp,duration,num_gpus,gpu_time,cluster\n"
                                       "2017-10-09 07:01:55,66.0,1,66.0,a\n"
                                       "2017-10-09 08:00:00,120,2,240,b\n"}, "jobs.csv"),
    Format("openb", {"openb_pod_list_default.csv": "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,"
                                                   "pod_phase,creation_time,deletion_time,scheduled_time\n"
                                                   "p1,8000,1000,1,1000,,LS,Succeeded,0,100,10\n"
                                                   "p2,4000,500,1,500,V100,BE,Running,5,,20\n"},
           "openb_pod_list_default.csv"),
    Format("pai", {"pai_job_table.csv": "j1,i1,u1,Terminated,100,200\nj2,i2,u2,Failed,150,400\n",
                   "pai_task_table.csv": "j1,worker,1,Terminated,110,200,600,29.3,100,V100\n"
                                         "j2,ps,2,Failed,160,400,400,20,50,P100\n"}, "."),
]


def _run(args: list[str]) -> tuple[int, str]:
    err, out = io.StringIO(), io.StringIO()
    with redirect_stderr(err), redirect_stdout(out):
        try:
            main(args)
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
    return code, err.getvalue()


def _check(folder: Path, fmt: str, target: Path, lenient: bool, convert: bool) -> None:
    args = ["convert", str(target), "-o", str(folder / "out.parquet")] if convert else ["info", str(target), "--json"]
    code, err = _run([*args, "--format", fmt, *(["--lenient"] if lenient else [])])
    lines = [line for line in err.strip().splitlines() if not line.startswith("note: ")]  # notices aside
    assert code in (0, 2), f"exit {code}: {err}"
    if code == 2:
        assert len(lines) == 1, err
        assert lines[0].startswith("error: ") and str(folder) in lines[0], lines[0]


def _cells(text: str, sep: str) -> list[list[str]]:
    return [line.split(sep) for line in text.split("\n")]


def _join(rows: list[list[str]], sep: str) -> str:
    return "\n".join(sep.join(r) for r in rows)


@st.composite
def corrupted(draw: st.DrawFn, sample: Format) -> tuple[str, bytes]:
    """One file of ``sample`` corrupted one way: the file's name and its new bytes."""
    name = draw(st.sampled_from(sorted(sample.files)))
    text = sample.files[name]
    rows = _cells(text.rstrip("\n"), sample.separator)
    first = 1 if sample.header or sample.name == "swf" else 0
    if sample.name == "swf":
        first = 2
    kind = draw(st.sampled_from(["cell", "cell", "cell", "text", "width", "bytes", "bom", "crlf", "cut", "rows"]))
    r = draw(st.integers(first, len(rows) - 1))
    c = draw(st.integers(0, len(rows[r]) - 1))
    if kind == "cell":
        rows[r][c] = draw(st.sampled_from(HOSTILE))
        return name, (_join(rows, sample.separator) + "\n").encode()
    if kind == "text":
        rows[r][c] = draw(st.text(max_size=12))
        return name, (_join(rows, sample.separator) + "\n").encode("utf-8", errors="surrogatepass")
    if kind == "width":
        extra = draw(st.integers(-3, 3))
        rows[r] = rows[r][:extra] if extra < 0 else rows[r] + ["x"] * extra
        return name, (_join(rows, sample.separator) + "\n").encode()
    if kind == "bytes":
        data = bytearray(text.encode())
        at = draw(st.integers(0, len(data)))
        data[at:at] = draw(st.sampled_from([b"\xff", b"\xfe\xff", b"\xc3", b"\x00", b"\xed\xa0\x80", b"\x1f"]))
        return name, bytes(data)
    if kind == "bom":
        return name, draw(st.sampled_from([b"\xef\xbb\xbf" + text.encode(), text.encode("utf-16")]))
    if kind == "crlf":
        return name, text.replace("\n", "\r\n").encode()
    if kind == "cut":
        data = text.encode()
        return name, data[:draw(st.integers(0, len(data) - 1))]
    # rows: a duplicated, dropped or blank row, or a quoted field spanning lines
    how = draw(st.sampled_from(["dup", "drop", "blank", "quoted"]))
    if how == "dup":
        rows.insert(r, list(rows[r]))
    elif how == "drop":
        del rows[r]
    elif how == "blank":
        rows.insert(r, [""])
    else:
        rows[r][c] = '"x\ny"'
    return name, (_join(rows, sample.separator) + "\n").encode()


def _write(folder: Path, sample: Format, name: str, data: bytes) -> None:
    for other, text in sample.files.items():
        (folder / other).write_text(text)
    (folder / name).write_bytes(data)


def _fuzz(sample: Format) -> Callable[..., None]:
    @FUZZ
    @given(case=corrupted(sample), lenient=st.booleans(), convert=st.booleans())
    def test(case: tuple[str, bytes], lenient: bool, convert: bool) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            _write(folder, sample, *case)
            _check(folder, sample.name, folder / sample.target, lenient, convert)

    return test


test_fuzz_csv = _fuzz(SAMPLES[0])
test_fuzz_helios = _fuzz(SAMPLES[1])
test_fuzz_sacct = _fuzz(SAMPLES[2])
test_fuzz_swf = _fuzz(SAMPLES[3])
test_fuzz_philly_jobs = _fuzz(SAMPLES[4])
test_fuzz_openb = _fuzz(SAMPLES[5])
test_fuzz_pai = _fuzz(SAMPLES[6])


def test_samples_are_valid() -> None:
    """The uncorrupted samples read: a fuzz failure is the corruption's doing."""
    for sample in SAMPLES:
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            name, text = next(iter(sample.files.items()))
            _write(folder, sample, name, text.encode())
            code, err = _run(["info", str(folder / sample.target), "--json", "--format", sample.name])
            assert code == 0, (sample.name, err)


# --- Philly's JSON job log: structure, types and nesting -----------------------------------------------

PHILLY_RECORD = {"status": "Pass", "vc": "v1", "jobid": "application_1", "user": "u1",
                 "submitted_time": "2017-10-01 00:00:00",
                 "attempts": [{"start_time": "2017-10-01 00:00:10", "end_time": "2017-10-01 01:00:00",
                               "detail": [{"ip": "m1", "gpus": ["gpu0", "gpu1"]}]}]}
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8) | st.sampled_from(HOSTILE),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=8,
)


def _paths(obj: object, here: tuple[object, ...] = ()) -> list[tuple[object, ...]]:
    """Every key path into a JSON value."""
    out = [here]
    if isinstance(obj, dict):
        for k, v in obj.items():
            out += _paths(v, (*here, k))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            out += _paths(v, (*here, i))
    return out


@st.composite
def philly_log(draw: st.DrawFn) -> bytes:
    """A two-job Philly log with one value replaced, a key dropped, deep nesting, or the text corrupted."""
    records = json.loads(json.dumps([PHILLY_RECORD, {**PHILLY_RECORD, "jobid": "application_2"}]))
    kind = draw(st.sampled_from(["value", "value", "drop", "deep", "text"]))
    path = draw(st.sampled_from(_paths(records)[1:]))
    *parent_path, key = path
    parent: object = records
    for step in parent_path:
        parent = parent[step]  # type: ignore[index]
    if kind == "value":
        parent[key] = draw(JSON_VALUES)  # type: ignore[index]
    elif kind == "drop":
        del parent[key]  # type: ignore[attr-defined]
    elif kind == "deep":
        depth = draw(st.sampled_from([10, 70, 1_000, 30_000]))
        return json.dumps(records).replace('"gpu0"', "[" * depth + "1" + "]" * depth, 1).encode()
    text = json.dumps(records).encode()
    if kind == "text":
        at = draw(st.integers(0, len(text)))
        text = text[:at] + draw(st.sampled_from([b"", b",", b"]", b"{", b'"', b"\xff", b"\\"])) + text[at + 1:]
    return text


@FUZZ
@given(data=philly_log(), lenient=st.booleans(), convert=st.booleans())
def test_fuzz_philly(data: bytes, lenient: bool, convert: bool) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "cluster_job_log").write_bytes(data)
        _check(folder, "philly", folder, lenient, convert)


# --- dlcluster's canonical Parquet: typed values at and beyond their limits ----------------------------

PARQUET_VALUES = {
    "gpu_num": st.sampled_from([-1, 0, 2**31 - 1, 2**31, 10**12, -(2**63), 2**63 - 1]),
    "cpu_num": st.sampled_from([-5, 2**40]),
    "submit_time": st.sampled_from([-(2**63), 2**63 - 1, 10**12, 1_500_000_000_000, -5]),
    "start_time": st.sampled_from([-10, 2**62, None]),
    "end_time": st.sampled_from([0, 2**62, None]),
    "duration": st.sampled_from([-1, 10**11, 2**63 - 1, None]),
    "queue_delay": st.sampled_from([-1, 10**15]),
    "job_id": st.sampled_from(["a", "", None]),
    "status": st.sampled_from(["completed", "bogus", None]),
}


@FUZZ
@given(column=st.sampled_from(sorted(PARQUET_VALUES)), data=st.data(), cut=st.integers(0, 400),
       lenient=st.booleans())
def test_fuzz_parquet(column: str, data: st.DataObject, cut: int, lenient: bool) -> None:
    value = data.draw(PARQUET_VALUES[column])
    jobs = {"job_id": ["a", "b"], "cluster": ["c", "c"], "vc": ["v", "v"], "user": ["u", None], "name": [None, None],
            "gpu_num": [1, 2], "gpu_milli": [None, None], "cpu_num": [4, None], "node_num": [1, 1],
            "submit_time": [0, 10], "start_time": [5, 10], "end_time": [65, 100], "duration": [60, 90],
            "queue_delay": [5, 0], "status": ["completed", "failed"]}
    jobs[column] = [value, jobs[column][1]]
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        path = folder / "t.parquet"
        pl.DataFrame(jobs, schema_overrides={"user": pl.String, "name": pl.String, "gpu_milli": pl.Int64}).write_parquet(path)
        if cut and cut < path.stat().st_size:  # a damaged file, cut short
            path.write_bytes(path.read_bytes()[:cut])
        _check(folder, "parquet", path, lenient, convert=False)


# --- cluster specs, read by simulate ---------------------------------------------------------------------

SPEC = "vc,nodes,gpus_per_node,cpus_per_node\nv,2,8,64\nw,1,4,32\n"


@settings(max_examples=EXAMPLES // 2, deadline=None, derandomize=DERANDOMIZE, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(case=corrupted(Format("spec", {"spec.csv": SPEC}, "spec.csv")))
def test_fuzz_cluster_spec(case: tuple[str, bytes]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "spec.csv").write_bytes(case[1])
        (folder / "jobs.csv").write_text("job_id,submit_time,gpu_num,duration,vc\na,0,1,60,v\n")
        code, err = _run(["simulate", str(folder / "jobs.csv"), "--format", "csv", "--cluster",
                          str(folder / "spec.csv"), "--skip-unknown-vcs", "-o", str(folder / "out")])
        lines = [line for line in err.strip().splitlines() if not line.startswith("note: ")]  # notices aside
        assert code in (0, 2), f"exit {code}: {err}"
        if code == 2:
            assert len(lines) == 1 and lines[0].startswith("error: ") and str(folder) in lines[0], err
