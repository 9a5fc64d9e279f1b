"""Sufficient-statistics perturbation for ridge regression (AdaSSP).

Wang, "Revisiting differentially private linear regression: optimal and adaptive
prediction & estimation in unbounded domain", UAI 2018, Algorithm 2 (AdaSSP),
derived here from the paper's algorithm (the paper is not in this repository)::

    lambda_min~ = max(lambda_min(X^T X) + s_1 Z - s_1 sqrt(log(6 / delta)), 0)
    lambda      = max(0, s_2 sqrt(d log(2 d^2 / rho)) - lambda_min~)
    theta       = (X^T X + E + (lambda + n l2_reg) I)^{-1} (X^T y + e)

with Z ~ N(0, 1), E a symmetric Gaussian matrix (its upper triangle i.i.d.) and e a
Gaussian vector: X^T X and X^T y are released once, then everything is
post-processing. rho = 0.05 is the paper's failure probability of the adaptive
ridge; the user's ``alpha`` adds ``n l2_reg`` (mean-scale) to the adaptive ridge.

Sensitivities under replace-one neighbours (normalized units: ||x|| <= B = x_norm,
|y| <= 1):

* lambda_min(X^T X): X^T X changes by x x^T - x' x'^T, whose eigenvalues lie in
  [-B^2, B^2] (a difference of two PSD rank-one matrices of norm <= B^2); by Weyl's
  inequality lambda_min moves by at most **B^2**.
* the upper triangle of X^T X (the entries the noise E perturbs): its squared l2
  change is at most ||x x^T - x' x'^T||_F^2 = ||x||^4 + ||x'||^4 - 2 (x.x')^2 <= 2 B^4,
  so the sensitivity is **sqrt(2) B^2** (tight for orthogonal x, x'; the triangle
  inequality would give 2 B^2).
* X^T y: changes by x y - x' y', of norm at most **2 B** (tight for x' = -x, y' = y).

Calibration (tight): each release gets Gaussian noise of standard deviation z times its
sensitivity; three Gaussian mechanisms with the same multiplier z compose exactly into
one with multiplier z / sqrt(3) (Dong, Roth & Su 2019), so
``z = sqrt(3) z_analytic(epsilon, delta)`` (Balle & Wang 2018) and the event is
``SelfComposedDpEvent(GaussianDpEvent(z), 3)``. The paper's own calibration instead
splits (epsilon, delta) in three with a classical Gaussian bound; its noise levels
``sqrt(log(6 / delta)) / (epsilon / 3)`` times the sensitivity are replaced by ours
(s_1, s_2 above), including in the shift of lambda_min~ and in the adaptive lambda.
X is never densified: X^T X is p x p.
"""

from __future__ import annotations

import math

import numpy as np
import scipy.linalg
import scipy.sparse as sp

from .._losses import check_attrs
from .._sets import Unconstrained
from ._base import Plan, register
from ._common import check_gram_dim, gaussian_steps_plan
from .. import _noise

__all__ = ["ssp", "plan_ssp", "FAILURE_PROBABILITY"]

#: rho of AdaSSP: the adaptive ridge makes the noisy Gram matrix positive definite
#: with probability >= 1 - rho
FAILURE_PROBABILITY = 0.05


def plan_ssp(public, constraint, *, epsilon, delta, l2_reg=0.0):
    """Noise scales of the three releases of :func:`ssp` (public values only)."""
    if not isinstance(constraint, Unconstrained):
        raise TypeError(f"solver 'ssp' fits the penalized objective only, got {type(constraint).__name__}.")
    check_attrs(public.loss, ("gram_path",), "ssp")
    check_gram_dim(public.dim, "ssp")
    z, event, eps_out = gaussian_steps_plan(epsilon, delta, 3)
    B, d = public.x_norm, public.dim
    s_min, s_gram, s_xy = z * B**2, z * math.sqrt(2.0) * B**2, z * 2.0 * B
    shift = s_min * math.sqrt(math.log(6.0 / delta)) if z > 0 else 0.0
    lam_noise = s_gram * math.sqrt(d * math.log(2.0 * d**2 / FAILURE_PROBABILITY)) if z > 0 else 0.0
    return Plan(event, eps_out, float(delta), 1, z, constraint,
                {"sigma_lambda_min": s_min, "sigma_gram": s_gram, "sigma_xty": s_xy, "lambda_min_shift": shift,
                 "lambda_noise": lam_noise, "l2_reg": l2_reg,
                 "sensitivities": {"lambda_min": B**2, "gram": math.sqrt(2.0) * B**2, "xty": 2.0 * B}})


def run_ssp(problem, plan, rng):
    """Release the noisy sufficient statistics and solve the adaptive ridge system."""
    info, X, d = plan.info, problem.X, problem.dim
    gram = X.T @ X
    gram = gram.toarray() if sp.issparse(gram) else np.asarray(gram)
    xty = np.asarray(X.T @ problem.y).ravel()
    lam_min = float(scipy.linalg.eigvalsh(gram, subset_by_index=[0, 0])[0])
    sens = info["sensitivities"]
    B2 = sens["lambda_min"]
    lam_min_noisy = max(_noise.add_gaussian(rng, lam_min, info["sigma_lambda_min"], B2) - info["lambda_min_shift"], 0.0)
    iu = np.triu_indices(d)
    gram[iu] = _noise.add_gaussian(rng, gram[iu], info["sigma_gram"], sens["gram"])  # the upper triangle
    gram = np.triu(gram) + np.triu(gram, 1).T
    xty = _noise.add_gaussian(rng, xty, info["sigma_xty"], sens["xty"])
    lam = max(0.0, info["lambda_noise"] - lam_min_noisy) + problem.n * info["l2_reg"]
    gram[np.diag_indices_from(gram)] += lam
    try:
        return scipy.linalg.solve(gram, xty, assume_a="sym")
    except (np.linalg.LinAlgError, ValueError):  # post-processing: any deterministic solve is private
        return scipy.linalg.lstsq(gram, xty)[0]


@register("ssp", plan=plan_ssp, pure_dp=False, constraints=("none",), requires=("gram_path",))
def ssp(problem, constraint, *, epsilon, delta, rng, l2_reg=0.0, plan=None):
    """Sufficient-statistics perturbation (AdaSSP, Wang 2018, Algorithm 2); see the module docstring.

    Parameters
    ----------
    problem : Problem
        Normalized data (dense or CSR; X is never densified), squared loss.
    constraint : Unconstrained
        Only the explicitly penalized (ridge) objective is supported.
    epsilon, delta : float
        Target guarantee; ``delta`` must be in (0, 1).
    rng : numpy.random.Generator
        Source of the noise.
    l2_reg : float, default=0.0
        The user's mean-scale ridge strength, added to the adaptive ridge as ``n l2_reg``.
    plan : Plan, default=None
        A plan from :func:`plan_ssp` (computed if ``None``).

    Returns
    -------
    SolverResult
        The adaptive ridge solution of the noisy normal equations.
    """
    if plan is None:
        plan = plan_ssp(problem, constraint, epsilon=epsilon, delta=delta, l2_reg=l2_reg)
    return plan.result(run_ssp(problem, plan, rng))
