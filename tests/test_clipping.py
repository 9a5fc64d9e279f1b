"""Issue 19 item 10: no data-dependent warning, and the opt-in private clipping diagnostic.

``report_clipping=True`` releases ``clipped_fraction_``: per public bound, the number of
records beyond it plus Laplace noise of scale ``k / (CLIPPING_SHARE epsilon)`` (k bounds),
over n (dp_sklearn._clipping). Calibrated against that closed form, audited on a worst-case
neighbouring pair with a negative control (the same audit catches a tenth of the noise).
"""

import warnings

import numpy as np
import pytest
from dp_accounting import dp_event
from scipy import stats

import dp_sklearn._clipping as clipping_module
from dp_sklearn import (
    ClippingWarning,
    DPGridSearchCV,
    DPLasso,
    DPLogisticRegression,
    DPMinMaxScaler,
    DPOnlineClassifier,
    DPOnlineRegressor,
    DPRidge,
    DPSparseLinearRegression,
    DPSparseLogisticRegression,
    DPStandardScaler,
    PrivacyLedger,
    make_private_pipeline,
)
from dp_sklearn._clipping import CLIPPING_SHARE, clipping_event, private_clipped_fraction
from dp_sklearn._data import count_clipped_rows
from dp_sklearn.audit import audit_epsilon
from dp_sklearn.composition import compose_epsilon
from estimator_data import small_data as _data

N = 300


def _pair(n=N, far=50.0):
    """D and D' differ in the last record: beyond every bound in D, inside them in D'."""
    rng = np.random.default_rng(0)
    X = rng.uniform(-0.1, 0.1, size=(n, 3))
    y = rng.uniform(-0.5, 0.5, size=n)
    Xp, yp = X.copy(), y.copy()
    X[-1], y[-1] = [far, 0.0, 0.0], far
    Xp[-1], yp[-1] = [0.1, 0.0, 0.0], 0.1
    return (X, y), (Xp, yp)


def _labels(y):
    out = (y > 0).astype(int)
    out[:2] = [0, 1]
    return out


REGRESSORS = [
    lambda: DPRidge(data_norm=1.0, bounds_y=(-1, 1), delta=1e-6, random_state=0),
    lambda: DPLasso(data_norm=1.0, bounds_y=(-1, 1), delta=1e-6, random_state=0),
    lambda: DPSparseLinearRegression(n_nonzero_coefs=2, data_norm=1.0, bounds_y=(-1, 1), delta=1e-6, random_state=0),
]
CLASSIFIERS = [
    lambda: DPLogisticRegression(data_norm=1.0, delta=1e-6, random_state=0),
    lambda: DPSparseLogisticRegression(n_nonzero_coefs=2, data_norm=1.0, delta=1e-6, random_state=0),
]


def _public_calls():
    """Every public call that fits on the private data, as ``name, call(X, y)``."""
    grid = {"alpha": [0.1, 1.0]}
    return [
        *((f"regressor{i}", lambda X, y, m=m: m().fit(X, y)) for i, m in enumerate(REGRESSORS)),
        *((f"classifier{i}", lambda X, y, m=m: m().fit(X, _labels(y))) for i, m in enumerate(CLASSIFIERS)),
        ("online_regressor", lambda X, y: DPOnlineRegressor(bounds_y=(-1, 1), data_norm=1.0, delta=1e-6, horizon=N,
                                                            random_state=0).partial_fit(X, y)),
        ("online_classifier", lambda X, y: DPOnlineClassifier(data_norm=1.0, delta=1e-6, horizon=N, random_state=0)
         .partial_fit(X, _labels(y), classes=[0, 1])),
        ("standard_scaler", lambda X, y: DPStandardScaler(bounds=(-1, 1), delta=1e-6, random_state=0).fit_transform(X)),
        ("minmax_scaler", lambda X, y: DPMinMaxScaler(bounds=(-1, 1), delta=1e-6, random_state=0).fit_transform(X)),
        ("search", lambda X, y: DPGridSearchCV(DPRidge(data_norm=1.0, bounds_y=(-1, 1)), grid, epsilon=1.0,
                                               delta=1e-6, n_iter=4, random_state=0).fit(X, y)),
        ("pipeline", lambda X, y: make_private_pipeline(DPStandardScaler(bounds=(-1, 1), random_state=0),
                                                        DPRidge(data_norm=1.0, bounds_y=(-1, 1), random_state=0),
                                                        epsilon=1.0, delta=1e-6).fit(X, y)),
    ]


@pytest.mark.parametrize("name, call", _public_calls(), ids=[c[0] for c in _public_calls()])
def test_no_public_call_warns_about_the_data(name, call):
    # The attack of item 10: set the bounds just above every known record; a warning on
    # one side of the pair only reads the last record's membership off it.
    for X, y in _pair():
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            call(X, y)
        assert [str(w.message) for w in caught] == []


# ---------------------------------------------------------------------------------- calibration
@pytest.mark.parametrize("k", [1, 2])
def test_noise_is_laplace_of_the_closed_form_scale(k):
    n, eps, draws = 10**7, 0.8, 20000
    counts = {f"bound{j}": 5 * 10**6 for j in range(k)}  # in the interior: [0, 1] never clips
    rng = np.random.default_rng(1)
    noise = np.array([[f * n - 5 * 10**6 for f in private_clipped_fraction(counts, n, eps, rng).values()]
                      for _ in range(draws)])
    scale = k / (CLIPPING_SHARE * eps)
    for j in range(k):
        assert abs(noise[:, j].std() / (np.sqrt(2.0) * scale) - 1.0) < 0.04
        assert abs(np.abs(noise[:, j]).mean() / scale - 1.0) < 0.03  # E|Laplace(b)| = b
        assert stats.kstest(noise[:, j], stats.laplace(scale=scale).cdf).pvalue > 1e-3


def test_event_and_budget_split_are_planned_from_public_values():
    (X, y), _ = _pair()
    eps = 2.0
    plain = DPRidge(data_norm=1.0, bounds_y=(-1, 1), epsilon=eps, random_state=0)
    diag = DPRidge(data_norm=1.0, bounds_y=(-1, 1), epsilon=eps, report_clipping=True, random_state=0)
    assert clipping_event(eps) == dp_event.LaplaceDpEvent(1.0 / (CLIPPING_SHARE * eps))
    assert diag._model_epsilon() == pytest.approx((1 - CLIPPING_SHARE) * plain._model_epsilon())
    led = PrivacyLedger(delta=1e-5)
    try:
        m = diag.set_params(ledger=led).fit(X, y)
        assert clipping_event(eps) in m.dp_event_.events
        assert len(led) == 1 and led.events[0] == m.dp_event_
        assert m.epsilon_ == eps and compose_epsilon([m.dp_event_], 1e-5) <= eps * (1 + 1e-9)
    finally:
        led.delete()
    assert not hasattr(plain.fit(X, y), "clipped_fraction_")
    assert not hasattr(m.set_params(report_clipping=False).fit(X, y), "clipped_fraction_")  # no stale release


@pytest.mark.parametrize("make", REGRESSORS + CLASSIFIERS)
def test_non_private_fit_releases_the_exact_fractions(make):
    (X, y), _ = _pair()
    X, y = X * 8.0, y * 3.0  # some rows beyond data_norm=1, a third of the targets beyond bounds_y
    est = make().set_params(epsilon=np.inf, report_clipping=True)
    regressor = "bounds_y" in est.get_params()
    m = est.fit(X, y if regressor else _labels(y))
    expected = {"data_norm": count_clipped_rows(X, 1.0, 2) / N}
    if regressor:
        expected["bounds_y"] = np.mean(np.abs(y) > 1)
    assert m.clipped_fraction_ == pytest.approx(expected, abs=1e-15)
    assert all(0.05 < v < 0.95 for v in expected.values())


def test_the_diagnostic_tells_a_small_bound_from_a_large_one():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(5000, 4))
    y = X @ [1.0, -1.0, 0.5, 0.0] + 0.1 * rng.normal(size=5000)
    small = DPRidge(data_norm=1.0, bounds_y=(-1, 1), report_clipping=True, random_state=0).fit(X, y)
    large = DPRidge(data_norm=10.0, bounds_y=(-10, 10), report_clipping=True, random_state=0).fit(X, y)
    assert small.clipped_fraction_["data_norm"] > 0.8 and small.clipped_fraction_["bounds_y"] > 0.4
    assert large.clipped_fraction_["data_norm"] < 0.02 and large.clipped_fraction_["bounds_y"] < 0.02


def test_dask_input_is_refused_before_any_budget():
    da = pytest.importorskip("dask.array")
    (X, y), _ = _pair()
    led = PrivacyLedger(delta=1e-5)
    try:
        with pytest.raises(ValueError, match="report_clipping"):
            DPRidge(bounds_y=(-1, 1), report_clipping=True, ledger=led).fit(da.from_array(X, chunks=100),
                                                                             da.from_array(y, chunks=100))
        assert len(led) == 0 and led.pending == []
    finally:
        led.delete()


# ---------------------------------------------------------------------------------- audit
#: the diagnostic gets CLIPPING_SHARE of the fit's epsilon: this fit epsilon gives it 1
EPS_FIT = 1.0 / CLIPPING_SHARE


def _diagnostic(make, labels):
    def mechanism(X, y, rng):
        est = make().set_params(epsilon=EPS_FIT, delta=1e-3, report_clipping=True, random_state=rng)
        return list(est.fit(X, _labels(y) if labels else y).clipped_fraction_.values())
    return mechanism


@pytest.mark.parametrize("make, labels", [(lambda: DPRidge(data_norm=1.0, bounds_y=(-1, 1), solver="ssp",
                                                           fit_intercept=False), False),
                                          (lambda: DPLogisticRegression(data_norm=1.0, solver="output_perturbation",
                                                                        fit_intercept=False), True)],
                         ids=["ridge-two-counts", "logistic-one-count"])
def test_audit_with_negative_control(make, labels, monkeypatch):
    D, D_prime = _pair(n=10)
    mech = _diagnostic(make, labels)
    res = audit_epsilon(mech, D, D_prime, n_samples=1000, random_state=0)
    assert res.epsilon_lower <= 1.0
    # Negative control: a tenth of the noise, the same claim; the audit must catch it.
    monkeypatch.setattr(clipping_module, "CLIPPING_SHARE", 10 * CLIPPING_SHARE)
    res = audit_epsilon(mech, D, D_prime, n_samples=1000, random_state=0)
    assert res.epsilon_lower > 1.0


# ------------------------------------------------------------------------------
# Behaviour of the estimators: errors, scikit-learn integration, reproducibility, utility.


def test_clipping_is_neither_reported_nor_stored():
    # Issue 19 item 10: whether a row was clipped is a data-dependent bit; no warning says it.
    X, y = _data(DPRidge)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        m = DPRidge(data_norm=0.5, bounds_y=(-3, 3), random_state=0).fit(X, y)
    assert caught == []
    public = {k for k in vars(m) if k.endswith("_") and not k.startswith("_")}
    assert public == {"coef_", "intercept_", "dp_event_", "epsilon_", "delta_", "n_iter_", "solver_", "bounds_y_", "data_norm_",
                      "n_features_in_"}


# ------------------------------------------------------------------------------
# Issue 8 acceptance: every numbered reproducer, as written in the issue, end to end.
#
# Standardized diabetes ``X, y`` and ``led = PrivacyLedger(...)``, through the public API
# only. Each test asserts the fixed behaviour; the detailed unit tests and the statistical
# audits at the strength live next to the code they cover (named per test).


BOUNDS = (25, 346)


def test_warnings_carry_no_counts_and_not_one_per_hidden_run(diabetes_full):
    X, y = diabetes_full
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        DPRidge(bounds_y=BOUNDS, data_norm=1.0, random_state=0).fit(X, y)
        DPGridSearchCV(DPRidge(bounds_y=BOUNDS, data_norm=1.0), {"alpha": [0.1, 1.0]}, epsilon=1.0, delta=1e-6,
                       n_iter=20, random_state=0).fit(X, y)
    # issue 19 item 10: no clipping warning at all (it was one data-dependent bit per call)
    assert [str(w.message) for w in caught if issubclass(w.category, ClippingWarning)] == []
