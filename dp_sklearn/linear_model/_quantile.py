"""DPQuantileRegressor: private linear quantile regression with the pinball loss (no target bound)."""

from __future__ import annotations

import warnings
from numbers import Real

import numpy as np
import scipy.sparse as sp
from scipy.optimize import linprog
from sklearn.base import RegressorMixin
from sklearn.utils._param_validation import StrOptions

from .._constraints import Interval
from .._losses._pinball import PinballLoss
from .._sets import L1Penalty
from ._auto import COVER_Z, bounds_y_plan
from ._base import BATCH_SIZE, PRIVACY_CONSTRAINTS, SolverOptions, _DPLinearBase, solvers_for
from ._dask_predict import blockwise_on_dask

__all__ = ["DPQuantileRegressor", "exact_quantile_fit"]

#: smoothing="auto": the width in units of the released robust scale of y, 1.4826 MAD (a
#: public constant, not tuned: at q = 1/2 the smoothed loss is a Huber loss with threshold
#: half the width, and noisy GD's step is proportional to the width)
AUTO_SMOOTHING = 1.0


def exact_quantile_fit(X, y, quantile, l1, n_free):
    """argmin_theta (1/n) sum_i w_i rho_q(y_i - <x_i, theta>) + l1 ||theta_head||_1 (a linear program).

    ``y`` is of shape (n,) (w_i = 1) or (n, 2), the targets and the weights (WeightedLoss's layout).

    The last ``n_free`` coordinates are not penalized. Solved with HiGHS
    (``scipy.optimize.linprog(method="highs")``), as scikit-learn's
    :class:`~sklearn.linear_model.QuantileRegressor` does: theta = theta+ - theta-,
    y - X theta = r+ - r-, all parts non-negative, cost ``l1`` on the penalized parts of
    theta+- and ``q / n``, ``(1 - q) / n`` on r+, r-. Non-private (``epsilon=inf`` only).

    Raises
    ------
    RuntimeError
        If HiGHS does not report an optimal solution.
    """
    n, d = X.shape
    y = np.asarray(y, dtype=float)
    w = np.ones(n) if y.ndim == 1 else y[:, -1]  # weighted fits carry w_i as y's last column (WeightedLoss)
    y = y if y.ndim == 1 else y[:, 0]
    X = sp.csr_matrix(X) if sp.issparse(X) else np.asarray(X)
    pen = np.full(d, float(l1))
    if n_free:
        pen[d - n_free:] = 0.0
    c = np.concatenate([pen, pen, w * (quantile / n), w * ((1.0 - quantile) / n)])
    eye = sp.eye(n, format="csr")
    A = sp.hstack([sp.csr_matrix(X), -sp.csr_matrix(X), eye, -eye], format="csc")
    res = linprog(c, A_eq=A, b_eq=y, bounds=(0, None), method="highs")
    if res.status != 0:
        raise RuntimeError(f"the exact quantile fit (HiGHS) did not converge: {res.message}")
    return res.x[:d] - res.x[d:2 * d]


class DPQuantileRegressor(RegressorMixin, _DPLinearBase):
    """Differentially private linear quantile regression: the pinball loss, no target bound.

    scikit-learn's :class:`~sklearn.linear_model.QuantileRegressor` minimizes
    ``(1 / n) sum_i rho_q(y_i - <x_i, w> - b) + alpha ||w||_1`` with the pinball loss
    ``rho_q(r) = r (q - 1[r < 0])`` (Koenker & Bassett 1978). At ``epsilon=numpy.inf`` this
    estimator returns the exact minimizer of that objective on the rows clipped to
    ``data_norm`` (a linear program, HiGHS; the same ``alpha``, the intercept
    unpenalized). The private fit minimizes the same objective with rho_q replaced by its
    Moreau envelope of width ``s = smoothing_`` (``min_v rho_q(v) + (r - v)^2 / (2 s)``:
    quadratic for residuals in ``[-(1 - q) s, q s]``, the pinball loss shifted down by at
    most ``s max(q, 1 - q)^2 / 2`` beyond), which is ``1 / s``-smooth as noisy gradient
    descent needs; ``alpha`` is honoured by the proximal map of the l1 penalty after
    each noisy step (post-processing). The pinball loss and its envelope are Lipschitz in
    the residual (``|rho_q'| <= max(q, 1 - q)``), so every record's gradient is bounded by
    its row norm whatever its target: no public range of y is needed and targets are never
    clipped (``docs/privacy.md``).

    Parameters
    ----------
    quantile : float, default=0.5
        The quantile q in (0, 1) the model predicts (0.5: median regression).
    alpha : float, default=0.0
        l1 penalty (>= 0) on ``w``, in scikit-learn's QuantileRegressor units (the same
        objective). scikit-learn's default 1.0 sets every coefficient of standardized
        features to zero at q = 0.5 (its subgradient bound ``max(q, 1 - q) mean|x_j|`` is
        below 1), so the default here is the unpenalized fit.
    epsilon : float, default=1.0
        Privacy loss bound in nats, in (0, 1e100] or ``numpy.inf`` (the exact, non-private
        minimizer of scikit-learn's objective).
    delta : float, default=1e-5
        Probability in [0, 1) that the epsilon bound fails; much smaller than 1/n_samples.
    smoothing : float or "auto", default="auto"
        Width s (> 0) of the smoothed pinball loss of the private fit, in units of y. A
        float is a public choice (a wrong value costs accuracy, never privacy) and the
        targets are used as they are. ``"auto"``: the private median ``m`` and scale of y
        of ``bounds_y="auto"`` (``dp_sklearn.linear_model._auto.private_bounds_y``, with
        the share of epsilon and the mode of ``bounds_y_plan``, functions of ``epsilon``
        and ``n_samples``: side quantiles, or the median absolute deviation); the targets
        are centred on ``m`` (a release, not a bound: nothing is clipped) and ``s`` is the
        released range's half-width in standard deviations (``1.4826 * MAD`` in the MAD
        mode). When ``epsilon * n_samples`` is too small for a scale (the ``"center"``
        mode: the two medians only) the fit warns and predicts the released median.
        Released as ``center_`` and ``smoothing_``.
    data_norm : float, "auto" or None, default=None
        Public bound on the l2 norm of a row of X, in the units of X, in
        [1e-100, 1e100]; rows beyond it are clipped. ``None`` uses sqrt(n_features)
        (standardized features). ``"auto"``: a private median of the row norms (10% of
        epsilon), released as ``data_norm_``.
    solver : str, default="noisy_gd"
        A registered solver that applies an l1 penalty (``"l1_penalty"``) and whose
        requirements the smoothed pinball loss meets: ``"noisy_gd"`` (proximal noisy GD,
        BST 2014 Algorithm 1). Other solvers are refused: none of them can apply the penalty.
    fit_intercept : bool, default=True
        Whether to fit an intercept: a constant column of the normalized design, counted in
        the row bound (``docs/privacy.md``, P3). Regressors centre the targets on a private
        location of y first; the l0 models never threshold the intercept and it does not
        count toward ``n_nonzero_coefs``.
    max_iter : int, default=None
        Iterations of iterative solvers; ``None`` uses a data-independent default.
    tol : float, default=1e-8
        Accepted for a uniform interface; the ``epsilon=inf`` fit is a linear program solved
        to HiGHS's own tolerances.
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
        Released intercept (the centre ``center_`` when ``fit_intercept=False``).
    data_norm_ : float
        The row bound used: ``data_norm`` (public) or its private estimate.
    smoothing_ : float
        The smoothing width used, in units of y: ``smoothing`` or its private estimate.
    center_ : float
        The value subtracted from y: 0.0, or the private median with ``"auto"``.
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
        that cannot apply the l1 penalty or whose requirements the smoothed pinball loss
        does not meet, delta = 0, NaN or inf in X or y; raised before any budget is reserved.
    BudgetExceededError
        From ``fit``: the planned event would exceed ``ledger``'s cap (nothing is drawn).
    RuntimeError
        From ``fit`` at ``epsilon=inf`` only: the linear program did not converge.

    Warns
    -----
    UserWarning
        From ``fit`` with ``smoothing="auto"``, when ``epsilon * n_samples`` (public) is too
        small for the plan of ``bounds_y="auto"`` to release a scale of y: the fit then
        predicts the released median.

    See Also
    --------
    DPHuberRegressor : Private robust regression with the Huber loss.
    DPLinearRegression : Private ordinary least squares.

    References
    ----------
    R. Koenker and G. Bassett, "Regression quantiles", Econometrica 1978.
    R. Bassily, A. Smith and A. Thakurta, "Private empirical risk minimization:
    efficient algorithms and tight error bounds", FOCS 2014, Algorithm 1 (Lipschitz
    losses: the sensitivity of a clipped gradient needs no bound on y).
    Y. Nesterov, "Smooth minimization of non-smooth functions", Math. Program. 2005, and
    A. Beck, "First-Order Methods in Optimization", SIAM 2017, Thm 6.60 (the Moreau
    envelope of width s is 1/s-smooth and within s L^2 / 2 of the function).

    Examples
    --------
    Scale the raw features privately too (see ``docs/privacy.md``):

    >>> from sklearn.datasets import load_diabetes
    >>> from dp_sklearn import DPQuantileRegressor, DPStandardScaler, make_private_pipeline
    >>> X, y = load_diabetes(return_X_y=True, scaled=False)
    >>> model = make_private_pipeline(DPStandardScaler(random_state=0),
    ...                               DPQuantileRegressor(quantile=0.5, random_state=0),
    ...                               epsilon=1.0).fit(X, y)
    >>> model[-1].coef_.shape
    (10,)
    """

    _y_validation = {"y_numeric": True, "multi_output": False}
    _loss_names = ("pinball",)
    _penalty_description = "l1 penalty (proximal)"

    _parameter_constraints = {
        **PRIVACY_CONSTRAINTS, **BATCH_SIZE,
        "quantile": [Interval(Real, 0, 1, closed="neither")],
        "alpha": [Interval(Real, 0, np.inf, closed="left")],
        "smoothing": [Interval(Real, 0, np.inf, closed="neither"), StrOptions({"auto"})],
        "solver": [SolverOptions(("l1_penalty",), _loss_names, exact=True)],
    }

    def __init__(self, quantile=0.5, *, alpha=0.0, epsilon=1.0, delta=1e-5, smoothing="auto", data_norm=None,
                 solver="noisy_gd", fit_intercept=True, max_iter=None, tol=1e-8, clip_norm=None, accounting="tight",
                 batch_size=None, max_sample_weight=1.0, ledger=None, random_state=None, verbose=0, report_clipping=False):
        self.quantile = quantile
        self.alpha = alpha
        self.epsilon = epsilon
        self.delta = delta
        self.smoothing = smoothing
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
        # the strength alpha / data_norm_ is set in _transform_targets, once data_norm_ is released
        self._penalty = L1Penalty(0.0, n_free=int(bool(self.fit_intercept)))
        return self._penalty

    def _check_model_params(self):
        pass

    def _encode_targets(self, y):
        self._n_targets = int(y.shape[0])  # public: sets the share of the "auto" smoothing
        if self._center_plan():
            warnings.warn(f"smoothing='auto' with epsilon * n_samples = {self.epsilon * self._n_targets:.4g}: too "
                          "little to locate y and its scale, so the model predicts a private median of y. Pass a "
                          "public smoothing, or more data or epsilon.", UserWarning, stacklevel=4)
        return y, PinballLoss(self.quantile)

    def _center_plan(self):
        """Whether smoothing="auto" releases the two medians only (public: epsilon and n_samples)."""
        return isinstance(self.smoothing, str) and bounds_y_plan(self.epsilon, self._n_targets).mode == "center"

    def _auto_share(self, name):
        if name == "bounds_y":
            return bounds_y_plan(self.epsilon, self._n_targets).share
        return super()._auto_share(name)

    def _auto_estimates(self):
        # "auto": the private median and MAD of bounds_y="auto" (accounted in _auto_events)
        return ("bounds_y",) * isinstance(self.smoothing, str) + super()._auto_estimates()

    def _transform_targets(self, y, rng):
        if isinstance(self.smoothing, str):
            low, high = self.__dict__.pop("bounds_y_")  # about m -+ COVER_Z scales, released by _draw_auto
            center = self._y_center  # the released median
            floor = max(1e-12, 1e-9 * abs(center))  # a range collapsed on the median (tiny epsilon n)
            s = max(AUTO_SMOOTHING * (high - low) / (2.0 * COVER_Z), floor)
        else:
            center, s = 0.0, float(self.smoothing)
        self.center_, self.smoothing_ = float(center), float(s)
        # (1/n) sum rho(y - Xw - b) + alpha ||w||_1 = s [(1/n) sum rho(y_t - X_t theta) + (alpha / B) ||theta_w||_1]
        # with X_t = X / B, y_t = (y - center) / s, w = s theta_w / B (rho is positively homogeneous)
        self._penalty.strength = float(self.alpha) / self.data_norm_
        return (y - center) / s, (center, s)

    def _run(self, spec, problem, constraint, plan, kwargs, rng):
        if plan is None:  # epsilon = inf: the exact minimizer of scikit-learn's (unsmoothed) objective
            theta = exact_quantile_fit(problem.X, problem.y, float(self.quantile), constraint.strength,
                                       constraint.n_free)
            return theta, 1
        return super()._run(spec, problem, constraint, plan, kwargs, rng)

    def _set_coef(self, coef, intercept, target_map):
        center, s = target_map
        if self._center_plan():  # no scale was released: predict the released median (post-processing)
            self.coef_, self.intercept_ = np.zeros_like(coef[:, 0]), float(center)
            return
        self.coef_ = s * coef[:, 0]
        self.intercept_ = float(center + s * intercept[0]) if self.fit_intercept else float(center)

    @blockwise_on_dask
    def predict(self, X):
        """Predict the conditional quantile with the released linear model.

        Parameters
        ----------
        X : {array-like, sparse matrix, dask array or dask DataFrame} of shape (n_samples, n_features)
            Samples.

        Returns
        -------
        y_pred : ndarray or dask.array.Array of shape (n_samples,)
            Predictions, in the units of y: ``clip(x) @ coef_ + intercept_`` with the
            row ``x`` clipped to ``data_norm_`` as in training.
        """
        return self._linear_scores(X)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.regressor_tags.poor_score = True
        return tags
