"""DPPoissonRegressor and the capped Poisson loss (dp_sklearn/linear_model/_poisson.py, dp_sklearn/_losses/_poisson.py)."""

import numpy as np
import pytest
from sklearn import config_context
from sklearn.linear_model import PoissonRegressor
from sklearn.preprocessing import StandardScaler
from sklearn.utils.estimator_checks import parametrize_with_checks

from dp_sklearn import BudgetExceededError, DPPoissonRegressor, PrivacyLedger
from dp_sklearn._accounting import composed_gaussian_noise_multiplier
from dp_sklearn._losses import LOSSES
from dp_sklearn._losses._poisson import PoissonLoss
from dp_sklearn.audit import glm_worst_case_pair
from dp_sklearn.ledger import compose_epsilon
from dp_sklearn.linear_model._poisson import HeadL2Penalty
from weight_checks import sample_weight_failures

EPS, DELTA = 1.0, 1e-5
COEF = np.array([0.4, -0.3, 0.2, 0.0, 0.1])


@parametrize_with_checks([DPPoissonRegressor(random_state=0),
                          DPPoissonRegressor(alpha=0.1, bounds_y=(0, 200), random_state=0)],
                         expected_failed_checks=sample_weight_failures)
def test_sklearn_compatible(estimator, check):
    check(estimator)


@pytest.fixture(scope="module")
def counts():
    """A simulated Poisson GLM on standardized features (mean count about e)."""
    rng = np.random.default_rng(0)
    X = StandardScaler().fit_transform(rng.normal(size=(600, 5)))
    return X, rng.poisson(np.exp(1.0 + X @ COEF)).astype(float)


def test_loss_declarations():
    loss = PoissonLoss()
    assert LOSSES["poisson"] is PoissonLoss
    assert loss.lipschitz == 1.0 and loss.needs_target_bound and not loss.needs_bounded_domain
    props = PoissonLoss.properties()
    assert "smooth" in props and "twice_differentiable" not in props and "value_at_zero" in props
    z = np.array([-3.0, -1.0, 0.0, 2.0, 50.0])
    for y in (0.0, 0.3, 1.0):
        below = z <= 0
        np.testing.assert_allclose(loss.phi(z, y)[below], np.exp(z[below]) - y * z[below])  # the Poisson loss
        np.testing.assert_allclose(loss.phi(z, y)[~below], 1.0 + (1.0 - y) * z[~below])  # its tangent at 0
        d = loss.dphi(z, y)
        assert np.all(np.abs(d) <= 1.0)  # bounded for every margin: no bounded domain needed
        np.testing.assert_allclose(d, np.exp(np.minimum(z, 0.0)) - y)
        assert np.all(loss.phi(z, y) >= y - y * np.log(max(y, 1e-300)) - 1e-12)  # >= its minimum (>= 0)
        assert np.all(loss.phi(z, y) <= loss.max_value(np.abs(z)) + 1e-12)
    assert loss.phi(np.zeros(1), 0.7)[0] == loss.value_at_zero


def test_head_l2_penalty_prox_leaves_the_intercept():
    pen = HeadL2Penalty(2.0, n_free=1)
    np.testing.assert_allclose(pen.prox(np.array([3.0, -6.0, 5.0]), 0.5), [1.5, -3.0, 5.0])


@pytest.mark.parametrize("alpha", [0.0, 0.01, 1.0])
def test_epsilon_inf_is_sklearn_poisson_regressor(counts, alpha):
    """The same objective (counts below the bound, no fitted mean reaching it): agreement to 1e-4."""
    X, y = counts
    sk = PoissonRegressor(alpha=alpha, solver="newton-cholesky", tol=1e-12, max_iter=1000).fit(X, y)
    B = 1.01 * np.linalg.norm(X, axis=1).max()
    m = DPPoissonRegressor(alpha=alpha, epsilon=np.inf, bounds_y=(0, 10 * y.max()), data_norm=B).fit(X, y)
    np.testing.assert_allclose(m.coef_, sk.coef_, rtol=1e-4, atol=1e-4 * np.abs(sk.coef_).max())
    assert m.intercept_ == pytest.approx(sk.intercept_, rel=1e-4)
    np.testing.assert_allclose(m.predict(X), sk.predict(X), rtol=1e-4)


def test_calibration(counts):
    """Public bounds_y: the whole epsilon on proximal noisy GD, the composed Gaussian of T steps
    (replace-one sensitivity 2 C); "auto": the bounds_y plan's share first."""
    from dp_sklearn.linear_model._auto import bounds_y_plan

    X, y = counts
    m = DPPoissonRegressor(bounds_y=(0, 30), epsilon=EPS, delta=DELTA, random_state=0).fit(X, y)
    assert m.dp_event_.count == m.n_iter_
    assert m.dp_event_.event.noise_multiplier == pytest.approx(
        composed_gaussian_noise_multiplier(EPS, DELTA, m.n_iter_), rel=1e-6)
    assert compose_epsilon([m.dp_event_], DELTA) <= EPS * (1 + 2e-3)
    auto = DPPoissonRegressor(epsilon=EPS, delta=DELTA, random_state=0).fit(X, y)
    ev, gd = auto.dp_event_.events
    share = bounds_y_plan(EPS, X.shape[0]).share
    assert ev.epsilon == pytest.approx(share * EPS)
    assert gd.event.noise_multiplier == pytest.approx(
        composed_gaussian_noise_multiplier((1 - share) * EPS, DELTA, gd.count), rel=1e-6)
    assert compose_epsilon([auto.dp_event_], DELTA) <= EPS * (1 + 2e-3)
    assert auto.bounds_y_[0] == 0.0 and auto.bounds_y_[1] > 0


def test_private_fit_is_useful():
    """At epsilon 5 and n = 3000 the private coefficients are within 0.15 of the true ones, their signs right."""
    rng = np.random.default_rng(1)
    X = StandardScaler().fit_transform(rng.normal(size=(3000, 5)))
    y = rng.poisson(np.exp(1.0 + X @ COEF)).astype(float)
    m = DPPoissonRegressor(alpha=0.0, bounds_y=(0, 25), epsilon=5.0, random_state=0).fit(X, y)
    assert np.abs(m.coef_ - COEF).max() < 0.15
    assert np.all(np.sign(m.coef_[[0, 1, 2]]) == np.sign(COEF[[0, 1, 2]]))
    assert np.all(m.predict(X) > 0)


def test_penalty_is_honoured(counts):
    X, y = counts
    weak = DPPoissonRegressor(alpha=0.0, bounds_y=(0, 30), epsilon=5.0, random_state=0).fit(X, y)
    strong = DPPoissonRegressor(alpha=1e4, bounds_y=(0, 30), epsilon=5.0, random_state=0).fit(X, y)
    assert np.abs(strong.coef_).max() < 0.01 * np.abs(weak.coef_).max()


def test_refusals_before_reservation(counts):
    X, y = counts
    ledger = PrivacyLedger(max_epsilon=10.0)
    with pytest.raises(ValueError, match="non-negative"):
        DPPoissonRegressor(bounds_y=(0, 30), ledger=ledger).fit(X, np.where(y > 3, -1.0, y))
    with pytest.raises(ValueError, match="bounds_y"):
        DPPoissonRegressor(bounds_y=(-1, 30), ledger=ledger).fit(X, y)
    with pytest.raises(ValueError, match="bounds_y"):
        DPPoissonRegressor(bounds_y=(5, 5), ledger=ledger).fit(X, y)
    with pytest.raises(ValueError, match="alpha"):
        DPPoissonRegressor(alpha=-1.0, ledger=ledger).fit(X, y)
    for solver in ("objective_perturbation", "output_perturbation", "ssp", "noisy_newton"):
        with pytest.raises(ValueError, match="solver"):
            DPPoissonRegressor(solver=solver, ledger=ledger).fit(X, y)
    assert ledger.records == [] and ledger.pending == []
    with pytest.raises(BudgetExceededError):
        DPPoissonRegressor(epsilon=20.0, ledger=ledger).fit(X, y)
    assert ledger.records == [] and ledger.pending == []
    ledger.delete()


def _count_pair():
    """The worst-case pair (x = +e1 in D, -e1 in D') with count 0 on the differing record: at the
    start its gradient exp(0) x has the largest norm, and the two records pull opposite ways."""
    (X, _), (Xp, _) = glm_worst_case_pair(n=10, n_features=2, kind="regression", data_norm=1.0)
    y = np.zeros(10)
    return (X, y), (Xp, y.copy())


def _mechanism(X, y, rng):
    with config_context(skip_parameter_validation=True):  # the audit times the mechanism only
        m = DPPoissonRegressor(alpha=0.0, bounds_y=(0, 1), epsilon=EPS, delta=DELTA, data_norm=1.0,
                               fit_intercept=False, random_state=rng).fit(X, y)
    return np.ravel(m.coef_)


def test_audit_and_negative_control(noisy_gd_audit):
    D, D_prime = _count_pair()
    noisy_gd_audit(_mechanism, D, D_prime)


def test_auto_count_bound_with_mostly_zeros():
    """Most counts zero: the released range collapses onto 0, and the count bound is floored at 1."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(2000, 3))
    y = rng.poisson(np.exp(-1.5 + X @ [0.5, -0.3, 0.0])).astype(float)
    m = DPPoissonRegressor(alpha=0.0, epsilon=1.0, random_state=0).fit(X, y)
    assert m.bounds_y_ == (0.0, 1.0)
    assert -2.5 < m.intercept_ < -1.0 and m.coef_[0] > 0.1 and m.coef_[1] < -0.1


def test_auto_count_bound_at_small_epsilon_n_warns():
    """Below epsilon n of about 430 the plan of bounds_y="auto" is "center" (up to 95% of epsilon on
    two medians, no side): the count bound is the released median, so every count above it is
    clipped and no fitted mean exceeds it. The fit did that silently; it now warns (a public
    condition: epsilon and n_samples), as the least-squares regressors do."""
    import warnings

    from dp_sklearn.linear_model._auto import bounds_y_plan

    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 3))
    y = rng.poisson(np.exp(1.5 + X @ [0.5, -0.4, 0.0])).astype(float)
    assert bounds_y_plan(1.0, 200).mode == "center"
    with pytest.warns(UserWarning, match="epsilon \\* n_samples"):
        m = DPPoissonRegressor(epsilon=1.0, random_state=0).fit(X, y)
    assert m.bounds_y_[1] < y.max()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        DPPoissonRegressor(epsilon=1.0, bounds_y=(0, 30), random_state=0).fit(X, y)
        DPPoissonRegressor(epsilon=5.0, random_state=0).fit(X, y)  # epsilon n = 1000: the "range" plan


def test_predict_is_finite_and_capped_at_y_max_on_far_rows():
    # The fitted mean is capped at y_max (the loss is continued by its tangent above it, no
    # count lies above it) and rows are clipped to data_norm_: a row in raw units far beyond
    # the bound (exp(<x, w>) overflowed to inf before) predicts at most y_max, finite.
    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 3))
    y = rng.poisson(np.exp(X @ np.array([0.8, -0.4, 0.6]))).astype(float)
    est = DPPoissonRegressor(epsilon=5.0, bounds_y=(0.0, 20.0), random_state=0).fit(X, y)
    far = np.array([[1e4, 0.0, 0.0], [-1e4, 0.0, 0.0], [0.0, 0.0, 3e5]])
    got = est.predict(far)
    unit = far / np.linalg.norm(far, axis=1, keepdims=True)
    score = est.data_norm_ * unit @ est.coef_ + est.intercept_
    np.testing.assert_allclose(got, np.minimum(np.exp(score), 20.0), rtol=1e-12)
    assert np.all(np.isfinite(got)) and got.max() <= 20.0 and got.min() > 0.0
    # a released model steep enough for the cap to bind on the clipped row: the mean is y_max
    est.coef_ = np.array([10.0, 0.0, 0.0])
    assert np.exp(est.data_norm_ * 10.0 + est.intercept_) > 20.0
    np.testing.assert_allclose(est.predict(far), [20.0, np.exp(-est.data_norm_ * 10.0 + est.intercept_),
                                                  np.exp(est.intercept_)], rtol=1e-12)
