"""Every writable format round-trips a generated trace: trace → format → trace."""

from __future__ import annotations

import importlib
from pathlib import Path

import polars as pl
import pytest

from dlcluster.io import detect_format, read_trace
from dlcluster.synth import generate, load_preset
from dlcluster.trace import Trace

# what each format can hold (beyond job_id/vc/gpu_num/submit_time, which all keep)
KEEPS = {
    "parquet": ("user", "name", "gpu_milli", "cpu_num", "node_num", "start_time", "end_time", "duration",
                "queue_delay", "status", "cluster"),
    "csv": ("user", "name", "gpu_milli", "cpu_num", "node_num", "start_time", "end_time", "duration",
            "queue_delay", "status", "cluster"),
    "helios": ("user", "cpu_num", "node_num", "start_time", "end_time", "duration", "queue_delay", "status"),
    "swf": ("start_time", "end_time", "duration", "queue_delay"),
    "philly": ("user", "start_time", "end_time", "duration", "queue_delay"),
}
TARGET = {"parquet": "t.parquet", "csv": "t.csv", "helios": "helios", "swf": "t.swf", "philly": "philly"}
MODULE = {"parquet": "parquet", "csv": "csv_mapped", "helios": "helios", "swf": "swf", "philly": "philly"}


@pytest.fixture(scope="module")
def generated() -> Trace:
    """Two days of the Helios-Venus preset, CPU jobs included."""
    trace = generate(load_preset("helios-venus"), days=2, seed=11)
    assert trace.jobs.height > 500
    return trace


@pytest.mark.parametrize("fmt", list(KEEPS))
def test_generated_trace_round_trips(fmt: str, generated: Trace, tmp_path: Path) -> None:
    source = generated
    if fmt == "philly":  # Philly records GPUs only inside attempts: GPU jobs that ran
        source = generated.with_jobs(generated.jobs.filter((pl.col("gpu_num") > 0) & pl.col("end_time").is_not_null()))
    target = tmp_path / TARGET[fmt]
    importlib.import_module(f"dlcluster.io.{MODULE[fmt]}").write(source, target)
    assert detect_format(target) == fmt
    back = read_trace(target)
    assert back.jobs.height == source.jobs.height
    key = ["submit_time", "vc", "gpu_num", *KEEPS[fmt]]
    mine = source.jobs.select(key).sort(key, nulls_last=True)
    theirs = back.jobs.select(key).sort(key, nulls_last=True)
    assert mine.equals(theirs), f"{fmt} lost information"


@pytest.mark.parametrize("fmt", list(KEEPS))
def test_an_empty_trace_round_trips(fmt: str, generated: Trace, tmp_path: Path) -> None:
    """A window that drew no job (synth writes one) reads back as an empty trace, with its cluster where the format
    holds one."""
    source = generated.with_jobs(generated.jobs.clear())
    target = tmp_path / TARGET[fmt]
    importlib.import_module(f"dlcluster.io.{MODULE[fmt]}").write(source, target)
    back = read_trace(target)
    assert back.jobs.height == 0
    if fmt in ("parquet", "helios"):
        assert back.cluster is not None and back.cluster.vcs.keys() == generated.cluster.vcs.keys()


def test_swf_keeps_its_three_statuses(generated: Trace, tmp_path: Path) -> None:
    from dlcluster.io import swf

    swf.write(generated, tmp_path / "t.swf")
    back = read_trace(tmp_path / "t.swf")
    expected = generated.jobs["status"].cast(pl.String).replace(
        {"timeout": "other", "node_fail": "other", "running": "other", "pending": "other"})
    got = back.jobs.sort("submit_time", maintain_order=True)["status"].cast(pl.String)
    assert sorted(got.to_list()) == sorted(expected.to_list())


def test_parquet_keeps_the_cluster_spec_with_its_cpus(generated: Trace, tmp_path: Path) -> None:
    from dlcluster.io import parquet

    assert generated.cluster is not None
    with_cpus = generated.cluster.with_cpus_per_gpu(4)
    parquet.write(generated.with_jobs(generated.jobs), tmp_path / "plain.parquet")
    assert read_trace(tmp_path / "plain.parquet").cluster == generated.cluster
    trace = generated.with_jobs(generated.jobs)
    trace.cluster = with_cpus
    parquet.write(trace, tmp_path / "cpus.parquet")
    back = read_trace(tmp_path / "cpus.parquet").cluster
    assert back == with_cpus and back.cpus is not None
