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

whose sensitivity under replace-one neighbours is Delta = 2 x_inf for
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
from .._sets import L0Set, Unconstrained
from ._base import Plan, PublicProblem, register
from ._objective_perturbation import plan_objective_perturbation, run_objective_perturbation
from .. import _noise

__all__ = ["two_stage", "plan_two_stage", "selection_scores", "SELECTION_SHARE"]

#: default share of epsilon spent on support selection
SELECTION_SHARE = 0.5


def selection_scores(problem, n_head):
    """u_j = |sum_i x_ij y_i| for the first ``n_head`` columns, and its sensitivity 2 x_inf."""
    X, y = problem.X, problem.y
    u = np.abs(np.asarray(X.T @ y).ravel()[:n_head])
    return u, 2.0 * problem.x_inf


def _restricted_x_norm(public, k):
    """A public bound on the rows restricted to k columns: min(x_norm, sqrt(k) x_inf)."""
    return min(public.x_norm, math.sqrt(k) * public.x_inf)


def _restrict(problem, cols):
    X = problem.X
    Xs = X[:, cols]
    if sp.issparse(Xs):
        Xs = sp.csr_matrix(Xs)
        row_norms = np.sqrt(np.asarray(Xs.multiply(Xs).sum(axis=1)).ravel())
    else:
        row_norms = np.linalg.norm(Xs, axis=1)
    x_norm = _restricted_x_norm(problem, len(cols))
    return Problem(Xs, problem.y, problem.loss, x_norm, problem.x_inf, row_norms, problem.l2_reg)


def _selection(epsilon, delta, s, accounting, selection_share):
    """eps0, event, (delta1, delta2) and rho1 of the top-s selection (public)."""
    eps1 = selection_share * float(epsilon)
    eps0 = eps1 / s  # pure exponential mechanisms, basic composition (the dissertation's)
    event1 = dp_event.SelfComposedDpEvent(EpsilonDeltaDpEvent(float(eps0), 0.0), s)
    if delta > 0 and accounting != "paper":
        rho = zcdp_rho(eps1, 0.5 * float(delta))
        if math.sqrt(8.0 * rho / s) > eps0:  # zCDP composition wins unless s is small
            # rho-zCDP is (eps1, delta / 2)-DP (RDP accountant); recorded as that generic event so
            # that a ledger composes both stages through the PLD accountant (a ZCDpEvent would
            # push it to the looser RDP-conversion fallback).
            return math.sqrt(8.0 * rho / s), EpsilonDeltaDpEvent(float(eps1), 0.5 * float(delta)), 0.5 * float(delta), rho
    return eps0, event1, float(delta), None  # stage 1 is pure: stage 2 gets all of delta


def plan_two_stage(public, constraint, *, epsilon, delta, accounting="tight", tol=1e-8, l2_reg=0.0,
                   selection_share=SELECTION_SHARE, coef_radius=None):
    """Budget split, selection calibration and the stage-2 plan of :func:`two_stage` (public values only)."""
    if not isinstance(constraint, L0Set):
        raise TypeError(f"solver 'two_stage' needs an L0Set constraint, got {type(constraint).__name__}.")
    if not 0 < selection_share < 1:
        raise ValueError(f"selection_share must be in (0, 1), got {selection_share!r}.")
    m = constraint.n_head(public.dim)
    s = min(constraint.n_nonzero_coefs, m)
    k = s + public.dim - m
    sens = 2.0 * public.x_inf
    info = {"n_head": m, "s": s, "selection_sensitivity": sens, "selection_share": selection_share,
            "tol": tol, "l2_reg": l2_reg}
    if epsilon == np.inf:
        return Plan(dp_event.NonPrivateDpEvent(), float("inf"), float(delta), 1, 0.0, constraint, info)
    eps0, event1, delta2, rho1 = _selection(epsilon, delta, s, accounting, selection_share)
    sub = PublicProblem(public.n, k, _restricted_x_norm(public, k), public.x_inf, public.loss, l2_reg)
    eps2 = float(epsilon) - selection_share * float(epsilon)
    plan2 = plan_objective_perturbation(sub, Unconstrained(), epsilon=eps2, delta=delta2, tol=tol, l2_reg=l2_reg,
                                        coef_radius=coef_radius)
    info.update({"selection_epsilon0": eps0, "stage2": plan2.info, "selection_rho": rho1, "stage2_plan": plan2})
    return Plan(dp_event.ComposedDpEvent([event1, plan2.event]), float(epsilon), float(delta), 1, eps0, constraint,
                info)


def run_two_stage(problem, plan, rng):
    """Select the support (exactly at epsilon = inf), then fit it (objective perturbation)."""
    info, dim = plan.info, problem.dim
    m, s = info["n_head"], info["s"]
    u, _ = selection_scores(problem, m)
    if s >= m:
        sel = np.arange(m)
    elif "stage2_plan" in info:
        # Exponential mechanism exp(eps0 u / (2 sens)) by Gumbel-max; top-s at once (Durfee & Rogers 2019),
        # exact (the noise layer's Gumbel-max from uniform integers).
        scale = plan.noise_scale / (2.0 * info["selection_sensitivity"])
        sel = np.atleast_1d(_noise.exponential_mechanism(rng, u, scale, k=s))
    else:
        sel = np.argpartition(-u, s - 1)[:s]
    cols = np.concatenate([np.sort(sel), np.arange(m, dim)])
    sub = _restrict(problem, cols)
    coef = np.zeros(dim)
    if "stage2_plan" in info:
        coef[cols] = run_objective_perturbation(sub, info["stage2_plan"], rng)
    else:
        coef[cols] = minimize(sub, Unconstrained(), l2_reg=info["l2_reg"], tol=info["tol"])
    return coef


@register("two_stage", plan=plan_two_stage, pure_dp=True, constraints=("l0",), requires=("smooth", "single_output"))
def two_stage(problem, constraint, *, epsilon, delta, rng, accounting="tight", tol=1e-8, l2_reg=0.0,
              selection_share=SELECTION_SHARE, coef_radius=None, plan=None):
    """Private top-s support selection, then objective perturbation on the support.

    Parameters
    ----------
    problem : Problem
        Normalized data.
    constraint : L0Set
        ``n_nonzero_coefs`` features are selected; the ``n_free`` trailing (intercept)
        columns are always kept and never scored.
    epsilon, delta : float
        Total budget; ``epsilon=np.inf`` selects the exact top-s scores and fits the
        restricted problem exactly (the non-private two-stage estimator).
    rng : numpy.random.Generator
        Source of the noise.
    accounting : {"tight", "paper"}, default="tight"
        Stage-1 composition, see the module docstring.
    tol : float, default=1e-8
        Certified gradient tolerance of the stage-2 exact solver.
    l2_reg : float, default=0.0
        Mean-scale ridge term of the stage-2 objective.
    selection_share : float in (0, 1), default=0.5
        Share of epsilon spent on selection.
    coef_radius : float, default=None
        Passed to objective perturbation (its data-independent prior on ||theta||
        and, for the squared loss, the l2-ball radius).
    plan : Plan, default=None
        A plan from :func:`plan_two_stage` (computed if ``None``).

    Returns
    -------
    SolverResult
        Coefficients zero outside the selected support and the free columns.
    """
    if plan is None:
        plan = plan_two_stage(problem, constraint, epsilon=epsilon, delta=delta, accounting=accounting, tol=tol,
                              l2_reg=l2_reg, selection_share=selection_share, coef_radius=coef_radius)
    return plan.result(run_two_stage(problem, plan, rng))
