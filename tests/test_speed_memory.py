"""Issue 11: one copy of X per fit (blockwise normalization), the large-n sampled default of noisy_gd."""

import tracemalloc
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from dp_accounting.privacy_accountant import NeighboringRelation

from dp_sklearn import ClippingWarning, DPLogisticRegression
from dp_sklearn import _blockwise
from dp_sklearn._data import normalize_X
from dp_sklearn._losses import LogisticLoss
from dp_sklearn.composition import neighboring_relation
from dp_sklearn.solvers._common import _sampled_clipped_sum, poisson_sample
from dp_sklearn.solvers._common import MIN_BATCH, default_sampling_rate

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


def test_sampled_sum_in_chunks_equals_one_gather():
    X = np.c_[X_DENSE / 40, np.ones(3000)]
    y = np.where(RNG.random(3000) < 0.5, 1.0, -1.0)

    class P:
        pass

    problem = P()
    problem.X, problem.y, problem.row_norms = X, y, np.linalg.norm(X, axis=1)
    problem.loss = LogisticLoss()
    theta = RNG.normal(size=8)
    idx = poisson_sample(np.random.default_rng(1), 3000, 0.3)
    ref = problem.loss.clipped_gradient_sum(X[idx], y[idx], theta, problem.row_norms[idx], 0.5)
    np.testing.assert_allclose(_sampled_clipped_sum(problem, theta, 0.5, idx, block_entries=64), ref, rtol=1e-12)


def test_poisson_sample_has_the_bernoulli_law():
    rng = np.random.default_rng(0)
    counts = np.zeros(1000)
    sizes = []
    for _ in range(2000):
        idx = poisson_sample(rng, 1000, 0.005)
        assert np.all(np.diff(idx) > 0)
        counts[idx] += 1
        sizes.append(idx.size)
    assert abs(np.mean(sizes) - 5.0) < 0.25 and abs(np.var(sizes) - 5 * 0.995) < 0.6  # Binomial(1000, 0.005)
    assert abs(counts.mean() - 10.0) < 0.5 and counts.std() < 4.5  # every record with probability q


def test_default_sampling_rate_switches_only_at_large_n():
    assert default_sampling_rate(30_000, 1000, 1.0, 1e-5) == 1.0
    assert default_sampling_rate(10**6, 1000, 1.0, 1e-6) == pytest.approx(MIN_BATCH / 10**6)
    assert default_sampling_rate(10**6, 1000, np.inf, 1e-6) == 1.0


def test_large_n_default_plan_is_poisson_sampled_and_batch_size_n_forces_full_batches():
    X = RNG.normal(size=(60_000, 3))
    y = (X[:, 0] > 0).astype(int)
    est = DPLogisticRegression(solver="noisy_gd", max_iter=20, random_state=0, data_norm=3.0).fit(X, y)
    assert "PoissonSampled" in repr(est.dp_event_) and neighboring_relation(est.dp_event_) == NeighboringRelation.REPLACE_ONE
    full = DPLogisticRegression(solver="noisy_gd", max_iter=20, random_state=0, data_norm=3.0,
                                batch_size=60_000).fit(X, y)
    assert "PoissonSampled" not in repr(full.dp_event_)
    assert abs(est.score(X, y) - full.score(X, y)) < 0.02


def test_batch_size_full_forces_full_batches_and_the_search_uses_it():
    from dp_sklearn import DPGridSearchCV

    X = RNG.normal(size=(60_000, 3))
    y = (X[:, 0] > 0).astype(int)
    full = DPLogisticRegression(solver="noisy_gd", max_iter=20, random_state=0, data_norm=3.0,
                                batch_size="full").fit(X, y)
    same = DPLogisticRegression(solver="noisy_gd", max_iter=20, random_state=0, data_norm=3.0,
                                batch_size=60_000).fit(X, y)
    assert "PoissonSampled" not in repr(full.dp_event_) and full.dp_event_ == same.dp_event_
    assert np.array_equal(full.coef_, same.coef_)
    # Repeat-and-select is accounted for full-batch runs: candidates left at batch_size=None
    # fit full batches there (at this n the default plan would be Poisson-sampled and refused).
    search = DPGridSearchCV(DPLogisticRegression(solver="noisy_gd", max_iter=5, data_norm=3.0), {"C": [0.1, 1.0]},
                            epsilon=2.0,
                            delta=1e-6, random_state=0).fit(X, y)
    assert "PoissonSampled" not in repr(search.dp_event_)
    assert search.best_estimator_.batch_size == "full"
    with pytest.raises(ValueError, match="subsampled"):
        DPGridSearchCV(DPLogisticRegression(max_iter=5, data_norm=3.0), {"batch_size": [1000]}, epsilon=2.0,
                       delta=1e-6, random_state=0).fit(X, y)
