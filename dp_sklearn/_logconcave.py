"""Exact samples from the log-concave density exp(-kappa F(theta)) of a GLM on a ball (at most 2 dims).

F(theta) = sum_i phi(<x_i, theta>, y_i) + (n l2_reg / 2) ||theta||^2 is convex on all of R^p
(squared and logistic losses), so f = -kappa F is concave and every tangent plane bounds it
from above: ``f(theta) <= f(c) + <grad f(c), theta - c>`` for all theta and c. The sampler
draws from the density proportional to ``exp(f)`` restricted to the domain

    D = B(0, radius)                      (exponential sampling, BST 2014 Algorithm 2), or
    D = B(0, radius) cap B(center, r)     (the localized set C_0 of BST 2014 Algorithm 4),

by rejection from a piecewise-constant envelope: the bounding box of D is cut into k^p
cells (rectangles of sides h); on the cell with centre c the envelope is

    exp(f(c) + sum_j |d_j f(c)| h_j / 2 + margin) >= exp(f(theta))   for every theta in the cell,

(the maximum of the tangent plane over the cell; ``margin`` = 1e-9 times the magnitudes
involved covers floating-point rounding). A cell is drawn with probability proportional to
its envelope mass, a point uniformly in it, and the point is kept if it lies in D and
``log U < f(theta) - log envelope``: the kept points have exactly the density proportional
to exp(f) on D (up to floating point), with no distance to the target to account for.

Efficiency (public): the Hessian of F is at most n (curvature x_norm^2 + l2_reg) = n M, so the
target's scale along any direction is at least 1 / sqrt(kappa n M); cells of side
``1 / (2 sqrt(kappa n M))`` (capped at ``MAX_CELLS_PER_AXIS``) keep the envelope within a
constant factor of the target on the cells that carry its mass. The cell count depends on
public values only (kappa, n, M, the box); the number of rejected proposals depends on the
data (a timing side channel, as for any rejection sampler; the released value is exact).
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["MAX_EXACT_DIM", "MAX_CELLS_PER_AXIS", "check_exact_dim", "loss_lipschitz", "glm_objective", "cells_per_axis",
           "exact_glm_samples"]

#: largest number of coefficients the exact sampler accepts
MAX_EXACT_DIM = 2
#: largest number of envelope cells per axis, by dimension
MAX_CELLS_PER_AXIS = {1: 2**14, 2: 2**8}
#: entries of one (n, m) block of margins
_BLOCK = 2**22
#: relative floating-point margin of the envelope
_MARGIN = 1e-9


def check_exact_dim(public, solver):
    """Raise the documented ValueError (naming ``solver`` and the limit) beyond ``MAX_EXACT_DIM`` coefficients."""
    if public.dim > MAX_EXACT_DIM:
        raise ValueError(f"solver={solver!r} samples exactly for at most {MAX_EXACT_DIM} coefficients (n_features "
                         f"plus the intercept, times the outputs), got {public.dim}; use another solver.")
    if public.loss.name not in ("squared", "logistic"):
        raise ValueError(f"solver={solver!r} supports the squared and logistic losses, got {public.loss.name!r}.")


def loss_lipschitz(public, R):
    """Per-example l2 Lipschitz constant of the loss on the ball B(0, R): x_norm (x_norm R + 1) (squared,
    |y| <= 1) or x_norm (logistic). Public."""
    if public.loss.name == "squared":
        return public.x_norm * public.loss.derivative_bound(public.x_norm * R)
    return public.x_norm * public.loss.derivative_bound()


def glm_objective(problem, l2_reg):
    """``F(Thetas, gradient=False)``: sum of losses + (n l2_reg / 2) ||theta||^2 for each row of Thetas.

    Evaluated in blocks of rows (bounded memory); dense or CSR ``problem.X``. With
    ``gradient=True`` returns ``(values (m,), gradients (m, dim))``.
    """
    X, loss, n = problem.X, problem.loss, problem.n
    y = np.asarray(problem.y, dtype=float).reshape(-1, 1)

    def F(thetas, gradient=False):
        thetas = np.atleast_2d(np.asarray(thetas, dtype=float))
        m = len(thetas)
        vals = np.empty(m)
        grads = np.empty_like(thetas) if gradient else None
        step = max(1, _BLOCK // max(n, 1))
        for a in range(0, m, step):
            T = thetas[a:a + step]
            Z = np.asarray(X @ T.T)
            vals[a:a + step] = loss.phi(Z, y).sum(axis=0) + 0.5 * n * l2_reg * np.sum(T**2, axis=1)
            if gradient:
                grads[a:a + step] = np.asarray(X.T @ loss.dphi(Z, y)).T + n * l2_reg * T
        return (vals, grads) if gradient else vals

    return F


def cells_per_axis(width, kappa, n, curvature, dim):
    """Public number of envelope cells per axis: side <= 1 / (2 sqrt(kappa n M)), between 16 and the cap."""
    k = math.ceil(2.0 * width * math.sqrt(max(kappa * n * curvature, 0.0)))
    return int(min(max(k, 16), MAX_CELLS_PER_AXIS[dim]))


def _domain_box(dim, radius, center, local_radius):
    lo, hi = np.full(dim, -radius), np.full(dim, radius)
    if center is not None:
        lo, hi = np.maximum(lo, center - local_radius), np.minimum(hi, center + local_radius)
    return lo, hi


def _inside(theta, radius, center, local_radius):
    ok = np.linalg.norm(theta, axis=1) <= radius
    if center is not None:
        ok &= np.linalg.norm(theta - center, axis=1) <= local_radius
    return ok


def _envelope(F, kappa, lo, hi, k, radius, center, local_radius):
    """Cell centres, sides and log-envelopes of the cells that can meet the domain."""
    dim = len(lo)
    h = (hi - lo) / k
    axes = [lo[j] + h[j] * (np.arange(k) + 0.5) for j in range(dim)]
    centers = np.stack(np.meshgrid(*axes, indexing="ij"), axis=-1).reshape(-1, dim)
    half_diag = float(np.linalg.norm(h)) / 2
    keep = np.linalg.norm(centers, axis=1) <= radius + half_diag
    if center is not None:
        keep &= np.linalg.norm(centers - center, axis=1) <= local_radius + half_diag
    centers = centers[keep]
    vals, grads = F(centers, gradient=True)
    slope = kappa * (np.abs(grads) @ (h / 2))
    log_env = -kappa * vals + slope
    log_env += _MARGIN * (1.0 + np.abs(kappa * vals) + slope)
    return centers, h, log_env


def exact_glm_samples(problem, rng, *, kappa, l2_reg, curvature, radius, size=1, center=None, local_radius=None):
    """``size`` exact draws from the density proportional to exp(-kappa F) on the domain D.

    Parameters
    ----------
    problem : Problem
        Normalized data with at most ``MAX_EXACT_DIM`` coefficients; a convex loss.
    rng : numpy.random.Generator
        Source of the randomness.
    kappa : float
        Inverse temperature (> 0).
    l2_reg : float
        Mean-scale ridge strength of F.
    curvature : float
        Public bound M on the Hessian of F / n (sets the cell size only).
    radius : float
        Radius of the ball B(0, radius).
    size : int, default=1
        Number of draws.
    center, local_radius : ndarray of shape (dim,) and float, default=None
        If given, D is B(0, radius) intersected with B(center, local_radius).

    Returns
    -------
    ndarray of shape (size, dim)
        Independent exact draws.
    """
    dim = problem.dim
    if dim > MAX_EXACT_DIM:
        raise ValueError(f"the exact sampler needs at most {MAX_EXACT_DIM} coefficients, got {dim}.")
    F = glm_objective(problem, l2_reg)
    center = None if center is None else np.asarray(center, dtype=float)
    lo, hi = _domain_box(dim, radius, center, local_radius)
    k = cells_per_axis(float(np.max(hi - lo)), kappa, problem.n, curvature, dim)
    centers, h, log_env = _envelope(F, kappa, lo, hi, k, radius, center, local_radius)
    prob = np.exp(log_env - log_env.max())
    prob /= prob.sum()
    out, n_out, batch = [], 0, int(min(4096, max(64, 8 * size)))
    while n_out < size:
        idx = rng.choice(len(centers), size=batch, p=prob)
        theta = centers[idx] + h * (rng.random((batch, dim)) - 0.5)
        u = rng.random(batch)
        inside = _inside(theta, radius, center, local_radius)
        ok = np.zeros(batch, dtype=bool)
        if inside.any():
            ok[inside] = np.log(u[inside]) < -kappa * F(theta[inside]) - log_env[idx[inside]]
        kept = theta[ok][: size - n_out]
        out.append(kept)
        n_out += len(kept)
    return np.concatenate(out)
