"""DPLinearRegression: private ordinary least squares (no penalty), AdaSSP by default."""

from __future__ import annotations

from ._base import BATCH_SIZE, SolverOptions
from ._regressor import REGRESSION_CONSTRAINTS
from ._ridge import DPRidge

__all__ = ["DPLinearRegression"]


class DPLinearRegression(DPRidge):
    """Differentially private ordinary least squares.

    Minimizes ``||y - X w - b||^2`` (no penalty), the objective of
    :class:`sklearn.linear_model.LinearRegression`, on clipped data with a private
    solver. The default solver ``"ssp"`` is AdaSSP (Wang 2018, Algorithm 2): it releases
    noisy sufficient statistics X^T X and X^T y and a noisy smallest eigenvalue, and adds
    only the ridge that the noise calls for, chosen from the released eigenvalue. In
    normalized units (X / data_norm with a constant intercept column, y mapped from
    ``bounds_y`` to [-1, 1]) solvers that need strong convexity (output and objective
    perturbation) add their own data-independent l2 term. The privacy contract is
    described in ``docs/privacy.md``.

    Parameters
    ----------
    epsilon : float, default=1.0
        Privacy loss bound in nats, in (0, 1e100] or ``numpy.inf`` (the non-private
        least-squares solution, :class:`~sklearn.linear_model.LinearRegression`'s on
        unclipped data).
    delta : float, default=1e-5
        Probability in [0, 1) that the epsilon bound fails; should be much smaller
        than 1/n_samples. ``delta=0`` requests pure DP and is accepted only by solvers
        with a pure guarantee (not ``"ssp"``).
    data_norm : float, "auto" or None, default=None
        Public bound on the l2 norm of a row of X, in the units of X, in
        [1e-100, 1e100]; rows beyond it are clipped. ``None`` uses sqrt(n_features)
        (standardized features). ``"auto"``: a private median of the row norms (10% of
        epsilon), released as ``data_norm_``.
    bounds_y : tuple of float (low, high), "auto" or None, default="auto"
        Public range of the target, finite with low < high; targets outside are
        clipped and predictions are clipped to it. ``"auto"``: a private range from
        quantiles of y, as for :class:`DPRidge` (its share of epsilon, the predictions
        shrunk toward the private median at small ``epsilon * n_samples``), released
        as ``bounds_y_``. ``None``: (-1, 1) with a warning.
    solver : str, default="ssp"
        One of the registered solvers for the squared loss without a constraint (as
        :class:`DPRidge`); ``"ssp"`` is AdaSSP.
    fit_intercept : bool, default=True
        Whether to fit an intercept: a constant column of the normalized design, counted in
        the row bound (``docs/privacy.md``, P3). Regressors centre the targets on a private
        location of y first; the l0 models never threshold the intercept and it does not
        count toward ``n_nonzero_coefs``.
    max_iter : int, default=None
        Iterations of iterative solvers; ``None`` uses a data-independent default.
    tol : float, default=1e-8
        Certified gradient-norm tolerance of exact-minimizer solvers.
    clip_norm : float, default=None
        Per-example gradient clipping norm of the gradient solvers (normalized units).
    accounting : {"tight", "paper"}, default="tight"
        Calibrate iterative solvers with the accountant or with the paper's formula.
    batch_size : int or "full", default=None
        Poisson-sampled mini-batches for the solvers that take it (see :class:`DPRidge`).
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
        The target range used: ``bounds_y`` (public) or its private estimate.
    data_norm_ : float
        The row bound used: ``data_norm`` (public) or its private estimate.
    clipped_fraction_ : dict of str to float
        Only with ``report_clipping=True`` (see :class:`DPRidge`).
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
        From ``fit``: a hyperparameter out of range (named in the message), delta = 0
        with a solver that needs delta > 0, NaN or inf in X or y, inconsistent lengths;
        raised before any budget is reserved.
    BudgetExceededError
        From ``fit``: the planned event would exceed ``ledger``'s cap (nothing is drawn).

    See Also
    --------
    DPRidge : The same loss with an l2 penalty.

    References
    ----------
    Y.-X. Wang, "Revisiting differentially private linear regression: optimal and
    adaptive prediction & estimation in unbounded domain", UAI 2018, Algorithm 2
    (AdaSSP), Theorem 3.

    Examples
    --------
    Scale the raw features privately too (see ``docs/privacy.md``):

    >>> from sklearn.datasets import load_diabetes
    >>> from dp_sklearn import DPLinearRegression, DPStandardScaler, make_private_pipeline
    >>> X, y = load_diabetes(return_X_y=True, scaled=False)
    >>> model = make_private_pipeline(DPStandardScaler(random_state=0),
    ...                               DPLinearRegression(bounds_y=(25, 346), random_state=0),
    ...                               epsilon=1.0).fit(X, y)
    >>> model[-1].coef_.shape
    (10,)
    >>> model[-1].solver_
    'ssp'
    """

    _parameter_constraints = {
        **REGRESSION_CONSTRAINTS, **BATCH_SIZE,
        "solver": [SolverOptions(("none",), ("squared",))],
    }

    def __init__(self, *, epsilon=1.0, delta=1e-5, data_norm=None, bounds_y="auto", solver="ssp",
                 fit_intercept=True, max_iter=None, tol=1e-8, clip_norm=None, accounting="tight", batch_size=None,
                 max_sample_weight=1.0, ledger=None, random_state=None, verbose=0, report_clipping=False):
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

    def _l2_reg(self, n_samples, data_norm):
        return 0.0
