"""Output perturbation: exact regularized minimizer plus calibrated noise.

Bassily, Smith & Thakurta, "Private ERM: efficient algorithms and tight error
bounds", FOCS 2014, Algorithm 3 (output perturbation for strongly convex losses);
Chaudhuri, Monteleoni & Sarwate, JMLR 2011, Algorithm 1; Thakurta (2013),
Section 3.2.2, Lemma 3.1.
"""

from __future__ import annotations

import math

from dp_accounting import dp_event

from .._accounting import EpsilonDeltaDpEvent, gaussian_noise_multiplier
from .._exact import minimize
from ._base import Plan, register
from .. import _noise

__all__ = ["output_perturbation", "plan_output_perturbation", "default_strong_convexity"]


def _lipschitz(problem, lam):
    """Per-example l2 gradient bound G on a ball that holds every exact minimizer.

    The minimizer of mean loss + (lam/2)||theta||^2 satisfies (lam/2)||theta||^2 <= F(0);
    F(0) <= 1/2 for the squared loss (|y| <= 1), log 2 (logistic), log K (multinomial).
    """
    loss = problem.loss
    radius = math.sqrt(2.0 * loss.value_at_zero / lam)  # = 1 / sqrt(lam) for the squared loss
    return problem.x_norm * loss.derivative_bound(problem.x_norm * radius)


def default_strong_convexity(problem, epsilon, delta, n_outputs_dim):
    """Data-independent l2 strength Lambda balancing bias Lambda/2 against noise.

    Minimizes Lambda R0^2/2 + (L/2) E||noise||^2 with E||noise||^2 = d (z 2G / (n Lambda))^2,
    for a solution of norm R0 = ``loss.prior_coef_norm``, i.e. Lambda = (4 L d z^2 G^2 / (n^2 R0^2))^(1/3)
    (fixed point in G for the squared loss). Uses only n, d, bounds and (epsilon, delta).
    """
    n, d = problem.n, n_outputs_dim
    z = gaussian_noise_multiplier(epsilon, delta) if delta > 0 else math.sqrt(d) / epsilon
    smooth = problem.loss.curvature * problem.x_norm**2
    R0 = problem.loss.prior_coef_norm
    lam = 1e-2
    for _ in range(30):
        G = _lipschitz(problem, lam)
        lam = (4.0 * smooth * d * z**2 * G**2 / (n**2 * R0**2)) ** (1.0 / 3.0)
    return lam


def plan_output_perturbation(public, constraint, *, epsilon, delta, tol=1e-8, l2_reg=0.0):
    """Lambda, the sensitivity and the noise of :func:`output_perturbation` (public values only)."""
    lam = max(float(l2_reg or 0.0), default_strong_convexity(public, epsilon, delta, public.dim))
    G = _lipschitz(public, lam)
    sensitivity = 2.0 * G / (public.n * lam) + 2.0 * tol / lam
    if delta > 0:
        z = gaussian_noise_multiplier(epsilon, delta)
        event, noise, scale = dp_event.GaussianDpEvent(z), z, z * sensitivity
        snapping = None
    else:
        # ||theta|| <= sqrt(2 F(0) / Lambda) + tol / Lambda: the public box of the snapped release
        bound = math.sqrt(2.0 * public.loss.value_at_zero / lam) + tol / lam
        snapping = _noise.norm_gamma_snapping(epsilon, sensitivity, public.dim, bound)
        scale = snapping.scale  # sensitivity / (epsilon - snapping.loss)
        event, noise = EpsilonDeltaDpEvent(float(epsilon), 0.0), scale / sensitivity
    return Plan(event, float(epsilon), float(delta), 1, noise, constraint,
                {"sensitivity": sensitivity, "l2_reg": lam, "lipschitz": G, "scale": scale, "gaussian": delta > 0,
                 "tol": tol, "snapping": snapping})


@register("output_perturbation", plan=plan_output_perturbation, pure_dp=True, constraints=("none",), requires=("value_at_zero",))
def output_perturbation(problem, constraint, *, epsilon, delta, rng, tol=1e-8, l2_reg=0.0, plan=None):
    """Release argmin F + noise with l2 sensitivity 2G/(n Lambda) + 2 tol/Lambda.

    Gaussian noise (analytic Gaussian, Balle & Wang 2018) when delta > 0,
    norm-Gamma noise with density exp(-||b|| / s) when delta == 0, released snapped
    (:func:`dp_sklearn._noise.add_norm_gamma`: clipped to the public box
    ``||theta|| <= sqrt(2 F(0) / Lambda) + tol / Lambda``, rounded to a public grid) with
    ``s = Delta / (epsilon - ln kappa)``, ``ln kappa <= epsilon 2^-10`` the snapping's cost
    (Mironov, CCS 2012; ``docs/privacy.md``, Numeric model).
    The strong convexity is Lambda = max(l2_reg, :func:`default_strong_convexity`): the
    user's ridge strength, raised to the data-independent level the noise calls for.

    Parameters
    ----------
    problem : Problem
        Normalized data.
    constraint : Unconstrained
        Only the explicitly penalized objective is supported.
    epsilon, delta : float
        Target; ``delta = 0`` uses norm-Gamma noise (pure DP).
    rng : numpy.random.Generator
        Source of the noise.
    tol : float, default=1e-8
        Certified gradient-norm tolerance of the exact solver, paid for in the sensitivity.
    l2_reg : float, default=0.0
        User's mean-scale ridge strength.
    plan : Plan, default=None
        A plan from :func:`plan_output_perturbation` (computed if ``None``).

    Returns
    -------
    SolverResult
        The noisy minimizer.
    """
    if plan is None:
        plan = plan_output_perturbation(problem, constraint, epsilon=epsilon, delta=delta, tol=tol, l2_reg=l2_reg)
    info = plan.info
    theta = minimize(problem, None, l2_reg=info["l2_reg"], tol=info["tol"])
    if info["gaussian"]:
        coef = _noise.add_gaussian(rng, theta, info["scale"], info["sensitivity"])
    else:
        coef = _noise.add_norm_gamma(rng, theta, info["snapping"])
    return plan.result(coef)
