"""Objective perturbation (Kifer et al. 2012; Thakurta 2013 Theorem 3.8): calibration, audits."""

import math

import numpy as np
import pytest

from dp_sklearn import DPLogisticRegression, DPRidge
from dp_sklearn._losses import LogisticLoss
from dp_sklearn._sets import Unconstrained
from dp_sklearn.ledger import compose_epsilon
from dp_sklearn.solvers import get_solver
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
