"""DPHuberRegressor and the Huber loss (dp_sklearn/linear_model/_huber.py, dp_sklearn/_losses/_huber.py)."""

import math
import warnings

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
from dp_sklearn.audit import audit_epsilon, glm_worst_case_pair
from dp_sklearn.linear_model import _huber as huber_module
from dp_sklearn.linear_model._auto import CENTER_SHARE, LOCATE_NATS, BoundsYPlan, private_bounds_y
from dp_sklearn.linear_model._huber import AUTO_THRESHOLD, PREDICT_COVER, Y_SHARE, huber_y_plan
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
    X, y = diabetes
    m = DPHuberRegressor(epsilon=EPS, delta=DELTA, random_state=0).fit(X, y)
    auto, gd = m.dp_event_.events
    share = huber_y_plan(EPS, X.shape[0]).share
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


# --------------------------------------------------------------- location and scale of y ("auto")
@pytest.mark.parametrize("n, epsilon", [(309, 1.0), (500, 1.0), (2000, 1.0), (100_000, 5.0)])
def test_y_plan_closed_form(n, epsilon):
    """Three medians at share * epsilon / 3 each; the share gives each LOCATE_NATS of margin
    (e n / 4 nats for a median at loss e), at least Y_SHARE[0]; beyond Y_SHARE[1] the "center"
    plan: two medians with LOCATE_NATS each, at most CENTER_SHARE of epsilon."""
    plan = huber_y_plan(epsilon, n)
    share = 12 * LOCATE_NATS / (n * epsilon)
    if share > Y_SHARE[1]:
        assert plan.mode == "center" and plan.eps_side == 0.0
        assert plan.share == pytest.approx(min(8 * LOCATE_NATS / (n * epsilon), CENTER_SHARE))
        assert plan.eps_median == pytest.approx(plan.share * epsilon / 2)
        return
    assert plan.mode == "mad" and plan.share == pytest.approx(max(share, Y_SHARE[0]))
    assert plan.eps_median == pytest.approx(plan.share * epsilon / 3) and plan.eps_side == plan.eps_median
    assert plan.eps_median * n / 4 >= LOCATE_NATS * (1 - 1e-12)


def test_center_plan_predicts_the_released_median():
    """epsilon n too small to locate y and fit (public): a warning, and the fit predicts center_."""
    rng = np.random.default_rng(3)
    X, y = rng.normal(size=(200, 3)), 100.0 + rng.normal(size=200)
    assert huber_y_plan(1.0, 200).mode == "center"
    with pytest.warns(UserWarning, match="predicts a private median"):
        m = DPHuberRegressor(epsilon=1.0, random_state=0).fit(X, y)
    np.testing.assert_array_equal(m.predict(X), np.full(200, m.center_))
    assert 99.0 < m.center_ < 101.0 and m.dp_event_.events[0].epsilon == pytest.approx(huber_y_plan(1.0, 200).share)


def test_small_budget_mad_plan_shrinks_toward_the_center(monkeypatch):
    """epsilon n between 12 LOCATE_NATS / Y_SHARE[1] and 12 LOCATE_NATS / 0.5: the "mad" plan (the
    "center" plan before), and the released model's deviation from center_ is multiplied by
    shrink_factor of the model's epsilon (post-processing: same releases, same seed)."""
    import dp_sklearn.linear_model._auto as auto
    from dp_sklearn.linear_model._auto import SHRINK_RHO, shrink_factor

    rng = np.random.default_rng(5)
    X = rng.normal(size=(320, 4))
    y = 100.0 + X @ np.array([3.0, -2.0, 1.0, 0.5]) + rng.normal(size=320)
    plan = huber_y_plan(1.0, 320)
    assert plan.mode == "mad" and 0.5 < plan.share <= Y_SHARE[1]
    m = DPHuberRegressor(epsilon=1.0, random_state=0).fit(X, y)
    lam = shrink_factor(1.0 - plan.share, 320)
    monkeypatch.setattr(auto, "SHRINK_RHO", 0.0)
    u = DPHuberRegressor(epsilon=1.0, random_state=0).fit(X, y)
    assert lam == pytest.approx(1.0 / (1.0 + (SHRINK_RHO / (320 * (1.0 - plan.share)))**2))
    assert 0.1 < lam < 0.99 and m.center_ == u.center_ and m.prediction_range_ == u.prediction_range_
    np.testing.assert_allclose(m.coef_, lam * u.coef_, rtol=1e-12)
    assert m.intercept_ - m.center_ == pytest.approx(lam * (u.intercept_ - u.center_), rel=1e-9)
    # a public threshold: no shrinkage
    a = DPHuberRegressor(huber_threshold=2.0, epsilon=1.0, random_state=0).fit(X, y)
    monkeypatch.setattr(auto, "SHRINK_RHO", SHRINK_RHO)
    b = DPHuberRegressor(huber_threshold=2.0, epsilon=1.0, random_state=0).fit(X, y)
    np.testing.assert_array_equal(a.coef_, b.coef_)


def test_y_releases_spend_the_planned_epsilon(diabetes, monkeypatch):
    """Each exponential-mechanism median the fit draws is at share * epsilon / 3 (three in all),
    and the fit's auto event is their basic composition."""
    import dp_sklearn.linear_model._auto as auto

    spent = []
    real = auto.exponential_quantiles

    def spy(values, levels, epsilon, rng, **kw):
        spent.append((np.size(levels), epsilon))
        return real(values, levels, epsilon, rng, **kw)

    monkeypatch.setattr(auto, "exponential_quantiles", spy)
    X, y = diabetes
    m = DPHuberRegressor(epsilon=2.0, random_state=0).fit(X, y)
    plan = huber_y_plan(2.0, X.shape[0])
    assert spent == [(1, pytest.approx(plan.share * 2.0 / 3))] * 3
    assert m.dp_event_.events[0].epsilon == pytest.approx(sum(e for _, e in spent))
    assert m.huber_threshold_ == pytest.approx(AUTO_THRESHOLD * m.y_scale_)
    low, high = m.prediction_range_
    assert low == pytest.approx(m.center_ - PREDICT_COVER * m.y_scale_)
    assert high == pytest.approx(m.center_ + PREDICT_COVER * m.y_scale_)


def test_y_scale_audit_and_negative_control():
    """The released scale (the MAD of the plan) on a replace-one pair: calibrated at its claim
    (three medians at 1/3 each); with 32 times the planned epsilon the audit catches it."""
    v, v2 = np.array([0.2, 0.4, 0.6, 0.8]), np.array([0.2, 0.4, 0.6, 0.1])

    def mech(factor):
        plan = BoundsYPlan(1.0, "mad", factor / 3, factor / 3, 0.25)

        def run(X, y, rng):
            (low, high), center = private_bounds_y(y, 1.0, rng, plan=plan)
            return np.array([center, high - center])
        return run

    def stat(out):
        return np.clip(out[:, 0], 0.0, 1.0) + np.clip(out[:, 1], 0.0, 1.0)

    D, D2 = (v[:, None], v), (v2[:, None], v2)
    ok = audit_epsilon(mech(1.0), D, D2, n_samples=2000, statistic=stat, random_state=1)
    assert ok.epsilon_lower <= 1.0
    bad = audit_epsilon(mech(32.0), D, D2, n_samples=2000, statistic=stat, random_state=1)
    assert bad.epsilon_lower > 1.0


def test_epsilon_inf_location_and_scale():
    """At epsilon = inf the center is the median and the scale IQR / 1.349 (exact quantiles)."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 3))
    y = 1000.0 + 50.0 * rng.standard_t(3, size=400)
    m = DPHuberRegressor(epsilon=np.inf).fit(X, y)
    q1, med, q3 = np.quantile(y, [0.25, 0.5, 0.75])
    assert m.center_ == pytest.approx(med) and m.y_scale_ == pytest.approx((q3 - q1) / (2 * 0.6744897501960817))
    pred = m.predict(10.0 * X)  # far rows: predictions stay in the released range
    assert pred.min() >= m.prediction_range_[0] and pred.max() <= m.prediction_range_[1]


@pytest.mark.slow
def test_heavy_tailed_target_never_below_minus_one():
    """No target bound, Student-t(2) noise on a lognormal signal offset by 2000, n = 300 ("center"
    plan) and 1500 ("mad" plan), epsilon 0.5 to 2, 10 seeds: no test R^2 below -1."""
    from sklearn.metrics import r2_score

    worst = {}
    for n in (300, 1500):
        for seed in range(10):
            rng = np.random.default_rng(100 + seed)
            X = rng.normal(size=(n + 300, 4))
            y = np.exp(0.5 * X[:, 0]) * 300.0 + 40.0 * rng.standard_t(2, size=n + 300) + 2000.0
            for epsilon in (0.5, 1.0, 2.0):
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", UserWarning)  # the "center" plan's warning
                    m = DPHuberRegressor(epsilon=epsilon, random_state=seed).fit(X[:n], y[:n])
                r2 = r2_score(y[n:], m.predict(X[n:]))
                worst[n, epsilon] = min(worst.get((n, epsilon), np.inf), r2)
    assert min(worst.values()) >= -1.0, worst
    assert worst[1500, 2.0] > 0.3  # and the "mad" plan fits a model
