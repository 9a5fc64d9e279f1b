"""Output perturbation (Chaudhuri et al. 2011; BST 2014 Algorithm 3): sensitivity, Lipschitz bound, audits."""

import math

import numpy as np
import pytest
from dp_accounting import dp_event

from dp_sklearn import DPLogisticRegression, DPRidge
from dp_sklearn._accounting import EpsilonDeltaDpEvent, gaussian_noise_multiplier
from dp_sklearn._losses import LogisticLoss, SquaredLoss
from dp_sklearn._sets import Unconstrained
from dp_sklearn.solvers import get_solver
import dp_sklearn.solvers._output_perturbation as out_mod


from solver_helpers import DELTA, EPS, estimator_audit, glm_problem


@pytest.mark.parametrize("delta", [1e-5, 0.0])
def test_output_perturbation_sensitivity(delta):
    prob = glm_problem(LogisticLoss())
    res = get_solver("output_perturbation").func(prob, Unconstrained(), epsilon=1.0, delta=delta,
                                                 rng=np.random.default_rng(0), tol=1e-9, l2_reg=0.0)
    lam = res.info["l2_reg"]
    # BST Algorithm 3 / Chaudhuri et al.: 2 G / (n Lambda), G = ||x|| sup|phi'| = x_norm; plus 2 tol / Lambda (P5).
    assert res.info["sensitivity"] == pytest.approx(2 * math.sqrt(2) / (200 * lam) + 2e-9 / lam)
    if delta:
        assert isinstance(res.event, dp_event.GaussianDpEvent)
        assert res.event.noise_multiplier == pytest.approx(gaussian_noise_multiplier(1.0, delta))
    else:
        assert res.event == EpsilonDeltaDpEvent(1.0, 0.0)


def test_output_perturbation_squared_loss_lipschitz():
    prob = glm_problem(SquaredLoss())
    res = get_solver("output_perturbation").func(prob, Unconstrained(), epsilon=1.0, delta=1e-5,
                                                 rng=np.random.default_rng(0), l2_reg=0.0)
    lam = res.info["l2_reg"]
    # ||theta*|| <= 1/sqrt(Lambda) since F(0) <= 1/2: G = x_norm (x_norm / sqrt(Lambda) + 1).
    assert res.info["lipschitz"] == pytest.approx(math.sqrt(2) * (math.sqrt(2) / math.sqrt(lam) + 1))


CASES = [
    ("ridge-output_perturbation", "regression",
     lambda d: lambda rng: DPRidge(alpha=50.0, solver="output_perturbation", epsilon=EPS, delta=d, data_norm=1.0,
                                   bounds_y=(-1, 1), fit_intercept=False, random_state=rng), DELTA,
     (out_mod, "gaussian_noise_multiplier", lambda f: lambda e, d: f(e, d) / 10)),
    ("logistic-output_perturbation-pure", "classification",
     lambda d: lambda rng: DPLogisticRegression(C=0.02, solver="output_perturbation", epsilon=EPS, delta=d,
                                                data_norm=1.0, fit_intercept=False, random_state=rng), 0.0,
     (out_mod, "_lipschitz", lambda f: lambda prob, lam: f(prob, lam) / 10)),
]


# name, kind, estimator factory, delta, (module, attribute, scaled-down replacement factory)
@pytest.mark.parametrize("name, kind, factory, delta, patch", CASES, ids=[c[0] for c in CASES])
def test_audit_and_negative_control(name, kind, factory, delta, patch, monkeypatch):
    estimator_audit(name, kind, factory, delta, patch, monkeypatch)


def test_pure_release_is_snapped_and_calibrated():
    # delta = 0: the snapped norm-Gamma (docs/privacy.md, Numeric model): s = Delta / (epsilon - ln kappa),
    # a public box ||theta|| <= sqrt(2 F(0) / Lambda) + tol / Lambda and a power-of-two grid.
    prob = glm_problem(LogisticLoss())
    res = get_solver("output_perturbation").func(prob, Unconstrained(), epsilon=1.0, delta=0.0,
                                                 rng=np.random.default_rng(0), tol=1e-9, l2_reg=0.0)
    info, snap = res.info, res.info["snapping"]
    lam = info["l2_reg"]
    assert snap.bound >= math.sqrt(2 * math.log(2) / lam) + 1e-9 / lam > snap.bound - snap.grid
    assert snap.loss <= 2.0**-10 and snap.dim == prob.dim and snap.epsilon == 1.0
    assert info["scale"] == snap.scale == pytest.approx(info["sensitivity"] / (1.0 - snap.loss), rel=1e-11)
    assert info["sensitivity"] / info["scale"] + snap.loss <= 1.0
    coef = np.ravel(res.coef)
    assert np.array_equal(coef / snap.grid, np.rint(coef / snap.grid)) and np.abs(coef).max() <= snap.bound
