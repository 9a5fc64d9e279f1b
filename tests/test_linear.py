"""DPLinearRegression (dp_sklearn/linear_model/_linear.py): checks, calibration, audit, epsilon = inf."""

import math

import numpy as np
import pytest
from scipy.stats import norm
from sklearn import config_context
from sklearn.datasets import load_diabetes
from sklearn.linear_model import LinearRegression
from sklearn.preprocessing import StandardScaler
from sklearn.utils.estimator_checks import parametrize_with_checks

import dp_sklearn.solvers._ssp as ssp_mod
from dp_sklearn import BudgetExceededError, DPLinearRegression, PrivacyLedger
from dp_sklearn._accounting import gaussian_noise_multiplier
from dp_sklearn._private_mean import Y_CENTER_SHARE
from dp_sklearn.audit import audit_epsilon, glm_worst_case_pair
from dp_sklearn.ledger import compose_epsilon
from weight_checks import sample_weight_failures

EPS, DELTA = 1.0, 1e-5


@parametrize_with_checks([DPLinearRegression(random_state=0), DPLinearRegression(solver="noisy_gd", random_state=0)],
                         expected_failed_checks=sample_weight_failures)
def test_sklearn_compatible(estimator, check):
    check(estimator)


@pytest.fixture(scope="module")
def diabetes():
    X, y = load_diabetes(return_X_y=True)
    return StandardScaler().fit_transform(X), y


def test_epsilon_inf_is_linear_regression(diabetes):
    """The non-private fit is scikit-learn's LinearRegression (no clipping: public bounds cover the data)."""
    X, y = diabetes
    sk = LinearRegression().fit(X, y)
    B = 1.01 * np.linalg.norm(X, axis=1).max()
    m = DPLinearRegression(epsilon=np.inf, data_norm=B, bounds_y=(y.min() - 1, y.max() + 1)).fit(X, y)
    np.testing.assert_allclose(m.coef_, sk.coef_, rtol=1e-4, atol=1e-4 * np.abs(sk.coef_).max())
    assert m.intercept_ == pytest.approx(sk.intercept_, rel=1e-4)


def test_calibration_is_adassp_after_the_private_mean(diabetes):
    """dp_event_ = Laplace mean of y (10%) + three Gaussian releases at 90% of epsilon (closed form)."""
    X, y = diabetes
    m = DPLinearRegression(epsilon=EPS, delta=DELTA, bounds_y=(25, 346), random_state=0).fit(X, y)
    assert m.solver_ == "ssp" and m.epsilon_ == EPS
    laplace, gauss = m.dp_event_.events
    assert laplace.noise_multiplier == pytest.approx(1.0 / (Y_CENTER_SHARE * EPS))
    eps_ssp = (1 - Y_CENTER_SHARE) * EPS
    s = gauss.event.noise_multiplier / math.sqrt(gauss.count)  # three releases = one of multiplier z / sqrt(3)
    assert s == pytest.approx(gaussian_noise_multiplier(eps_ssp, DELTA))
    delta_cf = norm.cdf(-eps_ssp * s + 1 / (2 * s)) - math.exp(eps_ssp) * norm.cdf(-eps_ssp * s - 1 / (2 * s))
    assert delta_cf == pytest.approx(DELTA, rel=1e-3)  # Balle & Wang 2018, Theorem 8
    assert compose_epsilon([m.dp_event_], DELTA) <= EPS * (1 + 1e-3)


def test_budget_exceeded_reserves_nothing(diabetes):
    X, y = diabetes
    ledger = PrivacyLedger(max_epsilon=0.5)
    with pytest.raises(BudgetExceededError):
        DPLinearRegression(epsilon=1.0, bounds_y=(25, 346), ledger=ledger, random_state=0).fit(X, y)
    assert ledger.records == [] and ledger.pending == []
    ledger.delete()


def _mechanism(X, y, rng):
    with config_context(skip_parameter_validation=True):  # the audit times the mechanism only
        m = DPLinearRegression(epsilon=EPS, delta=DELTA, data_norm=1.0, bounds_y=(-1, 1), fit_intercept=False,
                               random_state=rng).fit(X, y)
    return np.ravel(m.coef_)


def test_audit_passes_and_catches_undernoised(monkeypatch):
    D, D_prime = glm_worst_case_pair(n=10, n_features=2, kind="regression", data_norm=1.0)
    res = audit_epsilon(_mechanism, D, D_prime, n_samples=1000, delta=DELTA, random_state=0)
    assert res.epsilon_lower <= EPS, res
    real = ssp_mod.gaussian_steps_plan

    def undernoised(epsilon, delta, T):
        z, event, eps = real(epsilon, delta, T)
        return z / 100, event, eps  # 100x, as tests/solvers/test_ssp.py

    monkeypatch.setattr(ssp_mod, "gaussian_steps_plan", undernoised)
    # 2000 runs, as test_ssp.py's control of the same release (1000 left it at 0.94 on some streams)
    bad = audit_epsilon(_mechanism, D, D_prime, n_samples=2000, delta=DELTA, random_state=1)
    assert bad.epsilon_lower > EPS, bad


def test_no_alpha_and_refuses_bad_input(diabetes):
    X, y = diabetes
    assert "alpha" not in DPLinearRegression().get_params()
    with pytest.raises(ValueError, match="solver"):
        DPLinearRegression(solver="frank_wolfe").fit(X, y)  # an l1-ball solver: not this objective
