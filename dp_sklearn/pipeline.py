"""One privacy budget for a whole pipeline: split it between the DP steps, compose it in a ledger."""

from __future__ import annotations

import numbers
import warnings
from collections import namedtuple
from numbers import Real

import numpy as np
from sklearn.base import clone
from sklearn.pipeline import Pipeline, _final_estimator_has, make_pipeline
from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import _num_samples, check_array

from ._release import (PlanComplete, active_release, check_public, compose, inner_dp_nodes, is_dp, planning, private_fit,
                       released_event, shares)
from .ledger import PrivacyLedger
from .model_selection._estimator import check_categories, column_categories, synthetic_like
from .model_selection._repeat_select import covered

__all__ = ["DEFAULT_MODEL_SHARE", "PrivatePipeline", "StepBudget", "budget_split", "make_private_pipeline"]

#: seed of the public stand-in data of a pipeline's dry run (public: independent of the data)
_PUBLIC_SEED = 12345



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


def _final_path(pipeline):
    """Parameter path of the final estimator (following the last step of inner pipelines)."""
    name, step = pipeline.steps[-1]
    path = name
    while isinstance(step, Pipeline) and step.steps and not is_dp(step):
        name, step = step.steps[-1]
        path = f"{path}__{name}"
    return path


def _weights(paths, final_is_dp, split):
    """Normalized epsilon shares of the DP leaves, in fit order."""
    k = len(paths)
    if split is None:
        if k == 1 or not final_is_dp:
            return [1.0 / k] * k
        rest = (1.0 - DEFAULT_MODEL_SHARE) / (k - 1)
        return [rest] * (k - 1) + [DEFAULT_MODEL_SHARE]
    if isinstance(split, dict):
        short = {}
        for path in paths:
            short.setdefault(path.rsplit("__", 1)[-1], []).append(path)
        keyed = {}
        for key in split:
            target = key if key in paths else (short[key][0] if len(short.get(key, ())) == 1 else None)
            if target is None or target in keyed:
                raise ValueError(f"split must name every DP step exactly once, by its path ({paths}) or its name "
                                 f"when unique, got keys {sorted(map(str, split))}.")
            keyed[target] = split[key]
        if len(keyed) != k:
            raise ValueError(f"split must name every DP step exactly once ({paths}), got keys {sorted(split)}.")
        raw = [keyed[p] for p in paths]
    elif isinstance(split, (list, tuple, np.ndarray)):
        raw = list(split)
        if len(raw) != k:
            raise ValueError(f"split must have one weight per DP step ({k}: {paths}), got {len(raw)}.")
    else:
        raise ValueError(f"split must be None, a sequence of weights or a dict {{step: weight}}, got {split!r}.")
    return shares(raw, "split weights")


def _check_budget(epsilon, delta):
    ok = isinstance(epsilon, numbers.Real) and not isinstance(epsilon, bool) and 0 < epsilon < float("inf")
    if not ok:
        raise ValueError(f"epsilon must be a finite number > 0, got {epsilon!r}.")
    if isinstance(delta, bool) or not isinstance(delta, numbers.Real) or not 0 <= delta < 1:
        raise ValueError(f"delta must be a number in [0, 1), got {delta!r}.")
    return float(epsilon), float(delta)


def _allotment(pipeline, epsilon, delta, split):
    """``StepBudget`` of every DP leaf of ``pipeline`` under the total (epsilon, delta)."""
    epsilon, delta = _check_budget(epsilon, delta)
    nodes = inner_dp_nodes(pipeline)
    if not nodes:
        raise ValueError("A private pipeline needs at least one DP step (with epsilon and delta parameters), at any "
                         "depth.")
    paths = [path for path, _ in nodes]
    weights = _weights(paths, paths[-1] == _final_path(pipeline), split)
    return [StepBudget(path, w * epsilon, delta / (2 * len(paths))) for path, w in zip(paths, weights)]


def _set_budgets(pipeline, budgets):
    params = {}
    for b in budgets:
        params[f"{b.name}__epsilon"] = b.epsilon
        params[f"{b.name}__delta"] = b.delta
    return pipeline.set_params(**params)


def _parallel(estimator):
    """Whether a composite of ``estimator`` fits its parts in other processes (``n_jobs``)."""
    return any(k.endswith("n_jobs") and v not in (None, 1) for k, v in estimator.get_params(deep=True).items()
               if k == "n_jobs" or k.endswith("__n_jobs"))


class PrivatePipeline(Pipeline):
    """A :class:`~sklearn.pipeline.Pipeline` whose fit is one accounted private release.

    Every DP step (a step whose parameters include ``epsilon`` and ``delta``), at
    any depth (inside ``ColumnTransformer``, ``FeatureUnion`` or an inner
    ``Pipeline``), gets a share of one total (``epsilon``, ``delta``): step ``i``
    of ``k`` gets ``epsilon_i = w_i * epsilon`` and ``delta_i = delta / (2 k)``,
    so the fit is (``epsilon``, ``delta / 2``)-DP by basic composition (a
    ledger at ``delta`` composes the steps' events more tightly).

    ``fit`` (and ``fit_transform`` / ``fit_predict``) follows the one path of
    every private fit (``docs/privacy.md``, P7):

    1. validate the budget, the split and every step: a non-DP step that learns
       from the data (``StandardScaler``, ``OneHotEncoder(categories="auto")``)
       is refused, naming it; several different ledgers are refused;
    2. plan the composed event by a dry run of a copy of the pipeline on public
       synthetic data with the schema of X (events depend on the
       hyperparameters, n and the schema only) and the real ``y``, which
       validates every step's hyperparameters and the data each DP model sees
       (targets, classes, bounds, solvers, dimensions) before any budget is
       reserved; the final model stops after its own validation;
    3. reserve that event once in the ledger, fit the steps (their own ledgers
       are not used: the pipeline's reservation covers them), check that what
       was released is covered by the plan, and record one composed event.

    A fit that raises before any noise is drawn leaves the ledger's records as
    they were; one that raises after a draw records the planned event (the draw
    is a release).

    Parameters
    ----------
    steps : list of (str, estimator) tuples
        As for :class:`~sklearn.pipeline.Pipeline`.
    epsilon : float, default=1.0
        Total privacy loss of one fit, in nats (finite, > 0).
    delta : float, default=1e-5
        Total delta, in [0, 1).
    split : None, sequence of float or dict, default=None
        Relative epsilon weights of the DP steps, in fit order or by step path
        (``"columntransformer__num"``; a step's own name is accepted when it is
        unique). ``None``: when the final estimator and some other step are DP,
        the final estimator gets ``DEFAULT_MODEL_SHARE = 0.75`` and the others
        share the rest equally; otherwise equal shares.
    ledger : dp_sklearn.PrivacyLedger or None, default=None
        Where the fit is reserved and recorded. A DP step may carry a ledger
        only if it is this one (or, with ``ledger=None``, if every step that
        carries one carries the same one, which is then used); a different
        ledger is refused, since one release cannot be recorded in two
        accounts. With a composite fitting in parallel (``n_jobs``), the steps
        must not carry a ledger.
    memory : str, object with the joblib.Memory interface or None, default=None
        As for :class:`~sklearn.pipeline.Pipeline`.
    verbose : bool, default=False
        As for :class:`~sklearn.pipeline.Pipeline`.

    Attributes
    ----------
    dp_event_ : dp_accounting.DpEvent
        The composed event of the fit (one entry per DP step, in fit order).
    epsilon_, delta_ : float
        The stated total (``epsilon``, ``delta``).
    budget_split_ : list of StepBudget
        What each DP step was set to spend.

    Raises
    ------
    ValueError
        From ``fit``: an invalid budget or split, no DP step, a non-private
        step that learns from the data, several ledgers, or any error of a
        step's validation (raised before any budget is reserved).
    dp_sklearn.BudgetExceededError
        From ``fit``, if the ledger cannot afford the composed event (nothing
        is reserved or fitted then).

    Notes
    -----
    The pipeline owns its DP steps' ``epsilon`` and ``delta``: ``fit`` sets
    them to the split (so ``get_params`` shows what each step spends); set the
    pipeline's ``epsilon``, ``delta`` or ``split`` instead. Inside an enclosing
    private fit (``DPGridSearchCV``, another private pipeline) the pipeline
    reports its steps' events to it and reserves nothing itself.

    See Also
    --------
    make_private_pipeline : builds one from estimators, naming the steps.
    budget_split : the split, by step path.

    Examples
    --------
    >>> import numpy as np
    >>> from dp_sklearn import DPRidge, PrivacyLedger
    >>> from dp_sklearn.pipeline import PrivatePipeline
    >>> from dp_sklearn.preprocessing import DPStandardScaler
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(500, 3)); y = X @ [1.0, -1.0, 0.5]
    >>> led = PrivacyLedger(max_epsilon=1.0)
    >>> pipe = PrivatePipeline([("scale", DPStandardScaler(bounds=(-4, 4), random_state=0)),
    ...                         ("ridge", DPRidge(bounds_y=(-5, 5), random_state=0))],
    ...                        epsilon=1.0, ledger=led).fit(X, y)
    >>> len(led), led.total_epsilon() <= 1.0
    (1, True)
    >>> led.delete()
    """

    _parameter_constraints: dict = {
        **Pipeline._parameter_constraints,
        "epsilon": [Real],
        "delta": [Real],
        "split": [None, dict, list, tuple, np.ndarray],
        "ledger": [PrivacyLedger, None],
    }

    def __init__(self, steps, *, epsilon=1.0, delta=1e-5, split=None, ledger=None, memory=None, verbose=False):
        self.epsilon = epsilon
        self.delta = delta
        self.split = split
        self.ledger = ledger
        super().__init__(steps, memory=memory, verbose=verbose)

    # ------------------------------------------------------------ the release
    def _ledger(self):
        """The one ledger of the fit (see the ``ledger`` parameter)."""
        params = self.get_params(deep=True)
        found = [v for k, v in params.items() if (k == "ledger" or k.endswith("__ledger")) and v is not None]
        inner = [v for k, v in params.items() if k.endswith("__ledger") and v is not None]
        distinct = []
        for led in found:
            if not any(led is d or led == d for d in distinct):
                distinct.append(led)
        if len(distinct) > 1:
            raise ValueError(
                f"{type(self).__name__} records its fit in one ledger, but its steps carry {len(distinct)} different "
                "ledgers: set ledger= on the pipeline and leave the steps' ledger=None (or the same ledger).")
        if inner and _parallel(self):
            raise ValueError(f"{type(self).__name__}: a step fitted in parallel (n_jobs) cannot carry a ledger; set "
                             "ledger= on the pipeline and leave the steps' ledger=None.")
        return distinct[0] if distinct else None

    def _prepare(self):
        """Validate everything that needs no data; set the DP steps' budgets. Returns the split."""
        _check_budget(self.epsilon, self.delta)
        check_public(self, owner=type(self).__name__)
        budgets = _allotment(self, self.epsilon, self.delta, self.split)
        _set_budgets(self, budgets)
        return budgets

    def _plan(self, X, y, params):
        """The composed event of a fit on X, from a dry run on public data with X's schema."""
        if not hasattr(X, "shape"):
            X = check_array(X, dtype=None, ensure_all_finite=False, input_name="X")
        check_categories(self, X)
        rows = _num_samples(X)
        stand_in = synthetic_like(X, rows, np.random.default_rng(_PUBLIC_SEED), column_categories(self, X))
        dry = clone(self)
        with warnings.catch_warnings(), planning() as plan:
            warnings.simplefilter("ignore")
            try:
                dry.fit(stand_in, y, **params)
            except PlanComplete:
                pass
            except Exception as exc:
                exc.add_note(f"(raised while {type(self).__name__} validated its steps on public stand-in data "
                             "with the schema of X, before any budget was reserved)")
                raise
        if not plan.events:
            raise ValueError(f"{type(self).__name__}: no DP step was fitted in the dry run.")
        return compose(plan.events)

    def _private(self, method, X, y, **params):
        budgets = self._prepare()
        fit = getattr(super(), method)
        if active_release() is not None:  # inside a search's or another pipeline's release (or a plan)
            self.__dict__.pop("dp_event_", None)
            out = fit(X, y, **params)
            self._set_released(released_event(self), budgets)
            return out
        ledger = self._ledger()
        planned = self._plan(X, y, params)
        label = f"{type(self).__name__}({', '.join(b.name for b in budgets)})"
        with private_fit(self, planned, ledgers=[ledger], epsilon=self.epsilon, delta=self.delta,
                         label=label) as release:
            if _parallel(self):  # the steps' draws happen out of sight: count the fit as drawn
                release.mark_drawn()
            self.__dict__.pop("dp_event_", None)
            out = fit(X, y, **params)
            released = released_event(self)
            if not covered(released, planned):
                raise RuntimeError(f"The events released by {type(self).__name__} ({released}) are not covered by "
                                   f"its plan ({planned}): a step's event depends on the data, which dp_sklearn "
                                   "forbids (docs/privacy.md). The planned event was recorded.")
            self._set_released(planned, budgets)
        return out

    def _set_released(self, event, budgets):
        self.dp_event_ = event
        self.epsilon_, self.delta_ = float(self.epsilon), float(self.delta)
        self.budget_split_ = list(budgets)

    def fit(self, X, y=None, **params):
        """Fit the pipeline as one private release (see the class docstring).

        Parameters
        ----------
        X : iterable
            Training data, as for :meth:`sklearn.pipeline.Pipeline.fit`.
        y : iterable, default=None
            Training targets.
        **params : dict
            Fit parameters, as for :meth:`sklearn.pipeline.Pipeline.fit`.

        Returns
        -------
        self : PrivatePipeline
            The fitted pipeline.
        """
        return self._private("fit", X, y, **params)

    @available_if(Pipeline._can_fit_transform)
    def fit_transform(self, X, y=None, **params):
        """Fit as one private release (see :meth:`fit`), then transform X with the final step.

        Parameters
        ----------
        X : iterable
            Training data.
        y : iterable, default=None
            Training targets.
        **params : dict
            Fit parameters.

        Returns
        -------
        Xt : ndarray of shape (n_samples, n_transformed_features)
            The transformed training data.
        """
        return self._private("fit_transform", X, y, **params)

    @available_if(_final_estimator_has("fit_predict"))
    def fit_predict(self, X, y=None, **params):
        """Fit as one private release (see :meth:`fit`), then predict X with the final step.

        Parameters
        ----------
        X : iterable
            Training data.
        y : iterable, default=None
            Training targets.
        **params : dict
            Fit parameters.

        Returns
        -------
        y_pred : ndarray of shape (n_samples,)
            The predictions.
        """
        return self._private("fit_predict", X, y, **params)


def make_private_pipeline(*steps, epsilon=1.0, delta=1e-5, split=None, ledger=None, memory=None,
                          verbose=False):
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
        equally; otherwise equal shares.
    ledger : dp_sklearn.PrivacyLedger or None, default=None
        The pipeline's ledger: each fit is reserved and recorded in it as one
        composed release.
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
    epsilon, delta = _check_budget(epsilon, delta)
    steps = make_pipeline(*[s if s is None or isinstance(s, str) else clone(s) for s in steps]).steps
    pipe = PrivatePipeline(steps, epsilon=epsilon, delta=delta, split=split, ledger=ledger, memory=memory,
                           verbose=verbose)
    check_public(pipe, owner="make_private_pipeline")
    _set_budgets(pipe, _allotment(pipe, epsilon, delta, split))
    return pipe


def budget_split(pipeline):
    """The (epsilon, delta) each DP step of a pipeline is set to spend.

    Parameters
    ----------
    pipeline : sklearn.pipeline.Pipeline
        Any pipeline. For a :class:`PrivatePipeline`, the split of its total
        budget; for another pipeline, the budget each DP step is configured
        with.

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
        return _allotment(pipeline, pipeline.epsilon, pipeline.delta, pipeline.split)
    out = []
    for path, est in inner_dp_nodes(pipeline):
        p = est.get_params(deep=False)
        out.append(StepBudget(path, float(p["epsilon"]), float(p["delta"])))
    return out
