"""The Alibaba openb 2023 pod-list reader."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
from test_sim_helpers import cli

from dlcluster.errors import InputError
from dlcluster.io import detect_format, read_trace
from dlcluster.io.cluster_spec import read_cluster_spec

HEADER = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\n"
OPENB = "alibaba-openb-2023"


def _write(tmp_path: Path, body: str, header: str = HEADER) -> Path:
    path = tmp_path / "openb_pod_list_test.csv"
    path.write_text(header + body)
    return path


def test_real_default_list_has_8152_pods_and_node_gpus(shared_data: Path) -> None:
    path = shared_data / OPENB / "openb_pod_list_default.csv"
    assert detect_format(path) == "openb"
    trace = read_trace(path)
    jobs = trace.jobs
    assert jobs.height == 8152 and jobs["job_id"].n_unique() == 8152
    # the pod list's own columns, re-counted independently of the reader
    raw = pl.read_csv(path)
    assert jobs.filter(pl.col("gpu_num") > 0).height == raw.filter(pl.col("num_gpu") > 0).height
    assert jobs.filter(pl.col("status") == "pending").height == raw.filter(pl.col("pod_phase") == "Pending").height
    assert jobs.filter(pl.col("status") == "pending")["start_time"].null_count() == jobs.filter(
        pl.col("status") == "pending").height
    assert set(jobs["vc"].unique()) == set(raw["qos"].unique())
    # docs/synth.md: "an openb pod list is three quarters such pods" (running or pending when it was taken)
    assert round(jobs.filter(pl.col("status").is_in(["running", "pending"])).height / jobs.height, 2) == 0.75
    nodes = pl.read_csv(shared_data / OPENB / "openb_node_list_gpu_node.csv")
    assert trace.cluster is not None
    assert trace.cluster.total_gpus == nodes["gpu"].sum() == 6212
    assert trace.cluster.total_nodes == nodes.height == 1213
    assert list(trace.cluster.vcs) == ["openb"]
    # docs/simulator.md: "the openb default pod list (6,203 GPU pods with durations, one VC of 1,523 nodes)"
    timed = jobs.filter((pl.col("gpu_num") > 0) & pl.col("duration").is_not_null() & pl.col("submit_time").is_not_null())
    assert timed.height == 6203
    assert pl.read_csv(shared_data / OPENB / "openb_node_list_all_node.csv").height == 1523


def test_real_multigpu_variant_has_no_times(shared_data: Path) -> None:
    trace = read_trace(shared_data / OPENB / "openb_pod_list_multigpu50.csv")
    assert trace.jobs.height == 9061
    assert trace.jobs["submit_time"].unique().to_list() == [0]
    assert trace.jobs["start_time"].null_count() == trace.jobs["end_time"].null_count() == 9061
    assert trace.jobs["status"].cast(pl.String).unique().to_list() == ["other"]


def test_fields_map_onto_canonical_columns(tmp_path: Path) -> None:
    path = _write(tmp_path, "p0,12000,16384,1,460,,LS,Running,10,500,40\n"
                            "p1,2500,100,0,0,,,Pending,20,600,\n"
                            "p2,8000,100,2,1000,V100,BE,Succeeded,30,100,35\n")
    jobs = read_trace(path).jobs
    assert jobs["gpu_num"].to_list() == [1, 0, 2]
    assert jobs["gpu_milli"].to_list() == [460, None, 1000]
    assert jobs["cpu_num"].to_list() == [12, 3, 8]
    assert jobs["vc"].to_list() == ["LS", "default", "BE"]
    assert jobs["status"].cast(pl.String).to_list() == ["running", "pending", "completed"]
    assert jobs["submit_time"].to_list() == [10, 20, 30]
    assert jobs["start_time"].to_list() == [40, None, 35]
    assert jobs["duration"].to_list() == [460, None, 65]
    assert jobs["queue_delay"].to_list() == [30, None, 5]


def test_gpu_shares_count_as_whole_gpus(tmp_path: Path) -> None:
    """README: gpu_milli is kept, but info (and characterize, ces, simulate) count a pod's GPUs as whole."""
    path = _write(tmp_path, "".join(f"p{i},1000,100,1,250,,LS,Succeeded,0,3600,0\n" for i in range(4)))
    assert read_trace(path).jobs["gpu_milli"].to_list() == [250] * 4
    res = cli("info", str(path), "--json")
    assert res.returncode == 0 and json.loads(res.stdout)["gpu_hours"] == 4.0  # (a quarter each would be 1.0)


def test_info_says_that_openb_times_are_relative_and_a_dated_trace_gets_no_such_note(tmp_path: Path) -> None:
    path = _write(tmp_path, "p0,12000,16384,1,460,,LS,Running,10,500,40\n")
    res = cli("info", str(path))
    assert res.returncode == 0 and "1970-01-01T00:00:10Z" in res.stdout
    assert res.stderr.strip() == (f"note: {path}: its times count from the trace's own start, not from a date: "
                                  "1970-01-01 is its first day")
    res = cli("info", str(path), "--json")  # (the note was left out)
    assert res.returncode == 0 and json.loads(res.stdout)["start"] == "1970-01-01T00:00:10Z"
    assert res.stderr.strip().startswith(f"note: {path}: its times count from the trace's own start")
    dated = tmp_path / "dated.csv"
    dated.write_text("job_id,vc,gpu_num,submit_time,start_time,end_time,status\n"
                     "a,v,1,1700000000,1700000010,1700000100,completed\n")
    res = cli("info", str(dated), "--format", "csv", "--tz", "UTC")
    assert res.returncode == 0 and "note" not in res.stderr


def test_no_node_list_means_no_cluster_spec(tmp_path: Path) -> None:
    assert read_trace(_write(tmp_path, "p0,1000,1,1,1000,,LS,Running,0,5,0\n")).cluster is None


def test_node_list_beside_counts_only_gpu_nodes(tmp_path: Path) -> None:
    path = _write(tmp_path, "p0,1000,1,1,1000,,LS,Running,0,5,0\n")
    (tmp_path / "openb_node_list_all_node.csv").write_text(
        "sn,cpu_milli,memory_mib,gpu,model\nn0,1,1,0,\nn1,1,1,8,V100\nn2,1,1,2,T4\n")
    assert read_trace(path).cluster.vcs == {"openb": (8, 2)}


def test_node_list_cpus_are_whole_cores(tmp_path: Path) -> None:
    path = _write(tmp_path, "p0,1000,1,1,1000,,LS,Running,0,5,0\n")
    (tmp_path / "openb_node_list_gpu_node.csv").write_text(
        "sn,cpu_milli,memory_mib,gpu,model\nn0,96000,1,8,V100\nn1,32500,1,2,T4\nn2,64000,1,0,\n")
    cluster = read_trace(path).cluster
    assert cluster.vcs == {"openb": (8, 2)} and cluster.cpus == {"openb": (96, 32)}


def test_bad_node_cpus_is_an_error(tmp_path: Path) -> None:
    path = _write(tmp_path, "p0,1000,1,1,1000,,LS,Running,0,5,0\n")
    nodes = tmp_path / "openb_node_list_gpu_node.csv"
    nodes.write_text("sn,cpu_milli,memory_mib,gpu,model\nn0,96000,1,8,V100\nn1,-5,1,2,T4\n")
    with pytest.raises(InputError) as err:
        read_trace(path)
    assert str(err.value) == f"{nodes}, line 3, field 'cpu_milli': negative value -5"


def test_shared_node_list_has_cpus(shared_data: Path) -> None:
    folder = shared_data / "alibaba-openb-2023"
    cluster = read_trace(folder / "openb_pod_list_default.csv").cluster
    nodes = pl.read_csv(folder / "openb_node_list_gpu_node.csv").filter(pl.col("gpu") > 0)
    assert cluster.cpus == {"openb": tuple(c // 1000 for c in nodes["cpu_milli"])}


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("p0,1000,1,1,1000,,LS,Running,0,5,0\np1,1000,1,x,1000,,LS,Running,0,5,0\n",
         "line 3, field 'num_gpu': cannot parse 'x' as a whole number"),
        ("p0,1000,1,1,1500,,LS,Running,0,5,0\n",
         "line 2, field 'gpu_milli': GPU share '1500' is not between 1 and 1000 for a pod with GPUs"),
        ("p0,1000,1,1,1000,,LS,Evicted,0,5,0\n", "line 2, field 'pod_phase': unknown status 'Evicted'"),
        ("p0,1000,1,1,1000,,LS,Running,0,5,0\np0,1000,1,1,1000,,LS,Running,0,5,0\n",
         "line 3, field 'name': 'p0' occurs more than once"),
        # a pod's name is trimmed: spaces around it do not make another pod
        ("p0,1000,1,1,1000,,LS,Running,0,5,0\n p0 ,1000,1,1,1000,,LS,Running,0,5,0\n",
         "line 3, field 'name': ' p0 ' is pod 'p0' again, as 'p0' on line 2"),
        ("  ,1000,1,1,1000,,LS,Running,0,5,0\n", "line 2, field 'name': value is empty"),
        ("p0,1000,1,1,1000,,LS,Running,,5,0\n", "line 2, field 'creation_time': value is empty"),
    ],
)
def test_malformed_rows_name_file_line_field(tmp_path: Path, body: str, message: str) -> None:
    path = _write(tmp_path, body)
    with pytest.raises(InputError) as err:
        read_trace(path, format="openb")
    assert str(err.value) == f"{path}, {message}"


def test_bad_node_list_is_an_error(tmp_path: Path) -> None:
    path = _write(tmp_path, "p0,1000,1,1,1000,,LS,Running,0,5,0\n")
    nodes = tmp_path / "openb_node_list_gpu_node.csv"
    nodes.write_text("sn,cpu_milli,memory_mib,gpu,model\nn0,1,1,eight,V100\n")
    with pytest.raises(InputError) as err:
        read_trace(path, lenient=True)
    assert str(err.value) == f"{nodes}, line 2, field 'gpu': cannot parse 'eight' as a whole number of GPUs"


def test_lenient_drops_and_counts(tmp_path: Path) -> None:
    path = _write(tmp_path, "p0,1000,1,1,1000,,LS,Running,0,5,0\np1,1000,1,-1,1000,,LS,Running,0,5,0\n"
                            "p2,1000,1,1,1000,,LS,Lost,0,5,0\np3,1000,1,1,1000,,LS,Failed,0,5,0\n")
    trace = read_trace(path, lenient=True)
    assert trace.jobs["job_id"].to_list() == ["p0", "p3"]
    assert trace.dropped == {"negative num_gpu": 1, "unknown pod_phase": 1}


def test_a_node_list_given_as_the_cluster_is_read_as_beside_a_pod_list(tmp_path: Path) -> None:
    nodes = tmp_path / "nodes.csv"  # any name: --cluster names the file
    nodes.write_text("sn,cpu_milli,memory_mib,gpu,model\nn0,96000,1,8,V100\nn1,32500,1,2,T4\nn2,64000,1,0,\n")
    cluster = read_cluster_spec(nodes)
    assert cluster.vcs == {"openb": (8, 2)} and cluster.cpus == {"openb": (96, 32)}


def test_pods_labelled_by_qos_run_pooled_and_the_error_says_so(tmp_path: Path) -> None:
    path = _write(tmp_path, "p0,1000,1,1,1000,,LS,Succeeded,0,50,0\np1,1000,1,2,1000,,BE,Succeeded,5,65,5\n")
    nodes = tmp_path / "nodes.csv"
    nodes.write_text("sn,cpu_milli,memory_mib,gpu,model\nn0,96000,1,8,V100\n")
    res = cli("simulate", str(path), "--cluster", str(nodes), "-o", str(tmp_path / "out"))
    assert res.returncode == 2
    assert res.stderr.strip().endswith("is not in the cluster spec (known: openb); --pooled runs every job on the "
                                       "whole cluster as one VC, --skip-unknown-vcs counts such jobs as unschedulable")
    res = cli("simulate", str(path), "--cluster", str(nodes), "--pooled", "-o", str(tmp_path / "out"))
    assert res.returncode == 0, res.stderr
    jobs = pl.read_parquet(tmp_path / "out/jobs.parquet").sort("job_id")
    assert jobs["start"].to_list() == [0, 5] and jobs["queue_delay"].to_list() == [0, 0]
