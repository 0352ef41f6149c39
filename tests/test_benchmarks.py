"""The benchmarks' command lines stay valid as the commands' checks tighten (refusing --estimates that no policy reads
made `make bench` stop at its second module)."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_sim_helpers import cli, jobs, spec, write_trace

from benchmarks._measure import estimates_for


@pytest.mark.parametrize("policies", ["fifo", "srtf", "qssf", "fifo-easy", "fifo,sjf,qssf,srtf"])
def test_simulate_accepts_the_estimates_a_benchmark_passes(tmp_path: Path, policies: str) -> None:
    trace = write_trace(tmp_path / "t.parquet", jobs(("a", "vc", 1, 0, 60), ("b", "vc", 2, 10, 30)), spec(vc=(2,)))
    estimates = tmp_path / "est.csv"
    estimates.write_text("job_id,duration\na,50\nb,40\n")
    done = cli("simulate", str(trace), "-p", policies, *estimates_for(policies, estimates), "-o", str(tmp_path / "o"))
    assert done.returncode == 0, done.stderr
    # the policies that read estimates are given them
    assert estimates_for(policies, estimates) == ([] if policies in ("fifo", "srtf") else ["--estimates", str(estimates)])
