"""Noisy Newton with a privatized Hessian bound: calibration, audit with negative control, utility, default rule."""

import math
import warnings

import numpy as np
import pytest
from dp_accounting import dp_event
from scipy.stats import norm

import dp_sklearn.solvers._noisy_newton as nn
from dp_sklearn import ClippingWarning, DPLogisticRegression, DPRidge
from dp_sklearn._accounting import gaussian_noise_multiplier
from dp_sklearn._exact import minimize
from dp_sklearn._losses import LogisticLoss, MultinomialLoss, SquaredLoss
from dp_sklearn._sets import L2Ball, Unconstrained
from dp_sklearn.ledger import compose_epsilon
from dp_sklearn.solvers import SOLVERS
from dp_sklearn.solvers._base import PublicProblem

from solver_helpers import DELTA, EPS, glm_problem, solver_audit, solver_mechanism


def test_registered_for_the_penalized_smooth_losses():
    spec = SOLVERS["noisy_newton"]
    assert spec.constraints == ("none",) and set(spec.losses) == {"squared", "logistic", "multinomial"}
    assert spec.params == ("max_iter", "l2_reg", "clip_norm") and not spec.pure_dp
    assert "noisy_newton" in DPRidge()._allowed_solvers() and "noisy_newton" in DPLogisticRegression()._allowed_solvers()


@pytest.mark.parametrize("loss, T", [(SquaredLoss(), 5), (LogisticLoss(), 26), (MultinomialLoss(3), 26)])
def test_calibration_matches_the_closed_form(loss, T):
    public = PublicProblem(1000, 12 * loss.n_outputs, math.sqrt(2.0), 1.0, loss)
    plan = nn.plan_noisy_newton(public, Unconstrained(), epsilon=EPS, delta=DELTA)
    assert plan.n_iter == T == nn.default_n_iter(loss) and plan.info["passes"] == T + 1
    z = plan.noise_scale
    assert z == pytest.approx(math.sqrt(T + 1) * gaussian_noise_multiplier(EPS, DELTA))
    # T + 1 Gaussian releases with multiplier z = one with z / sqrt(T + 1): Balle & Wang (2018), Theorem 8.
    s = z / math.sqrt(T + 1)
    delta_cf = norm.cdf(-EPS * s + 1 / (2 * s)) - math.exp(EPS) * norm.cdf(-EPS * s - 1 / (2 * s))
    assert delta_cf == pytest.approx(DELTA, rel=1e-3)
    assert plan.event == dp_event.SelfComposedDpEvent(dp_event.GaussianDpEvent(z), T + 1)
    assert compose_epsilon([plan.event], DELTA) <= EPS * (1 + 1e-3)
    B, C = public.x_norm, plan.info["clip_norm"]
    assert plan.info["sigma"] == pytest.approx(z * 2 * C) and C == pytest.approx(0.5 * loss.clip_scale * B)  # CLIP_FRACTION x the loss's clip scale
    assert plan.info["sigma_gram"] == pytest.approx(z * math.sqrt(2) * B**2)
    assert plan.info["shift"] == pytest.approx(plan.info["sigma_gram"] * math.sqrt(12 * math.log(2 * 144 / 0.05)))


def test_gram_noise_is_symmetric_with_the_planned_scale():
    rng = np.random.default_rng(0)
    G = np.stack([nn._noisy_gram(np.zeros((5, 30)), 2.0, rng, 1.0) for _ in range(200)])
    assert np.array_equal(G, np.transpose(G, (0, 2, 1)))
    iu = np.triu_indices(30)
    sd = G[:, iu[0], iu[1]].std()
    assert abs(sd / 2.0 - 1) < 0.02  # 93,000 draws: relative standard error 0.0023


def test_plan_refuses_before_the_data():
    public = PublicProblem(100, 2001, 1.0, 1.0, SquaredLoss())
    with pytest.raises(ValueError, match="at most 2000"):
        nn.plan_noisy_newton(public, Unconstrained(), epsilon=EPS, delta=DELTA)
    with pytest.raises(ValueError, match="delta"):
        nn.plan_noisy_newton(PublicProblem(100, 3, 1.0, 1.0, SquaredLoss()), Unconstrained(), epsilon=EPS, delta=0.0)
    with pytest.raises(TypeError, match="penalized"):
        nn.plan_noisy_newton(PublicProblem(100, 3, 1.0, 1.0, SquaredLoss()), L2Ball(1.0), epsilon=EPS, delta=DELTA)


def test_audit_passes_and_catches_undernoised(monkeypatch):
    mech = solver_mechanism(nn.noisy_newton, Unconstrained(), max_iter=3)
    solver_audit(mech, private=True)
    real = nn.gaussian_steps_plan

    def undernoised(epsilon, delta, T):
        z, event, eps = real(epsilon, delta, T)
        return z / 10, event, eps

    monkeypatch.setattr(nn, "gaussian_steps_plan", undernoised)
    solver_audit(mech, private=False)


@pytest.mark.parametrize("loss", [SquaredLoss(), LogisticLoss()])
def test_noise_free_iteration_reaches_the_exact_minimizer(loss):
    prob = glm_problem(loss, n=400, p=4, seed=1)
    lam = 0.01
    exact = minimize(prob, None, l2_reg=lam, tol=1e-12)
    T = 3 if loss.name == "squared" else 200  # squared: M is the Hessian; logistic: MM steps contract
    res = nn.noisy_newton(prob, Unconstrained(), epsilon=np.inf, delta=DELTA, rng=np.random.default_rng(0),
                          max_iter=T, l2_reg=lam, clip_norm=10.0)
    assert isinstance(res.event, dp_event.NonPrivateDpEvent)
    assert nn._accelerated(loss) == (loss.name != "squared")  # logistic: Nesterov-accelerated steps
    np.testing.assert_allclose(res.coef, exact, rtol=1e-6, atol=1e-8)


def test_multinomial_steps_act_on_each_output():
    rng = np.random.default_rng(2)
    X = rng.normal(size=(3000, 4))
    labels = np.digitize(X[:, 0] - X[:, 1], [-0.7, 0.7])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ClippingWarning)
        m = DPLogisticRegression(solver="noisy_newton", epsilon=2.0, data_norm=2.0, random_state=0).fit(X, labels)
    assert m.coef_.shape == (3, 4) and m.score(X, labels) > 0.8


def test_default_choice_is_a_public_rule():
    """"auto" takes noisy_newton where the Gram noise is below the signal scale, from n, p, epsilon, delta only."""
    def applies(n, p, eps, loss=SquaredLoss()):
        return nn.newton_applies(PublicProblem(n, p + 1, math.sqrt(2.0), 1.0, loss), eps, 1e-6)

    assert applies(100_000, 20, 1.0) and not applies(10_000, 20, 1.0) and not applies(332, 10, 1.0)
    # binary logistic: wherever the Gram matrix fits (MAX_DIM); multinomial: never
    assert applies(332, 10, 0.5, LogisticLoss()) and applies(10**6, 100, 1.0, LogisticLoss())
    assert not applies(10**6, nn.MAX_DIM, 1.0, LogisticLoss()) and not applies(10**6, 100, 1.0, MultinomialLoss(3))
    assert not applies(10**6, 100, np.inf, LogisticLoss())
    # the shift must stay below SIGNAL_RATIO = 1/4 of the mean eigenvalue for rows on the bound
    public = PublicProblem(100_000, 21, math.sqrt(2.0), 1.0, SquaredLoss())
    z, _, _ = nn.gaussian_steps_plan(1.0, 1e-6, nn.default_n_iter(public.loss) + 1)
    lam = nn._shift(z * math.sqrt(2.0) * 2.0, 21)
    n_min = lam * 21 / (nn.SIGNAL_RATIO * 2.0)
    assert applies(math.ceil(n_min), 20, 1.0) and not applies(math.floor(n_min) - 1, 20, 1.0)
    assert not applies(10**7, 2001, 1.0) and not applies(10_000, 20, np.inf)
    rng = np.random.default_rng(3)
    X = rng.normal(size=(12_000, 6))
    for y in (X @ rng.normal(size=6), 100.0 * rng.normal(size=12_000)):  # the data does not enter the choice
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            assert DPRidge(random_state=0).fit(X, y).solver_ == "noisy_newton"
            assert DPRidge(random_state=0).fit(X[:300], y[:300]).solver_ == "noisy_gd"
            assert DPRidge(random_state=0, batch_size=500).fit(X, y).solver_ == "noisy_gd"
            assert DPRidge(random_state=0, accounting="paper").fit(X, y).solver_ == "noisy_gd"


def test_default_is_as_accurate_as_noisy_gd_where_chosen():
    """DPRidge's and DPLogisticRegression's "auto" take noisy_newton at this n and score as well as noisy_gd."""
    rng = np.random.default_rng(4)
    n, p = 20_000, 10
    X = rng.normal(size=(n + 5000, p))
    w = rng.normal(size=p) / math.sqrt(p)
    y = X @ w + 0.5 * rng.normal(size=n + 5000)
    yb = (y > 0).astype(int)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for Est, t in ((DPRidge, y), (DPLogisticRegression, yb)):
            new = [Est(random_state=s).fit(X[:n], t[:n]) for s in range(3)]
            old = [Est(solver="noisy_gd", random_state=s).fit(X[:n], t[:n]) for s in range(3)]
            assert all(m.solver_ == "noisy_newton" for m in new)
            s_new = np.mean([m.score(X[n:], t[n:]) for m in new])
            s_old = np.mean([m.score(X[n:], t[n:]) for m in old])
            assert s_new >= s_old - 0.003, (Est.__name__, s_new, s_old)


def test_logistic_default_takes_accelerated_newton_for_binary_labels_only():
    """DPLogisticRegression's "auto": noisy_newton (T + 1 passes) for two classes, noisy_gd for more; labels only."""
    rng = np.random.default_rng(4)
    X = rng.normal(size=(4000, 5))
    y2 = (X @ rng.normal(size=5) > 0).astype(int)
    y3 = np.digitize(X[:, 0], [-0.5, 0.5])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = DPLogisticRegression(random_state=0, epsilon=1.0).fit(X, y2)
        assert m.solver_ == "noisy_newton" and m.n_iter_ == nn.default_n_iter(LogisticLoss()) == 26
        assert m.score(X, y2) > 0.9
        assert DPLogisticRegression(random_state=0).fit(X, 1 - y2).solver_ == "noisy_newton"
        assert DPLogisticRegression(random_state=0).fit(X, y3).solver_ == "noisy_gd"
        assert DPLogisticRegression(random_state=0, batch_size=500).fit(X, y2).solver_ == "noisy_gd"
        assert DPLogisticRegression(random_state=0, penalty="l1", C=1.0).fit(X, y2).solver_ == "frank_wolfe"

