"""dp_sklearn/preprocessing/_global.py: DPStandardScaler(strategy="global") (calibration, audit with a
negative control, the public choice) and quantile_range="auto" (public quantile levels that widen the
private range with n)."""

import numpy as np
import pytest
from dp_accounting import dp_event
from sklearn.datasets import load_diabetes
from sklearn.metrics import r2_score
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline

from dp_sklearn import DPRidge, PrivacyLedger
from dp_sklearn._private_stats import search_unit
from dp_sklearn.audit import audit_epsilon
from dp_sklearn.preprocessing import DPStandardScaler
from dp_sklearn.preprocessing._global import (AUTO_LEVELS, AUTO_LEVEL_MARGIN, FEASIBLE_RANKS, GLOBAL_NOISE,
                                              GLOBAL_ROW_NORM, auto_quantile_level, global_epsilon, global_event,
                                              global_log_width, global_scale, per_feature_feasible)

SEARCH = (-1e6, 1e6)


def _mu(scale, p):
    """The released log geometric-mean row norm behind a scale (the inverse post-processing)."""
    return np.log(scale * GLOBAL_ROW_NORM * np.sqrt(p))


def test_global_scale_noise_is_laplace_with_the_closed_form_scale():
    rng = np.random.default_rng(0)
    X = rng.lognormal(size=(400, 3))
    n, p = X.shape
    exact = np.mean(np.log(np.linalg.norm(X, axis=1)))
    assert _mu(global_scale(X, np.inf, None, SEARCH), p) == pytest.approx(exact, rel=1e-12)
    width = np.log(np.sqrt(p) * 1e6 / search_unit(SEARCH))
    b = width / (n * 0.5)  # Laplace scale of the mean of log norms at epsilon 0.5
    draws = np.array([_mu(global_scale(X, 0.5, np.random.default_rng(s), SEARCH), p) for s in range(4000)]) - exact
    # Laplace(b): mean |noise| = b and standard deviation sqrt(2) b (4000 draws: within 5%).
    assert np.mean(np.abs(draws)) == pytest.approx(b, rel=0.05)
    assert np.std(draws) == pytest.approx(np.sqrt(2.0) * b, rel=0.05)
    assert global_event(0.5, 1e-6) == (0.5, dp_event.LaplaceDpEvent(2.0))


def test_global_epsilon_buys_the_planned_laplace_scale():
    """``global_epsilon`` is the budget at which the release above has Laplace scale ``noise`` nats."""
    n, p = 300, 7
    width = np.log(np.sqrt(p) * 1e6 / search_unit(SEARCH))
    assert global_log_width(p, SEARCH) == pytest.approx(width, rel=1e-12)
    eps = global_epsilon(n, p, SEARCH)
    assert eps == pytest.approx(width / (GLOBAL_NOISE * n), rel=1e-12)  # 21.70 / 90 = 0.241
    assert eps == pytest.approx(0.2411, abs=1e-4)
    assert global_epsilon(n, p, SEARCH, noise=0.6) == pytest.approx(eps / 2)
    # the released log scale at that budget: Laplace with scale GLOBAL_NOISE (4000 draws, within 5%)
    X = np.random.default_rng(2).lognormal(size=(n, p))
    exact = np.mean(np.log(np.linalg.norm(X, axis=1)))
    draws = np.array([_mu(global_scale(X, eps, np.random.default_rng(s), SEARCH), p) for s in range(4000)]) - exact
    assert np.mean(np.abs(draws)) == pytest.approx(GLOBAL_NOISE, rel=0.05)


# Worst case for the log mean: one row at the bottom of the clipped log range vs the top.
_BASE = np.ones((9, 1))
D = (np.vstack([_BASE, [[0.0]]]), np.zeros(10))
D_PRIME = (np.vstack([_BASE, [[1e6]]]), np.zeros(10))


def _mechanism(eps_used):
    return lambda X, y, rng: np.array([np.log(global_scale(X, eps_used, rng, SEARCH))])


def test_global_scale_audit_calibrated_passes():
    res = audit_epsilon(_mechanism(1.0), D, D_PRIME, n_samples=4000, random_state=0)
    assert 0.1 < res.epsilon_lower <= 1.0


def test_global_scale_audit_negative_control_is_caught():
    res = audit_epsilon(_mechanism(8.0), D, D_PRIME, n_samples=4000, random_state=1)
    assert res.epsilon_lower > 1.0


def test_strategy_auto_is_a_function_of_public_values():
    X_small = np.random.default_rng(0).lognormal(size=(398, 30))
    sc = DPStandardScaler(epsilon=0.25, delta=1e-6, random_state=0).fit(X_small)
    assert sc.strategy_ == "global" and sc.dp_event_ == dp_event.LaplaceDpEvent(4.0)
    # Same public sizes and budget, other data: same choice and event.
    other = DPStandardScaler(epsilon=0.25, delta=1e-6, random_state=0).fit(-3.0 * X_small + 7.0)
    assert other.strategy_ == "global" and other.dp_event_ == sc.dp_event_
    X_big = np.random.default_rng(1).normal(size=(20000, 2))
    assert DPStandardScaler(epsilon=1.0, random_state=0).fit(X_big).strategy_ == "per_feature"
    assert DPStandardScaler(epsilon=np.inf).fit(X_small).strategy_ == "per_feature"
    assert DPStandardScaler(epsilon=0.25, bounds=(0, 10), random_state=0).fit(X_small).strategy_ == "public_bounds"
    assert DPStandardScaler(epsilon=5.0, strategy="global", random_state=0).fit(X_big).strategy_ == "global"
    # The criterion itself: epsilon_q q n / 4 > 3.
    assert per_feature_feasible(0.1, 0.25, 481) and not per_feature_feasible(0.1, 0.25, 480)


def test_global_transform_keeps_relative_scales_and_bounds_rows():
    rng = np.random.default_rng(2)
    X = rng.lognormal(size=(5000, 4)) * np.array([1.0, 10.0, 100.0, 1000.0])
    sc = DPStandardScaler(epsilon=1.0, strategy="global", random_state=0).fit(X)
    Z = sc.transform(X[:100])
    unclipped = np.linalg.norm(X[:100] / sc.scale_, axis=1) <= sc.output_norm_
    assert np.allclose(Z[unclipped], X[:100][unclipped] / sc.scale_[0])
    assert np.all(sc.mean_ == 0.0) and np.all(sc.scale_ == sc.scale_[0])
    wild = rng.standard_cauchy((500, 4)) * 1e9
    assert np.all(np.linalg.norm(sc.transform(wild), axis=1) <= sc.output_norm_ * (1 + 1e-12))
    assert sc.output_norm_ == pytest.approx(3.0 * np.sqrt(4))
    # The median row lands near GLOBAL_ROW_NORM sqrt(p) (the geometric mean, up to the noise).
    med = np.median(np.linalg.norm(X / sc.scale_, axis=1))
    assert 0.5 < med / (GLOBAL_ROW_NORM * np.sqrt(4)) < 2.0


def test_global_strategy_under_a_ledger_and_inverse():
    X = np.random.default_rng(3).lognormal(size=(300, 5))
    led = PrivacyLedger(max_epsilon=0.5, delta=1e-5)
    try:
        sc = DPStandardScaler(epsilon=0.5, strategy="global", ledger=led, random_state=0).fit(X)
        assert led.total_epsilon() == pytest.approx(0.5, abs=1e-4)  # PLD discretization
        Z = sc.transform(X[:5])
        inside = np.linalg.norm(X[:5] / sc.scale_, axis=1) < sc.output_norm_
        assert np.allclose(sc.inverse_transform(Z)[inside], X[:5][inside])
    finally:
        led.delete()


def test_issue10_diabetes_raw_pipeline():
    # DPStandardScaler(0.5) + DPRidge(1.5, bounds_y="auto"), cap 2.0 (20 seeds in
    # benchmarks/private_pipeline.py: median R^2 0.300; per-feature ranges gave 0.073).
    X, y = load_diabetes(return_X_y=True)
    scores = []
    for seed in range(5):
        Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, random_state=seed)
        led = PrivacyLedger(max_epsilon=2.0, delta=1e-5)
        try:
            pipe = make_pipeline(DPStandardScaler(epsilon=0.5, delta=1e-6, ledger=led, random_state=seed),
                                 DPRidge(epsilon=1.5, delta=1e-6, bounds_y="auto", ledger=led, random_state=seed))
            pipe.fit(Xtr, ytr)
            assert led.total_epsilon() <= 2.0
        finally:
            led.delete()
        scores.append(r2_score(yte, pipe.predict(Xte)))
    assert np.median(scores) >= 0.15


# ------------------------------------------------------------------------------
# DPStandardScaler(quantile_range="auto"): public quantile levels that widen the private range with n.


@pytest.mark.parametrize("eps_q, n, expected", [
    (0.05, 1_000, 0.25),                          # small n: the quartiles
    (0.05, 20_000, 3 * 4 * 3 / (0.05 * 20_000)),  # 0.036: the closed form
    (0.05, 10**7, 0.01),                          # large n: the floor
    (np.inf, 100, 0.01),                          # non-private fit
])
def test_auto_level_closed_form(eps_q, n, expected):
    assert auto_quantile_level(eps_q, n) == pytest.approx(expected)
    assert AUTO_LEVEL_MARGIN * 4 * FEASIBLE_RANKS == 36.0 and AUTO_LEVELS == (0.01, 0.25)


def test_auto_levels_are_feasible_whenever_they_leave_the_quartiles():
    for n in np.geomspace(100, 1e7, 40):
        q = auto_quantile_level(0.02, n)
        assert q == 0.25 or per_feature_feasible(0.02, q, n)


def test_auto_levels_depend_on_public_values_only():
    rng = np.random.default_rng(0)
    a = DPStandardScaler(epsilon=1.0, random_state=0).fit(rng.normal(size=(30_000, 3)))
    b = DPStandardScaler(epsilon=1.0, random_state=1).fit(rng.exponential(50.0, size=(30_000, 3)))
    assert a.quantile_range_ == b.quantile_range_ and a.quantile_range_[0] < 0.25


def test_auto_levels_keep_a_heavy_tail_that_the_quartile_fences_winsorize():
    # A delay-like feature: most values near 0, a long right tail. With the quartiles' fences
    # the range ends near 30 and every large value is clipped to it; with "auto" levels at
    # n = 100,000 (levels 0.01, 0.99) the range covers the tail and the scaled feature stays
    # nearly linear in it.
    rng = np.random.default_rng(3)
    x = np.where(rng.uniform(size=100_000) < 0.8, rng.normal(0, 5, 100_000), rng.exponential(60.0, 100_000))
    X = np.column_stack([x, rng.normal(size=x.size)])
    corr = {}
    for qr in ["auto", (0.25, 0.75)]:
        sc = DPStandardScaler(epsilon=1.0, delta=1e-6, quantile_range=qr, random_state=0).fit(X)
        corr[str(qr)] = np.corrcoef(sc.transform(X)[:, 0], x)[0, 1]
    assert corr["auto"] > 0.92 and corr["(0.25, 0.75)"] < 0.75  # measured 0.94 (output_clip=3 binds) and 0.70
