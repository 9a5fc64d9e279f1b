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
eta would only give (epsilon, eta (1 + e^epsilon))-DP). This module samples exactly by
rejection from a piecewise-constant envelope: the box [-R, R]^p is cut into k^p cubes of
side h; on a cube with center c (projected onto the ball, c'), the log-density
f = -kappa F is within G ||theta - c'|| <= G h sqrt(p) / 2 of f(c') for every theta of the
ball in the cube (G = kappa (n L + n l2_reg R) bounds ||grad f|| on the ball, and
projection onto the ball is non-expansive), so exp(f(c') + G h sqrt(p) / 2) dominates the
density there. A cube is drawn with probability proportional to its envelope mass, a
point uniformly in it, and the point is accepted if it lies in the ball and
U < exp(f(theta) - f(c') - G h sqrt(p) / 2): the accepted point has exactly the target
density (up to floating point). Each proposal is accepted with probability at least
exp(-G h sqrt(p)) times the ball's share of the cubes; h = 1 / (G sqrt(p)) when the cube
budget allows, so the cost is about (epsilon n sqrt(p) / 4)^p loss evaluations: the
exact sampler is offered for ``dim <= MAX_EXACT_DIM`` coefficients only.

This mechanism is not in the estimators' solver lists (every registered solver must pass
scikit-learn's checks, whose data have more than two features); call
:func:`exponential_sampling` directly with a :class:`~dp_sklearn._data.Problem`.
"""

from __future__ import annotations

import math

import numpy as np

from .._accounting import EpsilonDeltaDpEvent
from .._sets import L2Ball, Unconstrained, bounded_domain
from ._base import Plan

__all__ = ["exponential_sampling", "plan_exponential_sampling", "exact_samples", "MAX_EXACT_DIM"]

#: largest number of coefficients the exact sampler accepts
MAX_EXACT_DIM = 2
#: largest number of envelope cubes
CELL_BUDGET = 2**18


def plan_exponential_sampling(public, constraint, *, epsilon, delta=0.0, l2_reg=0.0, coef_radius=None):
    """kappa, the Lipschitz constants and the (epsilon, 0) event (public values only)."""
    if public.dim > MAX_EXACT_DIM:
        raise ValueError(f"exponential_sampling samples exactly for at most {MAX_EXACT_DIM} coefficients "
                         f"(including the intercept), got {public.dim}.")
    if public.loss.name not in ("squared", "logistic"):
        raise ValueError(f"exponential_sampling supports the squared and logistic losses, got {public.loss.name!r}.")
    if not isinstance(constraint, (Unconstrained, L2Ball)):
        raise TypeError(f"exponential_sampling needs an l2 ball, got {type(constraint).__name__}.")
    radius = public.loss.prior_coef_norm if coef_radius is None else float(coef_radius)
    ball = bounded_domain(constraint, public.loss.name, public.x_norm, radius=radius)
    R = ball.l2_radius()
    if public.loss.name == "squared":
        lip = public.x_norm * public.loss.derivative_bound(public.x_norm * R)
    else:
        lip = public.x_norm * public.loss.derivative_bound()
    kappa = float(epsilon) / (2.0 * lip * 2.0 * R)
    grad_bound = kappa * public.n * (lip + l2_reg * R)
    return Plan(EpsilonDeltaDpEvent(float(epsilon), 0.0), float(epsilon), 0.0, 1, kappa, ball,
                {"kappa": kappa, "lipschitz": lip, "diameter": 2.0 * R, "grad_bound": grad_bound, "l2_reg": l2_reg})


def _objective(problem, l2_reg):
    """F(Theta) for the rows of Theta (m, dim): sum of losses plus the ridge term, shape (m,)."""
    def F(thetas):
        z = problem.X @ thetas.T  # (n, m)
        y = np.asarray(problem.y, dtype=float).reshape(-1, 1)
        return problem.loss.phi(z, y).sum(axis=0) + 0.5 * problem.n * l2_reg * np.sum(thetas**2, axis=1)
    return F


def _cells(dim, R, grad_bound):
    """Centers (projected onto the ball) and half-diagonal of the envelope cubes."""
    k = max(1, math.ceil(2 * R * grad_bound * math.sqrt(dim)))
    k = min(k, int(CELL_BUDGET ** (1.0 / dim)))
    h = 2 * R / k
    axis = -R + h * (np.arange(k) + 0.5)
    centers = np.stack(np.meshgrid(*([axis] * dim), indexing="ij"), axis=-1).reshape(-1, dim)
    half_diag = h * math.sqrt(dim) / 2
    centers = centers[np.linalg.norm(centers, axis=1) <= R + half_diag]
    norms = np.maximum(np.linalg.norm(centers, axis=1, keepdims=True), R)
    return centers, centers * (R / norms), h, half_diag


def exact_samples(problem, plan, rng, size=1):
    """``size`` exact draws from the exponential-sampling density of ``plan`` (rejection sampling)."""
    info, R, dim = plan.info, plan.constraint.l2_radius(), problem.dim
    F = _objective(problem, info["l2_reg"])
    centers, proj, h, half_diag = _cells(dim, R, info["grad_bound"])
    f_c = -info["kappa"] * F(proj)
    log_env = f_c + info["grad_bound"] * half_diag
    p = np.exp(log_env - log_env.max())
    p /= p.sum()
    out, batch = [], min(4096, 64 * size)
    while len(out) < size:
        idx = rng.choice(len(centers), size=batch, p=p)
        theta = centers[idx] + h * (rng.random((batch, dim)) - 0.5)
        inside = np.linalg.norm(theta, axis=1) <= R
        u = rng.random(batch)
        ok = np.zeros(batch, dtype=bool)
        ok[inside] = np.log(u[inside]) < -info["kappa"] * F(theta[inside]) - log_env[idx[inside]]
        out.extend(theta[ok][: size - len(out)])
    return np.asarray(out)


def exponential_sampling(problem, constraint, *, epsilon, delta=0.0, rng, l2_reg=0.0, coef_radius=None, plan=None):
    """One exact draw of Algorithm 2 of Bassily, Smith & Thakurta (2014); see the module docstring.

    Parameters
    ----------
    problem : Problem
        Normalized data with at most ``MAX_EXACT_DIM`` columns; squared or logistic loss.
    constraint : Unconstrained or L2Ball
        Feasible set; ``Unconstrained`` is replaced by ``L2Ball(coef_radius)``.
    epsilon : float
        Pure privacy parameter (finite, > 0).
    delta : float, default=0.0
        Ignored (the mechanism is (epsilon, 0)-DP).
    rng : numpy.random.Generator
        Source of the randomness.
    l2_reg : float, default=0.0
        Mean-scale ridge strength added to the objective (data-independent).
    coef_radius : float, default=None
        Radius R of the ball (normalized units); ``None`` uses the loss's ``prior_coef_norm``.
    plan : Plan, default=None
        A plan from :func:`plan_exponential_sampling` (computed if ``None``).

    Returns
    -------
    SolverResult
        The sample; ``noise_scale`` is kappa.

    Raises
    ------
    ValueError
        If the problem has more than ``MAX_EXACT_DIM`` coefficients or an unsupported loss.

    References
    ----------
    R. Bassily, A. Smith and A. Thakurta, "Private empirical risk minimization: efficient
    algorithms and tight error bounds", FOCS 2014, Algorithm 2, Theorems III.1 and III.2.
    """
    if plan is None:
        plan = plan_exponential_sampling(problem, constraint, epsilon=epsilon, delta=delta, l2_reg=l2_reg,
                                         coef_radius=coef_radius)
    return plan.result(exact_samples(problem, plan, rng, size=1)[0])
