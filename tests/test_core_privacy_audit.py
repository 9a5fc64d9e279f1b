"""Statistical privacy audits of the issue-2 mechanisms, each with a negative control (SPEC P9b).

Each audit fits the real estimator many times on a worst-case replace-one pair
(the differing record sits on the data bound and pulls the model the opposite
way) and asserts that the empirical lower bound on epsilon does not exceed the
claimed epsilon. The negative control runs the same mechanism with its noise
scaled down and asserts that the same audit catches it (lower bound > epsilon).
"""

import numpy as np
import pytest
from sklearn import config_context

import dp_sklearn.solvers._common as common_mod
import dp_sklearn.solvers._frank_wolfe as fw_mod
import dp_sklearn.solvers._noisy_gd as gd_mod
import dp_sklearn.solvers._objective_perturbation as op_mod
import dp_sklearn.solvers._output_perturbation as out_mod
from dp_sklearn import DPLasso, DPLogisticRegression, DPRidge
from dp_sklearn.audit import audit_epsilon, glm_worst_case_pair

EPS = 1.0
DELTA = 1e-5


def _mechanism(make):
    def run(X, y, rng):
        # Hyperparameters are validated in test_validation.py; the audit times the mechanism only.
        with config_context(skip_parameter_validation=True):
            m = make(rng).fit(X, y)
        return np.concatenate([np.ravel(m.coef_), np.ravel(m.intercept_)])

    return run


# name, kind, estimator factory, delta, (module, attribute, scaled-down replacement factory)
CASES = [
    ("ridge-noisy_gd", "regression",
     lambda d: lambda rng: DPRidge(solver="noisy_gd", epsilon=EPS, delta=d, data_norm=1.0, bounds_y=(-1, 1),
                                   random_state=rng), DELTA,
     (common_mod, "composed_gaussian_noise_multiplier", lambda f: lambda e, d, T: f(e, d, T) / 10)),
    ("logistic-noisy_gd", "classification",
     lambda d: lambda rng: DPLogisticRegression(solver="noisy_gd", epsilon=EPS, delta=d, data_norm=1.0,
                                                random_state=rng), DELTA,
     (common_mod, "composed_gaussian_noise_multiplier", lambda f: lambda e, d, T: f(e, d, T) / 10)),
    ("ridge-output_perturbation", "regression",
     lambda d: lambda rng: DPRidge(alpha=50.0, solver="output_perturbation", epsilon=EPS, delta=d, data_norm=1.0,
                                   bounds_y=(-1, 1), fit_intercept=False, random_state=rng), DELTA,
     (out_mod, "gaussian_noise_multiplier", lambda f: lambda e, d: f(e, d) / 10)),
    ("logistic-output_perturbation-pure", "classification",
     lambda d: lambda rng: DPLogisticRegression(C=0.02, solver="output_perturbation", epsilon=EPS, delta=d,
                                                data_norm=1.0, fit_intercept=False, random_state=rng), 0.0,
     (out_mod, "_lipschitz", lambda f: lambda prob, lam: f(prob, lam) / 10)),
    ("logistic-objective_perturbation", "classification",
     lambda d: lambda rng: DPLogisticRegression(solver="objective_perturbation", epsilon=EPS, delta=d,
                                                data_norm=1.0, fit_intercept=False, random_state=rng), DELTA,
     (op_mod, "_zeta", lambda f: lambda prob, c: f(prob, c) / 30)),
    ("ridge-objective_perturbation-pure", "regression",
     lambda d: lambda rng: DPRidge(solver="objective_perturbation", epsilon=EPS, delta=d, data_norm=1.0,
                                   bounds_y=(-1, 1), fit_intercept=False, random_state=rng), 0.0,
     (op_mod, "_zeta", lambda f: lambda prob, c: f(prob, c) / 30)),
    ("lasso-frank_wolfe", "regression",
     lambda d: lambda rng: DPLasso(solver="frank_wolfe", epsilon=EPS, delta=d, data_norm=1.0, bounds_y=(-1, 1),
                                   max_iter=5, random_state=rng), DELTA,
     (fw_mod, "zcdp_rho", lambda f: lambda e, d: f(e, d) * 1e4)),
]


@pytest.mark.parametrize("name, kind, factory, delta, patch", CASES, ids=[c[0] for c in CASES])
def test_audit_and_negative_control(name, kind, factory, delta, patch, monkeypatch):
    D, D_prime = glm_worst_case_pair(n=10, n_features=2, kind=kind, data_norm=1.0)
    mech = _mechanism(factory(delta))
    res = audit_epsilon(mech, D, D_prime, n_samples=2000, delta=delta, random_state=0)
    assert res.epsilon_lower <= EPS, (name, res)
    module, attr, scaled = patch
    monkeypatch.setattr(module, attr, scaled(getattr(module, attr)))
    bad = audit_epsilon(mech, D, D_prime, n_samples=2000, delta=delta, random_state=1)
    assert bad.epsilon_lower > EPS, (name, bad)
