"""DPElasticNet: private least squares with the elastic-net penalty (l1 and l2), proximal noisy GD."""

from __future__ import annotations

from numbers import Real

import numpy as np

from .._constraints import Interval
from .._sets import L1Penalty
from ._base import BATCH_SIZE, SolverOptions, solvers_for
from ._regressor import REGRESSION_CONSTRAINTS, _DPRegressorBase

__all__ = ["DPElasticNet"]


class DPElasticNet(_DPRegressorBase):
    """Differentially private elastic net: least squares with l1 and l2 penalties.

    Minimizes scikit-learn's :class:`~sklearn.linear_model.ElasticNet` objective
    ``(1 / (2 n)) ||y - X w - b||^2 + alpha * l1_ratio * ||w||_1
    + 0.5 * alpha * (1 - l1_ratio) * ||w||^2`` on clipped data. The default (and, today,
    only) solver is proximal noisy gradient descent: each step releases a noisy clipped
    gradient of the smooth part (loss and l2 term; BST 2014 Algorithm 1, calibrated as
    ``"noisy_gd"``) and applies the l1 penalty's proximal map (soft thresholding), which
    is post-processing. Both ``alpha`` and ``l1_ratio`` are honoured by every solver this
    estimator offers: a solver that cannot apply the penalty is not offered. In
    normalized units (X / data_norm with a constant intercept column, y mapped from
    ``bounds_y`` to [-1, 1] around a private mean) the l2 term also applies to the
    intercept, the l1 term does not. The privacy contract is described in
    ``docs/privacy.md``.

    Parameters
    ----------
    alpha : float, default=1.0
        Penalty strength (>= 0), in scikit-learn's ElasticNet units.
    l1_ratio : float, default=0.5
        Mix in [0, 1]: 1 is the Lasso penalty, 0 the ridge penalty.
    epsilon : float, default=1.0
        Privacy loss bound in nats, in (0, 1e100] or ``numpy.inf`` (the non-private
        minimizer of the same objective, by accelerated proximal gradient).
    delta : float, default=1e-5
        Probability in [0, 1) that the epsilon bound fails; much smaller than 1/n_samples.
    data_norm : float, "auto" or None, default=None
        Public bound on the l2 norm of a row of X, in the units of X, in
        [1e-100, 1e100]; rows beyond it are clipped. ``None`` uses sqrt(n_features).
        ``"auto"``: a private median of the row norms (10% of epsilon); both penalties
        are then measured at the reference norm sqrt(n_features).
    bounds_y : tuple of float (low, high), "auto" or None, default="auto"
        Public range of the target (see :class:`DPRidge`); the l1 strength in
        normalized units is ``alpha * l1_ratio / (half-width * data_norm)``.
    solver : str, default="noisy_gd"
        A registered solver that applies an l1 penalty (``"l1_penalty"``):
        ``"noisy_gd"`` (proximal steps).
    fit_intercept : bool, default=True
        Whether to fit an intercept: a constant column of the normalized design, counted in
        the row bound (``docs/privacy.md``, P3). Regressors centre the targets on a private
        location of y first; the l0 models never threshold the intercept and it does not
        count toward ``n_nonzero_coefs``.
    max_iter : int, default=None
        Iterations; ``None`` uses the data-independent default of noisy GD.
    tol : float, default=1e-8
        Stopping tolerance of the non-private solver (``epsilon=inf``).
    clip_norm : float, default=None
        Per-example gradient clipping norm (normalized units).
    accounting : {"tight", "paper"}, default="tight"
        Calibrate with the accountant or with the paper's formula.
    batch_size : int or "full", default=None
        Poisson-sampled mini-batches (see :class:`DPRidge`).
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
        Release ``clipped_fraction_`` for 5% of ``epsilon`` (see :class:`DPRidge`).

    Attributes
    ----------
    coef_ : ndarray of shape (n_features,)
        Released coefficients, in the units of X and y.
    intercept_ : float
        Released intercept (0.0 when ``fit_intercept=False``).
    bounds_y_ : tuple of float
        The target range used.
    data_norm_ : float
        The row bound used.
    clipped_fraction_ : dict of str to float
        Only with ``report_clipping=True`` (see :class:`DPRidge`).
    dp_event_ : dp_accounting.DpEvent
        What the fit released.
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
        that cannot apply the l1 penalty, NaN or inf in X or y; before any reservation.
    BudgetExceededError
        From ``fit``: the planned event would exceed ``ledger``'s cap (nothing is drawn).

    See Also
    --------
    DPLasso : Least squares over an l1 ball (the constrained form).
    DPRidge : Least squares with an l2 penalty.

    References
    ----------
    R. Bassily, A. Smith and A. Thakurta, "Private empirical risk minimization:
    efficient algorithms and tight error bounds", FOCS 2014, Algorithm 1 (noisy
    gradient steps; the proximal map is post-processing).
    H. Zou and T. Hastie, "Regularization and variable selection via the elastic net",
    JRSS B 2005.

    Examples
    --------
    Scale the raw features privately too (see ``docs/privacy.md``):

    >>> from sklearn.datasets import load_diabetes
    >>> from dp_sklearn import DPElasticNet, DPStandardScaler, make_private_pipeline
    >>> X, y = load_diabetes(return_X_y=True, scaled=False)
    >>> model = make_private_pipeline(DPStandardScaler(random_state=0),
    ...                               DPElasticNet(alpha=0.1, bounds_y=(25, 346), random_state=0),
    ...                               epsilon=1.0).fit(X, y)
    >>> model[-1].coef_.shape
    (10,)
    """

    _parameter_constraints = {
        **REGRESSION_CONSTRAINTS, **BATCH_SIZE,
        "alpha": [Interval(Real, 0, np.inf, closed="left")],
        "l1_ratio": [Interval(Real, 0, 1, closed="both")],
        "solver": [SolverOptions(("l1_penalty",), ("squared",), exact=True)],
    }

    def __init__(self, alpha=1.0, *, l1_ratio=0.5, epsilon=1.0, delta=1e-5, data_norm=None, bounds_y="auto",
                 solver="noisy_gd", fit_intercept=True, max_iter=None, tol=1e-8, clip_norm=None, accounting="tight",
                 batch_size=None, max_sample_weight=1.0, ledger=None, random_state=None, verbose=0, report_clipping=False):
        self.alpha = alpha
        self.l1_ratio = l1_ratio
        self.epsilon = epsilon
        self.delta = delta
        self.data_norm = data_norm
        self.bounds_y = bounds_y
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
        # the strength is set in _transform_targets, once the targets' public scale is known
        self._penalty = L1Penalty(0.0, n_free=int(bool(self.fit_intercept)))
        return self._penalty

    def _l2_reg(self, n_samples, data_norm):
        return self.alpha * (1.0 - self.l1_ratio) / data_norm**2

    def _transform_targets(self, y, rng):
        y_t, (mid, half) = super()._transform_targets(y, rng)
        B = self._data_norm_value(self.n_features_in_)
        self._penalty.strength = self.alpha * self.l1_ratio / (half * B)
        return y_t, (mid, half)
