"""Objective perturbation (Kifer et al. 2012; Thakurta 2013 Theorem 3.8): calibration, audits."""

import math

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.integrate import quad
from scipy.special import expit
from scipy.stats import norm
from sklearn import config_context
from sklearn.metrics import r2_score

from dp_sklearn import DPLogisticRegression, DPRidge
from dp_sklearn._losses import LogisticLoss, MultinomialLoss
from dp_sklearn._sets import Unconstrained
from dp_sklearn.audit import audit_epsilon, glm_worst_case_pair
from dp_sklearn.ledger import compose_epsilon
from dp_sklearn.solvers import PublicProblem, get_solver
import dp_sklearn.solvers._objective_perturbation as op_mod


from solver_helpers import DELTA, EPS, estimator_audit, glm_problem


def test_objective_perturbation_calibration():
    prob = glm_problem(LogisticLoss())
    eps, delta = 1.0, 1e-5
    res = get_solver("objective_perturbation").func(prob, Unconstrained(), epsilon=eps, delta=delta,
                                                    rng=np.random.default_rng(0), tol=1e-9)
    e1, d1 = 0.99 * eps, 0.99 * delta
    zeta = math.sqrt(2)  # x_norm * sup|phi'|
    # Thakurta (2013) Theorem 3.8 with 2 zeta for replace-one neighbours.
    assert res.noise_scale == pytest.approx(2 * zeta * math.sqrt(8 * math.log(2 / d1) + 4 * e1) / e1)
    lam_h = 0.25 * 2  # sup phi'' * x_norm^2
    assert res.info["Delta"] >= lam_h / math.expm1(e1 / 2)  # Jacobian term <= e1 / 2
    assert math.log1p(lam_h / res.info["Delta"]) <= e1 / 2 + 1e-12
    assert res.info["amp_sensitivity"] == pytest.approx(2e-9 / res.info["l2_reg"])
    assert compose_epsilon([res.event], delta) <= eps + 1e-3


CASES = [
    ("logistic-objective_perturbation", "classification",
     lambda d: lambda rng: DPLogisticRegression(solver="objective_perturbation", epsilon=EPS, delta=d,
                                                data_norm=1.0, fit_intercept=False, random_state=rng), DELTA,
     (op_mod, "_zeta", lambda f: lambda prob, c: f(prob, c) / 30)),
    ("ridge-objective_perturbation-pure", "regression",
     lambda d: lambda rng: DPRidge(solver="objective_perturbation", epsilon=EPS, delta=d, data_norm=1.0,
                                   bounds_y=(-1, 1), fit_intercept=False, random_state=rng), 0.0,
     (op_mod, "_zeta", lambda f: lambda prob, c: f(prob, c) / 30)),
]


# name, kind, estimator factory, delta, (module, attribute, scaled-down replacement factory)
@pytest.mark.parametrize("name, kind, factory, delta, patch", CASES, ids=[c[0] for c in CASES])
def test_audit_and_negative_control(name, kind, factory, delta, patch, monkeypatch):
    estimator_audit(name, kind, factory, delta, patch, monkeypatch)


# ------------------------------------------------------------------------------
# Tight objective perturbation (accounting="tight"): calibration, exact 1-D profile, audit, utility.


def _plan(accounting, loss=None, n=200, dim=5, delta=DELTA, l2_reg=0.0):
    pub = PublicProblem(n, dim, math.sqrt(2), 1.0, loss or LogisticLoss(), l2_reg)
    return op_mod.plan_objective_perturbation(pub, Unconstrained(), epsilon=EPS, delta=delta, accounting=accounting,
                                              l2_reg=l2_reg)


def _profile_bound(s, eps_rest):
    """4 delta_G(eps_rest; s): Balle & Wang (2018) Theorem 8, times the replace-one factor 4."""
    return 4 * (norm.sf(s * eps_rest - 0.5 / s) - math.exp(eps_rest) * norm.sf(s * eps_rest + 0.5 / s))


def _exact_delta_1d(sigma, lam, eps, xs, ys, x_new, x_old):
    """Exact hockey-stick divergence of the 1-D objective-perturbation outputs on D vs D'.

    theta = argmin sum_i log(1 + exp(-y_i x_i theta)) + lam theta^2 / 2 + b theta, b ~ N(0, sigma^2):
    theta has density phi_sigma(b(theta)) |b'(theta)| with b(theta) = -(sum_i phi'_i x_i + lam theta).
    """
    theta = np.linspace(-12 * sigma / lam, 12 * sigma / lam, 400001)

    def density(x):
        X, Y = np.append(xs, x), np.append(ys, 1.0)
        m = np.outer(theta, X * Y)
        b = np.sum(Y * X * expit(-m), axis=1) - lam * theta
        slope = np.sum(X**2 * expit(m) * expit(-m), axis=1) + lam
        return norm.pdf(b, scale=sigma) * slope

    p, q = density(x_new), density(x_old)
    step = theta[1] - theta[0]
    return max(np.sum(np.maximum(p - math.exp(eps) * q, 0)), np.sum(np.maximum(q - math.exp(eps) * p, 0))) * step


def _mechanism(X, y, rng):
    with config_context(skip_parameter_validation=True):  # the audit times the mechanism only
        m = DPLogisticRegression(solver="objective_perturbation", accounting="tight", epsilon=EPS, delta=DELTA,
                                 data_norm=1.0, fit_intercept=False, random_state=rng).fit(X, y)
    return np.ravel(m.coef_)


def _accuracy(cancer, solver, accounting, seeds=6, epsilon=1.0):
    Xtr, Xte, ytr, yte = cancer
    return np.mean([DPLogisticRegression(solver=solver, accounting=accounting, epsilon=epsilon, random_state=s)
                    .fit(Xtr, ytr).score(Xte, yte) for s in range(seeds)])


def test_tight_calibration_matches_the_closed_form():
    plan = _plan("tight")
    info = plan.info
    e1, d1 = (1 - op_mod.AMP_SHARE) * EPS, (1 - op_mod.AMP_SHARE) * DELTA
    lam_hess = 0.25 * 2  # sup phi'' * x_norm^2
    assert info["tight"] and info["jacobian_epsilon"] == pytest.approx(math.log1p(lam_hess / info["Delta"]))
    s = plan.noise_scale / (2 * info["zeta"])  # multiplier relative to the replace-one sensitivity 2 zeta
    eps_rest = e1 - info["jacobian_epsilon"]
    assert _profile_bound(s, eps_rest) == pytest.approx(d1, rel=1e-3)
    # The closed form is the integral int_0^inf e^-u 4 Q(s (eps_rest + u) - 1/(2s)) du of the module docstring.
    integral = quad(lambda u: math.exp(-u) * 4 * norm.sf(s * (eps_rest + u) - 0.5 / s), 0, np.inf,
                    epsabs=0, epsrel=1e-10)[0]
    assert integral == pytest.approx(d1, rel=1e-6)
    assert compose_epsilon([plan.event], DELTA) <= EPS * (1 + 1e-3)
    # Strictly less noise than the dissertation's calibration at the same target.
    assert plan.noise_scale < 0.5 * _plan("paper").noise_scale


def test_paper_is_unchanged_and_fallbacks():
    paper = _plan("paper")
    e1, d1 = 0.99 * EPS, 0.99 * DELTA
    assert paper.noise_scale == pytest.approx(2 * math.sqrt(2) * math.sqrt(8 * math.log(2 / d1) + 4 * e1) / e1)
    assert not paper.info["tight"]
    multi = _plan("tight", loss=MultinomialLoss(3))  # rank K-1 Hessian: the paper calibration
    assert not multi.info["tight"]
    assert multi.noise_scale == pytest.approx(_plan("paper", loss=MultinomialLoss(3)).noise_scale)
    assert not _plan("tight", delta=0.0).info["tight"]  # pure DP: norm-Gamma noise
    with pytest.raises(ValueError, match="accounting"):
        _plan("exact")


def test_exact_one_dimensional_profile_is_below_delta():
    # d = 1, x_norm = 1: the plan's sigma and Lambda, and the exact privacy profile of the output density.
    pub = PublicProblem(6, 1, 1.0, 1.0, LogisticLoss(), 0.0)
    plan = op_mod.plan_objective_perturbation(pub, Unconstrained(), epsilon=EPS, delta=1e-3, accounting="tight")
    sigma, lam = plan.noise_scale, plan.info["Delta"]
    xs, ys = np.array([0.3, -0.5, 0.8, 0.1, -0.9]), np.array([1.0, -1.0, 1.0, -1.0, 1.0])
    e1, d1 = 0.99 * EPS, 0.99 * 1e-3
    exact = _exact_delta_1d(sigma, lam, e1, xs, ys, 1.0, -1.0)
    assert 0 < exact <= d1
    # The bound is not vacuous: a tenth of the noise breaks it on the same pair.
    assert _exact_delta_1d(sigma / 10, lam, e1, xs, ys, 1.0, -1.0) > d1


def test_audit_passes_and_catches_undernoised(monkeypatch):
    D, D_prime = glm_worst_case_pair(n=10, n_features=2, kind="classification", data_norm=1.0)
    res = audit_epsilon(_mechanism, D, D_prime, n_samples=500, delta=DELTA, random_state=0)
    assert res.epsilon_lower <= EPS, res
    real = op_mod.tight_sigma
    monkeypatch.setattr(op_mod, "tight_sigma", lambda *a: real(*a) / 30)
    bad = audit_epsilon(_mechanism, D, D_prime, n_samples=500, delta=DELTA, random_state=1)
    assert bad.epsilon_lower > EPS, bad


def test_epsilon_inf_and_sparse(cancer):
    Xtr, Xte, ytr, yte = cancer
    a = DPLogisticRegression(solver="objective_perturbation", epsilon=np.inf).fit(Xtr, ytr)
    b = DPLogisticRegression(solver="objective_perturbation", epsilon=np.inf, accounting="paper").fit(Xtr, ytr)
    np.testing.assert_allclose(a.coef_, b.coef_)  # no noise: the exact regularized minimizer either way
    # data_norm explicit: its default depends on the input type (sqrt(p) dense, 1 sparse)
    kw = dict(solver="objective_perturbation", data_norm=np.sqrt(Xtr.shape[1]), random_state=0)
    d = DPLogisticRegression(**kw).fit(Xtr, ytr)
    s = DPLogisticRegression(**kw).fit(sp.csr_matrix(Xtr), ytr)
    np.testing.assert_allclose(d.coef_, s.coef_, rtol=1e-6, atol=1e-8)


def test_utility_breast_cancer_close_to_noisy_gd(cancer):
    tight, paper = _accuracy(cancer, "objective_perturbation", "tight"), _accuracy(cancer, "objective_perturbation",
                                                                                    "paper")
    gd = _accuracy(cancer, "noisy_gd", "tight")
    assert tight > paper + 0.05, (tight, paper)
    assert tight >= gd - 0.03, (tight, gd)


def test_utility_diabetes_beats_paper(diabetes):
    Xtr, Xte, ytr, yte = diabetes

    def r2(acc):
        return np.median([r2_score(yte, DPRidge(solver="objective_perturbation", accounting=acc, bounds_y=(25, 346),
                                                random_state=s).fit(Xtr, ytr).predict(Xte)) for s in range(6)])

    tight, paper = r2("tight"), r2("paper")
    assert tight > paper + 0.03, (tight, paper)


def test_pure_output_noise_is_exact_discrete_laplace():
    # delta = 0: the tolerance's output noise is a discrete Laplace per coordinate on the l1 sensitivity
    # sqrt(d) 2 tol / Lambda (exact, on its grid) instead of a float norm-Gamma.
    plan = _plan("paper", delta=0.0)
    info = plan.info
    dim = 5
    eps2 = op_mod.AMP_SHARE * EPS
    assert info["amp_scale"] == pytest.approx(math.sqrt(dim) * info["amp_sensitivity"] / eps2)
    prob = glm_problem(LogisticLoss())
    coef = op_mod.run_objective_perturbation(prob, plan, np.random.default_rng(0))
    from dp_sklearn._noise import grid_scale
    gamma = grid_scale(info["amp_scale"], math.sqrt(dim) * info["amp_sensitivity"], dim, norm=1)[0]
    assert np.array_equal(coef / gamma, np.rint(coef / gamma))
