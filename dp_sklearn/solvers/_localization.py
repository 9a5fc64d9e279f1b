"""Localization: output perturbation, then exponential sampling in a small ball (pure epsilon-DP).

Bassily, Smith & Thakurta, "Private empirical risk minimization: efficient algorithms and
tight error bounds" (FOCS 2014), Section IV: Algorithm 4 (output-perturbation-based generic
algorithm) with Algorithm 3 (A_out-pert, the localization step) and Algorithm 2
(A_exp-samp) as the generic Lipschitz solver; privacy Theorem IV.1, utility Lemma IV.2 and
Theorem IV.3 (excess risk O(p^2 L^2 log(n) / (n Delta epsilon^2)) in sum-loss units).

Objective (normalized units) over the ball C = B(0, R) of the estimator (or ``coef_radius``):

    J_D(theta) = (1/n) sum_i l(theta; d_i) + (Lambda / 2) ||theta||^2,
    Lambda = max(l2_reg, :func:`default_localization_strength`),

i.e. n J_D = sum_i (l(.; d_i) + (Lambda/2)||.||^2), a sum of Lambda-strongly convex terms
(BST's Delta = Lambda). The user's ridge strength is raised to a data-independent level, as
output perturbation does (the localization radius shrinks as 1 / Lambda). G = L is the
per-example Lipschitz constant of the loss l on C (x_norm (x_norm R + 1) for the squared
loss with |y| <= 1, x_norm for the logistic loss).

Step 1, Algorithm 3 with epsilon / 2 (replace-one neighbours, docs/privacy.md P1). Let
theta_D = argmin_C J_D and D, D' differ in record i. With g = J_D' - J_D =
(l(.; d'_i) - l(.; d_i)) / n, which is (2 G / n)-Lipschitz on C, optimality and strong
convexity give J_D(theta_D') - J_D(theta_D) >= (Lambda/2) ||theta_D' - theta_D||^2 and
J_D'(theta_D) - J_D'(theta_D') >= (Lambda/2) ||theta_D' - theta_D||^2; adding them,
Lambda ||theta_D - theta_D'||^2 <= g(theta_D) - g(theta_D') <= (2 G / n) ||theta_D - theta_D'||, so

    Delta_2 = 2 G / (n Lambda) + 2 tol / Lambda

(the second term pays for the certified inexactness ``||theta~ - theta_D|| <= tol / Lambda`` of
:func:`dp_sklearn._exact.minimize`, P5). The noise b has density proportional to
exp(-||b|| / s) with s = Delta_2 / (epsilon / 2 - ln kappa) (norm-Gamma, released snapped by
:func:`dp_sklearn._noise.add_norm_gamma` in the box of the ball C, ln kappa <= 2^-10 epsilon / 2 the
snapping's cost, ``docs/privacy.md`` Numeric model; BST's density
exp(-n Delta epsilon ||b|| / (2 L)) at privacy epsilon / 2 when tol = 0: replace-one is
BST's neighbour relation, so their constant is unchanged), theta_0 = P_C(theta~ + b)
(post-processing) and the localized set is

    C_0 = C cap B(theta_0, r),   r = zeta p s,   zeta = 3 ln(n)

(BST Algorithm 3, step 4, with zeta = 3 log n from Algorithm 4, step 1: p s = E||b||, and
P(||b|| > zeta p s) = P(Gamma(p, 1) > zeta p) <= n^-3 for p = 1; r affects utility only).

Step 2, Algorithm 2 with epsilon / 2 on C_0: a draw with density proportional to
exp(-kappa n J_D(theta)) on C_0, kappa = (epsilon / 2) / (2 G diam(C_0)) with the public
diam(C_0) <= 2 min(r, R): the log-density ratio between neighbours is at most kappa times
the oscillation of l(.; d) - l(.; d') over C_0, at most 2 G diam(C_0) (the ridge term does
not depend on the data), i.e. epsilon / 2. C_0 depends on the data only through theta_0,
an epsilon/2-DP output, so by (adaptive) basic composition the release is epsilon-DP
(Theorem IV.1); the event is ``ComposedDpEvent([eps/2 pure, eps/2 pure])``.

Sampler: EXACT (no total-variation error to account): rejection from the tangent-plane
envelope of the concave log-density on C_0 (:mod:`dp_sklearn._logconcave`), offered for at
most ``MAX_EXACT_DIM = 2`` coefficients (the intercept counts); the plan raises a
``ValueError`` naming the solver and the limit beyond it, before the data is touched, and
one naming epsilon when float64 cannot resolve kappa n J_D on C (huge epsilon).
``epsilon = inf`` returns the exact minimizer of (1/n) sum l + (l2_reg / 2) ||theta||^2 over C,
as the estimators' non-private path does.
"""

from __future__ import annotations

import math

import numpy as np
from dp_accounting import dp_event

from .._accounting import EpsilonDeltaDpEvent
from .._exact import minimize
from .._logconcave import MAX_EXACT_DIM, check_exact_dim, check_float_resolution, exact_glm_samples, loss_lipschitz
from .._sets import L2Ball, Unconstrained, bounded_domain
from ._base import Plan, register
from .. import _noise

__all__ = ["localization", "plan_localization", "default_localization_strength", "localization_radius"]

#: share of epsilon spent on the localization step (BST Algorithm 4: one half)
LOCALIZATION_SHARE = 0.5


def _check(public, constraint):
    check_exact_dim(public, "localization")
    if not isinstance(constraint, (Unconstrained, L2Ball)):
        raise TypeError(f"localization needs an l2 ball, got {type(constraint).__name__}.")


def _ball(public, constraint, coef_radius):
    radius = public.loss.prior_coef_norm if coef_radius is None else float(coef_radius)
    return bounded_domain(constraint, public.loss, public.x_norm, radius=radius)


def default_localization_strength(n, dim, epsilon, lipschitz, prior_norm):
    """Data-independent Lambda balancing the ridge bias against the localized sampling error.

    Parameters
    ----------
    n, dim : int
        Public number of samples and of coefficients.
    epsilon : float
        The whole budget of the mechanism.
    lipschitz : float
        Per-example Lipschitz constant G of the loss on the feasible ball.
    prior_norm : float
        Public scale R0 of ||theta*|| (the loss's ``prior_coef_norm``).

    Returns
    -------
    float
        ``Lambda = sqrt(32 zeta) p G / (epsilon n R0)`` with ``zeta = 3 ln n``: the minimizer of
        ``Lambda R0^2 / 2 + 16 zeta p^2 G^2 / (Lambda epsilon^2 n^2)``, the bias plus the mean
        excess of a Gaussian-like draw at inverse temperature kappa n on C_0
        (``p / (2 kappa n) = 4 p G r / (epsilon n)`` with ``r = zeta p 4 G / (n Lambda epsilon)``).
    """
    zeta = 3.0 * math.log(max(n, 2))
    return math.sqrt(32.0 * zeta) * dim * lipschitz / (epsilon * n * prior_norm)


def localization_radius(n, dim, noise_scale):
    """Radius r = zeta p s of C_0 (BST Algorithm 3 step 4, zeta = 3 ln n from Algorithm 4 step 1)."""
    return 3.0 * math.log(max(n, 2)) * dim * noise_scale


def plan_localization(public, constraint, *, epsilon, delta=0.0, tol=1e-8, l2_reg=0.0, coef_radius=None):
    """Lambda, the Algorithm 3 noise and radius, kappa and the (epsilon, 0) event (public values only)."""
    _check(public, constraint)
    ball = _ball(public, constraint, coef_radius)
    R = ball.l2_radius()
    G = loss_lipschitz(public, R)
    eps1 = LOCALIZATION_SHARE * float(epsilon)
    eps2 = float(epsilon) - eps1
    lam = max(float(l2_reg or 0.0),
              default_localization_strength(public.n, public.dim, float(epsilon), G, public.loss.prior_coef_norm))
    sensitivity = 2.0 * G / (public.n * lam) + 2.0 * tol / lam
    snapping = _noise.norm_gamma_snapping(eps1, sensitivity, public.dim, R)  # theta_hat is in the ball of radius R
    scale = snapping.scale  # sensitivity / (eps1 - snapping.loss)
    r = localization_radius(public.n, public.dim, scale)
    kappa = eps2 / (2.0 * G * 2.0 * min(r, R))
    check_float_resolution(public, kappa, R, lam, "localization")
    curvature = public.loss.curvature * public.x_norm**2 + lam
    event = dp_event.ComposedDpEvent([EpsilonDeltaDpEvent(eps1, 0.0), EpsilonDeltaDpEvent(eps2, 0.0)])
    return Plan(event, float(epsilon), 0.0, 1, kappa, ball,
                {"l2_reg": lam, "lipschitz": G, "sensitivity": sensitivity, "scale": scale, "radius": r,
                 "kappa": kappa, "curvature": curvature, "tol": tol, "snapping": snapping, "epsilon_localize": eps1, "epsilon_sample": eps2})


@register("localization", plan=plan_localization, pure_dp=True, constraints=("l2",), max_dim=MAX_EXACT_DIM, requires=("bounded_value", "single_output"))
def localization(problem, constraint, *, epsilon, delta=0.0, rng, tol=1e-8, l2_reg=0.0, coef_radius=None, plan=None):
    """BST 2014 Algorithm 4: Algorithm 3 with epsilon/2, then Algorithm 2 with epsilon/2 on C_0.

    See the module docstring for the calibration, the replace-one radius and the sampler.

    Parameters
    ----------
    problem : Problem
        Normalized data with at most 2 coefficients; squared or logistic loss.
    constraint : Unconstrained or L2Ball
        Feasible set C; ``Unconstrained`` is replaced by ``L2Ball(coef_radius)``.
    epsilon : float
        Pure privacy parameter (> 0); ``numpy.inf`` returns the exact minimizer.
    delta : float, default=0.0
        Ignored (the mechanism is (epsilon, 0)-DP).
    rng : numpy.random.Generator
        Source of the randomness.
    tol : float, default=1e-8
        Certified tolerance of the exact minimizer, paid for in the sensitivity.
    l2_reg : float, default=0.0
        User's mean-scale ridge strength (raised to the default Lambda if smaller).
    coef_radius : float, default=None
        Radius R of C when ``constraint`` is unbounded; ``None`` uses the loss's ``prior_coef_norm``.
    plan : Plan, default=None
        A plan from :func:`plan_localization` (computed if ``None``).

    Returns
    -------
    SolverResult
        The draw; ``noise_scale`` is kappa, ``info`` has Lambda, s, r and kappa.

    Raises
    ------
    ValueError
        If the problem has more than 2 coefficients or an unsupported loss, or if epsilon is so large that float64
        cannot resolve the sampled log-density (:func:`dp_sklearn._logconcave.check_float_resolution`).

    References
    ----------
    R. Bassily, A. Smith and A. Thakurta, FOCS 2014, Algorithms 2, 3 and 4, Theorems IV.1 and IV.3.
    """
    if plan is None and epsilon == np.inf:
        _check(problem, constraint)
        ball = _ball(problem, constraint, coef_radius)
        return Plan(dp_event.NonPrivateDpEvent(), np.inf, 0.0, 1, 0.0, ball).result(minimize(problem, ball, l2_reg=l2_reg))
    if plan is None:
        plan = plan_localization(problem, constraint, epsilon=epsilon, delta=delta, tol=tol, l2_reg=l2_reg,
                                 coef_radius=coef_radius)
    info, ball = plan.info, plan.constraint
    theta_hat = minimize(problem, ball, l2_reg=info["l2_reg"], tol=info["tol"])
    theta0 = ball.project(_noise.add_norm_gamma(rng, theta_hat, info["snapping"]))  # snapped: docs/privacy.md
    coef = exact_glm_samples(problem, rng, kappa=info["kappa"], l2_reg=info["l2_reg"], curvature=info["curvature"],
                             radius=ball.l2_radius(), center=theta0, local_radius=info["radius"])[0]
    return plan.result(coef)
