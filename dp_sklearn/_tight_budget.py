"""``composition="tight"`` of :class:`~dp_sklearn.pipeline.PrivatePipeline`: one factor on every step's epsilon.

The default split gives step ``i`` the share ``epsilon_i = w_i epsilon`` and states the total
by basic composition (``sum epsilon_i = epsilon``). Most steps are Gaussian or zCDP mechanisms
(the scaler's quantiles and moments, the models' noisy gradients), whose privacy losses add in
zCDP (``rho`` grows like ``epsilon^2``), so basic composition leaves part of the budget unused:
at ``epsilon = 1``, ``delta = 1e-5`` a scaler at 0.25 and a model at 0.75 use 0.0175 of the
``rho`` = 0.0284 that (1, 1e-5) allows (``dp_sklearn._accounting.zcdp_rho``).

``tight_budgets`` multiplies every step's epsilon by the largest ``c`` in ``[1, TIGHT_MAX]``
(``TIGHT_STEPS`` bisection steps) for which the composed planned event of the pipeline, as the
accountant of :class:`~dp_sklearn.PrivacyLedger` composes it
(:func:`dp_sklearn.composition.epsilon_of_event`), still spends at most ``epsilon`` at the
pipeline's ``delta``; the split's proportions are kept. Each trial is the pipeline's own dry run
on public stand-in data (``PrivatePipeline._plan``): the events depend on the hyperparameters,
``n`` and the schema only, and the fit checks that what it released is the planned event, so
``c`` is a function of public values and reveals nothing (``docs/privacy.md``, P4).
"""

from __future__ import annotations

from ._budget import StepBudget, set_budgets

__all__ = ["TIGHT_MAX", "TIGHT_STEPS", "tight_budgets"]

#: upper end of the factor's search (basic composition is ``c = 1``)
TIGHT_MAX = 2.0
#: bisection steps (dry runs) of the search: resolution ``(TIGHT_MAX - 1) / 2^TIGHT_STEPS``
TIGHT_STEPS = 7


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
    from .composition import epsilon_of_event

    epsilon, delta = float(pipeline.epsilon), float(pipeline.delta)
    best, best_event = 1.0, pipeline._plan(X, y, params, budgets)
    lo, hi = 1.0, TIGHT_MAX
    for _ in range(TIGHT_STEPS):
        mid = 0.5 * (lo + hi)
        event = pipeline._plan(X, y, params, scaled(budgets, mid))
        if epsilon_of_event(event, delta) <= epsilon:
            lo, best, best_event = mid, mid, event
        else:
            hi = mid
    final = scaled(budgets, best)
    set_budgets(pipeline, final)
    return final, best_event
