"""Non-private minimizers whose distance to the exact minimizer is certified.

Output and objective perturbation are private for the exact minimizer theta* of a
mu-strongly convex objective; they pay for the distance of the released point to
theta* (see ``docs/privacy.md``, "Exact-minimizer mechanisms"). :func:`minimize`
returns, whenever ``l2_reg = mu > 0``, a point theta with ``||theta - theta*|| <= tol / mu``
on every dataset, proved as follows.

F(theta) = f(theta) + i_C(theta) with f = mean loss + (mu/2)||theta||^2 + <linear, theta>,
mu-strongly convex and L-smooth with the public ``L = curvature * x_norm^2 + mu``
(the per-example Hessian is at most ``curvature * ||x_i||^2 <= curvature * x_norm^2``).

* Unconstrained: strong convexity gives ``||theta - theta*|| <= ||grad f(theta)|| / mu``.
* Constrained: the projected gradient map ``T(z) = P_C(z - grad f(z) / L)`` is a
  contraction with factor ``1 - mu / L`` and fixed point theta*. (``g = f - (mu/2)||.||^2``
  is convex and (L - mu)-smooth, so ``z - grad g(z) / (L - mu)`` is nonexpansive by the
  co-coercivity of ``grad g`` (Baillon-Haddad; Beck, "First-Order Methods in Optimization",
  SIAM 2017, Thm 5.8); ``z - grad f(z) / L`` is (1 - mu/L) times it, and P_C is
  nonexpansive. Beck 2017, Thm 10.29 proves the weaker factor ``sqrt(1 - mu / L)`` for
  general proximal steps.) Hence ``||T(z) - theta*|| <= (1 - mu/L) (||T(z) - z|| + ||T(z) - theta*||)``,
  i.e. ``||T(z) - theta*|| <= (L - mu) ||T(z) - z|| / mu``, and T(z) is released.

Floating point: the computed gradient differs from the exact one by at most
``_Objective.gradient``'s bound (standard dot-product error ``gamma_k = k u / (1 - k u)``,
u = 2^-53, for the margins (k = n_features) and for ``X^T phi'`` (k = n), the Lipschitz
constant ``curvature`` of phi', a few ulps for phi', the penalty and the sums), and the
certificate adds it, with every computed norm inflated by ``1 + 1e-6``, before comparing
with ``tol``. If the fast solvers cannot certify ``tol`` (ill-conditioning, rounding),
:func:`minimize` runs projected gradient descent from 0 for the number of steps that the
contraction needs from the public distance bound ``R0 >= ||theta*||``: the release is then
within ``tol / mu`` whatever the data, and no exception is raised. Without strong convexity
(``l2_reg == 0``, used only by non-private epsilon=inf fits) nothing is certified.
"""

from __future__ import annotations

import math

import numpy as np
import scipy.linalg
import scipy.sparse as sp
from scipy.optimize import minimize as _sp_minimize

from ._sets import L2Ball, Unconstrained

__all__ = ["minimize"]

_U = 2.0**-53  # unit roundoff of float64
_MARGIN = 1.0 + 1e-6  # inflation of every computed norm (covers the error of the norm itself)


def _gamma(k):
    return k * _U / (1.0 - k * _U)


class _Objective:
    """f(theta) = mean loss + (l2_reg/2)||theta||^2 + <linear, theta>, with a rounding-error bound."""

    def __init__(self, problem, l2_reg, linear):
        self.X, self.y, self.loss = problem.X, problem.y, problem.loss
        self.mu = float(l2_reg)
        self.linear = linear
        self.lin_norm = 0.0 if linear is None else float(np.linalg.norm(linear))
        self.x_norm = float(problem.x_norm) * _MARGIN
        self.L = float(problem.loss.curvature) * self.x_norm**2 * _MARGIN + self.mu

    def __call__(self, theta):
        f, g = self.loss.value_and_gradient(self.X, self.y, theta)
        f += 0.5 * self.mu * theta @ theta
        g = g + self.mu * theta
        if self.linear is not None:
            f += self.linear @ theta
            g = g + self.linear
        return f, g

    def gradient(self, theta):
        """Computed gradient and a bound on its distance to the exact gradient at ``theta``."""
        loss, X = self.loss, self.X
        n, p = X.shape
        d = loss.dphi(loss.margins(X, theta), self.y)
        g = np.asarray(X.T @ d).ravel() / n + self.mu * theta
        if self.linear is not None:
            g = g + self.linear
        d_max = float(np.max(np.abs(d) if d.ndim == 1 else np.linalg.norm(d, axis=1))) if n else 0.0
        t_norm = float(np.linalg.norm(theta))
        # |computed margin - exact margin| <= gamma_p ||x_i|| ||theta|| (l2 over classes too)
        margin_err = _gamma(p) * self.x_norm * t_norm
        d_err = float(self.loss.curvature) * margin_err + (self.loss.n_outputs + 8) * _U * (d_max + 1.0)
        err = (self.x_norm * d_err + (_gamma(n) + 2 * _U) * self.x_norm * d_max
               + 4 * _U * (self.mu * t_norm + self.lin_norm + float(np.linalg.norm(g))))
        return g, err * _MARGIN


def _projection_error(constraint, w):
    """Bound on ||computed P_C(w) - exact P_C(w)||."""
    if isinstance(constraint, Unconstrained):
        return 0.0
    d, w_norm = w.size, float(np.linalg.norm(w))
    if isinstance(constraint, L2Ball):
        return (d + 8) * _U * w_norm
    # l1 ball (sort + cumsum threshold): |error of tau| <= 2 gamma_d (||w||_1 + radius)
    radius = constraint.l2_radius()
    radius = radius if np.isfinite(radius) else 0.0
    return 4 * (d + 2) * _U * (math.sqrt(d) * (float(np.abs(w).sum()) + radius) + w_norm)


#: fallback step counts below this are cheaper than FISTA with its certificate checks
_CHEAP_FALLBACK = 500
#: FISTA iterations before the (certified, data-independent) fallback takes over
_MAX_FISTA = 20000


class _Uncertifiable(Exception):
    """Floating-point rounding alone exceeds the tolerance at this point."""


def _certified_step(obj, constraint, z, tol):
    """Return ``T(z)`` if ``||T(z) - theta*|| <= tol / mu`` is proved, else None."""
    g, err = obj.gradient(z)
    L, mu = obj.L, obj.mu
    w = z - g / L
    x = constraint.project(w)
    e = err / L + 2 * _U * (float(np.linalg.norm(z)) + float(np.linalg.norm(g)) / L) + _projection_error(constraint, w)
    if not L * e <= tol:
        # The rounding floor alone exceeds the tolerance (e.g. a huge noise vector in the
        # objective): no iterate can be certified, so the caller goes to the fallback now.
        raise _Uncertifiable
    bound = _MARGIN * (L - mu) * float(np.linalg.norm(z - x)) + L * e  # = mu * (distance bound)
    return x if bound <= tol else None  # False for NaN


def _certified_unconstrained(obj, theta, tol):
    g, err = obj.gradient(theta)
    return _MARGIN * float(np.linalg.norm(g)) + err <= tol


def _public_radius(obj, constraint):
    """Public R0 >= ||theta*||: ||grad f(0)|| <= |phi'(0, y)| x_norm + ||linear|| = G0, then
    mu ||theta*|| <= G0 (unconstrained) or <= 2 G0 (over a set containing 0), and the set's radius."""
    g0 = float(obj.loss.derivative_bound(0.0)) * obj.x_norm + obj.lin_norm
    if isinstance(constraint, Unconstrained):
        return g0 / obj.mu
    return min(float(constraint.l2_radius()), 2.0 * g0 / obj.mu)


def _fallback_n_steps(obj, constraint, tol):
    """Projected gradient steps from 0 after which ``(1 - mu/L)^k R0 <= tol / (2 mu)`` (public)."""
    r0 = _public_radius(obj, constraint) * _MARGIN
    target = tol / (2.0 * obj.mu)
    if r0 <= target:
        return 0
    return int(math.ceil(math.log(target / r0) / math.log1p(-obj.mu / obj.L)))


def _fallback(obj, constraint, dim, tol):
    """Data-independent projected gradient descent with step 1/L from 0.

    After k = :func:`_fallback_n_steps` steps the exact iterate is within
    ``(1 - mu/L)^k R0 <= tol / (2 mu)`` of theta*; the rounding error of each step
    (bounded as in the certificate) is contracted by the later steps, so it adds at
    most ``max_t e_t / (mu / L)``, below ``tol / (2 mu)`` whenever ``tol`` exceeds
    twice ``L`` times the per-step rounding bound (about 1e-12 for unit-scale problems).
    """
    theta = constraint.project(np.zeros(dim))
    for _ in range(_fallback_n_steps(obj, constraint, tol)):
        _, g = obj(theta)
        theta = constraint.project(theta - g / obj.L)
    return theta


def _ridge_closed_form(problem, l2_reg, linear):
    X, y = problem.X, problem.y
    n, d = X.shape
    rhs = np.asarray(X.T @ y).ravel() / n
    if linear is not None:
        rhs = rhs - linear
    if sp.issparse(X) or d > 4000:
        from scipy.sparse.linalg import LinearOperator, cg

        op = LinearOperator((d, d), matvec=lambda v: np.asarray(X.T @ (X @ v)).ravel() / n + l2_reg * v)
        theta, _ = cg(op, rhs, rtol=1e-14, atol=0.0, maxiter=10 * d + 1000)
        return theta
    A = (X.T @ X) / n
    A[np.diag_indices_from(A)] += l2_reg
    return scipy.linalg.solve(A, rhs, assume_a="pos")


def _unconstrained_fast(problem, fun, l2_reg, linear, tol, max_iter):
    """Closed form / Newton / L-BFGS, then Newton-CG polishing to ``tol / 2``."""
    dim = problem.dim
    if problem.loss.gram_path and l2_reg > 0:
        theta = _ridge_closed_form(problem, l2_reg, linear)
    elif problem.loss.n_outputs == 1 and not sp.issparse(problem.X) and dim <= 500 and l2_reg > 0:
        theta = _dense_newton(problem, fun, l2_reg, tol / 2)
    else:
        res = _sp_minimize(fun, np.zeros(dim), jac=True, method="L-BFGS-B",
                           options={"maxiter": max_iter, "gtol": 1e-14, "ftol": 1e-16, "maxcor": 30})
        theta = res.x
    return _newton_polish(problem, fun, theta, l2_reg, tol / 2)


def minimize(problem, constraint=None, l2_reg=0.0, linear=None, tol=1e-8, max_iter=100000):
    """Minimize mean loss + (l2_reg/2)||theta||^2 + <linear, theta> over ``constraint``.

    Parameters
    ----------
    problem : Problem
        Normalized data; its rows must satisfy ``||x_i|| <= problem.x_norm``.
    constraint : Unconstrained, L2Ball, L1Ball, L1Penalty or None
        Feasible set, a ball centred at 0 (None means unconstrained), or a penalty with a
        proximal map (``is_penalty``: solved by accelerated proximal gradient, uncertified).
    l2_reg : float
        Mean-scale ridge coefficient mu >= 0 (the strong-convexity modulus).
    linear : ndarray of shape (dim,) or None
        Linear term (objective perturbation's b / n).
    tol : float
        With ``l2_reg > 0``: the returned theta satisfies ``||theta - theta*|| <= tol / l2_reg``
        (certified, see the module docstring). With ``l2_reg == 0``: a stopping tolerance
        on the gradient (mapping) norm, not certified.
    max_iter : int
        Iteration budget of the fast solvers; beyond it the certified fallback runs.

    Returns
    -------
    ndarray of shape (dim,)
        The coefficients theta (certified when ``l2_reg > 0``).

    References
    ----------
    A. Beck, "First-Order Methods in Optimization", SIAM 2017, Thm 5.8 (co-coercivity)
    and Thm 10.29 (linear convergence of projected gradient, strongly convex case).
    """
    constraint = constraint if constraint is not None else Unconstrained()
    obj = _Objective(problem, l2_reg, linear)
    dim = problem.dim
    if getattr(constraint, "is_penalty", False):  # a penalty's proximal map: the non-private fit only
        return _accelerated_projected_gradient(obj, constraint, dim, tol, max_iter, certify=False)
    if isinstance(constraint, Unconstrained):
        with np.errstate(all="ignore"):
            theta = _unconstrained_fast(problem, obj, l2_reg, linear, tol, max_iter)
        if l2_reg <= 0 or _certified_unconstrained(obj, theta, tol):
            return theta
        return _fallback(obj, constraint, dim, tol)
    if l2_reg > 0 and _fallback_n_steps(obj, constraint, tol) <= _CHEAP_FALLBACK:
        # Well-conditioned (mu close to L): the certified fixed-step method is the fast path.
        return _fallback(obj, constraint, dim, tol)
    theta = _accelerated_projected_gradient(obj, constraint, dim, tol, min(max_iter, _MAX_FISTA))
    return theta if theta is not None else _fallback(obj, constraint, dim, tol)


def _dense_newton(problem, fun, l2_reg, tol, max_iter=100):
    """Damped Newton with the exact dense Hessian X^T diag(phi'') X / n + l2_reg I (small d)."""
    X, y, loss = problem.X, problem.y, problem.loss
    n, d = X.shape
    theta = np.zeros(d)
    f, g = fun(theta)
    for _ in range(max_iter):
        gnorm = np.linalg.norm(g)
        if gnorm <= tol:
            break
        w = loss.d2phi_times(X @ theta, y, np.ones(n)) / n
        H = (X.T * w) @ X
        H[np.diag_indices_from(H)] += l2_reg
        step = -scipy.linalg.solve(H, g, assume_a="pos")
        t = 1.0
        while t > 1e-12:
            f_new, g_new = fun(theta + t * step)
            if f_new <= f + 1e-4 * t * (g @ step) or (f_new <= f and np.linalg.norm(g_new) < gnorm):
                break
            t *= 0.5
        theta, f, g = theta + t * step, f_new, g_new
    return theta


def _newton_polish(problem, fun, theta, l2_reg, tol, max_iter=50):
    """Newton-CG steps with backtracking until ||grad F|| <= tol (quadratic convergence)."""
    from scipy.sparse.linalg import LinearOperator, cg

    X, y, loss = problem.X, problem.y, problem.loss
    f, g = fun(theta)
    for _ in range(max_iter):
        gnorm = np.linalg.norm(g)
        if not gnorm > tol:
            break
        op = LinearOperator((theta.size, theta.size),
                            matvec=lambda v: loss.hessian_vector(X, y, theta, v) + l2_reg * v)
        step, _ = cg(op, -g, rtol=min(0.1, np.sqrt(gnorm)), maxiter=max(100, 2 * theta.size))
        t = 1.0
        while t > 1e-10:
            f_new, g_new = fun(theta + t * step)
            if f_new <= f + 1e-4 * t * (g @ step) or np.linalg.norm(g_new) < gnorm:
                break
            t *= 0.5
        theta, f, g = theta + t * step, f_new, g_new
    return theta


def _accelerated_projected_gradient(obj, constraint, dim, tol, max_iter, certify=True):
    """FISTA with backtracking (Beck & Teboulle 2009) stopped by the certificate.

    With ``obj.mu > 0`` returns the certified point :func:`_certified_step` of the first
    iterate whose backtracked gradient mapping is below ``tol / 2``, or None after
    ``max_iter`` iterations; with ``mu == 0`` the last iterate (nothing to certify).
    The step is the feasible set's proximal map ``prox(v, 1 / L)`` (its projection, or
    the penalty's proximal operator); ``certify=False`` (penalties, for the non-private
    fit) stops on the gradient mapping alone.
    """
    mu = obj.mu if certify else 0.0
    x = constraint.prox(np.zeros(dim), 1.0)
    z, t, L = x.copy(), 1.0, 1.0
    fz, gz = obj(z)
    for _ in range(max_iter):
        while True:
            x_new = constraint.prox(z - gz / L, 1.0 / L)
            diff = x_new - z
            f_new, g_new = obj(x_new)
            if f_new <= fz + gz @ diff + 0.5 * L * diff @ diff + 1e-15 * abs(fz) or not np.isfinite(L):
                break
            L *= 2.0
        if mu <= 0 and L * np.linalg.norm(diff) <= tol:
            return x_new
        if mu > 0 and L * np.linalg.norm(diff) <= 0.5 * tol:
            try:
                cert = _certified_step(obj, constraint, x_new, tol)
            except _Uncertifiable:
                return None
            if cert is not None:
                return cert
        if mu > 0:
            q = math.sqrt(min(mu / L, 1.0))
            beta = (1 - q) / (1 + q)
        else:
            t_new = 0.5 * (1 + math.sqrt(1 + 4 * t * t))
            beta = (t - 1) / t_new
            t = t_new
        z = x_new + beta * (x_new - x)
        x = x_new
        fz, gz = obj(z)
        if f_new < fz and mu == 0:  # restart (O'Donoghue & Candes 2015)
            z, fz, gz, t = x_new, f_new, g_new, 1.0
    return x if mu <= 0 else None
