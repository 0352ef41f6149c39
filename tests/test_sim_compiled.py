"""The simulator core that setup.py compiles with mypyc gives the very results of its Python sources."""

from __future__ import annotations

import ast
import filecmp
import importlib
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from test_sim_helpers import by_id, jobs, spec

from benchmarks._measure import dlcluster_pure
from dlcluster.sim import simulate
from dlcluster.sim.placement import register_placement
from dlcluster.sim.placement.consolidate import ArtifactConsolidate, Consolidate
from dlcluster.sim.speed import PlacementSpeed

ROOT = Path(__file__).resolve().parents[1]


def _setup_list() -> list[str]:
    """The source files setup.py compiles (its ``COMPILED`` list)."""
    tree = ast.parse((ROOT / "setup.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "COMPILED" for t in node.targets):
            return list(ast.literal_eval(node.value))
    raise AssertionError("setup.py has no COMPILED list")


def _modules() -> dict[str, Path]:
    """Each module setup.py compiles, by name, with the file it was imported from."""
    out = {}
    for source in _setup_list():
        name = source.removeprefix("src/").removesuffix(".py").replace("/", ".")
        out[name] = Path(importlib.import_module(name).__file__ or "")
    return out


def _compiled() -> dict[str, Path]:
    return {name: path for name, path in _modules().items() if path.suffix == ".so"}


def test_setup_compiles_existing_sim_modules_and_a_build_compiles_all_of_them_or_none() -> None:
    """A partial build would mix compiled and interpreted modules no test covers."""
    modules = _modules()
    assert modules and all(name.startswith("dlcluster.sim.") for name in modules)
    assert len(_compiled()) in (0, len(modules)), sorted(_compiled())


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_make_reinstalls_when_a_compiled_source_changes() -> None:
    """The install stamp depends on every file setup.py compiles (README: `make test` and `make demo` rebuild)."""
    rules = subprocess.run(["make", "-pnq", "-C", str(ROOT), "install"], capture_output=True, text=True).stdout
    stamp = next(line for line in rules.splitlines() if line.startswith(".venv/.installed:"))
    assert {"pyproject.toml", "setup.py", *_setup_list()} <= set(stamp.split(":", 1)[1].split())


def test_compiled_modules_are_not_older_than_their_sources() -> None:
    """Python imports the compiled module, not its edited source: an edit needs a rebuild (``make install``)."""
    compiled = _compiled()
    if not compiled:
        pytest.skip("dlcluster was installed without compiling (DLCLUSTER_COMPILE=0 or no C compiler)")
    stale = [name for name, so in compiled.items()
             if (ROOT / "src" / (name.replace(".", "/") + ".py")).stat().st_mtime > so.stat().st_mtime]
    assert not stale, f"edited since they were compiled: {stale}; run `make install`"


# summary.json's wall-clock figures: the simulation's, and the online estimator's training and predicting
TIMINGS = ("wall_seconds", "events_per_second", "train_seconds", "predict_seconds", "predict_us_per_job")


def _strip_timings(value: Any) -> Any:
    """A summary without its wall-clock figures (the only part of a run that may differ between two runs)."""
    if isinstance(value, dict):
        return {k: _strip_timings(v) for k, v in value.items() if k not in TIMINGS}
    if isinstance(value, list):
        return [_strip_timings(v) for v in value]
    return value


@pytest.fixture(scope="module")
def trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Four days of a Helios-Venus-like workload (multi-GPU gangs, Helios' failure mix)."""
    out = tmp_path_factory.mktemp("compiled") / "venus.parquet"
    subprocess.run([sys.executable, "-m", "dlcluster", "synth", "--preset", "helios-venus", "--days", "4", "--seed",
                    "5", "-o", str(out)], check=True, capture_output=True)
    return out


@pytest.mark.parametrize("options", [
    ["-p", "fifo,sjf,srtf,las", "--load", "3", "--speed-model", "philly", "--failures", "replay", "--retries", "2"],
    ["-p", "fifo-easy,tiresias", "--load", "2", "--placement", "relax:600", "--power", "ces"],
    ["-p", "qssf", "--load", "2", "--estimates", "history", "--validation-minutes", "5", "--validation-gpus", "8",
     "--failures", "replay"],
], ids=["speed-failures", "relax-power", "validation"])
def test_compiled_and_pure_python_runs_write_the_same_files(trace: Path, tmp_path: Path, options: list[str]) -> None:
    """Every file of a run, byte for byte (summary.json but its wall-clock figures)."""
    compiled = _compiled()
    if not compiled:
        pytest.skip("dlcluster was installed without compiling (DLCLUSTER_COMPILE=0 or no C compiler)")
    for name, command in (("compiled", [sys.executable, "-m", "dlcluster"]), ("pure", dlcluster_pure())):
        subprocess.run([*command, "simulate", str(trace), *options, "-o", str(tmp_path / name)], check=True,
                       capture_output=True)
    files = sorted(p.relative_to(tmp_path / "compiled") for p in (tmp_path / "compiled").rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(tmp_path / "pure") for p in (tmp_path / "pure").rglob("*") if p.is_file())
    assert any(f.name == "jobs.parquet" for f in files)
    for f in files:
        a, b = tmp_path / "compiled" / f, tmp_path / "pure" / f
        if f.suffix == ".json":
            assert _strip_timings(json.loads(a.read_text())) == _strip_timings(json.loads(b.read_text())), f
        else:
            assert filecmp.cmp(a, b, shallow=False), f


def test_python_subclasses_of_the_compiled_classes_override_their_attributes_and_methods() -> None:
    """Plug-ins subclass the built-in speed model and the consolidate placements, compiled or not (mypyc_attr)."""

    class Halved(PlacementSpeed):
        any_neighbour = False

        def rate(self, jobs: Any, job: int, alloc: Any, sizes: tuple[int, ...], neighbours: int) -> float:
            return 0.5

    @register_placement
    class Asked(Consolidate):
        name = "test-compiled-asked"
        one_node = False

    class Renamed(ArtifactConsolidate):
        name = "test-compiled-artifact"

    assert Halved().any_neighbour is False and Asked().one_node is False and Asked().sized is True
    assert Renamed().name == "test-compiled-artifact" and Renamed().sized is True
    ran = by_id(simulate(jobs(("A", "v", 2, 0, 1000), ("B", "v", 4, 10, 100)), spec(v=(8,)), "fifo",
                         placement="test-compiled-asked", speed=Halved()).jobs)
    assert [ran[j]["end"] - ran[j]["start"] for j in "AB"] == [2000, 200]
