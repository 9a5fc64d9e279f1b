"""DPPoissonRegressor: private Poisson regression (log link) for counts, with a public count bound."""

from __future__ import annotations

import warnings
from numbers import Real

import numpy as np
from sklearn.base import RegressorMixin
from sklearn.utils._param_validation import StrOptions

from .._constraints import Interval
from .._data import check_bounds_y
from .._losses._poisson import PoissonLoss
from .._sets import L1Penalty
from ._auto import bounds_y_plan
from ._base import BATCH_SIZE, PRIVACY_CONSTRAINTS, SolverOptions, _DPLinearBase, solvers_for
from ._dask_predict import blockwise_on_dask

__all__ = ["DPPoissonRegressor", "HeadL2Penalty"]

#: floor of the count bound of bounds_y="auto": the smallest positive count
AUTO_MIN_COUNT = 1.0


class HeadL2Penalty(L1Penalty):
    """The penalty ``(strength / 2) ||theta_head||_2^2`` applied by its proximal map (the intercept free).

    Served by the solvers that apply a penalty by its proximal map after each noisy step
    (the registry's ``"l1_penalty"`` kind, e.g. proximal ``noisy_gd``): the map
    ``v_head / (1 + step * strength)`` is post-processing of the noisy step, so it never
    enters the privacy proof, and unlike a solver's ``l2_reg`` it leaves the last
    ``n_free`` coordinates (the intercept) unpenalized, as scikit-learn does.
    """

    def prox(self, v, step):
        """argmin_u ||u - v||^2 / 2 + step * (strength / 2) ||u_head||^2."""
        m = v.size - self.n_free
        out = v.copy()
        out[:m] = v[:m] / (1.0 + step * self.strength)
        return out


class DPPoissonRegressor(RegressorMixin, _DPLinearBase):
    """Differentially private Poisson regression (log link) for counts.

    scikit-learn's :class:`~sklearn.linear_model.PoissonRegressor` minimizes
    ``(1 / (2 n)) sum_i d(y_i, exp(<x_i, w> + b)) + (alpha / 2) ||w||^2`` with the Poisson
    deviance ``d(y, mu) = 2 (y log(y / mu) - y + mu)``. This estimator minimizes the same
    objective on rows clipped to ``data_norm`` and counts clipped to the public bound
    ``y_max = bounds_y[1]``, with the fitted mean capped at ``y_max``: above it the
    per-example loss is continued by its tangent (convex; where every fitted mean is below
    ``y_max`` the minimizer is scikit-learn's). ``epsilon=numpy.inf`` returns that
    minimizer (accelerated proximal gradient).

    Sensitivity. In normalized units (X / data_norm with a constant intercept column,
    y / y_max in [0, 1], margin ``z = log(mean / y_max)``) the derivative of the capped loss
    is ``exp(min(z, 0)) - y / y_max`` in [-1, 1] for every margin and every count: a
    record's gradient has norm at most its row norm ``sqrt(2)`` (``1`` without an
    intercept) whatever the coefficients, with no bounded domain; noisy gradient descent
    clips it to ``clip_norm`` (default half of that) and the replace-one sensitivity of
    each step's gradient sum is ``2 clip_norm``. The unbounded gradient
    ``(exp(<x, w>) - y) x`` of the plain Poisson loss is bounded by the two public bounds
    only: the count bound (on y, and through the cap on the mean). The l2 penalty is
    applied by its proximal map after each noisy step (post-processing, the intercept
    unpenalized; ``docs/privacy.md``).

    Parameters
    ----------
    alpha : float, default=1.0
        l2 penalty (>= 0) on ``w``, in scikit-learn's PoissonRegressor units (the same
        objective; in normalized units ``alpha / (y_max * data_norm_^2)``).
    epsilon : float, default=1.0
        Privacy loss bound in nats, in (0, 1e100] or ``numpy.inf`` (the non-private
        minimizer of the same objective).
    delta : float, default=1e-5
        Probability in [0, 1) that the epsilon bound fails; much smaller than 1/n_samples.
    bounds_y : tuple of float (0, y_max) or "auto", default="auto"
        Public range of the counts, in units of y: ``low >= 0`` (unused beyond that
        check: counts are non-negative) and ``y_max = high > low``; counts above
        ``y_max`` are clipped to it and the fitted mean is capped at it. ``"auto"``: the
        private range of ``bounds_y="auto"`` (exponential-mechanism quantiles of y; a share
        of epsilon set by ``epsilon`` and ``n_samples``,
        ``dp_sklearn.linear_model._auto.bounds_y_plan``), whose upper end, about two
        standard deviations above the private median, is ``y_max``, or 1 (the smallest
        positive count) if it is below 1, as when most counts are zero.
    data_norm : float, "auto" or None, default=None
        Public bound on the l2 norm of a row of X, in the units of X, in
        [1e-100, 1e100]; rows beyond it are clipped. ``None`` uses sqrt(n_features)
        (standardized features). ``"auto"``: a private median of the row norms (10% of
        epsilon), released as ``data_norm_``.
    solver : str, default="noisy_gd"
        A registered solver that applies a penalty by its proximal map (``"l1_penalty"``)
        and whose requirements the capped Poisson loss meets: ``"noisy_gd"`` (BST 2014
        Algorithm 1, proximal steps). Other solvers are refused.
    fit_intercept : bool, default=True
        Whether to fit an intercept: a constant column of the normalized design, counted in
        the row bound (``docs/privacy.md``, P3). Regressors centre the targets on a private
        location of y first; the l0 models never threshold the intercept and it does not
        count toward ``n_nonzero_coefs``.
    max_iter : int, default=None
        Iterations of iterative solvers; ``None`` uses a data-independent default.
    tol : float, default=1e-8
        Stopping tolerance (gradient-mapping norm, normalized units) of the accelerated
        proximal gradient method used at ``epsilon=inf``.
    clip_norm : float, default=None
        Per-example gradient clipping norm (normalized units); ``None`` uses half the
        row bound.
    accounting : {"tight", "paper"}, default="tight"
        Calibrate with the accountant or with the paper's formula.
    batch_size : int or "full", default=None
        Poisson-sampled mini-batches of this expected size (see :class:`DPRidge`).
    max_sample_weight : float, default=1.0
        Public bound (> 0) on the ``sample_weight`` passed to :meth:`fit`: a record's
        loss, hence its gradient, is scaled by its weight, so the mechanisms' sensitivity
        uses this bound (weights outside [0, ``max_sample_weight``] are refused before
        any budget is reserved). Unused without ``sample_weight``.
    ledger : PrivacyLedger, default=None
        Budget ledger this fit is reserved and recorded in (it survives ``clone`` and joblib
        processes). A fit whose planned event would exceed the ledger's cap raises
        :class:`~dp_sklearn.BudgetExceededError` before any noise is drawn; a fit that fails
        validation reserves nothing.
    random_state : int, numpy.random.Generator, numpy.random.RandomState or None, default=None
        ``None`` draws fresh entropy from the operating system. With an int (or a seeded
        generator) the published model carries the key to its own noise: do not publish
        models fitted with a fixed seed (``docs/privacy.md``, P6).
    verbose : int, default=0
        Progress lines on standard output, as scikit-learn's ``verbose``: 0 silent; 1 one
        line per phase of the fit (solver and its public number of steps, done); 2 or more
        also "step t of T" of the iterative solvers (at most 8 lines a run). Elapsed time
        and public values only, never a data-dependent number.
    report_clipping : bool, default=False
        Release ``clipped_fraction_`` (the private fraction of rows beyond
        ``data_norm_``) for 5% of ``epsilon`` (see :class:`DPRidge`).

    Attributes
    ----------
    coef_ : ndarray of shape (n_features,)
        Released coefficients: the change of the log mean per unit of each feature.
    intercept_ : float
        Released intercept (log mean at x = 0; not penalized). With ``fit_intercept=False``
        it is the public ``log(y_max)``: the margin of the normalized problem is
        ``log(mean / y_max)``, so the offset of the log mean is the count bound's.
    bounds_y_ : tuple of float
        The count range used: ``bounds_y`` or its private estimate.
    data_norm_ : float
        The row bound used: ``data_norm`` (public) or its private estimate.
    clipped_fraction_ : dict of str to float
        Only with ``report_clipping=True``: ``{"data_norm": ...}``.
    dp_event_ : dp_accounting.DpEvent
        What the fit released, for composition with other releases.
    epsilon_ : float
        The epsilon this fit spends.
    delta_ : float
        The delta this fit spends.
    n_iter_ : int
        Data-independent iteration count.
    solver_ : str
        The solver used.
    n_features_in_ : int
        Number of features seen during fit.
    feature_names_in_ : ndarray of shape (``n_features_in_``,)
        Names of features seen during fit, when X has string column names.

    Raises
    ------
    ValueError
        From ``fit``: a hyperparameter out of range (named in the message), ``bounds_y``
        that is not a pair ``0 <= low < high``, a negative count in y, a solver that cannot
        apply the penalty to this loss, delta = 0, NaN or inf in X or y; raised before any
        budget is reserved.
    BudgetExceededError
        From ``fit``: the planned event would exceed ``ledger``'s cap (nothing is drawn).

    Warns
    -----
    UserWarning
        From ``fit`` with ``bounds_y="auto"``, when ``epsilon * n_samples`` (public) is too
        small for the plan of ``bounds_y="auto"`` to release a range: the count bound is
        then the released median.

    See Also
    --------
    DPRidge : Private least squares.
    DPQuantileRegressor : Private quantile regression (no target bound).

    References
    ----------
    P. McCullagh and J. A. Nelder, "Generalized Linear Models", 2nd ed., 1989, Section 6.2.
    R. Bassily, A. Smith and A. Thakurta, "Private empirical risk minimization:
    efficient algorithms and tight error bounds", FOCS 2014, Algorithm 1 (noisy gradient
    steps; the proximal map is post-processing).

    Examples
    --------
    >>> import numpy as np
    >>> from dp_sklearn import DPPoissonRegressor
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(1000, 3))
    >>> y = rng.poisson(np.exp(1.0 + X @ [0.3, -0.2, 0.0]))
    >>> model = DPPoissonRegressor(bounds_y=(0, 30), data_norm=4.0, random_state=0).fit(X, y)
    >>> model.coef_.shape
    (3,)
    """

    _y_validation = {"y_numeric": True, "multi_output": False}
    _loss_names = ("poisson",)
    _penalty_description = "l2 penalty (proximal, intercept free)"

    _parameter_constraints = {
        **PRIVACY_CONSTRAINTS, **BATCH_SIZE,
        "alpha": [Interval(Real, 0, np.inf, closed="left")],
        "bounds_y": ["array-like", StrOptions({"auto"})],
        "solver": [SolverOptions(("l1_penalty",), _loss_names, exact=True)],
    }

    def __init__(self, alpha=1.0, *, epsilon=1.0, delta=1e-5, bounds_y="auto", data_norm=None, solver="noisy_gd",
                 fit_intercept=True, max_iter=None, tol=1e-8, clip_norm=None, accounting="tight", batch_size=None,
                 max_sample_weight=1.0, ledger=None, random_state=None, verbose=0, report_clipping=False):
        self.alpha = alpha
        self.epsilon = epsilon
        self.delta = delta
        self.bounds_y = bounds_y
        self.data_norm = data_norm
        self.solver = solver
        self.fit_intercept = fit_intercept
        self.max_iter = max_iter
        self.tol = tol
        self.clip_norm = clip_norm
        self.accounting = accounting
        self.batch_size = batch_size
        self.max_sample_weight = max_sample_weight
        self.ledger = ledger
        self.random_state = random_state
        self.verbose = verbose
        self.report_clipping = report_clipping

    def _constraint_name(self):
        return "l1_penalty"

    def _allowed_solvers(self):
        return solvers_for("l1_penalty", self._loss_names, exact=True)

    def _feasible_set(self):
        # the strength alpha / (y_max data_norm_^2) is set in _transform_targets, once both are released
        self._penalty = HeadL2Penalty(0.0, n_free=int(bool(self.fit_intercept)))
        return self._penalty

    def _check_model_params(self):
        if isinstance(self.bounds_y, str):
            return
        low, _ = check_bounds_y(self.bounds_y)  # a pair of finite reals (never bools), low < high
        if low < 0:
            raise ValueError(f"bounds_y must be (low, high) with 0 <= low < high for counts, got {self.bounds_y!r}.")

    def _encode_targets(self, y):
        if np.any(np.asarray(y) < 0):  # raised before any reservation, as scikit-learn's PoissonRegressor
            raise ValueError("DPPoissonRegressor requires non-negative targets y (counts); some value of y is "
                             "negative.")
        if not isinstance(self.bounds_y, str):
            self.bounds_y_ = tuple(float(v) for v in self.bounds_y)  # public: the hyperparameter
        self._n_targets = int(y.shape[0])  # public: sets the share of bounds_y="auto"
        if isinstance(self.bounds_y, str) and bounds_y_plan(self.epsilon, self._n_targets).mode == "center":
            warnings.warn(f"bounds_y='auto' with epsilon * n_samples = {self.epsilon * self._n_targets:.4g}: too "
                          "little to locate the range of the counts, so the count bound is a private median of y "
                          "(counts above it are clipped, no fitted mean exceeds it). Pass the public count bound as "
                          "bounds_y=(0, y_max).", UserWarning, stacklevel=4)
        return y, PoissonLoss()

    def _auto_estimates(self):
        return ("bounds_y",) * isinstance(self.bounds_y, str) + super()._auto_estimates()

    def _auto_share(self, name):
        if name == "bounds_y":
            return bounds_y_plan(self.epsilon, self._n_targets).share
        return super()._auto_share(name)

    def _transform_targets(self, y, rng):
        low, high = self.bounds_y_
        # "auto": a count bound is at least 1, the smallest positive count (with mostly zeros the released
        # median and spread are 0, so the released range collapses onto 0); post-processing of the release
        y_max = max(float(high), AUTO_MIN_COUNT) if isinstance(self.bounds_y, str) else float(high)
        self.bounds_y_ = (max(float(low), 0.0), y_max)
        # (1/(2n)) sum d(y, e^(xw+b)) + (alpha/2)||w||^2 = y_max [(1/n) sum phi(z_t, y_t)] + (alpha / (2 B^2)) ||theta_w||^2
        # + const, with z_t = X_t theta = xw + b - log(y_max), y_t = y / y_max, w = theta_w / B
        self._penalty.strength = float(self.alpha) / (y_max * self.data_norm_**2)
        return np.minimum(y, y_max) / y_max, y_max

    def _set_coef(self, coef, intercept, target_map):
        log_max = float(np.log(target_map))
        self.coef_ = coef[:, 0]
        self.intercept_ = float(intercept[0] + log_max) if self.fit_intercept else log_max

    @blockwise_on_dask
    def predict(self, X):
        """Predict the mean count ``min(exp(clip(x) @ coef_ + intercept_), y_max)``.

        Parameters
        ----------
        X : {array-like, sparse matrix, dask array or dask DataFrame} of shape (n_samples, n_features)
            Samples.

        Returns
        -------
        y_pred : ndarray or dask.array.Array of shape (n_samples,)
            Predicted means, in the units of y, in [0, ``bounds_y_[1]``]: the row
            ``x`` is clipped to ``data_norm_`` as in training, and the mean is capped at
            ``y_max = bounds_y_[1]`` as the fitted mean was (the model never saw a
            mean above it).
        """
        # the fitted mean is capped at y_max (the loss is continued by its tangent above it,
        # no count lies above it): the prediction is capped the same way, so it is finite
        return np.exp(np.minimum(self._linear_scores(X), np.log(self.bounds_y_[1])))

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.target_tags.positive_only = True
        tags.regressor_tags.poor_score = True
        return tags
