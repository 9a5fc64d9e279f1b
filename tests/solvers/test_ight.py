"""DP-IGHT (Wang & Gu 2019, Algorithm 1) and its l0 set: calibration against the analytic Gaussian and
the paper's zCDP, added-noise scale, audit with negative control, epsilon = inf, utility."""

import math
import warnings

import numpy as np
import pytest
from dp_accounting import dp_event

from dp_sklearn import ClippingWarning, DPSparseLinearRegression, DPSparseLogisticRegression
from dp_sklearn._accounting import composed_gaussian_noise_multiplier
from dp_sklearn.composition import epsilon_of_event
from dp_sklearn.solvers._ight import L0Set, default_step_sizes, ight, paper_noise_multiplier

from solver_helpers import DELTA, EPS, PAPER_C, PAPER_DELTA, PAPER_EPS, PAPER_T, analytic_gaussian_delta, make_problem, paper_sigma, solver_audit, solver_mechanism, sparse_regression, undernoise_gaussian_steps


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


def test_paper_formula_ight(problem):
    n, C, eps, delta, T = problem.n, PAPER_C, PAPER_EPS, PAPER_DELTA, PAPER_T

    # Wang & Gu Theorem 5.2 with Remark 5.3's rho, replace-one sensitivity 2C / n:
    # sigma^2 = 2 T C^2 / (n^2 rho) on the mean gradient (twice the printed T G^2 / (n^2 rho)).
    L = math.log(1 / delta)
    rho = (math.sqrt(L + eps) - math.sqrt(L)) ** 2
    assert paper_sigma(problem, ight, L0Set(3)) / n == pytest.approx(math.sqrt(2 * T * C**2 / (n**2 * rho)))


def test_wang_gu_printed_sigma_is_two_rho_under_replace_one():
    # The printed sigma^2 = T G^2 / (n^2 rho) with the replace-one sensitivity 2G/n gives, by
    # their Lemma 3.6, rho_t = (2G/n)^2 / (2 sigma^2) = 2 rho / T per step: 2 rho in total.
    T, G, n, rho = 10, 1.0, 100, 0.3
    sigma2 = T * G**2 / (n**2 * rho)
    assert T * (2 * G / n) ** 2 / (2 * sigma2) == pytest.approx(2 * rho)


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


def test_ight_audit_calibrated_passes():
    solver_audit(solver_mechanism(ight, L0Set(2), max_iter=1), private=True)


def test_ight_audit_catches_undernoised(monkeypatch):
    undernoise_gaussian_steps(monkeypatch)
    solver_audit(solver_mechanism(ight, L0Set(2), max_iter=1), private=False)


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
