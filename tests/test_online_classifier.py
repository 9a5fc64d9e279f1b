"""DPOnlineClassifier with more than two classes and predict_proba (dp_sklearn/linear_model/_online.py)."""

import numpy as np
import pytest
from dp_accounting import dp_event
from scipy.special import expit, softmax
from sklearn import config_context
from sklearn.datasets import load_iris
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler

import dp_sklearn.solvers._online as online
from dp_sklearn import DPOnlineClassifier, PrivacyLedger
from dp_sklearn._accounting import gaussian_noise_multiplier
from dp_sklearn._losses import MultinomialLoss
from dp_sklearn.audit import audit_epsilon, glm_worst_case_pair

EPS, DELTA = 1.0, 1e-5


@pytest.fixture(scope="module")
def iris():
    X, y = load_iris(return_X_y=True)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, random_state=0, stratify=y)
    sc = StandardScaler().fit(Xtr)
    return sc.transform(Xtr), sc.transform(Xte), ytr, yte


def test_multinomial_plan_is_unclipped_and_calibrated():
    """K > 2: sensitivity 2 sqrt(2) x_norm per step, smoothness x_norm^2 / 2, the analytic Gaussian multiplier."""
    loss = MultinomialLoss(3)
    x_norm = np.sqrt(2.0)
    plan = online.plan_online(loss, x_norm, epsilon=EPS, delta=DELTA, alpha=0.05, radius=10.0)
    assert plan.clip_norm == pytest.approx(np.sqrt(2.0) * x_norm)
    assert plan.grad_sensitivity == pytest.approx(2.0 * np.sqrt(2.0) * x_norm)
    assert plan.smoothness == pytest.approx(0.5 * x_norm**2)
    assert plan.offset == pytest.approx(plan.smoothness / (2 * 0.05))
    assert plan.noise_multiplier == pytest.approx(gaussian_noise_multiplier(EPS, DELTA))
    n = 80
    assert online.release_sensitivity(plan, 0, n, False) == pytest.approx(
        plan.grad_sensitivity / (0.05 * (n + plan.offset)))


def test_estimator_event_and_released_shapes(iris):
    Xtr, Xte, ytr, yte = iris
    clf = DPOnlineClassifier(epsilon=EPS, delta=DELTA, random_state=0).fit(Xtr, ytr)
    assert isinstance(clf.dp_event_, dp_event.GaussianDpEvent)
    assert clf.dp_event_.noise_multiplier == pytest.approx(gaussian_noise_multiplier(EPS, DELTA))
    assert clf.coef_.shape == (3, 4) and clf.intercept_.shape == (3,)
    assert list(clf.classes_) == [0, 1, 2]


def test_random_neighbours_stay_within_the_bound():
    """The contraction (step 1) for the unclipped multinomial loss: replaced records, random starts."""
    rng = np.random.default_rng(3)
    loss = MultinomialLoss(4)
    for b in (1, 5):
        plan = online.plan_online(loss, 1.0, epsilon=EPS, delta=DELTA, alpha=0.02, radius=3.0, batch_size=b)
        for _ in range(20):
            X = rng.normal(size=(40, 3))
            X /= np.maximum(1.0, np.linalg.norm(X, axis=1))[:, None]
            Y = np.eye(4)[rng.integers(0, 4, 40)]
            Xp, Yp = X.copy(), Y.copy()
            i = rng.integers(40)
            Xp[i], Yp[i] = -X[i], np.roll(Y[i], 1)
            theta0 = rng.normal(size=12)
            for avg in (False, True):
                v = online.run_online(plan, loss, X, Y, theta0, 7, rng, average=avg, return_iterates=True)[1]
                vp = online.run_online(plan, loss, Xp, Yp, theta0, 7, rng, average=avg, return_iterates=True)[1]
                assert np.linalg.norm(v - vp) <= online.release_sensitivity(plan, 7, 40, avg) * (1 + 1e-9)


def test_epsilon_inf_is_the_non_private_multinomial_online_algorithm(iris):
    Xtr, _, ytr, _ = iris
    est = DPOnlineClassifier(epsilon=np.inf, alpha=0.05, radius=3.0, data_norm=4.0, fit_intercept=False).fit(Xtr, ytr)
    Xt = Xtr / np.maximum(4.0, np.linalg.norm(Xtr, axis=1))[:, None]
    Y = np.eye(3)[ytr]
    s0 = 0.5 / (2 * 0.05)
    Theta = np.zeros((4, 3))
    for t in range(1, len(ytr) + 1):  # written out per record: projected SGD, softmax gradient, ridge
        x = Xt[t - 1]
        g = np.outer(x, softmax(x @ Theta) - Y[t - 1])
        eta = 1.0 / (0.05 * (t + s0))
        Theta = (1 - eta * 0.05) * Theta - eta * g
        Theta *= min(1.0, 3.0 / np.linalg.norm(Theta))
    np.testing.assert_allclose(est.coef_, Theta.T / 4.0, rtol=1e-10, atol=1e-14)


def test_predict_proba_binary_and_multiclass(iris):
    Xtr, Xte, ytr, yte = iris
    multi = DPOnlineClassifier(epsilon=5.0, random_state=0).fit(Xtr, ytr)
    P = multi.predict_proba(Xte)
    assert P.shape == (len(yte), 3)
    np.testing.assert_allclose(P.sum(axis=1), 1.0)
    np.testing.assert_array_equal(multi.classes_[P.argmax(axis=1)], multi.predict(Xte))
    np.testing.assert_allclose(np.exp(multi.predict_log_proba(Xte)), P)
    # three balanced classes: chance is 1/3; the mean over 10 seeds (one seed's 45 test rows
    # vary by about 0.06)
    scores = [DPOnlineClassifier(epsilon=5.0, random_state=r).fit(Xtr, ytr).score(Xte, yte) for r in range(10)]
    assert np.mean(scores) > 0.65
    yb = (ytr == 2).astype(int)
    binary = DPOnlineClassifier(epsilon=5.0, random_state=0).fit(Xtr, yb)
    Pb = binary.predict_proba(Xte)
    np.testing.assert_allclose(Pb[:, 1], expit(binary.decision_function(Xte)))
    np.testing.assert_allclose(Pb.sum(axis=1), 1.0)
    np.testing.assert_array_equal(binary.classes_[Pb.argmax(axis=1)], binary.predict(Xte))


def test_partial_fit_multiclass_stream(iris):
    Xtr, _, ytr, _ = iris
    clf = DPOnlineClassifier(horizon=2 * len(ytr), random_state=0)
    clf.partial_fit(Xtr[:40], ytr[:40], classes=[0, 1, 2]).partial_fit(Xtr[40:], ytr[40:])
    assert clf.n_samples_seen_ == len(ytr) and clf.coef_.shape == (3, 4)
    with pytest.raises(ValueError, match="differs"):
        clf.partial_fit(Xtr[:5], ytr[:5], classes=[0, 1])


def test_refusals_before_reservation(iris):
    Xtr, _, ytr, _ = iris
    ledger = PrivacyLedger(max_epsilon=10.0)
    with pytest.raises(ValueError, match="implicit"):
        DPOnlineClassifier(update="implicit", ledger=ledger).fit(Xtr, ytr)
    with pytest.raises(ValueError, match="clip_norm"):
        DPOnlineClassifier(clip_norm=1.0, ledger=ledger).fit(Xtr, ytr)
    assert ledger.records == [] and ledger.pending == []
    DPOnlineClassifier(clip_norm=2.0 * np.sqrt(2.0), ledger=ledger, random_state=0).fit(Xtr, ytr)  # at the bound: fine
    assert len(ledger.records) == 1
    ledger.delete()


def _three_class_pair():
    """glm_worst_case_pair's features (x = +e1 in D, -e1 in D'), labels cycling over three classes."""
    (X, _), (Xp, _) = glm_worst_case_pair(n=12, n_features=2, kind="classification", data_norm=1.0)
    y = np.arange(12) % 3
    return (X, y), (Xp, y.copy())


def _mechanism(X, y, rng):
    with config_context(skip_parameter_validation=True):
        clf = DPOnlineClassifier(alpha=0.5, data_norm=1.0, fit_intercept=False, random_state=rng)
        clf.partial_fit(X[:6], y[:6], classes=[0, 1, 2]).partial_fit(X[6:], y[6:])
    return clf.coef_.ravel()


def test_audit_multiclass_and_negative_control(monkeypatch):
    D, D_prime = _three_class_pair()
    res = audit_epsilon(_mechanism, D, D_prime, n_samples=1000, delta=DELTA, random_state=0)
    assert res.epsilon_lower <= EPS, res
    real = online.gaussian_noise_multiplier
    monkeypatch.setattr(online, "gaussian_noise_multiplier", lambda e, d: real(e, d) / 10)
    bad = audit_epsilon(_mechanism, D, D_prime, n_samples=1000, delta=DELTA, random_state=1)
    assert bad.epsilon_lower > EPS, bad
