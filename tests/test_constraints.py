"""Issue 19 item 11: booleans are not numbers (dp_sklearn._constraints.Interval).

scikit-learn's ``Interval(Real, ...)`` accepts ``True`` (``bool`` subclasses ``int``), so
``DPRidge(epsilon=True)`` used to fit at epsilon = 1. Every numeric hyperparameter now
refuses booleans with an error naming it, before any budget is reserved.
"""

from numbers import Real

import numpy as np
import pytest
from sklearn.utils._param_validation import InvalidParameterError

from dp_sklearn import (
    DPGridSearchCV,
    DPLasso,
    DPLogisticRegression,
    DPMinMaxScaler,
    DPOnlineClassifier,
    DPOnlineRegressor,
    DPRidge,
    DPSparseLinearRegression,
    DPStandardScaler,
    PrivacyLedger,
)
from dp_sklearn._constraints import Interval

RNG = np.random.default_rng(0)
X = RNG.normal(size=(60, 3))
Y = X[:, 0]

CASES = [
    (DPRidge, {"epsilon": True}),
    (DPRidge, {"data_norm": True}),
    (DPRidge, {"alpha": False}),
    (DPRidge, {"max_iter": True}),
    (DPRidge, {"bounds_y": (False, True)}),
    (DPLasso, {"radius": True}),
    (DPLogisticRegression, {"C": True}),
    (DPLogisticRegression, {"delta": np.False_}),
    (DPSparseLinearRegression, {"n_nonzero_coefs": True}),
    (DPOnlineRegressor, {"epsilon": True}),
    (DPOnlineClassifier, {"radius": True}),
    (DPStandardScaler, {"epsilon": True}),
    (DPStandardScaler, {"bounds": (np.zeros(3, dtype=bool), np.ones(3, dtype=bool))}),
    (DPMinMaxScaler, {"delta": False}),
]


@pytest.mark.parametrize("cls, params", CASES, ids=[f"{c.__name__}-{next(iter(p))}" for c, p in CASES])
def test_booleans_are_refused_before_any_budget(cls, params):
    name = next(iter(params))
    led = PrivacyLedger(delta=1e-5)
    try:
        est = cls(**params, ledger=led)
        if "bounds_y" in est.get_params() and name != "bounds_y":
            est.set_params(bounds_y=(-3, 3))
        y = (Y > 0).astype(int) if "Classifier" in cls.__name__ or "Logistic" in cls.__name__ else Y
        with pytest.raises(ValueError, match=name):
            est.fit(X, y) if not cls.__name__.endswith("Scaler") else est.fit(X)
        assert len(led) == 0 and led.pending == []
    finally:
        led.delete()


def test_the_search_refuses_booleans():
    with pytest.raises(InvalidParameterError, match="epsilon"):
        DPGridSearchCV(DPRidge(bounds_y=(-3, 3)), {"alpha": [1.0]}, epsilon=True).fit(X, Y)


def test_interval_refuses_bools_and_keeps_numbers():
    c = Interval(Real, 0, 1, closed="right")
    assert c.is_satisfied_by(1) and c.is_satisfied_by(0.5) and c.is_satisfied_by(np.float32(1.0))
    assert not c.is_satisfied_by(True) and not c.is_satisfied_by(np.True_)
    assert "not a bool" in str(c)
