"""Two-stage sparse regression: private support selection, then objective perturbation.

Thakurta (2013) dissertation, Chapter 6, Algorithm 6.2 ("meta-algorithm for sparse
linear regression": privately select a support, then run objective perturbation
restricted to it) -- the "Two stage [Kifer et al., 2012]" baseline of Wang & Gu
(IJCAI 2019, Section 6).

The dissertation's selectors are infeasible at scale: Exp-mech (Algorithm 6.3)
enumerates all C(p, s) supports with a restricted least-squares fit each, and
A_samp (Algorithm 6.1) needs millions of subsamples. This module implements a
**practical selector instead, which is not the dissertation's**: top-s selection
by the exponential mechanism on the per-feature marginal score

    u_j(D) = |sum_i x_ij y_i|     (x normalized, |x_ij| <= x_inf, |y_i| <= 1)

whose sensitivity under replace-one neighbours (SPEC P1) is Delta = 2 x_inf for
every j (| |a| - |b| | <= |a - b|). The s features are selected at once with the
one-shot Gumbel top-k trick: adding Gumbel(2 Delta / eps0) noise to every score
and keeping the s largest has the same distribution as s rounds of peeling with the
exponential mechanism exp(eps0 u / (2 Delta)) (Durfee & Rogers, "Practical
differentially private top-k selection with pay-what-you-get composition",
NeurIPS 2019, Lemma 4.2). Each round is eps0-DP and eps0^2/8-zCDP (bounded range,
Cesar & Rogers, ALT 2021).

Budget split (documented, data-independent): stage 1 gets ``selection_share``
(default 0.5) of epsilon and half of delta; stage 2, objective perturbation
(:func:`dp_sklearn.solvers._objective_perturbation.objective_perturbation`,
Thakurta Algorithm 3.1 with approximate-minimum output noise) on the selected
columns, gets the rest. The whole release is (epsilon, delta)-DP by basic
composition; the event is ``ComposedDpEvent([stage1, stage2])``.

Stage-1 calibration. ``accounting="tight"`` (delta > 0): rho1 = largest zCDP
parameter that is (eps1, delta / 2)-DP by the RDP accountant, eps0 = sqrt(8 rho1 / s),
recorded as ``EpsilonDeltaDpEvent(eps1, delta / 2)`` (rho1 in ``info``) so that the
ledger's PLD accountant composes the two stages; stage 2 then gets delta / 2. When
basic composition gives a larger eps0 (few selections), it is used instead. ``accounting="paper"`` or delta = 0: the dissertation's
pure exponential mechanism with basic composition, eps0 = eps1 / s, event
``SelfComposedDpEvent(EpsilonDeltaDpEvent(eps0, 0), s)``, and stage 2 gets all of delta.
"""

from __future__ import annotations

import math

import numpy as np
import scipy.sparse as sp
from dp_accounting import dp_event

from .._accounting import EpsilonDeltaDpEvent, zcdp_rho
from .._data import Problem
from .._exact import minimize
from .._sets import Unconstrained
from ._base import SolverResult, register
from ._ight import L0Set
from ._objective_perturbation import objective_perturbation

__all__ = ["two_stage", "selection_scores", "SELECTION_SHARE"]

#: default share of epsilon spent on support selection
SELECTION_SHARE = 0.5


def selection_scores(problem, n_head):
    """u_j = |sum_i x_ij y_i| for the first ``n_head`` columns, and its sensitivity 2 x_inf."""
    X, y = problem.X, problem.y
    u = np.abs(np.asarray(X.T @ y).ravel()[:n_head])
    return u, 2.0 * problem.x_inf


def _restrict(problem, cols):
    X = problem.X
    Xs = X[:, cols]
    if sp.issparse(Xs):
        Xs = sp.csr_matrix(Xs)
        row_norms = np.sqrt(np.asarray(Xs.multiply(Xs).sum(axis=1)).ravel())
    else:
        row_norms = np.linalg.norm(Xs, axis=1)
    # A public bound on the restricted rows: min(x_norm, sqrt(k) x_inf).
    x_norm = min(problem.x_norm, math.sqrt(len(cols)) * problem.x_inf)
    return Problem(Xs, problem.y, problem.loss, x_norm, problem.x_inf, row_norms, problem.l2_reg)


@register("two_stage", pure_dp=True, constraints=("l0",), losses=("squared", "logistic"))
def two_stage(problem, constraint, *, epsilon, delta, rng, accounting="tight", tol=1e-8, l2_reg=0.0,
              selection_share=SELECTION_SHARE, coef_radius=None, **_):
    """Private top-s support selection, then objective perturbation on the support.

    Parameters
    ----------
    problem : Problem
    constraint : L0Set
        ``n_nonzero_coefs`` features are selected; the ``n_free`` trailing (intercept)
        columns are always kept and never scored.
    epsilon, delta : float
        Total budget; ``epsilon=np.inf`` selects the exact top-s scores and fits the
        restricted problem exactly (the non-private two-stage estimator).
    rng : numpy.random.Generator
    accounting : {"tight", "paper"}
        Stage-1 composition, see the module docstring.
    tol : float
        Certified gradient tolerance of the stage-2 exact solver (SPEC P5).
    l2_reg : float
        Mean-scale ridge term of the stage-2 objective.
    selection_share : float in (0, 1)
        Share of epsilon spent on selection.
    coef_radius : float, default=None
        Passed to objective perturbation (its data-independent prior on ||theta||
        and, for the squared loss, the l2-ball radius).

    Returns
    -------
    SolverResult
    """
    if not isinstance(constraint, L0Set):
        raise TypeError(f"solver 'two_stage' needs an L0Set constraint, got {type(constraint).__name__}.")
    if not 0 < selection_share < 1:
        raise ValueError(f"selection_share must be in (0, 1), got {selection_share!r}.")
    dim = problem.dim
    m = constraint.n_head(dim)
    s = min(constraint.n_nonzero_coefs, m)
    u, sens = selection_scores(problem, m)
    if epsilon == np.inf:
        sel = np.argpartition(-u, s - 1)[:s] if s < m else np.arange(m)
        cols = np.concatenate([np.sort(sel), np.arange(m, dim)])
        sub = _restrict(problem, cols)
        theta_s = minimize(sub, Unconstrained(), l2_reg=l2_reg, tol=tol)
        coef = np.zeros(dim)
        coef[cols] = theta_s
        return SolverResult(coef, dp_event.NonPrivateDpEvent(), float("inf"), float(delta), 1, 0.0, {})
    eps1 = selection_share * float(epsilon)
    eps2 = float(epsilon) - eps1
    eps0 = eps1 / s  # pure exponential mechanisms, basic composition (the dissertation's)
    rho1 = None
    event1 = dp_event.SelfComposedDpEvent(EpsilonDeltaDpEvent(float(eps0), 0.0), s)
    delta1, delta2 = 0.0, float(delta)  # stage 1 is pure
    if delta > 0 and accounting != "paper":
        rho = zcdp_rho(eps1, 0.5 * float(delta))
        if math.sqrt(8.0 * rho / s) > eps0:  # zCDP composition wins unless s is small
            rho1, eps0 = rho, math.sqrt(8.0 * rho / s)
            delta1, delta2 = 0.5 * float(delta), 0.5 * float(delta)
            # rho1-zCDP is (eps1, delta1)-DP (RDP accountant); recorded as that generic event so
            # that a ledger composes both stages through the PLD accountant (a ZCDpEvent would
            # push it to the looser RDP-conversion fallback).
            event1 = EpsilonDeltaDpEvent(float(eps1), float(delta1))
    # Exponential mechanism exp(eps0 u / (2 sens)) by Gumbel-max; top-s at once (Durfee & Rogers 2019).
    noisy = eps0 * u / (2.0 * sens) + rng.gumbel(size=m)
    sel = np.argpartition(-noisy, s - 1)[:s] if s < m else np.arange(m)
    cols = np.concatenate([np.sort(sel), np.arange(m, dim)])
    sub = _restrict(problem, cols)
    res2 = objective_perturbation(sub, Unconstrained(), epsilon=eps2, delta=delta2,
                                  rng=rng, tol=tol, l2_reg=l2_reg, coef_radius=coef_radius)
    coef = np.zeros(dim)
    coef[cols] = res2.coef
    event = dp_event.ComposedDpEvent([event1, res2.event])
    return SolverResult(coef, event, float(epsilon), float(delta), 1, eps0,
                        {"selection_epsilon0": eps0, "selection_sensitivity": sens, "stage2": res2.info,
                         "selection_rho": rho1,
                         "selection_share": selection_share})
