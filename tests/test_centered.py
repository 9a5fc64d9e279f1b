"""DPStandardScaler(strategy="centered"): the global scale after one private Gaussian centering vector
(preprocessing/_centered.py): calibration, the composed event, an audit with a negative control,
strategy="auto" never choosing it, and the pipeline's default split."""

import numpy as np
import pytest
from dp_accounting import dp_event

from dp_sklearn import DPLogisticRegression, PrivacyLedger
from dp_sklearn._accounting import gaussian_epsilon, gaussian_noise_multiplier
from dp_sklearn.audit import audit_epsilon
from dp_sklearn._budget import allotment
from dp_sklearn.pipeline import make_private_pipeline
from dp_sklearn.preprocessing import DPStandardScaler
from dp_sklearn.preprocessing._centered import (CENTERED_FIRST_NOISE, CENTERED_Z, centered_epsilon, centered_plan,
                                                noisy_mean, shrink)
from dp_sklearn.preprocessing._global import GLOBAL_NOISE, global_epsilon, global_log_width

SEARCH = (-1e6, 1e6)


def test_noisy_mean_is_gaussian_with_the_closed_form_std():
    """The centering release: mean of rows clipped to C plus N(0, (z 2 C / n)^2) per coordinate."""
    X = np.random.default_rng(0).normal([3.0, -1.0, 0.5], 1.0, size=(200, 3))
    C, z, n = 2.0, 1.5, 200
    norms = np.linalg.norm(X, axis=1)
    exact = (X * np.minimum(1.0, C / norms)[:, None]).mean(axis=0)
    draws = np.array([noisy_mean(X, C, z, np.random.default_rng(s))[0] for s in range(3000)]) - exact
    sigma = z * 2.0 * C / n
    assert noisy_mean(X, C, z, np.random.default_rng(0))[1] == pytest.approx(sigma, rel=1e-12)
    # 3000 draws per coordinate: the sample std is within 4% of sigma, the mean within 0.1 sigma
    assert np.std(draws, axis=0) == pytest.approx(np.full(3, sigma), rel=0.04)
    assert np.all(np.abs(draws.mean(axis=0)) < 0.1 * sigma)


def test_shrink_is_positive_part_james_stein():
    m = np.array([-3.0, -1.0, -0.5, 0.0, 0.5, 2.0])
    assert shrink(m, 1.0) == pytest.approx([-3.0 * (1 - 1 / 9), 0.0, 0.0, 0.0, 0.0, 2.0 * 0.75], abs=1e-15)


def test_plan_closed_form_and_composed_event():
    n, p, delta = 500, 8, 1e-5
    w = global_log_width(p, SEARCH)
    e1, e2 = w / (CENTERED_FIRST_NOISE * n), w / (GLOBAL_NOISE * n)
    eg = gaussian_epsilon(1.0 / CENTERED_Z, delta)
    need = centered_epsilon(n, p, SEARCH, delta)
    assert need == pytest.approx(e1 + e2 + eg, rel=1e-12)
    # At or above the targets: exactly the targets (never more).
    big = centered_plan(10.0, delta, n, p, SEARCH)
    assert (big.epsilon_1, big.z, big.epsilon_2) == pytest.approx((e1, CENTERED_Z, e2), rel=1e-12)
    # Below: every part scaled by epsilon / need; the Gaussian at its share is (s eg, delta)-DP.
    small = centered_plan(0.5 * need, delta, n, p, SEARCH)
    assert (small.epsilon_1, small.epsilon_2) == pytest.approx((0.5 * e1, 0.5 * e2), rel=1e-12)
    assert small.z == pytest.approx(gaussian_noise_multiplier(0.5 * eg, delta), rel=1e-12)
    X = np.random.default_rng(1).lognormal(size=(n, p)) + 100.0
    led = PrivacyLedger(max_epsilon=0.5 * need, delta=delta)
    try:
        sc = DPStandardScaler(epsilon=0.5 * need, delta=delta, strategy="centered", ledger=led, random_state=0).fit(X)
        assert sc.strategy_ == "centered"
        assert sc.dp_event_ == dp_event.ComposedDpEvent([dp_event.LaplaceDpEvent(1.0 / small.epsilon_1),
                                                         dp_event.GaussianDpEvent(small.z),
                                                         dp_event.LaplaceDpEvent(1.0 / small.epsilon_2)])
        assert led.total_epsilon() <= 0.5 * need + 1e-9
    finally:
        led.delete()


def test_centered_transform_centers_and_bounds_rows():
    rng = np.random.default_rng(2)
    X = rng.normal([1970.0, 3000.0, 20.0], [4.0, 800.0, 3.0], size=(3000, 3))
    fits = [DPStandardScaler(epsilon=1.0, strategy="centered", random_state=s).fit(X) for s in range(10)]
    # the heavy column's mean is found to within a part of its spread (800) on most seeds (noise
    # sd z 2 C / n is about 55 here); when the first release comes out low, the rows are clipped
    # to a smaller C and the center falls short of the mean, but is still most of it
    centers = np.array([f.mean_[1] for f in fits])
    err = np.abs(centers - 3000.0)
    assert np.sum(err < 250.0) >= 8 and np.median(err) < 120.0
    assert np.all((centers > 1500.0) & (centers < 3400.0))
    sc = fits[0]
    assert np.all(sc.scale_ == sc.scale_[0])
    Z = sc.transform(X)
    assert abs(np.mean(Z[:, 1])) < 0.3 * np.std(Z[:, 1])
    wild = rng.standard_cauchy((500, 3)) * 1e9
    assert np.all(np.linalg.norm(sc.transform(wild), axis=1) <= sc.output_norm_ * (1 + 1e-12))
    assert sc.output_norm_ <= 3.0 * np.sqrt(3) + 1e-12
    inside = np.linalg.norm(Z, axis=1) < sc.output_norm_
    assert np.allclose(sc.inverse_transform(Z[:20])[inside[:20]], X[:20][inside[:20]])
    # non-private fit: the exact column means
    ex = DPStandardScaler(epsilon=np.inf, strategy="centered").fit(X)
    assert ex.mean_ == pytest.approx(X.mean(axis=0), rel=1e-12)


# Worst case for the centering release: the differing row at +C e_1 against -C e_1.
_C = 1.0
D = (np.vstack([np.zeros((9, 2)), [[_C, 0.0]]]), np.zeros(10))
D_PRIME = (np.vstack([np.zeros((9, 2)), [[-_C, 0.0]]]), np.zeros(10))
DELTA = 1e-5


def _mechanism(eps_used):
    z = gaussian_noise_multiplier(eps_used, DELTA)
    return lambda X, y, rng: noisy_mean(X, _C, z, rng)[0]


def test_centering_audit_calibrated_passes():
    res = audit_epsilon(_mechanism(1.0), D, D_PRIME, n_samples=4000, delta=DELTA, random_state=0)
    assert 0.05 < res.epsilon_lower <= 1.0


def test_centering_audit_negative_control_is_caught():
    res = audit_epsilon(_mechanism(8.0), D, D_PRIME, n_samples=4000, delta=DELTA, random_state=1)
    assert res.epsilon_lower > 1.0


# (n_samples, n_features, epsilon, delta) -> what strategy="auto" chooses on main (tests/test_global.py,
# tests/test_robust.py): the centered strategy is opt-in and never changes that choice
AUTO_SHAPES = [((398, 30), 0.25, 1e-6, "global"), ((398, 30), 0.25, 0.0, "global"),
               ((309, 10), 1.25, 2.5e-6, "robust"), ((309, 10), 0.25, 2.5e-6, "global"),
               ((20_000, 10), 1.0, 1e-5, "per_feature"), ((300, 4), 0.25, 1e-5, "global")]


@pytest.mark.parametrize("shape, eps, delta, expected", AUTO_SHAPES)
def test_auto_never_picks_centered(shape, eps, delta, expected):
    sc = DPStandardScaler(epsilon=eps, delta=delta, random_state=0)
    assert sc._resolve_strategy(*shape, None) == expected
    for n_samples in (50, 300, 2000):
        for e in (0.05, 0.5, 2.0, 10.0):
            for d in (0.0, 1e-6, 1e-3):
                pick = DPStandardScaler(epsilon=e, delta=d)._resolve_strategy(n_samples, shape[1], None)
                assert pick in ("per_feature", "robust", "global")


def test_auto_on_data_where_global_runs_is_the_global_scale():
    X = np.random.default_rng(3).lognormal(size=(398, 30))
    a = DPStandardScaler(epsilon=0.25, delta=1e-6, random_state=0).fit(X)
    b = DPStandardScaler(epsilon=0.25, delta=1e-6, random_state=0).fit(-3.0 * X + 7.0)
    assert a.strategy_ == b.strategy_ == "global" and a.dp_event_ == b.dp_event_ == dp_event.LaplaceDpEvent(4.0)
    c = DPStandardScaler(epsilon=0.25, delta=1e-6, strategy="centered", random_state=0).fit(X)
    assert c.strategy_ == "centered" and len(c.dp_event_.events) == 3


def test_centered_under_pure_dp_is_refused_before_any_budget():
    X = np.random.default_rng(4).normal(size=(100, 3))
    led = PrivacyLedger(max_epsilon=1.0, delta=1e-5)
    try:
        with pytest.raises(ValueError, match="strategy='centered' needs delta > 0"):
            DPStandardScaler(epsilon=0.5, delta=0.0, strategy="centered", ledger=led).fit(X)
        assert led.total_epsilon() == 0.0
        with pytest.raises(ValueError, match="strategy"):
            DPStandardScaler(strategy="centred", ledger=led).fit(X)
        assert led.total_epsilon() == 0.0
    finally:
        led.delete()


def test_pipeline_default_split_and_tight_dry_run():
    """With strategy="centered" the default split keeps at most the scaler's allotment for the
    centered plan; the tight composition's dry runs on stand-in data plan the same centered event
    the fit releases. strategy="auto" keeps the global scale's need there, as on main."""
    rng = np.random.default_rng(5)
    X = rng.normal([1970.0, 3000.0, 20.0, 5.0], [4.0, 800.0, 3.0, 1.0], size=(300, 4))
    y = (X[:, 1] + 300 * rng.normal(size=300) > 3000).astype(int)
    pipe = make_private_pipeline(DPStandardScaler(strategy="centered", random_state=0),
                                 DPLogisticRegression(random_state=0), epsilon=1.0, delta=1e-5)
    split = allotment(pipe, 1.0, 1e-5, None, 300, 4)
    need = centered_epsilon(300, 4, SEARCH, 1e-5 / 4)
    assert split[0].epsilon == pytest.approx(min(0.25, need), rel=1e-9)
    pipe.fit(X, y)
    sc = pipe.steps[0][1]
    assert sc.strategy_ == "centered" and len(sc.dp_event_.events) == 3
    assert pipe.score(X, y) > 0.6
    auto = make_private_pipeline(DPStandardScaler(random_state=0), DPLogisticRegression(random_state=0),
                                 epsilon=1.0, delta=1e-5)
    split = allotment(auto, 1.0, 1e-5, None, 300, 4)
    assert split[0].epsilon == pytest.approx(min(0.25, global_epsilon(300, 4, SEARCH)), rel=1e-9)
