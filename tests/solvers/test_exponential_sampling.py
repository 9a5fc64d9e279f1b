"""Exponential sampling (BST 2014, Algorithm 2): calibration, exact-sampler goodness of fit, audit."""

import dataclasses
import math

import numpy as np
import pytest
from scipy.special import logsumexp
from scipy.stats import chisquare, kstest

import dp_sklearn._logconcave as lc
import dp_sklearn.solvers._exponential_sampling as es_mod
import dp_sklearn.solvers._localization as loc_mod
from dp_sklearn._data import Problem
from dp_sklearn._losses import LogisticLoss, SquaredLoss
from dp_sklearn._sets import L2Ball, Unconstrained
from dp_sklearn.audit import audit_epsilon, glm_worst_case_pair
from dp_sklearn.solvers import PublicProblem

EPS = 1.0


def _logistic_problem(n, dim, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, (n, dim)) / math.sqrt(dim)
    y = np.where(X @ np.ones(dim) + 0.3 * rng.standard_normal(n) > 0, 1.0, -1.0)
    return Problem(X, y, LogisticLoss(), 1.0, 1.0, np.linalg.norm(X, axis=1), 0.0)


def test_calibration_closed_form():
    pub = PublicProblem(50, 2, 1.0, 1.0, LogisticLoss(), 0.0)
    plan = es_mod.plan_exponential_sampling(pub, L2Ball(2.0), epsilon=EPS)
    # kappa = epsilon / (2 L ||C||) with L = x_norm sup|phi'| = 1 and ||C|| = 2 R = 4.
    assert plan.info["kappa"] == pytest.approx(EPS / (2 * 1 * 4))
    assert plan.delta == 0 and plan.event.epsilon == EPS
    sq = es_mod.plan_exponential_sampling(PublicProblem(50, 1, 1.0, 1.0, SquaredLoss(), 0.0), Unconstrained(),
                                          epsilon=EPS, coef_radius=0.5)
    assert sq.info["lipschitz"] == pytest.approx(1.0 * (1.0 * 0.5 + 1.0))  # x_norm (x_norm R + 1)
    with pytest.raises(ValueError, match="at most 2"):
        es_mod.plan_exponential_sampling(PublicProblem(50, 3, 1.0, 1.0, LogisticLoss(), 0.0), L2Ball(1.0),
                                         epsilon=EPS)
    with pytest.raises(ValueError, match="epsilon is too large for solver='exponential_sampling'"):
        es_mod.plan_exponential_sampling(PublicProblem(50, 1, 1.0, 1.0, LogisticLoss(), 0.0), L2Ball(1.0),
                                         epsilon=1e14)


def test_replace_one_log_ratio_is_at_most_epsilon():
    # The oscillation of u = l(.; d) - l(.; d') over the ball bounds the density ratio: check on a grid (1-D).
    R = 2.0
    theta = np.linspace(-R, R, 20001)
    kappa = EPS / (2 * 1 * 2 * R)
    loss = LogisticLoss()
    u = loss.phi(theta * 1.0, 1.0) - loss.phi(theta * -1.0, 1.0)  # x = e_1 vs x' = -e_1, y = 1
    assert kappa * (u.max() - u.min()) <= EPS + 1e-12
    # logistic: u = -theta (phi'(z) + phi'(-z) sums to 1), so this pair uses half of the 2 L bound
    assert kappa * (u.max() - u.min()) == pytest.approx(EPS / 2)


def _exact_density_1d(problem, kappa, R, grid):
    F = es_mod._objective(problem, 0.0)(grid[:, None])
    w = np.exp(-kappa * (F - F.min()))
    return w


def _plan(problem, R, kappa_factor=1.0):
    plan = es_mod.plan_exponential_sampling(problem, L2Ball(R), epsilon=3.0)
    return dataclasses.replace(plan, info={**plan.info, "kappa": plan.info["kappa"] * kappa_factor})


@pytest.mark.parametrize("factor, passes", [(1.0, True), (1.5, False)])
def test_one_dimensional_goodness_of_fit(factor, passes):
    prob, R = _logistic_problem(200, 1), 3.0
    good = _plan(prob, R)
    samples = es_mod.exact_samples(prob, _plan(prob, R, factor), np.random.default_rng(0), size=3000)[:, 0]
    grid = np.linspace(-R, R, 40001)
    w = _exact_density_1d(prob, good.info["kappa"], R, grid)
    cdf = np.concatenate([[0], np.cumsum((w[1:] + w[:-1]) / 2)])
    cdf /= cdf[-1]
    p = kstest(samples, lambda t: np.interp(t, grid, cdf)).pvalue
    assert (p > 0.01) if passes else (p < 1e-4), p


@pytest.mark.parametrize("factor, passes", [(1.0, True), (1.5, False)])
def test_two_dimensional_goodness_of_fit(factor, passes):
    prob, R = _logistic_problem(150, 2, seed=1), 3.0
    good = _plan(prob, R)
    samples = es_mod.exact_samples(prob, _plan(prob, R, factor), np.random.default_rng(1), size=3000)
    # Expected cell probabilities on a 6 x 6 grid of [-R, R]^2 from a fine 400 x 400 Riemann sum over the disk.
    fine = np.linspace(-R, R, 401)
    mid = (fine[1:] + fine[:-1]) / 2
    T = np.stack(np.meshgrid(mid, mid, indexing="ij"), axis=-1).reshape(-1, 2)
    inside = np.linalg.norm(T, axis=1) <= R
    F = es_mod._objective(prob, 0.0)(T[inside])
    w = np.exp(-good.info["kappa"] * (F - F.min()))
    edges = np.linspace(-R, R, 7)
    expected = np.histogram2d(T[inside, 0], T[inside, 1], bins=[edges, edges], weights=w)[0].ravel()
    observed = np.histogram2d(samples[:, 0], samples[:, 1], bins=[edges, edges])[0].ravel()
    keep = expected / expected.sum() * len(samples) >= 5
    exp_counts = expected[keep] / expected[keep].sum() * observed[keep].sum()
    p = chisquare(observed[keep], exp_counts).pvalue
    assert (p > 0.01) if passes else (p < 1e-4), p


def _mechanism(X, y, rng):
    prob = Problem(X, np.where(y > 0, 1.0, -1.0), LogisticLoss(), 1.0, 1.0, np.linalg.norm(X, axis=1), 0.0)
    return es_mod.exponential_sampling(prob, L2Ball(2.0), epsilon=EPS, rng=rng).coef


def test_audit_passes_and_catches_wrong_temperature(monkeypatch):
    D, D_prime = glm_worst_case_pair(n=10, n_features=1, kind="classification", data_norm=1.0)
    res = audit_epsilon(_mechanism, D, D_prime, n_samples=600, delta=0.0, random_state=0)
    assert res.epsilon_lower <= EPS, res
    real = es_mod.plan_exponential_sampling

    def hot(*a, **k):
        plan = real(*a, **k)
        return dataclasses.replace(plan, info={**plan.info, "kappa": 20 * plan.info["kappa"]})

    monkeypatch.setattr(es_mod, "plan_exponential_sampling", hot)
    bad = audit_epsilon(_mechanism, D, D_prime, n_samples=600, delta=0.0, random_state=1)
    assert bad.epsilon_lower > EPS, bad


# --- Issue 19 item 3: the sampler's work does not depend on the data ------------------------------

def _old_envelope(F, kappa, curv_n, lo, hi, domain):
    """Before issue 19 (negative control): cells split while their mass share exceeds 1e-3 and
    their looseness 1, up to 2^15 cells: a data-dependent number of cells."""
    dim = len(lo)
    centers, half = lc._grid(lo, hi, lc._INITIAL_CELLS[dim])
    keep = lc._inside(centers, *domain, slack=np.linalg.norm(half, axis=1))
    centers, half = centers[keep], half[keep]
    log_env, loose = lc._bounds(F, kappa, curv_n, centers, half)
    while len(centers) < 2**15:
        logw = log_env + np.sum(np.log(2.0 * half), axis=1)
        split = (np.exp(logw - logsumexp(logw)) > 1e-3) & (loose > 1.0)
        if not split.any():
            break
        kids, kid_half = lc._split(centers[split], half[split])
        keep = lc._inside(kids, *domain, slack=np.linalg.norm(kid_half, axis=1))
        kids, kid_half = kids[keep], kid_half[keep]
        kid_env, kid_loose = lc._bounds(F, kappa, curv_n, kids, kid_half)
        centers = np.concatenate([centers[~split], kids])
        half = np.concatenate([half[~split], kid_half])
        log_env = np.concatenate([log_env[~split], kid_env])
        loose = np.concatenate([loose[~split], kid_loose])
    return centers, half, log_env


def _work_pair(dim):
    """Replace-one pair on which the old adaptive envelope refined 35 vs 34 cells (1-D, n = 200) or
    362 vs 290 cells (2-D, n = 50)."""
    rng = np.random.default_rng(3)
    n = 200 if dim == 1 else 50
    X = rng.uniform(-1, 1, (n, dim)) / math.sqrt(dim)
    y = np.where(X.sum(axis=1) + (0.5 * rng.standard_normal(n) if dim == 1 else 0.0) > 0, 1.0, -1.0)
    Xp, yp = X.copy(), y.copy()
    Xp[0], yp[0] = 1.0 / math.sqrt(dim), -1.0
    return (X, y), (Xp, yp)


def _counting_work(monkeypatch):
    """Spy: the number of points at which the sampler evaluates the objective (cells + proposals)."""
    calls = []
    real = lc.glm_objective

    def counted(problem, l2_reg):
        F = real(problem, l2_reg)

        def G(thetas, gradient=False):
            calls.append(len(np.atleast_2d(thetas)))
            return F(thetas, gradient)

        G.n_terms = F.n_terms
        return G

    monkeypatch.setattr(lc, "glm_objective", counted)
    return calls


def _work_mechanism(calls, solver="exponential_sampling"):
    """One private draw at epsilon=4 (the issue's claim); output: the objective evaluations it made."""
    run = es_mod.exponential_sampling if solver == "exponential_sampling" else loc_mod.localization

    def mechanism(X, y, rng):
        del calls[:]
        prob = Problem(X, y, LogisticLoss(), 1.0, 1.0, np.linalg.norm(X, axis=1), 0.0)
        run(prob, L2Ball(2.0), epsilon=4.0, rng=rng)
        return np.array([float(sum(calls))])

    return mechanism


@pytest.mark.parametrize("solver", ["exponential_sampling", "localization"])
@pytest.mark.parametrize("dim", [1, 2])
def test_sampler_work_is_the_same_on_neighbours(solver, dim, monkeypatch):
    # Issue 19 item 3: old main refined a data-dependent number of cells (491 vs 458 on the
    # issue's pair, 35 vs 34 and 362 vs 290 here), visible in the wall time. Now the envelope has
    # lc._n_cells(dim) cells (every cell ever built is evaluated once) and a draw evaluates one
    # block of proposals, on both neighbours.
    calls = _counting_work(monkeypatch)
    mech = _work_mechanism(calls, solver)
    D, D_prime = _work_pair(dim)
    work = [{float(mech(*d, np.random.default_rng(s))[0]) for s in range(5)} for d in (D, D_prime)]
    assert work[0] == work[1], work
    evaluated = lc._INITIAL_CELLS[dim] ** dim + lc._ROUNDS * lc._SPLITS[dim] * 2**dim  # every cell ever built
    assert work[0] == {float(evaluated + lc._BLOCK_PROPOSALS)}, work
    assert lc._n_cells(1) == 352 and lc._n_cells(2) == 2176
    if solver == "localization":  # its old work also varied with the random centre: no fixed control
        return
    # Negative control: the old envelope, re-injected, does different work on the two neighbours.
    monkeypatch.setattr(lc, "_envelope", _old_envelope)
    assert mech(*D, np.random.default_rng(0))[0] != mech(*D_prime, np.random.default_rng(0))[0]


def test_sampler_work_is_reported_and_public():
    prob = _logistic_problem(200, 2, seed=4)
    plan = es_mod.plan_exponential_sampling(prob, L2Ball(3.0), epsilon=3.0)
    i = plan.info
    _, work = lc.exact_glm_samples(prob, np.random.default_rng(0), kappa=i["kappa"], l2_reg=i["l2_reg"],
                                   curvature=i["curvature"], radius=3.0, size=1, return_work=True)
    assert work == {"cells": 2176, "proposals": lc._BLOCK_PROPOSALS}


@pytest.mark.slow
@pytest.mark.parametrize("dim, n_samples", [(1, 500), (2, 2000)])
def test_audit_sampler_work_with_negative_control(dim, n_samples, monkeypatch):
    # The observable is the work count (deterministic, unlike the wall time it drives). Claimed
    # epsilon 4; 500 + 500 draws certify up to about 4.2 on a perfect separation, which the old
    # envelope (re-injected) gives; the issue measured 5.57 from the wall time at 2000 + 2000.
    # About 80 s (1-D) and several minutes (2-D) on a shared machine, hence slow.
    calls = _counting_work(monkeypatch)
    mech = _work_mechanism(calls)
    D, D_prime = _work_pair(dim)
    res = audit_epsilon(mech, D, D_prime, n_samples=n_samples, random_state=0)
    assert res.epsilon_lower <= 4.0, res
    monkeypatch.setattr(lc, "_envelope", _old_envelope)
    bad = audit_epsilon(mech, D, D_prime, n_samples=n_samples, random_state=0)
    assert bad.epsilon_lower > 4.0, bad
