"""Private mirror descent (TTZ Algorithm 1) and Gaussian Frank-Wolfe (TTZ Algorithm 5).

Calibration against the analytic Gaussian closed form, statistical audits with
negative controls, utility with fixed seeds, and epsilon = inf against the
non-private iterations (SPEC P9).
"""

import math
import warnings

import numpy as np
import pytest
from dp_accounting import dp_event
from scipy.special import logsumexp
from scipy.stats import norm

from dp_sklearn import ClippingWarning, DPLasso, DPLogisticRegression, DPRidge
from dp_sklearn._data import Problem, normalize_X
from dp_sklearn._exact import minimize
from dp_sklearn._losses import SquaredLoss
from dp_sklearn._sets import L1Ball, L2Ball
from dp_sklearn.audit import audit_epsilon, glm_worst_case_pair
from dp_sklearn.solvers import SOLVERS, _common, _frank_wolfe_gaussian, _mirror_descent
from dp_sklearn.solvers._frank_wolfe import frank_wolfe
from dp_sklearn.solvers._frank_wolfe_gaussian import frank_wolfe_gaussian
from dp_sklearn.solvers._mirror_descent import mirror_descent

EPS, DELTA = 1.0, 1e-5


def make_problem(X, y, loss=None, data_norm=1.0, ord_=2, fit_intercept=False):
    Xt, x_norm, x_inf = normalize_X(X, data_norm, ord_, fit_intercept)
    return Problem(Xt, y, loss or SquaredLoss(), x_norm, x_inf, np.linalg.norm(Xt, axis=1), 0.0)


def analytic_gaussian_delta(eps, z1):
    return norm.cdf(1 / (2 * z1) - eps * z1) - math.exp(eps) * norm.cdf(-1 / (2 * z1) - eps * z1)


def lasso_data(n=3000, p=20, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, (n, p))
    w = np.zeros(p)
    w[:3] = [0.4, -0.3, 0.2]
    y = X @ w + 0.05 * rng.standard_normal(n)
    return X, y


def test_registry_entries():
    assert SOLVERS["mirror_descent"].constraints == ("l1", "l2")
    assert SOLVERS["frank_wolfe_gaussian"].constraints == ("l2",)
    assert "mirror_descent" in DPLasso()._allowed_solvers()
    assert {"mirror_descent", "frank_wolfe_gaussian"} <= set(DPLogisticRegression()._allowed_solvers())


# ---------------------------------------------------------------------------- calibration


@pytest.mark.parametrize("solver, constraint", [(mirror_descent, L1Ball(1.0)), (mirror_descent, L2Ball(1.0)),
                                                (frank_wolfe_gaussian, L2Ball(1.0))])
@pytest.mark.parametrize("eps, delta, T", [(1.0, 1e-5, 1), (0.5, 1e-6, 30), (4.0, 1e-2, 200)])
def test_tight_calibration_matches_analytic_gaussian(solver, constraint, eps, delta, T):
    X, y = lasso_data(n=50, p=5)
    res = solver(make_problem(X, y, data_norm=3.0), constraint, epsilon=eps, delta=delta,
                 rng=np.random.default_rng(0), max_iter=T)
    z = res.noise_scale
    assert analytic_gaussian_delta(eps, z / math.sqrt(T)) == pytest.approx(delta, rel=1e-5)
    assert res.event == dp_event.SelfComposedDpEvent(dp_event.GaussianDpEvent(z), T)
    assert res.info["sigma"] == pytest.approx(2 * res.info["clip_norm"] * z)


def test_mirror_descent_added_noise_has_the_calibrated_scale():
    # Zero features and a huge ball: theta_2 = -eta u / n, the average of one iterate.
    n, p = 40, 4000
    prob = make_problem(np.zeros((n, p)), np.ones(n))
    res = mirror_descent(prob, L2Ball(1e9), epsilon=EPS, delta=DELTA, rng=np.random.default_rng(2), max_iter=1,
                         clip_norm=0.25)
    u = -res.coef * n / res.info["step_size"]
    assert np.std(u) == pytest.approx(2 * 0.25 * res.noise_scale, rel=0.05)


# ---------------------------------------------------------------------------- audits


def _mechanism(solver, constraint, T):
    def mech(X, y, rng):
        return solver(make_problem(X, y), constraint, epsilon=EPS, delta=DELTA, rng=rng, max_iter=T).coef

    return mech


CASES = {
    "md_l1": (_mirror_descent, mirror_descent, L1Ball(1.0)),
    "md_l2": (_mirror_descent, mirror_descent, L2Ball(1.0)),
    "fw_gauss": (_frank_wolfe_gaussian, frank_wolfe_gaussian, L2Ball(1.0)),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_audit_calibrated_passes(case):
    _, solver, constraint = CASES[case]
    D, D_prime = glm_worst_case_pair(10, 2)
    res = audit_epsilon(_mechanism(solver, constraint, 1), D, D_prime, n_samples=4000, delta=DELTA,
                        random_state=0)
    assert res.epsilon_lower <= EPS


@pytest.mark.parametrize("case", sorted(CASES))
def test_audit_catches_undernoised(case, monkeypatch):
    _, solver, constraint = CASES[case]
    real = _common.composed_gaussian_noise_multiplier  # the shared T-Gaussian-steps calibration
    monkeypatch.setattr(_common, "composed_gaussian_noise_multiplier", lambda e, d, T: real(e, d, T) / 8)
    D, D_prime = glm_worst_case_pair(10, 2)
    res = audit_epsilon(_mechanism(solver, constraint, 1), D, D_prime, n_samples=4000, delta=DELTA,
                        random_state=0)
    assert res.epsilon_lower > EPS


# ---------------------------------------------------------------------------- epsilon = inf


def reference_eg(prob, R, eta, T):
    """Non-private exponentiated gradient +- on the 2p-simplex scaled by R, averaged."""
    d = prob.dim
    log_w = np.full(2 * d, -math.log(2 * d))
    theta, avg = np.zeros(d), np.zeros(d)
    for _ in range(T):
        g = prob.loss.gradient(prob.X, prob.y, theta)
        log_w -= eta * R * np.concatenate([g, -g])
        log_w -= logsumexp(log_w)
        w = np.exp(log_w)
        theta = R * (w[:d] - w[d:])
        avg += theta
    return avg / T


def test_mirror_descent_epsilon_inf_is_nonprivate_mirror_descent():
    X, y = lasso_data(n=500, p=10, seed=1)
    prob = make_problem(X, y, data_norm=math.sqrt(10))
    res = mirror_descent(prob, L1Ball(0.5), epsilon=np.inf, delta=DELTA, rng=np.random.default_rng(0), max_iter=25,
                         clip_norm=1e9)
    assert isinstance(res.event, dp_event.NonPrivateDpEvent)
    np.testing.assert_allclose(res.coef, reference_eg(prob, 0.5, res.info["step_size"], 25), rtol=1e-10, atol=1e-13)


@pytest.mark.parametrize("constraint", [L1Ball(0.6), L2Ball(0.6)])
def test_mirror_descent_epsilon_inf_converges_to_the_exact_minimizer(constraint):
    X, y = lasso_data(n=500, p=10, seed=1)
    prob = make_problem(X, y, data_norm=math.sqrt(10))
    exact = minimize(prob, constraint, tol=1e-10)
    # clip_norm = 2 exceeds every per-example gradient norm here (no clipping).
    res = mirror_descent(prob, constraint, epsilon=np.inf, delta=DELTA, rng=np.random.default_rng(0),
                         max_iter=2000, clip_norm=2.0)
    f = prob.loss.value
    assert f(prob.X, prob.y, res.coef) - f(prob.X, prob.y, exact) < 5e-4  # O(D / (eta T)) averaging bias


@pytest.mark.parametrize("solver, constraint, kw", [(frank_wolfe_gaussian, L2Ball(0.6), {"clip_norm": 2.0}),
                                                    (frank_wolfe, L1Ball(0.6), {})])
def test_frank_wolfe_epsilon_inf_converges_to_the_exact_minimizer(solver, constraint, kw):
    X, y = lasso_data(n=500, p=10, seed=1)
    prob = make_problem(X, y, data_norm=math.sqrt(10))
    exact = minimize(prob, constraint, tol=1e-10)
    res = solver(prob, constraint, epsilon=np.inf, delta=DELTA, rng=np.random.default_rng(0), max_iter=2000, **kw)
    assert isinstance(res.event, dp_event.NonPrivateDpEvent)
    f = prob.loss.value
    assert f(prob.X, prob.y, res.coef) - f(prob.X, prob.y, exact) < 1e-4


# ---------------------------------------------------------------------------- utility


def test_mirror_descent_l1_utility_fixed_seed():
    X, y = lasso_data(n=5000, p=50, seed=3)
    prob = make_problem(X, y, data_norm=1.0, ord_=np.inf)
    C = L1Ball(1.0)
    exact = minimize(prob, C, tol=1e-8)
    f = prob.loss.value
    res = mirror_descent(prob, C, epsilon=2.0, delta=1e-6, rng=np.random.default_rng(0))
    excess = f(prob.X, prob.y, res.coef) - f(prob.X, prob.y, exact)
    baseline = f(prob.X, prob.y, np.zeros(prob.dim)) - f(prob.X, prob.y, exact)
    assert excess < 0.1 * baseline


def test_estimators_with_geometry_solvers_fixed_seed():
    rng = np.random.default_rng(4)
    n, p = 4000, 10
    X = rng.standard_normal((n, p))
    w = rng.standard_normal(p)
    y = (X @ w + 0.3 * rng.standard_normal(n) > 0).astype(int)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ClippingWarning)
        for solver in ("mirror_descent", "frank_wolfe_gaussian"):
            m = DPLogisticRegression(solver=solver, epsilon=1.0, random_state=0).fit(X, y)
            assert m.score(X, y) > 0.85, solver
            assert m.n_iter_ >= 1 and isinstance(m.dp_event_, dp_event.SelfComposedDpEvent)
        yr = X @ w
        lasso = DPLasso(solver="mirror_descent", radius=1.0, epsilon=1.0, bounds_y=(-8, 8), random_state=0).fit(X, yr)
        ridge = DPRidge(solver="frank_wolfe_gaussian", epsilon=1.0, bounds_y=(-8, 8), random_state=0).fit(X, yr)
    assert lasso.score(X, yr) > 0.5
    assert ridge.score(X, yr) > 0.0
    assert np.all(np.isfinite(ridge.coef_))
