"""Exponential sampling over an l2 ball (pure epsilon-DP), with an exact sampler in low dimension.

Bassily, Smith & Thakurta, "Private empirical risk minimization: efficient algorithms
and tight error bounds" (FOCS 2014), Algorithm 2 (A_exp-samp), Theorems III.1 and III.2:
output theta in C with density proportional to

    exp(-kappa (sum_i l(theta; d_i) + n l2_reg / 2 ||theta||^2)),   kappa = epsilon / (2 L ||C||_2),

with L the per-example Lipschitz constant of l on C and ||C||_2 = 2 R the diameter of
the ball of radius R. Privacy (replace-one, derived as in the proof of Theorem III.1):
the log-density ratio between neighbours is -kappa u(theta) + log E_D[exp(kappa u)] with
u = l(.; d) - l(.; d'), which is 2 L-Lipschitz on C, so its oscillation over C is at most
2 L ||C||_2 and the ratio is at most exp(kappa 2 L ||C||_2) = exp(epsilon). The ridge term
does not depend on the data.

Sampler. The privacy proof needs EXACT samples (a sampler at total-variation distance
eta would only give (epsilon, eta (1 + e^epsilon))-DP). This module samples exactly, by
rejection from a piecewise-constant envelope built from the tangent planes of the concave
log-density (:mod:`dp_sklearn._logconcave`), for ``dim <= MAX_EXACT_DIM = 2`` coefficients
only (the intercept counts); with more, ``plan_exponential_sampling`` raises a ``ValueError``
before any data is touched. No total-variation error is accounted: the released value has
exactly the density above.

``epsilon = inf`` returns the exact minimizer of the same objective over the ball
(``NonPrivateDpEvent``), as the estimators' non-private path does.
"""

from __future__ import annotations

import numpy as np
from dp_accounting import dp_event

from .._accounting import EpsilonDeltaDpEvent
from .._exact import minimize
from .._logconcave import (MAX_EXACT_DIM, check_exact_dim, check_float_resolution, exact_glm_samples, glm_objective,
                           loss_lipschitz)
from .._sets import L2Ball, Unconstrained, bounded_domain
from ._base import Plan, register

__all__ = ["exponential_sampling", "plan_exponential_sampling", "exact_samples", "MAX_EXACT_DIM"]

_objective = glm_objective  # F(Theta) for the rows of Theta (kept for the tests)


def _ball(public, constraint, coef_radius, solver):
    if not isinstance(constraint, (Unconstrained, L2Ball)):
        raise TypeError(f"{solver} needs an l2 ball, got {type(constraint).__name__}.")
    radius = public.loss.prior_coef_norm if coef_radius is None else float(coef_radius)
    return bounded_domain(constraint, public.loss, public.x_norm, radius=radius)


def plan_exponential_sampling(public, constraint, *, epsilon, delta=0.0, l2_reg=0.0, coef_radius=None):
    """kappa, the Lipschitz constants and the (epsilon, 0) event (public values only)."""
    check_exact_dim(public, "exponential_sampling")
    ball = _ball(public, constraint, coef_radius, "exponential_sampling")
    R = ball.l2_radius()
    lip = loss_lipschitz(public, R)
    kappa = float(epsilon) / (2.0 * lip * 2.0 * R)
    check_float_resolution(public, kappa, R, l2_reg, "exponential_sampling")
    curvature = public.loss.curvature * public.x_norm**2 + l2_reg
    return Plan(EpsilonDeltaDpEvent(float(epsilon), 0.0), float(epsilon), 0.0, 1, kappa, ball,
                {"kappa": kappa, "lipschitz": lip, "diameter": 2.0 * R, "l2_reg": l2_reg, "curvature": curvature})


def exact_samples(problem, plan, rng, size=1):
    """``size`` exact draws from the exponential-sampling density of ``plan`` (rejection sampling)."""
    info = plan.info
    return exact_glm_samples(problem, rng, kappa=info["kappa"], l2_reg=info["l2_reg"], curvature=info["curvature"],
                             radius=plan.constraint.l2_radius(), size=size)


@register("exponential_sampling", plan=plan_exponential_sampling, pure_dp=True, constraints=("l2",),
          max_dim=MAX_EXACT_DIM, requires=("bounded_value", "single_output"))
def exponential_sampling(problem, constraint, *, epsilon, delta=0.0, rng, l2_reg=0.0, coef_radius=None, plan=None):
    """One exact draw of Algorithm 2 of Bassily, Smith & Thakurta (2014); see the module docstring.

    Parameters
    ----------
    problem : Problem
        Normalized data with at most ``MAX_EXACT_DIM`` columns; squared or logistic loss.
    constraint : Unconstrained or L2Ball
        Feasible set; ``Unconstrained`` is replaced by ``L2Ball(coef_radius)``.
    epsilon : float
        Pure privacy parameter (> 0); ``numpy.inf`` returns the exact minimizer.
    delta : float, default=0.0
        Ignored (the mechanism is (epsilon, 0)-DP).
    rng : numpy.random.Generator
        Source of the randomness.
    l2_reg : float, default=0.0
        Mean-scale ridge strength added to the objective (data-independent).
    coef_radius : float, default=None
        Radius R of the ball (normalized units) when ``constraint`` is unbounded; ``None``
        uses the loss's ``prior_coef_norm``.
    plan : Plan, default=None
        A plan from :func:`plan_exponential_sampling` (computed if ``None``).

    Returns
    -------
    SolverResult
        The sample; ``noise_scale`` is kappa.

    Raises
    ------
    ValueError
        If the problem has more than ``MAX_EXACT_DIM`` coefficients or an unsupported loss, or if epsilon is so large that float64
        cannot resolve the sampled log-density (:func:`dp_sklearn._logconcave.check_float_resolution`).

    References
    ----------
    R. Bassily, A. Smith and A. Thakurta, "Private empirical risk minimization: efficient
    algorithms and tight error bounds", FOCS 2014, Algorithm 2, Theorems III.1 and III.2.
    """
    if plan is None and epsilon == np.inf:
        check_exact_dim(problem, "exponential_sampling")
        ball = _ball(problem, constraint, coef_radius, "exponential_sampling")
        coef = minimize(problem, ball, l2_reg=l2_reg)
        return Plan(dp_event.NonPrivateDpEvent(), np.inf, 0.0, 1, 0.0, ball).result(coef)
    if plan is None:
        plan = plan_exponential_sampling(problem, constraint, epsilon=epsilon, delta=delta, l2_reg=l2_reg,
                                         coef_radius=coef_radius)
    return plan.result(exact_samples(problem, plan, rng, size=1)[0])
