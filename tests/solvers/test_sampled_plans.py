"""Poisson-sampled steps of mirror_descent and frank_wolfe_gaussian (shared with noisy_gd through
dp_sklearn.solvers._common.gradient_steps_plan): calibration against the replace-one closed form,
the large-n default plan from public values, audits with negative controls."""

import numpy as np
import pytest
from dp_accounting import dp_event

from dp_sklearn._losses import SquaredLoss
from dp_sklearn._sets import L1Ball, L2Ball
from dp_sklearn.solvers._base import PublicProblem
import dp_sklearn.solvers._common as common_mod
from dp_sklearn.solvers._common import MIN_BATCH, default_sampling_rate
from dp_sklearn.solvers._frank_wolfe_gaussian import frank_wolfe_gaussian, plan_frank_wolfe_gaussian
from dp_sklearn.solvers._mirror_descent import mirror_descent, plan_mirror_descent

from solver_helpers import (DELTA, EPS, check_sampled_result, replace_one_hockey_stick_delta, sampled_problem,
                            solver_audit, solver_mechanism)

SOLVERS = [(mirror_descent, L1Ball(2.0)), (mirror_descent, L2Ball(2.0)), (frank_wolfe_gaussian, L2Ball(2.0))]
PLANS = [(plan_mirror_descent, L1Ball(1.0)), (plan_frank_wolfe_gaussian, L2Ball(1.0))]


@pytest.mark.parametrize("solver, constraint", SOLVERS)
def test_sampled_event_noise_and_closed_form(solver, constraint):
    prob = sampled_problem()
    res = solver(prob, constraint, epsilon=EPS, delta=DELTA, rng=np.random.default_rng(1), max_iter=1, batch_size=40)
    q = 40 / 200
    zp = check_sampled_result(res, q, 1)
    # one sampled step meets (EPS, DELTA) exactly for the replace-one mixture pair (quadrature)
    assert replace_one_hockey_stick_delta(EPS, zp, q) == pytest.approx(DELTA, rel=0.02)
    with pytest.raises(ValueError, match="full-batch calibration"):
        solver(prob, constraint, epsilon=EPS, delta=DELTA, rng=np.random.default_rng(1), max_iter=1, batch_size=40,
               accounting="paper")
    for bad in (0, 201, 2.5):
        with pytest.raises(ValueError, match="batch_size"):
            solver(prob, constraint, epsilon=EPS, delta=DELTA, rng=np.random.default_rng(0), batch_size=bad)


@pytest.mark.parametrize("plan, constraint", PLANS)
def test_large_n_default_plan_is_sampled_from_public_values(plan, constraint):
    big = PublicProblem(10**6, 11, 1.0, 1.0, SquaredLoss(), 0.0)
    p = plan(big, constraint, epsilon=1.0, delta=1e-6)
    q = default_sampling_rate(10**6, p.n_iter, 1.0, 1e-6)
    assert p.info["sampling_rate"] == q and q * 10**6 >= MIN_BATCH and q < 0.25
    assert p.event == dp_event.SelfComposedDpEvent(
        dp_event.PoissonSampledDpEvent(q, dp_event.GaussianDpEvent(2 * p.noise_scale)), p.n_iter)
    # the noise on the mean gradient stays within a few % of the full-batch plan's
    full = plan(big, constraint, epsilon=1.0, delta=1e-6, batch_size="full")
    assert full.info["sampling_rate"] == 1.0 and "Poisson" not in repr(full.event)
    assert p.info["sigma"] / (q * 10**6) == pytest.approx(full.info["sigma"] / 10**6, rel=0.05)
    for n in (30_000, 50_000):  # noisy_gd samples from n = 40,000; these solvers from 100,000
        small = plan(PublicProblem(n, 11, 1.0, 1.0, SquaredLoss(), 0.0), constraint, epsilon=1.0, delta=1e-6)
        assert small.info["sampling_rate"] == 1.0
    paper = plan(big, constraint, epsilon=1.0, delta=1e-6, accounting="paper")
    assert paper.info["sampling_rate"] == 1.0  # the papers' calibrations are full-batch ones


@pytest.mark.parametrize("solver, constraint", [(mirror_descent, L2Ball(10.0)), (frank_wolfe_gaussian, L2Ball(10.0))])
def test_sampled_audit_calibrated_passes(solver, constraint):
    solver_audit(solver_mechanism(solver, constraint, max_iter=1, batch_size=5), private=True)


@pytest.mark.parametrize("solver, constraint", [(mirror_descent, L2Ball(10.0)), (frank_wolfe_gaussian, L2Ball(10.0))])
def test_sampled_audit_catches_undernoised(solver, constraint, monkeypatch):
    real = common_mod.poisson_noise_multiplier
    monkeypatch.setattr(common_mod, "poisson_noise_multiplier", lambda e, d, T, q: real(e, d, T, q) / 8)
    solver_audit(solver_mechanism(solver, constraint, max_iter=1, batch_size=5), private=False)
