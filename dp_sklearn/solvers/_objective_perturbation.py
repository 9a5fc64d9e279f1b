"""Objective perturbation with approximate-minimum output noise.

Thakurta (2013) dissertation, Algorithm 3.1 and Theorem 3.8 (= Kifer, Smith &
Thakurta, COLT 2012); Talwar, Thakurta & Zhang, "Private ERM beyond the worst
case", Algorithm 2. Inexact minimization is paid for as in approximate minima
perturbation (Iyengar et al., IEEE S&P 2019, Algorithm 1); see ``docs/privacy.md``.

Replace-one neighbours: the change of variables b(theta; D) differs
between neighbours by grad l(theta; d) - grad l(theta; d'), of norm <= 2 zeta, so
the noise of Theorem 3.8 is calibrated with 2 zeta; the Jacobian ratio is still
<= (1 + lambda / Delta)^rank (rank-one Hessians; rank K-1 for the multinomial loss).
"""

from __future__ import annotations

import math

from dp_accounting import dp_event

from .._accounting import EpsilonDeltaDpEvent, gaussian_noise_multiplier
from .._exact import minimize
from .._sets import L2Ball, bounded_domain
from ._base import Plan, norm_gamma_noise, register

__all__ = ["objective_perturbation", "plan_objective_perturbation", "run_objective_perturbation", "AMP_SHARE"]

#: share of (epsilon, delta) spent on the output noise that pays for inexactness
AMP_SHARE = 0.01


def _zeta(problem, constraint):
    loss = problem.loss
    if loss.name == "squared":
        return problem.x_norm * loss.derivative_bound(problem.x_norm * constraint.l2_radius())
    return problem.x_norm * loss.derivative_bound()


def plan_objective_perturbation(public, constraint, *, epsilon, delta, tol=1e-8, l2_reg=0.0, coef_radius=None):
    """Delta, the noise scales and the event of :func:`objective_perturbation` (public values only)."""
    loss = public.loss
    coef_radius = loss.prior_coef_norm if coef_radius is None else float(coef_radius)
    if loss.name == "squared":  # its gradient is unbounded on R^d: a ball of radius coef_radius
        constraint = bounded_domain(constraint, "squared", public.x_norm, radius=coef_radius)
    dim = public.dim
    eps1, eps2 = (1 - AMP_SHARE) * epsilon, AMP_SHARE * epsilon
    delta1, delta2 = (1 - AMP_SHARE) * delta, AMP_SHARE * delta
    zeta = _zeta(public, constraint)
    lam_hess = loss.curvature * public.x_norm**2
    # Jacobian: rank * log(1 + lam_hess / Delta) <= eps1 / 2.
    delta_min = lam_hess / math.expm1(min(eps1 / (2 * loss.hessian_rank), 700.0))  # no overflow at huge eps
    if delta > 0:
        sigma = 2 * zeta * math.sqrt(8 * math.log(2 / delta1) + 4 * eps1) / eps1
        norm_b = sigma * math.sqrt(dim)
    else:
        sigma = 2 * zeta / (eps1 / 2)  # norm-Gamma scale: density exp(-(eps1/2) ||b|| / (2 zeta))
        norm_b = sigma * dim
    # Delta balancing 2||b||^2 / (Delta n) against Delta R^2 / (2n) (Lemma 3.19), data-independent.
    big_delta = max(delta_min, 2.0 * norm_b / coef_radius)
    extra = max(big_delta - public.n * l2_reg, 0.0)  # Section 3.5.1: credit the user's ridge term
    lam_total = l2_reg + extra / public.n
    amp_sens = 2.0 * tol / lam_total  # ||theta - theta_exact|| <= tol / lam_total on each dataset
    if delta > 0:
        z2 = gaussian_noise_multiplier(eps2, delta2)
        amp_event, amp_scale = dp_event.GaussianDpEvent(z2), z2 * amp_sens
    else:
        amp_event, amp_scale = EpsilonDeltaDpEvent(float(eps2), 0.0), amp_sens / eps2
    event = dp_event.ComposedDpEvent([EpsilonDeltaDpEvent(float(eps1), float(delta1)), amp_event])
    return Plan(event, float(epsilon), float(delta), 1, sigma, constraint,
                {"Delta": big_delta, "zeta": zeta, "l2_reg": lam_total, "amp_sensitivity": amp_sens,
                 "amp_scale": amp_scale, "gaussian": delta > 0, "tol": tol})


def run_objective_perturbation(problem, plan, rng):
    """Draw b, minimize the perturbed objective to the plan's tolerance, add the AMP noise."""
    info, constraint, dim = plan.info, plan.constraint, problem.dim
    b = rng.normal(0.0, plan.noise_scale, size=dim) if info["gaussian"] else norm_gamma_noise(rng, dim, plan.noise_scale)
    theta = minimize(problem, constraint, l2_reg=info["l2_reg"], linear=b / problem.n, tol=info["tol"])
    if info["gaussian"]:
        coef = theta + rng.normal(0.0, info["amp_scale"], size=dim)
    else:
        coef = theta + norm_gamma_noise(rng, dim, info["amp_scale"])
    if isinstance(constraint, L2Ball):
        coef = constraint.project(coef)  # post-processing
    return coef


@register("objective_perturbation", plan=plan_objective_perturbation, pure_dp=True, constraints=("none", "l2"))
def objective_perturbation(problem, constraint, *, epsilon, delta, rng, tol=1e-8, l2_reg=0.0, coef_radius=None,
                           plan=None):
    """argmin_C mean loss + (l2_reg/2)||theta||^2 + (Delta/2n)||theta||^2 + <b, theta>/n, plus AMP noise.

    Parameters
    ----------
    problem : Problem
        Normalized data.
    constraint : Unconstrained or L2Ball
        The squared loss needs a bounded set (its gradient is unbounded on R^d); an
        ``L2Ball(coef_radius)`` is used when ``constraint`` is unconstrained.
    epsilon, delta : float
        Target. ``(1 - AMP_SHARE)`` of both goes to Theorem 3.8: half of that epsilon
        to the Jacobian (Delta >= 2 lambda rank / eps1), half to the density of b
        (norm-Gamma when delta == 0; Gaussian with sigma = 2 zeta sqrt(8 log(2/delta1) + 4 eps1) / eps1,
        Theorem 3.8 with 2 zeta for replace-one neighbours). The rest pays for a
        gradient-norm tolerance ``tol`` with output noise of sensitivity 2 tol / Lambda.
    rng : numpy.random.Generator
        Source of the noise.
    tol : float, default=1e-8
        Certified gradient-norm tolerance of the exact solver.
    l2_reg : float, default=0.0
        User's mean-scale ridge strength; it counts toward Delta / n (Section 3.5.1).
    coef_radius : float, default=None
        Prior scale of ||theta|| (normalized units) used to choose Delta (Theorem 3.20)
        and, for the squared loss, the radius of the l2 ball; ``None`` uses the loss's
        ``prior_coef_norm``.
    plan : Plan, default=None
        A plan from :func:`plan_objective_perturbation` (computed if ``None``).

    Returns
    -------
    SolverResult
        The perturbed minimizer plus the output noise, projected onto the l2 ball if any.
    """
    if plan is None:
        plan = plan_objective_perturbation(problem, constraint, epsilon=epsilon, delta=delta, tol=tol, l2_reg=l2_reg,
                                           coef_radius=coef_radius)
    return plan.result(run_objective_perturbation(problem, plan, rng))
