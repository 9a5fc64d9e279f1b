"""The Gram-matrix gradient path (dp_sklearn/_gram.py): same released coefficients as the per-row path."""

import numpy as np
import pytest

from dp_sklearn import _gram
from dp_sklearn._gram import GramGradient, gram_applies
from dp_sklearn._losses import LogisticLoss, SquaredLoss
from dp_sklearn._sets import L0Set, L1Ball, L2Ball, Unconstrained, bounded_domain
from dp_sklearn.solvers._common import clipped_sum_source
from dp_sklearn.solvers._frank_wolfe import plan_frank_wolfe, run_frank_wolfe
from dp_sklearn.solvers._frank_wolfe_gaussian import plan_frank_wolfe_gaussian, run_frank_wolfe_gaussian
from dp_sklearn.solvers._mirror_descent import plan_mirror_descent, run_mirror_descent
from dp_sklearn.solvers._noisy_gd import plan_noisy_gd, run_noisy_gd
from solver_helpers import random_problem as _problem, public_of as _public


# ------------------------------------------------------------------------------
# Speed work (issue 11) changes no released value: same seed -> same coefficients.
#
# * the in-place clipped gradient sum equals the plain formula (every loss, dense / CSR);
# * the old per-step loops (reference copies below) and the new ones agree to 1e-10;
# * the Gram path (squared loss, clip norm that can never bind) releases the same
#   coefficients as the data path, and is never taken when clipping could bind.


EPS, DELTA = 1.0, 1e-5


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
