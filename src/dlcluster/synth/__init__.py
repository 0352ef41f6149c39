"""Calibrated workload generator: fit a model to a trace (or load a preset) and sample new traces."""

from __future__ import annotations

from dlcluster.synth.compare import closeness
from dlcluster.synth.fit import fit
from dlcluster.synth.generate import generate
from dlcluster.synth.model import Model, load_preset, preset_names

__all__ = ["Model", "closeness", "fit", "generate", "load_preset", "preset_names"]
