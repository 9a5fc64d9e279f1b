"""``composition="tight"`` of :class:`~dp_sklearn.pipeline.PrivatePipeline`: one factor on every step's epsilon.

The default split gives step ``i`` the share ``epsilon_i = w_i epsilon`` and states the total
by basic composition (``sum epsilon_i = epsilon``). Most steps are Gaussian or zCDP mechanisms
(the scaler's quantiles and moments, the models' noisy gradients), whose privacy losses add in
zCDP (``rho`` grows like ``epsilon^2``), so basic composition leaves part of the budget unused:
at ``epsilon = 1``, ``delta = 1e-5`` a scaler at 0.25 and a model at 0.75 use 0.0175 of the
``rho`` = 0.0284 that (1, 1e-5) allows (``dp_sklearn._accounting.zcdp_rho``).

``tight_budgets`` multiplies every step's epsilon by a factor ``c`` in ``[1, TIGHT_MAX]`` for
which the composed planned event of the pipeline, as the accountant of
:class:`~dp_sklearn.PrivacyLedger` composes it (:func:`dp_sklearn.composition.epsilon_of_event`),
still spends at most ``epsilon`` at the pipeline's ``delta``; the split's proportions are kept.
The search costs a few dry runs (each is the pipeline's own dry run on public stand-in data,
``PrivatePipeline._plan``): the first at ``c = 1`` gives the event's epsilon ``e_1``; if the
steps composed like one Gaussian mechanism, their zCDP ``rho`` would grow like ``c^2``, so the
next trial is ``c = TIGHT_SAFETY sqrt(rho(epsilon) / rho(e_1))`` (``rho(e)``: the largest zCDP
``rho`` that is (e, delta)-DP, :func:`dp_sklearn._accounting.zcdp_rho`), and a second one
from it the same way (``TIGHT_GUIDED`` trials); a trial is kept when the accountant counts it
within the budget, and the first one over it ends the guided trials with ``TIGHT_STEPS``
bisection steps between the best factor and it. Every trial's events depend on the
hyperparameters, ``n`` and the schema only, and the fit checks that what it released is the
planned event, so ``c`` is a function of public values and reveals nothing
(``docs/privacy.md``, P4).
"""

from __future__ import annotations

from ._budget import StepBudget, set_budgets

__all__ = ["TIGHT_GUIDED", "TIGHT_MAX", "TIGHT_SAFETY", "TIGHT_STEPS", "TIGHT_TOLERANCE", "tight_budgets"]

#: upper end of the factor's search (basic composition is ``c = 1``)
TIGHT_MAX = 2.0
#: bisection steps (dry runs) when the zCDP-guided trial is over budget
TIGHT_STEPS = 4
#: the zCDP-guided trials stay this fraction below the factor of one Gaussian mechanism
TIGHT_SAFETY = 0.995
#: at most this many zCDP-guided trials (each a dry run)
TIGHT_GUIDED = 2
#: a guided trial less than this relative step above the best factor is not run
TIGHT_TOLERANCE = 0.005


def scaled(budgets, factor):
    """``budgets`` with every epsilon multiplied by ``factor`` (deltas kept)."""
    return [StepBudget(b.name, factor * b.epsilon, b.delta) for b in budgets]


def tight_budgets(pipeline, X, y, params, budgets):
    """The budgets of ``composition="tight"`` and their planned event.

    Parameters
    ----------
    pipeline : PrivatePipeline
        Its DP steps are left set to the returned budgets.
    X, y, params :
        As for ``fit`` (only the schema and ``n`` of ``X`` reach the dry runs).
    budgets : list of StepBudget
        The split of the pipeline's (epsilon, delta) (``allotment``).

    Returns
    -------
    budgets : list of StepBudget
        ``budgets`` with every epsilon times the largest factor found (at least 1).
    event : dp_accounting.DpEvent
        The composed planned event at those budgets, within (epsilon, delta) by the accountant.
    """
    from ._accounting import zcdp_rho
    from .composition import epsilon_of_event

    epsilon, delta = float(pipeline.epsilon), float(pipeline.delta)
    best, best_event = 1.0, pipeline._plan(X, y, params, budgets)
    spent = epsilon_of_event(best_event, delta)
    if 0.0 < delta < 1.0 and 0.0 < spent < epsilon:
        lo, hi = 1.0, 1.0
        for _ in range(TIGHT_GUIDED):  # zCDP-guided trials from the best factor so far
            guess = min(TIGHT_MAX, best * TIGHT_SAFETY * (zcdp_rho(epsilon, delta) / zcdp_rho(spent, delta)) ** 0.5)
            if guess <= best * (1.0 + TIGHT_TOLERANCE):
                break
            event = pipeline._plan(X, y, params, scaled(budgets, guess))
            trial = epsilon_of_event(event, delta)
            if trial > epsilon:
                lo, hi = best, guess
                break
            best, best_event, spent = guess, event, trial
        for _ in range(TIGHT_STEPS if hi > lo else 0):
            mid = 0.5 * (lo + hi)
            event = pipeline._plan(X, y, params, scaled(budgets, mid))
            if epsilon_of_event(event, delta) <= epsilon:
                lo, best, best_event = mid, mid, event
            else:
                hi = mid
    final = scaled(budgets, best)
    set_budgets(pipeline, final)
    return final, best_event
