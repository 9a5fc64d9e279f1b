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

(the maximum of the tangent plane over the cell; ``margin`` = 8 (n + 16) u times the
magnitudes involved, u = 2^-53, covers floating-point rounding). A cell is drawn with probability proportional to
its envelope mass, a point uniformly in it, and the point is kept if it lies in D and
``log U < f(theta) - log envelope``: the kept points have exactly the density proportional
to exp(f) on D (up to floating point), with no distance to the target to account for.

Partition and proposals on a fixed public schedule (issue 19, item 3). Any partition with a
valid envelope on each cell gives exact samples, so the data may choose *which* cells are
refined, but not how many: the box is cut into a 32-cell (1-D) or 16 x 16 (2-D) grid, and
each of ``_ROUNDS`` = 20 rounds halves the ``_SPLITS`` = 16 (1-D) or 32 (2-D) cells with the
largest bound ``w (1 - exp(-loose))`` on their rejected envelope mass (w the cell's envelope
mass, ``loose = 2 kappa sum_j |d_j F(c)| h_j / 2 + kappa n M ||h / 2||^2 / 2`` its looseness,
M = curvature x_norm^2 + l2_reg bounding the Hessian of F / n). Cells outside the domain are
kept with zero mass. The envelope is therefore always ``_n_cells(dim)`` cells (352 in 1-D,
2176 in 2-D), each evaluated once: the same number of objective evaluations on every dataset.
Proposals are drawn in blocks of ``_BLOCK_PROPOSALS`` = 512, every proposal of a block is
evaluated, and the first accepted ones are returned (i.i.d. proposals, so the kept points are
i.i.d. exact draws). A second block is needed only when none of the 512 is accepted, an event
of probability ``(1 - a)^512`` where ``a`` is the acceptance rate; that event (and the
arithmetic's own timing, e.g. of sparse products) is the only way the work of a draw can
depend on the data (docs/privacy.md, "What the analyst sees", states it with a measured ``a``).
"""

from __future__ import annotations

import math

import numpy as np

from ._losses import check_attrs

__all__ = ["MAX_EXACT_DIM", "check_exact_dim", "check_float_resolution", "loss_lipschitz", "glm_objective",
           "exact_glm_samples"]

#: largest number of coefficients the exact sampler accepts
MAX_EXACT_DIM = 2
#: cells per axis of the initial grid, by dimension
_INITIAL_CELLS = {1: 32, 2: 16}
#: refinement rounds, and cells halved per round by dimension (a public schedule)
_ROUNDS, _SPLITS = 20, {1: 16, 2: 32}
#: proposals drawn and evaluated per block of the rejection loop
_BLOCK_PROPOSALS = 512
#: entries of one (n, m) block of margins
_BLOCK = 2**22
#: the envelope's floating-point margin is _ROUNDING (n + 16) times the magnitudes involved (a sum of n
#: non-negative terms, each with a few ulps of error, has relative error at most about n u)
_ROUNDING = 8 * 2.0**-53


def check_exact_dim(public, solver):
    """Raise the documented ValueError (naming ``solver`` and the limit) beyond ``MAX_EXACT_DIM`` coefficients."""
    if public.dim > MAX_EXACT_DIM:
        raise ValueError(f"solver={solver!r} samples exactly for at most {MAX_EXACT_DIM} coefficients (n_features "
                         f"plus the intercept, times the outputs), got {public.dim}; use another solver.")
    check_attrs(public.loss, ("bounded_value", "single_output"), solver)


def loss_lipschitz(public, R):
    """Per-example l2 Lipschitz constant of the loss on the ball B(0, R): x_norm (x_norm R + 1) (squared,
    |y| <= 1) or x_norm (logistic). Public."""
    return public.x_norm * public.loss.derivative_bound(public.x_norm * R)


def check_float_resolution(public, kappa, R, l2_reg, solver):
    """Raise a ValueError naming epsilon when float64 cannot resolve the log-density kappa F on B(0, R).

    F <= n (phi_max + l2_reg R^2 / 2) on the ball, phi_max = (x_norm R + 1)^2 / 2 (squared) or
    x_norm R + log 2 (logistic); the envelope's rounding margin ``8 (n + 16) u kappa F`` must stay
    below 1/2, or the rejection sampler would almost never accept. Public values only.
    """
    xr = public.x_norm * R
    phi_max = public.loss.max_value(xr)
    margin = _ROUNDING * (public.n + 16) * kappa * public.n * (phi_max + 0.5 * l2_reg * R**2)
    if not margin <= 0.5:
        raise ValueError(f"epsilon is too large for solver={solver!r}: its exact sampler cannot resolve the "
                         f"log-density exp(-kappa F) in float64 (kappa = {kappa:.3g}, n = {public.n}); use a smaller "
                         "epsilon, epsilon=numpy.inf (non-private) or another solver.")


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

    F.n_terms = n
    return F


def _grid(lo, hi, k):
    """Centres and half-sides of the k^dim cells of the box [lo, hi]."""
    dim = len(lo)
    h = (hi - lo) / k
    axes = [lo[j] + h[j] * (np.arange(k) + 0.5) for j in range(dim)]
    centers = np.stack(np.meshgrid(*axes, indexing="ij"), axis=-1).reshape(-1, dim)
    return centers, np.tile(h / 2, (len(centers), 1))


def _domain_box(dim, radius, center, local_radius):
    lo, hi = np.full(dim, -radius), np.full(dim, radius)
    if center is not None:
        lo, hi = np.maximum(lo, center - local_radius), np.minimum(hi, center + local_radius)
    return lo, hi


def _inside(theta, radius, center, local_radius, slack=0.0):
    ok = np.linalg.norm(theta, axis=1) <= radius + slack
    if center is not None:
        ok &= np.linalg.norm(theta - center, axis=1) <= local_radius + slack
    return ok


def _bounds(F, kappa, curv_n, centers, half):
    """Log-envelope (tangent-plane maximum over the cell, plus the rounding margin) and its looseness bound."""
    vals, grads = F(centers, gradient=True)
    slope = kappa * np.sum(np.abs(grads) * half, axis=1)
    log_env = -kappa * vals + slope
    log_env += _ROUNDING * (F.n_terms + 16) * (np.abs(kappa * vals) + slope) + 1e-12
    # f >= f(c) + <grad f(c), theta - c> - kappa n M ||theta - c||^2 / 2 on the cell
    loose = 2.0 * slope + 0.5 * kappa * curv_n * np.sum(half**2, axis=1)
    return log_env, loose


def _split(centers, half):
    """The 2^dim children of each cell."""
    dim = centers.shape[1]
    signs = np.array(np.meshgrid(*([[-1.0, 1.0]] * dim), indexing="ij")).reshape(dim, -1).T  # (2^dim, dim)
    h = half / 2
    kids = centers[:, None, :] + signs[None, :, :] * h[:, None, :]
    return kids.reshape(-1, dim), np.repeat(h, len(signs), axis=0)


def _n_cells(dim):
    """Number of cells of every envelope in ``dim`` dimensions (public)."""
    return _INITIAL_CELLS[dim] ** dim + _ROUNDS * _SPLITS[dim] * (2**dim - 1)


def _domain_bounds(F, kappa, curv_n, centers, half, domain):
    """:func:`_bounds`, with zero envelope mass on the cells that do not meet the domain."""
    log_env, loose = _bounds(F, kappa, curv_n, centers, half)
    log_env[~_inside(centers, *domain, slack=np.linalg.norm(half, axis=1))] = -np.inf
    return log_env, loose


def _envelope(F, kappa, curv_n, lo, hi, domain):
    """Cells covering the domain, refined on the public schedule (module docstring).

    Each round halves the ``_SPLITS[dim]`` cells with the largest bound on their rejected
    envelope mass; the cell count and the number of objective evaluations are fixed by the
    dimension, whatever the data. Returns the centres, half-sides and log-envelopes.
    """
    dim = len(lo)
    centers, half = _grid(lo, hi, _INITIAL_CELLS[dim])
    log_env, loose = _domain_bounds(F, kappa, curv_n, centers, half, domain)
    for _ in range(_ROUNDS):
        logw = log_env + np.sum(np.log(2.0 * half), axis=1)
        with np.errstate(divide="ignore"):
            rejected = logw + np.log(-np.expm1(-np.maximum(loose, 0.0)))  # log of w (1 - exp(-loose))
        split = np.zeros(len(centers), dtype=bool)
        split[np.argsort(-rejected, kind="stable")[:_SPLITS[dim]]] = True
        kids, kid_half = _split(centers[split], half[split])
        kid_env, kid_loose = _domain_bounds(F, kappa, curv_n, kids, kid_half, domain)
        centers = np.concatenate([centers[~split], kids])
        half = np.concatenate([half[~split], kid_half])
        log_env = np.concatenate([log_env[~split], kid_env])
        loose = np.concatenate([loose[~split], kid_loose])
    return centers, half, log_env


def exact_glm_samples(problem, rng, *, kappa, l2_reg, curvature, radius, size=1, center=None, local_radius=None,
                      return_work=False):
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
        Public bound M on the Hessian of F / n (used by the refinement rule only).
    radius : float
        Radius of the ball B(0, radius).
    size : int, default=1
        Number of draws.
    center, local_radius : ndarray of shape (dim,) and float, default=None
        If given, D is B(0, radius) intersected with B(center, local_radius).
    return_work : bool, default=False
        Also return ``{"cells": ..., "proposals": ...}``, the work done (for the tests: the
        cell count is public, the proposal count a multiple of ``_BLOCK_PROPOSALS``).

    Returns
    -------
    ndarray of shape (size, dim)
        Independent exact draws.
    work : dict
        Only with ``return_work=True``.
    """
    dim = problem.dim
    if dim > MAX_EXACT_DIM:
        raise ValueError(f"the exact sampler needs at most {MAX_EXACT_DIM} coefficients, got {dim}.")
    F = glm_objective(problem, l2_reg)
    center = None if center is None else np.asarray(center, dtype=float)
    domain = (radius, center, local_radius)
    lo, hi = _domain_box(dim, radius, center, local_radius)
    centers, half, log_env = _envelope(F, kappa, problem.n * curvature, lo, hi, domain)
    logw = log_env + np.sum(np.log(2.0 * half), axis=1)  # envelope mass of each cell
    prob = np.exp(logw - logw.max())
    prob /= prob.sum()
    out, n_out, proposals = [], 0, 0
    while n_out < size:
        idx = rng.choice(len(centers), size=_BLOCK_PROPOSALS, p=prob)
        theta = centers[idx] + half[idx] * (2.0 * rng.random((_BLOCK_PROPOSALS, dim)) - 1.0)
        u = rng.random(_BLOCK_PROPOSALS)
        # every proposal of the block is evaluated (outside points at a public stand-in): fixed work
        inside = _inside(theta, *domain)
        log_target = -kappa * F(np.where(inside[:, None], theta, 0.0))
        ok = inside & (np.log(u) < log_target - log_env[idx])
        kept = theta[ok][: size - n_out]
        out.append(kept)
        n_out += len(kept)
        proposals += _BLOCK_PROPOSALS
    samples = np.concatenate(out)
    return (samples, {"cells": len(centers), "proposals": proposals}) if return_work else samples
