"""The blockwise normalization (dp_sklearn/_blockwise.py, issue 11): one copy of X per fit, sparse-aware
fitting (CSR input is never densified, and peak memory stays small), block boundaries that change
nothing."""

import tracemalloc
import warnings

import numpy as np
import pytest
import scipy.sparse as sp

from dp_sklearn import (ClippingWarning, DPLasso, DPLogisticRegression, DPSparseLinearRegression,
                        DPSparseLogisticRegression, _blockwise)
from dp_sklearn._blockwise import clip_block_l2, normalize_dense
from dp_sklearn._data import normalize_X


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


# ------------------------------------------------------------------------------
# Issue 11: one copy of X per fit (blockwise normalization), the large-n sampled default of noisy_gd.


RNG = np.random.default_rng(0)


X_DENSE = RNG.normal(size=(3000, 7)) * np.exp(RNG.normal(size=(3000, 1)))  # rows of very different norms


def _norm(X, ord_=2, intercept=True):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ClippingWarning)
        return normalize_X(X, 2.0, ord_, intercept)[0]


def _dense(M):
    return M.toarray() if sp.issparse(M) else M


@pytest.mark.parametrize("ord_", [2, np.inf])
@pytest.mark.parametrize("sparse", [False, True])
def test_block_boundaries_do_not_change_the_result(monkeypatch, ord_, sparse):
    X = sp.csr_matrix(np.where(np.abs(X_DENSE) > 0.7, X_DENSE, 0.0)) if sparse else X_DENSE
    whole = _dense(_norm(X, ord_))
    monkeypatch.setattr(_blockwise, "BLOCK_ENTRIES", 50)  # hundreds of blocks, some rows split across none
    blocks = _dense(_norm(X, ord_))
    np.testing.assert_array_equal(blocks, whole)
    assert (np.linalg.norm(blocks[:, :-1], axis=1) <= 1.0).all() if ord_ == 2 else np.abs(blocks).max() <= 1.0
    np.testing.assert_array_equal(blocks[:, -1], 1.0)


def test_float32_input_gives_the_float64_result():
    X32 = X_DENSE.astype(np.float32)
    np.testing.assert_array_equal(_norm(X32), _norm(X32.astype(np.float64)))
    Xs = sp.csr_matrix(np.where(np.abs(X32) > 0.7, X32, 0))
    np.testing.assert_array_equal(_norm(Xs).toarray(), _norm(Xs.astype(np.float64)).toarray())


def test_non_canonical_csr_gives_the_canonical_result():
    X = sp.csr_matrix(np.where(np.abs(X_DENSE) > 0.7, X_DENSE, 0.0))
    coo = X.tocoo()
    half = coo.data / 2  # every entry stored twice, in reverse order, plus explicit zeros
    dup = sp.csr_matrix((np.r_[half, half, np.zeros(5)][::-1], (np.r_[coo.row, coo.row, np.arange(5)][::-1],
                                                                np.r_[coo.col, coo.col, np.zeros(5, int)][::-1])),
                        shape=X.shape)
    assert not _blockwise.is_canonical_csr(dup) and _blockwise.is_canonical_csr(X)
    out, ref = _norm(dup), _norm(X)
    np.testing.assert_allclose(out.toarray(), ref.toarray(), rtol=1e-15, atol=0)
    assert out.nnz == ref.nnz == X.nnz + X.shape[0]


@pytest.mark.parametrize("sparse", [False, True])
def test_normalization_allocates_about_one_copy_of_X(sparse):
    X = RNG.normal(size=(200_000, 50))  # 80 MB: the few MB of block temporaries are small beside it
    if sparse:
        cols = (np.arange(60) * 33 + RNG.integers(0, 33, size=(100_000, 60))).ravel()  # increasing in each row
        X = sp.csr_matrix((RNG.normal(size=cols.size), cols, np.arange(0, cols.size + 1, 60)), shape=(100_000, 2000))
    size = X.data.nbytes + X.indices.nbytes + X.indptr.nbytes if sparse else X.nbytes
    tracemalloc.start()
    try:
        _norm(X)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak <= 1.2 * size  # was about 5x X before issue 11


def test_dense_finiteness_test_is_exact_when_a_block_sum_overflows():
    """The block-sum test falls back to the entrywise test: huge finite entries pass, inf and NaN fail."""
    X = np.random.default_rng(3).normal(size=(300, 4))
    X[:3, 0] = 1e308  # finite entries whose block sum overflows
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no warning that depends on the data
        out = normalize_dense(X, 2.0, clip_block_l2, 1)
    assert np.isfinite(out[:, :4]).all() and (np.linalg.norm(out[:, :4], axis=1) <= 1.0).all()
    for bad in (np.inf, -np.inf, np.nan):
        Xb = X.copy()
        Xb[200, 2] = bad
        with pytest.raises(ValueError, match="NaN or infinity"):
            normalize_dense(Xb, 2.0, clip_block_l2, 1)


# ------------------------------------------------------------------------------
# Issue 22: the fused dense l2 kernel releases the values of the kernel it replaces.


def _reference_normalize_dense(X, B, n_extra, order):
    """:func:`normalize_dense` before issue 22 with the l2 kernel (copied as it was): finiteness by
    block sum, then :func:`clip_block_l2` in place on each block."""
    n, p = X.shape
    out = np.empty((n, p + n_extra), order=order)
    step = max(1, _blockwise.BLOCK_ENTRIES // max(p, 1))
    buf = np.empty((min(step, n), p)) if order == "F" else None
    for start in range(0, n, step):
        stop = min(start + step, n)
        V = out[start:stop, :p] if buf is None else buf[:stop - start]
        V[...] = X[start:stop]
        with np.errstate(over="ignore", invalid="ignore"):
            total = V.sum()
        if not np.isfinite(total) and not np.isfinite(V).all():
            raise ValueError("X contains NaN or infinity; clean or impute it first.")
        clip_block_l2(V, None, V.shape[0], 2.0 if B is None else B)
        if buf is not None:
            out[start:stop, :p] = V
    return out


@pytest.mark.parametrize("p", [1, 7, 8, 9, 20, 100, 129, 300])
def test_pairwise_sums_are_numpys_row_norms(p):
    V = np.random.default_rng(p).normal(size=(257, p)) * np.exp(np.random.default_rng(1).normal(size=(257, 1)))
    for block in (V, V[::2]):  # row-major blocks, as the kernels see them
        np.testing.assert_array_equal(np.sqrt(_blockwise._pairwise_sums((block * block).T)),
                                      np.linalg.norm(block, axis=1))


def _rows_at_the_bound(n, p, B, seed):
    """Rows of very different norms, some exactly at, just above and just below the bound, zeros."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p)) * np.exp(rng.normal(size=(n, 1)))
    unit = X[:40] / np.linalg.norm(X[:40], axis=1, keepdims=True)
    X[:40] = unit * (B * (1 + np.linspace(-4e-16, 4e-16, 40)))[:, None]
    X[40:43] = 0.0
    return X


@pytest.mark.parametrize("p", [1, 3, 20, 100, 130])
@pytest.mark.parametrize("order", ["C", "F"])
@pytest.mark.parametrize("n_extra", [0, 1])
def test_fused_l2_kernel_equals_the_block_kernel(p, order, n_extra, monkeypatch):
    """Bit for bit, with several blocks and a ragged last one; float64 read in place, float32 and
    column-major input through the cast buffer, and bounds outside the direct path's range."""
    monkeypatch.setattr(_blockwise, "BLOCK_ENTRIES", 2000)
    n = 1500
    for B in (np.sqrt(p), 0.5, 1e-150, 1e150):
        X = _rows_at_the_bound(n, p, B, p) * (1e-145 if B == 1e-150 else 1.0)
        f32 = [X.astype(np.float32)] if 1e-30 < B < 1e30 else []  # float32 holds these values
        for inp in (X, *f32, np.asfortranarray(X), X[::-1]):
            got = normalize_dense(inp, B, clip_block_l2, n_extra, order=order)
            ref = _reference_normalize_dense(inp, B, n_extra, order)
            np.testing.assert_array_equal(got[:, :p], ref[:, :p])
            assert got.flags.f_contiguous if order == "F" else got.flags.c_contiguous
    assert (np.linalg.norm(np.ascontiguousarray(got[:, :p]), axis=1) <= 1.0).all()  # the push-back's norm


def test_fused_l2_kernel_falls_back_on_overflowing_rows():
    """A block whose squared norms overflow takes the scaled kernel; its values are the old ones."""
    X = np.random.default_rng(4).normal(size=(500, 5))
    X[100, 2] = 1e200  # finite, its square overflows
    for order in "CF":
        np.testing.assert_array_equal(normalize_dense(X, 3.0, clip_block_l2, 1, order=order)[:, :5],
                                      _reference_normalize_dense(X, 3.0, 1, order)[:, :5])
