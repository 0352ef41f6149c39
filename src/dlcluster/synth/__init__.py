"""Calibrated workload generator: fit a model to a trace (or load a preset) and sample new traces."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from dlcluster.synth.fit import fit
from dlcluster.synth.generate import generate
from dlcluster.synth.model import Model, load_preset, preset_names

if TYPE_CHECKING:
    from dlcluster.synth.compare import closeness

__all__ = ["Model", "closeness", "fit", "generate", "load_preset", "preset_names"]


def __getattr__(name: str) -> Any:
    # imported on first use: generating a trace need not import what comparing one does (SciPy's statistics, 0.4 s)
    if name == "closeness":
        from dlcluster.synth.compare import closeness

        return closeness
    raise AttributeError(f"module 'dlcluster.synth' has no attribute {name!r}")
