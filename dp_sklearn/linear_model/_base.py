"""The one fit template of every DP estimator, and the shared parameter constraints.

``fit`` (a) validates the hyperparameters (``_parameter_constraints``) and the data,
(b) builds the normalized problem with the public bounds, (c) asks the feasible set and
the loss for what the mechanism needs and lets the mechanism *plan* from public values
only, (d) reserves the exact planned event in the ledger and runs the mechanism, (e)
records the event, (f) maps the coefficients back to the units of X and y.

An estimator is a declaration: its loss family (``_loss_names``), its feasible set or
penalty (``_feasible_set``, ``_l2_reg``), its default solver and its docstring.
"""

from __future__ import annotations

import warnings
from functools import partial
from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp
from dp_accounting import dp_event
from sklearn.base import BaseEstimator, _fit_context
from sklearn.utils._param_validation import Options, StrOptions
from sklearn.utils.validation import _check_sample_weight, _num_samples, check_is_fitted, validate_data

from .._constraints import Interval
from .._blockwise import row_norms
from .._dask_design import dask_problem, is_dask_collection, normalize_dask
from .._clipping import CLIPPING_SHARE, clipping_event, private_clipped_fraction
from .._data import Problem, count_clipped_rows, normalize_X
from .._exact import minimize
from .._losses._weighted import WeightedLoss
from .._progress import progress
from .._sets import Unconstrained, bounded_domain
from .._release import make_rng, private_fit
from ..ledger import PrivacyLedger
from ..solvers import SOLVERS, get_solver
from ..solvers._base import PublicProblem
from ._auto import (AUTO_SHARE, _row_norms as _auto_row_norms, auto_event, bounds_y_plan, default_data_norm, private_bounds_y,
                    private_data_norm)
from ._dask_fit import auto_inputs, validate_dask

#: loss properties that only unweighted losses have (WeightedLoss drops them): a solver requiring
#: one (sufficient statistics, exact samplers) is refused, by name, when a fit has weights
_UNWEIGHTED_ONLY = frozenset({"gram_path", "bounded_value"})

#: solvers whose non-private path (epsilon = inf) is the same algorithm without noise;
#: every other solver's epsilon = inf fit is the exact minimizer of the same objective
_RUNS_AT_INF = ("l0",)


_make_rng = make_rng  # the one conversion of random_state (dp_sklearn._release)


def solvers_for(constraint_name, loss_names, exact=False):
    """Registered solvers that serve this feasible set (or penalty) and the losses, in registry order.

    ``exact``: only solvers that declare ``constraint_name`` itself (a penalty-only model with
    no public ball for the solvers that need one).
    """
    return [name for name, spec in SOLVERS.items() if spec.supports(constraint_name, loss_names)
            and (not exact or constraint_name in spec.constraints)]


class SolverOptions(StrOptions):
    """The ``solver`` constraint, read from the registry each time it is checked (one source).

    A solver registered after import is accepted by parameter validation exactly when
    the estimator offers it (:meth:`_DPLinearBase._allowed_solvers`).

    Parameters
    ----------
    constraint_names : tuple of str
        Feasible sets (or ``"none"``, a penalty) whose solvers are offered.
    loss_names : tuple of str
        The estimator's losses.
    extra : tuple of str, default=()
        Other accepted strings (e.g. ``"auto"``).
    exact : bool, default=False
        Only solvers that declare the feasible set itself (see :func:`solvers_for`).
    """

    def __init__(self, constraint_names, loss_names, extra=(), exact=False):
        self.constraint_names, self.loss_names, self.extra = tuple(constraint_names), tuple(loss_names), tuple(extra)
        self.exact = exact
        super().__init__(set())

    @property
    def options(self):
        """The currently registered solvers that serve the declaration, and ``extra``."""
        names = [s for c in self.constraint_names for s in solvers_for(c, self.loss_names, self.exact)]
        return {*self.extra, *names}

    @options.setter
    def options(self, value):  # set by scikit-learn's __init__; the registry is the source
        pass


#: |epsilon| above this (finite) overflows the calibrations
MAX_FINITE_EPSILON = 1e100
#: data_norm outside [1 / DATA_NORM_RANGE, DATA_NORM_RANGE] under/overflows the normalization
DATA_NORM_RANGE = 1e100

PRIVACY_CONSTRAINTS = {
    "epsilon": [Interval(Real, 0, MAX_FINITE_EPSILON, closed="right"), Options(Real, {np.inf})],
    "delta": [Interval(Real, 0, 1, closed="left")],
    "data_norm": [Interval(Real, 1.0 / DATA_NORM_RANGE, DATA_NORM_RANGE, closed="both"), StrOptions({"auto"}), None],
    "fit_intercept": ["boolean"],
    "max_iter": [Interval(Integral, 1, None, closed="left"), None],
    "tol": [Interval(Real, 0, np.inf, closed="neither")],
    "clip_norm": [Interval(Real, 0, np.inf, closed="neither"), None],
    "accounting": [StrOptions({"tight", "paper"})],
    "ledger": [PrivacyLedger, None],
    "random_state": ["random_state", np.random.Generator],
    "verbose": ["verbose"],
    "report_clipping": ["boolean"],
    "max_sample_weight": [Interval(Real, 0, DATA_NORM_RANGE, closed="right")],
}
DATA_NORM_ORD = {"data_norm_ord": [Options(Real, {2, np.inf})]}
BATCH_SIZE = {"batch_size": [Interval(Integral, 1, None, closed="left"), StrOptions({"full"}), None]}


class _DPLinearBase(BaseEstimator):
    """Shared fit template; subclasses declare the model (see the module docstring)."""

    _loss_names: tuple = ("squared",)
    #: defaults of the hyperparameters that only some estimators expose
    data_norm_ord = 2
    batch_size = None
    max_sample_weight = 1.0

    # ------------------------------------------------------------ declarations
    def _constraint_name(self):
        return "none"

    def _feasible_set(self):
        return Unconstrained()

    def _l2_reg(self, n_samples, data_norm):
        return 0.0

    def _ball_radius(self):
        """Radius of the l2 ball served to a solver without ``"none"`` (None: see bounded_domain)."""
        return None

    def _resolved_solver(self, n_samples=None):
        return self.solver

    def _public_loss(self):
        """The loss the fit will use, from public values (the declared loss family, the label set)."""
        from .._losses import LogisticLoss, SquaredLoss

        return SquaredLoss() if self._loss_names[0] == "squared" else LogisticLoss()

    def _few_pass_default(self, n_samples):
        """Whether ``solver="auto"`` takes ``noisy_newton`` (public values only).

        :func:`dp_sklearn.solvers._noisy_newton.newton_applies` on n, the number of
        features, the public row bound and the solver's (epsilon, delta); never with a
        Poisson-sampled ``batch_size``, ``accounting="paper"`` or at ``epsilon = inf``.
        """
        from ..solvers._noisy_newton import newton_applies

        public = self._few_pass_public(n_samples)
        return public is not None and newton_applies(public, self._solver_epsilon(), float(self.delta), self.max_iter)

    def _accelerated_default(self, n_samples):
        """Whether ``solver="auto"`` takes ``noisy_agd`` (public values only; the same guards).

        :func:`dp_sklearn.solvers._noisy_agd.agd_applies`: the squared loss, or the binary
        logistic loss above ``MAX_DIM`` columns; asked where :meth:`_few_pass_default` does not hold.
        """
        from ..solvers._noisy_agd import agd_applies

        public = self._few_pass_public(n_samples)
        return public is not None and agd_applies(public, self._solver_epsilon(), float(self.delta))

    def _few_pass_public(self, n_samples):
        """The public problem the few-pass tests read, or None where no few-pass default applies."""
        p = getattr(self, "n_features_in_", None)
        if (n_samples is None or p is None or self.epsilon == np.inf or self.accounting != "tight"
                or (self.batch_size is not None and not isinstance(self.batch_size, str))):
            return None
        return PublicProblem(int(n_samples), p + bool(self.fit_intercept),
                             _public_x_norm(p, self.data_norm_ord, self.fit_intercept), 1.0, self._public_loss())

    def _describe(self):
        return type(self).__name__

    def _allowed_solvers(self):
        return solvers_for(self._constraint_name(), self._loss_names)

    # ------------------------------------------------------------ validation
    def _check_solver(self, n_samples):
        """The solver's spec, after the checks that depend on several parameters."""
        solver = self._resolved_solver(n_samples)
        allowed = self._allowed_solvers()
        if solver not in allowed:
            raise ValueError(f"solver must be one of {allowed} for {self._describe()}, got {solver!r}.")
        spec = get_solver(solver)
        if self.delta == 0 and not spec.pure_dp and self.epsilon != np.inf:
            pure = [s for s in allowed if SOLVERS[s].pure_dp]
            raise ValueError(f"delta=0 (pure DP) is not supported by solver={solver!r}; use delta > 0 or one of the "
                             f"solvers that accept delta=0: {pure}.")
        batch_size = self.batch_size
        if batch_size is not None and not isinstance(batch_size, str):  # "full": what every other solver does
            takes = [s for s in allowed if "batch_size" in SOLVERS[s].params]
            if "batch_size" not in spec.params:
                raise ValueError(f"batch_size is used only by solver in {takes}, got solver={solver!r}.")
            if batch_size > n_samples:
                raise ValueError(f"batch_size must be None or an int in [1, n_samples={n_samples}], got {batch_size!r}.")
        if self.delta > 0 and self.delta >= 1.0 / n_samples:
            warnings.warn(f"delta={self.delta:g} >= 1/n_samples={1.0 / n_samples:.3g}: such a delta allows releasing "
                          "a record outright; choose delta much smaller than 1/n_samples.", UserWarning, stacklevel=4)
        return spec

    def _validate_X_y(self, X, y, **kwargs):
        if y is None:
            raise ValueError(f"{type(self).__name__} requires y to be passed, but the target y is None.")
        n_x, n_y = _num_samples(X), _num_samples(y)
        if n_x != n_y:
            raise ValueError(f"X and y have inconsistent numbers of samples: X has {n_x}, y has {n_y}.")
        if kwargs.get("y_numeric"):  # scikit-learn's y_numeric converts object arrays only, not str arrays
            y_arr = np.asarray(y) if not hasattr(y, "dtype") else y
            if getattr(y_arr, "dtype", None) is not None and y_arr.dtype.kind in "OUS":
                try:
                    y = np.asarray(y_arr, dtype=np.float64)
                except (TypeError, ValueError):
                    raise ValueError(f"y must be numeric (numbers or numeric strings) for {type(self).__name__}."
                                     ) from None
        # float32 is kept (not copied): normalize_X casts it to float64 block by block
        return validate_data(self, X, y, accept_sparse="csr", dtype=[np.float64, np.float32], **kwargs)

    def _data_norm_value(self, n_features, sparse=False):
        """The public data_norm (its reference value when ``None`` or ``"auto"``: see default_data_norm)."""
        if self.data_norm is not None and not isinstance(self.data_norm, str):
            return float(self.data_norm)
        return default_data_norm(n_features, self.data_norm_ord, sparse)

    def _auto_estimates(self):
        """Names of the bounds this fit estimates privately (``"auto"``), in draw order."""
        return ("data_norm",) if isinstance(self.data_norm, str) else ()

    def _bounds_y_plan(self):
        """The plan of ``bounds_y="auto"`` (public: epsilon and the number of targets only)."""
        return bounds_y_plan(self.epsilon, self._n_targets)

    def _auto_share(self, name):
        """Share of epsilon spent on the "auto" estimate ``name`` (public values only)."""
        return AUTO_SHARE[name]

    def _auto_events(self):
        """Events of the private bound estimates and of the clipping diagnostic (public: shares fixed in advance)."""
        if self.epsilon == np.inf:
            return ()
        clipping = (clipping_event(self.epsilon),) if self.report_clipping else ()
        return tuple(auto_event(self.epsilon, name, self._auto_share(name))[1]
                     for name in self._auto_estimates()) + clipping

    def _model_epsilon(self):
        """Epsilon left for the model after the "auto" estimates and the clipping diagnostic."""
        names = self._auto_estimates()
        shares = sum(self._auto_share(name) for name in names)
        left = 1.0 - shares - CLIPPING_SHARE * bool(self.report_clipping)
        if left <= 0.0 and self.epsilon != np.inf:  # public: the shares are functions of epsilon and n only
            n = getattr(self, "_n_targets", None)
            raise ValueError(f"the private estimates {list(names)}" + " and report_clipping" * bool(self.report_clipping)
                             + f" take {1.0 - left:.0%} of epsilon (epsilon * n_samples = "
                             f"{float(self.epsilon) * (n or 0):.4g}): nothing is left for the model. Pass a public "
                             "data_norm (or the other bound), report_clipping=False, or more data or epsilon.")
        return float(self.epsilon) * left

    def _clip_counts(self, X, y, data_norm):
        """Records beyond each public bound, by parameter name (private: see ``report_clipping``)."""
        return {"data_norm": count_clipped_rows(X, data_norm, self.data_norm_ord)}

    def _draw_auto(self, X, y, rng):
        """Release the "auto" bounds (data_norm first); returns the data_norm to use."""
        norms = None
        if is_dask_collection(X):  # their 1-D inputs come to the client (dp_sklearn.linear_model._dask_fit)
            y, norms = auto_inputs(X, y, self._auto_estimates(), partial(_auto_row_norms, ord_=self.data_norm_ord))
        if "bounds_y" in self._auto_estimates():
            self.bounds_y_, self._y_center = private_bounds_y(y, self.epsilon, rng, plan=self._bounds_y_plan())
        if "data_norm" in self._auto_estimates():
            return private_data_norm(X, self.data_norm_ord, self.epsilon, rng, row_norms=norms)
        return self._data_norm_value(X.shape[1], sp.issparse(X))

    # ------------------------------------------------------------ the template
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None):
        """Fit the model with the private solver.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Training data; CSR input is never densified.
        y : array-like of shape (n_samples,)
            Target values (regressors) or class labels (classifiers).
        sample_weight : array-like of shape (n_samples,), default=None
            Per-record weights w_i in [0, ``max_sample_weight``]: record i's loss is
            multiplied by w_i (the objective is ``(1/n) sum_i w_i loss_i`` plus the
            penalty, scikit-learn's weighted objective up to its normalization). The
            sensitivity uses the public bound ``max_sample_weight``, never the weights;
            weights outside it are refused before any budget is reserved. ``None``:
            every weight 1 (and no bound is used). Solvers that release sufficient
            statistics or sample exactly (``ssp``, ``objective_perturbation_ddr``,
            ``exponential_sampling``, ``localization``) refuse weights. Multiplied by
            the class weights of ``class_weight`` where a classifier has it.

        Returns
        -------
        self : object
            The fitted estimator.

        Raises
        ------
        ValueError
            If ``sample_weight`` is not of shape (n_samples,), not finite, or has a
            value outside [0, ``max_sample_weight``]; or the solver cannot honour
            weights (before any budget is reserved).
        BudgetExceededError
            If the ``ledger`` cannot afford the fit (nothing is reserved).
        """
        with progress(type(self).__name__, self.verbose) as report:  # progress without data
            return self._fit(X, y, report, sample_weight=sample_weight)

    def _check_sample_weight(self, sample_weight, X):
        """The validated weights (``None`` when not given); see :func:`check_sample_weight`."""
        return check_sample_weight(sample_weight, X, self.max_sample_weight)

    def _weight_bound(self, sample_weight):
        """(public bound, nominal mean) of the per-record weights, or None for an unweighted fit.

        Depends on whether weights were given and on hyperparameters only (public).
        """
        if sample_weight is None:
            return None
        bound = float(self.max_sample_weight)
        return bound, bound

    def _record_weights(self, y, sample_weight, rng):
        """The weight of each record (run inside the release; classifiers multiply their class weights)."""
        return sample_weight

    def _fit(self, X, y, report=None, sample_weight=None):
        self._check_model_params()
        if is_dask_collection(X) or is_dask_collection(y):  # the distributed engine (dp_sklearn._dask_design)
            X, y = validate_dask(self, X, y)
        else:
            X, y = self._validate_X_y(X, y, **self._y_validation)
        sample_weight = self._check_sample_weight(sample_weight, X)
        distributed = is_dask_collection(X)
        if distributed and self.report_clipping:
            raise ValueError("report_clipping=True is not supported for dask input; fit in memory, or leave it False.")
        n, p = X.shape
        # raises on bad labels or bounds, before any reservation; first, because the budget
        # shares (hence solver="auto") depend on what it reads (n, the public target plan)
        y_enc, loss = self._encode_targets(y)
        weight_bound = self._weight_bound(sample_weight)
        if weight_bound is not None:  # the declared constants scale by the public bound
            loss = WeightedLoss(loss, weight_bound[0], mean_weight=weight_bound[1])
        spec = self._check_solver(n)
        if weight_bound is not None and _UNWEIGHTED_ONLY & set(spec.requires):
            why = "sample_weight" if sample_weight is not None else "class_weight"
            takes = [s for s in self._allowed_solvers() if not _UNWEIGHTED_ONLY & set(SOLVERS[s].requires)]
            raise ValueError(f"solver={spec.name!r} cannot honour {why} (it releases sufficient statistics or "
                             f"samples exactly from the unweighted objective); choose another solver among {takes}.")
        spec.check_loss(loss)  # the solver's declared requirements on this loss (before any reservation)
        # Plan from public values only: the reference data_norm sets the penalty's units
        # when data_norm="auto", so the plan (and the event) never depends on the data.
        l2_reg = self._l2_reg(n, self._data_norm_value(p, sp.issparse(X)))
        x_norm = _public_x_norm(p, self.data_norm_ord, self.fit_intercept)
        constraint = self._feasible_set()
        if isinstance(constraint, Unconstrained) and "none" not in spec.constraints:
            constraint = bounded_domain(constraint, loss, x_norm, radius=self._ball_radius())
        public = PublicProblem(n, (p + bool(self.fit_intercept)) * loss.n_outputs, x_norm, 1.0, loss, l2_reg)
        plan, kwargs, events = self._plan(spec, public, constraint)  # the same plan for dask input
        event = events[0] if len(events) == 1 else dp_event.ComposedDpEvent(events)
        with private_fit(self, event, ledgers=[self.ledger], epsilon=self.epsilon, delta=self.delta) as release:
            rng = release.rng(self.random_state)  # the one Generator of this fit
            B = self._draw_auto(X, y_enc, rng)
            self.data_norm_ = B
            if distributed:
                Xt, x_norm_t, x_inf = normalize_dask(X, B, self.data_norm_ord, self.fit_intercept)
            else:  # column-major for full-batch products, row-major for Poisson samples (public: the plan)
                full_batch = plan is None or plan.info.get("sampling_rate", 1.0) >= 1.0
                Xt, x_norm_t, x_inf = normalize_X(X, B, self.data_norm_ord, self.fit_intercept,
                                                  order="F" if full_batch else "C")
            if x_norm_t != x_norm or x_inf != 1.0:  # the public bounds the plan used
                raise RuntimeError("normalize_X returned bounds that differ from the planned public bounds.")
            y_t, target_map = self._transform_targets(y_enc, rng)
            weights = self._record_weights(y_enc, sample_weight, rng)  # releases "balanced" counts if asked
            if weight_bound is not None:  # the weights travel with the targets (WeightedLoss)
                y_t = WeightedLoss.attach(y_t, weights)
            if self.report_clipping:  # the opt-in private diagnostic, planned in _auto_events
                self.clipped_fraction_ = private_clipped_fraction(self._clip_counts(X, y_enc, B), n, self.epsilon, rng)
            else:
                self.__dict__.pop("clipped_fraction_", None)
            if distributed:  # the design and targets stay on the cluster
                passes = plan.info.get("passes", 1) if plan is not None else 1  # public: from the plan
                problem = dask_problem(Xt, y_t, loss, x_norm, x_inf, l2_reg, passes)
            else:
                problem = Problem(Xt, y_t, loss, x_norm, x_inf, _row_norms(Xt), l2_reg)
            if report is not None:
                report.line(f"data normalized; solver {spec.name}, {plan.n_iter if plan else 1} steps")
            theta, n_iter = self._run(spec, problem, constraint, plan, kwargs, rng)
            self._set_dp_attributes(spec, event, plan, n_iter)
        K = loss.n_outputs
        Theta = theta.reshape(Xt.shape[1], K)
        self._set_coef(Theta[:p] / B, Theta[p] if self.fit_intercept else np.zeros(K), target_map)
        if report is not None:
            report.line("fit done")
        return self

    def _linear_scores(self, X):
        """The released linear predictor on rows clipped as in ``fit`` (see :func:`linear_scores`)."""
        return linear_scores(self, X, self.data_norm_ord)

    def _prior_events(self):
        """Releases this fit makes before the solver (e.g. the private mean of y)."""
        return ()

    def _solver_epsilon(self):
        return self._model_epsilon()

    def _plan(self, spec, public, constraint):
        """The solver's keyword arguments, its plan (None at epsilon = inf) and the fit's events.

        The same for in-memory and dask input (the distributed engine runs the plan's
        full-batch or Poisson-sampled steps blockwise), so a seed gives the same fit on both.
        """
        kwargs = {p: getattr(self, p) for p in spec.params if p in self._parameter_constraints}
        if "l2_reg" in spec.params:
            kwargs["l2_reg"] = public.l2_reg
        if self.epsilon == np.inf:
            return None, kwargs, [dp_event.NonPrivateDpEvent()]
        plan = spec.plan(public, constraint, epsilon=self._solver_epsilon(), delta=float(self.delta), **kwargs)
        return plan, kwargs, [*self._auto_events(), *self._prior_events(), plan.event]

    def _run(self, spec, problem, constraint, plan, kwargs, rng):
        """Run the mechanism (or its non-private path at epsilon = inf); returns (theta, n_iter)."""
        if plan is None:
            if any(c in spec.constraints for c in _RUNS_AT_INF):
                res = spec.func(problem, constraint, epsilon=np.inf, delta=float(self.delta), rng=rng, **kwargs)
                return res.coef, res.n_iter
            return minimize(problem, constraint, l2_reg=problem.l2_reg, tol=self.tol), 1
        res = spec.func(problem, constraint, epsilon=plan.epsilon, delta=plan.delta, rng=rng, plan=plan, **kwargs)
        theta = res.coef
        if problem.loss.needs_bounded_domain and isinstance(constraint, Unconstrained):
            # Post-processing: predictions for in-bound x stay within bounds_y.
            theta = bounded_domain(constraint, problem.loss, problem.x_norm).project(theta)
        return theta, res.n_iter

    def _set_dp_attributes(self, spec, event, plan, n_iter):
        self.dp_event_ = event
        if plan is None:
            self.epsilon_, self.delta_ = float("inf"), float(self.delta)
        else:
            prior = self._auto_events() or self._prior_events()
            self.epsilon_ = float(self.epsilon) if prior else plan.epsilon
            self.delta_ = plan.delta
        self.n_iter_ = n_iter
        self.solver_ = spec.name


def check_sample_weight(sample_weight, X, max_sample_weight):
    """The validated weights (``None`` when not given); refuses them outside [0, max_sample_weight].

    A validation of the input, like the NaN checks, before any reservation: the
    message names the bound, never a weight.

    Raises
    ------
    ValueError
        Naming ``sample_weight``: dask input, a shape other than (n_samples,), a non-finite
        value, or a value outside [0, ``max_sample_weight``].
    """
    if sample_weight is None:
        return None
    if is_dask_collection(X) or is_dask_collection(sample_weight):
        raise ValueError("sample_weight is not supported for dask input; fit in memory, or leave it None.")
    try:
        sw = _check_sample_weight(sample_weight, X, dtype=np.float64)
    except ValueError as exc:
        raise ValueError(f"sample_weight must be a finite array of shape (n_samples,): {exc}") from None
    bound = float(max_sample_weight)
    if sw.size and (sw.min() < 0 or sw.max() > bound):
        raise ValueError(f"sample_weight must be in [0, max_sample_weight={bound:g}] (the public bound the "
                         "sensitivity uses); some weights are outside it. Rescale the weights or raise "
                         "max_sample_weight.")
    return sw


def linear_scores(est, X, data_norm_ord):
    """``clip(x) @ coef_.T + intercept_``: test rows treated exactly as training rows were.

    The one place every estimator's ``predict``, ``decision_function`` and
    ``predict_proba`` computes its linear predictor. ``fit`` clips each row to the
    public bound ``data_norm_`` in the norm ``data_norm_ord`` (:func:`dp_sklearn._data.normalize_X`)
    before the model sees it; the same clipping here keeps a test row far beyond that
    bound (raw units) from extrapolating the fitted model by its norm, a region the
    model was never fitted on. A post-processing of the released model applied to the
    caller's rows (no privacy cost). Dask input reaches this block by block through
    :func:`dp_sklearn.linear_model._dask_predict.blockwise_on_dask`.

    Parameters
    ----------
    est : fitted estimator
        Gives ``coef_`` (shape (n_features,) or (n_outputs, n_features)), ``intercept_``
        and ``data_norm_`` (in the units of X).
    X : {array-like, sparse matrix} of shape (n_samples, n_features)
        Test rows.
    data_norm_ord : {2, inf}
        The norm ``fit`` clipped in.

    Returns
    -------
    scores : ndarray of shape (n_samples,) or (n_samples, n_outputs)
        One column per output; a single output is returned flat.

    Raises
    ------
    sklearn.exceptions.NotFittedError
        Before ``fit``.
    ValueError
        When X is not finite, or its features differ from those seen in ``fit``.
    """
    check_is_fitted(est)
    X = validate_data(est, X, accept_sparse="csr", dtype=np.float64, reset=False)
    B = float(est.data_norm_)
    Xt, _, _ = normalize_X(X, B, data_norm_ord, False)  # rows of norm <= 1: x clipped to B, divided by B
    scores = B * np.asarray(Xt @ np.asarray(est.coef_).T) + est.intercept_
    return scores.ravel() if scores.ndim == 2 and scores.shape[1] == 1 else scores


def _public_x_norm(n_features, data_norm_ord, fit_intercept):
    """Public bound on the l2 norm of a normalized row (see dp_sklearn._data.normalize_X)."""
    x_norm = 1.0 if data_norm_ord == 2 else float(np.sqrt(n_features))
    return float(np.sqrt(x_norm**2 + 1.0)) if fit_intercept else x_norm


def _row_norms(Xt):
    """||x_tilde_i||_2 of the normalized rows, without an X-sized temporary."""
    return row_norms(Xt)
