"""Private mirror descent (TTZ 2015 Algorithm 1) over l1 and l2 balls: calibration against the analytic
Gaussian, added-noise scale, paper formula, audits with negative controls, epsilon = inf, utility."""

import math

import numpy as np
import pytest
from dp_accounting import dp_event
from scipy.special import logsumexp

from dp_sklearn._exact import minimize
from dp_sklearn._sets import L1Ball, L2Ball
from dp_sklearn.solvers._mirror_descent import mirror_descent

from solver_helpers import DELTA, EPS, PAPER_C, PAPER_DELTA, PAPER_EPS, PAPER_T, check_tight_gaussian_calibration, lasso_data, make_problem, paper_sigma, solver_audit, solver_mechanism, undernoise_gaussian_steps


@pytest.mark.parametrize("solver, constraint", [(mirror_descent, L1Ball(1.0)), (mirror_descent, L2Ball(1.0))])
@pytest.mark.parametrize("eps, delta, T", [(1.0, 1e-5, 1), (0.5, 1e-6, 30), (4.0, 1e-2, 200)])
def test_tight_calibration_matches_analytic_gaussian(solver, constraint, eps, delta, T):
    check_tight_gaussian_calibration(solver, constraint, eps, delta, T)


def test_mirror_descent_added_noise_has_the_calibrated_scale():
    # Zero features and a huge ball: theta_2 = -eta u / n, the average of one iterate.
    n, p = 40, 4000
    prob = make_problem(np.zeros((n, p)), np.ones(n))
    res = mirror_descent(prob, L2Ball(1e9), epsilon=EPS, delta=DELTA, rng=np.random.default_rng(2), max_iter=1,
                         clip_norm=0.25)
    u = -res.coef * n / res.info["step_size"]
    assert np.std(u) == pytest.approx(2 * 0.25 * res.noise_scale, rel=0.05)


def test_paper_formula_mirror_descent(problem):
    n, C, eps, delta, T = problem.n, PAPER_C, PAPER_EPS, PAPER_DELTA, PAPER_T

    # TTZ Algorithm 1: sigma^2 = 32 L^2 T log^2(T/delta) / (eps n)^2 on the mean gradient.
    ttz1 = math.sqrt(32 * C**2 * T) * math.log(T / delta) / (eps * n)
    assert paper_sigma(problem, mirror_descent, L2Ball(1.0)) / n == pytest.approx(ttz1)


CASES = {
    "md_l1": (mirror_descent, L1Ball(1.0)),
    "md_l2": (mirror_descent, L2Ball(1.0)),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_audit_calibrated_passes(case):
    solver_audit(solver_mechanism(*CASES[case], max_iter=1), private=True)


@pytest.mark.parametrize("case", sorted(CASES))
def test_audit_catches_undernoised(case, monkeypatch):
    undernoise_gaussian_steps(monkeypatch)
    solver_audit(solver_mechanism(*CASES[case], max_iter=1), private=False)


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
