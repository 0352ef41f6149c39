"""The demand forecaster's boosters, trained through LightGBM's C library, equal ``lightgbm.train``'s."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest

from dlcluster.predict import lightgbm_capi
from dlcluster.predict.forecast import FEATURES
from dlcluster.predict.lightgbm_import import lightgbm as lgb
from dlcluster.predict.single_row import FastPredictor, single_row_predictor

PARAMS = {"num_leaves": 4, "learning_rate": 0.1, "min_data_in_leaf": 20, "max_bin": 63, "num_threads": 1,
          "deterministic": True, "force_row_wise": True, "seed": 0, "verbosity": -1}


def _data(seed: int = 1) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(2000, len(FEATURES)))
    x[rng.random(x.shape) < 0.05] = np.nan  # (the forecaster's early rows have NaN lags)
    return x, 3 * np.nan_to_num(x[:, 0]) + rng.normal(size=len(x))


@pytest.mark.parametrize("objective", [{"objective": "regression"}, {"objective": "quantile", "alpha": 0.99}])
def test_the_c_library_trains_the_booster_lightgbm_train_does(objective: dict[str, object]) -> None:
    x, y = _data()
    params = {**objective, **PARAMS}
    ours = lightgbm_capi.train(params, x, y, FEATURES, 30)
    assert isinstance(ours, lightgbm_capi.CBooster)
    theirs = lgb.train(params, lgb.Dataset(x, y, feature_name=list(FEATURES), params={"max_bin": 63, "verbosity": -1}),
                       num_boost_round=30, keep_training_booster=True)
    # the same trees, features and parameters; the package alone appends its pandas note
    assert theirs.model_to_string() == ours.model_to_string() + "\npandas_categorical:null\n"
    assert np.array_equal(ours.predict(x), theirs.predict(x, num_threads=1))
    # the single-row path reads the same booster
    row = np.ascontiguousarray(x[:1])
    fast = single_row_predictor(ours, row)
    assert isinstance(fast, FastPredictor)
    assert fast(0) == ours.predict(row)[0]


def test_without_the_library_file_it_trains_through_the_package(monkeypatch: pytest.MonkeyPatch) -> None:
    x, y = _data(2)
    params = {"objective": "regression", **PARAMS}
    direct = lightgbm_capi.train(params, x, y, FEATURES, 10)
    monkeypatch.setattr(lightgbm_capi, "library", lambda: None)
    packaged = lightgbm_capi.train(params, x, y, FEATURES, 10)
    assert isinstance(packaged, lgb.Booster)
    assert np.array_equal(packaged.predict(x, num_threads=1), direct.predict(x))


def test_a_forecaster_never_imports_the_lightgbm_package() -> None:
    code = """
        import sys
        import numpy as np
        from dlcluster.predict.forecast import DemandForecaster, Target
        f = DemandForecaster(600, 0, (Target(1, 7, "max"),), quantile=0.9)
        f.extend(np.abs(np.sin(np.arange(3 * 144) / 20)) * 50)
        f.fit()
        print(f.forecast()[0] >= 0, f.forecast_all([300, 301]).shape, "lightgbm" in sys.modules,
              "scipy.sparse" in sys.modules)
    """
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["True", "(2,", "1)", "False", "False"]
