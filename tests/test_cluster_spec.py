"""Cluster specs from Helios GPU counts, Philly machine lists and vc,nodes CSVs."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import polars as pl
import pytest

from dlcluster.cluster import ClusterSpec
from dlcluster.errors import ConfigError, InputError
from dlcluster.io.cluster_spec import read_cluster_spec, write_cluster_spec


@pytest.mark.parametrize("cluster", ["venus", "earth"])
def test_helios_totals_match_the_total_column_every_day(shared_data: Path, cluster: str) -> None:
    path = shared_data / "helios" / cluster / "cluster_gpu_number.csv"
    table = pl.read_csv(path)
    vcs = [c for c in table.columns if c not in ("date", "total")]
    for row in table.iter_rows(named=True):
        spec = read_cluster_spec(path, row["date"])
        assert spec.total_gpus == row["total"]
        assert {vc: spec.gpus(vc) for vc in spec.vcs} == {vc: row[vc] for vc in vcs if row[vc] > 0}


def test_helios_default_is_the_last_date(shared_data: Path) -> None:
    path = shared_data / "helios/venus/cluster_gpu_number.csv"
    last = pl.read_csv(path).row(-1, named=True)
    assert read_cluster_spec(path) == read_cluster_spec(path, last["date"])


def test_helios_nodes_are_eights_plus_remainder_and_empty_vcs_dropped(tmp_path: Path) -> None:
    path = tmp_path / "cluster_gpu_number.csv"
    path.write_text("date,vcA,vcB,vcC,total\n2020-04-01,20,0,16,36\n2020-04-02,4,8,0,12\n")
    assert read_cluster_spec(path, "2020-04-01").vcs == {"vcA": (8, 8, 4), "vcC": (8, 8)}
    assert read_cluster_spec(path).vcs == {"vcA": (4,), "vcB": (8,)}


def test_helios_absent_date_names_file_and_range(tmp_path: Path) -> None:
    path = tmp_path / "cluster_gpu_number.csv"
    path.write_text("date,vcA,total\n2020-04-01,8,8\n2020-04-02,8,8\n")
    with pytest.raises(InputError) as err:
        read_cluster_spec(path, "2020-05-01")
    assert str(err.value) == f"{path}: no row for date '2020-05-01' (the file covers 2020-04-01..2020-04-02)"


def test_philly_raw_machine_list(shared_data: Path) -> None:
    spec = read_cluster_spec(shared_data / "philly/cluster_machine_list")
    assert list(spec.vcs) == ["philly"]
    assert spec.total_nodes == 552
    assert Counter(spec.vcs["philly"]) == {2: 321, 8: 231}


def test_philly_revised_machine_list_with_index_column(shared_data: Path) -> None:
    path = shared_data / "philly/revised_machine_list.csv"
    spec = read_cluster_spec(path)
    assert spec.total_nodes == 552
    assert spec.vcs["philly"] == tuple(pl.read_csv(path)["number of GPUs"].to_list())


def test_vc_nodes_file(shared_data: Path) -> None:
    spec = read_cluster_spec(shared_data / "philly/vc_nodes.csv")
    assert len(spec.vcs) == 11 and spec.total_nodes == 352
    assert set(g for nodes in spec.vcs.values() for g in nodes) == {8}


def test_vc_rows_add_up_with_node_sizes(tmp_path: Path) -> None:
    path = tmp_path / "spec.csv"
    path.write_text("vc,nodes,gpus_per_node\na,2,8\nb,1,4\na,1,2\n")
    assert read_cluster_spec(path).vcs == {"a": (8, 8, 2), "b": (4,)}


def test_write_read_round_trip(tmp_path: Path) -> None:
    spec = ClusterSpec({"a": (8, 8, 4), "b": (2,), "empty": ()})
    path = write_cluster_spec(spec, tmp_path / "out" / "spec.csv")
    assert path.read_text() == "vc,nodes,gpus_per_node\na,2,8\na,1,4\nb,1,2\nempty,0,8\n"
    back = read_cluster_spec(path)  # a VC of 0 nodes is named, as a Helios VC of 0 GPUs is, not given nodes
    assert back.vcs == {"a": (8, 8, 4), "b": (2,)} and back.empty == {"empty"}
    assert write_cluster_spec(back, tmp_path / "again.csv").read_text() == path.read_text()


def test_a_vc_of_gpuless_nodes_is_named_as_one_of_no_nodes(tmp_path: Path) -> None:
    path = tmp_path / "spec.csv"
    path.write_text("vc,nodes,gpus_per_node\ncpu,2,0\nnone,0,8\nmixed,1,0\nmixed,1,8\n")
    spec = read_cluster_spec(path)  # a 0-GPU node inside a VC with GPUs stays, as a Philly machine list's does
    assert spec.vcs == {"mixed": (0, 8)} and spec.empty == {"cpu", "none"}


def test_interleaved_sizes_round_trip_as_a_multiset(shared_data: Path, tmp_path: Path) -> None:
    spec = read_cluster_spec(shared_data / "philly/cluster_machine_list")
    back = read_cluster_spec(write_cluster_spec(spec, tmp_path / "spec.csv"))
    assert Counter(back.vcs["philly"]) == Counter(spec.vcs["philly"])


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("vc,gpus\na,8\n", "missing column 'node num' (found: vc, gpus)"),
        ("vc,nodes\na,8\nb,two\n", "line 3, field 'nodes': cannot parse 'two' as a whole number"),
        ("vc,nodes\na,-1\n", "line 2, field 'nodes': negative value -1"),
        ("date,vcA,total\n2020-04-01,8,8\n2020-04-02,7.5,8\n",
         "line 3, field 'vcA': cannot parse '7.5' as a whole number of GPUs"),
        ("machineId, number of GPUs\nm0,8\nm1,\n", "line 3, field 'number of GPUs': value is empty"),
        ("machineId, number of GPUs\nm0,8\nm0,2\n", "line 3, field 'machineId': machine 'm0' is listed more than once"),
        ("vc,nodes,gpu_per_node\na,1,4\n", "field 'gpu_per_node': unknown column (expected vc, nodes, gpus_per_node, "
                                          "cpus_per_node)"),
        ("vc,node num,gpus_per_node,cpu_per_node\na,1,4,16\n",
         "field 'cpu_per_node': unknown column (expected vc, node num, gpus_per_node, cpus_per_node)"),
        ("vc,nodes,node num\na,1,1\n", "field 'node num': unknown column (expected vc, nodes, gpus_per_node, "
                                      "cpus_per_node)"),
        ("host,cores\nx,3\n", "not a cluster spec: expected 'date,vc...,total', 'machineId,number of GPUs', "
                              "'sn,gpu' (an openb node list) or 'vc,nodes' columns (found: host, cores)"),
    ],
)
def test_malformed_specs_name_file_line_field(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "spec.csv"
    path.write_text(text)
    with pytest.raises(InputError) as err:
        read_cluster_spec(path)
    separator = ", " if message.startswith(("line", "field")) else ": "
    assert str(err.value) == f"{path}{separator}{message}"


def test_vc_nodes_with_cpus_per_node(tmp_path: Path) -> None:
    path = tmp_path / "spec.csv"
    path.write_text("vc,nodes,gpus_per_node,cpus_per_node\na,2,8,64\nb,1,4,16\na,1,8,32\n")
    spec = read_cluster_spec(path)
    assert spec.vcs == {"a": (8, 8, 8), "b": (4,)}
    assert spec.cpus == {"a": (64, 64, 32), "b": (16,)}
    path.write_text("vc,nodes\na,2\n")
    assert read_cluster_spec(path).cpus is None


def test_write_read_round_trip_with_cpus(tmp_path: Path) -> None:
    spec = ClusterSpec({"a": (8, 8, 8, 4), "empty": ()}, {"a": (64, 32, 64, 32), "empty": ()})
    path = write_cluster_spec(spec, tmp_path / "spec.csv")
    assert path.read_text() == "vc,nodes,gpus_per_node,cpus_per_node\na,2,8,64\na,1,8,32\na,1,4,32\nempty,0,8,0\n"
    back = read_cluster_spec(path)
    assert Counter(zip(back.vcs["a"], back.cpus["a"], strict=True)) == Counter(zip(spec.vcs["a"], spec.cpus["a"],
                                                                                  strict=True))
    assert back.empty == {"empty"} and back != ClusterSpec(back.vcs)  # CPUs take part in equality


def test_bad_cpus_per_node_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "spec.csv"
    path.write_text("vc,nodes,gpus_per_node,cpus_per_node\na,2,8,64\nb,1,4,\n")
    with pytest.raises(InputError) as err:
        read_cluster_spec(path)
    assert str(err.value) == f"{path}, line 3, field 'cpus_per_node': value is empty"


def test_spec_cpus_shape_pooled_frame_and_per_gpu() -> None:
    spec = ClusterSpec({"b": (8, 4), "a": (2,)}).with_cpus_per_gpu(6)
    assert spec.cpus == {"b": (48, 24), "a": (12,)}
    assert spec.pooled().vcs == {"all": (2, 8, 4)} and spec.pooled().cpus == {"all": (12, 48, 24)}
    assert spec.to_frame()["cpus"].to_list() == [48, 24, 12]
    assert "cpus" not in ClusterSpec({"a": (2,)}).to_frame().columns
    # given in another VC order, CPUs are kept in the order of the VCs
    assert ClusterSpec({"a": (1,), "b": (2,)}, {"b": (5,), "a": (3,)}).to_frame()["cpus"].to_list() == [3, 5]
    with pytest.raises(ConfigError, match="VC 'a' has 2 nodes but 1 CPU counts"):
        ClusterSpec({"a": (8, 8)}, {"a": (8,)})
    with pytest.raises(ConfigError, match="CPU counts are given for VCs"):
        ClusterSpec({"a": (8,)}, {"b": (8,)})
    with pytest.raises(ConfigError, match="negative CPU count"):
        ClusterSpec({"a": (8,)}, {"a": (-1,)})
