"""One privacy budget for a whole pipeline: split it between the DP steps, compose it in a ledger.

:class:`PrivatePipeline` (its fit: :mod:`dp_sklearn._private_pipeline`) makes the whole fit
one release; the split is computed in :mod:`dp_sklearn._budget`.
"""

from __future__ import annotations

from sklearn.base import clone
from sklearn.pipeline import Pipeline, make_pipeline

from . import _budget
from ._budget import StepBudget, allotment, check_budget, set_budgets
from ._composite import check_public, inner_dp_nodes
from ._private_pipeline import PrivatePipeline

__all__ = ["DEFAULT_MODEL_SHARE", "PrivatePipeline", "StepBudget", "budget_split", "make_private_pipeline"]

#: share of epsilon given to the final estimator when it and at least one other step
#: are DP; the other DP steps share the rest in proportion to the columns each reads (at
#: fit, a ``DPStandardScaler`` that runs its single global scale returns what it does not
#: need to the final estimator)
DEFAULT_MODEL_SHARE = _budget.DEFAULT_MODEL_SHARE


def make_private_pipeline(*steps, epsilon=1.0, delta=1e-5, split=None, ledger=None, composition="tight",
                          memory=None, verbose=False):
    """Build a :class:`PrivatePipeline` whose DP steps share one (epsilon, delta).

    A DP step is any step whose parameters include ``epsilon`` and ``delta``
    (the dp_sklearn estimators and transformers), at any depth (inside a
    ``ColumnTransformer``, ``FeatureUnion`` or inner ``Pipeline``). Step ``i``
    of ``k`` gets ``epsilon_i = w_i * epsilon`` and ``delta_i = delta / (2 k)``;
    by basic composition the pipeline's fit is then (``epsilon``,
    ``delta / 2``)-DP, and the other half of ``delta`` is slack for the
    accountants (a :class:`~dp_sklearn.PrivacyLedger` at ``delta`` composes the
    steps' events more tightly). The fit is one release, reserved and recorded
    once (see :class:`PrivatePipeline`); a non-DP step that learns from the
    data (e.g. ``StandardScaler``, ``OneHotEncoder()`` with
    ``categories="auto"``) is refused, naming it (``docs/privacy.md``).

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
        fit order or by step path (see :func:`budget_split`). ``None``: when
        the final estimator and some other step are DP, the final estimator
        gets ``DEFAULT_MODEL_SHARE = 0.75`` and the other DP steps share 0.25
        in proportion to the number of columns each reads (the length of an
        explicit column list of a ``ColumnTransformer``; 1 otherwise, a public
        count from the parameters); otherwise equal shares. At fit, a
        ``DPStandardScaler`` that will run its single global scale (few rows)
        keeps only the epsilon that one statistic needs and the final estimator
        gets the rest (``budget_split_`` of the fitted pipeline).
    ledger : dp_sklearn.PrivacyLedger or None, default=None
        The pipeline's ledger: each fit is reserved and recorded in it as one
        composed release.
    composition : {"tight", "basic"}, default="tight"
        ``"tight"``: at ``fit``, every DP step's epsilon of the split is
        multiplied by one factor in [1, 2] that the ledger's accountant still
        counts within (``epsilon``, ``delta``) (see :class:`PrivatePipeline`);
        :func:`budget_split` shows the split before that factor,
        ``budget_split_`` of the fitted pipeline after it. ``"basic"``: the
        steps' epsilons sum to ``epsilon``.
    memory : str, object with the joblib.Memory interface or None, default=None
        Passed to :class:`PrivatePipeline`.
    verbose : bool, default=False
        Passed to :class:`PrivatePipeline`.

    Returns
    -------
    pipeline : PrivatePipeline
        The DP steps have their budget set; :func:`budget_split` shows it.

    Raises
    ------
    ValueError
        If no step is DP, a non-DP step learns from the data, ``epsilon`` or
        ``delta`` is invalid, or ``split`` does not give one positive weight
        per DP step.

    See Also
    --------
    PrivatePipeline : the pipeline class, and what its fit checks.
    budget_split : what each DP step of a pipeline is set to spend.
    dp_sklearn.PrivacyLedger : composes the fitted pipelines' events.

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
    epsilon, delta = check_budget(epsilon, delta)
    steps = make_pipeline(*[s if s is None or isinstance(s, str) else clone(s) for s in steps]).steps
    pipe = PrivatePipeline(steps, epsilon=epsilon, delta=delta, split=split, ledger=ledger, composition=composition,
                           memory=memory, verbose=verbose)
    check_public(pipe, owner="make_private_pipeline")
    set_budgets(pipe, allotment(pipe, epsilon, delta, split))
    return pipe


def budget_split(pipeline):
    """The (epsilon, delta) each DP step of a pipeline is set to spend.

    Parameters
    ----------
    pipeline : sklearn.pipeline.Pipeline
        Any pipeline. For a :class:`PrivatePipeline`, the split of its total
        budget before any data is seen (a fitted one's ``budget_split_`` holds
        the split of its last fit, which the default split adapts to the
        shape of X); for another pipeline, the budget each DP step is
        configured with.

    Returns
    -------
    split : list of StepBudget
        ``(name, epsilon, delta)`` per DP step at any depth, in fit order;
        ``name`` is the step's parameter path (``"columntransformer__num"``
        for a step ``"num"`` of a ``ColumnTransformer``). By basic composition
        a fit of the pipeline is ``(sum of epsilons, sum of deltas)``-DP; a
        ledger composes the fitted steps' ``dp_event_`` more tightly.

    Raises
    ------
    TypeError
        If ``pipeline`` is not a :class:`~sklearn.pipeline.Pipeline`.
    ValueError
        For a :class:`PrivatePipeline` with an invalid budget or split.

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
    if isinstance(pipeline, PrivatePipeline):
        return allotment(pipeline, pipeline.epsilon, pipeline.delta, pipeline.split)
    out = []
    for path, est in inner_dp_nodes(pipeline):
        p = est.get_params(deep=False)
        out.append(StepBudget(path, float(p["epsilon"]), float(p["delta"])))
    return out
