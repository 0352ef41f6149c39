"""``dlcluster sweep``: the issue's experiment file as written, resuming after a kill, failed cells, validation up
front, determinism, and the Ray executor agreeing with the local pool cell by cell."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from test_sim_helpers import cli, interruptible

from dlcluster.sweep.experiment import read_experiment
from dlcluster.sweep.results import METRICS
from dlcluster.sweep.simulate_options import checks

# the issue's file, verbatim
ISSUE_FILE = """\
[[trace]]
preset = "helios-venus"
days = 7
seed = 1
[grid]
policy = ["fifo", "sjf"]
load = [1.0, 2.0]
seed = [1, 2]
"""

SMALL = """\
[[trace]]
preset = "helios-venus"
days = 2
[grid]
policy = ["fifo", "sjf"]
seed = [1, 2]
"""


def _write(tmp_path: Path, text: str, name: str = "exp.toml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def _wait_until(done: Callable[[], bool], seconds: float, every: float = 0.02) -> None:
    """Poll ``done`` until it holds or ``seconds`` have passed (the test's assertions then say what happened)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and not done():
        time.sleep(every)


def _comparable(results: Path) -> pl.DataFrame:
    """A results table without its wall-clock column (the only one that may differ between runs)."""
    return pl.read_parquet(results).drop("wall_seconds")


def test_issue_file_runs_as_written_and_rows_match_each_cells_summary(tmp_path: Path) -> None:
    exp = _write(tmp_path, ISSUE_FILE)
    res = cli("sweep", str(exp), "-o", str(tmp_path / "out"), "--workers", "2")
    assert res.returncode == 0, res.stderr
    table = pl.read_parquet(tmp_path / "out/results.parquet")
    assert table.height == 8 and table["status"].to_list() == ["ok"] * 8
    # every combination once, the grid's last key fastest
    assert table.select("policy", "load", "seed").rows() == [
        (p, load, s) for p in ("fifo", "sjf") for load in (1.0, 2.0) for s in (1, 2)]
    assert table.schema["load"] == pl.Float64 and table.schema["seed"] == pl.Int64
    for row in table.iter_rows(named=True):
        folder = tmp_path / "out/cells" / row["cell_id"]
        summary = json.loads((folder / "summary.json").read_text())
        assert (summary["policy"], summary["load"], summary["seed"]) == (row["policy"], row["load"], row["seed"])
        for metric in ("jobs", "mean_jct", "p99_queue_delay", "utilization", "fairness"):
            assert row[metric] == pytest.approx(summary["overall"][metric], rel=0, abs=0)
    # `seed` reseeds the generated trace: one trace per seed, and their jobs differ
    traces = sorted((tmp_path / "out/traces").iterdir())
    assert [t.name for t in traces] == ["helios-venus-7d-seed1.parquet", "helios-venus-7d-seed2.parquet"]
    assert table.filter(pl.col("seed") == 1)["jobs"][0] != table.filter(pl.col("seed") == 2)["jobs"][0]
    meta = json.loads((tmp_path / "out/sweep.json").read_text())
    assert meta["parameters"] == ["policy", "load", "seed"] and meta["cells"] == 8


def test_same_file_same_results(tmp_path: Path) -> None:
    exp = _write(tmp_path, SMALL)
    for name in ("a", "b"):
        assert cli("sweep", str(exp), "-o", str(tmp_path / name), "--workers", "1").returncode == 0
    assert _comparable(tmp_path / "a/results.parquet").equals(_comparable(tmp_path / "b/results.parquet"))
    one, two = (sorted((tmp_path / n / "cells").iterdir()) for n in ("a", "b"))
    assert [c.name for c in one] == [c.name for c in two]
    for x, y in zip(one, two, strict=True):
        assert (x / "jobs.parquet").read_bytes() == (y / "jobs.parquet").read_bytes()
        # every output of the run but the two that record wall-clock seconds
        files = sorted(p.name for p in x.iterdir() if p.name not in ("summary.json", "cell.json"))
        assert files == sorted(p.name for p in y.iterdir() if p.name not in ("summary.json", "cell.json"))
        assert all((x / f).read_bytes() == (y / f).read_bytes() for f in files)
        # equal but for the seconds they record, and each cell naming its own results folder's generated trace
        assert _untimed(json.loads((x / "summary.json").read_text())) == \
            _untimed(json.loads((y / "summary.json").read_text()))
        cells = [_untimed(json.loads((c / "cell.json").read_text())) for c in (x, y)]
        traces = [Path(c.pop("trace_file")) for c in cells]  # type: ignore[union-attr]
        assert cells[0] == cells[1]
        assert traces == [tmp_path / n / "traces" / traces[0].name for n in ("a", "b")]  # absolute


def _untimed(doc: object) -> object:
    """A JSON document without its wall-clock figures."""
    if isinstance(doc, dict):
        return {k: _untimed(v) for k, v in doc.items() if k not in ("wall_seconds", "events_per_second")}
    return [_untimed(v) for v in doc] if isinstance(doc, list) else doc


def test_killed_sweep_reruns_only_the_missing_cells(tmp_path: Path) -> None:
    exp = _write(tmp_path, SMALL.replace('seed = [1, 2]', 'seed = [1, 2, 3]'))
    out = tmp_path / "out"
    proc = subprocess.Popen([sys.executable, "-m", "dlcluster", "sweep", str(exp), "-o", str(out), "--workers", "1"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    _wait_until(lambda: len(list((out / "cells").glob("[0-9a-f]*"))) >= 2, 120)
    os.killpg(proc.pid, signal.SIGKILL)  # no clean-up at all: what a crash or a lost machine leaves
    proc.wait()
    done = {c.name for c in (out / "cells").glob("[0-9a-f]*")}
    assert 2 <= len(done) < 6 and not (out / "results.parquet").exists()
    stamps = {name: (out / "cells" / name / "jobs.parquet").stat().st_mtime_ns for name in done}
    res = cli("sweep", str(exp), "-o", str(out), "--workers", "1")
    assert res.returncode == 0, res.stderr
    assert f"6 cells, {len(done)} already done, {6 - len(done)} run now, 0 failed" in res.stderr
    assert {name: (out / "cells" / name / "jobs.parquet").stat().st_mtime_ns for name in done} == stamps
    whole = tmp_path / "whole"
    assert cli("sweep", str(exp), "-o", str(whole), "--workers", "2").returncode == 0
    assert _comparable(out / "results.parquet").equals(_comparable(whole / "results.parquet"))


def test_a_failed_cell_is_recorded_and_the_rest_go_on(tmp_path: Path) -> None:
    # an estimates file that lacks the trace's jobs: known only once the cell has read its trace; fifo runs
    (tmp_path / "est.csv").write_text("job_id,duration\nnot-a-job,60\n")
    exp = _write(tmp_path, SMALL.replace('policy = ["fifo", "sjf"]\n', "").replace("seed = [1, 2]", "seed = [1]")
                 + '[[case]]\npolicy = "fifo"\n[[case]]\npolicy = "qssf"\nestimates = "est.csv"\n')
    res = cli("sweep", str(exp), "-o", str(tmp_path / "out"), "--workers", "1")
    assert res.returncode == 3, res.stderr  # the table is written, and the exit status says it has a failed cell
    assert "2 cells, 0 already done, 2 run now, 1 failed" in res.stderr
    # the terminal says why (it only pointed at the failed folder)
    assert f"first failure: {(tmp_path / 'est.csv').resolve()}, field 'job_id': no duration estimate" in res.stderr
    table = pl.read_parquet(tmp_path / "out/results.parquet")
    assert table["status"].to_list() == ["ok", "failed"]
    assert table["error"][0] is None
    assert table["error"][1].startswith(f"{(tmp_path / 'est.csv').resolve()}, field 'job_id': no duration estimate "
                                        "for job ")
    assert table["mean_jct"][1] is None and table["mean_jct"][0] > 0
    failed = list((tmp_path / "out/failed").iterdir())
    assert len(failed) == 1 and json.loads(failed[0].read_text())["params"]["policy"] == "qssf"
    again = cli("sweep", str(exp), "-o", str(tmp_path / "out"), "--workers", "1")
    assert "2 cells, 1 already done, 1 run now, 1 failed" in again.stderr  # a failed cell is tried again
    assert again.returncode == 3


@pytest.mark.parametrize(("text", "message"), [
    (SMALL.replace("policy =", "polcy ="), "field 'grid.polcy': not an option of `dlcluster simulate` (options: "
                                           "boot_seconds, buffer, by_vc, ces_preset, ces_rule, cluster, cluster_date, compat, "
                                           "cpus_per_gpu, end, estimates, "),  # not csv: the sweep refuses it
    (SMALL.replace('"sjf"', '"lottery"'), "field 'grid.policy': unknown policy 'lottery'; choose one of: fifo, "),
    (SMALL + "load = [1.0, \"x\"]\n", "field 'grid.load': Invalid value for '--load'"),
    (SMALL + "load = [0]\n", "field 'grid.load': --load must be a positive finite number, got 0.0"),
    (SMALL.replace("days = 2", "days = -1"), "field 'trace[0].days': expected a positive number of days, got -1"),
    (SMALL.replace('preset = "helios-venus"', 'preset = "nope"'), "field 'trace[0].preset': unknown preset 'nope'"),
    (SMALL + "[simulate]\noutput = \"x\"\n", "field 'simulate.output': set by the sweep itself"),
    # a cell's options checked together: the error is at the key of the option it names
    (SMALL + "[simulate]\npower = \"sometimes\"\n", "field 'simulate.power': --power 'sometimes': choose none, on "
                                                    "or ces"),
    (SMALL + "[simulate]\nces_preset = \"venus\"\n", "field 'simulate.ces_preset': --ces-preset needs --power ces"),
    (SMALL + "[[case]]\nces-rule = \"quantile\"\n", "field 'case[0].ces-rule': --ces-rule needs --power ces"),
    (SMALL.replace("seed = [1, 2]", "seed = [-1, 2]"), "field 'grid.seed': --seed must be a non-negative integer, "
                                                        "got -1"),  # (it named neither the file nor the key)
    (SMALL.replace('"sjf"', '"qssf"'), "field 'cell 2 (policy=qssf, seed=1)': policy 'qssf' needs duration "
                                      "estimates"),  # (no option of the cell is named: the cell is)
    (SMALL.replace("days = 2", "days = 100000"), "field 'trace[0].days': --days 100000 is above the limit of 36,525 "
                                                 "days (100 years)"),
    (SMALL.replace("seed = [1, 2]", "seed = []"), "field 'grid.seed': a grid entry is a non-empty list"),
    # one option in two tables: one value won silently (e18.toml ran fifo and sjf, never its [simulate] srtf)
    (SMALL + "[simulate]\npolicy = \"srtf\"\n", "field 'simulate.policy': also swept in [grid]: set it in one place"),
    (SMALL + "[simulate]\nload = 2\n[[case]]\nload = 1\n", "field 'case[0].load': also set in [simulate]: set it in "
                                                         "one place"),
    (SMALL + "[[case]]\nseed = 3\n", "field 'case[0].seed': also swept in [grid]: set it in one place"),
    (SMALL + "[simulate]\nces-rule = \"quantile\"\nces_rule = \"helios\"\n", "field 'simulate.ces_rule': the same "
                                                                             "option as 'ces-rule': give it once"),
    ("[grid]\npolicy = [\"fifo\"]\n", "field 'trace': needs at least one [[trace]] table"),
    (SMALL + "retries = 2\n", "field 'grid.retries': a grid entry is a non-empty list"),
    (SMALL + "load = [1, 1.0]\n", "field 'grid.load': lists one value twice (1 and 1.0): give each value once"),
    (SMALL.replace("seed = [1, 2]", "seed = [2, 2]"), "field 'grid.seed': lists one value twice (2 twice)"),
    (SMALL + "load = [true]\n", "field 'grid.load': got true: true and false are only for on/off options"),
    (SMALL + "cluster = [\"nowhere.csv\"]\n", "field 'grid.cluster': no such cluster file: nowhere.csv"),
    (SMALL + "estimates = [\"nowhere.csv\"]\n", "field 'grid.estimates': 'nowhere.csv' is neither an estimator"),
    (SMALL + "speed_model = [\"nowhere.toml\"]\n", "--speed-model 'nowhere.toml': choose none, philly or a TOML file "
                                                   "(no such file)"),
    (SMALL + "[simulate]\npower = \"on\"\npower_model = \"nowhere.toml\"\n", "nowhere.toml: no such file"),
    # (these two swept, and compare then refused the folder the sweep had written)
    ('metrics = ["foo"]\n' + SMALL, "field 'metrics': unknown metric 'foo' (known: jobs, unschedulable, mean_jct, "),
    ("name = 5\n" + SMALL, "field 'name': expected a name (text), got 5"),
])
def test_a_malformed_experiment_fails_before_any_simulation(tmp_path: Path, text: str, message: str) -> None:
    exp = _write(tmp_path, text)
    res = cli("sweep", str(exp), "-o", str(tmp_path / "out"))
    assert res.returncode == 2
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {exp}, ") and message in lines[0], res.stderr
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(("trace", "key"), [("days = 36000\nload = 2", "days"),
                                            ("load = 1e6", "load")])  # (no days: the preset's own span)
def test_a_generated_trace_of_too_many_jobs_is_refused_at_its_key_before_any_cell(tmp_path: Path, trace: str,
                                                                                 key: str) -> None:
    # (the generator refused it once the sweep ran, naming neither the file nor the key, and left the folder behind)
    from dlcluster.synth.generate import MAX_JOBS

    exp = _write(tmp_path, SMALL.replace("days = 2", trace))
    res = cli("sweep", str(exp), "-o", str(tmp_path / "out"))
    assert res.returncode == 2 and "Traceback" not in res.stderr
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and re.fullmatch(
        rf"error: {re.escape(str(exp))}, field 'trace\[0\]\.{key}': [\d.]+ days at load [\d.e+]+ would make about "
        rf"[\d,]+ jobs; the limit is {MAX_JOBS:,} \(use fewer --days or a lower --load\)", lines[0]), res.stderr
    assert not (tmp_path / "out").exists()
    if key == "days":  # docs/sweeps.md quotes this case's message
        doc = " ".join((Path(__file__).resolve().parents[1] / "docs/sweeps.md").read_text(encoding="utf-8").split())
        quoted = lines[0].removeprefix(f"error: {exp}, ").split(" (use fewer")[0]
        assert f"error: exp.toml, {quoted} ...`" in doc


def test_a_metric_the_experiment_names_is_kept_even_where_no_cell_has_it(tmp_path: Path) -> None:
    # energy without power: the column was dropped as empty, and compare refused the folder
    exp = _write(tmp_path, 'metrics = ["mean_jct", "energy_kwh"]\n' + SMALL.replace("seed = [1, 2]", "seed = [1]"))
    assert cli("sweep", str(exp), "-o", str(tmp_path / "out"), "--workers", "1").returncode == 0
    table = pl.read_parquet(tmp_path / "out/results.parquet")
    assert table["energy_kwh"].null_count() == table.height == 2
    # the named metrics come first, the others the cells have after them (they were left out)
    metrics = json.loads((tmp_path / "out/sweep.json").read_text())["metrics"]
    assert metrics[:2] == ["mean_jct", "energy_kwh"] and {"mean_queue_delay", "utilization"} <= set(metrics[2:])
    res = cli("compare", str(tmp_path / "out"), "-o", str(tmp_path / "rep"))
    assert res.returncode == 0, res.stderr
    assert "mean_queue_delay" in (tmp_path / "rep/index.html").read_text()


def test_the_guidelines_metrics_are_recorded(tmp_path: Path) -> None:
    # docs/guidelines.md compares slowdown_gpu_hours across placements: a sweep could not record it
    # (a swept retries count was overwritten by the summary's count of retries, and compare refused the folder)
    exp = _write(tmp_path, SMALL.replace("[grid]", '[simulate]\nspeed_model = "philly"\nfailures = "replay"\n'
                                         'validation_minutes = 5\nvalidation_gpus = 4\n[grid]\nretries = [0, 2]')
                 .replace("seed = [1, 2]", "seed = [1]").replace('policy = ["fifo", "sjf"]', 'policy = ["fifo"]'))
    res = cli("sweep", str(exp), "-o", str(tmp_path / "out"), "--workers", "1")
    assert res.returncode == 0, res.stderr
    table = pl.read_parquet(tmp_path / "out/results.parquet")
    assert table["retries"].to_list() == [0, 2]
    for cell in table.iter_rows(named=True):
        summary = json.loads((tmp_path / "out" / "cells" / cell["cell_id"] / "summary.json").read_text())
        assert cell["slowdown_gpu_hours"] == summary["overall"]["slowdown_gpu_hours"]
        assert cell["retries_made"] == summary["failures"]["retries"]
        for key in ("validation_gpu_hours_saved", "validation_pool_gpu_hours"):
            assert cell[key] == summary["failures"][key]
    assert table["retries_made"].to_list()[0] == 0 < table["retries_made"].to_list()[1]
    res = cli("compare", str(tmp_path / "out"), "-o", str(tmp_path / "rep"))
    assert res.returncode == 0, res.stderr
    best = pl.read_csv(tmp_path / "rep/tables/best.csv")
    assert {"slowdown_gpu_hours": "lower", "validation_pool_gpu_hours": "lower",
            "validation_gpu_hours_saved": "higher"}.items() <= dict(best.select("metric", "better").iter_rows()).items()


def test_the_demo_sweep_has_the_cells_the_readme_names() -> None:
    # README: "a 20-cell sweep (FIFO, SJF, QSSF on LightGBM, Tiresias, FIFO-EASY; with and without CES; two loads)"
    exp = read_experiment(Path(__file__).resolve().parents[1] / "examples/sweeps/demo.toml", checks())
    assert len(exp.cells) == 20
    assert {c.params["policy"] for c in exp.cells} == {"fifo", "sjf", "qssf", "tiresias", "fifo-easy"}
    assert {c.params.get("estimates") for c in exp.cells if c.params["policy"] == "qssf"} == {"lgbm"}
    assert len({c.params["power"] for c in exp.cells}) == len({c.params["load"] for c in exp.cells}) == 2
    # docs/sweeps.md: "on two weeks of a generated Helios-Venus"
    assert [(t.preset, t.days) for t in exp.traces] == [("helios-venus", 14)]


def test_no_option_a_sweep_sets_shares_its_column_name_with_a_metric() -> None:
    assert not set(checks()) & set(METRICS)


def test_a_trace_file_s_bad_options_rows_and_window_fail_before_any_cell(tmp_path: Path) -> None:
    # (each cell failed on them in turn: exit 3, and a results table of failed rows)
    (tmp_path / "t.csv").write_text("job_id,vc,gpu_num,submit_time,duration\na,v,1,0,60\nb,v,1\n")
    (tmp_path / "c.csv").write_text("vc,nodes,gpus_per_node\nv,1,8\n")
    grid = '[simulate]\ncluster = "c.csv"\n[grid]\npolicy = ["fifo"]\n'
    for trace, more, message in (
            ('tz = "Mars/Base"\nformat = "csv"\n', "", "field 'trace[0]': unknown time zone 'Mars/Base'"),
            ('format = "csvx"\n', "", "field 'trace[0]': unknown trace format 'csvx'"),
            ('format = "csv"\nmap = "gpu_num=nope"\n', "", "missing column 'nope' (mapped to gpu_num"),
            ('format = "csv"\n', "", f"{tmp_path / 't.csv'}, line 3: has 3 fields, the header names 5"),
            ('format = "csv"\nlenient = true\n', 'start = "yesterday"\n',
             "--start 'yesterday': expected a time like 2017-10-01 00:00:00")):
        exp = _write(tmp_path, f'[[trace]]\nfile = "t.csv"\n{trace}' + grid.replace("[grid]", more + "[grid]"))
        res = cli("sweep", str(exp), "-o", str(tmp_path / "out"))
        assert res.returncode == 2 and message in res.stderr and len(res.stderr.strip().splitlines()) == 1, \
            res.stderr
        assert not (tmp_path / "out").exists()



@pytest.mark.parametrize(("window", "message"), [
    # (the check read it in UTC, where no hour is skipped: every cell failed on it, exit 3)
    ('start = ["2017-03-12 02:30:00"]', "field 'grid.start': --start '2017-03-12 02:30:00': no such time in "
                                        "America/Los_Angeles"),
    # (every cell failed with an internal OverflowError; the words after the key are simulate's own)
    ('end = ["9999-12-31 23:59:59"]', "field 'grid.end': --end '9999-12-31 23:59:59': "),
])
def test_start_and_end_are_placed_in_each_trace_s_zone_before_any_cell(tmp_path: Path, window: str,
                                                                     message: str) -> None:
    (tmp_path / "t.csv").write_text("job_id,vc,gpu_num,submit_time,duration\na,v,1,2017-03-12 01:00:00,60\n")
    (tmp_path / "c.csv").write_text("vc,nodes,gpus_per_node\nv,1,8\n")
    exp = _write(tmp_path, '[[trace]]\nfile = "t.csv"\nformat = "csv"\ntz = "America/Los_Angeles"\n'
                           f'[simulate]\ncluster = "c.csv"\n[grid]\n{window}\n')
    res = cli("sweep", str(exp), "-o", str(tmp_path / "out"), "--workers", "1")
    assert res.returncode == 2 and res.stderr.startswith(f"error: {exp}, {message}"), res.stderr
    assert len(res.stderr.strip().splitlines()) == 1 and not (tmp_path / "out").exists()

def test_an_output_that_is_a_file_is_refused_naming_the_option(tmp_path: Path) -> None:
    exp = _write(tmp_path, SMALL)
    res = cli("sweep", str(exp), "-o", str(exp))  # (it said "exp.toml: file exists")
    assert (res.returncode, res.stderr) == (2, f"error: --output {exp}: exists and is not a folder\n")


@pytest.mark.parametrize(("cases", "first", "second"), [
    ('[[case]]\nload = 1\n[[case]]\nload = 1.0\n', 0, 4),  # one number, spelt twice
    ('[[case]]\n[[case]]\nplacement = "consolidate"\n', 0, 4),  # a default, given or not
    ('[[case]]\nretries = 0\nfailures = "none"\n[[case]]\n', 0, 4),
    # the same wait for locality, and CES settings left to their defaults or given them
    ('[[case]]\nplacement = "relax:60"\n[[case]]\nplacement = "relax"\nrelax_after = 60\n', 0, 4),
    ('[[case]]\npower = "ces"\n[[case]]\npower = "ces"\nces_preset = "philly"\nboot_seconds = 300\n', 0, 4),
    ('[[case]]\npower = "ces"\nces_rule = "quantile"\n[[case]]\npower = "ces"\nces_rule = "quantile"\nrisk = 0.01\n',
     0, 4),
])
def test_two_cells_that_run_the_same_simulation_are_refused_before_any_runs(tmp_path: Path, cases: str, first: int,
                                                                           second: int) -> None:
    exp = _write(tmp_path, SMALL + cases)
    res = cli("sweep", str(exp), "-o", str(tmp_path / "out"))
    assert res.returncode == 2
    assert res.stderr.strip() == (f"error: {exp}: cells {first} and {second} are the same simulation (the same trace, "
                                  "and options that mean the same); remove the repeat")
    assert not (tmp_path / "out" / "cells").exists() and not (tmp_path / "out" / "results.parquet").exists()
    assert not (tmp_path / "out" / "experiment.toml").exists()


def test_cells_whose_options_differ_in_value_both_run(tmp_path: Path) -> None:
    one = SMALL.replace('policy = ["fifo", "sjf"]\n', "").replace("seed = [1, 2]", "seed = [1]")
    exp = _write(tmp_path, one + '[[case]]\nload = 1\n[[case]]\nload = 1.5\n')
    res = cli("sweep", str(exp), "-o", str(tmp_path / "out"))
    assert res.returncode == 0, res.stderr
    assert pl.read_parquet(tmp_path / "out/results.parquet")["load"].to_list() == [1.0, 1.5]


def test_files_named_in_the_experiment_are_relative_to_it_and_in_the_hash(tmp_path: Path) -> None:
    folder = tmp_path / "study"
    folder.mkdir()
    synth = cli("synth", "--preset", "helios-venus", "--days", "2", "--seed", "4", "-o", str(folder / "t.parquet"))
    assert synth.returncode == 0, synth.stderr
    exp = _write(folder, '[[trace]]\nfile = "t.parquet"\n[grid]\npolicy = ["fifo"]\n')
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    res = subprocess.run([sys.executable, "-m", "dlcluster", "sweep", str(exp), "-o", "out"], cwd=elsewhere,
                         capture_output=True, text=True, check=False)
    assert res.returncode == 0, res.stderr
    first = {c.name for c in (elsewhere / "out/cells").iterdir()}
    # a changed trace file is a different cell
    assert cli("synth", "--preset", "helios-venus", "--days", "2", "--seed", "5", "-o",
               str(folder / "t.parquet")).returncode == 0
    res = subprocess.run([sys.executable, "-m", "dlcluster", "sweep", str(exp), "-o", "out"], cwd=elsewhere,
                         capture_output=True, text=True, check=False)
    assert "1 cells, 0 already done, 1 run now" in res.stderr
    assert len({c.name for c in (elsewhere / "out/cells").iterdir()} - first) == 1


def test_ray_executor_gives_the_local_pools_results(tmp_path: Path) -> None:
    pytest.importorskip("ray", reason="Ray is installed by the test extra; without it there is nothing to compare")
    exp = _write(tmp_path, SMALL)
    local = cli("sweep", str(exp), "-o", str(tmp_path / "local"), "--workers", "2")
    assert local.returncode == 0, local.stderr
    # a local instance, on the loopback only, in Ray's default authentication mode
    env = {k: v for k, v in os.environ.items() if k not in ("RAY_ADDRESS", "RAY_AUTH_MODE")}
    ray = subprocess.run([sys.executable, "-m", "dlcluster", "sweep", str(exp), "-o", str(tmp_path / "ray"),
                          "--executor", "ray", "--workers", "2"], capture_output=True, text=True, check=False, env=env)
    assert ray.returncode == 0, ray.stderr
    # the command's own lines only (Ray said "Token authentication is enabled for this Ray cluster..." on each run)
    assert ray.stderr.splitlines() == ["sweep exp: 4 cells, 0 already done, 4 run now, 0 failed -> "
                                       f"{tmp_path / 'ray' / 'results.parquet'}"], ray.stderr
    assert _comparable(tmp_path / "local/results.parquet").equals(_comparable(tmp_path / "ray/results.parquet"))


def _ray_sweep(exp: Path, out: Path) -> subprocess.Popen:
    """``dlcluster sweep EXP -o OUT --executor ray`` on a local instance of two CPUs, started with Ctrl-C at its
    default (as from a terminal), its stderr piped."""
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    return subprocess.Popen([sys.executable, "-m", "dlcluster", "sweep", str(exp), "-o", str(out), "--executor", "ray",
                             "--workers", "2"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env,
                            start_new_session=True, preexec_fn=interruptible)


def _descendants(pid: int) -> list[int]:
    """The processes ``pid`` started, and theirs, as /proc lists them now."""
    parents: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:  # (ended while listed)
            continue
        parents.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    found, todo = [], [pid]
    while todo:
        children = parents.get(todo.pop(), [])
        found += children
        todo += children
    return found


def _running(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie, ended but not reaped by its new parent, does not)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _is_ray_agent(pid: int) -> bool:
    """Whether ``pid`` is one of the agents a raylet starts (named by their script, or the title they set)."""
    try:
        args = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    return any(a.endswith((b"dashboard/agent.py", b"runtime_env/agent/main.py")) or
               (a.startswith(b"ray::") and a.endswith(b"Agent")) for a in args)


def test_sigterm_stops_a_ray_sweep_as_a_local_one(tmp_path: Path) -> None:
    # (ray.init put its own handler in place of the command's: exit status 15, and Ray's multi-line stack dump)
    pytest.importorskip("ray", reason="Ray is installed by the test extra")
    exp = _write(tmp_path, SMALL.replace("seed = [1, 2]", "seed = [1, 2, 3]"))
    out = tmp_path / "out"
    proc = _ray_sweep(exp, out)
    # a cell's staging folder exists while it runs: Ray has started, and the sweep has cells left
    _wait_until(lambda: proc.poll() is not None or bool(list((out / "cells").glob(".*.partial"))), 60)
    proc.send_signal(signal.SIGTERM)  # `kill`, `timeout`: the command's process alone
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 143, err
    assert "running the same command again runs only the others" in err and "interrupted; " in err
    assert "SIGTERM received" not in err and "PC: @" not in err and "Traceback" not in err
    assert not (out / "results.parquet").exists()


@pytest.mark.parametrize(("signum", "status"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_while_ray_starts_leaves_no_ray_process(tmp_path: Path, signum: int, status: int) -> None:
    # (interrupted inside ray.init, the sweep left the raylet's agents running, re-parented, for about 75 s)
    pytest.importorskip("ray", reason="Ray is installed by the test extra")
    exp = _write(tmp_path, SMALL)
    proc = _ray_sweep(exp, tmp_path / "out")
    # the raylet's agents have started: ray.init waits for them to report before it returns
    started: list[int] = []

    def agents_up() -> bool:
        started[:] = _descendants(proc.pid)
        return proc.poll() is not None or any(_is_ray_agent(pid) for pid in started)

    _wait_until(agents_up, 60)
    proc.send_signal(signum)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == status, err
    assert "Traceback" not in err and "PC: @" not in err
    assert started, "the sweep started no process"
    # every process the sweep started, Ray's included, ends with it (Ray's processes take a moment to stop theirs)
    _wait_until(lambda: not any(_running(pid) for pid in started), 15, every=0.1)
    assert not [pid for pid in started if _running(pid)]


def test_ctrl_c_stops_the_workers_and_keeps_the_finished_cells(tmp_path: Path) -> None:
    # 24 cells: enough that the workers cannot finish them all while the test, on a busy machine, waits to be
    # scheduled between seeing two cells done and sending the signal (8 cells once finished in that gap)
    cells = 24
    exp = _write(tmp_path, SMALL.replace('seed = [1, 2]', f'seed = {list(range(1, cells // 2 + 1))}'))
    out = tmp_path / "out"
    # a terminal's Ctrl-C: SIGINT to the whole foreground process group, workers included
    proc = subprocess.Popen([sys.executable, "-m", "dlcluster", "sweep", str(exp), "-o", str(out), "--workers", "2"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True,
                            preexec_fn=interruptible)
    _wait_until(lambda: len(list((out / "cells").glob("[0-9a-f]*"))) >= 2, 120)
    os.killpg(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130
    assert "running the same command again runs only the others" in err and "Traceback" not in err
    done = len(list((out / "cells").glob("[0-9a-f]*")))
    assert 2 <= done < cells and not (out / "results.parquet").exists() and not (out / "failed").exists()
    assert not list((out / "cells").glob(".*"))  # the cells that were running removed their staging folders
    # the process group empties: no worker is left running (multiprocessing's helper process exits on its own)
    deadline = time.monotonic() + 20
    with pytest.raises(ProcessLookupError):
        while time.monotonic() < deadline:
            os.killpg(proc.pid, 0)
            time.sleep(0.1)
    res = cli("sweep", str(exp), "-o", str(out), "--workers", "2")
    assert f"{cells} cells, {done} already done, {cells - done} run now, 0 failed" in res.stderr


def test_sigterm_stops_a_local_sweep_and_its_running_cells_remove_their_staging_folders(tmp_path: Path) -> None:
    # (the pool's SIGTERM ended a worker on the spot: its cell's cells/.CELL_ID.partial stayed for good)
    exp = _write(tmp_path, SMALL.replace("seed = [1, 2]", "seed = [1, 2, 3]"))
    out = tmp_path / "out"
    proc = subprocess.Popen([sys.executable, "-m", "dlcluster", "sweep", str(exp), "-o", str(out), "--workers", "2"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True)
    _wait_until(lambda: proc.poll() is not None or bool(list((out / "cells").glob(".*.partial"))), 60)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 143, err
    assert "running the same command again runs only the others" in err and "Traceback" not in err
    assert not list((out / "cells").glob(".*"))


def test_a_sweep_removes_the_staging_folders_earlier_runs_left(tmp_path: Path) -> None:
    # (a killed run's cells/.CELL_ID.partial was removed only when that cell ran again: for good, once done or gone)
    exp = _write(tmp_path, SMALL.replace("days = 2", "days = 1").replace("seed = [1, 2]", "seed = [1]"))
    out = tmp_path / "out"
    assert cli("sweep", str(exp), "-o", str(out), "--workers", "1").returncode == 0
    done = sorted(c.name for c in (out / "cells").iterdir())
    # a done cell's, and one of a cell the experiment no longer has
    for name in (done[0], "0123456789abcdef"):
        (out / "cells" / f".{name}.partial").mkdir()
        (out / "cells" / f".{name}.partial/jobs.parquet").write_bytes(b"half")
    res = cli("sweep", str(exp), "-o", str(out), "--workers", "1")
    assert "2 cells, 2 already done, 0 run now, 0 failed" in res.stderr, res.stderr
    assert sorted(c.name for c in (out / "cells").iterdir()) == done


def test_an_interrupted_run_of_a_changed_experiment_leaves_no_results_of_the_earlier_one(tmp_path: Path) -> None:
    # (the new experiment.toml sat beside the old results.parquet and sweep.json, and compare reported the old run)
    from dlcluster.sweep.run import run_sweep

    exp = _write(tmp_path, SMALL.replace("seed = [1, 2]", "seed = [1]"))
    assert cli("sweep", str(exp), "-o", str(tmp_path / "out"), "--workers", "1").returncode == 0
    assert (tmp_path / "out/results.parquet").is_file()

    class Interrupted:
        def run(self, tasks: list[Any]) -> Any:
            raise KeyboardInterrupt
            yield  # (a generator, as the executors are)

    changed = _write(tmp_path, SMALL, name="exp2.toml")  # seeds 1 and 2
    with pytest.raises(KeyboardInterrupt):
        run_sweep(read_experiment(changed, checks()), tmp_path / "out", Interrupted())  # type: ignore[arg-type]
    assert (tmp_path / "out/experiment.toml").read_text() == changed.read_text()
    assert not (tmp_path / "out/results.parquet").exists() and not (tmp_path / "out/sweep.json").exists()


def test_a_worker_reads_each_trace_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import dlcluster.io
    from dlcluster.cli import options
    from dlcluster.sweep.cells import CellTask, run_cell

    trace = tmp_path / "t.parquet"
    assert cli("synth", "--preset", "helios-venus", "--days", "1", "--seed", "3", "-o", str(trace)).returncode == 0
    monkeypatch.setattr(options, "KEPT", None)
    reads: list[Path] = []
    real = dlcluster.io.read_trace

    def counting(path: Path, **kwargs: object) -> object:
        reads.append(Path(path))
        return real(path, **kwargs)

    monkeypatch.setattr(dlcluster.io, "read_trace", counting)
    cells = tmp_path / "cells"
    cells.mkdir()

    def task(i: int, policy: str) -> CellTask:
        return CellTask(i, f"c{i}", str(trace), ("--policy", policy), str(cells), {"cell": i})

    outcomes = [run_cell(task(i, p)) for i, p in enumerate(("fifo", "sjf"))]
    assert [o.error for o in outcomes] == [None, None] and len(reads) == 1
    assert outcomes[1].summary is not None and outcomes[1].summary["policy"] == "sjf"
    assert json.loads((cells / "c1/summary.json").read_text())["policy"] == "sjf"
    assert json.loads((cells / "c1/cell.json").read_text())["cell"] == 1
    # a changed file is read again
    assert cli("synth", "--preset", "helios-venus", "--days", "1", "--seed", "4", "-o", str(trace)).returncode == 0
    assert run_cell(task(2, "fifo")).error is None and len(reads) == 2
    assert sorted(p.name for p in cells.iterdir()) == ["c0", "c1", "c2"]  # no staging folder left


def test_a_cell_s_staging_folder_stays_named_for_the_stop_handler_until_it_is_renamed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # (the name was dropped when the run ended: a SIGTERM before the rename, the driver gone, left the folder behind)
    from dlcluster.sweep import cells as cells_module
    from dlcluster.sweep.cells import CellTask, run_cell, staging_folder

    trace = tmp_path / "t.parquet"
    assert cli("synth", "--preset", "helios-venus", "--days", "1", "--seed", "3", "-o", str(trace)).returncode == 0
    cells = tmp_path / "cells"
    cells.mkdir()
    named: list[list[Path]] = []
    rename = Path.rename

    def watched(self: Path, target: Path) -> Path:
        named.append(list(cells_module._running))
        return rename(self, target)

    monkeypatch.setattr(Path, "rename", watched)
    outcome = run_cell(CellTask(0, "c0", str(trace), ("--policy", "fifo"), str(cells), {"cell": 0}))
    assert outcome.error is None and named == [[staging_folder(cells, "c0")]]
    assert cells_module._running == [] and [p.name for p in cells.iterdir()] == ["c0"]


def test_a_terminal_shows_cells_done_failed_and_time_left(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import io

    from rich.console import Console

    import dlcluster.cli.sweep_cmd as sweep_cmd
    from dlcluster.cli import main

    screen = io.StringIO()
    monkeypatch.setattr(sweep_cmd, "err_console", Console(file=screen, force_terminal=True, width=120))
    exp = _write(tmp_path, SMALL.replace("seed = [1, 2]", "seed = [1]"))
    main(["sweep", str(exp), "-o", str(tmp_path / "out"), "--workers", "1"])
    drawn = screen.getvalue()
    assert "sweep exp" in drawn and "2/2" in drawn and "0 failed" in drawn
    assert "0:00:" in drawn  # the elapsed and remaining times


def _workers(pid: int) -> list[int]:
    """The pool workers among ``pid``'s children (spawned: ``spawn_main`` and not the resource tracker)."""
    found = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        for child in (task / "children").read_text().split():
            with contextlib.suppress(OSError):
                args = Path(f"/proc/{child}/cmdline").read_bytes()
                if b"spawn_main" in args and b"resource_tracker" not in args:
                    found.append(int(child))
    return found


def _sweep_under_way(tmp_path: Path) -> tuple[subprocess.Popen, Path, list[int]]:
    """A sweep of 24 cells on two local workers, once its first cell is done: the driver, the experiment file and
    the workers' process ids."""
    exp = _write(tmp_path, SMALL.replace('seed = [1, 2]', f'seed = {list(range(1, 13))}'))
    out = tmp_path / "out"
    proc = subprocess.Popen([sys.executable, "-m", "dlcluster", "sweep", str(exp), "-o", str(out), "--workers", "2"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True)
    _wait_until(lambda: len(list((out / "cells").glob("[0-9a-f]*"))) >= 1, 120)
    return proc, exp, _workers(proc.pid)


def test_a_worker_that_dies_mid_cell_ends_the_sweep_with_one_line(tmp_path: Path) -> None:
    # (the pool waited for ever for the lost cell, and Ctrl-C no longer stopped it: the OOM killer, a kill -9)
    proc, exp, workers = _sweep_under_way(tmp_path)
    out = tmp_path / "out"
    try:
        assert workers, "no pool worker found"
        os.kill(workers[0], signal.SIGKILL)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    # (any worker's death breaks the pool: the dozens of cells still to run cannot all have finished)
    assert proc.returncode == 2, err
    assert err.splitlines()[-1] == ("error: a worker process died while it ran a cell (killed, or out of memory?); the "
                                    "finished cells are kept, and running the same command again runs only the others")
    assert "Traceback" not in err
    # and it resumes: the rerun runs the cells left
    assert cli("sweep", str(exp), "-o", str(out), "--workers", "2").returncode == 0
    assert pl.read_parquet(out / "results.parquet").height == 24


def test_a_closed_terminal_stops_a_sweep_with_its_own_lines_only(tmp_path: Path) -> None:
    # (the process group's SIGHUP killed multiprocessing's resource tracker too, and the driver warned, in two lines,
    # that it "died unexpectedly")
    proc, _, _ = _sweep_under_way(tmp_path)
    try:
        os.killpg(proc.pid, signal.SIGHUP)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 129, err
    assert err.splitlines() == [
        f"sweep exp: stopped; the finished cells are kept in {tmp_path / 'out' / 'cells'}, and running the same "
        "command again runs only the others",
        "interrupted; no file was left half-written, and no output folder mixes two runs"], err
    assert not list((tmp_path / "out" / "cells").glob(".*"))  # no cell's staging folder is left


def test_workers_end_when_their_driver_is_killed(tmp_path: Path) -> None:
    # (after a kill -9 of the driver the workers waited for cells for ever, or printed BrokenPipeError tracebacks)
    proc, _, workers = _sweep_under_way(tmp_path)
    out = tmp_path / "out"
    try:
        assert workers, "no pool worker found"
        proc.kill()
        _, err = proc.communicate(timeout=60)
        _wait_until(lambda: not any(_running(pid) for pid in workers), 20, every=0.1)
        assert not [pid for pid in workers if _running(pid)]
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
    # (multiprocessing's resource tracker, which outlives the driver too, may still warn of its semaphores)
    assert "Traceback" not in err
    assert not list((out / "cells").glob(".*"))  # the cells that were running removed their staging folders


def test_local_workers_run_polars_on_one_thread_and_leave_the_drivers_environment_alone(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import polars

    from dlcluster.sweep.executors import LocalExecutor

    monkeypatch.delenv("POLARS_MAX_THREADS", raising=False)
    executor = LocalExecutor(2)
    executor.start()
    try:
        # two workers on two cores: a second Polars thread in each would only fight the other worker for its core
        assert [f.result() for f in [executor.pool.submit(polars.thread_pool_size) for _ in range(2)]] == [1, 1]
    finally:
        executor.stop()
    assert "POLARS_MAX_THREADS" not in os.environ



class InlinePool:
    """A process pool that runs its cells in this process (a test starts no worker); records the workers asked."""

    started: list[int] = []

    def __init__(self, processes: int, mp_context: object, initializer: object) -> None:
        self.started.append(processes)
        assert processes <= 64, f"a pool of {processes} workers"  # (stops a sweep that should have been refused)

    def submit(self, fn: Any, *args: Any) -> Future:
        done: Future = Future()
        done.set_result(fn(*args))
        return done

    def shutdown(self, wait: bool, cancel_futures: bool) -> None:
        pass


@pytest.fixture
def inline_pool(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Sweeps of this test run their cells inline; the worker counts their pools were asked for."""
    from dlcluster.sweep import executors

    started: list[int] = []
    monkeypatch.setattr(InlinePool, "started", started)
    monkeypatch.setattr(executors, "ProcessPoolExecutor", InlinePool)
    return started


def test_no_more_workers_start_than_the_experiment_has_cells(tmp_path: Path, inline_pool: list[int]) -> None:
    # (`--workers 16` started 16 processes for 8 cells, and `--workers 100000` hundreds before the machine stalled)
    from dlcluster.cli import main
    from dlcluster.sweep.executors import worker_count

    assert [worker_count(16, cells) for cells in (8, 16, 100, None)] == [8, 16, 16, 16]
    assert worker_count(4, 0) == 1
    exp = _write(tmp_path, SMALL.replace("days = 2", "days = 1").replace("seed = [1, 2]", "seed = [1]"))
    main(["sweep", str(exp), "-o", str(tmp_path / "out"), "--workers", "16"])
    assert inline_pool == [2] and pl.read_parquet(tmp_path / "out/results.parquet")["status"].to_list() == ["ok", "ok"]


@pytest.mark.parametrize("workers", ["0", "1025", "100000"])
def test_a_worker_count_beyond_the_limits_is_refused_before_anything_starts(
        tmp_path: Path, workers: str, inline_pool: list[int], capsys: pytest.CaptureFixture) -> None:
    from dlcluster.cli import main

    exp = _write(tmp_path, SMALL)
    with pytest.raises(SystemExit) as err:
        main(["sweep", str(exp), "-o", str(tmp_path / "out"), "--workers", workers])
    assert (err.value.code, capsys.readouterr().err) == (2, f"error: --workers {workers}: expected 1 to 1,024\n")
    assert inline_pool == [] and not (tmp_path / "out").exists()


@pytest.mark.parametrize("finished", [0, 1])
def test_a_stopped_sweep_names_its_cells_folder_only_when_a_cell_finished(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, finished: int) -> None:
    # (stopped before any cell finished, it named a cells/ folder that did not exist)
    import io

    from rich.console import Console

    import dlcluster.cli.sweep_cmd as sweep_cmd
    import dlcluster.sweep.run as sweep_run
    from dlcluster.cli import main

    out = tmp_path / "out"
    (out / "cells" / ".c1.partial").mkdir(parents=True)  # a cell being written is not a finished one
    if finished:
        (out / "cells" / "c0").mkdir()

    def stopped(*args: Any) -> None:
        raise KeyboardInterrupt

    screen = io.StringIO()
    monkeypatch.setattr(sweep_cmd, "err_console", Console(file=screen, width=500))
    monkeypatch.setattr(sweep_run, "run_sweep", stopped)
    exp = _write(tmp_path, SMALL.replace("seed = [1, 2]", "seed = [1]"))
    with pytest.raises(SystemExit) as ended:
        main(["sweep", str(exp), "-o", str(out), "--workers", "1"])
    assert ended.value.code == 130
    kept = f"the finished cells are kept in {out / 'cells'}" if finished else "no cell had finished"
    assert f"sweep exp: stopped; {kept}, and running the same command again runs only the others" in screen.getvalue()
