"""Noisy (projected) gradient descent, full batch.

Bassily, Smith & Thakurta, FOCS 2014, Algorithm 1 (here with full batches and
per-example gradient clipping to a public norm, Abadi et al., CCS 2016), so the
mechanism is private for any data. T, the step size and the noise are functions of
hyperparameters, n and the public bounds only (SPEC P4).
"""

from __future__ import annotations

import math

import numpy as np
from dp_accounting import dp_event

from .._accounting import composed_gaussian_noise_multiplier
from .._sets import L2Ball, Unconstrained
from ._base import SolverResult, register


#: default clip norm as a fraction of the public row bound x_norm
CLIP_FRACTION = 0.5


def default_clip_norm(problem, constraint):
    """Data-independent clip norm ``CLIP_FRACTION * x_norm``.

    Per-example gradients are phi' x with ||x|| <= x_norm and |phi'| <= 1 (logistic;
    the squared loss's residual is in [-2, 2] when predictions stay in the target
    range). Clipping at half the worst case trades a little bias on large residuals
    for half the noise (Abadi et al. 2016 recommend clipping below the maximum norm);
    privacy holds for any clip norm.
    """
    return CLIP_FRACTION * problem.x_norm


def default_n_iter(n, epsilon):
    """Data-independent number of full-batch steps: grows with n * epsilon, within [10, 200]."""
    return int(min(200, max(10, math.ceil(math.sqrt(n * epsilon) / 2))))


@register("noisy_gd", pure_dp=False, constraints=("none", "l1", "l2"))
def noisy_gd(problem, constraint, *, epsilon, delta, rng, max_iter=None, l2_reg=0.0,
             clip_norm=None, accounting="tight", **_):
    """theta_{t+1} = P_C(theta_t - eta (g_t + l2_reg theta_t)), g_t = (clipped sum + N(0, sigma^2 I)) / n.

    Each step releases a clipped gradient sum of l2 sensitivity 2 C (replace-one).
    Tight accounting: T Gaussian steps compose exactly into one Gaussian (Dong, Roth &
    Su 2019), so sigma = sqrt(T) z(epsilon, delta) 2C. ``accounting="paper"``: BST
    Algorithm 1's sigma^2 = 32 L^2 T log(1/delta)... expressed per full-batch step via
    the advanced-composition calibration sigma = 2C sqrt(8 T log(1/delta)) / epsilon
    (valid for epsilon <= 1 in BST; the exact Gaussian composition certifies it here).
    Returns the average of the second half of the iterates (suffix averaging,
    Rakhlin, Shamir & Sridharan, ICML 2012).
    """
    T = int(max_iter) if max_iter is not None else default_n_iter(problem.n, epsilon)
    C = float(clip_norm) if clip_norm is not None else default_clip_norm(problem, constraint)
    if accounting == "paper":
        z = math.sqrt(8 * T * math.log(1 / delta)) / epsilon
        z = max(z, composed_gaussian_noise_multiplier(epsilon, delta, T))
    else:
        z = composed_gaussian_noise_multiplier(epsilon, delta, T)
    sigma = z * 2.0 * C
    smooth = problem.loss.curvature * problem.x_norm**2 + l2_reg
    eta = 1.0 / smooth
    X, y, loss, n = problem.X, problem.y, problem.loss, problem.n
    if loss.name == "squared" and isinstance(constraint, Unconstrained):
        # Keep every prediction inside the target range: |<x, theta>| <= 1 for all
        # ||x|| <= x_norm. Inactive for sensible fits; stops noise-driven drift.
        constraint = L2Ball(1.0 / problem.x_norm)
    theta = np.zeros(problem.dim)
    avg = np.zeros_like(theta)
    start = T // 2
    for t in range(T):
        g = loss.clipped_gradient_sum(X, y, theta, problem.row_norms, C)
        g = (g + rng.normal(0.0, sigma, size=theta.size)) / n + l2_reg * theta
        theta = constraint.project(theta - eta * g)
        if t >= start:
            avg += theta
    coef = avg / (T - start)
    event = dp_event.SelfComposedDpEvent(dp_event.GaussianDpEvent(z), T)
    return SolverResult(coef, event, float(epsilon), float(delta), T, z,
                        {"clip_norm": C, "step_size": eta, "sigma": sigma})
