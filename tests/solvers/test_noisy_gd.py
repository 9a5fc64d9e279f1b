"""noisy_gd (BST 2014 Algorithm 1; full batch and Poisson-sampled mini-batches under replace-one):
calibration against closed forms, paper accounting, audits with negative controls, utility."""

import math
import warnings

import numpy as np
import pytest
from dp_accounting import dp_event
from dp_accounting.pld import PLDAccountant
from dp_accounting.privacy_accountant import NeighboringRelation
import scipy.sparse as sp

from dp_sklearn import ClippingWarning, DPLogisticRegression, DPRidge, _noise
from dp_sklearn._accounting import composed_gaussian_noise_multiplier, gaussian_noise_multiplier, poisson_noise_multiplier
from dp_sklearn._data import Problem, normalize_X
from dp_sklearn._losses import LogisticLoss, SquaredLoss
from dp_sklearn._sets import L2Ball, Unconstrained
from dp_sklearn.composition import neighboring_relation
from dp_sklearn.ledger import compose_epsilon
from dp_sklearn.solvers import get_solver
import dp_sklearn.solvers._common as common_mod
from dp_sklearn.solvers import _noisy_gd
from dp_sklearn.solvers._base import PublicProblem
from dp_sklearn.solvers._noisy_gd import (curvature_share, default_clip_norm, default_n_iter, noisy_gd, plan_noisy_gd,
                                          prior_radius)


from solver_helpers import DELTA, EPS, check_sampled_result, replace_one_hockey_stick_delta, sampled_problem, PAPER_C, PAPER_DELTA, PAPER_EPS, PAPER_T, estimator_audit, glm_problem, make_problem, paper_sigma, run_solver, solver_audit, solver_mechanism


def test_noisy_gd_calibration():
    prob = glm_problem(LogisticLoss())
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


def test_paper_formula_noisy_gd(problem):
    n, C, eps, delta, T = problem.n, PAPER_C, PAPER_EPS, PAPER_DELTA, PAPER_T

    # BST (FOCS 2014) Algorithm 1: sigma^2 = 32 L^2 n^2 log(n/delta) log(1/delta) / eps^2 for n^2
    # single-record steps; per full-batch step on the clipped sum, T replaces n^2.
    bst = math.sqrt(32 * C**2 * T * math.log(n / delta) * math.log(1 / delta)) / eps
    assert paper_sigma(problem, noisy_gd, Unconstrained()) == pytest.approx(bst)


@pytest.mark.parametrize("eps, delta", [(1.0, 1e-5), (4.0, 1e-2)])
def test_noisy_gd_minibatch_tight_at_most_paper(problem, eps, delta):
    kw = dict(batch_size=20)
    tight = run_solver(noisy_gd, problem, Unconstrained(), eps, delta, 10, "tight", **kw)
    paper = run_solver(noisy_gd, problem, Unconstrained(), eps, delta, 10, "paper", **kw)
    assert tight.noise_scale <= paper.noise_scale
    for res in (tight, paper):
        acc = PLDAccountant(NeighboringRelation.REPLACE_ONE, value_discretization_interval=1e-3)
        acc.compose(res.event)
        assert acc.get_epsilon(delta) <= eps * (1 + 1e-3)


CASES = [
    ("ridge-noisy_gd", "regression",
     lambda d: lambda rng: DPRidge(solver="noisy_gd", epsilon=EPS, delta=d, data_norm=1.0, bounds_y=(-1, 1),
                                   random_state=rng), DELTA,
     (common_mod, "composed_gaussian_noise_multiplier", lambda f: lambda e, d, T: f(e, d, T) / 10)),
    ("logistic-noisy_gd", "classification",
     lambda d: lambda rng: DPLogisticRegression(solver="noisy_gd", epsilon=EPS, delta=d, data_norm=1.0,
                                                random_state=rng), DELTA,
     (common_mod, "composed_gaussian_noise_multiplier", lambda f: lambda e, d, T: f(e, d, T) / 10)),
]


# name, kind, estimator factory, delta, (module, attribute, scaled-down replacement factory)
@pytest.mark.parametrize("name, kind, factory, delta, patch", CASES, ids=[c[0] for c in CASES])
def test_audit_and_negative_control(name, kind, factory, delta, patch, monkeypatch):
    estimator_audit(name, kind, factory, delta, patch, monkeypatch)


def replace_one_eps_of(zp, q, T, delta):
    acc = PLDAccountant(NeighboringRelation.REPLACE_ONE, value_discretization_interval=1e-3)
    acc.compose(dp_event.SelfComposedDpEvent(dp_event.PoissonSampledDpEvent(q, dp_event.GaussianDpEvent(zp)), T))
    return acc.get_epsilon(delta)


@pytest.mark.parametrize("eps, delta, T", [(1.0, 1e-5, 1), (1.0, 1e-5, 50), (4.0, 1e-2, 20)])
def test_sampling_rate_one_matches_full_batch(eps, delta, T):
    zp = poisson_noise_multiplier(eps, delta, T, 1.0)
    # REPLACE_ONE multipliers are per unit of the clip norm: z' = 2 z (sensitivity 2C).
    assert zp / 2 == pytest.approx(composed_gaussian_noise_multiplier(eps, delta, T), rel=2e-3)


@pytest.mark.parametrize("q", [0.2, 0.6])
def test_single_step_calibration_matches_the_replace_one_closed_form(q):
    # One Poisson-sampled step: the replaced record is in the batch with probability q in
    # both datasets; worst case: its clipped gradients are +-C, i.e. +-1 in units of z'.
    zp = poisson_noise_multiplier(EPS, DELTA, 1, q)
    assert replace_one_hockey_stick_delta(EPS, zp, q) == pytest.approx(DELTA, rel=0.02)


@pytest.mark.parametrize("q, T", [(0.02, 100), (0.5, 10)])
def test_minibatch_calibration_is_tight_and_amplified(q, T):
    zp = poisson_noise_multiplier(EPS, DELTA, T, q)
    assert replace_one_eps_of(zp, q, T, DELTA) <= EPS * (1 + 1e-3)
    assert replace_one_eps_of(0.97 * zp, q, T, DELTA) > EPS  # tight: less noise breaks the target
    assert zp < 2 * composed_gaussian_noise_multiplier(EPS, DELTA, T)  # sampling amplifies
    # The add/remove accountant would understate replace-one privacy loss for the same event.
    aor = PLDAccountant(value_discretization_interval=1e-3)
    aor.compose(dp_event.SelfComposedDpEvent(dp_event.PoissonSampledDpEvent(q, dp_event.GaussianDpEvent(zp)), T))
    assert aor.get_epsilon(DELTA) < EPS


def test_minibatch_solver_event_noise_and_info():
    prob = sampled_problem()
    res = noisy_gd(prob, Unconstrained(), epsilon=EPS, delta=DELTA, rng=np.random.default_rng(1), max_iter=20,
                   batch_size=20, l2_reg=1e-3)
    q = 20 / 200
    check_sampled_result(res, q, 20)
    paper = noisy_gd(prob, Unconstrained(), epsilon=EPS, delta=DELTA, rng=np.random.default_rng(1), max_iter=20,
                     batch_size=20, accounting="paper", l2_reg=1e-3)
    assert paper.noise_scale >= res.noise_scale
    assert replace_one_eps_of(2 * paper.noise_scale, q, 20, DELTA) <= EPS * (1 + 1e-3)
    for bad in (0, 201, 2.5):
        with pytest.raises(ValueError, match="batch_size"):
            noisy_gd(prob, Unconstrained(), epsilon=EPS, delta=DELTA, rng=np.random.default_rng(0), batch_size=bad)


def test_full_batch_default_unchanged():
    """The default (batch_size=None) path reproduces the original full-batch noisy GD exactly."""
    rng = np.random.default_rng(3)
    X, y = rng.standard_normal((100, 4)), rng.uniform(-1, 1, 100)
    prob = make_problem(X, y, data_norm=4.0)
    C = L2Ball(2.0)
    res = noisy_gd(prob, C, epsilon=EPS, delta=DELTA, rng=np.random.default_rng(7), l2_reg=0.01)
    T = res.n_iter  # the plan's data-independent default
    Cn = default_clip_norm(prob, C)
    z = composed_gaussian_noise_multiplier(EPS, DELTA, T)
    sigma, eta = z * 2 * Cn, 1.0 / (prob.loss.curvature * prob.x_norm**2 + 0.01)
    r = np.random.default_rng(7)
    theta, avg = np.zeros(prob.dim), np.zeros(prob.dim)
    noise = _noise.gaussian_stream(r, sigma, Cn, prob.dim, T)  # the exact noise layer, T steps drawn ahead
    for t in range(T):
        g = prob.loss.clipped_gradient_sum(prob.X, prob.y, theta, prob.row_norms, Cn)
        g = noise.add(g) / prob.n + 0.01 * theta
        theta = C.project(theta - eta * g)
        if t >= T // 2:
            avg += theta
    np.testing.assert_allclose(res.coef, avg / (T - T // 2), rtol=1e-12)
    assert res.event == dp_event.SelfComposedDpEvent(dp_event.GaussianDpEvent(z), T)


def test_minibatch_audit_calibrated_passes():
    solver_audit(solver_mechanism(noisy_gd, L2Ball(10.0), max_iter=1, batch_size=5), private=True)


def test_minibatch_audit_catches_undernoised(monkeypatch):
    real = _noisy_gd.poisson_noise_multiplier
    monkeypatch.setattr(common_mod, "poisson_noise_multiplier", lambda e, d, T, q: real(e, d, T, q) / 8)
    solver_audit(solver_mechanism(noisy_gd, L2Ball(10.0), max_iter=1, batch_size=5), private=False)


def test_minibatch_utility_fixed_seed():
    rng = np.random.default_rng(5)
    n, p = 5000, 10
    X = rng.standard_normal((n, p))
    w = rng.standard_normal(p)
    y = np.where(X @ w + 0.3 * rng.standard_normal(n) > 0, 1.0, -1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ClippingWarning)
        prob = make_problem(X, y, loss=LogisticLoss(), data_norm=2 * math.sqrt(p), fit_intercept=True)
    res = noisy_gd(prob, Unconstrained(), epsilon=1.0, delta=1e-6, rng=np.random.default_rng(0), max_iter=200,
                   batch_size=500, l2_reg=1e-4)
    acc = np.mean(np.sign(prob.X @ res.coef) == y)
    assert acc > 0.9


# ------------------------------------------------------------------------------
# Theory-driven defaults and "auto" bounds (issue 10, items 2 and 3): cheap versions of
# ``benchmarks/defaults.py`` (fewer seeds, looser thresholds), calibration and audits.


@pytest.fixture
def _no_warnings():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


@pytest.mark.usefixtures("_no_warnings")
def test_default_n_iter_closed_form():
    """T = ceil((3 (R n / (eta C z))^2 / (8 f))^(1/3)) within [10, 1000]."""
    z = gaussian_noise_multiplier(1.0, 1e-5)
    expected = math.ceil((3.0 / 8.0 * (2.0 * 400 / (0.5 * 0.7 * z)) ** 2) ** (1.0 / 3.0))
    assert default_n_iter(400, 1.0, 1e-5, radius=2.0, step_size=0.5, clip_norm=0.7) == expected
    f = curvature_share(LogisticLoss())
    assert f == pytest.approx(4 * math.exp(-3) / (1 + math.exp(-3)) ** 2)
    expected = math.ceil((3.0 / (8.0 * f) * (2.0 * 400 / (0.5 * 0.7 * z)) ** 2) ** (1.0 / 3.0))
    assert default_n_iter(400, 1.0, 1e-5, radius=2.0, step_size=0.5, clip_norm=0.7, curvature_share=f) == expected
    assert default_n_iter(10, 1e-3, 1e-5, radius=1.0, step_size=1.0, clip_norm=1.0) == 10
    assert default_n_iter(10**7, 10.0, 1e-5, radius=1.0, step_size=1.0, clip_norm=1.0) == 1000


@pytest.mark.usefixtures("_no_warnings")
def test_prior_radius_is_public_and_bounded():
    public = PublicProblem(398, 31, math.sqrt(2), 1.0, LogisticLoss(), l2_reg=1e-3)
    assert prior_radius(public, Unconstrained(), 1e-3) == pytest.approx(math.sqrt(2 * math.log(2) / 1e-3))
    assert prior_radius(public, L2Ball(3.0), 1e-3) == 3.0
    sq = PublicProblem(300, 11, math.sqrt(2), 1.0, SquaredLoss())
    assert prior_radius(sq, Unconstrained(), 0.0) == pytest.approx(1 / math.sqrt(2))
    # The plan (T, event) is a function of public values only.
    plan = plan_noisy_gd(public, Unconstrained(), epsilon=1.0, delta=1e-5, l2_reg=1e-3)
    assert plan.n_iter == default_n_iter(398, 1.0, 1e-5, radius=prior_radius(public, Unconstrained(), 1e-3),
                                         step_size=plan.info["step_size"], clip_norm=plan.info["clip_norm"],
                                         curvature_share=curvature_share(LogisticLoss()))


# ------------------------------------------------------------------------------
# Issue 11: one copy of X per fit (blockwise normalization), the large-n sampled default of noisy_gd.


RNG = np.random.default_rng(0)


def test_large_n_default_plan_is_poisson_sampled_and_batch_size_n_forces_full_batches():
    X = RNG.normal(size=(60_000, 3))
    y = (X[:, 0] > 0).astype(int)
    est = DPLogisticRegression(solver="noisy_gd", max_iter=20, random_state=0, data_norm=3.0).fit(X, y)
    assert "PoissonSampled" in repr(est.dp_event_) and neighboring_relation(est.dp_event_) == NeighboringRelation.REPLACE_ONE
    full = DPLogisticRegression(solver="noisy_gd", max_iter=20, random_state=0, data_norm=3.0,
                                batch_size=60_000).fit(X, y)
    assert "PoissonSampled" not in repr(full.dp_event_)
    assert abs(est.score(X, y) - full.score(X, y)) < 0.02


# ------------------------------------------------------------------------------
# Sparse-aware fitting: CSR input is never densified, and peak memory stays small.


@pytest.fixture
def no_densify(monkeypatch):
    def refuse(self, *args, **kwargs):
        raise AssertionError("a sparse matrix was densified")

    for cls in (sp.csr_matrix, sp.csc_matrix, sp.coo_matrix, sp.csr_array, sp.csc_array, sp.coo_array):
        monkeypatch.setattr(cls, "toarray", refuse)
        monkeypatch.setattr(cls, "todense", refuse)


def _small_sparse(seed=0, n=400, p=300):
    rng = np.random.default_rng(seed)
    X = sp.random(n, p, density=0.02, format="csr", random_state=rng)
    X.data = rng.standard_normal(X.data.size)
    w = np.zeros(p)
    w[:4] = [2.0, -2.0, 1.5, 1.0]
    y = np.asarray(X @ w).ravel() + 0.05 * rng.standard_normal(n)
    return X, y


def test_minibatch_noisy_gd_never_densifies(no_densify):
    X, y = _small_sparse(2)
    Xt, x_norm, x_inf = normalize_X(X, 3.0, 2, True)
    rn = np.sqrt(np.asarray(Xt.multiply(Xt).sum(axis=1)).ravel())
    prob = Problem(Xt, np.clip(y / 3, -1, 1), SquaredLoss(), x_norm, x_inf, rn, 0.0)
    res = noisy_gd(prob, Unconstrained(), epsilon=1.0, delta=1e-5, rng=np.random.default_rng(0), max_iter=5,
                   batch_size=40, l2_reg=1e-3)
    assert np.all(np.isfinite(res.coef))
