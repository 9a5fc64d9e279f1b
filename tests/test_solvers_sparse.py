"""DP-IGHT (Wang & Gu 2019, Algorithm 1), the two-stage solver and the sparse estimators.

Each mechanism: (a) calibration against a closed form, (b) a statistical privacy audit
with a negative control (the same solver with its noise scaled down), (c) a utility
test with a fixed seed, (d) epsilon = inf against the non-private algorithm (SPEC P9).
"""

import math
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from dp_accounting import dp_event
from scipy.stats import norm

from dp_sklearn import ClippingWarning, DPSparseLinearRegression, DPSparseLogisticRegression
from dp_sklearn._accounting import EpsilonDeltaDpEvent, composed_gaussian_noise_multiplier, zcdp_rho
from dp_sklearn.composition import epsilon_of_event
from dp_sklearn._data import Problem, normalize_X
from dp_sklearn._losses import SquaredLoss
from dp_sklearn.audit import audit_epsilon, glm_worst_case_pair
from dp_sklearn.solvers import SOLVERS, _common, _ight, _two_stage
from dp_sklearn.solvers._ight import L0Set, default_step_sizes, ight, paper_noise_multiplier
from dp_sklearn.solvers._two_stage import two_stage

EPS, DELTA = 1.0, 1e-5


def make_problem(X, y, loss=None, data_norm=1.0, ord_=2, fit_intercept=False):
    Xt, x_norm, x_inf = normalize_X(X, data_norm, ord_, fit_intercept)
    rn = (np.sqrt(np.asarray(Xt.multiply(Xt).sum(axis=1)).ravel()) if sp.issparse(Xt)
          else np.linalg.norm(Xt, axis=1))
    return Problem(Xt, y, loss or SquaredLoss(), x_norm, x_inf, rn, 0.0)


def analytic_gaussian_delta(eps, z1):
    """delta(eps) of one Gaussian release with multiplier z1 (Balle & Wang 2018, Thm 8)."""
    return norm.cdf(1 / (2 * z1) - eps * z1) - math.exp(eps) * norm.cdf(-1 / (2 * z1) - eps * z1)


def sparse_regression(n=2000, p=100, s=5, noise=0.1, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, p))
    theta = np.zeros(p)
    support = np.sort(rng.choice(p, s, replace=False))
    theta[support] = rng.choice([-1.0, 1.0], s) * rng.uniform(0.5, 1.0, s)
    y = X @ theta + noise * rng.standard_normal(n)
    return X, y, theta, support


# ---------------------------------------------------------------------------- L0Set


def test_l0set_hard_threshold_keeps_top_s_and_free_coordinates():
    v = np.array([0.1, -3.0, 2.0, 0.5, -0.2, 7.0])
    c = L0Set(2, n_free=1)
    np.testing.assert_array_equal(c.hard_threshold(v), [0, -3.0, 2.0, 0, 0, 7.0])
    np.testing.assert_array_equal(c.support(v), [1, 2])
    assert c.project is not None and c.name == "l0" and c.l2_radius() == np.inf
    # s >= number of thresholded coordinates: the identity
    np.testing.assert_array_equal(L0Set(5, n_free=1).hard_threshold(v), v)
    np.testing.assert_array_equal(L0Set(1).hard_threshold(v), [0, 0, 0, 0, 0, 7.0])
    for bad in (0, -1, 1.5, "3"):
        with pytest.raises(ValueError, match="n_nonzero_coefs"):
            L0Set(bad)


def test_registry_entries():
    assert SOLVERS["ight"].constraints == ("l0",) and not SOLVERS["ight"].pure_dp
    assert SOLVERS["two_stage"].constraints == ("l0",) and SOLVERS["two_stage"].pure_dp
    assert DPSparseLinearRegression()._allowed_solvers() == ["ight", "two_stage"]
    assert DPSparseLogisticRegression()._allowed_solvers() == ["ight", "two_stage"]


# ---------------------------------------------------------------------------- IGHT: calibration


@pytest.mark.parametrize("eps, delta, T", [(1.0, 1e-5, 1), (1.0, 1e-5, 20), (4.0, 1e-2, 12), (0.3, 1e-6, 50)])
def test_ight_tight_calibration_matches_analytic_gaussian(eps, delta, T):
    X, y, _, _ = sparse_regression(n=50, p=10)
    res = ight(make_problem(X, y, data_norm=10.0), L0Set(3), epsilon=eps, delta=delta,
               rng=np.random.default_rng(0), max_iter=T)
    z = res.noise_scale
    # T Gaussian steps of multiplier z = one Gaussian of multiplier z / sqrt(T).
    assert analytic_gaussian_delta(eps, z / math.sqrt(T)) == pytest.approx(delta, rel=1e-5)
    assert res.event == dp_event.SelfComposedDpEvent(dp_event.GaussianDpEvent(z), T)
    assert res.info["sigma"] == pytest.approx(2 * res.info["clip_norm"] * z)
    assert epsilon_of_event(res.event, delta) <= eps * (1 + 1e-3)


def test_ight_paper_calibration_is_wang_gu_zcdp():
    eps, delta, T = 2.0, 1e-5, 16
    L = math.log(1 / delta)
    rho = (math.sqrt(L + eps) - math.sqrt(L)) ** 2
    assert rho + 2 * math.sqrt(rho * L) == pytest.approx(eps)  # Remark 5.3 / Lemma 3.4
    z = paper_noise_multiplier(eps, delta, T)
    # T steps of a sensitivity-Delta Gaussian with sigma = z Delta are T / (2 z^2)-zCDP (Lemma 3.6, 3.7).
    assert T / (2 * z**2) == pytest.approx(rho)
    X, y, _, _ = sparse_regression(n=50, p=10)
    res = ight(make_problem(X, y, data_norm=10.0), L0Set(3), epsilon=eps, delta=delta,
               rng=np.random.default_rng(0), max_iter=T, accounting="paper")
    assert res.noise_scale == pytest.approx(z)
    assert res.noise_scale >= composed_gaussian_noise_multiplier(eps, delta, T)


def test_ight_added_noise_has_the_calibrated_scale():
    # Zero features: the clipped gradient is 0, so theta_1 = -eta * u / n exposes the noise u.
    n, p = 40, 4000
    X, y = np.zeros((n, p)), np.ones(n)
    prob = make_problem(X, y, data_norm=1.0)
    res = ight(prob, L0Set(p), epsilon=EPS, delta=DELTA, rng=np.random.default_rng(1), max_iter=1,
               clip_norm=0.3)
    u = -res.coef * n / res.info["step_size"]
    assert np.std(u) == pytest.approx(2 * 0.3 * res.noise_scale, rel=0.05)
    assert abs(np.mean(u)) < 0.1 * np.std(u)


# ---------------------------------------------------------------------------- IGHT: audit


def _ight_mechanism(X, y, rng):
    return ight(make_problem(X, y), L0Set(2), epsilon=EPS, delta=DELTA, rng=rng, max_iter=1).coef


def test_ight_audit_calibrated_passes():
    D, D_prime = glm_worst_case_pair(10, 2)
    res = audit_epsilon(_ight_mechanism, D, D_prime, n_samples=4000, delta=DELTA, random_state=0)
    assert res.epsilon_lower <= EPS


def test_ight_audit_catches_undernoised(monkeypatch):
    real = _common.composed_gaussian_noise_multiplier
    monkeypatch.setattr(_common, "composed_gaussian_noise_multiplier", lambda e, d, T: real(e, d, T) / 8)
    D, D_prime = glm_worst_case_pair(10, 2)
    res = audit_epsilon(_ight_mechanism, D, D_prime, n_samples=4000, delta=DELTA, random_state=0)
    assert res.epsilon_lower > EPS


# ---------------------------------------------------------------------------- IGHT: utility, epsilon = inf


def reference_ight(X, y, s, eta, T):
    """Textbook IGHT (Jain, Tewari & Kar 2014) for (1/2n)||X theta - y||^2, in numpy."""
    theta = np.zeros(X.shape[1])
    for _ in range(T):
        v = theta - eta * (X.T @ (X @ theta - y)) / X.shape[0]
        keep = np.argsort(-np.abs(v))[:s]
        theta = np.zeros_like(v)
        theta[keep] = v[keep]
    return theta


def test_ight_epsilon_inf_is_nonprivate_ight():
    X, y, _, _ = sparse_regression(n=300, p=40, s=4, seed=3)
    prob = make_problem(X, y / 10, data_norm=3 * math.sqrt(40))
    c = L0Set(4)
    res = ight(prob, c, epsilon=np.inf, delta=DELTA, rng=np.random.default_rng(0), max_iter=30, clip_norm=1e9)
    assert isinstance(res.event, dp_event.NonPrivateDpEvent) and res.epsilon == np.inf
    eta = default_step_sizes(prob, c)
    assert np.all(eta == eta[0])
    ref = reference_ight(prob.X, prob.y, 4, eta[0], 30)
    np.testing.assert_allclose(res.coef, ref, rtol=1e-10, atol=1e-12)


def test_ight_utility_fixed_seed():
    X, y, theta, support = sparse_regression(seed=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ClippingWarning)
        m = DPSparseLinearRegression(5, epsilon=4.0, bounds_y=(-4, 4), data_norm=1.5 * math.sqrt(100),
                                     random_state=0).fit(X, y)
    assert np.count_nonzero(m.coef_) <= 5
    assert len(set(np.flatnonzero(m.coef_)) & set(support)) >= 4
    assert np.linalg.norm(m.coef_ - theta) / np.linalg.norm(theta) < 0.3
    assert abs(m.intercept_) < 0.2


def test_sparse_logistic_utility_and_epsilon_inf():
    rng = np.random.default_rng(1)
    n, p = 3000, 60
    X = rng.standard_normal((n, p))
    w = np.zeros(p)
    w[[3, 17, 42]] = [2.0, -2.0, 1.5]
    y = (rng.random(n) < 1 / (1 + np.exp(-(X @ w + 0.5)))).astype(int)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ClippingWarning)
        m = DPSparseLogisticRegression(3, epsilon=3.0, random_state=0).fit(X, y)
        m_inf = DPSparseLogisticRegression(3, epsilon=np.inf, random_state=0).fit(X, y)
    assert m.coef_.shape == (1, p) and m.intercept_.shape == (1,)
    assert set(np.flatnonzero(m.coef_[0])) == {3, 17, 42}
    assert m.score(X, y) > 0.8
    assert set(np.flatnonzero(m_inf.coef_[0])) == {3, 17, 42}
    assert isinstance(m_inf.dp_event_, dp_event.NonPrivateDpEvent) and m_inf.epsilon_ == np.inf
    proba = m.predict_proba(X[:5])
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    np.testing.assert_array_equal(m.predict(X[:5]), m.classes_[(proba[:, 1] > 0.5).astype(int)])


# ---------------------------------------------------------------------------- two-stage


def test_two_stage_selection_calibration():
    X, y, _, _ = sparse_regression(n=200, p=30, seed=2)
    prob = make_problem(X, y / 5, data_norm=3 * math.sqrt(30))
    eps, delta = 2.0, 1e-5
    eps1 = _two_stage.SELECTION_SHARE * eps
    rho1 = zcdp_rho(eps1, delta / 2)
    # zCDP closed form (Bun & Steinke 2016): the RDP conversion is at least as tight.
    assert rho1 + 2 * math.sqrt(rho1 * math.log(2 / delta)) >= eps1
    for s in (10, 2):
        res = two_stage(prob, L0Set(s), epsilon=eps, delta=delta, rng=np.random.default_rng(0))
        paper = two_stage(prob, L0Set(s), epsilon=eps, delta=delta, rng=np.random.default_rng(0),
                          accounting="paper")
        # paper: s pure eps0-exponential mechanisms, basic composition.
        assert paper.noise_scale == pytest.approx(eps1 / s)
        assert paper.event.events[0] == dp_event.SelfComposedDpEvent(EpsilonDeltaDpEvent(eps1 / s, 0.0), s)
        # tight: s exponential mechanisms with parameter eps0 are s eps0^2 / 8-zCDP (bounded
        # range), unless basic composition is better (few selections).
        assert res.noise_scale == pytest.approx(max(math.sqrt(8 * rho1 / s), eps1 / s))
        assert res.noise_scale >= paper.noise_scale
        if s == 10:
            assert res.info["selection_rho"] == rho1
            assert res.event.events[0] == EpsilonDeltaDpEvent(eps1, delta / 2)
        else:
            assert res.info["selection_rho"] is None
        assert res.info["selection_sensitivity"] == 2 * prob.x_inf
        for r in (res, paper):
            assert epsilon_of_event(r.event, delta) <= eps * (1 + 1e-3)
            assert np.count_nonzero(r.coef) <= s
    pure = two_stage(prob, L0Set(4), epsilon=eps, delta=0.0, rng=np.random.default_rng(0))
    assert pure.delta == 0.0 and pure.noise_scale == pytest.approx(eps1 / 4)


def _selection_pair():
    """Replace-one pair under |x_j| <= 1 whose score gap u_1 - u_2 moves by the full 2 Delta."""
    (X, y), _ = glm_worst_case_pair(10, 2)
    X[:-1], y[:-1], y[-1] = 0.5, 0.5, 1.0
    X_prime = X.copy()
    X[-1], X_prime[-1] = [1.0, -1.0], [-1.0, 1.0]
    return (X, y), (X_prime, y.copy())


def _two_stage_mechanism(X, y, rng):
    prob = make_problem(X, y, ord_=np.inf)
    return two_stage(prob, L0Set(1), epsilon=EPS, delta=DELTA, rng=rng, tol=1e-6).coef


def _selected_first(out):
    return (out[:, 0] != 0).astype(float)


def test_two_stage_audit_calibrated_passes():
    D, D_prime = _selection_pair()
    for stat in (_selected_first, None):
        res = audit_epsilon(_two_stage_mechanism, D, D_prime, n_samples=2000, delta=DELTA, random_state=0,
                            statistic=stat)
        assert res.epsilon_lower <= EPS


def test_two_stage_audit_catches_undernoised_selection(monkeypatch):
    # Gumbel noise scaled down 16x (rho x 256). On a symmetric two-candidate pair the
    # selection realizes eps0 / 2 of its eps0 budget, hence 16x rather than 8x.
    real = _two_stage.zcdp_rho
    monkeypatch.setattr(_two_stage, "zcdp_rho", lambda e, d: 256 * real(e, d))
    D, D_prime = _selection_pair()
    res = audit_epsilon(_two_stage_mechanism, D, D_prime, n_samples=2000, delta=DELTA, random_state=0,
                        statistic=_selected_first)
    assert res.epsilon_lower > EPS


def test_two_stage_utility_and_epsilon_inf():
    X, y, theta, support = sparse_regression(n=3000, p=50, s=3, seed=4)
    kw = dict(data_norm=3.0, data_norm_ord=np.inf, bounds_y=(-4, 4), solver="two_stage", random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ClippingWarning)
        m = DPSparseLinearRegression(3, epsilon=5.0, **kw).fit(X, y)
        m_inf = DPSparseLinearRegression(3, epsilon=np.inf, **kw).fit(X, y)
    assert set(np.flatnonzero(m.coef_)) == set(support)
    assert set(np.flatnonzero(m_inf.coef_)) == set(support)
    assert np.linalg.norm(m_inf.coef_ - theta) < 0.05
    assert m.score(X, y) > 0.2


# ---------------------------------------------------------------------------- estimators


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
            check_estimator(est)


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
