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

Poisson-sampled steps (``batch_size``, and the default plan at large n): each step's
clipped sum runs over a Poisson sample (every record independently with probability
q, a public rate) and is divided by the public expected size q n. The T steps are the
event ``SelfComposedDpEvent(PoissonSampledDpEvent(q, GaussianDpEvent(z')), T)``
calibrated under replace-one neighbours by the PLD accountant (a replaced record is
sampled or not together with its replacement), sigma = z' C; see
``gradient_steps_plan`` in ``dp_sklearn.solvers._common``, shared with noisy GD. The
default rate keeps the noise on the mean gradient within about 1% of the full-batch
plan's (amplification by sampling is nearly lossless at z' >= 2.5) while each step
reads about q n >= 10,000 rows instead of n. The default samples only up to
q = ``MAX_SAMPLED_RATE`` = 0.1 (from n = 100,000): above it a sampled step saved
little here (ijcnn1, n = 49,990, q = 0.2: 0.69 s vs 1.38 s per fit) for a measurable
loss. ``accounting="paper"`` is TTZ's full-batch calibration only.
"""

from __future__ import annotations

import math

import numpy as np

from .._progress import steps
from .._sets import L2Ball
from ._base import Plan, register
from ._common import (check_gaussian_delta, clipped_sum_source, default_clip_norm, gradient_steps_plan,
                      noise_stream, noisy_clipped_gradient)

__all__ = ["frank_wolfe_gaussian", "plan_frank_wolfe_gaussian", "default_n_iter", "paper_noise_multiplier"]

#: largest Poisson sampling rate of the default (``batch_size=None``) plan
MAX_SAMPLED_RATE = 0.1
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
                              accounting="tight", l2_reg=0.0, batch_size=None):
    """Calibration, T and sampling rate of :func:`frank_wolfe_gaussian` from public values only."""
    check_gaussian_delta(epsilon, delta, "frank_wolfe_gaussian")
    if not isinstance(constraint, L2Ball):
        raise TypeError(f"solver 'frank_wolfe_gaussian' supports L2Ball, got {type(constraint).__name__}.")
    C = float(clip_norm) if clip_norm is not None else default_clip_norm(public, constraint)
    T = int(max_iter) if max_iter is not None else default_n_iter(public, constraint, epsilon, C)
    q, z, sigma, event, relation = gradient_steps_plan(
        public.n, epsilon, delta, T, C, accounting, batch_size,
        lambda: paper_noise_multiplier(epsilon, delta, T, public.n), max_rate=MAX_SAMPLED_RATE)
    return Plan(event, float(epsilon), float(delta), T, z, constraint,
                {"clip_norm": C, "sigma": sigma, "radius": constraint.radius, "l2_reg": l2_reg,
                 "sampling_rate": q, "neighboring_relation": relation})


def run_frank_wolfe_gaussian(problem, plan, rng):
    """Frank-Wolfe steps on noisy clipped gradients; the last iterate (Gram path when exact)."""
    info, constraint = plan.info, plan.constraint
    q = info["sampling_rate"]
    gram = clipped_sum_source(problem, constraint, info["clip_norm"], q)
    theta = np.zeros(problem.dim)
    noise = noise_stream(rng, info["sigma"], info["clip_norm"], problem.dim, plan.n_iter)  # drawn ahead
    for t in steps(plan.n_iter):
        g = noisy_clipped_gradient(problem, theta, info["clip_norm"], info["sigma"], rng, l2_reg=info["l2_reg"],
                                   sampling_rate=q, gram=gram, noise=noise)
        mu = 2.0 / (t + 2.0)
        theta = (1.0 - mu) * theta + mu * constraint.lmo(g)
    return theta


@register("frank_wolfe_gaussian", plan=plan_frank_wolfe_gaussian, pure_dp=False, constraints=("l2",), requires=("smooth",))
def frank_wolfe_gaussian(problem, constraint, *, epsilon, delta, rng, max_iter=None, clip_norm=None,
                         accounting="tight", l2_reg=0.0, batch_size=None, plan=None):
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
    batch_size : int or "full", default=None
        ``None``: full batches, or at large n (``accounting="tight"``) Poisson samples
        at the public rate ``default_sampling_rate`` of ``dp_sklearn.solvers._common``;
        ``"full"`` forces full batches; an int: Poisson samples of this expected size
        (see the module docstring).
    plan : Plan, default=None
        A plan from :func:`plan_frank_wolfe_gaussian` (computed if ``None``).

    Returns
    -------
    SolverResult
        ``coef`` = theta_T.
    """
    if plan is None:
        plan = plan_frank_wolfe_gaussian(problem, constraint, epsilon=epsilon, delta=delta, max_iter=max_iter,
                                         clip_norm=clip_norm, accounting=accounting, l2_reg=l2_reg,
                                         batch_size=batch_size)
    return plan.result(run_frank_wolfe_gaussian(problem, plan, rng))
