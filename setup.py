"""Build hook: compile the simulator's hot loop with mypyc where a C compiler is at hand; pure Python otherwise.

Everything else is in pyproject.toml. The compiled modules write the very files their sources do
(tests/test_sim_compiled.py), faster (``python -m benchmarks.bench_sim compiled``). ``DLCLUSTER_COMPILE=0`` installs
them as Python.
"""

from __future__ import annotations

import os
import shutil
import sys
import sysconfig
from pathlib import Path

from setuptools import setup

# the event loop, the scheduling pass and what they call per event; the classes here that plug-ins may subclass
# (the built-in speed model, the consolidate placements) allow it with mypyc_attr, and the policies and plug-in
# interfaces stay interpreted
COMPILED = [
    "src/dlcluster/sim/cluster.py",
    "src/dlcluster/sim/cycle.py",
    "src/dlcluster/sim/engine.py",
    "src/dlcluster/sim/jobs.py",
    "src/dlcluster/sim/placement/consolidate.py",
    "src/dlcluster/sim/simulation.py",
    "src/dlcluster/sim/speed.py",
]


def _can_compile() -> bool:
    """Whether to compile: asked for (the default), with a C compiler and Python's headers."""
    if os.environ.get("DLCLUSTER_COMPILE", "1") == "0":
        return False
    compiler = (os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc").split()[0]
    headers = Path(sysconfig.get_paths()["include"], "Python.h")
    if shutil.which(compiler) is None or not headers.exists():
        print(f"dlcluster: no C compiler ({compiler}) or no {headers}: the simulator is installed as pure Python "
              "(slower, same results)", file=sys.stderr)
        return False
    return True


ext_modules = []
if _can_compile():
    from mypyc.build import mypycify

    ext_modules = mypycify(COMPILED, opt_level="3", group_name="dlcluster_sim")

setup(ext_modules=ext_modules)
