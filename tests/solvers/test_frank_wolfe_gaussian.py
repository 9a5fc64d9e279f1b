"""Gaussian Frank-Wolfe over the l2 ball (TTZ 2015 Algorithm 5): calibration against the analytic
Gaussian, paper formula, audit with negative control, epsilon = inf."""

import math

import numpy as np
import pytest
from dp_accounting import dp_event

from dp_sklearn._exact import minimize
from dp_sklearn._sets import L2Ball
from dp_sklearn.audit import audit_epsilon, glm_worst_case_pair
from dp_sklearn.solvers import _common, _frank_wolfe_gaussian
from dp_sklearn.solvers._frank_wolfe_gaussian import frank_wolfe_gaussian

from solver_helpers import DELTA, EPS, analytic_gaussian_delta, lasso_data, make_problem, run_solver


@pytest.mark.parametrize("solver, constraint", [(frank_wolfe_gaussian, L2Ball(1.0))])
@pytest.mark.parametrize("eps, delta, T", [(1.0, 1e-5, 1), (0.5, 1e-6, 30), (4.0, 1e-2, 200)])
def test_tight_calibration_matches_analytic_gaussian(solver, constraint, eps, delta, T):
    X, y = lasso_data(n=50, p=5)
    res = solver(make_problem(X, y, data_norm=3.0), constraint, epsilon=eps, delta=delta,
                 rng=np.random.default_rng(0), max_iter=T)
    z = res.noise_scale
    assert analytic_gaussian_delta(eps, z / math.sqrt(T)) == pytest.approx(delta, rel=1e-5)
    assert res.event == dp_event.SelfComposedDpEvent(dp_event.GaussianDpEvent(z), T)
    assert res.info["sigma"] == pytest.approx(2 * res.info["clip_norm"] * z)


def test_paper_formula_frank_wolfe_gaussian(problem):
    n, C = problem.n, 0.3
    eps, delta, T = 1.0, 1e-5, 40

    def sigma(solver, constraint, **kw):
        return run_solver(solver, problem, constraint, eps, delta, T, "paper", clip_norm=C, **kw).info["sigma"]

    # TTZ Algorithm 5: sigma^2 = 32 L_2^2 T log^2(n/delta) / (n eps)^2 on the mean gradient.
    ttz5 = math.sqrt(32 * C**2 * T) * math.log(n / delta) / (eps * n)
    assert sigma(frank_wolfe_gaussian, L2Ball(1.0)) / n == pytest.approx(ttz5)


def _mechanism(solver, constraint, T):
    def mech(X, y, rng):
        return solver(make_problem(X, y), constraint, epsilon=EPS, delta=DELTA, rng=rng, max_iter=T).coef

    return mech


CASES = {
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


@pytest.mark.parametrize("solver, constraint, kw", [(frank_wolfe_gaussian, L2Ball(0.6), {"clip_norm": 2.0})])
def test_frank_wolfe_epsilon_inf_converges_to_the_exact_minimizer(solver, constraint, kw):
    X, y = lasso_data(n=500, p=10, seed=1)
    prob = make_problem(X, y, data_norm=math.sqrt(10))
    exact = minimize(prob, constraint, tol=1e-10)
    res = solver(prob, constraint, epsilon=np.inf, delta=DELTA, rng=np.random.default_rng(0), max_iter=2000, **kw)
    assert isinstance(res.event, dp_event.NonPrivateDpEvent)
    f = prob.loss.value
    assert f(prob.X, prob.y, res.coef) - f(prob.X, prob.y, exact) < 1e-4
