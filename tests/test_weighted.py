"""sample_weight on every estimator's fit (and the online models' partial_fit), with the public bound
max_sample_weight, through WeightedLoss (dp_sklearn/_losses/_weighted.py; the estimators' side in
dp_sklearn/linear_model/_base.py and _online.py)."""

import math

import numpy as np
import pytest
from scipy.optimize import minimize as sp_min
from sklearn import config_context
from sklearn.datasets import load_breast_cancer, load_diabetes
from sklearn.linear_model import ElasticNet, HuberRegressor, LinearRegression, LogisticRegression, Ridge
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import LinearSVC

from dp_sklearn import (DPElasticNet, DPHuberRegressor, DPLasso, DPLinearRegression, DPLinearSVC,
                        DPLogisticRegression, DPOnlineClassifier, DPOnlineRegressor, DPRidge, DPStandardScaler,
                        PrivacyLedger)
from dp_sklearn._accounting import gaussian_noise_multiplier
from dp_sklearn._losses import LogisticLoss
from dp_sklearn._losses._weighted import WeightedLoss
from dp_sklearn.audit import audit_epsilon, glm_worst_case_pair
from dp_sklearn.linear_model._base import _DPLinearBase
from dp_sklearn.pipeline import make_private_pipeline
from dp_sklearn.solvers._online import plan_online

EPS, DELTA = 1.0, 1e-5


@pytest.fixture(scope="module")
def diabetes():
    X, y = load_diabetes(return_X_y=True)
    return StandardScaler().fit_transform(X), y


@pytest.fixture(scope="module")
def cancer():
    X, y = load_breast_cancer(return_X_y=True)
    return StandardScaler().fit_transform(X), y


def _weights(n, high=1.0, seed=0):
    return np.random.default_rng(seed).uniform(0.0, high, n)


def _close(ours, ref):
    np.testing.assert_allclose(ours, ref, rtol=1e-4, atol=1e-4 * np.abs(ref).max())


# ---------------------------------------------------------------- epsilon = inf: scikit-learn's weighted fit
def test_inf_ridge_is_sklearn_weighted():
    """Ridge sums the weighted squared errors, as ours does (1/n times it); the intercept is a column B."""
    rng = np.random.default_rng(0)
    n, p, B = 80, 5, 10.0
    X = rng.normal(size=(n, p))
    y = X @ rng.normal(size=p) + 0.1 * rng.normal(size=n)
    sw = _weights(n)
    m = DPRidge(alpha=2.0, epsilon=np.inf, data_norm=B, bounds_y=(-20, 20)).fit(X, y, sample_weight=sw)
    c = np.mean(np.clip(y, -20, 20))  # the targets' centre (unweighted: the limit of the private mean)
    ref = Ridge(alpha=2.0, fit_intercept=False).fit(np.hstack([X, np.full((n, 1), B)]), y - c, sample_weight=sw)
    np.testing.assert_allclose(m.coef_, ref.coef_[:p], rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(m.intercept_, c + B * ref.coef_[p], rtol=1e-6, atol=1e-8)


def test_inf_linear_regression_is_sklearn_weighted(diabetes):
    X, y = diabetes
    sw = _weights(len(y))
    sk = LinearRegression().fit(X, y, sample_weight=sw)
    B = 1.01 * np.linalg.norm(X, axis=1).max()
    m = DPLinearRegression(solver="noisy_newton", epsilon=np.inf, data_norm=B,
                           bounds_y=(y.min() - 1, y.max() + 1)).fit(X, y, sample_weight=sw)
    _close(m.coef_, sk.coef_)
    assert m.intercept_ == pytest.approx(sk.intercept_, rel=1e-4)


def test_inf_elastic_net_is_sklearn_weighted(diabetes):
    """ElasticNet rescales the weights to sum to n (a normalization by a private sum); ours divides by the
    public n, so the two objectives are the same for weights of mean 1."""
    X, y = diabetes
    sw = _weights(len(y), 2.0)
    sw = sw / sw.mean()
    sk = ElasticNet(alpha=0.1, l1_ratio=0.5, tol=1e-12, max_iter=100000).fit(X, y, sample_weight=sw)
    B = 1.01 * np.linalg.norm(X, axis=1).max()
    m = DPElasticNet(alpha=0.1, l1_ratio=0.5, epsilon=np.inf, data_norm=B, bounds_y=(y.min() - 1, y.max() + 1),
                     tol=1e-12, max_sample_weight=float(np.ceil(sw.max()))).fit(X, y, sample_weight=sw)
    _close(m.coef_, sk.coef_)
    assert m.intercept_ == pytest.approx(sk.intercept_, rel=1e-4)


def test_inf_huber_is_sklearn_weighted(diabetes):
    """HuberRegressor sums w_i (sigma + H(r_i / sigma) sigma); at its fitted scale_ the minimizers agree."""
    X, y = diabetes
    sw = _weights(len(y))
    sk = HuberRegressor(epsilon=1.35, alpha=0.0, max_iter=10000, tol=1e-12).fit(X, y, sample_weight=sw)
    B = 1.01 * np.linalg.norm(X, axis=1).max()
    m = DPHuberRegressor(huber_threshold=1.35 * sk.scale_, alpha=0.0, epsilon=np.inf, data_norm=B,
                         tol=1e-10).fit(X, y, sample_weight=sw)
    _close(m.coef_, sk.coef_)
    assert m.intercept_ == pytest.approx(sk.intercept_, rel=1e-4)


def test_inf_lasso_is_the_weighted_constrained_minimizer():
    rng = np.random.default_rng(2)
    n, p, R = 60, 6, 0.8
    X = rng.uniform(-1, 1, size=(n, p))
    y = np.clip(X @ np.array([0.9, -0.6, 0, 0, 0.3, 0]) + 0.05 * rng.normal(size=n), -1, 1)
    sw = _weights(n)
    m = DPLasso(radius=R, epsilon=np.inf, data_norm=1.0, data_norm_ord=np.inf, bounds_y=(-1, 1),
                fit_intercept=False).fit(X, y, sample_weight=sw)
    fun = lambda z: 0.5 * np.mean(sw * (y - X @ (z[:p] - z[p:])) ** 2)  # noqa: E731
    res = sp_min(fun, np.zeros(2 * p), method="SLSQP", bounds=[(0, None)] * (2 * p),
                 constraints=[{"type": "ineq", "fun": lambda z: R - z.sum()}], options={"ftol": 1e-14, "maxiter": 1000})
    np.testing.assert_allclose(m.coef_, res.x[:p] - res.x[p:], atol=1e-4)


def test_inf_logistic_is_sklearn_weighted(cancer):
    """LogisticRegression: C sum_i w_i log-loss + ||w||^2 / 2; ours penalizes the intercept as a column B."""
    X, y = cancer
    n, p = X.shape
    B = 1.01 * np.linalg.norm(X, axis=1).max()
    sw = _weights(n)
    m = DPLogisticRegression(C=0.5, epsilon=np.inf, data_norm=B).fit(X, y, sample_weight=sw)
    ref = LogisticRegression(C=0.5, fit_intercept=False, tol=1e-12, max_iter=10000).fit(
        np.hstack([X, np.full((n, 1), B)]), y, sample_weight=sw)
    _close(m.coef_, ref.coef_[:, :p])
    _close(m.intercept_, B * ref.coef_[:, p])


@pytest.mark.parametrize("class_weight", [None, {0: 3.0, 1: 0.5}])
def test_inf_linear_svc_is_sklearn_weighted(cancer, class_weight):
    X, y = cancer
    B = 1.01 * np.linalg.norm(X, axis=1).max()
    sw = _weights(len(y))
    sk = LinearSVC(C=1.0, fit_intercept=False, tol=1e-12, max_iter=100000, class_weight=class_weight).fit(
        X, y, sample_weight=sw)
    m = DPLinearSVC(fit_intercept=False, epsilon=np.inf, data_norm=B, class_weight=class_weight).fit(
        X, y, sample_weight=sw)
    _close(m.coef_, sk.coef_)


# ---------------------------------------------------------------- refusals, before any reservation
ESTIMATORS = [DPRidge(), DPLasso(), DPLinearRegression(solver="noisy_gd"), DPElasticNet(), DPHuberRegressor(),
              DPLogisticRegression(), DPLinearSVC()]


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=lambda e: type(e).__name__)
@pytest.mark.parametrize("bad, match", [(2.0, r"\[0, max_sample_weight=1\]"), (-0.5, r"\[0, max_sample_weight=1\]"),
                                        (np.nan, "NaN"), ("short", "shape")])
def test_bad_weights_refused_before_reservation(cancer, estimator, bad, match):
    X, y = cancer
    sw = X[:5, 0] ** 0 if isinstance(bad, str) else np.r_[np.ones(len(y) - 1), bad]
    ledger = PrivacyLedger(max_epsilon=10.0)
    with pytest.raises(ValueError, match="sample_weight") as info:
        estimator.set_params(ledger=ledger).fit(X, y, sample_weight=sw)
    assert ledger.records == [] and ledger.pending == []
    assert info.match(match)
    ledger.delete()


@pytest.mark.parametrize("estimator, solver", [
    (DPLinearRegression(), "ssp"),
    (DPRidge(solver="objective_perturbation_ddr"), "objective_perturbation_ddr"),
    (DPLogisticRegression(solver="exponential_sampling"), "exponential_sampling"),
])
def test_refusing_solver_named_before_reservation(diabetes, estimator, solver):
    X, y = diabetes
    y = y if not isinstance(estimator, DPLogisticRegression) else (y > np.median(y)).astype(int)
    X = X[:, :1] if solver == "exponential_sampling" else X  # a 2-coefficient solver
    ledger = PrivacyLedger(max_epsilon=10.0)
    with pytest.raises(ValueError, match=f"solver='{solver}' cannot honour sample_weight"):
        estimator.set_params(ledger=ledger).fit(X, y, sample_weight=np.ones(len(y)))
    assert ledger.records == [] and ledger.pending == []
    ledger.delete()


def test_bound_is_a_validated_hyperparameter(cancer):
    X, y = cancer
    with pytest.raises(ValueError, match="max_sample_weight"):
        DPLogisticRegression(max_sample_weight=0.0).fit(X, y)
    m = DPLogisticRegression(max_sample_weight=5.0, random_state=0).fit(X, y, sample_weight=np.full(len(y), 5.0))
    assert m.coef_.shape == (1, X.shape[1])


def test_unit_weights_are_the_unweighted_fit_at_the_default_bound(cancer):
    """With the bound 1 and weights 1 the mechanism is the unweighted one (same noise, same release)."""
    X, y = cancer
    a = DPLogisticRegression(random_state=0).fit(X, y)
    b = DPLogisticRegression(random_state=0).fit(X, y, sample_weight=np.ones(len(y)))
    np.testing.assert_allclose(b.coef_, a.coef_, rtol=1e-10)
    assert b.dp_event_ == a.dp_event_


# ---------------------------------------------------------------- calibration and audit
def test_calibration_output_perturbation_scales_with_the_bound():
    """Output perturbation's noise is z (2 M x_norm / (n Lambda) + 2 tol / Lambda): the bound M, not the weights."""
    rng = np.random.default_rng(0)
    n, p, M, C, tol = 200, 3, 4.0, 0.002, 1e-10
    X = rng.normal(size=(n, p))
    X /= np.linalg.norm(X, axis=1, keepdims=True).max()
    y = (X[:, 0] > 0).astype(int)
    sw = _weights(n, 0.5)  # far below the bound: the noise must not follow them
    lam = 1.0 / (C * n)  # l2_reg with data_norm 1, above the default strong convexity here
    sigma = gaussian_noise_multiplier(EPS, DELTA) * (2.0 * M * 1.0 / (n * lam) + 2.0 * tol / lam)
    coefs = np.array([DPLogisticRegression(solver="output_perturbation", C=C, fit_intercept=False, data_norm=1.0,
                                           tol=tol, max_sample_weight=M, epsilon=EPS, delta=DELTA, random_state=s)
                      .fit(X, y, sample_weight=sw).coef_.ravel() for s in range(300)])
    assert np.std(coefs - coefs.mean(axis=0)) == pytest.approx(sigma, rel=0.06)


def _mechanism(X, y, rng):
    """The weight of each record rides in the last column of X (a record is (x, y, w)). A strong penalty
    keeps the minimizer linear in the weights (no saturation of the logistic derivative)."""
    with config_context(skip_parameter_validation=True):
        m = DPLogisticRegression(solver="output_perturbation", C=1.0 / 3000, fit_intercept=False, data_norm=1.0,
                                 epsilon=EPS, delta=DELTA, random_state=rng).fit(X[:, :-1], y, sample_weight=X[:, -1])
    return m.coef_.ravel()


@pytest.mark.slow
def test_audit_at_the_claim_and_weights_above_the_bound_break_it(monkeypatch):
    (X, y), (Xp, yp) = glm_worst_case_pair(n=10, n_features=2, kind="classification", data_norm=1.0)
    D = (np.column_stack([X, np.ones(len(y))]), y)
    Dp = (np.column_stack([Xp, np.ones(len(yp))]), yp)
    res = audit_epsilon(_mechanism, D, Dp, n_samples=1000, delta=DELTA, random_state=0)
    assert res.epsilon_lower <= EPS, res
    # negative control: the differing record weighs 300 > max_sample_weight = 1, the refusal removed
    heavy = Dp[0].copy()
    heavy[-1, -1] = 300.0
    monkeypatch.setattr(_DPLinearBase, "_check_sample_weight", lambda self, sw, X: np.asarray(sw, dtype=float))
    bad = audit_epsilon(_mechanism, D, (heavy, yp), n_samples=1000, delta=DELTA, random_state=1)
    assert bad.epsilon_lower > EPS, bad


# ---------------------------------------------------------------- routing: pipelines and searches
def test_pipelines_route_sample_weight(cancer):
    X, y = cancer
    sw = np.where(y == 1, 0.2, 1.0)
    pipe = make_private_pipeline(DPStandardScaler(random_state=0), DPLogisticRegression(random_state=0), epsilon=2.0)
    a = pipe.fit(X, y, dplogisticregression__sample_weight=sw)[-1].coef_.copy()
    b = pipe.fit(X, y)[-1].coef_
    assert not np.allclose(a, b)
    sk = make_pipeline(StandardScaler(), DPLogisticRegression(random_state=0)).fit(
        X, y, dplogisticregression__sample_weight=sw)
    assert sk[-1].coef_.shape == (1, X.shape[1])
    with pytest.raises(ValueError, match="sample_weight"):
        make_pipeline(StandardScaler(), DPLogisticRegression()).fit(X, y, dplogisticregression__sample_weight=2 * sw)


def test_grid_search_routes_sample_weight(cancer):
    """scikit-learn's search slices the weights per fold (each fold's fit is its own release)."""
    X, y = cancer
    sw = np.where(y == 1, 0.5, 1.0)
    search = GridSearchCV(DPLogisticRegression(random_state=0), {"C": [0.5, 1.0]}, cv=2).fit(X, y, sample_weight=sw)
    assert search.best_estimator_.coef_.shape == (1, X.shape[1])
    assert math.isfinite(search.best_score_)


# ---------------------------------------------------------------- the online models
def test_online_unit_weights_are_the_unweighted_stream():
    rng = np.random.default_rng(0)
    X, sw = rng.normal(size=(300, 3)), rng.uniform(0, 1, 300)
    y = (X[:, 0] > 0).astype(int)
    a = DPOnlineClassifier(random_state=0).fit(X, y)
    b = DPOnlineClassifier(random_state=0).fit(X, y, sample_weight=np.ones(300))
    np.testing.assert_allclose(b.coef_, a.coef_, rtol=1e-12)
    assert b.dp_event_ == a.dp_event_
    c = DPOnlineRegressor(bounds_y=(-3, 3), horizon=300, random_state=0)
    c.partial_fit(X[:150], X[:150, 0], sample_weight=sw[:150]).partial_fit(X[150:], X[150:, 0])
    assert c.n_samples_seen_ == 300 and np.all(np.isfinite(c.coef_))


def test_online_plan_uses_the_bound():
    """The stream's gradient sensitivity is 2 min(C, x_norm M sup|phi'|): the bound M, with a clip that binds not."""
    x_norm, M = math.sqrt(2.0), 3.0
    base = plan_online(LogisticLoss(), x_norm, epsilon=EPS, delta=DELTA, alpha=0.1, n_ref=100, radius=10.0,
                       clip_norm=100.0, batch_size=1, update="gradient")
    weighted = plan_online(WeightedLoss(LogisticLoss(), M), x_norm, epsilon=EPS, delta=DELTA, alpha=0.1, n_ref=100,
                           radius=10.0, clip_norm=100.0, batch_size=1, update="gradient")
    assert base.grad_sensitivity == pytest.approx(2.0 * x_norm)
    assert weighted.grad_sensitivity == pytest.approx(2.0 * x_norm * M)


@pytest.mark.parametrize("kw, weights, match", [({}, 2.0, "max_sample_weight=1"),
                                                ({"update": "implicit"}, 0.5, "update='implicit'")])
def test_online_refusals_before_reservation(kw, weights, match):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(50, 2))
    y = (X[:, 0] > 0).astype(int)
    ledger = PrivacyLedger(max_epsilon=10.0)
    with pytest.raises(ValueError, match=match):
        DPOnlineClassifier(ledger=ledger, **kw).fit(X, y, sample_weight=np.full(50, weights))
    assert ledger.records == [] and ledger.pending == []
    ledger.delete()
