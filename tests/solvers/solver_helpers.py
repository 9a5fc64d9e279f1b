"""Shared pieces of the per-mechanism tests in tests/solvers/ (imported by name: pytest puts
this directory on sys.path, as the directory has no __init__.py)."""

import math

import numpy as np
import scipy.sparse as sp
from scipy.stats import norm
from sklearn import config_context

from dp_sklearn._data import Problem, normalize_X
from dp_sklearn._losses import LogisticLoss, MultinomialLoss, SquaredLoss
from dp_sklearn.audit import audit_epsilon, glm_worst_case_pair

EPS, DELTA = 1.0, 1e-5
#: (epsilon, delta, T) grid of the paper-versus-tight accounting tests
GRID = [(0.5, 1e-6, 10), (1.0, 1e-5, 50), (4.0, 1e-2, 12), (10.0, 1e-2, 5)]


def make_problem(X, y, loss=None, data_norm=1.0, ord_=2, fit_intercept=False):
    """The normalized Problem of (X, y), dense or sparse, without an l2 term."""
    Xt, x_norm, x_inf = normalize_X(X, data_norm, ord_, fit_intercept)
    rn = (np.sqrt(np.asarray(Xt.multiply(Xt).sum(axis=1)).ravel()) if sp.issparse(Xt)
          else np.linalg.norm(Xt, axis=1))
    return Problem(Xt, y, loss or SquaredLoss(), x_norm, x_inf, rn, 0.0)

def random_problem(loss=None, n=400, p=6, sparse=False, seed=0):
    """Gaussian rows normalized to the row bound 1.5 with an intercept (many rows clipped),
    targets for ``loss`` (squared: clipped normals, at the bounds +-1 included; logistic:
    +-1; multinomial: one-hot), dense or sparse; l2 term 0.01."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, p))
    if sparse:
        X = sp.csr_matrix(X * (rng.random((n, p)) < 0.4))
    Xt, x_norm, x_inf = normalize_X(X, 1.5, 2, True)
    loss = loss or SquaredLoss()
    if isinstance(loss, MultinomialLoss):
        y = np.eye(loss.n_outputs)[rng.integers(0, loss.n_outputs, n)]
    elif isinstance(loss, LogisticLoss):
        y = np.where(rng.random(n) < 0.5, -1.0, 1.0)
    else:
        y = np.clip(rng.standard_normal(n), -1, 1)
    rn = np.sqrt(np.asarray(Xt.multiply(Xt).sum(axis=1)).ravel()) if sparse else np.linalg.norm(Xt, axis=1)
    return Problem(Xt, y, loss, x_norm, x_inf, rn, 0.01)


def public_of(problem):
    """The public part of a Problem (what a plan may read)."""
    from dp_sklearn.solvers._base import PublicProblem

    return PublicProblem(problem.n, problem.dim, problem.x_norm, problem.x_inf, problem.loss, problem.l2_reg)


def glm_problem(loss, n=200, p=5, seed=0):
    """Gaussian features with an intercept column, labels or targets from the first feature."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p))
    y = np.where(X[:, 0] > 0, 1.0, -1.0) if loss.name == "logistic" else np.clip(X[:, 0] / 3, -1, 1)
    Xt, xn, xi = normalize_X(X, math.sqrt(p), 2, True)
    return Problem(Xt, y, loss, xn, xi, np.linalg.norm(Xt, axis=1))


def replace_one_hockey_stick_delta(eps, zp, q):
    """delta(eps) of q N(-1, z'^2) + (1-q) N(0, z'^2) vs q N(1, z'^2) + (1-q) N(0, z'^2), by quadrature."""
    x = np.linspace(-1 - 12 * zp, 1 + 12 * zp, 200001)
    p = q * norm.pdf(x, -1, zp) + (1 - q) * norm.pdf(x, 0, zp)
    p2 = q * norm.pdf(x, 1, zp) + (1 - q) * norm.pdf(x, 0, zp)
    return float(np.trapezoid(np.maximum(p - math.exp(eps) * p2, 0.0), x))


def analytic_gaussian_delta(eps, z1):
    """delta(eps) of one Gaussian release with multiplier z1 (Balle & Wang 2018, Thm 8)."""
    return norm.cdf(1 / (2 * z1) - eps * z1) - math.exp(eps) * norm.cdf(-1 / (2 * z1) - eps * z1)


def lasso_data(n=3000, p=20, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, (n, p))
    w = np.zeros(p)
    w[:3] = [0.4, -0.3, 0.2]
    y = X @ w + 0.05 * rng.standard_normal(n)
    return X, y


def sparse_regression(n=2000, p=100, s=5, noise=0.1, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, p))
    theta = np.zeros(p)
    support = np.sort(rng.choice(p, s, replace=False))
    theta[support] = rng.choice([-1.0, 1.0], s) * rng.uniform(0.5, 1.0, s)
    y = X @ theta + noise * rng.standard_normal(n)
    return X, y, theta, support


def run_solver(solver, prob, constraint, eps, delta, T, accounting, **kw):
    """One call of a solver function with a fixed Generator (seed 0)."""
    return solver(prob, constraint, epsilon=eps, delta=delta, rng=np.random.default_rng(0), max_iter=T,
                  accounting=accounting, **kw)


def estimator_audit(name, kind, factory, delta, patch, monkeypatch):
    """Audit an estimator on the worst-case GLM pair, then again with its noise scaled down.

    Each audit fits the real estimator many times on a worst-case replace-one pair
    (the differing record sits on the data bound and pulls the model the opposite
    way) and asserts that the empirical lower bound on epsilon does not exceed the
    claimed epsilon. The negative control runs the same mechanism with its noise
    scaled down (``patch``: module, attribute, replacement factory) and asserts that
    the same audit catches it (lower bound > epsilon).
    """
    D, D_prime = glm_worst_case_pair(n=10, n_features=2, kind=kind, data_norm=1.0)
    make = factory(delta)

    def mech(X, y, rng):
        # Hyperparameters are validated in tests/test_linear_model.py; the audit times the mechanism only.
        with config_context(skip_parameter_validation=True):
            m = make(rng).fit(X, y)
        return np.concatenate([np.ravel(m.coef_), np.ravel(m.intercept_)])

    res = audit_epsilon(mech, D, D_prime, n_samples=2000, delta=delta, random_state=0)
    assert res.epsilon_lower <= EPS, (name, res)
    module, attr, scaled = patch
    monkeypatch.setattr(module, attr, scaled(getattr(module, attr)))
    bad = audit_epsilon(mech, D, D_prime, n_samples=2000, delta=delta, random_state=1)
    assert bad.epsilon_lower > EPS, (name, bad)


def solver_mechanism(solver, constraint, **kw):
    """mech(X, y, rng) -> coef: the solver at (EPS, DELTA) on the normalized pair, for audit_epsilon."""
    def mech(X, y, rng):
        return solver(make_problem(X, y), constraint, epsilon=EPS, delta=DELTA, rng=rng, **kw).coef

    return mech


def solver_audit(mech, *, private):
    """Audit ``mech`` on the worst-case GLM pair (4000 fits): bound <= EPS if ``private``, else > EPS."""
    D, D_prime = glm_worst_case_pair(10, 2)
    res = audit_epsilon(mech, D, D_prime, n_samples=4000, delta=DELTA, random_state=0)
    assert (res.epsilon_lower <= EPS) if private else (res.epsilon_lower > EPS), res


def undernoise_gaussian_steps(monkeypatch, factor=8):
    """Negative control: the shared T-Gaussian-steps calibration with ``factor`` times less noise."""
    from dp_sklearn.solvers import _common

    real = _common.composed_gaussian_noise_multiplier
    monkeypatch.setattr(_common, "composed_gaussian_noise_multiplier", lambda e, d, T: real(e, d, T) / factor)


def check_tight_gaussian_calibration(solver, constraint, eps, delta, T):
    """T Gaussian steps of multiplier z are one Gaussian of multiplier z / sqrt(T), at (eps, delta) exactly."""
    from dp_accounting import dp_event

    X, y = lasso_data(n=50, p=5)
    res = solver(make_problem(X, y, data_norm=3.0), constraint, epsilon=eps, delta=delta,
                 rng=np.random.default_rng(0), max_iter=T)
    z = res.noise_scale
    assert abs(analytic_gaussian_delta(eps, z / math.sqrt(T)) - delta) <= 1e-5 * delta
    assert res.event == dp_event.SelfComposedDpEvent(dp_event.GaussianDpEvent(z), T)
    assert math.isclose(res.info["sigma"], 2 * res.info["clip_norm"] * z, rel_tol=1e-6)


def check_epsilon_inf_converges(solver, constraint, kw, gap):
    """At epsilon = inf, 2000 steps reach the exact minimizer's objective within ``gap``."""
    from dp_accounting import dp_event

    from dp_sklearn._exact import minimize

    X, y = lasso_data(n=500, p=10, seed=1)
    prob = make_problem(X, y, data_norm=math.sqrt(10))
    exact = minimize(prob, constraint, tol=1e-10)
    res = solver(prob, constraint, epsilon=np.inf, delta=DELTA, rng=np.random.default_rng(0), max_iter=2000, **kw)
    assert isinstance(res.event, dp_event.NonPrivateDpEvent)
    f = prob.loss.value
    assert f(prob.X, prob.y, res.coef) - f(prob.X, prob.y, exact) < gap


#: the paper-formula setting: clip norm C, epsilon, delta, T
PAPER_C, PAPER_EPS, PAPER_DELTA, PAPER_T = 0.3, 1.0, 1e-5, 40


def paper_sigma(problem, solver, constraint, **kw):
    """The noise standard deviation of ``accounting="paper"`` at the paper-formula setting."""
    return run_solver(solver, problem, constraint, PAPER_EPS, PAPER_DELTA, PAPER_T, "paper", clip_norm=PAPER_C,
                      **kw).info["sigma"]


def sampled_problem():
    """The 200 x 5 Gaussian regression problem of the Poisson-sampled plan tests."""
    rng = np.random.default_rng(0)
    X, y = rng.standard_normal((200, 5)), rng.uniform(-1, 1, 200)
    return make_problem(X, y, data_norm=3 * math.sqrt(5))


def check_sampled_result(res, q, T):
    """T Poisson-sampled steps at (EPS, DELTA): the event, sigma = z' C, replace-one, z = z' / 2."""
    from dp_accounting import dp_event

    from dp_sklearn._accounting import poisson_noise_multiplier

    zp = poisson_noise_multiplier(EPS, DELTA, T, q)
    assert res.event == dp_event.SelfComposedDpEvent(dp_event.PoissonSampledDpEvent(q, dp_event.GaussianDpEvent(zp)), T)
    assert math.isclose(res.info["sigma"], zp * res.info["clip_norm"], rel_tol=1e-6)
    assert res.info["neighboring_relation"] == "REPLACE_ONE" and res.info["sampling_rate"] == q
    assert math.isclose(res.noise_scale, zp / 2, rel_tol=1e-6)
    return zp
