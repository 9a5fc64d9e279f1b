"""Noisy (projected) gradient descent, full batch or Poisson-sampled mini-batches.

Bassily, Smith & Thakurta, FOCS 2014, Algorithm 1 (here with full batches by default,
BST's Note (2), or Poisson-sampled mini-batches, and per-example gradient clipping to
a public norm, Abadi et al., CCS 2016), so the mechanism is private for any data. T,
the step size and the noise are functions of hyperparameters, n and the public
bounds only (see ``docs/privacy.md``).
"""

from __future__ import annotations

import math

import numpy as np

from .._accounting import gaussian_noise_multiplier, poisson_noise_multiplier
from .._progress import steps
from .._sets import bounded_domain
from ._base import Plan, register
from ._common import (CLIP_FRACTION, clipped_sum_source, curvature_share, default_clip_norm,
                      default_sampling_rate, gradient_steps_plan, noise_stream, noisy_clipped_gradient)

__all__ = ["noisy_gd", "plan_noisy_gd", "default_n_iter", "default_sampling_rate", "prior_radius", "curvature_share", "paper_noise_multiplier", "poisson_noise_multiplier",
           "default_clip_norm", "CLIP_FRACTION"]


#: floor and cap of the default number of steps
MIN_ITER, MAX_ITER = 10, 1000
def prior_radius(public, constraint, l2_reg=0.0):
    """Public radius R of a set known to contain the minimizer (normalized units).

    The smaller of the feasible set's l2 radius and the radius implied by the l2
    penalty: with ``f(theta) = mean loss + (l2_reg / 2) ||theta||^2``, the minimizer
    satisfies ``(l2_reg / 2) ||theta*||^2 <= f(0)``, and ``f(0)`` is bounded by public
    values (squared loss on targets in [-1, 1]: 1/2; logistic: log 2; multinomial with
    K classes: log K). Falls back to ``1 / x_norm`` (unit margins) if both are infinite.
    """
    radius = float(constraint.l2_radius())
    if l2_reg > 0:
        f0 = public.loss.value_at_zero
        if f0 is not None:
            radius = min(radius, math.sqrt(2.0 * f0 / l2_reg))
    return radius if math.isfinite(radius) else 1.0 / public.x_norm


def default_n_iter(n, epsilon, delta, *, radius, step_size, clip_norm, curvature_share=1.0):
    """Data-independent number of steps of noisy GD with suffix averaging.

    ``T = (3 (R n / (eta C z))^2 / (8 f))^(1/3)``, rounded up, within [``MIN_ITER``,
    ``MAX_ITER``] = [10, 1000], with ``R`` the public radius of a set containing the
    minimizer (:func:`prior_radius`), ``eta`` the step size, ``C`` the clip norm,
    ``z = z(epsilon, delta)`` the noise multiplier of one Gaussian release (analytic
    Gaussian mechanism; ``1 / epsilon`` when ``delta = 0``) and ``f`` the public
    curvature share of the loss (:func:`curvature_share`).

    Derivation. T full-batch steps compose into one Gaussian with multiplier
    ``sqrt(T) z``, so each step adds to the mean gradient noise of per-coordinate
    standard deviation ``s = sqrt(T) z 2C / n`` (replace-one sensitivity 2C). The
    average of the last T/2 iterates of gradient descent on a convex
    ``1/eta``-smooth objective has optimization error at most ``R^2 / (eta T)``
    (Bassily, Smith & Thakurta 2014, Theorem 2.4, here from the iterate at T/2). That
    error lives in the flat directions of the Hessian H (curvature h with
    ``h eta T < 1``); there the iterates random-walk, the suffix average has
    variance ``(2/3) eta^2 s^2 T`` per direction and costs ``h / 2`` times that:
    ``eta^2 tr(H) s^2 T / 3 <= f (4/3) eta C^2 z^2 T^2 / n^2`` with the public
    bound ``eta tr(H) <= f eta * curvature * x_norm^2 <= f``. Minimizing the sum over T
    gives ``T^3 = 3 R^2 n^2 / (8 f eta^2 C^2 z^2)``. Only hyperparameters, n and
    public bounds enter (``docs/privacy.md``: iteration counts are data-independent).
    T grows like ``(epsilon n)^(2/3)``: breast_cancer logistic regression (n = 398,
    ``data_norm=1``, epsilon = 1, delta = 1e-5) takes 188 steps, diabetes ridge
    (n = 309, epsilon = 2) 50, and n of a few thousand reach the cap. Measured
    across scalings in ``benchmarks/defaults.py``.

    Parameters
    ----------
    n : int
        Number of samples.
    epsilon, delta : float
        Privacy target of the whole run.
    radius : float
        R, normalized units.
    step_size : float
        eta.
    clip_norm : float
        C, normalized units.

    Returns
    -------
    T : int
    """
    z = gaussian_noise_multiplier(epsilon, delta) if delta > 0 else 1.0 / epsilon
    T = (3.0 / (8.0 * curvature_share) * (radius * n / (step_size * clip_norm * z)) ** 2) ** (1.0 / 3.0)
    return int(min(MAX_ITER, max(MIN_ITER, math.ceil(T))))


def paper_noise_multiplier(epsilon, delta, T, n, sampling_rate=1.0):
    """BST Algorithm 1's calibration, per step, relative to the replace-one sensitivity 2C.

    BST (FOCS 2014), Algorithm 1 line 1: sigma^2 = 32 L^2 n^2 log(n/delta) log(1/delta) / eps^2
    on n grad l(theta; d) for one record d sampled per step, n^2 steps (their proof:
    per-step Gaussian bound, amplification by sampling at rate 1/n, strong composition).
    As a multiplier of the sensitivity 2nL of that step it is
    z = sqrt(8 log(n/delta) log(1/delta)) / eps = q sqrt(T) sqrt(8 log(n/delta) log(1/delta)) / eps
    at q = 1/n, T = n^2. The same proof with T steps at sampling rate q gives
    ``z = q sqrt(T) sqrt(8 log(n/delta) log(1/delta)) / eps``; for full batches (q = 1,
    BST's Note (2)) that is sigma^2 = 32 C^2 T log(n/delta) log(1/delta) / eps^2 on the
    clipped gradient sum, equal to BST's sigma^2 at T = n^2.
    """
    return sampling_rate * math.sqrt(8.0 * T * math.log(n / delta) * math.log(1.0 / delta)) / epsilon


def plan_noisy_gd(public, constraint, *, epsilon, delta, max_iter=None, l2_reg=0.0, clip_norm=None,
                  accounting="tight", batch_size=None):
    """Calibration of :func:`noisy_gd` from public values only (see its Notes)."""
    n = public.n
    # Squared loss: keep in-bound predictions near the target range (inactive for sensible
    # fits; stops noise-driven drift). See dp_sklearn._sets.bounded_domain.
    constraint = bounded_domain(constraint, public.loss, public.x_norm)
    C = float(clip_norm) if clip_norm is not None else default_clip_norm(public, constraint)
    eta = 1.0 / (public.loss.step_curvature * public.x_norm**2 + l2_reg)  # utility only: clipping gives privacy
    T = int(max_iter) if max_iter is not None else default_n_iter(
        n, epsilon, delta, radius=prior_radius(public, constraint, l2_reg), step_size=eta, clip_norm=C,
        curvature_share=curvature_share(public.loss))
    q, z, sigma, event, relation = gradient_steps_plan(
        n, epsilon, delta, T, C, accounting, batch_size,
        lambda: paper_noise_multiplier(epsilon, delta, T, n),
        lambda rate: 2.0 * paper_noise_multiplier(epsilon, delta, T, n, rate))
    return Plan(event, float(epsilon), float(delta), T, z, constraint,
                {"clip_norm": C, "step_size": eta, "sigma": sigma, "sampling_rate": q,
                 "neighboring_relation": relation, "l2_reg": l2_reg})


def run_noisy_gd(problem, plan, rng):
    """Noisy projected gradient descent with the plan's constants; suffix-averaged iterate.

    Full batches on a bounded set with a clip norm that can never bind use the Gram
    matrix (:func:`dp_sklearn.solvers._common.clipped_sum_source`): same released sums.
    """
    info, constraint, T = plan.info, plan.constraint, plan.n_iter
    q = info["sampling_rate"]
    gram = clipped_sum_source(problem, constraint, info["clip_norm"], q)
    theta = np.zeros(problem.dim)
    avg = np.zeros_like(theta)
    start = T // 2
    noise = noise_stream(rng, info["sigma"], info["clip_norm"], problem.dim, T)  # all T steps' noise, drawn ahead
    for t in steps(T):
        g = noisy_clipped_gradient(problem, theta, info["clip_norm"], info["sigma"], rng, l2_reg=info["l2_reg"],
                                   sampling_rate=q, gram=gram, noise=noise)
        theta = constraint.prox(theta - info["step_size"] * g, info["step_size"])  # projection, or a penalty's prox
        if t >= start:
            avg += theta
    return avg / (T - start)


@register("noisy_gd", plan=plan_noisy_gd, pure_dp=False, constraints=("none", "l1", "l2", "l1_penalty"),
          requires=("smooth",))
def noisy_gd(problem, constraint, *, epsilon, delta, rng, max_iter=None, l2_reg=0.0, clip_norm=None,
             accounting="tight", batch_size=None, plan=None):
    """theta_{t+1} = P_C(theta_t - eta (g_t + l2_reg theta_t)), g_t = (clipped sum + N(0, sigma^2 I)) / m.

    Parameters
    ----------
    problem : Problem
        Normalized data.
    constraint : Unconstrained, L1Ball, L2Ball or L1Penalty
        Feasible set (projection ``P_C``), or an l1 penalty applied by its proximal map
        (soft thresholding after each noisy step: proximal noisy GD, post-processing).
    epsilon, delta : float
        Target guarantee.
    rng : numpy.random.Generator
        The fit's only source of randomness (noise and batch sampling).
    max_iter : int, default=None
        T; ``None`` uses :func:`default_n_iter` (also for mini-batches).
    l2_reg : float, default=0.0
        Mean-scale l2 penalty.
    clip_norm : float, default=None
        Per-example gradient clip norm C; ``None`` uses :func:`default_clip_norm`.
    accounting : {"tight", "paper"}, default="tight"
        Calibration, see the Notes.
    batch_size : int or "full", default=None
        ``None``: full batches (m = n), or at large n (``accounting="tight"``) Poisson
        samples at the rate of :func:`default_sampling_rate`; ``"full"`` (or ``n_samples``)
        forces full batches. Otherwise each step uses a Poisson sample: every
        record enters independently with probability q = batch_size / n, and the
        noisy clipped sum is divided by the expected batch size m = q n (a public
        constant, so the step stays a post-processing of the noisy sum).
    plan : Plan, default=None
        A plan from :func:`plan_noisy_gd` for these arguments (computed if ``None``).

    Returns
    -------
    SolverResult
        The average of the second half of the iterates (suffix averaging, Rakhlin,
        Shamir & Sridharan, ICML 2012).

    Notes
    -----
    Full batch, ``accounting="tight"``: each step releases a clipped gradient sum of
    l2 sensitivity 2C (replace-one); T Gaussian steps compose exactly into one
    Gaussian (Dong, Roth & Su 2019), so sigma = sqrt(T) z(epsilon, delta) 2C, event
    ``SelfComposedDpEvent(GaussianDpEvent(z), T)``.

    Mini-batches, ``accounting="tight"``: the event is
    ``SelfComposedDpEvent(PoissonSampledDpEvent(q, GaussianDpEvent(z')), T)`` and z'
    is calibrated by :func:`poisson_noise_multiplier` (PLD accountant, replace-one).
    The amplification-by-sampling analysis that ``dp_accounting`` applies by default
    is for add/remove neighbours; for replace-one neighbours, a record that is
    replaced is sampled or not together with its replacement, and the PLD
    accountant's ``REPLACE_ONE`` relation models exactly that. **Its noise multiplier
    is per unit of the clip norm C** (sensitivity 2 per unit), so sigma = z' C, and the
    event must be composed by an accountant constructed with
    ``NeighboringRelation.REPLACE_ONE`` (``info["neighboring_relation"]``); under the
    default add/remove relation it would understate the privacy loss.

    ``accounting="paper"``: BST (FOCS 2014) Algorithm 1's sigma, see
    :func:`paper_noise_multiplier` (never below the tight multiplier, so it is private
    under replace-one whatever its constants).
    """
    if plan is None:
        plan = plan_noisy_gd(problem, constraint, epsilon=epsilon, delta=delta, max_iter=max_iter, l2_reg=l2_reg,
                             clip_norm=clip_norm, accounting=accounting, batch_size=batch_size)
    return plan.result(run_noisy_gd(problem, plan, rng))
