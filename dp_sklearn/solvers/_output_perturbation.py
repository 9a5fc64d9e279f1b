"""Output perturbation: exact regularized minimizer plus calibrated noise.

Bassily, Smith & Thakurta, "Private ERM: efficient algorithms and tight error
bounds", FOCS 2014, Algorithm 3 (output perturbation for strongly convex losses);
Chaudhuri, Monteleoni & Sarwate, JMLR 2011, Algorithm 1; Thakurta (2013),
Section 3.2.2, Lemma 3.1.
"""

from __future__ import annotations

import math

from dp_accounting import dp_event

from .._accounting import gaussian_noise_multiplier
from .._exact import minimize
from ._base import SolverResult, norm_gamma_noise, register


def _lipschitz(problem, lam):
    """Per-example l2 gradient bound G on a ball that holds every exact minimizer.

    The minimizer of mean loss + (lam/2)||theta||^2 satisfies (lam/2)||theta||^2 <= F(0);
    F(0) <= 1/2 for the squared loss (|y| <= 1), log 2 (logistic), log K (multinomial).
    """
    loss = problem.loss
    if loss.name == "squared":
        radius = 1.0 / math.sqrt(lam)
        return problem.x_norm * loss.derivative_bound(problem.x_norm * radius)
    return problem.x_norm * loss.derivative_bound()


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


@register("output_perturbation", pure_dp=True, constraints=("none",))
def output_perturbation(problem, constraint, *, epsilon, delta, rng, tol=1e-8, l2_reg=None, **_):
    """Release argmin F + noise with l2 sensitivity 2G/(n Lambda) + 2 tol/Lambda (SPEC P5).

    Gaussian noise (analytic Gaussian, Balle & Wang 2018) when delta > 0,
    norm-Gamma noise with density exp(-epsilon ||b|| / Delta) when delta == 0.
    The strong convexity is Lambda = max(l2_reg, :func:`default_strong_convexity`): the
    user's ridge strength, raised to the data-independent level the noise calls for.
    """
    lam = max(float(l2_reg or 0.0), default_strong_convexity(problem, epsilon, delta, problem.dim))
    theta = minimize(problem, None, l2_reg=lam, tol=tol)
    G = _lipschitz(problem, lam)
    sensitivity = 2.0 * G / (problem.n * lam) + 2.0 * tol / lam
    dim = theta.size
    if delta > 0:
        z = gaussian_noise_multiplier(epsilon, delta)
        coef = theta + rng.normal(0.0, z * sensitivity, size=dim)
        event = dp_event.GaussianDpEvent(z)
        noise = z
    else:
        coef = theta + norm_gamma_noise(rng, dim, sensitivity / epsilon)
        from .._accounting import EpsilonDeltaDpEvent

        event = EpsilonDeltaDpEvent(float(epsilon), 0.0)
        noise = 1.0 / epsilon
    return SolverResult(coef, event, float(epsilon), float(delta), 1, noise,
                        {"sensitivity": sensitivity, "l2_reg": lam, "lipschitz": G})
