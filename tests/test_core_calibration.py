"""Calibration of every issue-2 mechanism against a closed form (SPEC P7, P9a)."""

import math

import numpy as np
import pytest
from dp_accounting import dp_event
from dp_accounting.pld import PLDAccountant
from dp_accounting.rdp import RdpAccountant
from scipy.stats import norm

from dp_sklearn import DPLasso, DPLogisticRegression, DPRidge
from dp_sklearn._accounting import (
    EpsilonDeltaDpEvent,
    composed_gaussian_noise_multiplier,
    gaussian_noise_multiplier,
    zcdp_epsilon_upper_bound,
    zcdp_rho,
)
from dp_sklearn._data import Problem, normalize_X
from dp_sklearn._losses import LogisticLoss, SquaredLoss
from dp_sklearn._sets import L1Ball, Unconstrained
from dp_sklearn.ledger import compose_epsilon
from dp_sklearn.solvers import get_solver
from dp_sklearn.solvers._frank_wolfe import advanced_composition_epsilon0


def analytic_gaussian_delta(eps, z):
    """Balle & Wang (2018) Theorem 8 for sensitivity 1 and noise std z."""
    return norm.cdf(1 / (2 * z) - eps * z) - math.exp(eps) * norm.cdf(-1 / (2 * z) - eps * z)


@pytest.mark.parametrize("eps, delta", [(0.1, 1e-5), (1.0, 1e-5), (1.0, 1e-8), (5.0, 1e-6), (20.0, 1e-5)])
def test_gaussian_multiplier_matches_analytic_gaussian(eps, delta):
    z = gaussian_noise_multiplier(eps, delta)
    assert analytic_gaussian_delta(eps, z) == pytest.approx(delta, rel=1e-4)
    assert analytic_gaussian_delta(eps, 0.99 * z) > delta  # tight: 1% less noise fails


@pytest.mark.parametrize("T", [1, 10, 100])
def test_composed_gaussian_is_sqrt_t_and_accountant_agrees(T):
    z = composed_gaussian_noise_multiplier(1.0, 1e-5, T)
    assert z == pytest.approx(math.sqrt(T) * gaussian_noise_multiplier(1.0, 1e-5))
    acc = PLDAccountant()
    acc.compose(dp_event.SelfComposedDpEvent(dp_event.GaussianDpEvent(z), T))
    assert acc.get_epsilon(1e-5) == pytest.approx(1.0, abs=0.01)


@pytest.mark.parametrize("eps, delta", [(0.5, 1e-5), (2.0, 1e-6), (8.0, 1e-2)])
def test_zcdp_rho_is_at_least_closed_form_and_private(eps, delta):
    rho = zcdp_rho(eps, delta)
    closed = (math.sqrt(math.log(1 / delta) + eps) - math.sqrt(math.log(1 / delta))) ** 2
    assert zcdp_epsilon_upper_bound(closed, delta) == pytest.approx(eps)
    assert rho >= closed
    acc = RdpAccountant()
    acc.compose(dp_event.ZCDpEvent(rho))
    assert acc.get_epsilon(delta) <= eps + 1e-9


def _problem(loss, n=200, p=5, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p))
    y = np.where(X[:, 0] > 0, 1.0, -1.0) if loss.name == "logistic" else np.clip(X[:, 0] / 3, -1, 1)
    Xt, xn, xi = normalize_X(X, math.sqrt(p), 2, True)
    return Problem(Xt, y, loss, xn, xi, np.linalg.norm(Xt, axis=1))


def test_noisy_gd_calibration():
    prob = _problem(LogisticLoss())
    res = get_solver("noisy_gd").func(prob, Unconstrained(), epsilon=1.0, delta=1e-5, rng=np.random.default_rng(0),
                                      max_iter=25)
    z = math.sqrt(25) * gaussian_noise_multiplier(1.0, 1e-5)
    assert res.noise_scale == pytest.approx(z)
    assert res.info["sigma"] == pytest.approx(z * 2 * res.info["clip_norm"])  # replace-one: 2C
    assert res.info["clip_norm"] == pytest.approx(0.5 * math.sqrt(2))
    assert compose_epsilon([res.event], 1e-5) == pytest.approx(1.0, abs=0.01)
    paper = get_solver("noisy_gd").func(prob, Unconstrained(), epsilon=1.0, delta=1e-5,
                                        rng=np.random.default_rng(0), max_iter=25, accounting="paper")
    # BST Algorithm 1's sigma^2 = 32 C^2 T log(n/delta) log(1/delta) / eps^2 per unit of 2C.
    assert paper.noise_scale == pytest.approx(math.sqrt(8 * 25 * math.log(200 / 1e-5) * math.log(1e5)))
    assert res.noise_scale <= paper.noise_scale


@pytest.mark.parametrize("delta", [1e-5, 0.0])
def test_output_perturbation_sensitivity(delta):
    prob = _problem(LogisticLoss())
    res = get_solver("output_perturbation").func(prob, Unconstrained(), epsilon=1.0, delta=delta,
                                                 rng=np.random.default_rng(0), tol=1e-9, l2_reg=0.0)
    lam = res.info["l2_reg"]
    # BST Algorithm 3 / Chaudhuri et al.: 2 G / (n Lambda), G = ||x|| sup|phi'| = x_norm; plus 2 tol / Lambda (P5).
    assert res.info["sensitivity"] == pytest.approx(2 * math.sqrt(2) / (200 * lam) + 2e-9 / lam)
    if delta:
        assert isinstance(res.event, dp_event.GaussianDpEvent)
        assert res.event.noise_multiplier == pytest.approx(gaussian_noise_multiplier(1.0, delta))
    else:
        assert res.event == EpsilonDeltaDpEvent(1.0, 0.0)


def test_output_perturbation_squared_loss_lipschitz():
    prob = _problem(SquaredLoss())
    res = get_solver("output_perturbation").func(prob, Unconstrained(), epsilon=1.0, delta=1e-5,
                                                 rng=np.random.default_rng(0), l2_reg=0.0)
    lam = res.info["l2_reg"]
    # ||theta*|| <= 1/sqrt(Lambda) since F(0) <= 1/2: G = x_norm (x_norm / sqrt(Lambda) + 1).
    assert res.info["lipschitz"] == pytest.approx(math.sqrt(2) * (math.sqrt(2) / math.sqrt(lam) + 1))


def test_objective_perturbation_calibration():
    prob = _problem(LogisticLoss())
    eps, delta = 1.0, 1e-5
    res = get_solver("objective_perturbation").func(prob, Unconstrained(), epsilon=eps, delta=delta,
                                                    rng=np.random.default_rng(0), tol=1e-9)
    e1, d1 = 0.99 * eps, 0.99 * delta
    zeta = math.sqrt(2)  # x_norm * sup|phi'|
    # Thakurta (2013) Theorem 3.8 with 2 zeta for replace-one neighbours.
    assert res.noise_scale == pytest.approx(2 * zeta * math.sqrt(8 * math.log(2 / d1) + 4 * e1) / e1)
    lam_h = 0.25 * 2  # sup phi'' * x_norm^2
    assert res.info["Delta"] >= lam_h / math.expm1(e1 / 2)  # Jacobian term <= e1 / 2
    assert math.log1p(lam_h / res.info["Delta"]) <= e1 / 2 + 1e-12
    assert res.info["amp_sensitivity"] == pytest.approx(2e-9 / res.info["l2_reg"])
    assert compose_epsilon([res.event], delta) <= eps + 1e-3


def test_frank_wolfe_calibration():
    prob = _problem(SquaredLoss())
    R = 1.0
    res = get_solver("frank_wolfe").func(prob, L1Ball(R), epsilon=1.0, delta=1e-5, rng=np.random.default_rng(0),
                                         max_iter=50)
    rho = zcdp_rho(1.0, 1e-5)
    assert res.event == dp_event.ZCDpEvent(rho)
    assert res.noise_scale == pytest.approx(math.sqrt(8 * rho / 50))  # 50 steps of eps0^2/8-zCDP
    assert 50 * res.noise_scale**2 / 8 == pytest.approx(rho)
    # score sensitivity 2 R G_inf / n with G_inf = x_inf (R x_inf + 1) = 2
    assert res.info["score_sensitivity"] == pytest.approx(2 * R * 2 / 200)
    assert zcdp_epsilon_upper_bound(rho, 1e-5) >= 1.0  # the accountant is tighter than the closed form
    pure = get_solver("frank_wolfe").func(prob, L1Ball(R), epsilon=1.0, delta=0.0, rng=np.random.default_rng(0),
                                          max_iter=50)
    assert pure.noise_scale == pytest.approx(1.0 / 50)
    paper = get_solver("frank_wolfe").func(prob, L1Ball(R), epsilon=1.0, delta=1e-5, rng=np.random.default_rng(0),
                                           max_iter=50, accounting="paper")
    assert paper.noise_scale == pytest.approx(advanced_composition_epsilon0(1.0, 1e-5, 50))
    # advanced composition (Dwork, Rothblum & Vadhan 2010) of 50 eps0-DP steps meets epsilon = 1
    e0 = paper.noise_scale
    assert e0 * math.sqrt(2 * 50 * math.log(1e5)) + 50 * e0 * math.expm1(e0) == pytest.approx(1.0, rel=1e-6)
    assert res.noise_scale >= paper.noise_scale  # tight: larger eps0 = less noise


def test_estimator_events_compose_to_requested_budget(diabetes, cancer):
    Xtr, _, ytr, _ = diabetes
    for solver in ["noisy_gd", "output_perturbation", "objective_perturbation"]:
        m = DPRidge(solver=solver, epsilon=1.0, bounds_y=(0, 400), random_state=0).fit(Xtr, ytr)
        # The y-centering Laplace release (10% of epsilon) plus the solver at 90%.
        leaves = m.dp_event_.events
        assert leaves[0] == dp_event.LaplaceDpEvent(1 / 0.1)
        assert compose_epsilon([m.dp_event_], 1e-5) <= 1.0 + 2e-3
    m = DPLasso(epsilon=2.0, bounds_y=(0, 400), random_state=0).fit(Xtr, ytr)
    assert compose_epsilon([m.dp_event_], 1e-5) <= 2.0 + 2e-3
    Xc, _, yc, _ = cancer
    for solver in ["noisy_gd", "output_perturbation", "objective_perturbation"]:
        m = DPLogisticRegression(solver=solver, epsilon=0.5, random_state=0).fit(Xc, yc)
        assert compose_epsilon([m.dp_event_], 1e-5) <= 0.5 + 2e-3


@pytest.mark.parametrize("eps", [1e7, 1e200, 1e308])
def test_calibration_at_huge_epsilon(eps):
    """Issue 8 item 9: huge finite epsilon gives tiny but valid noise, never a scipy NaN failure."""
    z = gaussian_noise_multiplier(eps, 1e-5)
    assert 0 < z < 1e-3
    if eps < 1e10:  # sufficient condition of Balle & Wang's Theorem 8: Phi(1/(2z) - eps z) <= delta
        assert norm.cdf(1 / (2 * z) - eps * z) <= 1e-5 * (1 + 1e-6)
    else:  # there the root of eps z^2 - t z - 1/2 is 1/sqrt(2 eps) to float precision
        assert z * math.sqrt(2.0) * math.sqrt(eps) == pytest.approx(1.0, rel=1e-12)
    rho = zcdp_rho(eps, 1e-5)
    assert 0 < rho <= eps and math.isfinite(rho)
    if eps < 1e300:  # (the closed form's epsilon itself overflows near the largest float)
        assert zcdp_epsilon_upper_bound(rho, 1e-5) <= eps * (1 + 1e-12)
    for bad in (float("nan"), 0.0, -1.0):
        with pytest.raises(ValueError, match="epsilon"):
            gaussian_noise_multiplier(bad, 1e-5)
        with pytest.raises(ValueError, match="epsilon"):
            zcdp_rho(bad, 1e-5)


def test_huge_epsilon_closed_form_agrees_with_the_library_at_the_switch():
    from dp_accounting import gaussian_mechanism

    lib = gaussian_mechanism.get_sigma_gaussian(1e6, 1e-5)
    assert gaussian_noise_multiplier(1e6 * (1 + 1e-9), 1e-5) == pytest.approx(lib, rel=1e-5)


@pytest.mark.parametrize("q", [1.0, 0.1])
def test_poisson_noise_multiplier_replace_one(q):
    """Moved from the solver: same PLD discretization as composition; q = 1 is 2 z_full (sensitivity 2)."""
    from dp_sklearn._accounting import poisson_noise_multiplier

    zp = poisson_noise_multiplier(1.0, 1e-5, 10, q)
    ev = dp_event.SelfComposedDpEvent(dp_event.PoissonSampledDpEvent(q, dp_event.GaussianDpEvent(zp)), 10)
    assert compose_epsilon([ev], 1e-5) == pytest.approx(1.0, abs=5e-3)
    if q == 1.0:
        assert zp == pytest.approx(2 * composed_gaussian_noise_multiplier(1.0, 1e-5, 10), rel=2e-3)
