"""Noisy Newton steps with a privatized bound on the Hessian: a few passes for the smooth GLM losses.

The method is a noisy Newton iteration in the sense of Avella-Medina, Bradshaw & Loh,
"Differentially private inference via noisy optimization", Annals of Statistics 51(5), 2023
(Section 3, the noisy Newton algorithm: theta_{k+1} = theta_k - (H_k + W_k)^{-1}
(g_k + Z_k), a privatized gradient and a privatized curvature matrix per step, their privacy
by Gaussian composition), with one change that makes it a one-Hessian method: the curvature
matrix is the *global* quadratic bound of the loss (Bohning & Lindsay, "Monotonicity of
quadratic-approximation algorithms", Ann. Inst. Stat. Math. 40, 1988, Section 3: the
logistic Hessian is at most X^T X / 4 everywhere; the squared loss's Hessian is X^T X;
the multinomial Hessian with K classes is at most ``(1/2) (I_K - 1 1^T / K) (x) X^T X``
(Bohning, "Multinomial logistic regression algorithm", Ann. Inst. Stat. Math. 44, 1992),
here bounded by ``(1/2) I_K (x) X^T X``, so the p x p Gram matrix serves all K outputs), so it
is released **once**, as the noisy Gram matrix of AdaSSP (Wang, UAI 2018, Algorithm 2; see
:mod:`dp_sklearn.solvers._ssp`), and every step reuses it. With a majorizing curvature
matrix M >= Hessian, the step theta - M^{-1} grad F is a majorization-minimization step: it
never increases the objective (Bohning & Lindsay 1988, Theorem 4.1) and contracts the
distance to the minimizer by ``1 - h / m`` per step in a direction of Hessian curvature h and
bound m, independently of the conditioning of X (plain gradient descent contracts by
``1 - h / (c x_norm^2)``, which needs about ``dim / f`` steps on isotropic data).

Releases (replace-one neighbours, normalized units ``||x|| <= B = x_norm``, ``c`` = the
loss's curvature bound):

* the upper triangle of ``X^T X``, l2 sensitivity ``sqrt(2) B^2`` (as in AdaSSP: the change
  ``x x^T - x' x'^T`` has squared Frobenius norm at most ``2 B^4``);
* T clipped gradient sums ``sum_i clip(grad_i, C)``, l2 sensitivity ``2 C`` each.

All T + 1 releases carry Gaussian noise with the same multiplier z relative to their own
sensitivity; T + 1 adaptive Gaussian mechanisms compose exactly into one with multiplier
``z / sqrt(T + 1)`` (Dong, Roth & Su 2019, Corollary 3.3), so
``z = sqrt(T + 1) z_analytic(epsilon, delta)`` (Balle & Wang 2018) and the event is
``SelfComposedDpEvent(GaussianDpEvent(z), T + 1)``. Everything after the releases (the
shift, the eigenvalue floor, the steps, the average) is post-processing.

The preconditioner is ``M = c (X^T X + E + Lambda I) / n + l2_reg I`` (on each of the K
output columns of the feature-major coefficients) with ``E`` the
symmetric Gram noise and ``Lambda`` AdaSSP's high-probability bound on ``||E||_2``
(``sigma_gram sqrt(dim log(2 dim^2 / rho))``, rho = 0.05), so that ``M`` majorizes the
Hessian with probability at least 1 - rho; its eigenvalues are floored at
``c Lambda / n + l2_reg`` (deterministic post-processing). T, C, Lambda and every constant
are functions of public values only (``docs/privacy.md``, P4).
"""

from __future__ import annotations

import math

import numpy as np
import scipy.linalg
import scipy.sparse as sp

from .. import _noise
from .._progress import steps
from .._gram import GRAM_MAX_DIM, _sparse_gram
from .._sets import Unconstrained
from ._base import Plan, register
from ._common import check_gaussian_delta, curvature_share, default_clip_norm, gaussian_steps_plan, noise_stream, noisy_clipped_gradient

__all__ = ["noisy_newton", "plan_noisy_newton", "default_n_iter", "newton_applies", "CONTRACTION_TARGET",
           "MAX_DIM"]

#: rho of AdaSSP (Wang 2018, Algorithm 2; as in :mod:`dp_sklearn.solvers._ssp`): the shift makes the
#: noisy Gram matrix dominate the exact one with probability >= 1 - rho
FAILURE_PROBABILITY = 0.05
#: the default T shrinks the initial error by this factor at the loss's typical contraction
CONTRACTION_TARGET = 0.01
#: "auto" takes noisy_newton when the Gram noise shift is at most this share of the mean
#: eigenvalue of X^T X for rows on the bound (see :func:`newton_applies`)
SIGNAL_RATIO = 0.25
#: largest number of design columns (the p x p Gram matrix is formed and factorized)
MAX_DIM = GRAM_MAX_DIM


def default_n_iter(loss):
    """Data-independent T: ``ceil(log(1 / CONTRACTION_TARGET) / f)``, f the public curvature share.

    A majorization step contracts the error by ``1 - h / m`` in a direction where the
    Hessian's curvature is h and the bound's is m. For the squared loss h = m (f = 1, up
    to the noise shift Lambda); for the logistic loss ``h / m`` is the ratio of
    ``sigma'(margin)`` to its bound 1/4, ``f = curvature_share(loss)`` = 0.18 at the typical
    fitted margin 3 (:func:`dp_sklearn.solvers._common.curvature_share`). T steps shrink
    the initial error to ``(1 - f)^T <= exp(-f T)``; T = log(100) / f makes it 1%:
    5 steps for the squared loss, 26 for the logistic loss.
    """
    return int(math.ceil(math.log(1.0 / CONTRACTION_TARGET) / curvature_share(loss)))


def _shift(sigma_gram, dim):
    """AdaSSP's bound on the spectral norm of the symmetric Gram noise (Wang 2018, Algorithm 2)."""
    return sigma_gram * math.sqrt(dim * math.log(2.0 * dim**2 / FAILURE_PROBABILITY)) if sigma_gram > 0 else 0.0


def newton_applies(public, epsilon, delta, max_iter=None):
    """Public test of the default choice: dim within ``MAX_DIM``, then a rule per loss.

    * binary logistic loss (``n_outputs == 1``, not ``gram_path``): always (the accelerated
      steps, :func:`_accelerated`). On the tabular suite's tuning half (7 binary datasets,
      5 seeds, epsilon 0.5 / 1 / 2 / 5) the paired difference of the normalized score against
      ``noisy_gd`` was +0.206 (standard error 0.064) / +0.120 (0.048) / +0.002 (0.017) /
      -0.006 (0.006); on ijcnn1 and adult it scored higher than ``noisy_gd`` at epsilon >= 1
      and within 0.004 ROC AUC on dense synthetic data
      (``benchmarks/results/few_pass_accuracy.md``; ``benchmarks/tabular/README.md``,
      "Evidence for defaults");
    * multinomial loss: never (on the tuning half's yogurt and digits it scored 0.04-0.10
      lower than ``noisy_gd``; its bound ``(1/2) I_K (x) X^T X`` overstates the curvature of
      a rare class);
    * squared loss: the Gram noise well below the signal, as follows.

    The preconditioner's noise shift ``Lambda`` (see the module docstring) must not exceed
    ``SIGNAL_RATIO * n x_norm^2 / dim``, a quarter of the mean eigenvalue of ``X^T X`` for
    rows on the public bound. The shift slows the contraction in a direction of curvature g
    from ``1 - f`` to ``1 - f g / (g + Lambda)``; at a quarter of the mean eigenvalue the mean
    direction keeps 80% of its unshifted rate, so :func:`default_n_iter`'s T still shrinks
    the error to about 2% there, and rows whose norms are half the bound (their eigenvalues
    a quarter of it) still keep half. Above it the bound is dominated by noise, each step is
    a short gradient step, and noisy gradient descent with its longer schedule is the better
    use of the budget. ``DPRidge``'s ``solver="auto"`` uses this test. On the tabular suite's tuning half (2 seeds, epsilon 1 and 5) the
    mean normalized score with this rule was 0.716 / 0.883 against 0.717 / 0.883 for
    ``noisy_gd`` (0.715 / 0.885 with the ratio 1). Only n, dim, x_norm, epsilon and delta
    enter (``docs/privacy.md``, P4).
    """
    p = _gram_dim(public)
    if not (p <= MAX_DIM and 0 < delta < 1 and math.isfinite(epsilon)):
        return False
    if not public.loss.gram_path:
        return public.loss.n_outputs == 1
    T = int(max_iter) if max_iter is not None else default_n_iter(public.loss)
    z, _, _ = gaussian_steps_plan(epsilon, delta, T + 1)
    lam = _shift(z * math.sqrt(2.0) * public.x_norm**2, p)
    return lam <= SIGNAL_RATIO * public.n * public.x_norm**2 / p


def _gram_dim(public):
    """Columns of the normalized design: the coefficients are feature-major, dim = p K."""
    return public.dim // public.loss.n_outputs


def plan_noisy_newton(public, constraint, *, epsilon, delta, max_iter=None, l2_reg=0.0, clip_norm=None):
    """Calibration of :func:`noisy_newton` from public values only (see the module docstring)."""
    if not isinstance(constraint, Unconstrained):
        raise TypeError(f"solver 'noisy_newton' fits the penalized objective only, got {type(constraint).__name__}.")
    p = _gram_dim(public)
    if p > MAX_DIM:
        raise ValueError(f"solver='noisy_newton' supports at most {MAX_DIM} coefficients per output (it forms "
                         f"the p x p Gram matrix), got {p}.")
    check_gaussian_delta(epsilon, delta, "noisy_newton")
    T = int(max_iter) if max_iter is not None else default_n_iter(public.loss)
    C = float(clip_norm) if clip_norm is not None else default_clip_norm(public, constraint)
    z, event, eps_out = gaussian_steps_plan(epsilon, delta, T + 1)
    B = public.x_norm
    s_gram = z * math.sqrt(2.0) * B**2
    return Plan(event, eps_out, float(delta), T, z, constraint,
                {"clip_norm": C, "sigma": z * 2.0 * C, "sigma_gram": s_gram, "shift": _shift(s_gram, p),
                 "l2_reg": l2_reg, "curvature": public.loss.curvature, "sampling_rate": 1.0, "passes": T + 1,
                 "sensitivities": {"gram": math.sqrt(2.0) * B**2, "gradient": 2.0 * C}})


def _noisy_gram(X, sigma, rng, sensitivity):
    """X^T X plus symmetric Gaussian noise (upper triangle i.i.d. N(0, sigma^2), mirrored).

    The upper triangle (replace-one l2 ``sensitivity``) is released through the noise layer
    (:func:`dp_sklearn._noise.add_gaussian`), exact on its grid, as ``ssp`` releases it.
    """
    if hasattr(X, "gram_xty"):  # a design on a dask cluster (dp_sklearn._dask_design): summed over blocks
        G = np.array(X.gram_xty()[0], dtype=np.float64)
    else:
        G = _sparse_gram(X) if sp.issparse(X) else np.asarray(X.T @ X, dtype=np.float64)  # one pass
    if sigma > 0:
        iu = np.triu_indices(G.shape[0])
        G[iu] = _noise.add_gaussian(rng, G[iu], sigma, sensitivity)
        G = np.triu(G) + np.triu(G, 1).T
    return G


def _average_from(loss, T):
    """First step of the released average: the last iterate for a quadratic loss (the loss's
    ``gram_path`` declaration: the squared loss), the second half otherwise (logistic losses).

    For the squared loss M is the Hessian up to the noise shift, T = 5 is short, and an
    average over the second half includes iterates still contracting towards the minimizer
    (on dense synthetic data at n = 10^4 x 20 and 10^5 x 100, epsilon = 1, the last iterate
    scored 0.0007-0.0017 higher R^2 over 3 seeds); for the logistic losses (T = 26, slower
    contraction, more noise per step) averaging the second half scored higher (0.002 accuracy at
    10^4 x 20). A function of the public loss and T only.
    """
    return T - 1 if loss.gram_path else T // 2


def _accelerated(loss):
    """Whether the steps use Nesterov's momentum: for the losses whose Hessian the bound M overstates.

    With M >= Hessian (the shifted noisy Gram matrix), a step theta - M^{-1} grad F is a
    gradient step of length 1 in the M-norm on an objective that is 1-smooth in that norm, so
    Nesterov's accelerated method ("A method for solving the convex programming problem with
    convergence rate O(1/k^2)", Soviet Math. Doklady 27, 1983; the extrapolation weight
    ``t / (t + 3)`` as in Beck & Teboulle's FISTA, SIAM J. Imaging Sci. 2(1), 2009) applies in
    that norm: the error after T steps falls like ``(1 - sqrt(h / m))^T`` instead of
    ``(1 - h / m)^T`` in a direction where the Hessian's curvature is h and the bound's m. For
    the logistic losses ``h / m`` is the curvature share (0.18 at the typical margin) times the
    share of the Gram eigenvalue left after the noise shift, often far below 1, and the plain
    steps stop short of the minimizer in the directions of small eigenvalues (the ijcnn1 loss
    of ``benchmarks/results/few_pass_accuracy.md``). For the squared loss M is the Hessian up to
    the shift, the plain steps converge in a few steps, and they are kept. Only the loss's
    public ``gram_path`` declaration enters; the extrapolation is post-processing of the
    released gradients.
    """
    return not loss.gram_path


def run_noisy_newton(problem, plan, rng):
    """Release the noisy Gram matrix once, then T noisy majorization steps; average of the last iterates."""
    info, T, n = plan.info, plan.n_iter, problem.n
    G = _noisy_gram(problem.X, info["sigma_gram"], rng, info["sensitivities"]["gram"])
    c, lam, l2 = info["curvature"], info["shift"], info["l2_reg"]
    w, V = scipy.linalg.eigh(G, overwrite_a=True, check_finite=False)
    w = c * (w + lam) / max(n, 1) + l2
    floor = max(c * lam / max(n, 1) + l2, 1e-12 * c * problem.x_norm**2)
    np.maximum(w, floor, out=w)
    Vs = V / np.sqrt(w)  # M^{-1} = Vs Vs^T
    K = problem.loss.n_outputs
    theta = np.zeros(problem.dim)
    prev = theta
    avg = np.zeros_like(theta)
    start = _average_from(problem.loss, T)
    accelerate = _accelerated(problem.loss)
    noise = noise_stream(rng, info["sigma"], info["clip_norm"], problem.dim, T)  # all T steps' noise, drawn ahead
    for t in steps(T):  # T data-independent steps
        point = theta + (t / (t + 3.0)) * (theta - prev) if accelerate else theta  # Nesterov's extrapolation
        g = noisy_clipped_gradient(problem, point, info["clip_norm"], info["sigma"], rng, l2_reg=l2, noise=noise)
        prev, theta = theta, point - (Vs @ (Vs.T @ g.reshape(-1, K))).ravel()
        if t >= start:
            avg += theta
    return avg / (T - start)


@register("noisy_newton", plan=plan_noisy_newton, pure_dp=False, constraints=("none",),
          losses=("squared", "logistic", "multinomial"))
def noisy_newton(problem, constraint, *, epsilon, delta, rng, max_iter=None, l2_reg=0.0, clip_norm=None, plan=None):
    """Noisy Newton steps preconditioned by a once-privatized Hessian bound (see the module docstring).

    Parameters
    ----------
    problem : Problem
        Normalized data (dense or CSR; only the p x p Gram matrix of its columns is formed),
        squared, logistic or multinomial loss.
    constraint : Unconstrained
        The explicitly penalized objective only.
    epsilon, delta : float
        Target guarantee; ``delta`` must be in (0, 1).
    rng : numpy.random.Generator
        Source of the noise.
    max_iter : int, default=None
        T, the number of noisy gradient releases; ``None`` uses :func:`default_n_iter`.
    l2_reg : float, default=0.0
        Mean-scale l2 penalty of the objective.
    clip_norm : float, default=None
        Per-example gradient clip norm C; ``None`` uses
        :func:`dp_sklearn.solvers._common.default_clip_norm`.
    plan : Plan, default=None
        A plan from :func:`plan_noisy_newton` (computed if ``None``).

    Returns
    -------
    SolverResult
        The average of the last ``T - T // 2`` iterates (logistic losses) or the last iterate
        (squared loss); ``n_iter`` = T; ``info["passes"]`` = T + 1 (the Gram matrix, then one
        pass per step).

    Raises
    ------
    ValueError
        If ``delta`` is not in (0, 1) or the design has more than ``MAX_DIM`` columns
        (before the data is used).
    TypeError
        If ``constraint`` is not ``Unconstrained``.
    """
    if plan is None:
        plan = plan_noisy_newton(problem, constraint, epsilon=epsilon, delta=delta, max_iter=max_iter,
                                 l2_reg=l2_reg, clip_norm=clip_norm)
    return plan.result(run_noisy_newton(problem, plan, rng))
