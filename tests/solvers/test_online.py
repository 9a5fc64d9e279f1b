"""Private online learning (Thakurta 2013, Ch. 5; dp_sklearn.solvers._online): calibration against
closed forms, the sensitivity derivation attained with equality, the printed POffL constant shown
under-calibrated, audits with a negative control, epsilon = inf against an independent non-private
implementation, sparse input, the stream's accounting over 1,000 partial_fit calls, utility."""

import math

import numpy as np
import pytest
import scipy.sparse as sp
from dp_accounting import dp_event
from scipy.special import digamma
from sklearn import config_context

import dp_sklearn.solvers._online as online
from dp_sklearn import DPOnlineClassifier, DPOnlineRegressor, PrivacyLedger
from dp_sklearn._losses import LogisticLoss, SquaredLoss
from dp_sklearn.audit import audit_epsilon, glm_worst_case_pair
from dp_sklearn.composition import compose_epsilon
from dp_sklearn.ledger import BudgetExceededError
from scipy.special import expit, softmax
from sklearn.datasets import load_iris
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler
from dp_sklearn._accounting import gaussian_noise_multiplier
from dp_sklearn._losses import MultinomialLoss

from solver_helpers import DELTA, EPS, analytic_gaussian_delta


def _plan(loss=SquaredLoss(), eps=EPS, alpha=0.05, b=1, clip=None, radius=100.0, x_norm=1.0, update="gradient"):
    return online.plan_online(loss, x_norm, epsilon=eps, delta=DELTA, alpha=alpha, radius=radius,
                              clip_norm=clip, batch_size=b, update=update)


@pytest.mark.parametrize("eps, delta", [(0.5, 1e-6), (1.0, 1e-5), (4.0, 1e-3)])
def test_noise_multiplier_is_one_analytic_gaussian(eps, delta):
    plan = online.plan_online(LogisticLoss(), 1.0, epsilon=eps, delta=delta, alpha=0.1, radius=5.0)
    # Balle & Wang 2018, Thm 8: delta(eps) of one Gaussian release with multiplier z.
    assert abs(analytic_gaussian_delta(eps, plan.noise_multiplier) - delta) <= 1e-5 * delta
    assert plan.event == dp_event.GaussianDpEvent(plan.noise_multiplier)


def test_release_sensitivity_closed_forms():
    plan = _plan(alpha=0.05, b=3, clip=0.5)
    # Delta_g = 2 c; s0 = b beta / (2 Psi) with beta = phi''_max x_norm^2 = 1.
    assert plan.grad_sensitivity == 1.0 and plan.offset == pytest.approx(3 / 0.1)
    assert online.release_sensitivity(plan, 40, 17, False) == pytest.approx(1.0 / (0.05 * (57 + 30)))
    one = _plan(alpha=0.05, b=1, clip=0.5)
    # average, b = 1: (Delta_g / (Psi m)) sum_{t=t0+1}^{t0+m} 1 / (t + s0), a difference of digammas.
    h = digamma(40 + 17 + 10 + 1) - digamma(40 + 10 + 1)
    assert online.release_sensitivity(one, 40, 17, True) == pytest.approx(1.0 * h / (0.05 * 17))
    # logistic: sup |phi'| x_norm = x_norm caps Delta_g below 2 c for a large clip norm.
    assert _plan(LogisticLoss(), clip=10.0, x_norm=2.0).grad_sensitivity == 4.0


def test_release_noise_has_the_calibrated_scale():
    rng = np.random.default_rng(0)
    X, y = rng.uniform(-0.5, 0.5, (30, 3)), rng.uniform(-1, 1, 30)
    plan = _plan(alpha=0.2)
    out = np.array([np.subtract(*online.run_online(plan, SquaredLoss(), X, y, np.zeros(3), 5,
                                                   np.random.default_rng(s), return_iterates=True))
                    for s in range(2000)])
    sigma = plan.noise_multiplier * online.release_sensitivity(plan, 5, 30, False)
    assert out.std() == pytest.approx(sigma, rel=0.03)


def _orthogonal_pair(n, i):
    """Shared records along e2; record i is +e1 or -e1 with y = 1: the derivation's bound is attained."""
    X = np.zeros((n, 2))
    X[:, 1] = np.linspace(-0.5, 0.5, n)
    y = np.linspace(-0.3, 0.3, n)
    Xp, yp = X.copy(), y.copy()
    X[i], Xp[i], y[i], yp[i] = (1.0, 0.0), (-1.0, 0.0), 1.0, 1.0
    return (X, y), (Xp, yp)


@pytest.mark.parametrize("average", [False, True])
@pytest.mark.parametrize("t0", [0, 25])
def test_sensitivity_bound_is_attained(average, t0):
    plan = _plan(alpha=0.05, clip=1.0)
    (X, y), (Xp, yp) = _orthogonal_pair(40, 0)
    rng = np.random.default_rng(0)
    _, v = online.run_online(plan, SquaredLoss(), X, y, np.zeros(2), t0, rng, average=average, return_iterates=True)
    _, vp = online.run_online(plan, SquaredLoss(), Xp, yp, np.zeros(2), t0, rng, average=average,
                              return_iterates=True)
    assert np.linalg.norm(v - vp) == pytest.approx(online.release_sensitivity(plan, t0, 40, average), rel=1e-9)


def test_random_neighbours_stay_within_the_bound():
    rng = np.random.default_rng(1)
    for loss, b in [(SquaredLoss(), 1), (LogisticLoss(), 4), (SquaredLoss(), 7)]:
        plan = _plan(loss, alpha=0.02, b=b, clip=0.7, radius=3.0, x_norm=1.0)
        for _ in range(20):
            X = rng.normal(size=(50, 4))
            X /= np.maximum(1.0, np.linalg.norm(X, axis=1))[:, None]
            y = np.sign(rng.normal(size=50)) if loss.name == "logistic" else rng.uniform(-1, 1, 50)
            Xp, yp = X.copy(), y.copy()
            i = rng.integers(50)
            Xp[i] = -X[i]
            yp[i] = -y[i]
            theta0 = rng.normal(size=4)
            for avg in (False, True):
                v = online.run_online(plan, loss, X, y, theta0, 9, rng, average=avg, return_iterates=True)[1]
                vp = online.run_online(plan, loss, Xp, yp, theta0, 9, rng, average=avg, return_iterates=True)[1]
                assert np.linalg.norm(v - vp) <= online.release_sensitivity(plan, 9, 50, avg) * (1 + 1e-9)


def test_printed_poffl_constant_is_under_calibrated():
    # Algorithm 5.4 / eq. 5.23 as printed (without Lemma 5.9's 1 / Psi): a neighbouring pair whose
    # averages differ by far more than it, so its beta would not be (eps, delta)-DP.
    alpha, T = 0.05, 40
    plan = _plan(alpha=alpha, clip=1.0, radius=1.0)
    (X, y), (Xp, yp) = _orthogonal_pair(T, 0)
    rng = np.random.default_rng(0)
    v = online.run_online(plan, SquaredLoss(), X, y, np.zeros(2), 0, rng, average=True, return_iterates=True)[1]
    vp = online.run_online(plan, SquaredLoss(), Xp, yp, np.zeros(2), 0, rng, average=True, return_iterates=True)[1]
    printed = online.poffl_printed_sensitivity(1.0, alpha, 1.0, T)
    assert np.linalg.norm(v - vp) > 3 * printed


def _estimator_mechanism(X, y, rng):
    """The regressor over two partial_fit calls; the differing (last) record is in the second call."""
    with config_context(skip_parameter_validation=True):
        est = DPOnlineRegressor(bounds_y=(-1, 1), alpha=0.5, data_norm=1.0, fit_intercept=False, random_state=rng)
        est.partial_fit(X[:5], y[:5]).partial_fit(X[5:], y[5:])
    return est.coef_


def _averaged_mechanism(X, y, rng):
    """POffL-averaged releases over two calls; the differing record opens the second call."""
    plan = online.plan_online(SquaredLoss(), 1.0, epsilon=EPS, delta=DELTA, alpha=0.5, radius=10.0)
    order = np.r_[0:5, 9, 5:9]  # the worst position for an average: first in its call
    X, y = X[order], y[order]
    theta = online.run_online(plan, SquaredLoss(), X[:5], y[:5], np.zeros(2), 0, rng, average=True)
    return online.run_online(plan, SquaredLoss(), X[5:], y[5:], theta, 5, rng, average=True)


# name, mechanism, audit samples per dataset (the estimator-level audit is the slower one)
CASES = [("regressor-partial_fit", _estimator_mechanism, 1000), ("squared-average", _averaged_mechanism, 2000)]


@pytest.mark.parametrize("name, mech, n_samples", CASES, ids=[c[0] for c in CASES])
def test_audit_and_negative_control(name, mech, n_samples, monkeypatch):
    D, D_prime = glm_worst_case_pair(n=10, n_features=2, kind="regression", data_norm=1.0)
    res = audit_epsilon(mech, D, D_prime, n_samples=n_samples, delta=DELTA, random_state=0)
    assert res.epsilon_lower <= EPS, res
    real = online.gaussian_noise_multiplier
    monkeypatch.setattr(online, "gaussian_noise_multiplier", lambda e, d: real(e, d) / 10)
    bad = audit_epsilon(mech, D, D_prime, n_samples=n_samples, delta=DELTA, random_state=1)
    assert bad.epsilon_lower > EPS, bad
    print(name, res.epsilon_lower, res.epsilon_hat, bad.epsilon_lower)


def _reference_online_sgd(X, y, alpha, radius, clip, s0):
    """The non-private algorithm written out per record: projected SGD on clipped squared loss + ridge."""
    theta = np.zeros(X.shape[1])
    for t in range(1, X.shape[0] + 1):
        x, r = X[t - 1], X[t - 1] @ theta - y[t - 1]
        g = r * x
        g *= min(1.0, clip / max(np.linalg.norm(g), 1e-300))
        eta = 1.0 / (alpha * (t + s0))
        theta = (1 - eta * alpha) * theta - eta * g
        theta *= min(1.0, radius / np.linalg.norm(theta)) if np.linalg.norm(theta) > 0 else 1.0
    return theta


def test_epsilon_inf_is_the_non_private_online_algorithm():
    rng = np.random.default_rng(2)
    X = rng.normal(size=(300, 3))
    y = np.clip(X @ [0.5, -0.4, 0.2], -2, 2)
    est = DPOnlineRegressor(bounds_y=(-2, 2), epsilon=np.inf, alpha=0.05, radius=2.0, data_norm=4.0,
                            fit_intercept=False, clip_norm=0.8)
    est.fit(X, y)
    Xt = X / np.maximum(4.0, np.linalg.norm(X, axis=1))[:, None]
    ref = _reference_online_sgd(Xt, y / 2, 0.05, 2.0, 0.8, 1.0 / (2 * 0.05))
    np.testing.assert_allclose(est.coef_, 2 * ref / 4.0, rtol=1e-10, atol=1e-12)
    assert isinstance(est.dp_event_, dp_event.NonPrivateDpEvent)
    # without noise the kept release is the iterate: any split of the stream gives the same model
    split = DPOnlineRegressor(**est.get_params())
    for chunk in np.array_split(np.arange(300), 7):
        split.partial_fit(X[chunk], y[chunk])
    np.testing.assert_allclose(split.coef_, est.coef_, rtol=1e-12)


def test_sparse_input_matches_dense():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(200, 6)) * (rng.random((200, 6)) < 0.4)
    y = (X[:, 0] - X[:, 1] > 0).astype(int)
    dense = DPOnlineClassifier(batch_size=3, random_state=5).partial_fit(X[:120], y[:120], classes=[0, 1])
    dense.partial_fit(X[120:], y[120:])
    sparse = DPOnlineClassifier(batch_size=3, random_state=5).partial_fit(sp.csr_matrix(X[:120]), y[:120],
                                                                          classes=[0, 1])
    sparse.partial_fit(sp.csr_matrix(X[120:]), y[120:])
    np.testing.assert_allclose(sparse.coef_, dense.coef_, rtol=1e-10)
    np.testing.assert_allclose(sparse.intercept_, dense.intercept_, rtol=1e-10)


def test_stream_of_1000_calls_is_one_release_in_the_ledger():
    rng = np.random.default_rng(4)
    X = rng.normal(size=(1000, 3))
    y = X @ [1.0, 0.5, -0.5]
    ledger = PrivacyLedger(max_epsilon=1.5, delta=DELTA)
    est = DPOnlineRegressor(bounds_y=(-4, 4), epsilon=EPS, delta=DELTA, horizon=1000, ledger=ledger, random_state=0)
    for i in range(1000):
        est.partial_fit(X[i:i + 1], y[i:i + 1])
        if i in (0, 499):
            assert len(ledger) == 1
    # The documented bound: the whole stream is one Gaussian release with the analytic multiplier.
    z = est.dp_event_.noise_multiplier
    assert est.dp_event_ == dp_event.GaussianDpEvent(z) and abs(analytic_gaussian_delta(EPS, z) - DELTA) < 1e-10
    assert len(ledger) == 1 and (est.epsilon_, est.delta_, est.n_samples_seen_) == (EPS, DELTA, 1000)
    assert ledger.total_epsilon() == pytest.approx(EPS, rel=2e-3)
    assert compose_epsilon([est.dp_event_], DELTA) == pytest.approx(EPS, rel=2e-3)
    with pytest.raises(ValueError, match="horizon=1000 exceeded"):
        est.partial_fit(X[:1], y[:1])
    est.fit(X[:10], y[:10])  # a new stream: a new release, refused beyond the cap with nothing recorded
    assert len(ledger) == 2
    with pytest.raises(BudgetExceededError):
        DPOnlineRegressor(bounds_y=(-4, 4), ledger=ledger).partial_fit(X[:5], y[:5])
    assert len(ledger) == 2
    ledger.delete()


def test_state_is_a_release_and_no_generator_is_kept():
    X = np.random.default_rng(5).normal(size=(50, 2))
    y = (X[:, 0] > 0).astype(int)
    est = DPOnlineClassifier(random_state=np.random.default_rng(0)).partial_fit(X, y, classes=[0, 1])
    fitted = {k: v for k, v in vars(est).items() if k not in est.get_params()}
    assert not [v for v in fitted.values() if isinstance(v, (np.random.Generator, np.random.SeedSequence))]
    np.testing.assert_allclose(est._theta[:2] / est.data_norm_, est.coef_[0])
    with pytest.raises(ValueError, match="classes must be passed"):
        DPOnlineClassifier().partial_fit(X, y)
    with pytest.raises(ValueError, match="not in classes"):
        est.partial_fit(X[:3], [0, 1, 2])


def test_utility_against_non_private():
    rng = np.random.default_rng(6)
    X = rng.normal(size=(6000, 5))
    y = (X @ [1.0, -1.0, 0.5, 0.0, 0.0] + 0.3 * rng.normal(size=6000) > 0).astype(int)
    Xte, yte = X[5000:], y[5000:]
    private = DPOnlineClassifier(epsilon=1.0, random_state=0).fit(X[:5000], y[:5000]).score(Xte, yte)
    exact = DPOnlineClassifier(epsilon=np.inf).fit(X[:5000], y[:5000]).score(Xte, yte)
    assert exact > 0.9 and private > exact - 0.03, (private, exact)
    reg_y = X @ [1.0, -1.0, 0.5, 0.0, 0.0] + 0.3 * rng.normal(size=6000)
    # the median over 5 seeds (one seed's R^2 ranges over 0.2-0.8 at this epsilon)
    scores = [DPOnlineRegressor(bounds_y=(-6, 6), data_norm=3 * math.sqrt(5), random_state=s)
              .fit(X[:5000], reg_y[:5000]).score(Xte, reg_y[5000:]) for s in range(5)]
    assert np.median(scores) > 0.5, scores


@pytest.mark.parametrize("loss", [SquaredLoss(), LogisticLoss()], ids=["squared", "logistic"])
@pytest.mark.parametrize("clip", [0.3, 5.0])
def test_implicit_step_is_the_proximal_point(loss, clip):
    from scipy.optimize import minimize

    rng = np.random.default_rng(7)
    plan = _plan(loss, alpha=0.1, clip=clip, update="implicit")
    for pos in (0, 3, 40):
        x, v = rng.normal(size=3), rng.normal(size=3) * 2
        y = 1.0 if loss.name == "logistic" else 0.4
        got = online._implicit_step(plan, loss, x[None, :], y, np.linalg.norm(x), v, pos)
        eta, r = 1.0 / (0.1 * (pos + 1)), clip / np.linalg.norm(x)

        def clipped_loss(th):  # phi_C: phi with its derivative clamped to [-r, r] (a Huber-type loss)
            zs = np.linspace(0.0, x @ th, 4001)
            d = np.clip(loss.dphi(zs, np.full_like(zs, y)), -r, r)
            return float(loss.phi(np.array([0.0]), np.array([y]))[0] + np.trapezoid(d, zs))

        obj = lambda th: 0.5 * np.sum((th - v) ** 2) + eta * (clipped_loss(th) + 0.05 * th @ th)  # noqa: E731
        ref = minimize(obj, v, method="Nelder-Mead", options={"xatol": 1e-9, "fatol": 1e-13, "maxiter": 20000}).x
        np.testing.assert_allclose(got, ref, atol=2e-4)


def test_implicit_neighbours_stay_within_the_bound():
    rng = np.random.default_rng(8)
    for loss in (SquaredLoss(), LogisticLoss()):
        plan = _plan(loss, alpha=0.01, clip=0.6, radius=4.0, update="implicit")
        assert plan.offset == 1.0
        for _ in range(10):
            X = rng.normal(size=(30, 3))
            X /= np.maximum(1.0, np.linalg.norm(X, axis=1))[:, None]
            y = np.sign(rng.normal(size=30)) if loss.name == "logistic" else rng.uniform(-1, 1, 30)
            Xp, yp = X.copy(), y.copy()
            i = rng.integers(30)
            Xp[i], yp[i] = -X[i], -y[i]
            for avg in (False, True):
                v = online.run_online(plan, loss, X, y, np.zeros(3), 4, rng, average=avg, return_iterates=True)[1]
                vp = online.run_online(plan, loss, Xp, yp, np.zeros(3), 4, rng, average=avg, return_iterates=True)[1]
                assert np.linalg.norm(v - vp) <= online.release_sensitivity(plan, 4, 30, avg) * (1 + 1e-9)
    with pytest.raises(ValueError, match="batch_size must be 1"):
        _plan(update="implicit", b=2)


def test_auto_alpha_closed_form_and_stream_fixed_hyperparameters():
    z = online.gaussian_noise_multiplier(EPS, DELTA)
    plan = online.plan_online(LogisticLoss(), math.sqrt(2), epsilon=EPS, delta=DELTA, alpha="auto", radius=10.0,
                              n_ref=4000)
    # K = phi''_max x_norm^2 z^2 Delta_g^2 with Delta_g = 2 x_norm (logistic, default clip); Psi = (2K/n^2)^(1/3)
    assert plan.alpha == pytest.approx((2 * 0.25 * 2 * z**2 * 8 / 4000**2) ** (1 / 3), rel=1e-12)
    inf = online.plan_online(LogisticLoss(), 1.0, epsilon=np.inf, delta=DELTA, alpha="auto", radius=1.0, n_ref=50)
    assert inf.alpha == 1 / 50
    X = np.random.default_rng(9).normal(size=(60, 2))
    y = X[:, 0]
    est = DPOnlineRegressor(bounds_y=(-3, 3), horizon=60, random_state=0).partial_fit(X[:20], y[:20])
    assert est.alpha_ == online.plan_online(SquaredLoss(), math.sqrt(2), epsilon=EPS, delta=DELTA, alpha="auto",
                                            radius=10.0, n_ref=60).alpha
    est.set_params(epsilon=5.0)
    with pytest.raises(ValueError, match="epsilon.*changed since the stream started"):
        est.partial_fit(X[20:], y[20:])
    est.set_params(epsilon=EPS).partial_fit(X[20:], y[20:])
    with pytest.warns(UserWarning, match="alpha='auto' without horizon"):
        DPOnlineRegressor(bounds_y=(-3, 3)).partial_fit(X, y)


def test_pickled_mid_stream_continues_identically():
    import pickle

    X = np.random.default_rng(10).normal(size=(90, 3))
    y = X[:, 0] - X[:, 2]
    a = DPOnlineRegressor(bounds_y=(-4, 4), horizon=90, batch_size=4, random_state=3).partial_fit(X[:40], y[:40])
    b = pickle.loads(pickle.dumps(a))
    a.partial_fit(X[40:], y[40:])
    b.partial_fit(X[40:], y[40:])
    np.testing.assert_array_equal(a.coef_, b.coef_)
    assert a.n_samples_seen_ == b.n_samples_seen_ == 90


def test_a_later_partial_fit_with_other_classes_raises():
    # Issue 19 item 11: classes=[0, 7] on a [0, 1] stream was silently ignored.
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 2))
    y = (X[:, 0] > 0).astype(int)
    clf = DPOnlineClassifier(horizon=200, random_state=0).partial_fit(X, y, classes=[0, 1])
    clf.partial_fit(X, y, classes=[1, 0])  # the same set, in any order
    n_seen = clf.n_samples_seen_
    with pytest.raises(ValueError, match=r"classes=\[0, 7\] differs"):
        clf.partial_fit(X, y, classes=[0, 7])
    assert clf.n_samples_seen_ == n_seen


# --- Issue 19 item 2: the implicit step is total (no data-dependent exception) ---------------------

def _old_implicit_step(plan, loss, x, y, x_norm, v, pos):
    """The step before issue 19 (negative control): Brent's method on s, a bracket endpoint
    exactly 0 in real arithmetic when the clipped derivative saturates, so it may raise."""
    from scipy.optimize import brentq

    eta = 1.0 / (plan.alpha * (pos + 1))
    k = 1.0 + eta * plan.alpha
    if x_norm == 0.0:
        return v / k
    xv = float(np.asarray(x @ v).ravel()[0])
    bound = plan.clip_norm / x_norm

    def h(s):
        return s * k + eta * x_norm**2 * online._clamped_dphi(loss, s, y, bound) - xv

    reach = eta * x_norm**2 * min(bound, 1.0) / k
    s = brentq(h, xv / k - reach - 1e-300, xv / k + reach + 1e-300, xtol=1e-300, rtol=4 * np.finfo(float).eps)
    d = online._clamped_dphi(loss, s, y, bound)
    return (v - eta * d * np.asarray(x.T @ np.array([1.0])).ravel()) / k


def _implicit_pair(n=20):
    """Replace-one pair for DPOnlineClassifier(update="implicit", clip_norm=0.3, data_norm=1):
    in D every row has norm 0.2 (< clip_norm: never saturated); in D' the last record is
    (-1, 0), whose clipped derivative saturates at clip_norm / ||x|| = 0.3: the old bracket's
    endpoint is then 0 in real arithmetic and positive after rounding at this stream state."""
    X = np.zeros((n, 2))
    X[:, 0] = 0.2
    y = np.r_[0, np.arange(1, n) % 2]
    Xp = X.copy()
    Xp[-1] = [-1.0, 0.0]
    return (X, y), (Xp, y.copy())


def _implicit_fit(X, y, rng):
    """Output (1, 0, 0) when fit raises, else (0, coef): whether it raised is the observable."""
    est = DPOnlineClassifier(update="implicit", clip_norm=0.3, data_norm=1.0, fit_intercept=False, alpha=0.5,
                             epsilon=EPS, delta=DELTA, random_state=rng)
    try:
        est.fit(X, y)
    except ValueError:
        return np.array([1.0, 0.0, 0.0])
    return np.r_[0.0, est.coef_.ravel()]


def _raised(out):
    return out[:, 0]


@pytest.mark.parametrize("seed", range(3))
def test_implicit_step_is_total_when_the_clipped_derivative_saturates(seed):
    # Issue 19 item 2: clip_norm below the row's norm made brentq raise "f(a) and f(b) must
    # have different signs" before any noise; now every finite input gives a step, and a
    # saturated step is the closed form d = -y c / ||x||.
    rng = np.random.default_rng(seed)
    loss = LogisticLoss()
    plan = _plan(loss, alpha=0.1, clip=0.3, radius=10.0, update="implicit")
    for _ in range(300):
        x = rng.normal(size=3) * rng.choice([1e-3, 1.0, 10.0, 1e3])
        v = rng.normal(size=3) * rng.choice([0.0, 1.0, 5.0])
        y, pos = float(rng.choice([-1.0, 1.0])), int(rng.integers(0, 5000))
        nx = float(np.linalg.norm(x))
        got = online._implicit_step(plan, loss, x[None, :], y, nx, v, pos)
        assert np.all(np.isfinite(got))
        eta, k = 1.0 / (0.1 * (pos + 1)), 1.0 + 1.0 / (pos + 1)
        d = float((v - k * got) @ x) / (eta * nx**2)  # the derivative the step used
        assert abs(d) * nx <= 0.3 * (1 + 1e-9) and abs(d) <= 1.0 + 1e-12
        s = float(x @ got)
        np.testing.assert_allclose(d, np.clip(loss.dphi(np.array([s]), np.array([y]))[0], -0.3 / nx, 0.3 / nx),
                                   rtol=1e-7, atol=1e-12)
    # The case: a row of norm 1 with clip_norm 0.3, random data.
    Xr = np.random.default_rng(seed).normal(size=(200, 3))
    DPOnlineClassifier(update="implicit", clip_norm=0.3, random_state=seed).fit(Xr, (Xr[:, 0] > 0).astype(int))


def test_implicit_fit_raises_on_neither_neighbour(monkeypatch):
    # Old main: fit raised on D' in every run and on D in none (500/500 vs 0/500, lower bound 4.9).
    D, Dp = _implicit_pair()
    assert all(_implicit_fit(*Dp, np.random.default_rng(s))[0] == 0.0 for s in range(20))
    monkeypatch.setattr(online, "_implicit_step", _old_implicit_step)
    assert all(_implicit_fit(*Dp, np.random.default_rng(s))[0] == 1.0 for s in range(20))
    assert all(_implicit_fit(*D, np.random.default_rng(s))[0] == 0.0 for s in range(20))


def test_audit_implicit_exception_with_negative_control(monkeypatch):
    # Issue 19 item 2 at its strength (500 + 500 fits): the exception is the statistic.
    D, Dp = _implicit_pair()
    res = audit_epsilon(_implicit_fit, D, Dp, n_samples=500, statistic=_raised, random_state=0)
    assert res.epsilon_lower <= EPS, res
    monkeypatch.setattr(online, "_implicit_step", _old_implicit_step)
    bad = audit_epsilon(_implicit_fit, D, Dp, n_samples=500, statistic=_raised, random_state=0)
    assert bad.epsilon_lower > EPS, bad


# --- DPOnlineClassifier with more than two classes, predict_proba (linear_model/_online.py)


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


def test_multinomial_random_neighbours_stay_within_the_bound():
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
