"""class_weight on DPLogisticRegression (dp_sklearn/linear_model/_class_weight.py, dp_sklearn/_losses/_weighted.py)."""

import warnings

import numpy as np
import pytest
from sklearn import clone, config_context
from sklearn.datasets import load_breast_cancer, make_classification
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import recall_score
from sklearn.preprocessing import StandardScaler
from sklearn.utils.class_weight import compute_class_weight
from sklearn.utils.estimator_checks import parametrize_with_checks

import dp_sklearn.linear_model._class_weight as cw_mod
import dp_sklearn.solvers._common as common_mod
from dp_sklearn import DPLinearSVC, DPLogisticRegression, PrivacyLedger
from dp_sklearn._losses import LogisticLoss
from dp_sklearn._losses._weighted import WeightedLoss
from dp_sklearn.audit import audit_epsilon, glm_worst_case_pair
from dp_sklearn.ledger import compose_epsilon
from weight_checks import sample_weight_failures

EPS, DELTA = 1.0, 1e-5


#: the one check that cannot hold: it compares class_weight="balanced" with the dict of the exact
#: balanced weights, but the private fit's weights come from noisy counts (and the counts' release
#: takes a share of epsilon), so the two fits differ by design
NOISY_BALANCED = {"check_class_weight_balanced_linear_classifier": "balanced weights come from private counts"}


@parametrize_with_checks([DPLogisticRegression(class_weight="balanced", random_state=0),
                          DPLogisticRegression(class_weight={0: 2.0, 1: 1.0}, random_state=0)],
                         expected_failed_checks=lambda est: {**NOISY_BALANCED, **sample_weight_failures(est)})
def test_sklearn_compatible(estimator, check):
    check(estimator)


@pytest.fixture(scope="module")
def breast_cancer():
    X, y = load_breast_cancer(return_X_y=True)
    return StandardScaler().fit_transform(X), y


def test_weighted_loss_scales_the_base_and_its_bounds():
    loss = WeightedLoss(LogisticLoss(), 4.0, mean_weight=1.0)
    z, labels, w = np.array([0.5, -1.0]), np.array([1.0, -1.0]), np.array([2.0, 0.5])
    y = WeightedLoss.attach(labels, w)
    np.testing.assert_allclose(loss.dphi(z, y), w * LogisticLoss().dphi(z, labels))
    assert loss.lipschitz == 4.0 and loss.curvature == 1.0 and loss.step_curvature == 0.25
    assert "bounded_value" not in loss.properties()  # the exact samplers do not serve it


@pytest.mark.parametrize("class_weight", [{0: 3.0, 1: 0.5}, "balanced"])
def test_epsilon_inf_is_sklearn(breast_cancer, class_weight):
    """Without an intercept (ours is penalized in normalized units) the fit is scikit-learn's to 1e-4."""
    X, y = breast_cancer
    B = 1.01 * np.linalg.norm(X, axis=1).max()
    sk_cw = class_weight if isinstance(class_weight, dict) else dict(
        zip([0, 1], compute_class_weight("balanced", classes=np.array([0, 1]), y=y)))
    sk = LogisticRegression(C=1.0, class_weight=sk_cw, fit_intercept=False, tol=1e-12, max_iter=10000).fit(X, y)
    m = DPLogisticRegression(class_weight=class_weight, fit_intercept=False, epsilon=np.inf, data_norm=B).fit(X, y)
    np.testing.assert_allclose(m.coef_, sk.coef_, rtol=1e-4, atol=1e-4 * np.abs(sk.coef_).max())
    np.testing.assert_allclose(m.class_weight_, [sk_cw[0], sk_cw[1]])


def test_balanced_counts_are_a_release_in_dp_event(breast_cancer):
    X, y = breast_cancer
    m = DPLogisticRegression(class_weight="balanced", epsilon=EPS, delta=DELTA, random_state=0).fit(X, y)
    laplace, gd = m.dp_event_.events
    assert laplace.noise_multiplier == pytest.approx(1.0 / (cw_mod.CLASS_WEIGHT_SHARE * EPS))
    assert compose_epsilon([m.dp_event_], DELTA) <= EPS * (1 + 2e-3)
    assert m.epsilon_ == EPS and m.class_weight_.shape == (2,)
    # calibration: the released counts n / (K w) have Laplace noise of scale 2 / (share * epsilon)
    counts = np.array([[len(y) / (2 * w) for w in DPLogisticRegression(class_weight="balanced", epsilon=EPS,
                                                                         random_state=s, max_iter=10).fit(X, y)
                        .class_weight_] for s in range(300)])
    scale = 2.0 / (cw_mod.CLASS_WEIGHT_SHARE * EPS)
    assert np.std(counts[:, 0]) == pytest.approx(np.sqrt(2) * scale, rel=0.15)
    assert np.mean(counts[:, 0]) == pytest.approx(np.sum(y == 0), abs=4 * scale / np.sqrt(300) * 1.5)


def test_dict_weights_release_nothing_more(breast_cancer):
    X, y = breast_cancer
    m = DPLogisticRegression(class_weight={0: 2.0, 1: 1.0}, epsilon=EPS, delta=DELTA, random_state=0).fit(X, y)
    plain = DPLogisticRegression(epsilon=EPS, delta=DELTA, random_state=0).fit(X, y)
    assert m.dp_event_ == plain.dp_event_  # only the solver's event: the unweighted fit's


@pytest.mark.parametrize("bad", [{0: -1.0}, {0: np.nan}, {0: True}, {}, "auto"])
def test_bad_class_weight_refused_before_reservation(breast_cancer, bad):
    X, y = breast_cancer
    ledger = PrivacyLedger(max_epsilon=10.0)
    with pytest.raises(ValueError, match="class_weight"):
        DPLogisticRegression(class_weight=bad, ledger=ledger).fit(X, y)
    assert ledger.records == [] and ledger.pending == []
    ledger.delete()


def test_balanced_raises_minority_recall():
    X, y = make_classification(4000, 10, weights=[0.95], random_state=0, flip_y=0.01)
    X = StandardScaler().fit_transform(X)
    recall = {cw: np.mean([recall_score(y[3000:], DPLogisticRegression(class_weight=cw, epsilon=1.0, random_state=s)
                                        .fit(X[:3000], y[:3000]).predict(X[3000:])) for s in range(5)])
              for cw in (None, "balanced")}
    assert recall["balanced"] > recall[None] + 0.05, recall


def _fit(X, y, rng):
    with config_context(skip_parameter_validation=True):  # the audit times the mechanism only
        return DPLogisticRegression(class_weight="balanced", epsilon=EPS, delta=DELTA, data_norm=1.0,
                                    fit_intercept=False, random_state=rng, max_iter=20).fit(X, y)


def _coef(X, y, rng):
    return np.ravel(_fit(X, y, rng).coef_)


def _weights(X, y, rng):
    return _fit(X, y, rng).class_weight_


def test_audit_and_negative_controls(monkeypatch):
    D, D_prime = glm_worst_case_pair(n=10, n_features=2, kind="classification", data_norm=1.0)
    # the differing record changes class: y = 1 in D and 0 in D' moves one count each way
    # (the coefficients are audited on the pair as built: x = +e1 / -e1 with the same label pulls them apart)
    Xp, yp = D_prime
    yp = yp.copy()
    yp[-1] = 0
    W_prime = (Xp, yp)
    for mech, pair, seed in ((_coef, D_prime, 0), (_weights, W_prime, 3)):
        res = audit_epsilon(mech, D, pair, n_samples=1000, delta=DELTA, random_state=seed)
        assert res.epsilon_lower <= EPS, res
    monkeypatch.setattr(cw_mod, "CLASS_WEIGHT_SHARE", 50.0)  # the counts' noise 1000 x too small
    bad = audit_epsilon(_weights, D, W_prime, n_samples=1000, delta=DELTA, random_state=1)
    assert bad.epsilon_lower > EPS, bad
    monkeypatch.setattr(cw_mod, "CLASS_WEIGHT_SHARE", 0.05)
    real = common_mod.composed_gaussian_noise_multiplier
    monkeypatch.setattr(common_mod, "composed_gaussian_noise_multiplier", lambda e, d, T: real(e, d, T) / 10)
    bad2 = audit_epsilon(_coef, D, D_prime, n_samples=1000, delta=DELTA, random_state=2)
    assert bad2.epsilon_lower > EPS, bad2


# ---------------------------------------------------------------- finite epsilon: the intercept offset
@pytest.mark.parametrize("multiclass", [False, True])
def test_finite_epsilon_class_weight_is_the_intercept_offset(breast_cancer, multiclass):
    """With an intercept, the logistic models take public weights as the offset log w_c of the unweighted
    private fit (prior correction): the same release, coefficients untouched."""
    X, y = breast_cancer
    if multiclass:
        y = np.digitize(X[:, 0], [-0.5, 0.5])
    cw = {0: 0.5, 1: 4.0, 2: 2.0} if multiclass else {0: 0.5, 1: 4.0}
    a = DPLogisticRegression(epsilon=EPS, delta=DELTA, random_state=0).fit(X, y)
    b = DPLogisticRegression(class_weight=cw, epsilon=EPS, delta=DELTA, random_state=0).fit(X, y)
    np.testing.assert_allclose(b.coef_, a.coef_, rtol=1e-12)
    logw = np.log([cw[c] for c in b.classes_])
    offset = logw if multiclass else [logw[1] - logw[0]]
    np.testing.assert_allclose(b.intercept_ - a.intercept_, offset, rtol=1e-12)
    assert b.dp_event_ == a.dp_event_


def test_offset_is_not_taken_without_intercept_or_by_the_svc(breast_cancer):
    """Without an intercept (or for the squared hinge) the weights stay in the loss."""
    X, y = breast_cancer
    cw = {0: 0.5, 1: 4.0}
    for est in (DPLogisticRegression(fit_intercept=False), DPLinearSVC()):
        a = clone(est).set_params(random_state=0).fit(X, y)
        b = clone(est).set_params(class_weight=cw, random_state=0).fit(X, y)
        assert not np.allclose(a.coef_, b.coef_)


# ---------------------------------------------------------------- DPOnlineClassifier
import dp_sklearn.linear_model._online as online_est_mod  # noqa: E402
from dp_sklearn import DPOnlineClassifier  # noqa: E402
from dp_sklearn._accounting import gaussian_noise_multiplier  # noqa: E402
from scipy.special import expit  # noqa: E402


def _reference_weighted_online_logistic(Xt, y, w, alpha, radius, clip, s0):
    """The non-private algorithm written out per record: projected SGD on the clipped weighted logistic
    loss w_i log(1 + exp(-y_i <x_i, theta>)) + ridge (labels in {-1, +1})."""
    theta = np.zeros(Xt.shape[1])
    for t in range(1, Xt.shape[0] + 1):
        x, yt = Xt[t - 1], y[t - 1]
        g = -w[t - 1] * yt * expit(-yt * (x @ theta)) * x
        g *= min(1.0, clip / max(np.linalg.norm(g), 1e-300))
        eta = 1.0 / (alpha * (t + s0))
        theta = (1 - eta * alpha) * theta - eta * g
        theta *= min(1.0, radius / np.linalg.norm(theta)) if np.linalg.norm(theta) > 0 else 1.0
    return theta


@pytest.mark.parametrize("clip_norm", [None, 3.0])
def test_online_epsilon_inf_is_the_non_private_weighted_algorithm(breast_cancer, clip_norm):
    """At epsilon=inf the weights are loss weights: the fit is the weighted online algorithm, the clip norm
    applied to each weighted per-example gradient (None: the row bound), the smoothness the cap's."""
    X, y = breast_cancer
    X, y = X[:200], y[:200]
    cw = {0: 3.0, 1: 0.5}
    est = DPOnlineClassifier(class_weight=cw, epsilon=np.inf, alpha=0.05, radius=3.0, data_norm=6.0,
                             fit_intercept=False, clip_norm=clip_norm).fit(X, y)
    Xt = X / np.maximum(6.0, np.linalg.norm(X, axis=1))[:, None]
    w = np.where(y == 1, 0.5, 3.0)
    s0 = 0.25 * 3.0 / (2 * 0.05)  # b beta / (2 Psi), beta = curvature x cap x x_norm^2
    ref = _reference_weighted_online_logistic(Xt, np.where(y == 1, 1.0, -1.0), w, 0.05, 3.0,
                                              1.0 if clip_norm is None else clip_norm, s0)
    np.testing.assert_allclose(est.coef_.ravel(), ref / 6.0, rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(est.class_weight_, [3.0, 0.5])
    # "balanced" at epsilon=inf is the dict of the exact balanced weights
    exact = dict(zip([0, 1], compute_class_weight("balanced", classes=np.array([0, 1]), y=y)))
    kw = dict(epsilon=np.inf, alpha=0.05, radius=3.0, data_norm=6.0, fit_intercept=False, clip_norm=clip_norm)
    a = DPOnlineClassifier(class_weight="balanced", **kw).fit(X, y)
    b = DPOnlineClassifier(class_weight={0: exact[0], 1: exact[1]}, **kw).fit(X, y)
    np.testing.assert_allclose(a.class_weight_, b.class_weight_, rtol=1e-12)
    # the caps differ (20 for "balanced", the dict's largest weight) and with them the smoothness offset s0
    assert not np.allclose(a.coef_, b.coef_, rtol=1e-6)


def test_online_loss_weight_noise_is_the_closed_form():
    """Calibration: without an intercept the weights are loss weights and the release's noise has
    sigma = z * 2 min(c, x_norm * cap) / (Psi (n + s0)), the cap being the dict's largest weight."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 2))
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1))[:, None]
    y = (X[:, 0] > 0).astype(int)
    cap, alpha, n = 4.0, 0.5, 40
    coefs = np.array([DPOnlineClassifier(class_weight={0: 1.0, 1: cap}, epsilon=EPS, delta=DELTA, alpha=alpha,
                                         radius=1e6, data_norm=1.0, fit_intercept=False, clip_norm=100.0,
                                         random_state=s).fit(X, y).coef_.ravel() for s in range(400)])
    s0 = 0.25 * cap / (2 * alpha)
    sigma = gaussian_noise_multiplier(EPS, DELTA) * 2 * cap / (alpha * (n + s0))
    np.testing.assert_allclose(coefs.std(axis=0), sigma, rtol=0.1)
    # the same without class weights: the unit-weight sensitivity
    plain = np.array([DPOnlineClassifier(epsilon=EPS, delta=DELTA, alpha=alpha, radius=1e6, data_norm=1.0,
                                         fit_intercept=False, clip_norm=100.0, random_state=s)
                      .fit(X, y).coef_.ravel() for s in range(400)])
    np.testing.assert_allclose(plain.std(axis=0), gaussian_noise_multiplier(EPS, DELTA) * 2
                               / (alpha * (n + 0.25 / (2 * alpha))), rtol=0.1)


def test_online_balanced_counts_are_a_release_in_dp_event(breast_cancer):
    X, y = breast_cancer
    m = DPOnlineClassifier(class_weight="balanced", epsilon=EPS, delta=DELTA, random_state=0).fit(X, y)
    laplace, gauss = m.dp_event_.events
    assert laplace.noise_multiplier == pytest.approx(1.0 / (cw_mod.CLASS_WEIGHT_SHARE * EPS))
    assert gauss.noise_multiplier == pytest.approx(gaussian_noise_multiplier((1 - cw_mod.CLASS_WEIGHT_SHARE) * EPS,
                                                                             DELTA))
    assert compose_epsilon([m.dp_event_], DELTA) <= EPS * (1 + 2e-3)
    counts = np.array([[len(y) / (2 * w) for w in DPOnlineClassifier(class_weight="balanced", epsilon=EPS,
                                                                       random_state=s).fit(X, y).class_weight_]
                       for s in range(200)])
    scale = 2.0 / (cw_mod.CLASS_WEIGHT_SHARE * EPS)
    assert np.std(counts[:, 0]) == pytest.approx(np.sqrt(2) * scale, rel=0.15)
    # a public dict releases nothing more, and with an intercept it is the offset of the unweighted release
    a = DPOnlineClassifier(epsilon=EPS, delta=DELTA, random_state=0).fit(X, y)
    b = DPOnlineClassifier(class_weight={0: 0.5, 1: 4.0}, epsilon=EPS, delta=DELTA, random_state=0).fit(X, y)
    assert b.dp_event_ == a.dp_event_
    np.testing.assert_allclose(b.coef_, a.coef_, rtol=1e-12)
    np.testing.assert_allclose(b.intercept_ - a.intercept_, [np.log(4.0 / 0.5)], rtol=1e-12)


def test_online_offset_multiclass_partial_fit_stream(breast_cancer):
    """A public dict on a multiclass stream: every call's release gets the offset log w_c."""
    X, y = breast_cancer
    y = np.digitize(X[:, 0], [-0.5, 0.5])
    cw = {0: 0.5, 1: 4.0, 2: 2.0}
    a, b = DPOnlineClassifier(random_state=0, horizon=len(y)), DPOnlineClassifier(class_weight=cw, random_state=0,
                                                                                  horizon=len(y))
    for chunk in np.array_split(np.arange(len(y)), 3):
        a.partial_fit(X[chunk], y[chunk], classes=[0, 1, 2])
        b.partial_fit(X[chunk], y[chunk], classes=[0, 1, 2])
        np.testing.assert_allclose(b.intercept_ - a.intercept_, np.log([0.5, 4.0, 2.0]), rtol=1e-12)


def test_online_balanced_refused_in_partial_fit_before_reservation(breast_cancer):
    X, y = breast_cancer
    ledger = PrivacyLedger(max_epsilon=10.0)
    est = DPOnlineClassifier(class_weight="balanced", ledger=ledger)
    with pytest.raises(ValueError, match="class_weight='balanced' is not supported for partial_fit"):
        est.partial_fit(X, y, classes=[0, 1])
    assert ledger.records == [] and ledger.pending == [] and not hasattr(est, "n_samples_seen_")
    est.fit(X, y)  # fit releases the counts ...
    assert len(ledger.records) == 1
    with pytest.raises(ValueError, match="partial_fit"):  # ... but the stream cannot continue with them
        est.partial_fit(X, y)
    assert len(ledger.records) == 1 and ledger.pending == []
    for bad in ({0: -1.0}, {0: np.nan}, {}):
        with pytest.raises(ValueError, match="class_weight"):
            DPOnlineClassifier(class_weight=bad, ledger=ledger).fit(X, y)
    with pytest.raises(ValueError, match="implicit"):  # loss weights (no intercept): no closed-form step
        DPOnlineClassifier(class_weight={0: 2.0}, fit_intercept=False, update="implicit", ledger=ledger).fit(X, y)
    assert len(ledger.records) == 1 and ledger.pending == []
    ledger.delete()


def _online_loss_weighted(X, y, rng):
    with config_context(skip_parameter_validation=True):  # the audit times the mechanism only
        return DPOnlineClassifier(class_weight={0: 1.0, 1: 8.0}, epsilon=EPS, delta=DELTA, alpha=0.5, data_norm=1.0,
                                  fit_intercept=False, clip_norm=100.0, random_state=rng).fit(X, y).coef_.ravel()


def test_online_loss_weight_audit_and_negative_control(monkeypatch):
    """The weighted differing record (class 1, weight 8) moves the release by the cap's sensitivity; the
    plan that ignores the cap (unit weights in the sensitivity) is caught."""
    D, D_prime = glm_worst_case_pair(n=10, n_features=2, kind="classification", data_norm=1.0)
    res = audit_epsilon(_online_loss_weighted, D, D_prime, n_samples=1000, delta=DELTA, random_state=0)
    assert res.epsilon_lower <= EPS, res
    monkeypatch.setattr(online_est_mod, "max_class_weight", lambda cw: 1.0)
    bad = audit_epsilon(_online_loss_weighted, D, D_prime, n_samples=1000, delta=DELTA, random_state=1)
    assert bad.epsilon_lower > EPS, bad


def test_online_class_weight_text_is_the_logistic_one():
    """The class_weight parameter means the same on DPOnlineClassifier as on DPLogisticRegression."""
    pytest.importorskip("numpydoc")
    from sklearn.utils._testing import assert_docstring_consistency

    assert_docstring_consistency([DPLogisticRegression, DPOnlineClassifier], include_params=["class_weight"])


def _online_failures(est):
    out = sample_weight_failures(est)
    if est.get_params()["class_weight"] == "balanced":  # every check that calls partial_fit
        reason = "partial_fit refuses class_weight='balanced' (as SGDClassifier)"
        out.update({c: reason for c in ("check_estimators_partial_fit_n_features", "check_fit_score_takes_y",
                                        "check_n_features_in_after_fitting")})
    return out


@parametrize_with_checks([DPOnlineClassifier(class_weight="balanced", random_state=0),
                          DPOnlineClassifier(class_weight={0: 2.0, 1: 1.0}, random_state=0)],
                         expected_failed_checks=_online_failures)
def test_online_sklearn_compatible(estimator, check):
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="delta=")
        check(estimator)
