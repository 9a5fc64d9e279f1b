"""The distributed engine (issue 11, item 5): dask input on a LocalCluster of processes.

The mechanism is unchanged (see ``dp_sklearn._dask_design``): with the same
``random_state`` a fit on a chunked dask array equals the in-memory fit up to the
rounding of the block sums; the statistical audits of the in-memory mechanisms cover it.
"""

import subprocess
import sys
import warnings

import numpy as np
import pytest

dask = pytest.importorskip("dask")
da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")

from dp_sklearn import (ClippingWarning, DPLasso, DPLogisticRegression, DPRidge, DPSparseLinearRegression,  # noqa: E402
                        PrivacyLedger)
from dp_sklearn._dask_design import dask_problem, normalize_dask  # noqa: E402
from dp_sklearn._data import normalize_X  # noqa: E402
from dp_sklearn._losses import LogisticLoss  # noqa: E402

N, P, CHUNK = 3000, 5, 200  # 15 blocks of rows over 2 workers
RTOL = 1e-6


@pytest.fixture(scope="module")
def client():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the cluster's own start-up chatter
        cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                           dashboard_address=None, silence_logs=50)
        cl = distributed.Client(cluster)
    yield cl
    cl.close()
    cluster.close()


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(N, P))
    X[:7] *= 40.0  # rows beyond the public data_norm
    w = rng.normal(size=P)
    y = X @ w / 10 + rng.normal(size=N)
    labels = np.digitize(y, [-0.5, 0.5])  # three classes
    return X, y, labels


def _dask(a):
    return da.from_array(a, chunks=(CHUNK,) + a.shape[1:])


def _max_rel(a, b):
    a, b = np.ravel(a), np.ravel(b)
    return float(np.max(np.abs(a - b)) / max(np.max(np.abs(a)), 1e-300))


CASES = {
    "ridge_noisy_gd": (DPRidge, {"solver": "noisy_gd", "max_iter": 40, "bounds_y": (-4, 4)}, "y"),
    "ridge_noisy_gd_gram": (DPRidge, {"solver": "noisy_gd", "max_iter": 40, "bounds_y": (-4, 4), "clip_norm": 10.0},
                            "y"),  # C never binds
    "ridge_auto_bounds": (DPRidge, {"solver": "noisy_gd", "max_iter": 40, "data_norm": "auto"}, "y"),
    "ridge_default": (DPRidge, {"bounds_y": (-4, 4)}, "y"),  # solver="auto"
    "ridge_noisy_newton": (DPRidge, {"solver": "noisy_newton", "bounds_y": (-4, 4)}, "y"),
    "logistic_default": (DPLogisticRegression, {}, "binary"),
    "logistic_noisy_newton": (DPLogisticRegression, {"solver": "noisy_newton"}, "binary"),
    "logistic_multinomial_newton": (DPLogisticRegression, {"solver": "noisy_newton"}, "labels"),
    "ridge_ssp": (DPRidge, {"solver": "ssp", "bounds_y": (-4, 4)}, "y"),
    "lasso_frank_wolfe": (DPLasso, {"max_iter": 200, "bounds_y": (-4, 4)}, "y"),
    "sparse_linear_ight": (DPSparseLinearRegression, {"n_nonzero_coefs": 3, "max_iter": 20, "bounds_y": (-4, 4)}, "y"),
    "logistic_noisy_gd": (DPLogisticRegression, {"solver": "noisy_gd", "max_iter": 30}, "binary"),
    "logistic_multinomial": (DPLogisticRegression, {"solver": "noisy_gd", "max_iter": 20}, "labels"),
    "logistic_l1_frank_wolfe": (DPLogisticRegression, {"penalty": "l1", "max_iter": 30}, "binary"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_same_coefficients_as_in_memory(client, data, case):
    Est, params, target = CASES[case]
    X, y, labels = data
    t = {"y": y, "binary": (y > 0).astype(int), "labels": labels}[target]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # delta vs 1/n
        mem = Est(random_state=3, **params).fit(X, t)
        dist = Est(random_state=3, **params).fit(_dask(X), _dask(t))
    assert dist.n_iter_ == mem.n_iter_ and dist.dp_event_ == mem.dp_event_ and dist.solver_ == mem.solver_
    assert _max_rel(mem.coef_, dist.coef_) <= RTOL
    assert np.allclose(dist.intercept_, mem.intercept_, rtol=RTOL, atol=RTOL * np.max(np.abs(mem.coef_)))
    assert _max_rel(mem.coef_, Est(random_state=4, **params).fit(X, t).coef_) > 1e-3  # the seed matters: can fail


def test_no_array_is_brought_to_the_client(client, data, monkeypatch):
    X, y, _ = data

    def guard(method):
        def refuse_n_sized(self, *args, **kwargs):
            if self.ndim and self.shape[0] >= CHUNK:  # scalars (the private mean) and p-sized results pass
                raise AssertionError(f"a dask array of shape {self.shape} was brought to the client")
            return method(self, *args, **kwargs)
        return refuse_n_sized

    Xd, yd = _dask(X), _dask(y)
    monkeypatch.setattr(da.Array, "__array__", guard(da.Array.__array__))
    monkeypatch.setattr(da.Array, "compute", guard(da.Array.compute))
    for est in (DPRidge(max_iter=10, bounds_y=(-4, 4)), DPLasso(max_iter=50, bounds_y=(-4, 4))):
        assert np.all(np.isfinite(est.fit(Xd, yd).coef_))
    with pytest.raises(AssertionError, match="brought to the client"):  # the check can fail
        np.asarray(Xd)


def test_dataframe_input_keeps_feature_names(client, data):
    dd = pytest.importorskip("dask.dataframe")
    pd = pytest.importorskip("pandas")
    X, y, _ = data
    frame = pd.DataFrame(X, columns=[f"f{j}" for j in range(P)])
    params = {"max_iter": 20, "bounds_y": (-4, 4), "random_state": 0}
    mem = DPRidge(**params).fit(frame, y)
    dist = DPRidge(**params).fit(dd.from_pandas(frame, npartitions=6), dd.from_pandas(pd.Series(y), npartitions=6))
    assert list(dist.feature_names_in_) == list(frame.columns)
    assert _max_rel(mem.coef_, dist.coef_) <= RTOL


def test_blockwise_clipping_and_no_worker_holds_the_design(client, data):
    X, y, _ = data
    design, x_norm, x_inf = normalize_dask(_dask(X), 2.0, 2, True)
    problem = dask_problem(design, _dask(np.sign(y)), LogisticLoss(), x_norm, x_inf, 0.0)
    theta = np.linspace(-1.0, 1.0, P + 1)
    with warnings.catch_warnings(record=True) as caught:  # clipping is never reported (docs/privacy.md)
        warnings.simplefilter("always")
        g = problem.loss.clipped_gradient_sum(problem.X, problem.y, theta, None, 0.3)
    assert caught == []
    Xt, _, _ = normalize_X(X, 2.0, 2, True)
    blocks = client.gather(list(design._persisted()))
    np.testing.assert_array_equal(np.vstack([b[0] for b in blocks]), Xt)  # the rows beyond 2.0 clipped identically
    expected = LogisticLoss().clipped_gradient_sum(Xt, np.sign(y), theta, np.linalg.norm(Xt, axis=1), 0.3)
    assert g.shape == (P + 1,) and _max_rel(expected, g) <= 1e-12
    keys = {b.key for b in design._persisted()}  # the persisted blocks, and what each worker holds of them
    held = [len(keys & set(on_worker)) for on_worker in client.has_what().values()]
    assert len(held) == 2 and sum(held) >= len(blocks) and max(held) < len(blocks)  # no worker holds them all


@pytest.mark.parametrize("params, match", [
    ({"solver": "output_perturbation"}, r"solver='output_perturbation' cannot run on dask input.*'noisy_gd'"),
    ({"solver": "objective_perturbation"}, "objective_perturbation' cannot run on dask"),
    ({"epsilon": np.inf}, "epsilon=inf"),
])
def test_clear_errors_before_any_reservation(client, data, params, match):
    X, y, _ = data
    ledger = PrivacyLedger(max_epsilon=10.0, delta=1e-3)
    with pytest.raises(ValueError, match=match):
        DPRidge(bounds_y=(-4, 4), ledger=ledger, **params).fit(_dask(X), _dask(y))
    assert ledger.total_epsilon() == 0.0 and not ledger.pending
    ledger.delete()


def test_bad_dask_data(client, data):
    X, y, _ = data
    Xn = X.copy()
    Xn[5, 1] = np.nan
    with pytest.raises(ValueError, match="NaN or infinity"):
        DPRidge(bounds_y=(-4, 4)).fit(_dask(Xn), _dask(y))
    with pytest.raises(ValueError, match="inconsistent numbers of samples"):
        DPRidge(bounds_y=(-4, 4)).fit(_dask(X), _dask(y[:-1]))


def test_library_imports_without_dask():
    code = "import sys, numpy as np, dp_sklearn; dp_sklearn.DPRidge(bounds_y=(0, 1), max_iter=5).fit(" \
           "np.ones((20, 2)), np.ones(20)); assert 'dask' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)


#: defaults (and public settings that keep them cheap) whose plan is the same with and without dask
DEFAULT_CASES = {
    # n = 5,000 x 5 in 4 chunks: full batches (DPRidge's "auto" takes noisy_newton here)
    "ridge_default": (5_000, DPRidge, {"bounds_y": (-6, 6)}, "y"),
    "lasso_default": (5_000, DPLasso, {"bounds_y": (-6, 6)}, "y"),
    "logistic_default": (5_000, DPLogisticRegression, {"max_iter": 100}, "binary"),
    # n = 50,000: the default (batch_size=None) plan of noisy_gd is Poisson-sampled (a public
    # max_iter keeps T short; binary logistic's "auto" takes noisy_newton, so noisy_gd is named);
    # and a user batch_size (Poisson-sampled) on two mechanisms
    "logistic_noisy_gd_sampled": (50_000, DPLogisticRegression, {"solver": "noisy_gd", "max_iter": 30}, "binary"),
    "ridge_noisy_gd_sampled": (50_000, DPRidge, {"solver": "noisy_gd", "max_iter": 30, "bounds_y": (-6, 6)}, "y"),
    "lasso_mirror_descent_batch_size": (5_000, DPLasso, {"solver": "mirror_descent", "max_iter": 30,
                                                          "batch_size": 500, "bounds_y": (-6, 6)}, "y"),
    "logistic_batch_size": (5_000, DPLogisticRegression, {"max_iter": 30, "batch_size": 500}, "binary"),
    "multinomial_default_sampled": (50_000, DPLogisticRegression, {"max_iter": 20}, "labels"),
}


def _default_data(n):
    rng = np.random.default_rng(5)
    X = rng.normal(size=(n, 5))
    y = X @ np.array([1.0, -1.0, 0.5, 0.0, 2.0]) + rng.normal(size=n)
    return X, {"y": y, "binary": (y > 0).astype(int), "labels": np.digitize(y, [-1.0, 1.0])}


def _check_same_fit(case, scheduler):
    """Same seed, same coefficients with and without dask: the same solver, T, noise and sampling plan.

    The Poisson-sampled cases fail on an engine that plans full batches for dask input
    (another event, other coefficients); the sampled indices are drawn on the client from
    the fit's Generator in the in-memory order, so the coefficients agree to rounding.
    """
    n, Est, params, target = DEFAULT_CASES[case]
    X, targets = _default_data(n)
    t = targets[target]
    chunks = n // 4  # 4 blocks of rows
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # delta vs 1/n
        mem = Est(random_state=7, **params).fit(X, t)
        with dask.config.set(scheduler=scheduler):
            dist = Est(random_state=7, **params).fit(da.from_array(X, chunks=chunks), da.from_array(t, chunks=chunks))
        other = Est(random_state=8, **params).fit(X, t)
    sampled = n == 50_000 or "batch_size" in params
    assert ("PoissonSampled" in repr(mem.dp_event_)) == sampled  # the plan this case is meant to cover
    assert dist.solver_ == mem.solver_ and dist.n_iter_ == mem.n_iter_ and dist.dp_event_ == mem.dp_event_
    assert _max_rel(mem.coef_, dist.coef_) <= 1e-10
    assert np.allclose(dist.intercept_, mem.intercept_, rtol=1e-10, atol=1e-10 * np.max(np.abs(mem.coef_)))
    assert _max_rel(mem.coef_, other.coef_) > 1e-3  # the seed matters: the comparison can fail


@pytest.mark.parametrize("case", sorted(DEFAULT_CASES))
def test_default_plan_is_the_in_memory_plan(case):
    """On the synchronous scheduler (the fast tier): the blocks are computed in this process."""
    _check_same_fit(case, "synchronous")


@pytest.mark.parametrize("case", sorted(DEFAULT_CASES))
def test_default_plan_is_the_in_memory_plan_on_a_cluster(client, case):
    """On a LocalCluster of 2 worker processes: each step's sums run on the workers holding the blocks."""
    _check_same_fit(case, client)


def test_sampled_sum_is_the_sum_over_the_sampled_rows(client, data):
    """The blockwise sum over a Poisson sample equals the in-memory sum over the same global rows."""
    X, y, _ = data
    design, x_norm, x_inf = normalize_dask(_dask(X), 2.0, 2, True)
    problem = dask_problem(design, _dask(np.sign(y)), LogisticLoss(), x_norm, x_inf, 0.0)
    theta = np.linspace(-1.0, 1.0, P + 1)
    Xt, _, _ = normalize_X(X, 2.0, 2, True)
    idx = np.array([0, 5, CHUNK - 1, CHUNK, 3 * CHUNK + 7, N - 1])  # block edges included; most blocks empty
    got = design.sampled_gradient_sum(problem.loss, theta, 0.3, idx)
    expected = LogisticLoss().clipped_gradient_sum(Xt[idx], np.sign(y)[idx], theta, np.linalg.norm(Xt[idx], axis=1),
                                                   0.3)
    assert _max_rel(expected, got) <= 1e-12
    shifted = idx - 1  # (index -1 is the last row)
    wrong = LogisticLoss().clipped_gradient_sum(Xt[shifted], np.sign(y)[shifted], theta,
                                                np.linalg.norm(Xt[shifted], axis=1), 0.3)
    assert _max_rel(wrong, got) > 1e-3  # an off-by-one in the block offsets would be caught
    np.testing.assert_array_equal(design.sampled_gradient_sum(problem.loss, theta, 0.3, np.zeros(0, dtype=int)),
                                  np.zeros(P + 1))


def test_predict_is_lazy_and_blockwise(client, data, monkeypatch):
    """Dask input to predict / predict_proba / decision_function: a lazy dask array, X stays on the workers."""
    X, y, labels = data
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        reg = DPRidge(max_iter=20, bounds_y=(-4, 4), random_state=0).fit(X, y)
        clf = DPLogisticRegression(max_iter=20, random_state=0).fit(X, labels)  # three classes
    Xd = _dask(X)
    computed = []
    monkeypatch.setattr(da.Array, "__array__", lambda self, *a, **k: computed.append(self.shape) or np.zeros(0))
    outs = {"reg.predict": reg.predict(Xd), "clf.predict": clf.predict(Xd),
            "clf.proba": clf.predict_proba(Xd), "clf.log_proba": clf.predict_log_proba(Xd),
            "clf.decision": clf.decision_function(Xd)}
    assert computed == []  # nothing was brought to the client to build them
    monkeypatch.undo()
    assert all(isinstance(o, da.Array) and o.chunks[0] == Xd.chunks[0] for o in outs.values())
    np.testing.assert_allclose(outs["reg.predict"].compute(), reg.predict(X), rtol=1e-12)
    np.testing.assert_array_equal(outs["clf.predict"].compute(), clf.predict(X))
    np.testing.assert_allclose(outs["clf.proba"].compute(), clf.predict_proba(X), rtol=1e-12)
    np.testing.assert_allclose(outs["clf.log_proba"].compute(), clf.predict_log_proba(X), rtol=1e-12)
    np.testing.assert_allclose(outs["clf.decision"].compute(), clf.decision_function(X), rtol=1e-12)
    assert reg.score(Xd, _dask(y)) == pytest.approx(reg.score(X, y), rel=1e-12)
    assert clf.score(Xd, _dask(labels)) == pytest.approx(clf.score(X, labels))
    with pytest.raises(ValueError, match="expecting 5 features"):
        reg.predict(_dask(X[:, :3]))


def test_predict_dataframe_checks_feature_names(client, data):
    dd = pytest.importorskip("dask.dataframe")
    pd = pytest.importorskip("pandas")
    X, y, _ = data
    frame = pd.DataFrame(X, columns=[f"f{j}" for j in range(P)])
    reg = DPRidge(max_iter=20, bounds_y=(-4, 4), random_state=0).fit(frame, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # names are checked once, not warned about per block
        pred = reg.predict(dd.from_pandas(frame, npartitions=4)).compute(scheduler="sync")
    np.testing.assert_allclose(pred, reg.predict(frame), rtol=1e-12)
    renamed = frame.rename(columns={"f0": "other"})
    with pytest.raises(ValueError, match="feature names"):
        reg.predict(dd.from_pandas(renamed, npartitions=4))


def test_finiteness_check_is_exact_when_the_sum_overflows():
    """The fast finite-sum test falls back to the entrywise test: huge finite entries pass, inf and NaN fail."""
    rng = np.random.default_rng(2)
    X, y = rng.normal(size=(400, 3)), rng.normal(size=400)
    X[:5, 0] = 1e308  # finite entries whose block sum overflows
    with dask.config.set(scheduler="synchronous"):
        est = DPRidge(bounds_y=(-4, 4), data_norm=2.0, random_state=0).fit(da.from_array(X, chunks=100),
                                                                           da.from_array(y, chunks=100))
        assert np.all(np.isfinite(est.coef_))
        for bad in (np.inf, np.nan):
            Xb = X.copy()
            Xb[250, 1] = bad
            with pytest.raises(ValueError, match="NaN or infinity"):
                DPRidge(bounds_y=(-4, 4)).fit(da.from_array(Xb, chunks=100), da.from_array(y, chunks=100))
