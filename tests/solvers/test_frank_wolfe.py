"""Private Frank-Wolfe over the l1 ball (TTZ 2015 Algorithm 2): exponential-mechanism calibration
(zCDP and pure), paper accounting, audit with negative control, epsilon = inf."""

import dataclasses
import math

import numpy as np
import pytest
from dp_accounting import dp_event
from scipy.special import logsumexp

from dp_sklearn import DPLasso, _discrete, _noise
from dp_sklearn._accounting import EpsilonDeltaDpEvent, zcdp_epsilon_upper_bound, zcdp_rho
from dp_sklearn._losses import LogisticLoss, MultinomialLoss, SquaredLoss
from dp_sklearn._gram import GramGradient
from dp_sklearn._sets import L1Ball
from dp_sklearn.composition import epsilon_of_event
from dp_sklearn.solvers import get_solver
import dp_sklearn.solvers._frank_wolfe as fw_mod
from dp_sklearn.solvers._frank_wolfe import (advanced_composition_epsilon0, frank_wolfe, gumbel_argmax,
                                             plan_frank_wolfe, run_frank_wolfe)
from dp_sklearn.solvers._mirror_descent import plan_mirror_descent, run_mirror_descent


from solver_helpers import DELTA, EPS, GRID, check_epsilon_inf_converges, estimator_audit, glm_problem, run_solver
from solver_helpers import random_problem as _problem, public_of as _public


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


# ------------------------------------------------------------------------------
# Speed work (issue 11) changes no released value: same seed -> same coefficients.
#
# * the in-place clipped gradient sum equals the plain formula (every loss, dense / CSR);
# * the old per-step loops (reference copies below) and the new ones agree to 1e-10;
# * the Gram path (squared loss, clip norm that can never bind) releases the same
#   coefficients as the data path, and is never taken when clipping could bind.


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
    """The loop before the speed work (two products with X per step), its selections drawn from the
    noise layer's exact exponential mechanism (``_noise.em_stream``, the stream the solver uses)."""
    R, eps0, sens, dim = plan.constraint.radius, plan.noise_scale, plan.info["score_sensitivity"], prob.dim
    theta = np.zeros(dim)
    stream = _noise.em_stream(rng, 2 * dim, plan.n_iter)
    for t in range(plan.n_iter):
        g = prob.loss.gradient(prob.X, prob.y, theta)
        k = stream.argmax(np.concatenate([-R * g, R * g]), eps0 / (2.0 * sens))
        s = np.zeros(dim)
        s[k % dim] = R if k < dim else -R
        theta = (1.0 - 2.0 / (t + 2.0)) * theta + 2.0 / (t + 2.0) * s
    return theta


def _per_step_gram_exp(gram, dim, T, R, scale, rng):
    """The Gram-path loop with G theta recomputed as a product at every step (same exact selections)."""
    G, b, n = gram.gram, gram.xty, gram.n
    theta = np.zeros(dim)
    c = R * scale / n
    stream = _noise.em_stream(rng, 2 * dim, T) if T > 0 else None
    for t in range(T):
        half = -c * (G @ theta - b)
        k = stream.argmax(np.concatenate([half, -half]))
        value, mu, j = (R if k < dim else -R), 2.0 / (t + 2.0), k % dim
        theta *= 1.0 - mu
        theta[j] += mu * value
    return theta


@pytest.mark.parametrize("scale", [0.5, 50.0])
def test_gram_loop_matches_the_per_step_gram_loop(scale):
    """Same draws, same vertices: G theta updated from a column of G per step equals the product to rounding."""
    prob = _problem(SquaredLoss(), n=500, p=7)
    gram = GramGradient(prob.X, prob.y)
    for T in (0, 1, 37, 300):
        new = fw_mod._run_gram_exp(gram, prob.dim, T, 1.3, scale, np.random.default_rng(7))
        old = _per_step_gram_exp(gram, prob.dim, T, 1.3, scale, np.random.default_rng(7))
        np.testing.assert_allclose(new, old, rtol=0, atol=1e-12)
    assert np.abs(new).sum() <= 1.3 * (1 + 1e-12)  # a convex combination of vertices of the l1 ball


def _stepwise_gram_exp(gram, dim, T, R, scale, rng):
    """The Gram-path loop before the block loop (one ``em_stream.argmax`` per step, ``G theta``
    updated from a column of G, the iterate by the recurrence): its selections and iterate."""
    G, b, n = gram.gram, gram.xty, gram.n
    theta, g_theta, logits, ks = np.zeros(dim), np.zeros(dim), np.empty(2 * dim), []
    c = R * scale / n
    stream = _noise.em_stream(rng, 2 * dim, T)
    for t in range(T):
        np.subtract(g_theta, b, out=logits[:dim])
        logits[:dim] *= -c
        np.negative(logits[:dim], out=logits[dim:])
        k = stream.argmax(logits)
        ks.append(k)
        value, mu, j = (R if k < dim else -R), 2.0 / (t + 2.0), k % dim
        theta *= 1.0 - mu
        theta[j] += mu * value
        g_theta *= 1.0 - mu
        g_theta += (mu * value) * G[:, j]
    return np.array(ks, dtype=np.intp), theta


def _gram_case(dim, n, seed):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, dim)) / np.sqrt(dim)
    return GramGradient(X, np.clip(X @ rng.standard_normal(dim) * 0.3 + 0.1 * rng.standard_normal(n), -1, 1))


# dim, n, T, scale (scale 50, 200: large logits, the iterate moves to the boundary)
GRAM_CASES = [(7, 500, 300, 0.5), (7, 500, 300, 50.0), (20, 2000, 2000, 5.0), (3, 100, 3000, 200.0)]


@pytest.mark.parametrize("table", [True, False])  # the (2 dim x 2 dim) table, or the four-axpy loop
@pytest.mark.parametrize("dim, n, T, scale", GRAM_CASES)
def test_gram_block_loop_selects_as_the_stepwise_loop(dim, n, T, scale, table, monkeypatch):
    """Same seed -> the same T vertices as the per-step exact mechanism (the same uniforms, the
    same certified winners), and the iterate from the selections equals the recurrence's to rounding."""
    monkeypatch.setattr(fw_mod, "_TABLE_MAX_DIM", 256 if table else 0)
    gram = _gram_case(dim, n, dim)
    for seed in range(3):
        ks_old, theta_old = _stepwise_gram_exp(gram, dim, T, 1.3, scale, np.random.default_rng(seed))
        ks = fw_mod._gram_exp_selections(gram, dim, T, 1.3, scale, np.random.default_rng(seed))
        np.testing.assert_array_equal(ks, ks_old)
        theta = fw_mod._run_gram_exp(gram, dim, T, 1.3, scale, np.random.default_rng(seed))
        np.testing.assert_allclose(theta, theta_old, rtol=0, atol=1e-13)
        assert np.abs(theta).sum() <= 1.3 * (1 + 1e-15)


@pytest.mark.parametrize("table", [True, False])
def test_gram_block_loop_corrects_wrong_picks_and_slow_paths(table, monkeypatch):
    """The loop's picks are proposals: a loop misled into wrong picks (its keys perturbed), and
    certificates that mostly fail (margin 0.1: most steps take the exact slow path), still give
    the stepwise loop's exact selections."""
    from scipy.linalg.blas import daxpy
    monkeypatch.setattr(fw_mod, "_TABLE_MAX_DIM", 256 if table else 0)
    noise, misled = np.random.default_rng(99), []

    def misleading_axpy(x, y, *args):
        out = daxpy(x, y, *args)
        if len(args) == 5 and noise.random() < 0.05:  # an update of a step's keys (offset given)
            out[args[4] + noise.integers(args[0])] += 1e6
            misled.append(1)
        return out

    dim, n, T, scale = 7, 500, 400, 2.0
    gram = _gram_case(dim, n, 1)
    ks_old, _ = _stepwise_gram_exp(gram, dim, T, 1.3, scale, np.random.default_rng(3))
    monkeypatch.setattr(fw_mod, "_blas_axpy", misleading_axpy)
    np.testing.assert_array_equal(fw_mod._gram_exp_selections(gram, dim, T, 1.3, scale, np.random.default_rng(3)),
                                  ks_old)
    assert len(misled) > 20
    monkeypatch.setattr(fw_mod, "_blas_axpy", daxpy)
    monkeypatch.setattr(_discrete, "_KEY_MARGIN", 0.1)
    ks_old, _ = _stepwise_gram_exp(gram, dim, 100, 1.3, scale, np.random.default_rng(4))
    np.testing.assert_array_equal(fw_mod._gram_exp_selections(gram, dim, 100, 1.3, scale, np.random.default_rng(4)),
                                  ks_old)


@pytest.mark.parametrize("margin", [None, 0.005])  # 0.005: about half the steps take the exact slow path
def test_gram_block_loop_has_the_exponential_mechanism_law(margin, monkeypatch):
    """Two steps over the 4 vertices of a 2-d l1 ball: the pair (k_0, k_1) has the law
    softmax(l_0)[k_0] softmax(l_1(k_0))[k_1], l_t the logits at theta_t (chi-square, 16 cells),
    with a negative control (the logits halved)."""
    if margin is not None:
        monkeypatch.setattr(_discrete, "_KEY_MARGIN", margin)
    gram = _gram_case(2, 50, 5)
    R, scale, dim = 1.0, 3.0, 2
    c = R * scale / gram.n

    def logits(theta):
        half = -c * (gram.gram @ theta - gram.xty)
        return np.concatenate([half, -half])

    vert = [np.array(v) for v in ([R, 0.0], [0.0, R], [-R, 0.0], [0.0, -R])]

    def law(f):
        p0 = np.exp(f * logits(np.zeros(dim)) - logsumexp(f * logits(np.zeros(dim))))
        return np.concatenate([p0[a] * np.exp(f * logits(vert[a]) - logsumexp(f * logits(vert[a])))
                               for a in range(4)])

    m = 5000 if margin else 20_000
    rng = np.random.default_rng(11)
    pairs = [fw_mod._gram_exp_selections(gram, dim, 2, R, scale, rng) for _ in range(m)]
    counts = np.bincount([4 * a + b for a, b in pairs], minlength=16)
    for f, ok in ((1.0, True), (0.5, False)):
        p = law(f)
        assert min(p) * m > 20  # every cell is tested
        chi2 = float(np.sum((counts - m * p) ** 2 / (m * p)))
        assert (chi2 < 37.7) is ok, chi2  # chi-square, 15 degrees of freedom: P(> 37.7) < 1e-3


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


@pytest.mark.parametrize("loss", [LogisticLoss(), MultinomialLoss(3), SquaredLoss()])
@pytest.mark.parametrize("sparse", [False, True])
def test_frank_wolfe_vertex_margins_match_full_products(loss, sparse, monkeypatch):
    """Margins (CSR: X^T X theta for the squared loss) updated per vertex give the full products' selections."""
    monkeypatch.setattr(fw_mod, "gram_worthwhile", lambda problem: False)  # the squared loss off the Gram path
    prob = _problem(loss, sparse=sparse)
    fw = plan_frank_wolfe(_public(prob), L1Ball(1.0), epsilon=EPS, delta=DELTA, max_iter=60)
    np.testing.assert_allclose(run_frank_wolfe(prob, fw, np.random.default_rng(5)),
                               _old_frank_wolfe(prob, fw, np.random.default_rng(5)), rtol=0, atol=1e-10)


@pytest.mark.parametrize("loss", [SquaredLoss(), LogisticLoss()])
def test_frank_wolfe_csr_margins_with_duplicate_entries(loss, monkeypatch):
    """A CSR design whose rows store duplicate column entries (not canonical): the column scan adds
    them up as a product does, so the selections and the iterate equal the full products'."""
    import scipy.sparse as sp
    monkeypatch.setattr(fw_mod, "gram_worthwhile", lambda problem: False)
    prob = _problem(loss, sparse=True)
    X = prob.X.tocoo()
    order = np.argsort(np.r_[X.row, X.row], kind="stable")
    rows, cols = np.r_[X.row, X.row][order], np.r_[X.col, X.col][order]
    data = np.r_[0.25 * X.data, 0.75 * X.data][order]
    indptr = np.r_[0, np.cumsum(np.bincount(rows, minlength=X.shape[0]))]
    Xd = sp.csr_matrix((data, cols, indptr), shape=X.shape)
    assert not Xd.has_canonical_format and Xd.nnz == 2 * prob.X.nnz
    prob = dataclasses.replace(prob, X=Xd)
    margins, theta, rng = fw_mod._CSRVertexMargins(prob), np.zeros(prob.dim), np.random.default_rng(0)
    for t in range(40):  # the gradient along vertex steps equals the full products'
        np.testing.assert_allclose(margins.gradient(theta), loss.gradient(Xd, prob.y, theta), rtol=0, atol=1e-12)
        k, value, mu = int(rng.integers(prob.dim)), float(rng.choice([-1.0, 1.0])), 2.0 / (t + 2.0)
        margins.step(mu, k, value)
        theta *= 1.0 - mu
        theta[k] += mu * value
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
