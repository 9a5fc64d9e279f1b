"""DPHuberRegressor: private robust regression with the Huber loss (no target bound)."""

from __future__ import annotations

import warnings
from numbers import Real

import numpy as np
from sklearn.base import RegressorMixin
from sklearn.utils._param_validation import StrOptions

from .._dask_design import is_dask_collection

from .._constraints import Interval
from .._losses._huber import HuberLoss
from ._auto import (BOUNDS_Y_SEARCH, CENTER_SHARE, COVER_Z, LOCATE_NATS, SHRUNK_MAD_SHARE, BoundsYPlan,
                    private_bounds_y, shrink_factor)
from ._dask_fit import auto_inputs
from ._base import BATCH_SIZE, PRIVACY_CONSTRAINTS, SolverOptions, _DPLinearBase, solvers_for
from ._dask_predict import blockwise_on_dask

__all__ = ["DPHuberRegressor", "huber_y_plan", "AUTO_THRESHOLD", "Y_SHARE", "PREDICT_COVER"]

#: Huber threshold of ``huber_threshold="auto"``, in units of the private scale of y (twice
#: scikit-learn's 1.35, which is in units of the residual scale: the scale of y is larger, and a
#: threshold nearer least squares tracks the conditional mean; chosen on the tabular suite's
#: tuning half, benchmarks/tabular/README.md "Evidence for defaults")
AUTO_THRESHOLD = 3.0
#: smallest and largest share of the fit's epsilon spent on the location and scale of y
#: (``huber_threshold="auto"``, ``huber_y_plan``); the upper end is ``SHRUNK_MAD_SHARE``: the
#: predictions are shrunk toward the released median by ``shrink_factor``, so a model on the
#: remaining 20% beats predicting the median (benchmarks/tabular/README.md, "Evidence for defaults")
Y_SHARE = (0.1, SHRUNK_MAD_SHARE)
#: predictions of ``huber_threshold="auto"`` are clipped to ``center_ -+ PREDICT_COVER *
#: y_scale_`` (post-processing of the released median and scale; see ``predict``); wide enough
#: for the upper tail of a right-skewed target (chosen with ``AUTO_THRESHOLD``)
PREDICT_COVER = 4.0


def huber_y_plan(epsilon, n_samples):
    """The public plan of the location and scale of y of ``huber_threshold="auto"``.

    Three exponential-mechanism medians (``dp_sklearn.linear_model._auto.private_bounds_y``
    in its ``"mad"`` mode): a coarse median ``m0`` of y (log-uniform in ``|y|`` over
    ``BOUNDS_Y_SEARCH``), the median ``m`` (log-uniform in ``|y - m0|``) and the median
    absolute deviation ``d`` of ``|y - m|``, each at privacy loss ``share * epsilon / 3``.
    A median at loss ``e`` has a utility margin of ``e n / 4`` nats; the share gives each
    release ``LOCATE_NATS`` of margin (``12 LOCATE_NATS / (n epsilon)``), clipped to
    ``Y_SHARE`` (up to 80%: the model's predictions are shrunk toward the median by
    ``dp_sklearn.linear_model._auto.shrink_factor``, so the remaining 20% still beat the
    median). When that margin needs more than ``Y_SHARE[1]`` of epsilon, a
    mislocated median would put every prediction far from y; the plan is then
    ``"center"``: the two medians only, with ``LOCATE_NATS`` each (``8 LOCATE_NATS / (n
    epsilon)``, at most ``CENTER_SHARE``), and the fit predicts the released median
    (post-processing; the model's remaining budget is spent and its output discarded, as
    ``bounds_y="auto"`` does in that mode).

    Parameters
    ----------
    epsilon : float
        The fit's total epsilon, in nats (``inf``: exact quantiles, nothing spent).
    n_samples : int
        Number of training rows (public).

    Returns
    -------
    plan : dp_sklearn.linear_model._auto.BoundsYPlan
        Mode ``"mad"`` (``eps_median``, each median, equals ``eps_side``, the MAD) or
        ``"center"`` (``eps_side`` = 0).
    """
    n = max(int(n_samples), 1)
    if not np.isfinite(epsilon):
        return BoundsYPlan(Y_SHARE[0], "mad", np.inf, np.inf, 0.25)
    eps = float(epsilon)
    share = 12.0 * LOCATE_NATS / (n * eps)
    if share > Y_SHARE[1]:
        share = float(np.clip(8.0 * LOCATE_NATS / (n * eps), Y_SHARE[0], CENTER_SHARE))
        return BoundsYPlan(share, "center", share * eps / 2.0, 0.0, 0.25)
    share = float(max(share, Y_SHARE[0]))
    return BoundsYPlan(share, "mad", share * eps / 3.0, share * eps / 3.0, 0.25)


class DPHuberRegressor(RegressorMixin, _DPLinearBase):
    """Differentially private Huber regression: a robust linear model with no target bound.

    Minimizes ``sum_i H_t(y_i - <x_i, w> - b) + alpha ||w||^2`` on rows clipped to
    ``data_norm``, with ``H_t(r) = r^2 / 2`` for ``|r| <= t`` and ``t |r| - t^2 / 2``
    beyond (Huber 1964) and ``t = huber_threshold``. The loss is Lipschitz in the
    residual (``|H_t'| <= t``), so every record's gradient is bounded by ``t`` times its
    row norm whatever its target: unlike :class:`DPRidge`, no public range of y is
    needed and targets are never clipped. In normalized units (X / data_norm with a
    constant intercept column, y / t) the intercept is penalized like the other
    coefficients. The privacy contract is described in ``docs/privacy.md``.

    scikit-learn's :class:`~sklearn.linear_model.HuberRegressor` calls the threshold
    ``epsilon`` (in units of a scale it estimates jointly); here ``epsilon`` is the
    privacy parameter and the threshold is ``huber_threshold``, in units of y. With
    scikit-learn's fitted ``scale_``, ``huber_threshold = epsilon * scale_`` and
    ``alpha = alpha_sklearn * scale_ / 2`` give the same minimizer.

    Parameters
    ----------
    huber_threshold : float or "auto", default="auto"
        The Huber threshold t (> 0), in units of y: residuals beyond it are penalized
        linearly. A float is a public choice (a scale of the residuals one expects; a
        wrong value costs efficiency, never privacy), and the targets are used as they
        are, predictions unclipped. ``"auto"``: a private median ``m`` and median
        absolute deviation of y (three exponential-mechanism medians on a log scale over
        ``BOUNDS_Y_SEARCH`` = +-1e15, the ``"mad"`` mode of
        ``dp_sklearn.linear_model._auto.private_bounds_y``, with the share of epsilon of
        ``huber_y_plan``); the targets are centred on ``m`` (a release, not a bound:
        nothing is clipped), ``y_scale_ = 1.4826 * MAD`` (the normal-consistent MAD) and
        ``t = AUTO_THRESHOLD * y_scale_`` = 3 ``y_scale_``. The fitted model's deviation
        from ``m`` is multiplied by the public factor
        ``dp_sklearn.linear_model._auto.shrink_factor`` of the model's epsilon and
        ``n_samples`` (near 1 unless ``epsilon * n_samples`` is small), and predictions
        are clipped to ``m -+ PREDICT_COVER * y_scale_`` (``prediction_range_``),
        post-processing that bounds how far a noisy fit can stray from the bulk of y (see
        ``predict``). Released as ``center_``, ``y_scale_`` and
        ``huber_threshold_``.
    alpha : float, default=1e-4
        l2 penalty (>= 0) on ``w``, in the units of the objective above.
    epsilon : float, default=1.0
        Privacy loss bound in nats, in (0, 1e100] or ``numpy.inf`` (the non-private
        minimizer of the same objective).
    delta : float, default=1e-5
        Probability in [0, 1) that the epsilon bound fails; much smaller than 1/n_samples.
    data_norm : float, "auto" or None, default=None
        Public bound on the l2 norm of a row of X, in the units of X, in
        [1e-100, 1e100]; rows beyond it are clipped. ``None`` uses sqrt(n_features)
        (standardized features). ``"auto"``: a private median of the row norms (10% of
        epsilon), released as ``data_norm_``.
    solver : str, default="noisy_gd"
        A registered solver that fits a penalized objective and whose requirements the
        Huber loss meets (``"noisy_gd"``, BST 2014 Algorithm 1, and solvers registered
        later). Objective perturbation needs a twice-differentiable loss and is refused.
    fit_intercept : bool, default=True
        Whether to fit an intercept: a constant column of the normalized design, counted in
        the row bound (``docs/privacy.md``, P3). Regressors centre the targets on a private
        location of y first; the l0 models never threshold the intercept and it does not
        count toward ``n_nonzero_coefs``.
    max_iter : int, default=None
        Iterations of iterative solvers; ``None`` uses a data-independent default.
    tol : float, default=1e-8
        Tolerance of the exact solver used at ``epsilon=inf``.
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
        Released coefficients, in the units of X and y.
    intercept_ : float
        Released intercept (0.0 when ``fit_intercept=False``).
    data_norm_ : float
        The row bound used: ``data_norm`` (public) or its private estimate.
    huber_threshold_ : float
        The threshold used: ``huber_threshold`` or its private estimate.
    center_ : float
        The value subtracted from y: 0.0, or the private median with ``"auto"``.
    y_scale_ : float
        With ``"auto"``: the private scale of y (1.4826 times its private MAD; the
        interquartile range over 1.349 at ``epsilon=inf``); NaN with a public threshold.
    prediction_range_ : tuple of float
        ``(low, high)``: ``predict`` clips to it; ``center_ -+ PREDICT_COVER * y_scale_``
        with ``"auto"``, ``(-inf, inf)`` with a public threshold.
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
        From ``fit``: a hyperparameter out of range (named in the message), a solver
        whose requirements the Huber loss does not meet, delta = 0 with a solver that
        needs delta > 0, NaN or inf in X or y; raised before any budget is reserved.
    BudgetExceededError
        From ``fit``: the planned event would exceed ``ledger``'s cap (nothing is drawn).

    Warns
    -----
    UserWarning
        From ``fit`` with ``huber_threshold="auto"``, when ``epsilon * n_samples`` (public)
        is too small for the plan of ``huber_y_plan`` to fit a model: the fit then
        predicts the released median.

    See Also
    --------
    DPRidge : Private least squares (needs a public target range).
    DPLinearRegression : Private ordinary least squares.

    References
    ----------
    P. J. Huber, "Robust estimation of a location parameter", Ann. Math. Statist. 1964.
    R. Bassily, A. Smith and A. Thakurta, "Private empirical risk minimization:
    efficient algorithms and tight error bounds", FOCS 2014, Algorithm 1 (Lipschitz
    losses: the sensitivity of a clipped gradient needs no bound on y).

    Examples
    --------
    Scale the raw features privately too (see ``docs/privacy.md``):

    >>> from sklearn.datasets import load_diabetes
    >>> from dp_sklearn import DPHuberRegressor, DPStandardScaler, make_private_pipeline
    >>> X, y = load_diabetes(return_X_y=True, scaled=False)
    >>> model = make_private_pipeline(DPStandardScaler(random_state=0),
    ...                               DPHuberRegressor(random_state=0), epsilon=1.0).fit(X, y)
    >>> model[-1].coef_.shape
    (10,)
    """

    _y_validation = {"y_numeric": True, "multi_output": False}
    _loss_names = ("huber",)

    _parameter_constraints = {
        **PRIVACY_CONSTRAINTS, **BATCH_SIZE,
        "huber_threshold": [Interval(Real, 0, np.inf, closed="neither"), StrOptions({"auto"})],
        "alpha": [Interval(Real, 0, np.inf, closed="left")],
        "solver": [SolverOptions(("none",), _loss_names, exact=True)],
    }

    def __init__(self, huber_threshold="auto", *, alpha=1e-4, epsilon=1.0, delta=1e-5, data_norm=None,
                 solver="noisy_gd", fit_intercept=True, max_iter=None, tol=1e-8, clip_norm=None, accounting="tight",
                 batch_size=None, max_sample_weight=1.0, ledger=None, random_state=None, verbose=0, report_clipping=False):
        self.huber_threshold = huber_threshold
        self.alpha = alpha
        self.epsilon = epsilon
        self.delta = delta
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

    def _allowed_solvers(self):
        return solvers_for("none", self._loss_names, exact=True)

    def _l2_reg(self, n_samples, data_norm):
        # sum H_t + alpha ||w||^2 divided by n t^2, with w = t theta / data_norm
        return 2.0 * self.alpha / (n_samples * data_norm**2)

    def _check_model_params(self):
        pass

    def _encode_targets(self, y):
        self._n_targets = int(y.shape[0])  # public: sets the share of the "auto" threshold
        if isinstance(self.huber_threshold, str) and huber_y_plan(self.epsilon, self._n_targets).mode == "center":
            warnings.warn(f"huber_threshold='auto' with epsilon * n_samples = {self.epsilon * self._n_targets:.4g}: "
                          "too little to locate y and fit a model, so the model predicts a private median of y. "
                          "Pass a public huber_threshold, or more data or epsilon.", UserWarning, stacklevel=4)
        return y, HuberLoss()

    def _auto_share(self, name):
        if name == "huber_y":
            return huber_y_plan(self.epsilon, self._n_targets).share
        return super()._auto_share(name)

    def _auto_estimates(self):
        # "auto": the private median and MAD of huber_y_plan (accounted in _auto_events)
        return ("huber_y",) * isinstance(self.huber_threshold, str) + super()._auto_estimates()

    def _draw_auto(self, X, y, rng):
        """Release the median and MAD of y first ("auto" threshold), then the base class's bounds."""
        if isinstance(self.huber_threshold, str):
            if is_dask_collection(y):  # the 1-D targets come to the client, as for bounds_y="auto"
                y = auto_inputs(X, y, ("bounds_y",), None)[0]
            plan = huber_y_plan(self.epsilon, y.shape[0])
            self._y_bounds, self._y_center = private_bounds_y(y, self.epsilon, rng, plan=plan)
        return super()._draw_auto(X, y, rng)

    def _transform_targets(self, y, rng):
        if isinstance(self.huber_threshold, str):
            low, high = self.__dict__.pop("_y_bounds")  # m -+ (COVER_Z / z_0.75) MAD, released by _draw_auto
            center = self._y_center  # the released median
            floor = max(1e-12, 1e-9 * abs(center))  # a MAD collapsed on the median (a point mass)
            scale = max((high - low) / (2.0 * COVER_Z), floor)  # 1.4826 MAD (IQR / 1.349 at epsilon = inf)
            t = AUTO_THRESHOLD * scale
            half = PREDICT_COVER * scale
            if huber_y_plan(self.epsilon, y.shape[0]).mode == "center":  # public: predict the released median
                half = 0.0
            self.prediction_range_ = (max(center - half, BOUNDS_Y_SEARCH[0]), min(center + half, BOUNDS_Y_SEARCH[1]))
        else:
            center, scale, t = 0.0, float("nan"), float(self.huber_threshold)
            self.prediction_range_ = (-np.inf, np.inf)
        self.center_, self.y_scale_, self.huber_threshold_ = float(center), float(scale), float(t)
        return (y - center) / t, (center, t)

    def _set_coef(self, coef, intercept, target_map):
        center, t = target_map
        low, high = self.prediction_range_
        if low == high:  # "center" plan: the model predicts the released median
            self.coef_, self.intercept_ = np.zeros_like(coef[:, 0]), float(center)
            return
        lam = 1.0
        if isinstance(self.huber_threshold, str):  # toward the released center (post-processing; a public factor)
            lam = shrink_factor(self._model_epsilon(), self._n_targets)
        self.coef_ = lam * t * coef[:, 0]
        self.intercept_ = float(center + lam * t * intercept[0]) if self.fit_intercept else float(center)

    @blockwise_on_dask
    def predict(self, X):
        """Predict with the released linear model.

        Parameters
        ----------
        X : {array-like, sparse matrix, dask array or dask DataFrame} of shape (n_samples, n_features)
            Samples.

        Returns
        -------
        y_pred : ndarray or dask.array.Array of shape (n_samples,)
            Predictions, in the units of y, clipped to ``prediction_range_``:
            ``clip(x) @ coef_ + intercept_`` with the row ``x`` clipped to ``data_norm_``
            as in training.

        Notes
        -----
        On a test set with mean ``ybar`` and variance ``v``, ``R^2 = (2 cov(p, y) -
        mean((p - ybar)^2)) / v``: a fit whose predictions are not anti-correlated with
        y has ``R^2 >= -1`` as long as their root-mean-square distance from ``ybar`` is
        at most the standard deviation of y. Noise drives predictions away from the
        bulk of y, and the clip to ``center_ -+ PREDICT_COVER * y_scale_`` (the released
        median and scale) caps that distance whatever the noise; the choice of
        ``PREDICT_COVER`` is measured in ``benchmarks/tabular/README.md`` ("Evidence for
        defaults").
        """
        return np.clip(self._linear_scores(X), *self.prediction_range_)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.regressor_tags.poor_score = True
        return tags
