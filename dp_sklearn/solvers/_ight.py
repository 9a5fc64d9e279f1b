"""DP iterative gradient hard thresholding (DP-IGHT).

Wang & Gu, "Differentially private iterative gradient hard thresholding for sparse
learning", IJCAI 2019, Algorithm 1 (privacy: Theorem 5.2 and Remark 5.3)::

    theta_t = H_s(theta_{t-1} - eta (grad L(theta_{t-1}) + u_t)),   u_t ~ N(0, sigma^2 I)

with the hard-thresholding operator H_s of their eq. (4.1) (keep the s entries of
largest magnitude). Here the gradient is the mean of per-example gradients clipped to
a public l2 norm C (Abadi et al., CCS 2016; Wang & Gu, Remark 5.3, suggest clipping
for general losses), so the mechanism is private for any data.

Calibration (replace-one neighbours, see ``docs/privacy.md``). Each step releases the clipped gradient sum, whose l2
sensitivity under replace-one neighbours is 2C. ``accounting="tight"``: the T
adaptive Gaussian releases compose exactly into one Gaussian mechanism (Dong, Roth &
Su 2019, Corollary 3.3), so the per-step multiplier is
``z = sqrt(T) * z_analytic(epsilon, delta)`` (Balle & Wang 2018) and the event is
``SelfComposedDpEvent(GaussianDpEvent(z), T)``. ``accounting="paper"``: Wang & Gu's
zCDP calibration. Theorem 5.2 sets sigma^2 = T G^2 / (n^2 rho) on the mean gradient,
which takes the mean's sensitivity to be G / n; under replace-one it is 2G / n, and
their own Lemma 3.6 then gives rho_t = 2 G^2 / (n^2 sigma^2), i.e. 2 rho in total.
We therefore use sigma^2 = 2 T G^2 / (n^2 rho) (Theorem 5.2's proof with the
replace-one sensitivity), with rho from Remark 5.3 (Bun & Steinke's closed form):
rho = (sqrt(log(1/delta) + epsilon) - sqrt(log(1/delta)))^2. As a multiplier of the
sensitivity this is ``z = sqrt(T / (2 rho))``, never below the tight one.
"""

from __future__ import annotations

import math

import numpy as np

from .._progress import steps
from .._sets import L0Set
from ._base import Plan, register
from ._common import check_gaussian_delta, default_clip_norm, gaussian_steps_plan, noise_stream, noisy_clipped_gradient

__all__ = ["L0Set", "ight", "plan_ight", "default_n_iter", "default_step_sizes", "paper_noise_multiplier"]

#: bounds on the default number of IGHT steps
MIN_ITER = 5
MAX_ITER = 1000
#: default feature step in units of 1 / (phi''_max a_f), see :func:`default_step_sizes`
DEFAULT_STEP = 0.5


def paper_noise_multiplier(epsilon, delta, T):
    """Wang & Gu (2019) Theorem 5.2 / Remark 5.3, restated for replace-one neighbours.

    rho = (sqrt(log(1/delta) + epsilon) - sqrt(log(1/delta)))^2 (Bun & Steinke 2016,
    Proposition 1.3 inverted); T Gaussian steps of multiplier z are T / (2 z^2)-zCDP,
    so z = sqrt(T / (2 rho)). Equivalent to sigma^2 = 2 T G^2 / (n^2 rho) on the mean
    gradient with per-example gradient norm G.
    """
    L = math.log(1.0 / delta)
    rho = (math.sqrt(L + epsilon) - math.sqrt(L)) ** 2
    return math.sqrt(T / (2.0 * rho))


def _smoothness_parts(problem, constraint):
    """Mean-square bound a_f of a balanced feature column, n_free, p_f (normalized units).

    Rows satisfy ||x||_2 <= x_norm and |x_j| <= x_inf; the free (intercept) columns
    are the constant 1. Balanced columns -- standardized features with the default
    ``data_norm = sqrt(n_features)`` -- have mean squares
    ``a_f = min(x_inf^2, (x_norm^2 - n_free) / p_f)``.
    """
    dim = problem.dim
    n_free = getattr(constraint, "n_free", 0)
    p_f = max(dim - n_free, 1)
    a_f = min(problem.x_inf**2, max(problem.x_norm**2 - n_free, 0.0) / p_f)
    return a_f, n_free, p_f


def default_step_sizes(problem, constraint, step_size=None, l2_reg=0.0):
    """Data-independent per-coordinate steps eta_j = step_size / (phi''_max m_j + l2_reg).

    ``m_j`` is the public mean-square bound of column j: ``a_f`` (see
    :func:`_smoothness_parts`) for a feature, 1 for the constant intercept column.
    IGHT converges linearly when eta is about 1 / beta, with beta the restricted
    smoothness over 2s-sparse supports (Wang & Gu 2019, Definition 3.2 and Theorem
    5.4, eta = C_1 / (beta + mu)). For standardized, weakly correlated features
    (the sparse eigenvalue condition with a small condition number) the restricted
    Hessian is close to ``phi'' a_f I``, so the default ``step_size = 0.5``
    (``DEFAULT_STEP``) assumes beta <= 2 phi''_max a_f. This is an assumption about
    the design, not a guarantee: strongly correlated or uncentered features (e.g.
    raw TF-IDF) need a smaller ``step_size``; ``1 / (2 s + 1)`` is always a descent
    step for balanced columns (the trace of the restricted preconditioned Hessian).
    The intercept step never exceeds 0.5 / phi''_max. Privacy does not depend on
    the step.
    """
    a_f, n_free, p_f = _smoothness_parts(problem, constraint)
    curv = problem.loss.curvature
    rel = DEFAULT_STEP if step_size is None else float(step_size)
    eta = np.full(problem.dim, rel / (curv * a_f + l2_reg) if a_f > 0 else rel / (curv + l2_reg))
    if n_free:
        eta[-n_free:] = min(rel, 0.5) / (curv + l2_reg)
    return eta


def default_n_iter(problem, constraint, epsilon, step_size=None):
    """Data-independent T in the spirit of Wang & Gu Theorem 5.4: T = kappa log(n eps / s).

    With the default steps the restricted condition number of the preconditioned
    problem is about kappa = 1 / step_size, and the log factor is the
    signal-to-noise scale of Theorem 5.4's log(rho n^2 mu^2 ||theta*||^2 / (kappa^2 G^2 s log d))
    with unknown constants dropped. Clipped to [MIN_ITER, MAX_ITER].
    """
    rel = DEFAULT_STEP if step_size is None else float(step_size)
    eps = min(float(epsilon), 1e3)
    log_term = max(1.0, math.log(max(problem.n * eps / constraint.n_nonzero_coefs, 1.0)))
    T = log_term / min(rel, 1.0)
    return int(min(max(math.ceil(T), MIN_ITER), MAX_ITER))


#: cap on the default step in units of 1 / (x_norm * sigma / n), see :func:`ight`
NOISE_STEP_CAP = 0.25

#: release H_s(suffix average of the iterates) instead of the last iterate (a
#: post-processing that damps the noise of the last steps; Algorithm 1 outputs theta_T)
AVERAGE_OUTPUT = True


def plan_ight(public, constraint, *, epsilon, delta, max_iter=None, step_size=None, clip_norm=None,
              accounting="tight", l2_reg=0.0):
    """Calibration, steps and T of :func:`ight` from public values only."""
    if not isinstance(constraint, L0Set):
        raise TypeError(f"solver 'ight' needs an L0Set constraint, got {type(constraint).__name__}.")
    check_gaussian_delta(epsilon, delta, "ight")
    T = int(max_iter) if max_iter is not None else default_n_iter(public, constraint, epsilon, step_size)
    C = float(clip_norm) if clip_norm is not None else default_clip_norm(public, constraint)
    z, event, eps_out = gaussian_steps_plan(epsilon, delta, T, accounting,
                                            lambda: paper_noise_multiplier(epsilon, delta, T))
    sigma = z * 2.0 * C  # on the clipped gradient sum (sensitivity 2C)
    eta = default_step_sizes(public, constraint, step_size, l2_reg)
    if sigma > 0 and step_size is None:
        # Noise-aware cap (public: sigma, n, x_norm): one step moves a coordinate by at
        # most NOISE_STEP_CAP / x_norm per unit of per-step gradient noise sigma / n, so
        # the preconditioned steps do not amplify noise when it dominates (small n eps).
        eta = np.minimum(eta, NOISE_STEP_CAP / (public.x_norm * sigma / public.n))
    return Plan(event, eps_out, float(delta), T, z, constraint,
                {"clip_norm": C, "sigma": sigma, "step_size": eta, "accounting": accounting, "l2_reg": l2_reg})


def run_ight(problem, plan, rng):
    """Hard-thresholded noisy gradient steps with the plan's constants."""
    info, constraint, T = plan.info, plan.constraint, plan.n_iter
    sigma = info["sigma"]
    theta = np.zeros(problem.dim)
    avg = np.zeros(problem.dim)
    start = T // 2
    noise = noise_stream(rng, sigma, info["clip_norm"], problem.dim, T)  # all T steps' noise, drawn ahead
    for t in steps(T):
        g = noisy_clipped_gradient(problem, theta, info["clip_norm"], sigma, rng, l2_reg=info["l2_reg"], noise=noise)
        theta = constraint.hard_threshold(theta - info["step_size"] * g)
        if t >= start:
            avg += theta
    if AVERAGE_OUTPUT and sigma > 0:
        # Post-processing: hard-threshold the suffix average of the iterates.
        theta = constraint.hard_threshold(avg / (T - start))
    return theta


@register("ight", plan=plan_ight, pure_dp=False, constraints=("l0",), requires=("smooth", "single_output"))
def ight(problem, constraint, *, epsilon, delta, rng, max_iter=None, step_size=None, clip_norm=None,
         accounting="tight", l2_reg=0.0, plan=None):
    """DP iterative gradient hard thresholding (Wang & Gu 2019, Algorithm 1).

    Parameters
    ----------
    problem : Problem
        Normalized data (dense or CSR; X is never densified).
    constraint : L0Set
        Sparsity level and free (intercept) coordinates.
    epsilon, delta : float
        Target (epsilon, delta); ``epsilon=np.inf`` runs the non-private IGHT (no
        noise), Wang & Gu's non-private baseline (Jain, Tewari & Kar 2014).
    rng : numpy.random.Generator
        Source of the noise.
    max_iter : int, default=None
        T; ``None`` uses :func:`default_n_iter` (data-independent).
    step_size : float, default=None
        Feature step in units of 1 / (phi''_max a_f), see :func:`default_step_sizes`
        (``None`` means ``DEFAULT_STEP = 0.5``).
    clip_norm : float, default=None
        Per-example gradient l2 clip norm C (normalized units); ``None`` uses
        :func:`dp_sklearn.solvers._common.default_clip_norm`.
    accounting : {"tight", "paper"}, default="tight"
        See the module docstring.
    l2_reg : float, default=0.0
        Mean-scale ridge term added to the objective (not privacy-relevant).
    plan : Plan, default=None
        A plan from :func:`plan_ight` for these arguments (computed if ``None``).

    Returns
    -------
    SolverResult
        ``coef``: H_s of the suffix average of the iterates (theta_T without noise);
        event ``SelfComposedDpEvent(GaussianDpEvent(z), T)``.
    """
    if plan is None:
        plan = plan_ight(problem, constraint, epsilon=epsilon, delta=delta, max_iter=max_iter, step_size=step_size,
                         clip_norm=clip_norm, accounting=accounting, l2_reg=l2_reg)
    return plan.result(run_ight(problem, plan, rng))
