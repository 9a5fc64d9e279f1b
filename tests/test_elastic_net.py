"""DPElasticNet (dp_sklearn/linear_model/_elastic_net.py): checks, epsilon = inf, calibration, audit, the penalty honoured."""

import numpy as np
import pytest
from sklearn import config_context
from sklearn.datasets import load_diabetes
from sklearn.linear_model import ElasticNet
from sklearn.preprocessing import StandardScaler
from sklearn.utils.estimator_checks import parametrize_with_checks

from dp_sklearn import DPElasticNet, PrivacyLedger
from dp_sklearn._accounting import composed_gaussian_noise_multiplier
from dp_sklearn._private_mean import Y_CENTER_SHARE
from dp_sklearn._sets import L1Penalty
from dp_sklearn.audit import glm_worst_case_pair
from dp_sklearn.ledger import compose_epsilon
from weight_checks import sample_weight_failures

EPS, DELTA = 1.0, 1e-5


@parametrize_with_checks([DPElasticNet(random_state=0), DPElasticNet(l1_ratio=1.0, alpha=0.01, random_state=0)],
                         expected_failed_checks=sample_weight_failures)
def test_sklearn_compatible(estimator, check):
    check(estimator)


@pytest.fixture(scope="module")
def diabetes():
    X, y = load_diabetes(return_X_y=True)
    return StandardScaler().fit_transform(X), y


@pytest.mark.parametrize("alpha, l1_ratio", [(0.1, 0.5), (1.0, 0.9), (0.5, 1.0), (0.3, 0.0)])
def test_epsilon_inf_is_sklearn_elastic_net(diabetes, alpha, l1_ratio):
    X, y = diabetes
    sk = ElasticNet(alpha=alpha, l1_ratio=l1_ratio, tol=1e-12, max_iter=100000).fit(X, y)
    B = 1.01 * np.linalg.norm(X, axis=1).max()
    m = DPElasticNet(alpha=alpha, l1_ratio=l1_ratio, epsilon=np.inf, data_norm=B, bounds_y=(y.min() - 1, y.max() + 1),
                     tol=1e-12).fit(X, y)
    np.testing.assert_allclose(m.coef_, sk.coef_, rtol=1e-4, atol=1e-4 * np.abs(sk.coef_).max())
    assert m.intercept_ == pytest.approx(sk.intercept_, rel=1e-4)
    np.testing.assert_array_equal(m.coef_ == 0, sk.coef_ == 0)  # the same support


def test_soft_thresholding_is_the_l1_prox():
    pen = L1Penalty(2.0, n_free=1)
    np.testing.assert_allclose(pen.prox(np.array([3.0, -0.5, -4.0, 7.0]), 0.5), [2.0, 0.0, -3.0, 7.0])


def test_calibration(diabetes):
    """dp_event_: Laplace mean of y (10%), then T Gaussian steps of noisy GD at 90% (one Gaussian composed)."""
    X, y = diabetes
    m = DPElasticNet(alpha=0.1, epsilon=EPS, delta=DELTA, bounds_y=(25, 346), random_state=0).fit(X, y)
    laplace, gd = m.dp_event_.events
    assert laplace.noise_multiplier == pytest.approx(1.0 / (Y_CENTER_SHARE * EPS))
    assert gd.count == m.n_iter_
    z = composed_gaussian_noise_multiplier((1 - Y_CENTER_SHARE) * EPS, DELTA, gd.count)
    assert gd.event.noise_multiplier == pytest.approx(z, rel=1e-6)
    assert compose_epsilon([m.dp_event_], DELTA) <= EPS * (1 + 2e-3)


def test_alpha_and_l1_ratio_are_honoured(diabetes):
    """Never silently ignored: the same noise (seed) with another alpha or l1_ratio releases another model,
    and a large l1 penalty shrinks most coefficients to near zero (the prox runs after every noisy step; the
    release is the average of the second half of the iterates, so not exactly sparse)."""
    X, y = diabetes
    kw = dict(epsilon=EPS, bounds_y=(25, 346), random_state=0)
    a = DPElasticNet(alpha=0.01, **kw).fit(X, y).coef_
    b = DPElasticNet(alpha=1.0, **kw).fit(X, y).coef_
    c = DPElasticNet(alpha=1.0, l1_ratio=1.0, **kw).fit(X, y).coef_
    assert np.abs(b).sum() < 0.8 * np.abs(a).sum()
    assert not np.allclose(b, c)
    big = DPElasticNet(alpha=20.0, l1_ratio=1.0, **kw).fit(X, y).coef_
    # seeds 0-5: l1 norm 0.07-0.16 of the small-alpha fit's, more coefficients near zero (how many
    # depends on the noise: 2 to 7 of 10)
    assert np.abs(big).sum() < 0.25 * np.abs(a).sum()
    assert np.count_nonzero(np.abs(big) < 2.0) > np.count_nonzero(np.abs(a) < 2.0)


def test_solvers_that_cannot_apply_the_penalty_are_refused(diabetes):
    X, y = diabetes
    ledger = PrivacyLedger(max_epsilon=10.0)
    assert DPElasticNet()._allowed_solvers() == ["noisy_gd"] or "ssp" not in DPElasticNet()._allowed_solvers()
    for solver in ("ssp", "frank_wolfe", "output_perturbation"):
        with pytest.raises(ValueError, match="solver"):
            DPElasticNet(solver=solver, bounds_y=(25, 346), ledger=ledger).fit(X, y)
    with pytest.raises(ValueError, match="l1_ratio"):
        DPElasticNet(l1_ratio=1.5, ledger=ledger).fit(X, y)
    assert ledger.records == [] and ledger.pending == []
    ledger.delete()


def _mechanism(X, y, rng):
    with config_context(skip_parameter_validation=True):  # the audit times the mechanism only
        m = DPElasticNet(alpha=0.01, epsilon=EPS, delta=DELTA, data_norm=1.0, bounds_y=(-1, 1), fit_intercept=False,
                         random_state=rng).fit(X, y)
    return np.ravel(m.coef_)


def test_audit_and_negative_control(noisy_gd_audit):
    D, D_prime = glm_worst_case_pair(n=10, n_features=2, kind="regression", data_norm=1.0)
    noisy_gd_audit(_mechanism, D, D_prime)
