"""Speed work (issue 11) changes no released value: same seed -> same coefficients.

* the in-place clipped gradient sum equals the plain formula (every loss, dense / CSR);
* the old per-step loops (reference copies below) and the new ones agree to 1e-10;
* the Gram path (squared loss, clip norm that can never bind) releases the same
  coefficients as the data path, and is never taken when clipping could bind.
"""

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.special import logsumexp

from dp_sklearn import _gram
from dp_sklearn import _noise
from dp_sklearn._data import Problem, normalize_X
from dp_sklearn._gram import GramGradient, gram_applies
from dp_sklearn._losses import LogisticLoss, MultinomialLoss, SquaredLoss
from dp_sklearn._sets import L0Set, L1Ball, L2Ball, Unconstrained, bounded_domain, l1_threshold, project_l1_ball
from dp_sklearn.solvers._base import PublicProblem
from dp_sklearn.solvers._common import clipped_sum_source
from dp_sklearn.solvers._frank_wolfe import gumbel_argmax, plan_frank_wolfe, run_frank_wolfe
from dp_sklearn.solvers._frank_wolfe_gaussian import plan_frank_wolfe_gaussian, run_frank_wolfe_gaussian
from dp_sklearn.solvers._mirror_descent import plan_mirror_descent, run_mirror_descent
from dp_sklearn.solvers._noisy_gd import plan_noisy_gd, run_noisy_gd

EPS, DELTA = 1.0, 1e-5


def _problem(loss=None, n=400, p=6, sparse=False, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, p))
    if sparse:
        X = sp.csr_matrix(X * (rng.random((n, p)) < 0.4))
    Xt, x_norm, x_inf = normalize_X(X, 1.5, 2, True)  # many rows clipped to the bound
    loss = loss or SquaredLoss()
    if isinstance(loss, MultinomialLoss):
        y = np.eye(loss.n_outputs)[rng.integers(0, loss.n_outputs, n)]
    elif isinstance(loss, LogisticLoss):
        y = np.where(rng.random(n) < 0.5, -1.0, 1.0)
    else:
        y = np.clip(rng.standard_normal(n), -1, 1)  # targets at the bounds +-1 included
    rn = np.sqrt(np.asarray(Xt.multiply(Xt).sum(axis=1)).ravel()) if sparse else np.linalg.norm(Xt, axis=1)
    return Problem(Xt, y, loss, x_norm, x_inf, rn, 0.01)


def _public(problem):
    return PublicProblem(problem.n, problem.dim, problem.x_norm, problem.x_inf, problem.loss, problem.l2_reg)


def _old_clipped_sum(loss, X, y, theta, row_norms, C):
    d = loss.dphi(loss.margins(X, theta), y)
    dn = np.abs(d) if d.ndim == 1 else np.linalg.norm(d, axis=1)
    scale = np.minimum(1.0, C / np.maximum(dn * row_norms, 1e-300))
    d = d * scale if d.ndim == 1 else d * scale[:, None]
    return np.asarray(X.T @ d).ravel()


@pytest.mark.parametrize("loss", [SquaredLoss(), LogisticLoss(), MultinomialLoss(3)])
@pytest.mark.parametrize("sparse", [False, True])
def test_inplace_clipped_sum_equals_formula(loss, sparse):
    prob = _problem(loss, sparse=sparse)
    theta = np.random.default_rng(1).standard_normal(prob.dim)
    for C in (0.05, 0.5, 50.0):  # binding, partly binding, never binding
        new = loss.clipped_gradient_sum(prob.X, prob.y, theta, prob.row_norms, C)
        old = _old_clipped_sum(loss, prob.X, prob.y, theta, prob.row_norms, C)
        np.testing.assert_allclose(new, old, rtol=0, atol=1e-13)


def test_gram_gradient_is_the_mean_gradient():
    for sparse in (False, True):
        prob = _problem(sparse=sparse)
        theta = np.random.default_rng(2).standard_normal(prob.dim)
        g = GramGradient(prob.X, prob.y).gradient(theta)
        np.testing.assert_allclose(g, prob.loss.gradient(prob.X, prob.y, theta), rtol=1e-12, atol=1e-14)
        # negative control: with a binding clip norm the clipped sum is not the Gram gradient
        clipped = prob.loss.clipped_gradient_sum(prob.X, prob.y, theta, prob.row_norms, 0.05)
        assert np.abs(clipped - g * prob.n).max() > 1e-2


def test_gram_applies_only_when_clipping_cannot_bind():
    prob = _problem()
    ball = L2Ball(1.0)  # margin bound M = x_norm, so no clip iff C >= (x_norm + 1) x_norm
    bound = (prob.x_norm + 1.0) * prob.x_norm
    assert gram_applies(prob, ball, bound)
    assert not gram_applies(prob, ball, bound * (1 - 1e-9))
    assert not gram_applies(prob, ball, 0.5 * prob.x_norm)  # the default clip norm binds
    assert gram_applies(prob, L1Ball(2.0), (2.0 * prob.x_inf + 1.0) * prob.x_norm)
    assert not gram_applies(prob, Unconstrained(), 1e9)  # unbounded margins
    assert not gram_applies(prob, L0Set(2, n_free=1), 1e9)
    assert not gram_applies(_problem(LogisticLoss()), ball, 1e9)  # squared loss only
    assert clipped_sum_source(prob, ball, bound, sampling_rate=0.5) is None  # Poisson samples: data path


def _fit(run, plan, prob, monkeypatch=None, gram=True):
    if not gram:
        monkeypatch.setattr(_gram, "GRAM_MAX_DIM", 0)
    out = run(prob, plan, np.random.default_rng(11))
    monkeypatch.undo() if not gram else None
    return out


def _plans(prob):
    pub = _public(prob)
    l2 = L2Ball(1.0)
    big = (l2.margin_bound(prob.x_norm, prob.x_inf) + 1.0) * prob.x_norm
    l1 = L1Ball(1.0)
    big1 = (l1.margin_bound(prob.x_norm, prob.x_inf) + 1.0) * prob.x_norm
    gd_set = bounded_domain(Unconstrained(), SquaredLoss(), prob.x_norm)
    big_gd = (gd_set.margin_bound(prob.x_norm, prob.x_inf) + 1.0) * prob.x_norm
    kw = {"epsilon": EPS, "delta": DELTA, "max_iter": 25}
    return [
        (run_noisy_gd, plan_noisy_gd(pub, Unconstrained(), clip_norm=big_gd, l2_reg=0.01, **kw)),
        (run_mirror_descent, plan_mirror_descent(pub, l1, clip_norm=big1, l2_reg=0.01, **kw)),
        (run_mirror_descent, plan_mirror_descent(pub, l2, clip_norm=big, **kw)),
        (run_frank_wolfe_gaussian, plan_frank_wolfe_gaussian(pub, l2, clip_norm=big, **kw)),
        (run_frank_wolfe, plan_frank_wolfe(pub, l1, **kw)),
        (run_frank_wolfe, plan_frank_wolfe(pub, l1, accounting="paper", **kw)),
    ]


@pytest.mark.parametrize("sparse", [False, True])
def test_gram_path_releases_same_coefficients(sparse, monkeypatch):
    prob = _problem(sparse=sparse)
    for run, plan in _plans(prob):
        assert run is run_frank_wolfe or clipped_sum_source(prob, plan.constraint, plan.info["clip_norm"]) is not None
        fast = _fit(run, plan, prob)
        slow = _fit(run, plan, prob, monkeypatch, gram=False)
        np.testing.assert_allclose(fast, slow, rtol=0, atol=1e-10)
        assert np.abs(fast).max() > 1e-3  # a real fit, not zeros


def test_gram_path_is_taken(monkeypatch):
    prob = _problem()

    def boom(*args, **kwargs):
        raise AssertionError("data pass in a Gram fit")

    monkeypatch.setattr(prob.loss, "clipped_gradient_sum", boom)
    monkeypatch.setattr(prob.loss, "gradient", boom)
    for run, plan in _plans(prob):
        run(prob, plan, np.random.default_rng(0))


def _old_mirror_descent(prob, plan, rng):
    """The loop before the speed work (concatenated entropic step)."""
    info, T, dim, R, eta = plan.info, plan.n_iter, prob.dim, plan.constraint.radius, plan.info["step_size"]
    log_w, theta, avg = np.full(2 * dim, -np.log(2 * dim)), np.zeros(dim), np.zeros(dim)
    noise = _noise.gaussian_stream(rng, info["sigma"], info["clip_norm"], dim, T)  # the layer, T steps drawn ahead
    for _ in range(T):
        g = prob.loss.clipped_gradient_sum(prob.X, prob.y, theta, prob.row_norms, info["clip_norm"])
        g = noise.add(g) / prob.n + info["l2_reg"] * theta
        log_w -= eta * R * np.concatenate([g, -g])
        log_w -= logsumexp(log_w)
        w = np.exp(log_w)
        theta = R * (w[:dim] - w[dim:])
        avg += theta
    return avg / T


def _old_frank_wolfe(prob, plan, rng):
    """The loop before the speed work (two products with X per step), with the Gumbel noise drawn as
    -log(standard exponential): the law of ``rng.gumbel``, the stream of ``gumbel_argmax``."""
    R, eps0, sens, dim = plan.constraint.radius, plan.noise_scale, plan.info["score_sensitivity"], prob.dim
    theta = np.zeros(dim)
    for t in range(plan.n_iter):
        g = prob.loss.gradient(prob.X, prob.y, theta)
        noisy = eps0 * np.concatenate([-R * g, R * g]) / (2.0 * sens) - np.log(rng.standard_exponential(2 * dim))
        k = int(np.argmax(noisy))
        s = np.zeros(dim)
        s[k % dim] = R if k < dim else -R
        theta = (1.0 - 2.0 / (t + 2.0)) * theta + 2.0 / (t + 2.0) * s
    return theta


@pytest.mark.parametrize("loss", [SquaredLoss(), LogisticLoss()])
def test_new_loops_match_old_loops(loss):
    prob = _problem(loss)
    pub = _public(prob)
    md = plan_mirror_descent(pub, L1Ball(1.0), epsilon=EPS, delta=DELTA, max_iter=20, l2_reg=0.01)
    np.testing.assert_allclose(run_mirror_descent(prob, md, np.random.default_rng(3)),
                               _old_mirror_descent(prob, md, np.random.default_rng(3)), rtol=0, atol=1e-10)
    fw = plan_frank_wolfe(pub, L1Ball(1.0), epsilon=EPS, delta=DELTA, max_iter=30)
    np.testing.assert_allclose(run_frank_wolfe(prob, fw, np.random.default_rng(4)),
                               _old_frank_wolfe(prob, fw, np.random.default_rng(4)), rtol=0, atol=1e-10)


@pytest.mark.parametrize("loss", [LogisticLoss(), MultinomialLoss(3)])
@pytest.mark.parametrize("sparse", [False, True])
def test_frank_wolfe_vertex_margins_match_full_products(loss, sparse):
    prob = _problem(loss, sparse=sparse)
    fw = plan_frank_wolfe(_public(prob), L1Ball(1.0), epsilon=EPS, delta=DELTA, max_iter=60)
    np.testing.assert_allclose(run_frank_wolfe(prob, fw, np.random.default_rng(5)),
                               _old_frank_wolfe(prob, fw, np.random.default_rng(5)), rtol=0, atol=1e-10)


def test_gumbel_argmax_has_the_softmax_law():
    logits = np.array([0.0, 1.0, -1.0, 2.0, 0.5])
    p = np.exp(logits - logsumexp(logits))
    rng = np.random.default_rng(0)
    m = 40_000
    counts = np.bincount([gumbel_argmax(logits, rng) for _ in range(m)], minlength=logits.size)
    chi2 = float(np.sum((counts - m * p) ** 2 / (m * p)))
    assert chi2 < 18.5  # chi-square with 4 degrees of freedom: P(> 18.5) < 1e-3
    # negative control: the law of argmax(logits / 2 + G) is detected as different
    counts_half = np.bincount([gumbel_argmax(logits / 2, rng) for _ in range(m)], minlength=logits.size)
    assert float(np.sum((counts_half - m * p) ** 2 / (m * p))) > 100


def _duchi_projection(v, radius):
    """The sort-based l1-ball projection before the speed work (Duchi et al. 2008, Fig. 1)."""
    a = np.abs(v)
    if a.sum() <= radius:
        return v.copy()
    u = np.sort(a)[::-1]
    css = np.cumsum(u)
    rho = np.nonzero(u * np.arange(1, u.size + 1) > css - radius)[0][-1]
    return np.sign(v) * np.maximum(a - (css[rho] - radius) / (rho + 1.0), 0.0)


def test_l1_projection_matches_the_sort_based_one():
    rng = np.random.default_rng(0)
    for trial in range(500):
        d = int(rng.integers(1, 300))
        v = rng.standard_normal(d) * rng.exponential()
        if trial % 3 == 0:
            v[rng.random(d) < 0.5] = 0.0  # ties at zero
        if trial % 5 == 0:
            v = np.round(v, 1)  # ties among the entries
        r = float(rng.exponential())
        np.testing.assert_allclose(project_l1_ball(v, r), _duchi_projection(v, r), rtol=0, atol=1e-12)
    v = rng.standard_normal(5000)
    a = np.abs(v)
    # the sort-based finish after max_rounds gives the same threshold
    assert l1_threshold(a, 3.0, max_rounds=0) == pytest.approx(l1_threshold(a, 3.0), rel=1e-12)
    assert np.maximum(a - l1_threshold(a, 3.0), 0.0).sum() == pytest.approx(3.0, rel=1e-12)
