"""DPLinearSVC and the squared hinge loss (dp_sklearn/linear_model/_svm.py, dp_sklearn/_losses/_squared_hinge.py)."""

import numpy as np
import pytest
from sklearn import config_context
from sklearn.datasets import load_breast_cancer
from sklearn.preprocessing import StandardScaler
from sklearn.svm import LinearSVC
from sklearn.utils.estimator_checks import parametrize_with_checks

from dp_sklearn import DPLinearSVC, PrivacyLedger
from dp_sklearn._accounting import composed_gaussian_noise_multiplier
from dp_sklearn._losses._squared_hinge import SquaredHingeLoss
from dp_sklearn.audit import glm_worst_case_pair
from dp_sklearn.ledger import compose_epsilon
from weight_checks import sample_weight_failures

EPS, DELTA = 1.0, 1e-5


@parametrize_with_checks([DPLinearSVC(random_state=0), DPLinearSVC(solver="output_perturbation", random_state=0)],
                         expected_failed_checks=sample_weight_failures)
def test_sklearn_compatible(estimator, check):
    check(estimator)


@pytest.fixture(scope="module")
def breast_cancer():
    X, y = load_breast_cancer(return_X_y=True)
    return StandardScaler().fit_transform(X), y


def test_loss_declarations():
    loss = SquaredHingeLoss()
    assert loss.needs_bounded_domain and not loss.needs_target_bound
    assert "twice_differentiable" not in loss.properties() and "smooth" in loss.properties()
    z = np.array([-1.0, 0.0, 0.5, 2.0])
    np.testing.assert_allclose(loss.phi(z, 1.0), [4.0, 1.0, 0.25, 0.0])
    np.testing.assert_allclose(loss.dphi(z, 1.0), [-4.0, -2.0, -1.0, 0.0])


@pytest.mark.parametrize("C", [0.01, 0.1])
def test_epsilon_inf_is_liblinear(breast_cancer, C):
    """liblinear penalizes the intercept through intercept_scaling: with intercept_scaling = data_norm
    its objective is ours exactly."""
    X, y = breast_cancer
    B = 1.01 * np.linalg.norm(X, axis=1).max()
    sk = LinearSVC(C=C, intercept_scaling=B, tol=1e-10, max_iter=100000, dual=False).fit(X, y)
    m = DPLinearSVC(C=C, epsilon=np.inf, data_norm=B, tol=1e-10).fit(X, y)
    np.testing.assert_allclose(m.coef_, sk.coef_, rtol=1e-4, atol=1e-4 * np.abs(sk.coef_).max())
    np.testing.assert_allclose(m.intercept_, sk.intercept_, rtol=1e-4)


def test_calibration(breast_cancer):
    X, y = breast_cancer
    m = DPLinearSVC(epsilon=EPS, delta=DELTA, random_state=0).fit(X, y)
    z = composed_gaussian_noise_multiplier(EPS, DELTA, m.n_iter_)
    assert m.dp_event_.event.noise_multiplier == pytest.approx(z, rel=1e-6) and m.dp_event_.count == m.n_iter_
    assert compose_epsilon([m.dp_event_], DELTA) <= EPS * (1 + 2e-3)


def test_refusals_before_reservation(breast_cancer):
    X, y = breast_cancer
    ledger = PrivacyLedger(max_epsilon=10.0)
    with pytest.raises(ValueError, match="solver"):
        DPLinearSVC(solver="objective_perturbation", ledger=ledger).fit(X, y)  # needs phi'' everywhere
    with pytest.raises(ValueError, match="binary"):
        DPLinearSVC(ledger=ledger).fit(X, np.arange(len(y)) % 3)
    assert ledger.records == [] and ledger.pending == []
    ledger.delete()


def _mechanism(X, y, rng):
    with config_context(skip_parameter_validation=True):  # the audit times the mechanism only
        m = DPLinearSVC(epsilon=EPS, delta=DELTA, data_norm=1.0, fit_intercept=False, random_state=rng).fit(X, y)
    return np.ravel(m.coef_)


def test_audit_and_negative_control(noisy_gd_audit):
    D, D_prime = glm_worst_case_pair(n=10, n_features=2, kind="classification", data_norm=1.0)
    noisy_gd_audit(_mechanism, D, D_prime)
