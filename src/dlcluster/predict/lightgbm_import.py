"""LightGBM, imported without loading the NumPy submodules that SciPy imports for it and nothing here uses.

LightGBM imports ``scipy.sparse``, and SciPy (1.17) copies every name in ``numpy.__all__``
into its array-API namespace. That list includes submodules that NumPy otherwise loads only
on first use, among them ``numpy.f2py`` and ``numpy.testing``. Together they took about 0.1 s,
close to half the cost of importing LightGBM, which every command that trains duration models
pays (CES's forecaster avoids the package: see :mod:`dlcluster.predict.lightgbm_capi`).
Registering those submodules with the standard library's :class:`importlib.util.LazyLoader`
first gives SciPy the module objects and delays loading each one until something reads one of
its attributes.

Import ``lightgbm`` through this module (``from dlcluster.predict.lightgbm_import import lightgbm as lgb``).
"""

from __future__ import annotations

import importlib.util
import sys

import numpy

# NumPy's lazily loaded submodules that SciPy's copy of ``numpy.__all__`` would load (numpy.linalg, fft, random,
# typing and the like are loaded anyway)
DEFERRED = ("f2py", "testing", "ma", "char", "rec", "ctypeslib", "polynomial", "strings")


def defer_numpy_submodules(names: tuple[str, ...] = DEFERRED) -> list[str]:
    """Register each NumPy submodule in ``names`` not yet loaded to load on first attribute access; which ones."""
    deferred = []
    for name in names:
        full = f"numpy.{name}"
        if full in sys.modules or name in vars(numpy):
            continue
        spec = importlib.util.find_spec(full)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            continue
        spec.loader = importlib.util.LazyLoader(spec.loader)
        module = importlib.util.module_from_spec(spec)
        sys.modules[full] = module
        spec.loader.exec_module(module)
        setattr(numpy, name, module)  # as the import system binds a loaded submodule on its parent
        deferred.append(name)
    return deferred


if "lightgbm" not in sys.modules:
    defer_numpy_submodules()
import lightgbm  # noqa: E402  (after the deferral above, which is the point of this module)

__all__ = ["DEFERRED", "defer_numpy_submodules", "lightgbm"]
