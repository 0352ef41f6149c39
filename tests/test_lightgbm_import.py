"""LightGBM imported through dlcluster leaves NumPy's unused submodules unloaded until something uses them."""

from __future__ import annotations

import subprocess
import sys
import textwrap


def _run(code: str) -> str:
    """``code`` in a fresh interpreter (the test process has NumPy's submodules loaded already); its stdout."""
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, check=True)
    return done.stdout.strip()


def test_lightgbm_import_defers_numpy_submodules_until_used() -> None:
    out = _run("""
        import sys
        from dlcluster.predict.lightgbm_import import DEFERRED, lightgbm
        # each submodule's own imports show whether its code ran: f2py's, testing's and ma's
        print(all(m not in sys.modules for m in ("numpy.f2py.crackfortran", "numpy.testing._private.utils",
                                                 "numpy.ma.core")))
        print(lightgbm.Booster.__name__, sorted(DEFERRED) == sorted(set(DEFERRED)))
        import numpy
        # first use loads them as usual
        print(numpy.testing.assert_equal.__name__, numpy.ma.masked_array(numpy.arange(3), mask=[0, 1, 0]).sum())
        print("numpy.testing._private.utils" in sys.modules, "numpy.ma.core" in sys.modules)
    """)
    assert out.splitlines() == ["True", "Booster True", "assert_equal 2", "True True"]


def test_a_submodule_loaded_before_is_left_alone() -> None:
    out = _run("""
        import numpy.testing, sys
        before = sys.modules["numpy.testing"]
        from dlcluster.predict.lightgbm_import import defer_numpy_submodules
        print(defer_numpy_submodules(("testing",)), sys.modules["numpy.testing"] is before)
    """)
    assert out == "[] True"


def test_a_trained_model_predicts_the_same_after_the_deferred_import() -> None:
    # the same booster text whether NumPy's submodules were deferred or loaded first
    code = """
        {first}
        import numpy as np
        from dlcluster.predict.lightgbm_import import lightgbm as lgb
        rng = np.random.default_rng(0)
        x = rng.normal(size=(500, 3))
        model = lgb.train({{"verbosity": -1, "num_threads": 1, "deterministic": True}},
                          lgb.Dataset(x, x[:, 0] * 2 + rng.normal(size=500)), num_boost_round=5)
        print(model.model_to_string().splitlines()[-40:], model.predict(x[:3]).tolist())
    """
    assert _run(code.format(first="import numpy.f2py, numpy.testing, numpy.ma")) == _run(code.format(first=""))
