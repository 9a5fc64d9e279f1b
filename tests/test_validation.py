"""Validation first, then the ledger reservation (issue 8 items 0e, 2, 4, 7, 9, 10, 11; issue 9.1)."""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import load_diabetes
from sklearn.linear_model import Ridge
from sklearn.preprocessing import StandardScaler

from dp_sklearn import (
    ClippingWarning,
    DPLasso,
    DPLogisticRegression,
    DPRidge,
    DPSparseLinearRegression,
    DPSparseLogisticRegression,
    PrivacyLedger,
)
from dp_sklearn.linear_model._base import _make_rng

ESTIMATORS = [DPRidge, DPLasso, DPLogisticRegression, DPSparseLinearRegression, DPSparseLogisticRegression]


@pytest.fixture(scope="module")
def diabetes():
    X, y = load_diabetes(return_X_y=True)
    return StandardScaler().fit_transform(X), y


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ClippingWarning)
        yield


@pytest.mark.parametrize("cls", ESTIMATORS)
def test_every_estimator_declares_parameter_constraints(cls):
    params = set(cls().get_params())
    assert params == set(cls._parameter_constraints), cls


@pytest.mark.parametrize("cls", ESTIMATORS)
@pytest.mark.parametrize("param, value", [
    ("fit_intercept", "False"), ("fit_intercept", None), ("ledger", "x.jsonl"), ("epsilon", 0.0),
    ("epsilon", np.nan), ("epsilon", 1e200), ("delta", 1.0), ("data_norm", 1e-200), ("data_norm", 1e200),
    ("data_norm", np.inf), ("max_iter", 0), ("tol", -1.0), ("accounting", "exact"), ("solver", "nope"),
    ("random_state", "seed"),
])
def test_bad_hyperparameters_raise_naming_the_parameter(cls, param, value, diabetes):
    X, y = diabetes
    y = (y > 140).astype(int) if "Logistic" in cls.__name__ else y
    with pytest.raises(ValueError, match=f"'{param}' parameter"):
        cls(**{param: value}).fit(X[:50], y[:50])


@pytest.mark.parametrize("bounds", [(400, 0), (0, np.inf), (-1.7e308, 1.7e308), (1,), "ab"])
def test_bad_bounds_y_raise(bounds, diabetes):
    X, y = diabetes
    with pytest.raises(ValueError, match="bounds_y"):
        DPRidge(bounds_y=bounds).fit(X, y)


def _ledger(tmp_path, name="led.jsonl", cap=2.5):
    return PrivacyLedger(max_epsilon=cap, delta=1e-5, path=tmp_path / name)


REPRODUCERS = {
    "bounds_y reversed": lambda led: (DPRidge(bounds_y=(400, 0), delta=1e-6, ledger=led), "regression"),
    "one class": lambda led: (DPLogisticRegression(delta=1e-6, ledger=led), "one_class"),
    "classes mismatch": lambda led: (DPLogisticRegression(delta=1e-6, classes=[5, 6], ledger=led), "binary"),
    "sparse one class": lambda led: (DPSparseLogisticRegression(3, delta=1e-6, ledger=led), "one_class"),
    "three classes, binary model": lambda led: (DPSparseLogisticRegression(3, delta=1e-6, ledger=led), "three"),
    "batch_size on frank_wolfe": lambda led: (DPLasso(batch_size=10, delta=1e-6, bounds_y=(25, 346), ledger=led),
                                              "regression"),
    "NaN in X": lambda led: (DPRidge(delta=1e-6, bounds_y=(25, 346), ledger=led), "nan"),
}


@pytest.mark.parametrize("case", sorted(REPRODUCERS))
def test_failed_validation_reserves_nothing(case, diabetes, tmp_path):
    """Issue 8 item 2: a fit that raises in validation leaves the ledger untouched."""
    X, y = diabetes
    led = _ledger(tmp_path)
    est, kind = REPRODUCERS[case](led)
    yk = {"regression": y, "one_class": np.zeros_like(y), "binary": (y > 140).astype(int),
          "three": np.digitize(y, [100, 200]), "nan": y}[kind]
    Xk = X.copy()
    if kind == "nan":
        Xk[0, 0] = np.nan
    before = led.remaining()
    with pytest.raises(ValueError):
        est.fit(Xk, yk)
    assert led.pending == [] or len(led.pending) == 0
    assert led.remaining() == before
    DPRidge(bounds_y=(25, 346), delta=1e-6, ledger=led, random_state=0).fit(X, y)  # later fits are accepted
    assert len(led) == 1


def test_two_default_ridge_fits_fit_a_ledger_of_ten(diabetes, tmp_path):
    """Issue 8 item 4: the ledger sees the exact planned event, not a generic (epsilon, delta) projection."""
    X, y = diabetes
    led = PrivacyLedger(max_epsilon=10, path=tmp_path / "ten.jsonl")
    for seed in range(2):
        DPRidge(bounds_y=(25, 346), ledger=led, random_state=seed).fit(X, y)
    assert len(led) == 2
    assert led.total_epsilon() < 10


def test_reserved_event_is_the_recorded_event(diabetes, tmp_path):
    X, y = diabetes
    led = _ledger(tmp_path)
    seen = []
    real = led.reserve

    def spy(epsilon, delta, *, event=None, label=None):
        seen.append(event)
        return real(epsilon, delta, event=event, label=label)

    led.reserve = spy
    est = DPLasso(bounds_y=(25, 346), ledger=led, random_state=0).fit(X, y)
    assert seen == [est.dp_event_]


def test_numeric_string_targets_like_ridge(diabetes):
    """Issue 8 item 11: a y of numeric strings works, as for scikit-learn's Ridge."""
    X, y = diabetes
    ys = y.astype(str)
    a = DPRidge(bounds_y=(25, 346), random_state=0).fit(X, ys)
    b = DPRidge(bounds_y=(25, 346), random_state=0).fit(X, y)
    np.testing.assert_array_equal(a.coef_, b.coef_)
    Ridge().fit(X, ys.astype(object))  # the reference accepts it too
    DPRidge(bounds_y=(25, 346), random_state=0).fit(X, ys.astype(object))
    with pytest.raises(ValueError, match="y must be numeric"):
        DPRidge(bounds_y=(25, 346)).fit(X, np.array(["a"] * X.shape[0]))


def test_random_state_reduced_to_256_bits():
    """Issue 8 item 0e: a RandomState yields 256 bits of entropy (one rule for every fit), not a 31-bit seed."""
    rng = _make_rng(np.random.RandomState(0))
    entropy = rng.bit_generator.seed_seq.entropy
    assert len(entropy) == 8 and all(0 <= int(v) < 2**32 for v in entropy)  # 8 x 32 = 256 bits
    assert max(int(v) for v in entropy) >= 2**31 or len(set(entropy)) == 8
    same = _make_rng(np.random.RandomState(0)).random()
    assert same == _make_rng(np.random.RandomState(0)).random()  # reproducible from the RandomState
    # ints and None keep numpy's own mapping (seeded numbers do not change)
    assert _make_rng(7).random() == np.random.default_rng(7).random()


def test_huge_epsilon_and_data_norm_edges_are_rejected_not_crashing(diabetes):
    """Issue 8 item 9: each bad numeric edge raises a ValueError naming the parameter."""
    X, y = diabetes
    for kw, name in [({"epsilon": 1e200}, "epsilon"), ({"data_norm": 1e-200}, "data_norm"),
                     ({"data_norm": 1e200}, "data_norm"), ({"bounds_y": (-1.7e308, 1.7e308)}, "bounds_y")]:
        with pytest.raises(ValueError, match=name):
            DPRidge(**{"bounds_y": (25, 346), **kw}).fit(X, y)
    est = DPRidge(epsilon=1e100, bounds_y=(25, 346), random_state=0).fit(X, y)
    assert np.all(np.isfinite(est.coef_))


def test_sparse_and_dense_agree_after_refactor(diabetes):
    X, y = diabetes
    a = DPRidge(bounds_y=(25, 346), random_state=0).fit(X, y)  # sparse X defaults to data_norm=1: pass it
    b = DPRidge(bounds_y=(25, 346), data_norm=a.data_norm_, random_state=0).fit(sp.csr_matrix(X), y)
    np.testing.assert_allclose(a.coef_, b.coef_, rtol=1e-10, atol=1e-12)
