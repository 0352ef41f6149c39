"""LightGBM boosters trained on dense matrices through LightGBM's own C library, without importing its package.

Importing the ``lightgbm`` package imports SciPy's sparse matrices and narwhals, about 0.1 CPU s
that a short closed-loop CES run (about 1.4 CPU s in all on the Philly window) would pay for a
forecaster that trains only on dense float64 matrices. :func:`train` makes the library calls
``lightgbm.train`` makes for such a matrix, in the same order and with the same parameters, so
the boosters are the same (``tests/test_lightgbm_capi.py`` compares the two); where the library file
cannot be found next to the installed package, it trains through the package instead.
"""

from __future__ import annotations

import ctypes
import functools
import importlib.util
import platform
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

_FLOAT32, _FLOAT64, _ROW_MAJOR, _NORMAL = 0, 1, 1, 0  # LightGBM's C API constants (c_api.h)


@functools.cache
def library() -> ctypes.CDLL | None:
    """LightGBM's library next to the installed ``lightgbm`` package (as the package finds it), or None."""
    spec = importlib.util.find_spec("lightgbm")  # (finds the package without running it)
    if spec is None or not spec.submodule_search_locations:
        return None
    package = Path(next(iter(spec.submodule_search_locations)))
    name = {"Windows": "lib_lightgbm.dll", "Darwin": "lib_lightgbm.dylib"}.get(platform.system(), "lib_lightgbm.so")
    for folder in (package.parent, package / "bin", package / "lib"):
        if (folder / name).is_file():
            lib = ctypes.cdll.LoadLibrary(str(folder / name))
            lib.LGBM_GetLastError.restype = ctypes.c_char_p
            return lib
    return None


def check_status(lib: ctypes.CDLL, status: int) -> None:
    """Raise LightGBM's last error if a library call returned a failure ``status``."""
    if status != 0:
        raise RuntimeError(f"LightGBM: {lib.LGBM_GetLastError().decode(errors='replace')}")


def _param_str(params: Mapping[str, Any]) -> bytes:
    """``key=value`` pairs as the package writes scalar parameters."""
    return " ".join(f"{k}={v}" for k, v in params.items()).encode()


class CBooster:
    """A trained booster held by its library handle; predicts dense float64 matrices."""

    def __init__(self, lib: ctypes.CDLL, dataset: ctypes.c_void_p, handle: ctypes.c_void_p) -> None:
        self.lib, self._dataset, self.handle = lib, dataset, handle

    def predict(self, x: np.ndarray, num_threads: int = 1) -> np.ndarray:
        """Raw predictions of the rows of ``x`` (as ``Booster.predict`` of a regression model)."""
        x = np.ascontiguousarray(x, dtype=np.float64)
        out = np.empty(len(x), dtype=np.float64)
        if len(x) == 0:
            return out
        written = ctypes.c_int64(0)
        check_status(self.lib, self.lib.LGBM_BoosterPredictForMat(
            self.handle, x.ctypes.data_as(ctypes.c_void_p), ctypes.c_int(_FLOAT64), ctypes.c_int32(x.shape[0]),
            ctypes.c_int32(x.shape[1]), ctypes.c_int(_ROW_MAJOR), ctypes.c_int(_NORMAL), ctypes.c_int(0),
            ctypes.c_int(-1), _param_str({"num_threads": num_threads}), ctypes.byref(written),
            out.ctypes.data_as(ctypes.POINTER(ctypes.c_double))))
        return out

    def model_to_string(self) -> str:
        """The model in LightGBM's text format (as ``Booster.model_to_string``, without the package's
        ``pandas_categorical`` line)."""
        size = ctypes.c_int64(0)
        buffer = ctypes.create_string_buffer(1 << 16)
        for _ in range(2):  # the first call says how long the text is when the buffer is too short
            check_status(self.lib, self.lib.LGBM_BoosterSaveModelToString(
                self.handle, ctypes.c_int(0), ctypes.c_int(-1), ctypes.c_int(0), ctypes.c_int64(len(buffer)),
                ctypes.byref(size), buffer))
            if size.value <= len(buffer):
                break
            buffer = ctypes.create_string_buffer(size.value)
        return buffer.value.decode()

    def __del__(self) -> None:
        try:
            self.lib.LGBM_BoosterFree(self.handle)
            self.lib.LGBM_DatasetFree(self._dataset)
        except Exception:  # noqa: BLE001 - at interpreter exit the library may already be gone
            pass


def train(params: Mapping[str, Any], x: np.ndarray, label: np.ndarray, feature_names: Sequence[str],
          rounds: int) -> Any:
    """``lightgbm.train(params, Dataset(x, label, feature_name=feature_names), rounds, keep_training_booster=True)``
    for a dense matrix and scalar parameters: a :class:`CBooster`, or the package's ``Booster`` without the
    library file."""
    lib = library()
    if lib is None:
        from dlcluster.predict.lightgbm_import import lightgbm as lgb

        data = lgb.Dataset(x, label, feature_name=list(feature_names), params=dict(params))
        return lgb.train(dict(params), data, num_boost_round=rounds, keep_training_booster=True)
    # the package's parameters for the dataset and the booster: the given ones and the rounds
    text = _param_str({**params, "num_iterations": rounds})
    x = np.ascontiguousarray(x, dtype=np.float64)
    dataset, booster = ctypes.c_void_p(), ctypes.c_void_p()
    check_status(lib, lib.LGBM_DatasetCreateFromMat(
        x.ctypes.data_as(ctypes.c_void_p), ctypes.c_int(_FLOAT64), ctypes.c_int32(x.shape[0]),
        ctypes.c_int32(x.shape[1]), ctypes.c_int(_ROW_MAJOR), text, None, ctypes.byref(dataset)))
    try:
        names = [n.encode() for n in feature_names]
        check_status(lib, lib.LGBM_DatasetSetFeatureNames(dataset, (ctypes.c_char_p * len(names))(*names),
                                                          ctypes.c_int(len(names))))
        y = np.ascontiguousarray(label, dtype=np.float32)  # (the package's label type)
        check_status(lib, lib.LGBM_DatasetSetField(dataset, b"label", y.ctypes.data_as(ctypes.c_void_p),
                                                   ctypes.c_int(len(y)), ctypes.c_int(_FLOAT32)))
        check_status(lib, lib.LGBM_BoosterCreate(dataset, text, ctypes.byref(booster)))
    except RuntimeError:
        lib.LGBM_DatasetFree(dataset)
        raise
    model = CBooster(lib, dataset, booster)
    finished = ctypes.c_int(0)
    for _ in range(rounds):  # (as lightgbm.train: every round asked for, finished or not)
        check_status(lib, lib.LGBM_BoosterUpdateOneIter(booster, ctypes.byref(finished)))
    return model
