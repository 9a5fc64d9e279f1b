"""Localization (BST 2014, Algorithm 4 = Algorithm 3 then Algorithm 2 on a small ball): calibration,
goodness of fit of the localized exact sampler, audit with a negative control, utility, epsilon = inf, CSR."""

import dataclasses
import math

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.stats import chisquare, kstest
from sklearn.linear_model import LogisticRegression, Ridge

import dp_sklearn.solvers._localization as loc_mod
from dp_sklearn import DPLogisticRegression, DPRidge
from dp_sklearn._data import Problem
from dp_sklearn._exact import minimize
from dp_sklearn._logconcave import exact_glm_samples, glm_objective
from dp_sklearn._losses import LogisticLoss, SquaredLoss
from dp_sklearn._sets import L2Ball
from dp_sklearn.audit import audit_epsilon, glm_worst_case_pair
from dp_sklearn.composition import compose_epsilon
from dp_sklearn.solvers import PublicProblem
from dp_sklearn.solvers._exponential_sampling import exponential_sampling

EPS = 1.0


def _logistic_problem(n, dim, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, (n, dim)) / math.sqrt(dim)
    y = np.where(X @ np.ones(dim) + 0.3 * rng.standard_normal(n) > 0, 1.0, -1.0)
    return Problem(X, y, LogisticLoss(), 1.0, 1.0, np.linalg.norm(X, axis=1), 0.0)


# ------------------------------------------------------------------------------------ calibration
def test_calibration_closed_form():
    n, lam, R = 1000, 0.05, 2.0
    plan = loc_mod.plan_localization(PublicProblem(n, 1, 1.0, 1.0, LogisticLoss(), 0.0), L2Ball(R), epsilon=EPS,
                                     l2_reg=lam, tol=1e-8)
    info = plan.info
    # Algorithm 3 at epsilon/2, replace-one: Delta_2 = 2 G / (n Lambda) + 2 tol / Lambda, G = x_norm = 1.
    assert info["l2_reg"] == lam and info["lipschitz"] == 1.0
    assert info["sensitivity"] == pytest.approx(2 / (n * lam) + 2e-8 / lam, rel=1e-12)
    # the snapped release (docs/privacy.md, Numeric model): s = Delta_2 / (eps/2 - ln kappa), ln kappa <= 2^-10 eps/2
    snap = info["snapping"]
    assert snap.bound == R and snap.loss <= (EPS / 2) * 2.0**-10
    assert snap.loss == pytest.approx(math.log((snap.grid + 2 * snap.eta) / (snap.grid - 2 * snap.eta))
                                      + 2 * snap.eta / (info["sensitivity"] / (EPS / 2)), rel=1e-9)
    assert info["scale"] == pytest.approx(info["sensitivity"] / (EPS / 2 - snap.loss), rel=1e-11)
    # r = 3 ln(n) p s (BST Algorithm 3 step 4 with zeta = 3 log n), kappa = (eps/2) / (2 G 2 min(r, R)).
    assert info["radius"] == pytest.approx(3 * math.log(n) * 1 * info["scale"], rel=1e-12)
    assert info["radius"] < R
    assert info["kappa"] == pytest.approx((EPS / 2) / (2 * 1.0 * 2 * info["radius"]), rel=1e-12)
    assert plan.delta == 0.0 and compose_epsilon([plan.event], 0.0) == pytest.approx(EPS, rel=1e-12)
    # The default strength, a closed form, replaces a smaller user l2_reg; the squared loss's G on the ball.
    sq = loc_mod.plan_localization(PublicProblem(n, 2, 1.5, 1.0, SquaredLoss(), 0.0), L2Ball(0.5), epsilon=2.0)
    G = 1.5 * (1.5 * 0.5 + 1.0)
    assert sq.info["lipschitz"] == pytest.approx(G)
    assert sq.info["l2_reg"] == pytest.approx(math.sqrt(32 * 3 * math.log(n)) * 2 * G / (2.0 * n * 0.15))
    assert sq.info["kappa"] == pytest.approx(1.0 / (4 * G * min(sq.info["radius"], 0.5)))
    with pytest.raises(ValueError, match="solver='localization'.*at most 2 coefficients"):
        loc_mod.plan_localization(PublicProblem(n, 3, 1.0, 1.0, LogisticLoss(), 0.0), L2Ball(1.0), epsilon=EPS)
    # beyond float64's resolution of kappa F the exact sampler could not accept: a public ValueError naming epsilon
    with pytest.raises(ValueError, match="epsilon is too large for solver='localization'"):
        loc_mod.plan_localization(PublicProblem(n, 1, 1.0, 1.0, LogisticLoss(), 0.0), L2Ball(R), epsilon=1e8,
                                  l2_reg=lam)


def test_replace_one_sensitivity_of_the_regularized_minimizer():
    # ||theta_D - theta_D'|| <= 2 G / (n Lambda) on the worst-case pair (x = e_1 versus -e_1), 1 and 2 dims.
    for dim in (1, 2):
        D, Dp = glm_worst_case_pair(n=10, n_features=dim, kind="classification", data_norm=1.0)
        lam, ball = 0.3, L2Ball(5.0)
        th = [minimize(Problem(X, np.where(y > 0, 1.0, -1.0), LogisticLoss(), 1.0, 1.0, np.linalg.norm(X, axis=1)),
                       ball, l2_reg=lam, tol=1e-12) for X, y in (D, Dp)]
        gap = np.linalg.norm(th[0] - th[1])
        assert gap <= 2 * 1.0 / (10 * lam) + 2e-12 / lam
        assert gap >= 0.2 * 2 / (10 * lam)  # the bound is not vacuous on this pair


# -------------------------------------------------------------------------- the localized sampler
def _localized_setting(prob, eps=3.0):
    """A localization plan, and a domain B(0, R) cap B(c, r) with both boundaries inside the box."""
    plan = loc_mod.plan_localization(prob, L2Ball(3.0), epsilon=eps)
    info = plan.info
    star = minimize(prob, plan.constraint, l2_reg=info["l2_reg"], tol=1e-12)
    r = info["radius"]
    e = star / np.linalg.norm(star)
    R = float(np.linalg.norm(star)) + 0.5 * r  # the outer ball cuts the local ball
    return info, R, star - 0.3 * r * e, r


def _draw(prob, info, R, c, r, factor, seed):
    return exact_glm_samples(prob, np.random.default_rng(seed), kappa=factor * info["kappa"], l2_reg=info["l2_reg"],
                             curvature=info["curvature"], radius=R, size=3000, center=c, local_radius=r)


@pytest.mark.parametrize("factor, passes", [(1.0, True), (1.5, False)])
def test_one_dimensional_goodness_of_fit_on_the_localized_set(factor, passes):
    prob = _logistic_problem(200, 1)
    info, R, c, r = _localized_setting(prob)
    lo, hi = max(-R, c[0] - r), min(R, c[0] + r)
    samples = _draw(prob, info, R, c, r, factor, 0)[:, 0]
    assert samples.min() >= lo and samples.max() <= hi
    grid = np.linspace(lo, hi, 20001)
    F = glm_objective(prob, info["l2_reg"])(grid[:, None])
    w = np.exp(-info["kappa"] * (F - F.min()))
    assert w.min() < 0.2  # the density varies across the domain: a wrong temperature is visible
    cdf = np.concatenate([[0], np.cumsum((w[1:] + w[:-1]) / 2)])
    p = kstest(samples, lambda t: np.interp(t, grid, cdf / cdf[-1])).pvalue
    assert (p > 0.01) if passes else (p < 1e-4), p


@pytest.mark.parametrize("factor, passes", [(1.0, True), (1.5, False)])
def test_two_dimensional_goodness_of_fit_on_the_localized_set(factor, passes):
    prob = _logistic_problem(150, 2, seed=1)
    info, R, c, r = _localized_setting(prob)
    samples = _draw(prob, info, R, c, r, factor, 1)
    inside = lambda T: (np.linalg.norm(T, axis=1) <= R) & (np.linalg.norm(T - c, axis=1) <= r)  # noqa: E731
    assert inside(samples).all()
    # Expected cell probabilities on a 6 x 6 grid of the box around B(c, r) from a 400 x 400 Riemann sum over D.
    edges = [np.linspace(c[j] - r, c[j] + r, 7) for j in range(2)]
    fine = [np.linspace(c[j] - r, c[j] + r, 401) for j in range(2)]
    mids = [(f[1:] + f[:-1]) / 2 for f in fine]
    T = np.stack(np.meshgrid(*mids, indexing="ij"), axis=-1).reshape(-1, 2)
    T = T[inside(T)]
    F = glm_objective(prob, info["l2_reg"])(T)
    w = np.exp(-info["kappa"] * (F - F.min()))
    expected = np.histogram2d(T[:, 0], T[:, 1], bins=edges, weights=w)[0].ravel()
    observed = np.histogram2d(samples[:, 0], samples[:, 1], bins=edges)[0].ravel()
    keep = expected / expected.sum() * len(samples) >= 5
    p = chisquare(observed[keep], expected[keep] / expected[keep].sum() * observed[keep].sum()).pvalue
    assert (p > 0.01) if passes else (p < 1e-4), p


# ------------------------------------------------------------------------------------------ audit
def _mechanism(X, y, rng):
    prob = Problem(X, np.where(y > 0, 1.0, -1.0), LogisticLoss(), 1.0, 1.0, np.linalg.norm(X, axis=1), 0.0)
    return loc_mod.localization(prob, L2Ball(2.0), epsilon=EPS, rng=rng).coef


def test_audit_passes_and_catches_an_undernoised_mechanism(monkeypatch):
    D, D_prime = glm_worst_case_pair(n=10, n_features=1, kind="classification", data_norm=1.0)
    res = audit_epsilon(_mechanism, D, D_prime, n_samples=800, delta=0.0, random_state=0)
    assert res.epsilon_lower <= EPS, res
    real = loc_mod.plan_localization

    def undernoised(*a, **k):  # both steps 1000x less random (kappa x 1000, s / 1000), same localized radius
        plan = real(*a, **k)
        info = plan.info
        return dataclasses.replace(plan, info={**info, "kappa": 1000 * info["kappa"], "scale": info["scale"] / 1000})

    monkeypatch.setattr(loc_mod, "plan_localization", undernoised)
    bad = audit_epsilon(_mechanism, D, D_prime, n_samples=800, delta=0.0, random_state=1)
    assert bad.epsilon_lower > EPS, bad


# ---------------------------------------------------------------------------------------- utility
def test_localization_has_smaller_excess_risk_than_exponential_sampling():
    """Strongly convex 1-coefficient logistic objective (Lambda = 0.1) on the ball of radius 4, epsilon = 1."""
    prob, lam, ball = _logistic_problem(2000, 1, seed=3), 0.1, L2Ball(4.0)
    F = glm_objective(prob, lam)
    best = F(minimize(prob, ball, l2_reg=lam, tol=1e-12)[None, :])[0]
    loc = [loc_mod.localization(prob, ball, epsilon=EPS, l2_reg=lam, rng=np.random.default_rng(s)).coef
           for s in range(30)]
    exp = [exponential_sampling(prob, ball, epsilon=EPS, l2_reg=lam, rng=np.random.default_rng(s)).coef
           for s in range(30)]
    excess_loc = np.mean(F(np.array(loc)) - best) / prob.n
    excess_exp = np.mean(F(np.array(exp)) - best) / prob.n
    assert excess_loc < 0.5 * excess_exp, (excess_loc, excess_exp)


# ------------------------------------------------------------------------------ epsilon = inf, CSR
def test_epsilon_inf_is_the_non_private_minimizer():
    rng = np.random.default_rng(0)
    n, B = 200, 10.0
    X = rng.normal(size=(n, 1))
    y = X[:, 0] + 0.3 * rng.normal(size=n)
    m = DPRidge(solver="localization", alpha=2.0, epsilon=np.inf, data_norm=B, bounds_y=(-20, 20)).fit(X, y)
    c = np.mean(np.clip(y, -20, 20))
    ref = Ridge(alpha=2.0, fit_intercept=False).fit(np.hstack([X, np.full((n, 1), B)]), y - c)
    np.testing.assert_allclose(m.coef_, ref.coef_[:1], rtol=1e-6)
    np.testing.assert_allclose(m.intercept_, c + B * ref.coef_[1], rtol=1e-6, atol=1e-8)
    yc = (X[:, 0] + 0.5 * rng.normal(size=n) > 0).astype(int)
    B = 3.0  # the minimizer lies inside the ball of radius 10 (normalized units)
    lr = DPLogisticRegression(solver="localization", C=0.5, epsilon=np.inf, data_norm=B).fit(X, yc)
    ref = LogisticRegression(C=0.5, fit_intercept=False, tol=1e-12, max_iter=10000).fit(
        np.hstack([X, np.full((n, 1), B)]), yc)
    assert np.linalg.norm(ref.coef_) * B < 10
    np.testing.assert_allclose(lr.coef_, ref.coef_[:, :1], rtol=1e-5)
    # the solver's own non-private path: the exact minimizer over the ball, no noise, no spend
    prob = _logistic_problem(100, 2)
    res = loc_mod.localization(prob, L2Ball(2.0), epsilon=np.inf, l2_reg=0.1, rng=np.random.default_rng(0))
    np.testing.assert_allclose(res.coef, minimize(prob, L2Ball(2.0), l2_reg=0.1), rtol=1e-12)
    assert res.epsilon == np.inf


def test_csr_input_matches_dense():
    rng = np.random.default_rng(5)
    X = np.where(rng.random((300, 1)) < 0.3, 0.0, rng.normal(size=(300, 1)))
    y = (X[:, 0] + 0.5 * rng.normal(size=300) > 0).astype(int)
    a = DPLogisticRegression(solver="localization", epsilon=1.0, random_state=0).fit(X, y)
    b = DPLogisticRegression(solver="localization", epsilon=1.0, random_state=0).fit(sp.csr_matrix(X), y)
    np.testing.assert_allclose(a.coef_, b.coef_, rtol=1e-8)
    np.testing.assert_allclose(a.intercept_, b.intercept_, rtol=1e-8)
    assert a.delta_ == 0.0 and a.epsilon_ == 1.0 and a.solver_ == "localization"
