"""Accelerated noisy GD with the public step: calibration, audit with negative control, convergence, default rule."""

import math
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from dp_accounting import dp_event

import dp_sklearn.solvers._noisy_agd as agd
from dp_sklearn import DPLogisticRegression
from dp_sklearn._accounting import gaussian_noise_multiplier
from dp_sklearn._exact import minimize
from dp_sklearn._losses import LogisticLoss, MultinomialLoss, SquaredLoss
from dp_sklearn._losses._weighted import WeightedLoss
from dp_sklearn._sets import L2Ball, Unconstrained
from dp_sklearn.ledger import compose_epsilon
from dp_sklearn.solvers import SOLVERS
from dp_sklearn.solvers._base import PublicProblem
from dp_sklearn.solvers._noisy_newton import MAX_DIM

from solver_helpers import (DELTA, EPS, check_tight_gaussian_calibration, glm_problem, solver_audit,
                            solver_mechanism, undernoise_gaussian_steps)


def test_registered_for_the_penalized_smooth_losses():
    spec = SOLVERS["noisy_agd"]
    assert spec.constraints == ("none",) and spec.requires == ("smooth",) and not spec.pure_dp
    assert spec.params == ("max_iter", "l2_reg", "clip_norm")
    assert "noisy_agd" in DPLogisticRegression()._allowed_solvers()


def test_calibration_matches_the_closed_form():
    check_tight_gaussian_calibration(agd.noisy_agd, Unconstrained(), EPS, DELTA, 30)
    public = PublicProblem(1000, 5000, 1.0, 1.0, LogisticLoss())
    plan = agd.plan_noisy_agd(public, Unconstrained(), epsilon=EPS, delta=DELTA, l2_reg=0.01)
    T = agd.default_n_iter(1000, EPS, DELTA)
    z1 = gaussian_noise_multiplier(EPS, DELTA)
    assert T == min(100, max(20, math.ceil(agd.KAPPA * (1000 / z1) ** (1 / 3))))
    assert plan.n_iter == T == plan.info["passes"]
    assert plan.noise_scale == pytest.approx(math.sqrt(T) * z1, rel=1e-3)  # T releases: sqrt(T) x one release
    assert plan.event == dp_event.SelfComposedDpEvent(dp_event.GaussianDpEvent(plan.noise_scale), T)
    assert compose_epsilon([plan.event], DELTA) <= EPS * (1 + 1e-3)
    assert plan.info["clip_norm"] == 0.5 and plan.info["sigma"] == pytest.approx(plan.noise_scale * 2 * 0.5)
    assert plan.info["step_size"] == pytest.approx(1 / (0.25 * 1.0 + 0.01))  # 1 / (c B^2 + l2_reg)


def test_plan_refuses_before_the_data():
    with pytest.raises(ValueError, match="delta"):
        agd.plan_noisy_agd(PublicProblem(100, 3, 1.0, 1.0, SquaredLoss()), Unconstrained(), epsilon=EPS, delta=0.0)
    with pytest.raises(TypeError, match="penalized"):
        agd.plan_noisy_agd(PublicProblem(100, 3, 1.0, 1.0, SquaredLoss()), L2Ball(1.0), epsilon=EPS, delta=DELTA)


def test_audit_passes_and_catches_undernoised(monkeypatch):
    mech = solver_mechanism(agd.noisy_agd, Unconstrained(), max_iter=3)
    solver_audit(mech, private=True)
    undernoise_gaussian_steps(monkeypatch, factor=10)
    solver_audit(mech, private=False)


@pytest.mark.parametrize("loss", [SquaredLoss(), LogisticLoss()])
def test_noise_free_iteration_reaches_the_exact_minimizer(loss):
    prob = glm_problem(loss, n=400, p=4, seed=1)
    lam = 0.01
    exact = minimize(prob, None, l2_reg=lam, tol=1e-12)
    res = agd.noisy_agd(prob, Unconstrained(), epsilon=np.inf, delta=DELTA, rng=np.random.default_rng(0),
                        max_iter=400, l2_reg=lam, clip_norm=10.0)
    assert isinstance(res.event, dp_event.NonPrivateDpEvent)
    np.testing.assert_allclose(res.coef, exact, rtol=1e-5, atol=1e-6)


def test_default_n_iter_grows_with_n_epsilon_within_its_bounds():
    Ts = [agd.default_n_iter(n, eps, 1e-6) for n, eps in [(100, 0.5), (10_000, 1.0), (10_000, 5.0), (10**7, 1.0)]]
    assert Ts[0] == agd.MIN_ITER and Ts[1] < Ts[2] and Ts[3] == agd.MAX_ITER
    assert agd.default_n_iter(10_000, np.inf, 1e-6) == agd.MAX_ITER


def test_default_rule_reads_public_values_only():
    for p, loss, expected in [(MAX_DIM + 1, LogisticLoss(), True), (MAX_DIM, LogisticLoss(), False),
                              (3 * (MAX_DIM + 1), MultinomialLoss(3), False), (MAX_DIM + 1, SquaredLoss(), False)]:
        assert agd.agd_applies(PublicProblem(500, p, 1.0, 1.0, loss), 1.0, 1e-5) is expected
    assert not agd.agd_applies(PublicProblem(500, MAX_DIM + 1, 1.0, 1.0, LogisticLoss()), np.inf, 1e-5)
    assert not agd.agd_applies(PublicProblem(500, MAX_DIM + 1, 1.0, 1.0, LogisticLoss()), 1.0, 0.0)


def test_squared_loss_rule_is_n_over_z_at_any_dim():
    z = gaussian_noise_multiplier(1.0, 1e-6)
    n_min = math.ceil(agd.SQUARED_MIN_N_OVER_Z * z)
    for p in (5, MAX_DIM + 1):
        assert agd.agd_applies(PublicProblem(n_min, p, 1.0, 1.0, SquaredLoss()), 1.0, 1e-6)
        assert not agd.agd_applies(PublicProblem(n_min - 1, p, 1.0, 1.0, SquaredLoss()), 1.0, 1e-6)
    assert not agd.agd_applies(PublicProblem(10**9, 5, 1.0, 1.0, SquaredLoss()), np.inf, 1e-6)
    assert not agd.agd_applies(PublicProblem(10**9, 5, 1.0, 1.0, SquaredLoss()), 1.0, 0.0)


@pytest.mark.parametrize("loss, share", [(SquaredLoss(), 0.5), (LogisticLoss(), 0.9)])
def test_released_average_starts_at_the_loss_share(loss, share):
    """The plan carries the share; the run averages exactly the iterates from int(share T) on."""
    assert agd.average_from(loss) == share
    assert agd.average_from(WeightedLoss(loss, 2.0)) == share
    prob = glm_problem(loss, n=300, p=3, seed=2)
    plan = agd.plan_noisy_agd(prob, Unconstrained(), epsilon=1.0, delta=DELTA, max_iter=20)
    assert plan.info["average_from"] == share
    coef = agd.run_noisy_agd(prob, plan, np.random.default_rng(3))
    plan.info["average_from"] = 0.95  # the last iterate only (int(0.95 * 20) = 19)
    last = agd.run_noisy_agd(prob, plan, np.random.default_rng(3))
    assert not np.allclose(coef, last)


def test_logistic_default_takes_accelerated_gd_above_max_dim():
    """Sparse binary text-like data with more than MAX_DIM columns: "auto" is noisy_agd, T passes, a useful fit."""
    rng = np.random.default_rng(0)
    n, p = 3000, MAX_DIM + 500
    rest = sp.random(n, p - 20, density=0.004, random_state=1, format="csr")
    rest.data[:] = 1.0
    X = sp.hstack([sp.csr_matrix((rng.random((n, 20)) < 0.3).astype(float)), rest], format="csr")
    norms = np.sqrt(np.asarray(X.multiply(X).sum(axis=1))).ravel()
    X = sp.diags(1 / np.maximum(norms, 1e-12)) @ X
    y = (np.asarray(X[:, :10].sum(axis=1)).ravel() > np.asarray(X[:, 10:20].sum(axis=1)).ravel()).astype(int)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = DPLogisticRegression(random_state=0, epsilon=5.0, data_norm=1.0).fit(X, y)
        assert m.solver_ == "noisy_agd" and m.n_iter_ == agd.default_n_iter(3000, 5.0, 1e-5)
        assert m.score(X, y) > 0.75
        assert DPLogisticRegression(random_state=0, batch_size=500, data_norm=1.0).fit(X, y).solver_ == "noisy_gd"
        y3 = rng.integers(0, 3, size=n)
        assert DPLogisticRegression(random_state=0, data_norm=1.0).fit(X, y3).solver_ == "noisy_gd"


def test_dask_input_gives_the_in_memory_coefficients():
    """"auto" above MAX_DIM columns runs blockwise on dask input with the in-memory fit's coefficients."""
    da = pytest.importorskip("dask.array")
    rng = np.random.default_rng(0)
    X = rng.normal(size=(600, MAX_DIM + 100)) / math.sqrt(MAX_DIM + 100)
    y = (X[:, 0] > 0).astype(int)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mem = DPLogisticRegression(random_state=0, data_norm=1.5).fit(X, y)
        dsk = DPLogisticRegression(random_state=0, data_norm=1.5).fit(da.from_array(X, chunks=(200, X.shape[1])),
                                                                    da.from_array(y, chunks=200))
    assert mem.solver_ == dsk.solver_ == "noisy_agd"
    np.testing.assert_allclose(dsk.coef_, mem.coef_, rtol=1e-10, atol=1e-12)
