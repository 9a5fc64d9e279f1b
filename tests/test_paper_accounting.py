"""``accounting="paper"`` versus ``"tight"`` for every iterative solver.

Each paper calibration is checked against the paper's own formula, shown to be private
(its event's epsilon, by the accountant, is at most the target) and never less noisy
than the tight calibration at the same (epsilon, delta).
"""

import math

import numpy as np
import pytest
from dp_accounting import dp_event
from dp_accounting.pld import PLDAccountant
from dp_accounting.privacy_accountant import NeighboringRelation

from dp_sklearn._accounting import EpsilonDeltaDpEvent, composed_gaussian_noise_multiplier
from dp_sklearn.composition import epsilon_of_event
from dp_sklearn._data import Problem, normalize_X
from dp_sklearn._losses import SquaredLoss
from dp_sklearn._sets import L1Ball, L2Ball, Unconstrained
from dp_sklearn.solvers._frank_wolfe import advanced_composition_epsilon0, frank_wolfe
from dp_sklearn.solvers._frank_wolfe_gaussian import frank_wolfe_gaussian
from dp_sklearn.solvers._ight import L0Set, ight
from dp_sklearn.solvers._mirror_descent import mirror_descent
from dp_sklearn.solvers._noisy_gd import noisy_gd
from dp_sklearn.solvers._two_stage import two_stage

GRID = [(0.5, 1e-6, 10), (1.0, 1e-5, 50), (4.0, 1e-2, 12), (10.0, 1e-2, 5)]


@pytest.fixture(scope="module")
def problem():
    rng = np.random.default_rng(0)
    X, y = rng.standard_normal((60, 6)), rng.uniform(-1, 1, 60)
    Xt, x_norm, x_inf = normalize_X(X, 2 * math.sqrt(6), 2, False)
    return Problem(Xt, y, SquaredLoss(), x_norm, x_inf, np.linalg.norm(Xt, axis=1), 0.0)


def _run(solver, prob, constraint, eps, delta, T, accounting, **kw):
    return solver(prob, constraint, epsilon=eps, delta=delta, rng=np.random.default_rng(0), max_iter=T,
                  accounting=accounting, **kw)


GAUSSIAN_SOLVERS = {
    "noisy_gd": (noisy_gd, Unconstrained()),
    "ight": (ight, L0Set(3)),
    "mirror_descent_l1": (mirror_descent, L1Ball(1.0)),
    "mirror_descent_l2": (mirror_descent, L2Ball(1.0)),
    "frank_wolfe_gaussian": (frank_wolfe_gaussian, L2Ball(1.0)),
}


@pytest.mark.parametrize("name", sorted(GAUSSIAN_SOLVERS))
@pytest.mark.parametrize("eps, delta, T", GRID)
def test_tight_noise_at_most_paper_noise_and_both_private(problem, name, eps, delta, T):
    solver, constraint = GAUSSIAN_SOLVERS[name]
    tight = _run(solver, problem, constraint, eps, delta, T, "tight")
    paper = _run(solver, problem, constraint, eps, delta, T, "paper")
    assert tight.noise_scale <= paper.noise_scale
    assert tight.noise_scale == pytest.approx(composed_gaussian_noise_multiplier(eps, delta, T))
    for res in (tight, paper):
        assert res.event == dp_event.SelfComposedDpEvent(dp_event.GaussianDpEvent(res.noise_scale), T)
        assert epsilon_of_event(res.event, delta) <= eps * (1 + 1e-3)


def test_paper_formulas(problem):
    n, C = problem.n, 0.3
    eps, delta, T = 1.0, 1e-5, 40

    def sigma(solver, constraint, **kw):
        return _run(solver, problem, constraint, eps, delta, T, "paper", clip_norm=C, **kw).info["sigma"]

    # BST (FOCS 2014) Algorithm 1: sigma^2 = 32 L^2 n^2 log(n/delta) log(1/delta) / eps^2 for n^2
    # single-record steps; per full-batch step on the clipped sum, T replaces n^2.
    bst = math.sqrt(32 * C**2 * T * math.log(n / delta) * math.log(1 / delta)) / eps
    assert sigma(noisy_gd, Unconstrained()) == pytest.approx(bst)
    # TTZ Algorithm 1: sigma^2 = 32 L^2 T log^2(T/delta) / (eps n)^2 on the mean gradient.
    ttz1 = math.sqrt(32 * C**2 * T) * math.log(T / delta) / (eps * n)
    assert sigma(mirror_descent, L2Ball(1.0)) / n == pytest.approx(ttz1)
    # TTZ Algorithm 5: sigma^2 = 32 L_2^2 T log^2(n/delta) / (n eps)^2 on the mean gradient.
    ttz5 = math.sqrt(32 * C**2 * T) * math.log(n / delta) / (eps * n)
    assert sigma(frank_wolfe_gaussian, L2Ball(1.0)) / n == pytest.approx(ttz5)
    # Wang & Gu Theorem 5.2 with Remark 5.3's rho, replace-one sensitivity 2C / n:
    # sigma^2 = 2 T C^2 / (n^2 rho) on the mean gradient (twice the printed T G^2 / (n^2 rho)).
    L = math.log(1 / delta)
    rho = (math.sqrt(L + eps) - math.sqrt(L)) ** 2
    assert sigma(ight, L0Set(3)) / n == pytest.approx(math.sqrt(2 * T * C**2 / (n**2 * rho)))


def test_wang_gu_printed_sigma_is_two_rho_under_replace_one():
    # The printed sigma^2 = T G^2 / (n^2 rho) with the replace-one sensitivity 2G/n gives, by
    # their Lemma 3.6, rho_t = (2G/n)^2 / (2 sigma^2) = 2 rho / T per step: 2 rho in total.
    T, G, n, rho = 10, 1.0, 100, 0.3
    sigma2 = T * G**2 / (n**2 * rho)
    assert T * (2 * G / n) ** 2 / (2 * sigma2) == pytest.approx(2 * rho)


@pytest.mark.parametrize("eps, delta, T", GRID + [(10.0, 1e-2, 10)])
def test_frank_wolfe_paper_is_private_and_not_better_than_tight(problem, eps, delta, T):
    C = L1Ball(1.0)
    tight = _run(frank_wolfe, problem, C, eps, delta, T, "tight")
    paper = _run(frank_wolfe, problem, C, eps, delta, T, "paper")
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


@pytest.mark.parametrize("eps, delta", [(1.0, 1e-5), (4.0, 1e-2)])
def test_noisy_gd_minibatch_tight_at_most_paper(problem, eps, delta):
    kw = dict(batch_size=20)
    tight = _run(noisy_gd, problem, Unconstrained(), eps, delta, 10, "tight", **kw)
    paper = _run(noisy_gd, problem, Unconstrained(), eps, delta, 10, "paper", **kw)
    assert tight.noise_scale <= paper.noise_scale
    for res in (tight, paper):
        acc = PLDAccountant(NeighboringRelation.REPLACE_ONE, value_discretization_interval=1e-3)
        acc.compose(res.event)
        assert acc.get_epsilon(delta) <= eps * (1 + 1e-3)


@pytest.mark.parametrize("s", [1, 3, 6])
def test_two_stage_tight_selection_at_least_paper(problem, s):
    tight = two_stage(problem, L0Set(s), epsilon=2.0, delta=1e-5, rng=np.random.default_rng(0))
    paper = two_stage(problem, L0Set(s), epsilon=2.0, delta=1e-5, rng=np.random.default_rng(0), accounting="paper")
    assert tight.noise_scale >= paper.noise_scale  # eps0 of the exponential mechanism: larger = less noise
    for res in (tight, paper):
        assert epsilon_of_event(res.event, 1e-5) <= 2.0 * (1 + 1e-3)
