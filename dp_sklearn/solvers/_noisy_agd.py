"""Accelerated noisy gradient descent with the public curvature bound: a few passes at any dimension.

Each step releases a clipped gradient sum with Gaussian noise, exactly as :mod:`noisy_gd
<dp_sklearn.solvers._noisy_gd>`'s full-batch steps do (per-example clipping to a public norm C,
Abadi et al., CCS 2016; replace-one l2 sensitivity 2C per release). The T releases compose into
one Gaussian with multiplier ``z / sqrt(T)`` (Dong, Roth & Su 2019, Corollary 3.3), so
``z = sqrt(T) z_analytic(epsilon, delta)`` (Balle & Wang 2018) and the event is
``SelfComposedDpEvent(GaussianDpEvent(z), T)``. Everything after the releases (the momentum, the
steps, the average) is post-processing.

The steps are Nesterov's accelerated gradient method ("A method for solving the convex
programming problem with convergence rate O(1/k^2)", Soviet Math. Doklady 27, 1983; the
extrapolation weight ``t / (t + 3)`` as in Beck & Teboulle's FISTA, SIAM J. Imaging Sci. 2(1),
2009), the momentum :mod:`noisy_newton <dp_sklearn.solvers._noisy_newton>` uses, without its
Gram preconditioner: the step is ``1 / (c B^2 + l2_reg)`` with ``c`` the loss's curvature bound
and ``B = x_norm`` the public row bound. The mean loss's Hessian is at most
``c X^T X / n <= c B^2 I`` (the largest eigenvalue of ``X^T X`` is at most its trace
``||X||_F^2 <= n B^2``), so the objective is ``(c B^2 + l2_reg)``-smooth and the step is the
safe gradient step of that bound: no p x p matrix is formed, a step costs one pass over the
data (one product with X and one with X^T), at any number of columns. In a direction where the
Hessian's curvature is h, the error after T accelerated steps falls like
``(1 - sqrt(h / m))^T`` with ``m = c B^2 + l2_reg``, where plain gradient descent needs about
``m / h`` steps; the released coefficients are the average of the last iterates (from step
``AVERAGE_FROM T``, ``SQUARED_AVERAGE_FROM T`` for the squared loss).

T (:func:`default_n_iter`), C and the step are functions of public values only (``docs/privacy.md``,
P4).
"""

from __future__ import annotations

import math

import numpy as np

from .._accounting import gaussian_noise_multiplier
from .._gram import GRAM_MAX_DIM as MAX_DIM  # the column limit of noisy_newton (its MAX_DIM)
from .._progress import steps
from .._sets import Unconstrained
from ._base import Plan, register
from ._common import check_gaussian_delta, default_clip_norm, gaussian_steps_plan, noise_stream, noisy_clipped_gradient

__all__ = ["noisy_agd", "plan_noisy_agd", "agd_applies", "default_n_iter", "average_from", "KAPPA"]

#: constant of the default T (:func:`default_n_iter`), chosen on the tuning half of the sparse sets
KAPPA = 5.0
#: share of the steps before the released average starts (the average of the last tenth of the
#: iterates), chosen with ``KAPPA`` on the tuning half of the sparse sets
AVERAGE_FROM = 0.9
#: the same share for the squared loss (``DPRidge``'s ``solver="auto"`` where ``noisy_newton`` does not
#: apply): the average of the last half of the iterates, chosen on the tuning half of the
#: regression sets (``benchmarks/tabular/README.md``, "Evidence for defaults")
SQUARED_AVERAGE_FROM = 0.5
#: least n / z at which ``solver="auto"`` takes ``noisy_agd`` for the squared loss (see :func:`agd_applies`)
SQUARED_MIN_N_OVER_Z = 5000.0
#: floor and cap of the default T
MIN_ITER, MAX_ITER = 20, 100


def default_n_iter(n, epsilon, delta, kappa=None):
    """Data-independent T: ``ceil(KAPPA (n / z)^(1/3))`` within [``MIN_ITER``, ``MAX_ITER``].

    ``z = z(epsilon, delta)`` is the multiplier of one analytic Gaussian release (Balle & Wang
    2018). Shape. With the step ``eta = 1 / m``, T accelerated steps leave the optimization
    error ``2 R^2 / (eta T^2)`` (Beck & Teboulle 2009, Theorem 4.4). Their noise (per-coordinate
    standard deviation ``s = sqrt(T) z 2C / n`` on the mean gradient, T releases composed) is
    carried by the momentum: with the weights ``t / (t + 3)`` a step's noise at time s moves
    the iterate at time T by about ``eta s / 2 (1 - s^2 / T^2)``, so in a flat direction of
    curvature h the final iterate has variance of order ``eta^2 s^2 T^3`` and costs h / 2
    times that; summed with ``eta tr(H) <= f`` that is of order ``f eta z^2 C^2 T^4 / n^2``.
    The sum is smallest at ``T^6`` proportional to ``R^2 n^2 / (f eta^2 z^2 C^2)``: T grows
    like ``(n / z)^(1/3)``, as :func:`dp_sklearn.solvers._noisy_gd.default_n_iter` grows like
    ``(n / z)^(2/3)``. The constant of that bound reads the prior radius R, which
    overstates the distance to the minimizer by orders of magnitude on normalized text
    data, so the constant ``KAPPA`` is chosen on the tuning half of the sparse sets
    (``benchmarks/tabular/README.md``, "Evidence for defaults"). Only n, epsilon and delta
    enter (``docs/privacy.md``, P4).
    """
    if not math.isfinite(epsilon):
        return MAX_ITER  # no noise: the cap
    z = gaussian_noise_multiplier(epsilon, delta)
    k = KAPPA if kappa is None else kappa
    return int(min(MAX_ITER, max(MIN_ITER, math.ceil(k * (n / z) ** (1.0 / 3.0)))))


def agd_applies(public, epsilon, delta):
    """Public test of ``solver="auto"``'s choice of ``noisy_agd``: the squared loss, or binary logistic loss above ``MAX_DIM`` columns.

    Callers ask it only where :func:`dp_sklearn.solvers._noisy_newton.newton_applies` does not hold.
    Squared loss (``gram_path``; ``DPRidge``): at any number of columns where ``n / z`` is at
    least ``SQUARED_MIN_N_OVER_Z`` (z the one-release Gaussian multiplier of (epsilon, delta)),
    in place of ``noisy_gd``'s hundreds of steps. Below it the noise dominates, the momentum
    carries it (see :func:`default_n_iter`) and ``noisy_gd``'s schedule scored higher (dense
    synthetic data at n / z from 200 to 2700, the bundled diabetes); from it on the held-out R^2
    was at least ``noisy_gd``'s within the paired standard error (dense synthetic 1e4 and 2e4
    rows, the tabular suite's tuning half; ``benchmarks/tabular/README.md``, "Evidence for
    defaults").

    Where :func:`dp_sklearn.solvers._noisy_newton.newton_applies` cannot hold because the design
    has more than ``MAX_DIM`` columns (the p x p Gram matrix is not formed), the binary logistic
    loss takes the accelerated steps with the public bound instead of ``noisy_gd``'s up to 1000
    plain steps. ``KAPPA`` and ``AVERAGE_FROM`` were chosen on the tuning half of the sparse sets
    (the RCV1 subset and reuters money-fx, 5 seeds, epsilon 0.5 / 1 / 2 / 5: the only pair of the
    grid whose held-out ROC AUC and accuracy were at least ``noisy_gd``'s within the paired
    standard error in every cell; ``benchmarks/results/few_pass_highdim_tuning.md``, ``python -m
    benchmarks.few_pass_accuracy --highdim-tune --seeds 5``); news20 is the check
    (``benchmarks/results/few_pass_highdim.md``, ``python -m benchmarks.few_pass_accuracy
    --highdim --seeds 5``). Only the loss, the number of columns, epsilon and delta enter
    (``docs/privacy.md``, P4).
    """
    p = public.dim // public.loss.n_outputs
    if not (0 < delta < 1 and math.isfinite(epsilon) and public.loss.n_outputs == 1):
        return False
    if public.loss.gram_path:
        return public.n / gaussian_noise_multiplier(epsilon, delta) >= SQUARED_MIN_N_OVER_Z
    return p > MAX_DIM


def average_from(loss):
    """Share of the steps before the released average starts: ``SQUARED_AVERAGE_FROM`` for the
    quadratic (``gram_path``) losses, weighted or not, else ``AVERAGE_FROM`` (a public property of the loss)."""
    return SQUARED_AVERAGE_FROM if getattr(loss, "base", loss).gram_path else AVERAGE_FROM


def plan_noisy_agd(public, constraint, *, epsilon, delta, max_iter=None, l2_reg=0.0, clip_norm=None):
    """Calibration of :func:`noisy_agd` from public values only (see the module docstring)."""
    if not isinstance(constraint, Unconstrained):
        raise TypeError(f"solver 'noisy_agd' fits the penalized objective only, got {type(constraint).__name__}.")
    check_gaussian_delta(epsilon, delta, "noisy_agd")
    T = int(max_iter) if max_iter is not None else default_n_iter(public.n, epsilon, delta)
    C = float(clip_norm) if clip_norm is not None else default_clip_norm(public, constraint)
    z, event, eps_out = gaussian_steps_plan(epsilon, delta, T)
    eta = 1.0 / (public.loss.step_curvature * public.x_norm**2 + l2_reg)
    return Plan(event, eps_out, float(delta), T, z, constraint,
                {"clip_norm": C, "sigma": z * 2.0 * C, "step_size": eta, "l2_reg": l2_reg, "sampling_rate": 1.0,
                 "average_from": average_from(public.loss), "passes": T, "sensitivities": {"gradient": 2.0 * C}})


def run_noisy_agd(problem, plan, rng):
    """T accelerated noisy gradient steps from zero; the average of the iterates from step ``average_from T``."""
    info, T = plan.info, plan.n_iter
    eta, l2 = info["step_size"], info["l2_reg"]
    theta = np.zeros(problem.dim)
    prev = theta
    avg = np.zeros_like(theta)
    start = int(info.get("average_from", AVERAGE_FROM) * T)
    noise = noise_stream(rng, info["sigma"], info["clip_norm"], problem.dim, T)  # all T steps' noise, drawn ahead
    for t in steps(T):  # T data-independent steps
        point = theta + (t / (t + 3.0)) * (theta - prev)  # Nesterov's extrapolation
        g = noisy_clipped_gradient(problem, point, info["clip_norm"], info["sigma"], rng, l2_reg=l2, noise=noise)
        prev, theta = theta, point - eta * g
        if t >= start:
            avg += theta
    return avg / (T - start)


@register("noisy_agd", plan=plan_noisy_agd, pure_dp=False, constraints=("none",), requires=("smooth",))
def noisy_agd(problem, constraint, *, epsilon, delta, rng, max_iter=None, l2_reg=0.0, clip_norm=None, plan=None):
    """Accelerated noisy gradient descent with the public step ``1 / (c x_norm^2 + l2_reg)`` (see the module docstring).

    Parameters
    ----------
    problem : Problem
        Normalized data (dense or CSR, any number of columns), a smooth loss.
    constraint : Unconstrained
        The explicitly penalized objective only.
    epsilon, delta : float
        Target guarantee; ``delta`` must be in (0, 1).
    rng : numpy.random.Generator
        Source of the noise.
    max_iter : int, default=None
        T, the number of noisy gradient releases (full passes); ``None`` uses :func:`default_n_iter`.
    l2_reg : float, default=0.0
        Mean-scale l2 penalty of the objective.
    clip_norm : float, default=None
        Per-example gradient clip norm C; ``None`` uses
        :func:`dp_sklearn.solvers._common.default_clip_norm`.
    plan : Plan, default=None
        A plan from :func:`plan_noisy_agd` (computed if ``None``).

    Returns
    -------
    SolverResult
        The average of the iterates from step ``int(average_from T)`` on (:func:`average_from`:
        ``AVERAGE_FROM``, or ``SQUARED_AVERAGE_FROM`` for the squared loss); ``n_iter`` = T;
        ``info["passes"]`` = T.

    Raises
    ------
    ValueError
        If ``delta`` is not in (0, 1) (before the data is used).
    TypeError
        If ``constraint`` is not ``Unconstrained``.
    """
    if plan is None:
        plan = plan_noisy_agd(problem, constraint, epsilon=epsilon, delta=delta, max_iter=max_iter, l2_reg=l2_reg,
                              clip_norm=clip_norm)
    return plan.result(run_noisy_agd(problem, plan, rng))
