"""Private mirror descent over the l1 ball (entropic map) or the l2 ball (Euclidean map).

Talwar, Thakurta & Zhang, "Private ERM beyond the worst case: the effect of the
constraint set geometry" (full version), Algorithm 1 (A_Noise-MD)::

    theta_{t+1} = argmin_{theta in C} <eta (grad L(theta_t) + b_t), theta> + B_Psi(theta, theta_t),
    b_t ~ N(0, sigma^2 I),      output (1/T) sum_t theta_{t+1}

* l1 ball of radius R (:class:`~dp_sklearn._sets.L1Ball`): theta = R (w+ - w-) with
  w = (w+, w-) on the 2p-simplex and the entropic potential Psi(w) = sum w log w
  (1-strongly convex in ||.||_1; TTZ Section 3.2, polytope case with
  Q = C): the step is the exponentiated-gradient update
  w <- w * exp(-eta R [g; -g]) / Z (Kivinen & Warmuth 1997; Beck & Teboulle 2003),
  started at the uniform w (theta_1 = 0).
* l2 ball of radius R (:class:`~dp_sklearn._sets.L2Ball`): Psi = ||theta||^2 / 2, the
  step is projected gradient descent (TTZ eq. (13)). An estimator with an explicit
  l2 penalty is served on the ball chosen by :func:`dp_sklearn._sets.bounded_domain`.

The gradient is the mean of per-example gradients clipped to a public l2 norm C
(Abadi et al. 2016), so the released sum has replace-one sensitivity 2C for any data.
Step size (data-independent). TTZ Theorem 3.2 analyses Lipschitz losses with
eta = 1 / (L ||Q||_2 sqrt(T)); every dp_sklearn loss is also smooth, so we use the step
of stochastic mirror descent for smooth objectives (Lan, "An optimal method for
stochastic composite optimization", Math. Program. 2012; Nemirovski, Juditsky, Lan &
Shapiro 2009): eta = min(1 / beta, sqrt(2 D_Psi) / (s sqrt(T))), with beta the
smoothness in the map's norm (R^2 (phi''_max x_inf^2 + lambda) for the entropic map in
l1, phi''_max x_norm^2 + lambda for the Euclidean one), D_Psi the potential's range on C
(log(2p), R^2 / 2) and s^2 = E||b_t||_*^2 of the noise on the mean gradient
(2 R^2 sigma^2 log(2p) in l_inf, p sigma^2 in l2); lambda is the mean-scale l2 penalty.
All of these are public.

Calibration. ``accounting="tight"``: T Gaussian releases compose exactly into one
Gaussian (Dong, Roth & Su 2019): z = sqrt(T) z_analytic(epsilon, delta), event
``SelfComposedDpEvent(GaussianDpEvent(z), T)``. ``accounting="paper"``: TTZ Algorithm 1,
sigma^2 = 32 L^2 T log^2(T / delta) / (epsilon n)^2 on the mean gradient (advanced
composition), with L = C; relative to the replace-one sensitivity 2C / n this is
z = sqrt(8 T) log(T / delta) / epsilon. TTZ state it for neighbours that differ in one
record (replace-one), and the exact Gaussian composition certifies it whenever it is
at least the tight multiplier; it is never used below the tight one, so the paper
calibration is private even where its constants would not be.

Poisson-sampled steps (``batch_size``, and the default plan at large n): each step's
clipped sum runs over a Poisson sample (every record independently with probability
q, a public rate) and is divided by the public expected size q n, so the noise on the
mean gradient is sigma / (q n) (the step size uses it). The T steps are the event
``SelfComposedDpEvent(PoissonSampledDpEvent(q, GaussianDpEvent(z')), T)`` calibrated
under replace-one neighbours by the PLD accountant (a replaced record is sampled or
not together with its replacement), sigma = z' C; see ``gradient_steps_plan`` in
``dp_sklearn.solvers._common``, shared with noisy GD. The default rate keeps the
noise on the mean gradient within about 1% of the full-batch plan's (amplification by
sampling is nearly lossless at z' >= 2.5) while each step reads about q n >= 10,000
rows instead of n. The default samples only up to q = ``MAX_SAMPLED_RATE`` = 0.1 (from
n = 100,000): above it the gather of a sampled step saved little here (ijcnn1,
n = 49,990, q = 0.2: 0.87 s vs 0.92 s per fit) for a measurable loss.
``accounting="paper"`` is TTZ's full-batch calibration only.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import logsumexp

from .._progress import steps
from .._sets import L1Ball, L2Ball
from ._base import Plan, register
from ._common import (check_gaussian_delta, clipped_sum_source, default_clip_norm, gradient_steps_plan,
                      noise_stream, noisy_clipped_gradient)

__all__ = ["mirror_descent", "plan_mirror_descent", "default_n_iter", "paper_noise_multiplier"]

#: largest Poisson sampling rate of the default (``batch_size=None``) plan
MAX_SAMPLED_RATE = 0.1
MIN_ITER = 10
MAX_ITER = 500


def paper_noise_multiplier(epsilon, delta, T):
    """TTZ Algorithm 1: sigma = sqrt(32 T) L log(T/delta) / (eps n) over sensitivity 2L/n."""
    return math.sqrt(8.0 * T) * math.log(max(T, 2) / delta) / epsilon


def default_n_iter(problem, constraint, epsilon, delta, clip_norm=None):
    """TTZ Theorem 3.2: T = ||Q||_2^2 eps^2 n^2 / (L^2 log^2(n/delta) (G_Q^2 + ||Q||_2^2)).

    Q = C (its l2 radius R; Gaussian width R sqrt(2 log(2p)) for the l1 ball, R sqrt(p)
    for the l2 ball), L = the clip norm. The R^2 cancels. Clipped to
    [MIN_ITER, MAX_ITER] (the theorem's T grows like n^2 for Lipschitz losses).
    """
    p = problem.dim
    L = default_clip_norm(problem, constraint) if clip_norm is None else float(clip_norm)
    width2 = 2.0 * math.log(2 * p) if isinstance(constraint, L1Ball) else float(p)
    eps = min(float(epsilon), 1e3)
    T = (eps * problem.n) ** 2 / (L**2 * math.log(problem.n / delta) ** 2 * (width2 + 1.0))
    return int(min(max(math.ceil(T), MIN_ITER), MAX_ITER))


def _mirror_step_size(public, constraint, sigma, T, l2_reg, step_size):
    """The data-independent step of the module docstring (Lan 2012), times ``step_size``."""
    R, dim, curv = constraint.radius, public.dim, public.loss.curvature
    sig_mean = sigma / public.n
    if isinstance(constraint, L1Ball):
        # f(w) = L(R (w+ - w-)) is beta-smooth in l1 with beta = R^2 max_jk |H_jk| <= R^2 (phi'' x_inf^2 + lambda).
        beta = R**2 * (curv * public.x_inf**2 + l2_reg)
        D = math.log(2 * dim)
        noise = R * sig_mean * math.sqrt(2.0 * math.log(2 * dim))  # sqrt(E ||R [b; -b]||_inf^2)
    else:
        beta = curv * public.x_norm**2 + l2_reg
        D = 0.5 * R**2
        noise = sig_mean * math.sqrt(dim)  # sqrt(E ||b||_2^2)
    eta = 1.0 / beta
    if noise > 0:
        eta = min(eta, math.sqrt(2.0 * D) / (noise * math.sqrt(T)))
    if step_size is not None:
        eta *= float(step_size)
    return eta


def plan_mirror_descent(public, constraint, *, epsilon, delta, max_iter=None, clip_norm=None, accounting="tight",
                        l2_reg=0.0, step_size=None, batch_size=None):
    """Calibration, T, step and sampling rate of :func:`mirror_descent` from public values only."""
    check_gaussian_delta(epsilon, delta, "mirror_descent")
    if not isinstance(constraint, (L1Ball, L2Ball)):
        raise TypeError(f"solver 'mirror_descent' supports L1Ball and L2Ball, got {type(constraint).__name__}.")
    C = float(clip_norm) if clip_norm is not None else default_clip_norm(public, constraint)
    T = int(max_iter) if max_iter is not None else default_n_iter(public, constraint, epsilon, delta, C)
    q, z, sigma, event, relation = gradient_steps_plan(public.n, epsilon, delta, T, C, accounting, batch_size,
                                                       lambda: paper_noise_multiplier(epsilon, delta, T),
                                                       max_rate=MAX_SAMPLED_RATE)
    eta = _mirror_step_size(public, constraint, sigma / q, T, l2_reg, step_size)  # noise on the sum / q
    entropic = isinstance(constraint, L1Ball)
    return Plan(event, float(epsilon), float(delta), T, z, constraint,
                {"clip_norm": C, "sigma": sigma, "step_size": eta, "mirror_map": "entropic" if entropic else "euclidean",
                 "radius": constraint.radius, "l2_reg": l2_reg, "sampling_rate": q, "neighboring_relation": relation})


def run_mirror_descent(problem, plan, rng):
    """Noisy mirror descent steps with the plan's constants; the average iterate (Gram path when exact)."""
    info, constraint, T = plan.info, plan.constraint, plan.n_iter
    dim, R, eta = problem.dim, constraint.radius, info["step_size"]
    entropic = info["mirror_map"] == "entropic"
    q = info["sampling_rate"]
    gram = clipped_sum_source(problem, constraint, info["clip_norm"], q)
    log_w = np.full(2 * dim, -math.log(2 * dim))  # entropic state: log of the 2p-simplex weights
    theta = np.zeros(dim)
    avg = np.zeros(dim)
    noise = noise_stream(rng, info["sigma"], info["clip_norm"], dim, T)  # all T steps' noise, drawn ahead
    for _ in steps(T):
        g = noisy_clipped_gradient(problem, theta, info["clip_norm"], info["sigma"], rng, l2_reg=info["l2_reg"],
                                   sampling_rate=q, gram=gram, noise=noise)
        if entropic:
            g *= eta * R  # the step on w = (w+, w-) is eta R [g; -g]
            log_w[:dim] -= g
            log_w[dim:] += g
            log_w -= logsumexp(log_w)
            w = np.exp(log_w)
            theta = R * (w[:dim] - w[dim:])
        else:
            theta = constraint.project(theta - eta * g)
        avg += theta
    return avg / T


@register("mirror_descent", plan=plan_mirror_descent, pure_dp=False, constraints=("l1", "l2"))
def mirror_descent(problem, constraint, *, epsilon, delta, rng, max_iter=None, clip_norm=None,
                   accounting="tight", l2_reg=0.0, step_size=None, batch_size=None, plan=None):
    """Private mirror descent (TTZ Algorithm 1); see the module docstring.

    Parameters
    ----------
    problem : Problem
        Normalized data.
    constraint : L1Ball or L2Ball
        Feasible set (entropic map on the l1 ball, Euclidean on the l2 ball).
    epsilon, delta : float
        ``epsilon=np.inf`` runs the same mirror descent without noise.
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
    step_size : float, default=None
        Multiplier of the default step eta (see the module docstring).
    batch_size : int or "full", default=None
        ``None``: full batches, or at large n (``accounting="tight"``) Poisson samples
        at the public rate ``default_sampling_rate`` of ``dp_sklearn.solvers._common``;
        ``"full"`` forces full batches; an int: Poisson samples of this expected size
        (see the module docstring).
    plan : Plan, default=None
        A plan from :func:`plan_mirror_descent` for these arguments (computed if ``None``).

    Returns
    -------
    SolverResult
        ``coef`` = average of theta_2, ..., theta_{T+1}.
    """
    if plan is None:
        plan = plan_mirror_descent(problem, constraint, epsilon=epsilon, delta=delta, max_iter=max_iter,
                                   clip_norm=clip_norm, accounting=accounting, l2_reg=l2_reg, step_size=step_size,
                                   batch_size=batch_size)
    return plan.result(run_mirror_descent(problem, plan, rng))
