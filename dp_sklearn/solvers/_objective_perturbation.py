"""Objective perturbation with approximate-minimum output noise.

Thakurta (2013) dissertation, Algorithm 3.1 and Theorem 3.8 (= Kifer, Smith &
Thakurta, COLT 2012); Talwar, Thakurta & Zhang, "Private ERM beyond the worst
case", Algorithm 2. Inexact minimization is paid for as in approximate minima
perturbation (Iyengar et al., IEEE S&P 2019, Algorithm 1); see ``docs/privacy.md``.

Replace-one neighbours: the change of variables b(theta; D) differs
between neighbours by grad l(theta; d) - grad l(theta; d'), of norm <= 2 zeta, so
the noise of Theorem 3.8 is calibrated with 2 zeta; the Jacobian ratio is still
<= (1 + lambda / Delta)^rank (rank-one Hessians; rank K-1 for the multinomial loss).

Two calibrations of the Gaussian noise b (``delta > 0``):

``accounting="paper"``
    Theorem 3.8 as printed: half of eps1 to the Jacobian, half to the density of b,
    sigma = 2 zeta sqrt(8 log(2 / delta1) + 4 eps1) / eps1.

``accounting="tight"`` (rank-one GLM losses: squared and logistic; the multinomial
loss and ``delta = 0`` use the paper calibration)
    A privacy-profile analysis following Redberg, Koskela & Wang (NeurIPS 2023,
    "Improving the privacy and practicality of objective perturbation for
    differentially private linear learners", Section 3), derived here for replace-one
    neighbours. For an output theta of the run on D, let b = b(theta; D) be the noise
    actually drawn (so b ~ N(0, sigma^2 I)) and g = grad l(theta; d) - grad l(theta; d').
    The privacy loss at theta is (Kifer, Smith & Thakurta 2012, proof of Theorem 3.8)::

        Z = log(det J_D / det J_D') + (2 <b, g> + ||g||^2) / (2 sigma^2).

    * Jacobian: J_D = A + c x x^T with A >= Lambda I and 0 <= c x^T A^-1 x <= lambda /
      Lambda (lambda = sup phi'' x_norm^2), so det J_D / det J_D' <= 1 + lambda / Lambda
      and the Jacobian term is at most eps_J = log(1 + lambda / Lambda).
    * GLM structure: g = a x - a' x' with |a|, |a'| <= zeta / x_norm, hence
      <b, g> <= (zeta / x_norm) max(|<x + x', b>|, |<x - x', b>|), each <x +- x', b>
      being N(0, sigma^2 ||x +- x'||^2) with ||x +- x'|| <= 2 x_norm; ||g|| <= 2 zeta.
    * With the multiplier s = sigma / (2 zeta): Z <= eps_J + M / s + 1 / (2 s^2)
      pointwise, M the larger of two |standard normal|s, P[M > m] <= 4 Q(m) (union
      bound; Q the standard normal tail).
    * delta(eps) = E_D[(1 - e^(eps - Z))_+] = int_eps^inf e^(eps - z) P[Z > z] dz is
      monotone in Z, and int_0^inf e^-u Q(a + s u) du = Q(a) - e^(a/s + 1/(2s^2)) Q(a + 1/s)
      (integration by parts), which gives the theorem used here:

          objective perturbation is (eps, 4 delta_G(eps - eps_J; s))-DP,

      delta_G(e; s) = Q(s e - 1/(2s)) - e^e Q(s e + 1/(2s)) being the privacy profile
      of the Gaussian mechanism with multiplier s (Balle & Wang 2018, Theorem 8).
      Redberg et al. obtain 2 delta_G for add/remove neighbours (one direction x);
      replace-one has two directions x, x', hence 4.

    So sigma = 2 zeta z_analytic(eps1 - eps_J, delta1 / 4). Lambda is chosen among
    public candidates (Jacobian shares of eps1) to minimize the bound
    2 ||b||^2 / Lambda + Lambda R^2 / 2 of Lemma 3.19 (Thakurta 2013), with
    R = ``TIGHT_RADIUS_SCALE * coef_radius`` (the noise term is a worst case over the
    direction of b and over-regularizes; the scale is a public constant, chosen once on
    the benchmark datasets -- it is not fitted per dataset). On an l2 ball (squared loss) the normal-cone term of the change of
    variables is the same under D and D' (proof of Theorem 3.8), so g and the Jacobian
    bound are unchanged. The release is stated as ``EpsilonDeltaDpEvent(eps1, delta1)``
    composed with the approximate-minimum noise, as for the paper calibration.
"""

from __future__ import annotations

import functools
import math

import numpy as np
from dp_accounting import dp_event

from .._accounting import EpsilonDeltaDpEvent, gaussian_noise_multiplier
from .._exact import minimize
from .._sets import L2Ball, bounded_domain
from ._base import Plan, register
from .. import _noise

__all__ = ["objective_perturbation", "plan_objective_perturbation", "run_objective_perturbation", "tight_sigma",
           "AMP_SHARE"]

#: share of (epsilon, delta) spent on the output noise that pays for inexactness
AMP_SHARE = 0.01

#: the tight calibration balances Lemma 3.19's bound with R = TIGHT_RADIUS_SCALE * coef_radius
#: (the worst-case noise term 2 ||b||^2 / Lambda over-regularizes; a public constant)
TIGHT_RADIUS_SCALE = 4.0


def _zeta(problem, constraint):
    loss = problem.loss
    return problem.x_norm * loss.derivative_bound(problem.x_norm * constraint.l2_radius())


def _paper_noise(public, zeta, lam_hess, eps1, delta1, coef_radius, delta):
    """Theorem 3.8: sigma (or the norm-Gamma scale) and Delta, Jacobian and density at eps1 / 2 each."""
    rank, dim = public.loss.hessian_rank, public.dim
    delta_min = lam_hess / math.expm1(min(eps1 / (2 * rank), 700.0))  # no overflow at huge eps
    if delta > 0:
        sigma = 2 * zeta * math.sqrt(8 * math.log(2 / delta1) + 4 * eps1) / eps1
        norm_b = sigma * math.sqrt(dim)
    else:
        sigma = 2 * zeta / (eps1 / 2)  # norm-Gamma scale: density exp(-(eps1/2) ||b|| / (2 zeta))
        norm_b = sigma * dim
    # Delta balancing 2||b||^2 / (Delta n) against Delta R^2 / (2n) (Lemma 3.19), data-independent.
    return sigma, max(delta_min, 2.0 * norm_b / coef_radius)


def tight_sigma(zeta, lam_hess, big_delta, eps1, delta1):
    """Gaussian sigma of the tight analysis at total ridge ``big_delta`` (sum scale); inf if infeasible.

    sigma = 2 zeta z_analytic(eps1 - eps_J, delta1 / 4), eps_J = log(1 + lam_hess / big_delta);
    see the module docstring.
    """
    eps_rest = eps1 - math.log1p(lam_hess / big_delta)
    if eps_rest <= 0:
        return math.inf
    return 2 * zeta * _multiplier(eps_rest, delta1 / 4)


@functools.lru_cache(maxsize=4096)
def _multiplier(epsilon, delta):
    """Cached analytic-Gaussian multiplier (the candidate search repeats the same public targets)."""
    return gaussian_noise_multiplier(epsilon, delta)


def _tight_noise(public, zeta, lam_hess, eps1, delta1, coef_radius):
    """sigma and Delta of the tight analysis: the public candidate minimizing Lemma 3.19's bound."""
    user = public.n * public.l2_reg
    best = (math.inf, None, None)
    for share in np.geomspace(0.01, 0.9, 24):  # share of eps1 spent on the Jacobian
        big_delta = max(lam_hess / math.expm1(min(share * eps1, 700.0)), user)
        sigma = tight_sigma(zeta, lam_hess, big_delta, eps1, delta1)
        big_delta = max(big_delta, 2.0 * sigma * math.sqrt(public.dim) / coef_radius)
        sigma = tight_sigma(zeta, lam_hess, big_delta, eps1, delta1)  # a larger Delta only lowers eps_J
        risk = 2 * sigma**2 * public.dim / big_delta + max(big_delta - user, 0.0) * coef_radius**2 / 2
        if risk < best[0]:
            best = (risk, sigma, big_delta)
    return best[1], best[2]


def plan_objective_perturbation(public, constraint, *, epsilon, delta, tol=1e-8, l2_reg=0.0, coef_radius=None,
                                accounting="paper"):
    """Delta, the noise scales and the event of :func:`objective_perturbation` (public values only)."""
    if accounting not in ("tight", "paper"):
        raise ValueError(f"accounting must be 'tight' or 'paper', got {accounting!r}.")
    loss = public.loss
    coef_radius = loss.prior_coef_norm if coef_radius is None else float(coef_radius)
    if loss.needs_bounded_domain:  # its gradient is unbounded on R^d: a ball of radius coef_radius
        constraint = bounded_domain(constraint, loss, public.x_norm, radius=coef_radius)
    dim = public.dim
    eps1, eps2 = (1 - AMP_SHARE) * epsilon, AMP_SHARE * epsilon
    delta1, delta2 = (1 - AMP_SHARE) * delta, AMP_SHARE * delta
    zeta = _zeta(public, constraint)
    lam_hess = loss.curvature * public.x_norm**2
    tight = accounting == "tight" and delta > 0 and loss.hessian_rank == 1
    if tight:
        sigma, big_delta = _tight_noise(public, zeta, lam_hess, eps1, delta1, TIGHT_RADIUS_SCALE * coef_radius)
    else:
        sigma, big_delta = _paper_noise(public, zeta, lam_hess, eps1, delta1, coef_radius, delta)
    extra = max(big_delta - public.n * l2_reg, 0.0)  # Section 3.5.1: credit the user's ridge term
    lam_total = l2_reg + extra / public.n
    amp_sens = 2.0 * tol / lam_total  # ||theta - theta_exact|| <= tol / lam_total on each dataset
    if delta > 0:
        z2 = gaussian_noise_multiplier(eps2, delta2)
        amp_event, amp_scale = dp_event.GaussianDpEvent(z2), z2 * amp_sens
    else:
        # exact per-coordinate discrete Laplace on the l1 sensitivity sqrt(d) amp_sens (docs/privacy.md,
        # Numeric model): no snapping box is needed for a minimizer that has no public bound
        amp_event, amp_scale = EpsilonDeltaDpEvent(float(eps2), 0.0), math.sqrt(dim) * amp_sens / eps2
    event = dp_event.ComposedDpEvent([EpsilonDeltaDpEvent(float(eps1), float(delta1)), amp_event])
    return Plan(event, float(epsilon), float(delta), 1, sigma, constraint,
                {"Delta": big_delta, "zeta": zeta, "l2_reg": lam_total, "amp_sensitivity": amp_sens,
                 "amp_scale": amp_scale, "gaussian": delta > 0, "tol": tol, "tight": tight,
                 "jacobian_epsilon": public.loss.hessian_rank * math.log1p(lam_hess / big_delta)})


def run_objective_perturbation(problem, plan, rng):
    """Draw b, minimize the perturbed objective to the plan's tolerance, add the AMP noise."""
    info, constraint, dim = plan.info, plan.constraint, problem.dim
    b = _noise.gaussian(rng, plan.noise_scale, size=dim) if info["gaussian"] else _noise.norm_gamma(rng, dim, plan.noise_scale)
    theta = minimize(problem, constraint, l2_reg=info["l2_reg"], linear=b / problem.n, tol=info["tol"])
    if info["gaussian"]:
        coef = _noise.add_gaussian(rng, theta, info["amp_scale"], info["amp_sensitivity"])
    else:
        coef = _noise.add_laplace(rng, theta, info["amp_scale"], math.sqrt(dim) * info["amp_sensitivity"], norm=1)
    if isinstance(constraint, L2Ball):
        coef = constraint.project(coef)  # post-processing
    return coef


@register("objective_perturbation", plan=plan_objective_perturbation, pure_dp=True, constraints=("none", "l2"), requires=("smooth", "twice_differentiable"))
def objective_perturbation(problem, constraint, *, epsilon, delta, rng, tol=1e-8, l2_reg=0.0, coef_radius=None,
                           accounting="paper", plan=None):
    """argmin_C mean loss + (l2_reg/2)||theta||^2 + (Delta/2n)||theta||^2 + <b, theta>/n, plus AMP noise.

    Parameters
    ----------
    problem : Problem
        Normalized data.
    constraint : Unconstrained or L2Ball
        The squared loss needs a bounded set (its gradient is unbounded on R^d); an
        ``L2Ball(coef_radius)`` is used when ``constraint`` is unconstrained.
    epsilon, delta : float
        Target. ``(1 - AMP_SHARE)`` of both goes to the perturbed objective; with
        ``accounting="paper"`` (Theorem 3.8) half of that epsilon to the Jacobian (Delta >= 2 lambda rank / eps1), half to the density of b
        (norm-Gamma when delta == 0; Gaussian with sigma = 2 zeta sqrt(8 log(2/delta1) + 4 eps1) / eps1,
        Theorem 3.8 with 2 zeta for replace-one neighbours). The rest pays for a
        gradient-norm tolerance ``tol`` with output noise of sensitivity 2 tol / Lambda (Gaussian;
        with ``delta = 0`` exact discrete Laplace per coordinate on the l1 sensitivity
        ``sqrt(dim) 2 tol / Lambda``).
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
    accounting : {"paper", "tight"}, default="paper"
        ``"paper"``: Theorem 3.8's Gaussian calibration. ``"tight"``: the
        (eps, 4 delta_G(eps - eps_J; s)) privacy profile of the module docstring (rank-one
        GLM losses with ``delta > 0``; otherwise the paper calibration). The estimators
        pass their own ``accounting`` (default ``"tight"``); the direct-call default stays
        ``"paper"`` for callers such as ``two_stage``.
    plan : Plan, default=None
        A plan from :func:`plan_objective_perturbation` (computed if ``None``).

    Returns
    -------
    SolverResult
        The perturbed minimizer plus the output noise, projected onto the l2 ball if any.
    """
    if plan is None:
        plan = plan_objective_perturbation(problem, constraint, epsilon=epsilon, delta=delta, tol=tol, l2_reg=l2_reg,
                                           coef_radius=coef_radius, accounting=accounting)
    return plan.result(run_objective_perturbation(problem, plan, rng))
