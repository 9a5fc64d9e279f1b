"""DPSparseLinearRegression / DPSparseLogisticRegression: API, validation, CSR input, scikit-learn checks, ledger."""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from dp_accounting import dp_event

from dp_sklearn import ClippingWarning, DPSparseLinearRegression, DPSparseLogisticRegression

from solver_helpers import sparse_regression
from weight_checks import sample_weight_failures


def test_sparse_estimator_api_and_validation():
    X, y, _, _ = sparse_regression(n=200, p=20, seed=5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ClippingWarning)
        m = DPSparseLinearRegression(4, bounds_y=(-4, 4), random_state=0).fit(X, y)
        m2 = DPSparseLinearRegression(4, bounds_y=(-4, 4), random_state=0).fit(X, y)
        big = DPSparseLinearRegression(50, bounds_y=(-4, 4), random_state=0).fit(X, y)
    np.testing.assert_array_equal(m.coef_, m2.coef_)  # one Generator per fit, seeded
    assert m.coef_.shape == (20,) and np.count_nonzero(m.coef_) <= 4 and m.solver_ == "ight"
    assert isinstance(m.dp_event_, dp_event.ComposedDpEvent)  # private centering + IGHT
    assert m.epsilon_ == 1.0 and m.n_iter_ >= 1
    assert big.coef_.shape == (20,)
    for kwargs, match in [({"n_nonzero_coefs": 0}, "n_nonzero_coefs"), ({"n_nonzero_coefs": 2.5}, "n_nonzero_coefs"),
                          ({"step_size": -1.0}, "step_size"), ({"solver": "noisy_gd"}, "solver"),
                          ({"delta": 0.0}, "delta=0")]:
        with pytest.raises(ValueError, match=match):
            DPSparseLinearRegression(bounds_y=(-4, 4), **kwargs).fit(X, y)
    # two_stage accepts pure DP
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ClippingWarning)
        pure = DPSparseLinearRegression(4, delta=0.0, solver="two_stage", bounds_y=(-4, 4), random_state=0).fit(X, y)
    assert pure.delta_ == 0.0
    yc = np.arange(200) % 3
    with pytest.raises(ValueError, match="binary"):
        DPSparseLogisticRegression().fit(X, yc)


def test_sparse_estimators_accept_csr_and_match_dense():
    X, y, _, _ = sparse_regression(n=300, p=30, seed=6)
    X[np.abs(X) < 1.0] = 0.0
    Xs = sp.csr_matrix(X)
    kw = dict(bounds_y=(-4, 4), data_norm=10.0, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ClippingWarning)
        a = DPSparseLinearRegression(3, **kw).fit(X, y)
        b = DPSparseLinearRegression(3, **kw).fit(Xs, y)
    np.testing.assert_allclose(a.coef_, b.coef_, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(a.predict(X), b.predict(Xs), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("Est", [DPSparseLinearRegression, DPSparseLogisticRegression])
def test_sklearn_estimator_checks(Est):
    from sklearn.utils.estimator_checks import check_estimator

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for est in (Est(random_state=0), Est(solver="two_stage", random_state=0)):
            check_estimator(est, expected_failed_checks=sample_weight_failures(est))


def test_sparse_fits_are_recorded_in_a_ledger():
    from dp_sklearn import PrivacyLedger

    X, y, _, _ = sparse_regression(n=300, p=20, seed=7)
    ledger = PrivacyLedger(max_epsilon=3.0, delta=1e-5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ClippingWarning)
        kw = dict(delta=1e-7, ledger=ledger, random_state=0)
        DPSparseLinearRegression(3, epsilon=1.0, bounds_y=(-4, 4), **kw).fit(X, y)
        DPSparseLinearRegression(3, epsilon=1.0, bounds_y=(-4, 4), solver="two_stage", **kw).fit(X, y)
        DPSparseLogisticRegression(3, epsilon=0.5, **kw).fit(X, (y > 0).astype(int))
    assert len(ledger) == 3
    assert ledger.total_epsilon() <= 2.5 * (1 + 1e-3)
