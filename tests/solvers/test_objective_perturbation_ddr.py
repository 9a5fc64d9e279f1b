"""Objective perturbation with data-dependent regularization (Algorithm 4.2): calibration, audit, utility."""

import math

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.stats import norm
from sklearn import config_context
from sklearn.linear_model import Ridge
from sklearn.metrics import r2_score

import dp_sklearn.solvers._objective_perturbation_ddr as ddr_mod
from dp_sklearn import DPRidge
from dp_sklearn._losses import LOSSES, SquaredLoss
from dp_sklearn._sets import L1Ball, Unconstrained
from dp_sklearn.audit import audit_epsilon, glm_worst_case_pair
from dp_sklearn.ledger import compose_epsilon
from dp_sklearn.solvers import SOLVERS, PublicProblem

EPS, DELTA = 1.0, 1e-5


def _plan(epsilon=EPS, delta=DELTA, x_norm=math.sqrt(2)):
    pub = PublicProblem(100, 4, x_norm, 1.0, SquaredLoss(), 0.0)
    return ddr_mod.plan_objective_perturbation_ddr(pub, Unconstrained(), epsilon=epsilon, delta=delta)


def test_registered_for_ridge_only():
    assert "objective_perturbation_ddr" in DPRidge()._allowed_solvers()
    spec = SOLVERS["objective_perturbation_ddr"]
    assert [loss for loss in LOSSES if spec.serves_loss(loss)] == ["squared"]  # from its requirement gram_path
    with pytest.raises(TypeError, match="penalized"):
        ddr_mod.plan_objective_perturbation_ddr(PublicProblem(10, 2, 1.0, 1.0, SquaredLoss()), L1Ball(1.0),
                                                epsilon=EPS, delta=DELTA)


def test_calibration_matches_the_closed_form():
    plan = _plan()
    B, R = math.sqrt(2), SquaredLoss.prior_coef_norm
    info, sigma = plan.info, plan.noise_scale
    assert info["Delta"] == pytest.approx(B**2 / (ddr_mod.JACOBIAN_SHARE * EPS))
    assert info["jacobian_epsilon"] == pytest.approx(B**2 / info["Delta"])
    zeta = math.sqrt(2) * B**2 * R + 2 * B
    assert info["zeta"] == pytest.approx(zeta)
    t1, t2 = math.sqrt(2 * math.log(2 / DELTA)), norm.isf(DELTA / 8)
    # the two tails spend delta / 2 each
    assert math.exp(-t1**2 / 2) + 4 * norm.sf(t2) == pytest.approx(DELTA)
    K = math.sqrt(2) * B**2 * R * (1 + t1) + 2 * B * t2
    assert info["jacobian_epsilon"] + K / sigma + zeta**2 / (2 * sigma**2) == pytest.approx(EPS, rel=1e-10)
    assert compose_epsilon([plan.event], DELTA) <= EPS * (1 + 1e-6)


def test_jacobian_and_gradient_bounds_hold_on_random_pairs():
    rng = np.random.default_rng(0)
    d, B, delta_floor = 4, 1.0, 4.0
    for _ in range(200):
        X = rng.standard_normal((6, d)) * rng.uniform(0.05, 1, (6, 1))
        X /= np.maximum(np.linalg.norm(X, axis=1, keepdims=True), 1.0)
        x_new = rng.standard_normal(d)
        x_new *= rng.uniform(0, B) / np.linalg.norm(x_new)
        Xp = X.copy()
        Xp[0] = x_new
        H, Hp = [(lambda lam, U: U @ np.diag(np.maximum(lam, delta_floor)) @ U.T)(*np.linalg.eigh(A.T @ A))
                 for A in (X, Xp)]
        log_ratio = np.linalg.slogdet(Hp)[1] - np.linalg.slogdet(H)[1]
        assert abs(log_ratio) <= B**2 / delta_floor + 1e-12
        assert np.linalg.norm(H - Hp) <= math.sqrt(2) * B**2 + 1e-12


def test_regularizer_is_taken_in_the_eigenbasis():
    # The dissertation digest's caveat: Hessian X^T X + U S U^T has eigenvalues max(lambda_i, Delta);
    # a canonical-basis diagonal S does not.
    rng = np.random.default_rng(1)
    X = rng.standard_normal((30, 3)) @ np.array([[1, 0.9, 0], [0, 0.1, 0], [0, 0, 0.05]])
    G = X.T @ X
    lam, U = np.linalg.eigh(G)
    Delta = 5.0
    S = np.maximum(Delta - lam, 0)
    np.testing.assert_allclose(np.linalg.eigvalsh(G + U @ np.diag(S) @ U.T), np.maximum(lam, Delta))
    assert not np.allclose(np.linalg.eigvalsh(G + np.diag(S)), np.maximum(lam, Delta))


def test_ball_minimizer_is_exact():
    rng = np.random.default_rng(2)
    h, r = rng.uniform(0.5, 3, 5), rng.standard_normal(5) * 3
    z = ddr_mod._ball_quadratic_min(h, r, 0.7)
    assert np.linalg.norm(z) == pytest.approx(0.7, rel=1e-12)
    # KKT: h z - r = -mu z with mu >= 0 (the same mu for every coordinate)
    mu = (r - h * z) / z
    np.testing.assert_allclose(mu, mu[0], rtol=1e-9)
    assert mu[0] > 0
    np.testing.assert_allclose(ddr_mod._ball_quadratic_min(h, r, 100.0), r / h)


def _mechanism(X, y, rng):
    with config_context(skip_parameter_validation=True):  # the audit times the mechanism only
        m = DPRidge(solver="objective_perturbation_ddr", alpha=0.0, epsilon=EPS, delta=DELTA, data_norm=1.0,
                    bounds_y=(-1, 1), fit_intercept=False, random_state=rng).fit(X, y)
    return np.ravel(m.coef_)


def test_audit_passes_and_catches_undernoised(monkeypatch):
    D, D_prime = glm_worst_case_pair(n=10, n_features=2, kind="regression", data_norm=1.0)
    res = audit_epsilon(_mechanism, D, D_prime, n_samples=500, delta=DELTA, random_state=0)
    assert res.epsilon_lower <= EPS, res
    real = ddr_mod.ddr_sigma
    monkeypatch.setattr(ddr_mod, "ddr_sigma", lambda *a: (real(*a)[0] / 40, real(*a)[1]))
    bad = audit_epsilon(_mechanism, D, D_prime, n_samples=500, delta=DELTA, random_state=1)
    assert bad.epsilon_lower > EPS, bad


def test_epsilon_inf_and_sparse(diabetes):
    Xtr, Xte, ytr, yte = diabetes
    est = DPRidge(solver="objective_perturbation_ddr", alpha=1.0, epsilon=np.inf, data_norm=100.0,
                  bounds_y=(-1e4, 1e4), fit_intercept=False).fit(Xtr, ytr)
    np.testing.assert_allclose(est.coef_, Ridge(alpha=1.0, fit_intercept=False).fit(Xtr, ytr).coef_, rtol=1e-6)
    # data_norm explicit: its default depends on the input type (sqrt(p) dense, 1 sparse)
    kw = dict(solver="objective_perturbation_ddr", bounds_y=(25, 346), data_norm=np.sqrt(Xtr.shape[1]), random_state=0)
    a = DPRidge(**kw).fit(Xtr, ytr)
    b = DPRidge(**kw).fit(sp.csr_matrix(Xtr), ytr)
    np.testing.assert_allclose(a.coef_, b.coef_, rtol=1e-8, atol=1e-10)


def test_utility_beats_algorithm_4_1_paper(diabetes):
    Xtr, Xte, ytr, yte = diabetes

    def r2(**kw):
        return np.median([r2_score(yte, DPRidge(bounds_y=(25, 346), random_state=s, **kw).fit(Xtr, ytr).predict(Xte))
                          for s in range(6)])

    ddr = r2(solver="objective_perturbation_ddr")
    paper = r2(solver="objective_perturbation", accounting="paper")
    assert ddr > paper + 0.03, (ddr, paper)
