"""DPStandardScaler(strategy="robust"): private median and MAD per feature (preprocessing/_robust.py)."""

import warnings

import numpy as np
import pytest
from dp_accounting import dp_event
from sklearn.datasets import load_diabetes
from sklearn.metrics import r2_score
from sklearn.model_selection import train_test_split

from dp_sklearn import DPRidge, PrivacyLedger
from dp_sklearn._accounting import zcdp_rho
from dp_sklearn._private_stats._common import _RHO_MARGIN
from dp_sklearn.audit import audit_epsilon
from dp_sklearn.pipeline import make_private_pipeline
from dp_sklearn.preprocessing import DPStandardScaler
from dp_sklearn.preprocessing._robust import (MAD_TO_STD, PER_FEATURE_MARGIN, prefer_per_feature,
                                              robust_center_scale, robust_feasible)

SEARCH = (-1e6, 1e6)


def test_exact_statistics_are_median_and_normal_consistent_mad():
    X = np.random.default_rng(0).normal([5.0, -300.0], [2.0, 40.0], size=(20_001, 2))
    center, scale = robust_center_scale(X, None, None, SEARCH)
    med = np.median(X, axis=0)
    assert center == pytest.approx(med, rel=1e-12)
    assert scale == pytest.approx(MAD_TO_STD * np.median(np.abs(X - med), axis=0), rel=1e-12)
    assert scale == pytest.approx([2.0, 40.0], rel=0.03)  # MAD_TO_STD: a normal's standard deviation
    assert MAD_TO_STD == pytest.approx(1.0 / 0.6744897501960817, rel=1e-12)


def test_plan_closed_form_and_ledger():
    # 2 n_features quantiles share the whole zCDP budget: epsilon_q = sqrt(8 rho / (2 p)).
    eps, delta, p = 1.25, 2.5e-6, 10
    sc = DPStandardScaler(epsilon=eps, delta=delta, strategy="robust", random_state=0)
    rho = zcdp_rho(eps, delta) * (1 - _RHO_MARGIN)
    assert sc._robust_plan(p).quantile_epsilon == pytest.approx(np.sqrt(8 * rho / (2 * p)), rel=1e-12)
    X = np.random.default_rng(1).lognormal(3.0, 1.0, size=(500, p))
    led = PrivacyLedger(max_epsilon=eps, delta=delta)
    sc.set_params(ledger=led).fit(X)
    assert sc.strategy_ == "robust" and sc.dp_event_ == dp_event.ComposedDpEvent([dp_event.ZCDpEvent(rho)])
    assert led.total_epsilon() <= eps + 1e-9
    pure = DPStandardScaler(epsilon=1.0, delta=0.0, strategy="robust", random_state=0).fit(X)
    assert pure.dp_event_.events[0].epsilon == pytest.approx(1.0)


def test_transform_box_and_scales_follow_each_feature():
    rng = np.random.default_rng(2)
    X = np.column_stack([rng.normal(50, 10, 3000), rng.normal(0.01, 0.002, 3000), rng.integers(1, 3, 3000)])
    sc = DPStandardScaler(epsilon=2.0, strategy="robust", random_state=0).fit(X)
    assert sc.scale_[:2] == pytest.approx([10.0, 0.002], rel=0.25)  # per feature, never one common scale
    Z = sc.transform(X)
    assert np.all(np.abs(Z) <= 3.0) and sc.output_norm_ == pytest.approx(3.0 * np.sqrt(3))
    assert np.std(Z[:, 0]) == pytest.approx(1.0, abs=0.2) and np.std(Z[:, 1]) == pytest.approx(1.0, abs=0.2)
    assert np.ptp(Z[:, 2]) > 0.9  # the binary feature keeps its two values apart
    assert sc.inverse_transform(Z[:5]) == pytest.approx(np.clip(X[:5], *sc.bounds_))


def test_auto_choice_is_public():
    # raw diabetes sizes (309 training rows, 10 features), the scaler's share of make_private_pipeline
    X = np.random.default_rng(3).lognormal(size=(309, 10))
    pick = lambda eps, data: DPStandardScaler(epsilon=eps, delta=2.5e-6, random_state=0).fit(data)
    assert pick(1.25, X).strategy_ == "robust" and pick(1.25, 7 - 100 * X).strategy_ == "robust"
    assert pick(0.25, X).strategy_ == "global"
    assert pick(1.0, np.random.default_rng(4).normal(size=(20_000, 10))).strategy_ == "per_feature"
    assert robust_feasible(0.1, 241) and not robust_feasible(0.1, 240)  # epsilon_q n / 8 > 3
    # per-feature ranges only with twice the ranks their quartiles need: epsilon_q n / 16 > 6
    assert PER_FEATURE_MARGIN == 2.0
    assert prefer_per_feature(0.1, 0.25, 961) and not prefer_per_feature(0.1, 0.25, 960)
    # between once and twice over, "auto" runs the median and MAD (1,700 rows, 8 features, epsilon 0.5)
    mid = DPStandardScaler(epsilon=0.5, delta=2.5e-6, random_state=0)
    eps_q = mid._per_feature_plan(8, None).quantile_epsilon
    assert 3 < eps_q * 0.25 * 1700 / 4 < 6
    assert mid.fit(np.random.default_rng(5).normal(size=(1700, 8))).strategy_ == "robust"


# Replace-one pair: 0.8 -> 0.1 moves the median and the MAD.
_V = np.array([0.2, 0.4, 0.6, 0.8])
D = (_V[:, None], np.zeros(4))
D_PRIME = (np.array([0.2, 0.4, 0.6, 0.1])[:, None], np.zeros(4))


def _mechanism(eps_each):
    def mechanism(X, y, rng):
        return np.concatenate(robust_center_scale(X, eps_each, rng, (0.0, 1.0)))
    return mechanism


def test_audit_calibrated_passes():
    # two mechanisms of 0.5 each: a 1.0-DP release
    res = audit_epsilon(_mechanism(0.5), D, D_PRIME, n_samples=4000, random_state=0)
    assert res.epsilon_lower <= 1.0


def test_audit_negative_control_is_caught():
    res = audit_epsilon(_mechanism(4.0), D, D_PRIME, n_samples=4000, random_state=1)
    assert res.epsilon_lower > 1.0


def test_raw_diabetes_at_total_epsilon_5():
    # Issue 20: raw diabetes, 70/30, DPRidge(bounds_y=(25, 346)), total epsilon 5. The global
    # scale (before) gave a median R^2 of 0.02; strategy="auto" now runs "robust"
    # (benchmarks/preproc_scaling.py).
    X, y = load_diabetes(return_X_y=True, scaled=False)
    r2 = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for s in range(5):
            Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, random_state=s)
            pipe = make_private_pipeline(DPStandardScaler(random_state=s), DPRidge(bounds_y=(25, 346), random_state=s),
                                         epsilon=5.0).fit(Xtr, ytr)
            assert pipe[0].strategy_ == "robust"
            r2.append(r2_score(yte, pipe.predict(Xte)))
    assert np.median(r2) > 0.3 and min(r2) > 0.1


def test_scikit_learn_checks():
    from sklearn.utils.estimator_checks import check_estimator

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results = check_estimator(DPStandardScaler(strategy="robust", random_state=0), on_fail=None)
    failed = [(r["check_name"], str(r["exception"])[:200]) for r in results if r["status"] == "failed"]
    assert failed == []
