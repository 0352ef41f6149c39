"""Predicting one row of a feature matrix with a LightGBM booster, at a few microseconds a call.

``Booster.predict`` validates and converts its input on every call; an online model asked
one row at a time spends most of its time there. LightGBM's C API has a fast path for
single rows: configured once per model, then called with a pointer to the row.
"""

from __future__ import annotations

import ctypes
from typing import Any

import numpy as np

from dlcluster.predict.lightgbm_capi import CBooster, check_status


class FastPredictor:
    """Single-row prediction straight from the stored feature matrix (LightGBM's fast C path, ~3 µs a row)."""

    def __init__(self, booster: Any, matrix: np.ndarray) -> None:
        if isinstance(booster, CBooster):
            lib, handle = booster.lib, booster.handle
        else:
            from lightgbm.basic import _LIB as lib  # LightGBM's own ctypes handle to its library

            handle = booster._handle
        self._lib, self._booster = lib, booster  # (the booster outlives its prediction state)
        self._config = ctypes.c_void_p()
        check_status(lib, lib.LGBM_BoosterPredictForMatSingleRowFastInit(
            handle, ctypes.c_int(0), ctypes.c_int(0), ctypes.c_int(-1),
            ctypes.c_int(0 if matrix.dtype == np.float32 else 1), ctypes.c_int32(matrix.shape[1]),
            b"num_threads=1", ctypes.byref(self._config)))
        self._base = matrix.ctypes.data
        self._stride = matrix.strides[0]
        self._out = np.zeros(1)
        self._out_ptr = self._out.ctypes.data_as(ctypes.POINTER(ctypes.c_double))
        self._result = self._out.data  # (a memoryview: its item is a Python float, no NumPy scalar per call)
        self._len = ctypes.byref(ctypes.c_int64(0))
        self._row0 = ctypes.c_void_p(self._base)  # (a forecaster's matrix is one row, predicted at every step)
        self._call = lib.LGBM_BoosterPredictForMatSingleRowFast

    def __call__(self, row: int) -> float:
        """The raw model output for row ``row`` of the matrix."""
        if self._call(self._config, ctypes.c_void_p(self._base + row * self._stride) if row else self._row0,
                      self._len, self._out_ptr):
            raise RuntimeError("LightGBM single-row prediction failed")
        value: float = self._result[0]
        return value

    def close(self) -> None:
        """Free LightGBM's prediction state."""
        if self._config:
            self._lib.LGBM_FastConfigFree(self._config)
            self._config = ctypes.c_void_p()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # noqa: BLE001 - at interpreter exit the library may already be gone
            pass


class BoosterPredictor:
    """Single-row prediction through ``Booster.predict`` (~18 µs a row; the fallback of :class:`FastPredictor`)."""

    def __init__(self, booster: Any, matrix: np.ndarray) -> None:
        self._booster, self._matrix = booster, matrix

    def __call__(self, row: int) -> float:
        """The raw model output for row ``row`` of the matrix."""
        return float(self._booster.predict(self._matrix[row:row + 1])[0])

    def close(self) -> None:
        """Nothing to free."""


SingleRowPredictor = FastPredictor | BoosterPredictor


def single_row_predictor(booster: Any, matrix: np.ndarray) -> SingleRowPredictor:
    """The fast C path for rows of ``matrix`` (C-contiguous float64 or float32), or the public one where that is missing."""
    try:
        return FastPredictor(booster, matrix)
    except (ImportError, AttributeError):  # a LightGBM without the private handle: its public (slower) path
        return BoosterPredictor(booster, matrix)
