"""DPHuberRegressor and the Huber loss (dp_sklearn/linear_model/_huber.py, dp_sklearn/_losses/_huber.py)."""

import math

import numpy as np
import pytest
from sklearn import config_context
from sklearn.datasets import load_diabetes
from sklearn.linear_model import HuberRegressor
from sklearn.preprocessing import StandardScaler
from sklearn.utils.estimator_checks import parametrize_with_checks

from dp_sklearn import BudgetExceededError, DPHuberRegressor, PrivacyLedger
from dp_sklearn._accounting import composed_gaussian_noise_multiplier
from dp_sklearn._losses import LOSSES
from dp_sklearn._losses._huber import HuberLoss
from dp_sklearn.audit import glm_worst_case_pair
from dp_sklearn.ledger import compose_epsilon
from weight_checks import sample_weight_failures

EPS, DELTA = 1.0, 1e-5


@parametrize_with_checks([DPHuberRegressor(random_state=0), DPHuberRegressor(huber_threshold=2.0, random_state=0)],
                         expected_failed_checks=sample_weight_failures)
def test_sklearn_compatible(estimator, check):
    check(estimator)


@pytest.fixture(scope="module")
def diabetes():
    X, y = load_diabetes(return_X_y=True)
    return StandardScaler().fit_transform(X), y


def test_loss_declarations():
    loss = HuberLoss()
    assert LOSSES["huber"] is HuberLoss
    assert loss.lipschitz == 1.0 and not loss.needs_target_bound and not loss.needs_bounded_domain
    assert "twice_differentiable" not in loss.properties() and "gram_path" not in loss.properties()
    z = np.array([-5.0, -1.0, 0.0, 0.5, 3.0])
    np.testing.assert_allclose(loss.phi(z, 0.0), [4.5, 0.5, 0.0, 0.125, 2.5])
    np.testing.assert_allclose(loss.dphi(z, 0.0), [-1.0, -1.0, 0.0, 0.5, 1.0])
    assert np.abs(loss.dphi(np.zeros(3), np.array([-1e12, 0.0, 1e12]))).max() == 1.0  # no target bound


@pytest.mark.parametrize("alpha", [0.0, 1e-3])
def test_epsilon_inf_is_sklearn_huber_at_its_scale(diabetes, alpha):
    """scikit-learn's minimizer at its fitted scale_ minimizes sum H_t + alpha_ours ||w||^2 with
    t = 1.35 scale_ and alpha_ours = alpha scale_ / 2; without a penalty the two fits agree to 1e-4."""
    X, y = diabetes
    sk = HuberRegressor(epsilon=1.35, alpha=alpha, max_iter=10000, tol=1e-12).fit(X, y)
    B = 1.01 * np.linalg.norm(X, axis=1).max()
    m = DPHuberRegressor(huber_threshold=1.35 * sk.scale_, alpha=alpha * sk.scale_ / 2, epsilon=np.inf,
                         data_norm=B, tol=1e-10).fit(X, y)
    if alpha == 0.0:
        np.testing.assert_allclose(m.coef_, sk.coef_, rtol=1e-4, atol=1e-4 * np.abs(sk.coef_).max())
        assert m.intercept_ == pytest.approx(sk.intercept_, rel=1e-4)
    else:  # ours penalizes the intercept in normalized units (documented): close, not equal
        np.testing.assert_allclose(m.coef_, sk.coef_, rtol=0, atol=0.02 * np.abs(sk.coef_).max())


def test_calibration(diabetes):
    """dp_event_: the share of bounds_y="auto"'s plan on the private median and range, the rest on
    noisy GD whose noise is the composed Gaussian of T steps with replace-one sensitivity 2 C."""
    from dp_sklearn.linear_model._auto import bounds_y_plan

    X, y = diabetes
    m = DPHuberRegressor(epsilon=EPS, delta=DELTA, random_state=0).fit(X, y)
    auto, gd = m.dp_event_.events
    share = bounds_y_plan(EPS, X.shape[0]).share
    assert auto.epsilon == pytest.approx(share * EPS) and auto.delta == 0.0
    T = gd.count
    assert T == m.n_iter_
    z = composed_gaussian_noise_multiplier((1.0 - share) * EPS, DELTA, T)
    assert gd.event.noise_multiplier == pytest.approx(z, rel=1e-6)
    assert compose_epsilon([m.dp_event_], DELTA) <= EPS * (1 + 2e-3)
    assert m.epsilon_ == EPS and m.huber_threshold_ > 0 and np.isfinite(m.center_)
    fixed = DPHuberRegressor(huber_threshold=50.0, epsilon=EPS, delta=DELTA, random_state=0).fit(X, y)
    assert fixed.center_ == 0.0 and fixed.huber_threshold_ == 50.0
    assert compose_epsilon([fixed.dp_event_], DELTA) <= EPS * (1 + 2e-3)


def test_refusals_before_reservation(diabetes):
    X, y = diabetes
    ledger = PrivacyLedger(max_epsilon=10.0)
    with pytest.raises(ValueError, match="solver"):
        DPHuberRegressor(solver="objective_perturbation", ledger=ledger).fit(X, y)  # needs phi'' everywhere
    with pytest.raises(ValueError, match="solver"):
        DPHuberRegressor(solver="ssp", ledger=ledger).fit(X, y)  # needs the Gram path
    with pytest.raises(ValueError, match="huber_threshold"):
        DPHuberRegressor(huber_threshold=0.0, ledger=ledger).fit(X, y)
    assert ledger.records == [] and ledger.pending == []
    with pytest.raises(BudgetExceededError):
        DPHuberRegressor(epsilon=20.0, ledger=ledger).fit(X, y)
    assert ledger.records == [] and ledger.pending == []
    ledger.delete()


def _pair_with_unbounded_targets():
    """The worst-case pair (x = +e1 in D, -e1 in D') with the differing record's target at 1e6 in both:
    the residual saturates the Huber derivative, and the two records pull the model opposite ways."""
    (X, y), (Xp, yp) = glm_worst_case_pair(n=10, n_features=2, kind="regression", data_norm=1.0)
    y, yp = y.copy(), yp.copy()
    y[-1], yp[-1] = 1e6, 1e6
    return (X, y), (Xp, yp)


def _mechanism(X, y, rng):
    with config_context(skip_parameter_validation=True):  # the audit times the mechanism only
        m = DPHuberRegressor(huber_threshold=1.0, epsilon=EPS, delta=DELTA, data_norm=1.0, fit_intercept=False,
                             random_state=rng).fit(X, y)
    return np.ravel(m.coef_)


def test_audit_without_a_target_bound_and_negative_control(noisy_gd_audit):
    """A target of 1e6 (no bound anywhere) does not break the guarantee; 10x less noise is caught."""
    D, D_prime = _pair_with_unbounded_targets()
    noisy_gd_audit(_mechanism, D, D_prime)
