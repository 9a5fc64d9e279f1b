"""Gaussian Frank-Wolfe over the l2 ball (TTZ 2015 Algorithm 5): calibration against the analytic
Gaussian, paper formula, audit with negative control, epsilon = inf."""

import math

import pytest

from dp_sklearn._sets import L2Ball
from dp_sklearn.solvers._frank_wolfe_gaussian import frank_wolfe_gaussian

from solver_helpers import PAPER_C, PAPER_DELTA, PAPER_EPS, PAPER_T, check_epsilon_inf_converges, check_tight_gaussian_calibration, paper_sigma, solver_audit, solver_mechanism, undernoise_gaussian_steps


@pytest.mark.parametrize("solver, constraint", [(frank_wolfe_gaussian, L2Ball(1.0))])
@pytest.mark.parametrize("eps, delta, T", [(1.0, 1e-5, 1), (0.5, 1e-6, 30), (4.0, 1e-2, 200)])
def test_tight_calibration_matches_analytic_gaussian(solver, constraint, eps, delta, T):
    check_tight_gaussian_calibration(solver, constraint, eps, delta, T)


def test_paper_formula_frank_wolfe_gaussian(problem):
    n, C, eps, delta, T = problem.n, PAPER_C, PAPER_EPS, PAPER_DELTA, PAPER_T

    # TTZ Algorithm 5: sigma^2 = 32 L_2^2 T log^2(n/delta) / (n eps)^2 on the mean gradient.
    ttz5 = math.sqrt(32 * C**2 * T) * math.log(n / delta) / (eps * n)
    assert paper_sigma(problem, frank_wolfe_gaussian, L2Ball(1.0)) / n == pytest.approx(ttz5)


def test_audit_calibrated_passes():
    solver_audit(solver_mechanism(frank_wolfe_gaussian, L2Ball(1.0), max_iter=1), private=True)


def test_audit_catches_undernoised(monkeypatch):
    undernoise_gaussian_steps(monkeypatch)  # the shared T-Gaussian-steps calibration, 8x less noise
    solver_audit(solver_mechanism(frank_wolfe_gaussian, L2Ball(1.0), max_iter=1), private=False)


@pytest.mark.parametrize("solver, constraint, kw", [(frank_wolfe_gaussian, L2Ball(0.6), {"clip_norm": 2.0})])
def test_frank_wolfe_epsilon_inf_converges_to_the_exact_minimizer(solver, constraint, kw):
    check_epsilon_inf_converges(solver, constraint, kw, gap=1e-4)
