"""Objective perturbation with data-dependent regularization for ridge regression.

Thakurta (2013) dissertation, Algorithm 4.2 and Theorems 4.4 / 4.7 (Section 4.4). With
the eigendecomposition X^T X + c I = U diag(lambda_i) U^T (c = n l2_reg, the user's
ridge) the objective, in sum scale, is::

    L(theta; D) = 1/2 ||y - X theta||^2 + c/2 ||theta||^2 + 1/2 theta^T U S U^T theta + <b, theta>,
    S = diag(max(0, Delta - lambda_i)),

over the l2 ball C of radius R = ``coef_radius``: ridge is added only in the
eigen-directions where the data are weaker than Delta, so the Hessian is
H = U diag(max(lambda_i, Delta)) U^T (the regularizer is taken in the eigenbasis,
U S U^T -- the dissertation digest's caveat: a diagonal S in the canonical basis does
not give this Hessian). The minimizer over the ball is computed from the same
eigendecomposition (a trust-region subproblem with H >= Delta I: z_i = r_i / (h_i + mu)
in the eigenbasis, mu >= 0 the root of the secular equation), never from a
data-dependent iteration count.

Privacy (replace-one neighbours, ||x|| <= B = x_norm, |y| <= 1; derived here, the
dissertation's constants are for add/remove rows with ||x|| <= sqrt(p) and are looser):

* Jacobian. M = X^T X + c I changes by x' x'^T - x x^T. Removing x lowers every
  eigenvalue; adding x' raises them by a_i >= 0 with sum a_i = ||x'||^2 <= B^2
  (interlacing), and max(lambda + a, Delta) / max(lambda, Delta) <= 1 + a / Delta, so
  det H' / det H <= prod (1 + a_i / Delta) <= exp(B^2 / Delta): eps_J = B^2 / Delta
  (Lemma 4.5 of the dissertation, with 1 + t <= e^t).
* Gradient difference. grad L(theta; D) = H theta - X^T y + b, so
  g(theta) = (H - H') theta - (x y - x' y'). The map M -> U max(Lambda, Delta) U^T is
  the spectral function of the 1-Lipschitz t -> max(t, Delta), hence 1-Lipschitz in
  Frobenius norm: ||H - H'||_F <= ||x x^T - x' x'^T||_F <= sqrt(2) B^2; and
  ||x y - x' y'|| <= 2 B. So ||g|| <= zeta = sqrt(2) B^2 R + 2 B.
* Noise term. The privacy loss at the output is
  Z = log(det H / det H') + (2 <b, g> + ||g||^2) / (2 sigma^2) (proof of Theorem 4.7, with
  b the noise drawn, b ~ N(0, sigma^2 I)). The first part of <b, g> is
  <(H - H') b, theta> <= R ||A b|| with A = H - H' a FIXED matrix (it depends on D and D'
  only), and ||A b|| is sigma ||A||_op-Lipschitz in b/sigma with mean <= sigma ||A||_F, so
  P[R ||A b|| > sigma sqrt(2) B^2 R (1 + t1)] <= exp(-t1^2 / 2) (Gaussian concentration);
  the second part is <= max(|<x + x', b>|, |<x - x', b>|), each N(0, sigma^2 ||x +- x'||^2)
  with ||x +- x'|| <= 2 B: P[> 2 B sigma t2] <= 4 Q(t2). Hence, outside an event of
  probability delta1 (split in halves: t1 = sqrt(2 log(2 / delta1)), 4 Q(t2) = delta1 / 2),
  Z <= eps_J + K / sigma + zeta^2 / (2 sigma^2), K = sqrt(2) B^2 R (1 + t1) + 2 B t2, and
  P[Z > eps] <= delta1 is sufficient for (eps, delta1)-DP. sigma is the positive root of
  zeta^2 u^2 / 2 + K u = eps1 - eps_J, u = 1 / sigma. This bound is dimension-free, as the
  dissertation's Theorem 4.7, but it does not rely on a fixed direction of g (which the
  data-dependent Hessian does not have).

Delta = B^2 / (JACOBIAN_SHARE * eps1). Constraints: Theorem 4.7 covers a convex C (the
normal-cone term of the change of variables is the same under D and D'). The release
is stated as ``EpsilonDeltaDpEvent(epsilon, delta)``.
"""

from __future__ import annotations

import math

import numpy as np
import scipy.linalg
import scipy.optimize
import scipy.sparse as sp
from scipy.stats import norm

from .._accounting import EpsilonDeltaDpEvent
from .._losses import check_attrs
from .._sets import Unconstrained, bounded_domain
from ._base import Plan, register
from ._common import check_gram_dim
from .. import _noise

__all__ = ["objective_perturbation_ddr", "plan_objective_perturbation_ddr", "ddr_sigma", "JACOBIAN_SHARE"]

#: share of epsilon spent on the Jacobian (the Hessian determinant ratio)
JACOBIAN_SHARE = 0.25


def ddr_sigma(x_norm, radius, epsilon, delta, jacobian_epsilon):
    """sigma of the noise b for the bound of the module docstring (public values only)."""
    B, R = x_norm, radius
    zeta = math.sqrt(2.0) * B**2 * R + 2.0 * B
    t1 = math.sqrt(2.0 * math.log(2.0 / delta))
    t2 = norm.isf(delta / 8.0)
    K = math.sqrt(2.0) * B**2 * R * (1.0 + t1) + 2.0 * B * t2
    rest = epsilon - jacobian_epsilon
    u = (-K + math.sqrt(K**2 + 2.0 * zeta**2 * rest)) / zeta**2
    return 1.0 / u, zeta


def plan_objective_perturbation_ddr(public, constraint, *, epsilon, delta, l2_reg=0.0, coef_radius=None):
    """Delta, sigma and the event of :func:`objective_perturbation_ddr` (public values only)."""
    if not isinstance(constraint, Unconstrained):
        raise TypeError(f"solver 'objective_perturbation_ddr' fits the penalized objective only, "
                        f"got {type(constraint).__name__}.")
    check_attrs(public.loss, ("gram_path",), "objective_perturbation_ddr")
    check_gram_dim(public.dim, "objective_perturbation_ddr")
    radius = public.loss.prior_coef_norm if coef_radius is None else float(coef_radius)
    ball = bounded_domain(constraint, public.loss, public.x_norm, radius=radius)
    eps_j = JACOBIAN_SHARE * float(epsilon)
    big_delta = public.x_norm**2 / eps_j
    sigma, zeta = ddr_sigma(public.x_norm, radius, float(epsilon), float(delta), eps_j)
    event = EpsilonDeltaDpEvent(float(epsilon), float(delta))
    return Plan(event, float(epsilon), float(delta), 1, sigma, ball,
                {"Delta": big_delta, "zeta": zeta, "jacobian_epsilon": eps_j, "radius": radius, "l2_reg": l2_reg})


def _ball_quadratic_min(h, r, radius):
    """argmin_z 1/2 sum h_i z_i^2 - <r, z> over ||z|| <= radius, h > 0 (trust-region subproblem)."""
    z = r / h
    if np.linalg.norm(z) <= radius:
        return z

    def excess(mu):
        return np.linalg.norm(r / (h + mu)) - radius

    hi = np.linalg.norm(r) / radius  # ||r / (h + mu)|| <= ||r|| / mu
    mu = scipy.optimize.brentq(excess, 0.0, hi, xtol=1e-300, rtol=4 * np.finfo(float).eps, maxiter=500)
    return r / (h + mu)


def run_objective_perturbation_ddr(problem, plan, rng):
    """Eigendecompose X^T X + cI, floor its eigenvalues at Delta, draw b, minimize over the ball."""
    info, X, d = plan.info, problem.X, problem.dim
    gram = X.T @ X
    gram = gram.toarray() if sp.issparse(gram) else np.array(gram, dtype=float)
    gram[np.diag_indices_from(gram)] += problem.n * info["l2_reg"]
    lam, U = scipy.linalg.eigh(gram)
    h = np.maximum(lam, info["Delta"])
    b = _noise.gaussian(rng, plan.noise_scale, size=d)
    r = U.T @ (np.asarray(X.T @ problem.y).ravel() - b)
    return U @ _ball_quadratic_min(h, r, plan.constraint.l2_radius())


@register("objective_perturbation_ddr", plan=plan_objective_perturbation_ddr, pure_dp=False, constraints=("none",), requires=("gram_path",))
def objective_perturbation_ddr(problem, constraint, *, epsilon, delta, rng, l2_reg=0.0, coef_radius=None, plan=None):
    """Objective perturbation with data-dependent regularization (Thakurta 2013, Algorithm 4.2).

    See the module docstring for the objective and the privacy proof.

    Parameters
    ----------
    problem : Problem
        Normalized data (dense or CSR; X is never densified, X^T X is p x p), squared loss.
    constraint : Unconstrained
        Only the explicitly penalized (ridge) objective; the minimizer is taken over
        ``L2Ball(coef_radius)``.
    epsilon, delta : float
        Target; ``delta`` must be in (0, 1).
    rng : numpy.random.Generator
        Source of the noise.
    l2_reg : float, default=0.0
        The user's mean-scale ridge strength (``n l2_reg`` is added to X^T X before the floor).
    coef_radius : float, default=None
        Radius R of the l2 ball (normalized units); ``None`` uses the squared loss's
        ``prior_coef_norm``.
    plan : Plan, default=None
        A plan from :func:`plan_objective_perturbation_ddr` (computed if ``None``).

    Returns
    -------
    SolverResult
        The minimizer of the perturbed objective over the ball.

    References
    ----------
    A. G. Thakurta, "Beyond worst case sensitivity in private data analysis", PhD
    dissertation, Penn State, 2013, Section 4.4, Algorithm 4.2, Theorems 4.4 and 4.7.
    """
    if plan is None:
        plan = plan_objective_perturbation_ddr(problem, constraint, epsilon=epsilon, delta=delta, l2_reg=l2_reg,
                                               coef_radius=coef_radius)
    return plan.result(run_objective_perturbation_ddr(problem, plan, rng))
