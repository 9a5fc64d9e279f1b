"""The fit of :class:`~dp_sklearn.pipeline.PrivatePipeline`: one planned, reserved and recorded release."""

from __future__ import annotations

import io
import numbers
import warnings
from contextlib import redirect_stdout
from numbers import Real

import numpy as np
from dp_accounting import dp_event
from joblib import parallel_config
from sklearn.base import clone
from sklearn.utils._param_validation import StrOptions
from sklearn.pipeline import Pipeline, _final_estimator_has
from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import _num_samples, check_array

from ._budget import allotment, check_budget, set_budgets
from ._composite import check_public, compose, released_event
from ._release import PlanComplete, active_release, planning, private_fit
from ._tight_budget import tight_budgets
from .ledger import PrivacyLedger
from .model_selection._estimator import check_categories, column_categories, synthetic_like
from .model_selection._repeat_select import covered

__all__ = ["PrivatePipeline"]

#: seed of the public stand-in data of a pipeline's dry run (public: independent of the data)
_PUBLIC_SEED = 12345


def _atoms(event):
    """The events composed in ``event``, at any depth, as a sorted list of their reprs."""
    if isinstance(event, dp_event.ComposedDpEvent):
        return sorted(a for e in event.events for a in _atoms(e))
    return [repr(event)]


def _same_release(released, planned):
    """Whether the released events are the planned ones (composed in any order or grouping) or covered by them."""
    return released == planned or _atoms(released) == _atoms(planned) or covered(released, planned)


class PrivatePipeline(Pipeline):
    """A :class:`~sklearn.pipeline.Pipeline` whose fit is one accounted private release.

    Every DP step (a step whose parameters include ``epsilon`` and ``delta``), at
    any depth (inside ``ColumnTransformer``, ``FeatureUnion`` or an inner
    ``Pipeline``), gets a share of one total (``epsilon``, ``delta``): step ``i``
    of ``k`` gets ``epsilon_i = w_i * epsilon`` and ``delta_i = delta / (2 k)``,
    so the fit is (``epsilon``, ``delta / 2``)-DP by basic composition; with
    ``composition="tight"`` (the default) every ``epsilon_i`` is then scaled
    by the largest factor found for which the composed event is still
    (``epsilon``, ``delta``)-DP by the ledger's accountant.

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
        share the rest in proportion to the number of columns each reads (the
        length of an explicit column list of a ``ColumnTransformer``, else 1);
        otherwise equal shares. At fit, with ``split=None``, a ``DPStandardScaler``
        that will run its single global scale on X's rows and the columns it reads
        keeps only the epsilon that scale needs (``_pipeline_epsilon``; public
        values only) and the final estimator gets the rest.
    ledger : dp_sklearn.PrivacyLedger or None, default=None
        Where the fit is reserved and recorded. A DP step may carry a ledger
        only if it is this one (or, with ``ledger=None``, if every step that
        carries one carries the same one, which is then used); a different
        ledger is refused, since one release cannot be recorded in two
        accounts.
    composition : {"tight", "basic"}, default="tight"
        ``"tight"``: every step's epsilon of the split is multiplied by one
        factor in [1, 2] (found in a few dry runs on public stand-in data,
        ``dp_sklearn._tight_budget``) whose composed planned event the ledger's
        accountant (:func:`dp_sklearn.composition.epsilon_of_event`) still
        counts within (``epsilon``, ``delta``): Gaussian and zCDP steps compose
        in zCDP, so the steps get more of the budget for the same guarantee
        (about 1.2 times the epsilon of a scaler and a Gaussian model; 1 when
        every step is pure DP). The steps' ``epsilon_`` then sum to more than
        ``epsilon``; the guarantee of the fit is the composed event's, within
        (``epsilon``, ``delta``). The factor is a function of the
        hyperparameters, ``n`` and the schema only. Only a top-level fit
        searches it; inside an enclosing private fit the split is basic.
        ``"basic"``: the steps' epsilons sum to ``epsilon`` (basic composition).
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
        What each DP step was set to spend (with ``composition="tight"``, the
        split times the factor found).

    Raises
    ------
    ValueError
        From ``fit``: an invalid budget or split, no DP step, a non-private
        step that learns from the data, several ledgers, or any error of a
        step's validation (raised before any budget is reserved).
    dp_sklearn.BudgetExceededError
        From ``fit``, if the ledger cannot afford the composed event (nothing
        is reserved or fitted then).

    See Also
    --------
    make_private_pipeline : builds one from estimators, naming the steps.
    budget_split : the split, by step path.

    Notes
    -----
    The pipeline owns its DP steps' ``epsilon`` and ``delta``: ``fit`` sets
    them to the split (so ``get_params`` shows what each step spends); set the
    pipeline's ``epsilon``, ``delta`` or ``split`` instead. Inside an enclosing
    private fit (``DPGridSearchCV``, another private pipeline) the pipeline
    reports its steps' events to it and reserves nothing itself. The steps fit
    in the calling thread (joblib's sequential backend; the ``n_jobs`` of an
    inner composite is not used), so that each reports its event and its noise
    draws to the pipeline's release.

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
        "composition": [StrOptions({"tight", "basic"})],
    }

    def __init__(self, steps, *, epsilon=1.0, delta=1e-5, split=None, ledger=None, composition="tight", memory=None,
                 verbose=False):
        self.epsilon = epsilon
        self.delta = delta
        self.split = split
        self.ledger = ledger
        self.composition = composition
        super().__init__(steps, memory=memory, verbose=verbose)

    # ------------------------------------------------------------ the release
    def _ledger(self):
        """The one ledger of the fit (see the ``ledger`` parameter)."""
        params = self.get_params(deep=True)
        found = [v for k, v in params.items() if (k == "ledger" or k.endswith("__ledger")) and v is not None]
        distinct = []
        for led in found:
            if not any(led is d or led == d for d in distinct):
                distinct.append(led)
        if len(distinct) > 1:
            raise ValueError(
                f"{type(self).__name__} records its fit in one ledger, but its steps carry {len(distinct)} different "
                "ledgers: set ledger= on the pipeline and leave the steps' ledger=None (or the same ledger).")
        return distinct[0] if distinct else None

    def _prepare(self, X=None):
        """Validate everything that needs no data; set the DP steps' budgets. Returns the split.

        The shape of ``X`` (public: docs/privacy.md, P1) lets the default split give a
        preprocessing step only what it needs for that many rows and columns.
        """
        check_budget(self.epsilon, self.delta)
        check_public(self, owner=type(self).__name__)
        n_samples = n_features = None
        shape = getattr(X, "shape", None)
        if shape is not None and len(shape) == 2 and all(isinstance(v, numbers.Integral) for v in shape):
            n_samples, n_features = int(shape[0]), int(shape[1])
        budgets = getattr(self, "_fixed_budgets", None) or allotment(self, self.epsilon, self.delta, self.split,
                                                                     n_samples, n_features)
        set_budgets(self, budgets)
        return budgets

    def _plan(self, X, y, params, budgets=None):
        """The composed event of a fit on X, from a dry run on public data with X's schema (at ``budgets``:
        the split of ``composition="tight"``; None: the pipeline's own split)."""
        if not hasattr(X, "shape") or len(X.shape) != 2:  # lists; 1-D or 3-D input raises the usual error
            X = check_array(X, accept_sparse=True, dtype=None, ensure_all_finite=False, input_name="X")
        check_categories(self, X)
        rows = _num_samples(X)
        stand_in = synthetic_like(X, rows, np.random.default_rng(_PUBLIC_SEED), column_categories(self, X))
        dry = clone(self)
        dry._fixed_budgets = budgets
        # the dry run's warnings and progress lines are about stand-in data: not shown
        with warnings.catch_warnings(), redirect_stdout(io.StringIO()), planning() as plan:
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
        budgets = self._prepare(X)
        # every step fits in this thread, so that it reports its event and its draws to the release
        with parallel_config(backend="sequential"):
            fit = getattr(super(), method)
            if active_release() is not None:  # inside a search's or another pipeline's release (or a plan)
                self.__dict__.pop("dp_event_", None)
                out = fit(X, y, **params)
                self._set_released(released_event(self), budgets)
                return out
            ledger = self._ledger()
            if self.composition == "tight":
                budgets, planned = tight_budgets(self, X, y, params, budgets)
            else:
                planned = self._plan(X, y, params)
            label = f"{type(self).__name__}({', '.join(b.name for b in budgets)})"
            with private_fit(self, planned, ledgers=[ledger], epsilon=self.epsilon, delta=self.delta,
                             label=label):
                self.__dict__.pop("dp_event_", None)
                out = fit(X, y, **params)
                released = released_event(self)
                if not _same_release(released, planned):
                    raise RuntimeError(f"The events released by {type(self).__name__} ({released}) are not covered "
                                       f"by its plan ({planned}): a step's event depends on the data, which "
                                       "dp_sklearn forbids (docs/privacy.md). The planned event was recorded.")
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
            Training data (as for :meth:`fit`).
        y : iterable, default=None
            Targets (as for :meth:`fit`).
        **params : dict
            As for :meth:`fit`.

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
            Training data, as for :meth:`fit`.
        y : iterable, default=None
            Its targets.
        **params : dict
            Fit parameters of the steps.

        Returns
        -------
        y_pred : ndarray of shape (n_samples,)
            The predictions.
        """
        return self._private("fit_predict", X, y, **params)
