"""Run every benchmark and print its figures: ``.venv/bin/python -m benchmarks``."""

from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path

for mod in sorted(m.name for m in pkgutil.iter_modules([str(Path(__file__).parent)]) if m.name.startswith("bench_")):
    print(f"== {mod}", flush=True)
    importlib.import_module(f"benchmarks.{mod}").main()
