"""One privacy budget for a whole pipeline: split it between the DP steps, compose it in a ledger."""

from __future__ import annotations

import numbers
from collections import namedtuple

from sklearn.base import clone
from sklearn.pipeline import Pipeline, make_pipeline

__all__ = ["DEFAULT_MODEL_SHARE", "StepBudget", "budget_split", "make_private_pipeline"]

#: share of epsilon given to the final estimator when it and at least one earlier
#: step are DP; the earlier DP steps share the rest equally
DEFAULT_MODEL_SHARE = 0.75

StepBudget = namedtuple("StepBudget", "name epsilon delta")
StepBudget.__doc__ = """The (epsilon, delta) a DP step of a pipeline is set to spend.

Parameters
----------
name : str
    The step's name in the pipeline.
epsilon : float
    Its privacy loss in nats.
delta : float
    Its delta, in [0, 1).

See Also
--------
dp_sklearn.budget_split : returns one per DP step.

Examples
--------
>>> from dp_sklearn.pipeline import StepBudget
>>> StepBudget("dpridge", 1.5, 5e-6).epsilon
1.5
"""


def _is_dp_step(est):
    if est is None or isinstance(est, str):  # None / "passthrough"
        return False
    params = est.get_params(deep=False) if hasattr(est, "get_params") else {}
    return "epsilon" in params and "delta" in params


def _dp_names(pipeline):
    return [name for name, est in pipeline.steps if _is_dp_step(est)]


def _weights(names, final_is_dp, split):
    """Normalized epsilon shares of the DP steps, in pipeline order."""
    k = len(names)
    if split is None:
        if k == 1 or not final_is_dp:
            return [1.0 / k] * k
        rest = (1.0 - DEFAULT_MODEL_SHARE) / (k - 1)
        return [rest] * (k - 1) + [DEFAULT_MODEL_SHARE]
    if isinstance(split, dict):
        unknown = set(split) - set(names)
        if unknown or len(split) != k:
            raise ValueError(f"split must name every DP step exactly once ({names}), got keys {sorted(split)}.")
        raw = [split[n] for n in names]
    else:
        raw = list(split)
        if len(raw) != k:
            raise ValueError(f"split must have one weight per DP step ({k}: {names}), got {len(raw)}.")
    ok = all(isinstance(w, numbers.Real) and not isinstance(w, bool) and 0 < w < float("inf") for w in raw)
    if not ok:
        raise ValueError(f"split weights must be finite numbers > 0, got {split!r}.")
    total = float(sum(raw))
    return [float(w) / total for w in raw]


def make_private_pipeline(*steps, epsilon=1.0, delta=1e-5, split=None, ledger=None, memory=None,
                          verbose=False):
    """Build a :class:`~sklearn.pipeline.Pipeline` whose DP steps share one (epsilon, delta).

    A DP step is any step whose parameters include ``epsilon`` and ``delta``
    (the dp_sklearn estimators and transformers). Step ``i`` gets
    ``epsilon_i = w_i * epsilon`` and ``delta_i = delta / (2 k)`` for ``k`` DP
    steps; by basic composition the pipeline's fit is then
    (``epsilon``, ``delta / 2``)-DP, and the other half of ``delta`` is slack for
    the accountants (a :class:`~dp_sklearn.PrivacyLedger` at ``delta`` composes
    the steps' events more tightly than basic composition). Non-DP steps must
    not be fitted on the data (e.g. a ``OneHotEncoder`` with public
    ``categories``); see ``docs/privacy.md``.

    Parameters
    ----------
    *steps : list of estimators
        As for :func:`sklearn.pipeline.make_pipeline`; each is cloned, so the
        objects passed are not modified.
    epsilon : float, default=1.0
        Total privacy loss of one fit of the pipeline, in nats (> 0, finite).
    delta : float, default=1e-5
        Total delta, in [0, 1).
    split : None, sequence of float or dict, default=None
        Relative epsilon weights of the DP steps (normalized to sum to 1), in
        pipeline order or by step name. ``None``: when the final estimator and
        some earlier step are DP, the final estimator gets
        ``DEFAULT_MODEL_SHARE = 0.75`` and the earlier DP steps share 0.25
        equally; otherwise equal shares.
    ledger : dp_sklearn.PrivacyLedger or None, default=None
        Set as ``ledger`` on every DP step that has that parameter, so the
        whole fit is reserved and recorded in one ledger.
    memory : str, object with the joblib.Memory interface or None, default=None
        Passed to :func:`~sklearn.pipeline.make_pipeline`.
    verbose : bool, default=False
        Passed to :func:`~sklearn.pipeline.make_pipeline`.

    Returns
    -------
    pipeline : sklearn.pipeline.Pipeline
        The DP steps have their budget set; :func:`budget_split` shows it.

    Raises
    ------
    ValueError
        If no step is DP, ``epsilon`` or ``delta`` is invalid, or ``split``
        does not give one positive weight per DP step.

    See Also
    --------
    budget_split : what each DP step of a pipeline is set to spend.
    dp_sklearn.PrivacyLedger : composes the fitted steps' events.

    Examples
    --------
    >>> from dp_sklearn import DPLogisticRegression
    >>> from dp_sklearn.preprocessing import DPStandardScaler
    >>> pipe = make_private_pipeline(DPStandardScaler(bounds=(0, 10)), DPLogisticRegression(),
    ...                              epsilon=1.0, delta=1e-5)
    >>> budget_split(pipe)
    [StepBudget(name='dpstandardscaler', epsilon=0.25, delta=2.5e-06), \
StepBudget(name='dplogisticregression', epsilon=0.75, delta=2.5e-06)]
    """
    ok = isinstance(epsilon, numbers.Real) and not isinstance(epsilon, bool) and 0 < epsilon < float("inf")
    if not ok:
        raise ValueError(f"epsilon must be a finite number > 0, got {epsilon!r}.")
    if isinstance(delta, bool) or not isinstance(delta, numbers.Real) or not 0 <= delta < 1:
        raise ValueError(f"delta must be a number in [0, 1), got {delta!r}.")
    pipe = make_pipeline(*[s if s is None or isinstance(s, str) else clone(s) for s in steps],
                         memory=memory, verbose=verbose)
    names = _dp_names(pipe)
    if not names:
        raise ValueError("make_private_pipeline needs at least one DP step (with epsilon and delta parameters).")
    final_is_dp = names[-1] == pipe.steps[-1][0]
    params = {}
    for name, w in zip(names, _weights(names, final_is_dp, split)):
        params[f"{name}__epsilon"] = w * float(epsilon)
        params[f"{name}__delta"] = float(delta) / (2 * len(names))
        if ledger is not None and "ledger" in pipe.named_steps[name].get_params(deep=False):
            params[f"{name}__ledger"] = ledger
    return pipe.set_params(**params)


def budget_split(pipeline):
    """The (epsilon, delta) each DP step of a pipeline is set to spend.

    Parameters
    ----------
    pipeline : sklearn.pipeline.Pipeline
        Any pipeline (not only one made by :func:`make_private_pipeline`).

    Returns
    -------
    split : list of StepBudget
        ``(name, epsilon, delta)`` per DP step, in pipeline order. By basic
        composition a fit of the pipeline is
        ``(sum of epsilons, sum of deltas)``-DP; a ledger composes the fitted
        steps' ``dp_event_`` more tightly.

    Raises
    ------
    TypeError
        If ``pipeline`` is not a :class:`~sklearn.pipeline.Pipeline`.

    See Also
    --------
    make_private_pipeline : sets the split from one total budget.

    Examples
    --------
    >>> from sklearn.pipeline import make_pipeline
    >>> from dp_sklearn import DPRidge, DPStandardScaler
    >>> pipe = make_pipeline(DPStandardScaler(epsilon=0.5), DPRidge(epsilon=1.5, delta=1e-6))
    >>> [(step.name, step.epsilon) for step in budget_split(pipe)]
    [('dpstandardscaler', 0.5), ('dpridge', 1.5)]
    """
    if not isinstance(pipeline, Pipeline):
        raise TypeError(f"pipeline must be a sklearn Pipeline, got {type(pipeline).__name__}.")
    out = []
    for name, est in pipeline.steps:
        if _is_dp_step(est):
            p = est.get_params(deep=False)
            out.append(StepBudget(name, float(p["epsilon"]), float(p["delta"])))
    return out
