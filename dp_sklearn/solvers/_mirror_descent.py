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
  step is projected gradient descent (TTZ eq. (13)). ``Unconstrained`` (an estimator
  with an explicit l2 penalty) is served on the ball of radius ``coef_radius``
  (default: the loss's data-independent ``prior_coef_norm``, as objective
  perturbation does).

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
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import logsumexp

from .._accounting import composed_gaussian_noise_multiplier
from .._sets import L1Ball, L2Ball, Unconstrained
from ._base import SolverResult, gaussian_steps_event, register
from ._ight import _check_gaussian_delta
from ._noisy_gd import default_clip_norm

__all__ = ["mirror_descent", "default_n_iter", "paper_noise_multiplier"]

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


@register("mirror_descent", pure_dp=False, constraints=("l1", "l2"))
def mirror_descent(problem, constraint, *, epsilon, delta, rng, max_iter=None, clip_norm=None,
                   accounting="tight", l2_reg=0.0, coef_radius=None, step_size=None, **_):
    """Private mirror descent (TTZ Algorithm 1); see the module docstring.

    Parameters
    ----------
    problem : Problem
    constraint : L1Ball, L2Ball or Unconstrained
    epsilon, delta : float
        ``epsilon=np.inf`` runs the same mirror descent without noise.
    rng : numpy.random.Generator
    max_iter : int, default=None
        T; ``None`` uses :func:`default_n_iter`.
    clip_norm : float, default=None
        Per-example gradient l2 clip norm C (normalized units).
    accounting : {"tight", "paper"}
    l2_reg : float
        Mean-scale l2 penalty of the objective.
    coef_radius : float, default=None
        Radius of the l2 ball used when ``constraint`` is ``Unconstrained``.
    step_size : float, default=None
        Multiplier of the default step eta (see the module docstring).

    Returns
    -------
    SolverResult
        ``coef`` = average of theta_2, ..., theta_{T+1}.
    """
    _check_gaussian_delta(epsilon, delta, "mirror_descent")
    if isinstance(constraint, Unconstrained):
        constraint = L2Ball(problem.loss.prior_coef_norm if coef_radius is None else float(coef_radius))
    if not isinstance(constraint, (L1Ball, L2Ball)):
        raise TypeError(f"solver 'mirror_descent' supports L1Ball and L2Ball, got {type(constraint).__name__}.")
    C = float(clip_norm) if clip_norm is not None else default_clip_norm(problem, constraint)
    T = int(max_iter) if max_iter is not None else default_n_iter(problem, constraint, epsilon, delta, C)
    if epsilon == np.inf:
        z = 0.0
    else:
        z = composed_gaussian_noise_multiplier(epsilon, delta, T)
        if accounting == "paper":
            z = max(paper_noise_multiplier(epsilon, delta, T), z)
    sigma = z * 2.0 * C  # on the clipped gradient sum
    X, y, loss, n, dim = problem.X, problem.y, problem.loss, problem.n, problem.dim
    R = constraint.radius
    sig_mean = sigma / n
    curv = loss.curvature
    entropic = isinstance(constraint, L1Ball)
    if entropic:
        # f(w) = L(R (w+ - w-)) is beta-smooth in l1 with beta = R^2 max_jk |H_jk| <= R^2 (phi'' x_inf^2 + lambda).
        beta = R**2 * (curv * problem.x_inf**2 + l2_reg)
        D = math.log(2 * dim)
        noise = R * sig_mean * math.sqrt(2.0 * math.log(2 * dim))  # sqrt(E ||R [b; -b]||_inf^2)
    else:
        beta = curv * problem.x_norm**2 + l2_reg
        D = 0.5 * R**2
        noise = sig_mean * math.sqrt(dim)  # sqrt(E ||b||_2^2)
    eta = 1.0 / beta
    if noise > 0:
        eta = min(eta, math.sqrt(2.0 * D) / (noise * math.sqrt(T)))
    if step_size is not None:
        eta *= float(step_size)
    log_w = np.full(2 * dim, -math.log(2 * dim))  # entropic state: log of the 2p-simplex weights
    theta = np.zeros(dim)
    avg = np.zeros(dim)
    for _ in range(T):
        g = loss.clipped_gradient_sum(X, y, theta, problem.row_norms, C)
        if sigma > 0:
            g = g + rng.normal(0.0, sigma, size=dim)
        g = g / n + l2_reg * theta
        if entropic:
            log_w -= eta * R * np.concatenate([g, -g])
            log_w -= logsumexp(log_w)
            w = np.exp(log_w)
            theta = R * (w[:dim] - w[dim:])
        else:
            theta = constraint.project(theta - eta * g)
        avg += theta
    coef = avg / T
    event, eps_out = gaussian_steps_event(z, T, epsilon)
    return SolverResult(coef, event, eps_out, float(delta), T, z,
                        {"clip_norm": C, "sigma": sigma, "step_size": eta,
                         "mirror_map": "entropic" if entropic else "euclidean", "radius": R})
