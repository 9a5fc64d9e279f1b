"""Private Frank-Wolfe over the l1 ball (TTZ 2015 Algorithm 2): exponential-mechanism calibration
(zCDP and pure), paper accounting, audit with negative control, epsilon = inf."""

import math

import numpy as np
import pytest
from dp_accounting import dp_event

from dp_sklearn import DPLasso
from dp_sklearn._accounting import EpsilonDeltaDpEvent, zcdp_epsilon_upper_bound, zcdp_rho
from dp_sklearn._losses import SquaredLoss
from dp_sklearn._sets import L1Ball
from dp_sklearn.composition import epsilon_of_event
from dp_sklearn.solvers import get_solver
import dp_sklearn.solvers._frank_wolfe as fw_mod
from dp_sklearn.solvers._frank_wolfe import advanced_composition_epsilon0, frank_wolfe


from solver_helpers import DELTA, EPS, GRID, check_epsilon_inf_converges, estimator_audit, glm_problem, run_solver


def test_frank_wolfe_calibration():
    prob = glm_problem(SquaredLoss())
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


CASES = [
    ("lasso-frank_wolfe", "regression",
     lambda d: lambda rng: DPLasso(solver="frank_wolfe", epsilon=EPS, delta=d, data_norm=1.0, bounds_y=(-1, 1),
                                   max_iter=5, random_state=rng), DELTA,
     (fw_mod, "zcdp_rho", lambda f: lambda e, d: f(e, d) * 1e4)),
]


# name, kind, estimator factory, delta, (module, attribute, scaled-down replacement factory)
@pytest.mark.parametrize("name, kind, factory, delta, patch", CASES, ids=[c[0] for c in CASES])
def test_audit_and_negative_control(name, kind, factory, delta, patch, monkeypatch):
    estimator_audit(name, kind, factory, delta, patch, monkeypatch)


@pytest.mark.parametrize("eps, delta, T", GRID + [(10.0, 1e-2, 10)])
def test_frank_wolfe_paper_is_private_and_not_better_than_tight(problem, eps, delta, T):
    C = L1Ball(1.0)
    tight = run_solver(frank_wolfe, problem, C, eps, delta, T, "tight")
    paper = run_solver(frank_wolfe, problem, C, eps, delta, T, "paper")
    # Same score sensitivity; noise scale 2 sens / eps0 (Gumbel for tight, Laplace for paper).
    assert paper.noise_scale <= tight.noise_scale
    assert paper.info["mode"] == "laplace"
    for res in (tight, paper):
        assert epsilon_of_event(res.event, delta) <= eps * (1 + 1e-3)
    # TTZ's printed scale is the first-order term of the advanced composition theorem.
    first_order = eps / math.sqrt(2 * T * math.log(1 / delta))
    e0 = advanced_composition_epsilon0(eps, delta, T)
    assert e0 == pytest.approx(max(e0, eps / T))
    assert min(e0, first_order) >= 0 and (e0 <= first_order or e0 == pytest.approx(eps / T))


def test_frank_wolfe_printed_scale_overshoots_where_fixed():
    eps, delta, T = 10.0, 1e-2, 10
    printed = eps / math.sqrt(2 * T * math.log(1 / delta))
    ev = dp_event.SelfComposedDpEvent(EpsilonDeltaDpEvent(printed, 0.0), T)
    assert epsilon_of_event(ev, delta) > eps  # TTZ's scale alone is not (10, 0.01)-DP here
    e0 = advanced_composition_epsilon0(eps, delta, T)
    assert epsilon_of_event(dp_event.SelfComposedDpEvent(EpsilonDeltaDpEvent(e0, 0.0), T), delta) <= eps


@pytest.mark.parametrize("solver, constraint, kw", [(frank_wolfe, L1Ball(0.6), {})])
def test_frank_wolfe_epsilon_inf_converges_to_the_exact_minimizer(solver, constraint, kw):
    check_epsilon_inf_converges(solver, constraint, kw, gap=1e-4)
