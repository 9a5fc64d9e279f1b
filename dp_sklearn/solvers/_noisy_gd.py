"""Noisy (projected) gradient descent, full batch or Poisson-sampled mini-batches.

Bassily, Smith & Thakurta, FOCS 2014, Algorithm 1 (here with full batches by default,
BST's Note (2), or Poisson-sampled mini-batches, and per-example gradient clipping to
a public norm, Abadi et al., CCS 2016), so the mechanism is private for any data. T,
the step size and the noise are functions of hyperparameters, n and the public
bounds only (see ``docs/privacy.md``).
"""

from __future__ import annotations

import math
import numbers

import numpy as np
from dp_accounting import dp_event

from .._accounting import gaussian_noise_multiplier, poisson_noise_multiplier
from .._sets import bounded_domain
from ._base import Plan, register
from ._common import (CLIP_FRACTION, clipped_sum_source, default_clip_norm, gaussian_steps_plan,
                      noisy_clipped_gradient)

__all__ = ["noisy_gd", "plan_noisy_gd", "default_n_iter", "paper_noise_multiplier", "poisson_noise_multiplier",
           "default_clip_norm", "CLIP_FRACTION"]


def default_n_iter(n, epsilon, delta):
    """Data-independent number of steps: T = ceil(n / (10 z(epsilon, delta))), within [10, 1000].

    With suffix averaging the noise in the averaged iterate hardly grows with T, while
    the noise-driven drift of the iterates grows like T z / n (z the one-release
    Gaussian multiplier); the rule keeps that drift bounded, so small datasets take
    few steps (breast_cancer at epsilon=1: 11) and large ones run until the
    optimization error is small (adult at epsilon=1: 873). Measured in the README.
    """
    z = gaussian_noise_multiplier(epsilon, delta) if delta > 0 else 1.0 / epsilon
    return int(min(1000, max(10, math.ceil(n / (10.0 * z)))))


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


def _sampling_rate(n, batch_size):
    if batch_size is None:
        return 1.0
    if not (isinstance(batch_size, numbers.Integral) and not isinstance(batch_size, bool) and 1 <= batch_size <= n):
        raise ValueError(f"batch_size must be None or an int in [1, n_samples={n}], got {batch_size!r}.")
    return batch_size / n


def plan_noisy_gd(public, constraint, *, epsilon, delta, max_iter=None, l2_reg=0.0, clip_norm=None,
                  accounting="tight", batch_size=None):
    """Calibration of :func:`noisy_gd` from public values only (see its Notes)."""
    n = public.n
    T = int(max_iter) if max_iter is not None else default_n_iter(n, epsilon, delta)
    C = float(clip_norm) if clip_norm is not None else default_clip_norm(public, constraint)
    q = _sampling_rate(n, batch_size)
    if q == 1.0:
        z, event, _ = gaussian_steps_plan(epsilon, delta, T, accounting,
                                          lambda: paper_noise_multiplier(epsilon, delta, T, n))
        sigma = z * 2.0 * C
        relation = "any (multiplier relative to the replace-one sensitivity 2C)"
    else:
        zp = poisson_noise_multiplier(float(epsilon), float(delta), T, float(q))
        if accounting == "paper":
            zp = max(2.0 * paper_noise_multiplier(epsilon, delta, T, n, q), zp)
        z = 0.5 * zp  # relative to the sensitivity 2C of a sampled step
        sigma = zp * C
        event = dp_event.SelfComposedDpEvent(dp_event.PoissonSampledDpEvent(q, dp_event.GaussianDpEvent(zp)), T)
        relation = "REPLACE_ONE"
    eta = 1.0 / (public.loss.curvature * public.x_norm**2 + l2_reg)
    # Squared loss: keep every prediction inside the target range (inactive for sensible
    # fits; stops noise-driven drift). See dp_sklearn._sets.bounded_domain.
    if public.loss.name == "squared":
        constraint = bounded_domain(constraint, "squared", public.x_norm)
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
    for t in range(T):
        g = noisy_clipped_gradient(problem, theta, info["clip_norm"], info["sigma"], rng, l2_reg=info["l2_reg"],
                                   sampling_rate=q, gram=gram)
        theta = constraint.project(theta - info["step_size"] * g)
        if t >= start:
            avg += theta
    return avg / (T - start)


@register("noisy_gd", plan=plan_noisy_gd, pure_dp=False, constraints=("none", "l1", "l2"))
def noisy_gd(problem, constraint, *, epsilon, delta, rng, max_iter=None, l2_reg=0.0, clip_norm=None,
             accounting="tight", batch_size=None, plan=None):
    """theta_{t+1} = P_C(theta_t - eta (g_t + l2_reg theta_t)), g_t = (clipped sum + N(0, sigma^2 I)) / m.

    Parameters
    ----------
    problem : Problem
        Normalized data.
    constraint : Unconstrained, L1Ball or L2Ball
        Feasible set (projection ``P_C``).
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
    batch_size : int, default=None
        ``None``: full batches (m = n). Otherwise each step uses a Poisson sample: every
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
