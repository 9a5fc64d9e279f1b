"""DPQuantileRegressor and the smoothed pinball loss (dp_sklearn/linear_model/_quantile.py, dp_sklearn/_losses/_pinball.py)."""

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn import config_context
from sklearn.datasets import load_diabetes
from sklearn.linear_model import QuantileRegressor
from sklearn.preprocessing import StandardScaler
from sklearn.utils.estimator_checks import parametrize_with_checks

from dp_sklearn import BudgetExceededError, DPQuantileRegressor, PrivacyLedger
from dp_sklearn._accounting import composed_gaussian_noise_multiplier
from dp_sklearn._losses import LOSSES
from dp_sklearn._losses._pinball import PinballLoss, pinball
from dp_sklearn.audit import glm_worst_case_pair
from dp_sklearn.ledger import compose_epsilon
from dp_sklearn.linear_model._quantile import exact_quantile_fit
from weight_checks import sample_weight_failures

EPS, DELTA = 1.0, 1e-5


@parametrize_with_checks([DPQuantileRegressor(random_state=0),
                          DPQuantileRegressor(quantile=0.8, alpha=0.01, smoothing=2.0, random_state=0)],
                         expected_failed_checks=sample_weight_failures)
def test_sklearn_compatible(estimator, check):
    check(estimator)


@pytest.fixture(scope="module")
def diabetes():
    X, y = load_diabetes(return_X_y=True)
    return StandardScaler().fit_transform(X), y


def test_loss_declarations():
    loss = PinballLoss(0.8)
    assert LOSSES["pinball"] is PinballLoss
    assert loss.lipschitz == pytest.approx(0.8) and loss.derivative_bound() == pytest.approx(0.8)
    assert not loss.needs_target_bound and not loss.needs_bounded_domain
    props = PinballLoss.properties()
    assert "smooth" in props and "twice_differentiable" not in props and "gram_path" not in props
    z = np.array([-5.0, -0.8, 0.0, 0.1, 3.0])  # u = z - y with y = 0: quadratic on [-0.8, 0.2]
    np.testing.assert_allclose(loss.dphi(z, 0.0), [-0.8, -0.8, 0.0, 0.1, 0.2])
    np.testing.assert_allclose(loss.phi(z, 0.0), [0.8 * 5 - 0.32, 0.32, 0.0, 0.005, 0.2 * 3 - 0.02])
    # the Moreau envelope of width 1: rho_q - max(q, 1 - q)^2 / 2 <= phi <= rho_q, and phi' is its derivative
    u = np.linspace(-6, 6, 1201)
    rho = pinball(-u, 0.8)
    assert np.all(loss.phi(u, 0.0) <= rho + 1e-12) and np.all(loss.phi(u, 0.0) >= rho - 0.32 - 1e-12)
    np.testing.assert_allclose(np.gradient(loss.phi(u, 0.0), u)[1:-1], loss.dphi(u, 0.0)[1:-1], atol=2e-2)
    assert np.abs(loss.dphi(np.zeros(3), np.array([-1e12, 0.0, 1e12]))).max() == 0.8  # no target bound


@pytest.mark.parametrize("quantile, alpha", [(0.5, 0.0), (0.5, 0.1), (0.9, 0.05), (0.2, 0.0)])
def test_epsilon_inf_is_sklearn_quantile_regressor(diabetes, quantile, alpha):
    """The same objective and the same alpha: the exact minimizers agree to 1e-4 relative."""
    X, y = diabetes
    sk = QuantileRegressor(quantile=quantile, alpha=alpha, solver="highs").fit(X, y)
    B = 1.01 * np.linalg.norm(X, axis=1).max()
    for smoothing in ("auto", 7.0):  # the width of the private fit plays no part at epsilon = inf
        m = DPQuantileRegressor(quantile, alpha=alpha, smoothing=smoothing, epsilon=np.inf, data_norm=B).fit(X, y)
        np.testing.assert_allclose(m.coef_, sk.coef_, rtol=1e-4, atol=1e-4 * np.abs(sk.coef_).max())
        assert m.intercept_ == pytest.approx(sk.intercept_, rel=1e-4)
        assert m.dp_event_.__class__.__name__ == "NonPrivateDpEvent"


def test_exact_fit_sparse_equals_dense(diabetes):
    X, y = diabetes
    Xt = np.hstack([X / 10, np.ones((len(y), 1))])
    a = exact_quantile_fit(Xt, y, 0.3, 0.01, 1)
    b = exact_quantile_fit(sp.csr_matrix(Xt), y, 0.3, 0.01, 1)
    np.testing.assert_allclose(a, b, atol=1e-9)


def test_calibration(diabetes):
    """dp_event_: the share of bounds_y="auto"'s plan on the private median and scale, the rest on
    proximal noisy GD whose noise is the composed Gaussian of T steps with replace-one sensitivity 2 C."""
    from dp_sklearn.linear_model._auto import bounds_y_plan

    X, y = diabetes
    m = DPQuantileRegressor(epsilon=EPS, delta=DELTA, random_state=0).fit(X, y)
    auto, gd = m.dp_event_.events
    share = bounds_y_plan(EPS, X.shape[0]).share
    assert auto.epsilon == pytest.approx(share * EPS) and auto.delta == 0.0
    T = gd.count
    assert T == m.n_iter_
    z = composed_gaussian_noise_multiplier((1.0 - share) * EPS, DELTA, T)
    assert gd.event.noise_multiplier == pytest.approx(z, rel=1e-6)
    assert compose_epsilon([m.dp_event_], DELTA) <= EPS * (1 + 2e-3)
    assert m.epsilon_ == EPS and m.smoothing_ > 0 and np.isfinite(m.center_)
    fixed = DPQuantileRegressor(smoothing=50.0, epsilon=EPS, delta=DELTA, random_state=0).fit(X, y)
    assert fixed.center_ == 0.0 and fixed.smoothing_ == 50.0
    assert fixed.dp_event_.event.noise_multiplier == pytest.approx(
        composed_gaussian_noise_multiplier(EPS, DELTA, fixed.n_iter_), rel=1e-6)
    assert compose_epsilon([fixed.dp_event_], DELTA) <= EPS * (1 + 2e-3)


def test_private_median_regression_is_useful(diabetes):
    """At epsilon 5 the private median regression beats the best constant on its pinball loss."""
    X, y = diabetes
    m = DPQuantileRegressor(epsilon=5.0, random_state=0).fit(X, y)
    ours = pinball(y - m.predict(X), 0.5).mean()
    const = pinball(y - np.median(y), 0.5).mean()
    exact = pinball(y - QuantileRegressor(quantile=0.5, alpha=0.0).fit(X, y).predict(X), 0.5).mean()
    assert exact < ours < const - 0.5 * (const - exact)


def test_penalty_is_honoured(diabetes):
    """A large alpha zeroes every coefficient of the private fit too (the prox is applied, not ignored)."""
    X, y = diabetes
    m = DPQuantileRegressor(alpha=1e3, epsilon=EPS, random_state=0).fit(X, y)
    assert np.all(m.coef_ == 0.0)


def test_refusals_before_reservation(diabetes):
    X, y = diabetes
    ledger = PrivacyLedger(max_epsilon=10.0)
    for solver in ("objective_perturbation", "ssp", "output_perturbation", "mirror_descent"):
        with pytest.raises(ValueError, match="solver"):  # none applies the l1 penalty to this loss
            DPQuantileRegressor(solver=solver, ledger=ledger).fit(X, y)
    for bad in ({"quantile": 1.0}, {"quantile": 0.0}, {"smoothing": 0.0}, {"alpha": -1.0}):
        with pytest.raises(ValueError, match=next(iter(bad))):
            DPQuantileRegressor(**bad, ledger=ledger).fit(X, y)
    with pytest.raises(ValueError, match="delta=0"):
        DPQuantileRegressor(delta=0.0, ledger=ledger).fit(X, y)
    assert ledger.records == [] and ledger.pending == []
    with pytest.raises(BudgetExceededError):
        DPQuantileRegressor(epsilon=20.0, ledger=ledger).fit(X, y)
    assert ledger.records == [] and ledger.pending == []
    ledger.delete()


def _pair_with_unbounded_targets():
    """The worst-case pair (x = +e1 in D, -e1 in D') with the differing record's target at 1e6 in both:
    the residual saturates the pinball derivative, and the two records pull the model opposite ways."""
    (X, y), (Xp, yp) = glm_worst_case_pair(n=10, n_features=2, kind="regression", data_norm=1.0)
    y, yp = y.copy(), yp.copy()
    y[-1], yp[-1] = 1e6, 1e6
    return (X, y), (Xp, yp)


def _mechanism(X, y, rng):
    with config_context(skip_parameter_validation=True):  # the audit times the mechanism only
        m = DPQuantileRegressor(quantile=0.5, smoothing=1.0, epsilon=EPS, delta=DELTA, data_norm=1.0,
                                fit_intercept=False, random_state=rng).fit(X, y)
    return np.ravel(m.coef_)


def test_audit_without_a_target_bound_and_negative_control(noisy_gd_audit):
    """A target of 1e6 (no bound anywhere) does not break the guarantee; 10x less noise is caught."""
    D, D_prime = _pair_with_unbounded_targets()
    noisy_gd_audit(_mechanism, D, D_prime)


def test_weighted_epsilon_inf_is_sklearns_weighted_minimizer():
    """sample_weight at epsilon=inf: scikit-learn's weighted objective (its alpha times the
    weights' sum equals ours times n, so the alphas differ by the mean weight)."""
    from sklearn.linear_model import QuantileRegressor

    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 4))
    y = X @ np.array([1.0, -1.0, 0.5, 0.0]) + rng.normal(size=300)
    w = rng.uniform(0.0, 1.0, size=300)
    for alpha in (0.0, 0.01):
        ours = DPQuantileRegressor(quantile=0.7, alpha=alpha, epsilon=np.inf, data_norm=100.0).fit(X, y, sample_weight=w)
        ref = QuantileRegressor(quantile=0.7, alpha=alpha / w.mean(), solver="highs").fit(X, y, sample_weight=w)
        np.testing.assert_allclose(ours.coef_, ref.coef_, rtol=1e-4, atol=1e-8)
        assert ours.intercept_ == pytest.approx(ref.intercept_, rel=1e-4, abs=1e-8)
        unweighted = DPQuantileRegressor(quantile=0.7, alpha=alpha, epsilon=np.inf, data_norm=100.0).fit(X, y)
        assert np.max(np.abs(unweighted.coef_ - ours.coef_)) > 1e-3  # the weights are used


def test_auto_smoothing_at_small_epsilon_n_predicts_the_released_median_and_says_so():
    """Below epsilon n of about 432 the plan of bounds_y="auto" is "center": up to 95% of epsilon on
    two medians, no scale. The released range then collapses onto the median and the smoothing width
    onto its 1e-9 floor, so the fit silently returned (up to 1e-8) the median whatever the quantile.
    As the other "auto" regressors do, the fit now warns (a public condition) and predicts the
    released median exactly."""
    from dp_sklearn.linear_model._auto import bounds_y_plan

    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 3))
    y = X @ [1.0, -1.0, 0.5] + rng.normal(size=200) + 100.0
    assert bounds_y_plan(1.0, 200).mode == "center"
    with pytest.warns(UserWarning, match="epsilon \\* n_samples"):
        m = DPQuantileRegressor(quantile=0.9, epsilon=1.0, random_state=1).fit(X, y)
    assert np.all(m.coef_ == 0.0) and m.intercept_ == m.center_
    np.testing.assert_array_equal(m.predict(X), np.full(200, m.center_))
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a public smoothing, or enough epsilon n: no warning, a model
        fixed = DPQuantileRegressor(quantile=0.9, smoothing=1.0, epsilon=1.0, random_state=1).fit(X, y)
        assert np.any(fixed.coef_ != 0.0)
