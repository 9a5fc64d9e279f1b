"""Private Frank-Wolfe with Gaussian gradient noise, for the l2 ball.

Talwar, Thakurta & Zhang, "Private ERM beyond the worst case" (full version),
Appendix B, Algorithm 5 (A_Noise-FW(Gen-convex)) -- the variant for convex sets that
are not polytopes::

    s_t = argmin_{s in C} <grad L(theta_t) + b_t, s>,   b_t ~ N(0, sigma^2 I)
    theta_{t+1} = (1 - mu_t) theta_t + mu_t s_t,          output theta_T

For the l2 ball of radius R the linear minimization oracle is s_t = -R v / ||v||
(:meth:`dp_sklearn._sets.L2Ball.lmo`). The algorithm box prints a constant
mu = 1 / (T + 2); we use the standard open-loop schedule mu_t = 2 / (t + 2) of the
Frank-Wolfe analysis that TTZ's Theorem B.2 invokes (Jaggi 2013). An estimator with
an explicit l2 penalty is served on the ball chosen by
:func:`dp_sklearn._sets.bounded_domain`.

The gradient is the mean of per-example gradients clipped to a public l2 norm C, so
each released gradient sum has replace-one sensitivity 2C.

Calibration. ``accounting="tight"``: z = sqrt(T) z_analytic(epsilon, delta) (exact
Gaussian composition, Dong, Roth & Su 2019), event
``SelfComposedDpEvent(GaussianDpEvent(z), T)``. ``accounting="paper"``: Algorithm 5's
sigma^2 = 32 L_2^2 T log^2(n / delta) / (n epsilon)^2 on the mean gradient (the box
prints ``L_2`` unsquared, a typo: sigma must scale like the Lipschitz constant, as in
Algorithm 1 and the proof of Theorem B.2), with L_2 = C, i.e.
z = sqrt(8 T) log(n / delta) / epsilon relative to the sensitivity 2C / n, never below
the tight multiplier.
"""

from __future__ import annotations

import math

import numpy as np

from .._progress import steps
from .._sets import L2Ball
from ._base import Plan, register
from ._common import (check_gaussian_delta, clipped_sum_source, default_clip_norm, gaussian_steps_plan,
                      noisy_clipped_gradient)

__all__ = ["frank_wolfe_gaussian", "plan_frank_wolfe_gaussian", "default_n_iter", "paper_noise_multiplier"]

MIN_ITER = 10
MAX_ITER = 1000


def paper_noise_multiplier(epsilon, delta, T, n):
    """TTZ Algorithm 5: z = sqrt(8 T) log(n / delta) / epsilon (per unit of sensitivity 2L/n)."""
    return math.sqrt(8.0 * T) * math.log(max(n, 2) / delta) / epsilon


def default_n_iter(problem, constraint, epsilon, clip_norm=None):
    """TTZ Theorem B.2: T = Gamma^(2/3) (n eps)^(2/3) / (L_2 G_C)^(2/3).

    Curvature Gamma = phi''_max x_norm^2 (2R)^2 (smoothness times the squared diameter),
    L_2 = the clip norm, Gaussian width of the l2 ball G_C = R sqrt(p). Clipped to
    [MIN_ITER, MAX_ITER].
    """
    R = constraint.radius
    L = default_clip_norm(problem, constraint) if clip_norm is None else float(clip_norm)
    gamma = problem.loss.curvature * problem.x_norm**2 * (2.0 * R) ** 2
    eps = min(float(epsilon), 1e3)
    T = (gamma * problem.n * eps) ** (2 / 3) / (L * R * math.sqrt(problem.dim)) ** (2 / 3)
    return int(min(max(math.ceil(T), MIN_ITER), MAX_ITER))


def plan_frank_wolfe_gaussian(public, constraint, *, epsilon, delta, max_iter=None, clip_norm=None,
                              accounting="tight", l2_reg=0.0):
    """Calibration and T of :func:`frank_wolfe_gaussian` from public values only."""
    check_gaussian_delta(epsilon, delta, "frank_wolfe_gaussian")
    if not isinstance(constraint, L2Ball):
        raise TypeError(f"solver 'frank_wolfe_gaussian' supports L2Ball, got {type(constraint).__name__}.")
    C = float(clip_norm) if clip_norm is not None else default_clip_norm(public, constraint)
    T = int(max_iter) if max_iter is not None else default_n_iter(public, constraint, epsilon, C)
    z, event, eps_out = gaussian_steps_plan(epsilon, delta, T, accounting,
                                            lambda: paper_noise_multiplier(epsilon, delta, T, public.n))
    return Plan(event, eps_out, float(delta), T, z, constraint,
                {"clip_norm": C, "sigma": z * 2.0 * C, "radius": constraint.radius, "l2_reg": l2_reg})


def run_frank_wolfe_gaussian(problem, plan, rng):
    """Frank-Wolfe steps on noisy clipped gradients; the last iterate (Gram path when exact)."""
    info, constraint = plan.info, plan.constraint
    gram = clipped_sum_source(problem, constraint, info["clip_norm"])
    theta = np.zeros(problem.dim)
    for t in steps(plan.n_iter):
        g = noisy_clipped_gradient(problem, theta, info["clip_norm"], info["sigma"], rng, l2_reg=info["l2_reg"],
                                   gram=gram)
        mu = 2.0 / (t + 2.0)
        theta = (1.0 - mu) * theta + mu * constraint.lmo(g)
    return theta


@register("frank_wolfe_gaussian", plan=plan_frank_wolfe_gaussian, pure_dp=False, constraints=("l2",))
def frank_wolfe_gaussian(problem, constraint, *, epsilon, delta, rng, max_iter=None, clip_norm=None,
                         accounting="tight", l2_reg=0.0, plan=None):
    """Private Frank-Wolfe with Gaussian noise (TTZ Algorithm 5); see the module docstring.

    Parameters
    ----------
    problem : Problem
        Normalized data.
    constraint : L2Ball
        Feasible set.
    epsilon, delta : float
        ``epsilon=np.inf`` runs the same Frank-Wolfe iteration without noise.
    rng : numpy.random.Generator
        Source of the noise.
    max_iter : int, default=None
        T; ``None`` uses :func:`default_n_iter`.
    clip_norm : float, default=None
        Per-example gradient l2 clip norm C (normalized units).
    accounting : {"tight", "paper"}, default="tight"
        Calibration, see the module docstring.
    l2_reg : float, default=0.0
        Mean-scale l2 penalty of the objective.
    plan : Plan, default=None
        A plan from :func:`plan_frank_wolfe_gaussian` (computed if ``None``).

    Returns
    -------
    SolverResult
        ``coef`` = theta_T.
    """
    if plan is None:
        plan = plan_frank_wolfe_gaussian(problem, constraint, epsilon=epsilon, delta=delta, max_iter=max_iter,
                                         clip_norm=clip_norm, accounting=accounting, l2_reg=l2_reg)
    return plan.result(run_frank_wolfe_gaussian(problem, plan, rng))
