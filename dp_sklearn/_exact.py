"""Non-private minimizers with a certified gradient(-mapping) tolerance (SPEC P5).

``minimize(problem, constraint, l2_reg, linear=None, tol=...)`` returns ``theta``
with ``||theta - theta_star|| <= tol / mu`` whenever the objective is mu-strongly
convex: for unconstrained problems ``||grad F(theta)|| <= tol``; for constrained
ones ``theta = P_C(z - grad F(z) / L)`` with ``||L (z - theta)|| <= tol`` (then
``F(theta) - F* <= tol^2 / (2 mu)`` and so ``||theta - theta_star|| <= tol / mu``;
Beck, "First-Order Methods in Optimization", 2017, Thm 10.9 with Lemma 10.4).
"""

from __future__ import annotations

import numpy as np
import scipy.linalg
import scipy.sparse as sp
from scipy.optimize import minimize as _sp_minimize

from ._sets import Unconstrained

__all__ = ["minimize", "ToleranceNotReachedError"]


class ToleranceNotReachedError(RuntimeError):
    """The exact-minimizer solver could not certify the requested tolerance."""


def _objective(problem, l2_reg, linear):
    X, y, loss = problem.X, problem.y, problem.loss

    def fun(theta):
        f, g = loss.value_and_gradient(X, y, theta)
        f += 0.5 * l2_reg * theta @ theta
        g = g + l2_reg * theta
        if linear is not None:
            f += linear @ theta
            g = g + linear
        return f, g

    return fun


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


def minimize(problem, constraint=None, l2_reg=0.0, linear=None, tol=1e-8, max_iter=100000):
    """Minimize mean loss + (l2_reg/2)||theta||^2 + <linear, theta> over ``constraint``.

    Parameters
    ----------
    problem : Problem
    constraint : feasible set or None
    l2_reg : float
        Mean-scale ridge coefficient.
    linear : ndarray of shape (dim,) or None
        Linear term (objective perturbation's b / n).
    tol : float
        Certified bound on the gradient (mapping) norm at the returned point.

    Returns
    -------
    theta : ndarray of shape (dim,)

    Raises
    ------
    ToleranceNotReachedError
        When the tolerance cannot be certified (float precision); the caller should
        raise ``tol``.
    """
    constraint = constraint if constraint is not None else Unconstrained()
    fun = _objective(problem, l2_reg, linear)
    dim = problem.dim
    if isinstance(constraint, Unconstrained):
        if problem.loss.name == "squared" and l2_reg > 0:
            theta = _ridge_closed_form(problem, l2_reg, linear)
        elif problem.loss.n_outputs == 1 and not sp.issparse(problem.X) and dim <= 500 and l2_reg > 0:
            theta = _dense_newton(problem, fun, l2_reg, tol)
        else:
            res = _sp_minimize(fun, np.zeros(dim), jac=True, method="L-BFGS-B",
                               options={"maxiter": max_iter, "gtol": 1e-14, "ftol": 1e-16, "maxcor": 30})
            theta = res.x
        theta, g = _newton_polish(problem, fun, theta, l2_reg, tol)
        if np.linalg.norm(g) > tol:
            raise ToleranceNotReachedError(
                f"could not reach gradient norm <= tol={tol:g} (got {np.linalg.norm(g):.3g}); increase tol."
            )
        return theta
    return _accelerated_projected_gradient(fun, constraint, dim, l2_reg, tol, max_iter)


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
        if gnorm <= tol:
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
    return theta, g


def _accelerated_projected_gradient(fun, constraint, dim, mu, tol, max_iter):
    """FISTA with backtracking (Beck & Teboulle 2009) and a certified stopping rule."""
    x = constraint.project(np.zeros(dim))
    z = x.copy()
    t = 1.0
    L = 1.0
    fz, gz = fun(z)
    for _ in range(max_iter):
        while True:
            x_new = constraint.project(z - gz / L)
            diff = x_new - z
            f_new, g_new = fun(x_new)
            if f_new <= fz + gz @ diff + 0.5 * L * diff @ diff + 1e-15 * abs(fz):
                break
            L *= 2.0
        if L * np.linalg.norm(diff) <= tol:
            return x_new
        if mu > 0:
            q = mu / L
            beta = (1 - np.sqrt(q)) / (1 + np.sqrt(q))
        else:
            t_new = 0.5 * (1 + np.sqrt(1 + 4 * t * t))
            beta = (t - 1) / t_new
            t = t_new
        z = x_new + beta * (x_new - x)
        x = x_new
        fz, gz = fun(z)
        if f_new < fz and mu == 0:  # restart (O'Donoghue & Candes 2015)
            z, fz, gz, t = x_new, f_new, g_new, 1.0
    raise ToleranceNotReachedError(f"projected gradient did not reach tol={tol:g} in {max_iter} iterations.")
