"""Sparse-aware fitting: CSR input is never densified, and peak memory stays small."""

import tracemalloc
import warnings

import numpy as np
import pytest
import scipy.sparse as sp

from dp_sklearn import (ClippingWarning, DPLasso, DPLogisticRegression, DPSparseLinearRegression,
                        DPSparseLogisticRegression)
from dp_sklearn._data import Problem, normalize_X
from dp_sklearn._losses import SquaredLoss
from dp_sklearn._sets import Unconstrained
from dp_sklearn.solvers._noisy_gd import noisy_gd


@pytest.fixture
def no_densify(monkeypatch):
    def refuse(self, *args, **kwargs):
        raise AssertionError("a sparse matrix was densified")

    for cls in (sp.csr_matrix, sp.csc_matrix, sp.coo_matrix, sp.csr_array, sp.csc_array, sp.coo_array):
        monkeypatch.setattr(cls, "toarray", refuse)
        monkeypatch.setattr(cls, "todense", refuse)


def _small_sparse(seed=0, n=400, p=300):
    rng = np.random.default_rng(seed)
    X = sp.random(n, p, density=0.02, format="csr", random_state=rng)
    X.data = rng.standard_normal(X.data.size)
    w = np.zeros(p)
    w[:4] = [2.0, -2.0, 1.5, 1.0]
    y = np.asarray(X @ w).ravel() + 0.05 * rng.standard_normal(n)
    return X, y


@pytest.mark.parametrize("make", [
    lambda: DPSparseLinearRegression(4, bounds_y=(-3, 3), data_norm=3.0, random_state=0),
    lambda: DPSparseLinearRegression(4, bounds_y=(-3, 3), data_norm=3.0, solver="two_stage", random_state=0),
    lambda: DPSparseLinearRegression(4, bounds_y=(-3, 3), data_norm=3.0, epsilon=np.inf),
    lambda: DPLasso(solver="mirror_descent", bounds_y=(-3, 3), data_norm=3.0, random_state=0),
], ids=["ight", "two_stage", "ight_nonprivate", "mirror_descent"])
def test_regressors_never_densify(make, no_densify):
    X, y = _small_sparse()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ClippingWarning)
        m = make().fit(X, y)
    assert np.all(np.isfinite(m.predict(X)))


@pytest.mark.parametrize("make", [
    lambda: DPSparseLogisticRegression(4, data_norm=3.0, random_state=0),
    lambda: DPSparseLogisticRegression(4, data_norm=3.0, solver="two_stage", random_state=0),
    lambda: DPLogisticRegression(solver="mirror_descent", data_norm=3.0, random_state=0),
    lambda: DPLogisticRegression(solver="frank_wolfe_gaussian", data_norm=3.0, random_state=0),
], ids=["ight", "two_stage", "mirror_descent", "frank_wolfe_gaussian"])
def test_classifiers_never_densify(make, no_densify):
    X, y = _small_sparse(1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ClippingWarning)
        m = make().fit(X, (y > 0).astype(int))
    assert m.predict(X).shape == (X.shape[0],)


def test_minibatch_noisy_gd_never_densifies(no_densify):
    X, y = _small_sparse(2)
    Xt, x_norm, x_inf = normalize_X(X, 3.0, 2, True)
    rn = np.sqrt(np.asarray(Xt.multiply(Xt).sum(axis=1)).ravel())
    prob = Problem(Xt, np.clip(y / 3, -1, 1), SquaredLoss(), x_norm, x_inf, rn, 0.0)
    res = noisy_gd(prob, Unconstrained(), epsilon=1.0, delta=1e-5, rng=np.random.default_rng(0), max_iter=5,
                   batch_size=40, l2_reg=1e-3)
    assert np.all(np.isfinite(res.coef))


def test_peak_memory_on_a_large_sparse_problem():
    """20000 x 50000 CSR at 0.5% density (5e6 nonzeros, 60 MB): dense would be 8 GB."""
    rng = np.random.default_rng(0)
    n, p = 20000, 50000
    X = sp.random(n, p, density=0.005, format="csr", random_state=rng)
    X.data = rng.standard_normal(X.data.size)
    y = np.asarray(X[:, :10] @ np.ones(10)).ravel() + 0.1 * rng.standard_normal(n)
    tracemalloc.start()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ClippingWarning)
            m = DPSparseLinearRegression(20, epsilon=1.0, data_norm=20.0, bounds_y=(-6, 6), random_state=0,
                                         max_iter=5).fit(X, y)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert m.coef_.shape == (p,) and np.count_nonzero(m.coef_) <= 20
    assert peak < 400e6, f"peak {peak / 1e6:.0f} MB"


@pytest.mark.parametrize("make", [
    lambda: DPLogisticRegression(penalty="l1", data_norm=3.0, max_iter=20, random_state=0),
    lambda: DPLogisticRegression(data_norm=3.0, max_iter=20, random_state=0),
    lambda: DPLogisticRegression(solver="mirror_descent", data_norm=3.0, max_iter=20, random_state=0),
], ids=["frank_wolfe", "noisy_gd", "mirror_descent"])
def test_peak_memory_of_a_csr_fit_is_one_clipped_copy(make):
    """Issue 11: a fit on CSR allocates at most 1.25 X.nbytes (the clipped copy; no CSC copy, no densifying).

    The margin over the clipped copy covers O(p) temporaries: the exact discrete samplers of
    the noise layer draw a p-vector per step by rejection in integer arrays (1.20-1.22 here).
    """
    rng = np.random.default_rng(0)
    X = sp.random(20000, 50000, density=0.005, format="csr", random_state=rng)
    y = (rng.random(X.shape[0]) > 0.5).astype(int)
    nbytes = X.data.nbytes + X.indices.nbytes + X.indptr.nbytes
    tracemalloc.start()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ClippingWarning)
            make().fit(X, y)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak <= 1.25 * nbytes, f"peak {peak / nbytes:.2f} x X.nbytes"  # frank_wolfe with a CSC copy: 2.07
