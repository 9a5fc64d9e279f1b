"""DPRidge and DPLasso: private least squares with an l2 penalty or an l1-ball constraint."""

from __future__ import annotations

from numbers import Real

import numpy as np

from .._constraints import Interval
from .._sets import L1Ball
from ._base import BATCH_SIZE, DATA_NORM_ORD, SolverOptions
from ._regressor import REGRESSION_CONSTRAINTS, _DPRegressorBase

__all__ = ["DPRidge", "DPLasso"]


class DPRidge(_DPRegressorBase):
    """Differentially private ridge regression.

    Minimizes the ridge objective ``||y - X w - b||^2 + alpha ||w||^2`` of
    :class:`sklearn.linear_model.Ridge` on clipped data, with a private solver. In
    the normalized units the solvers work in (X / data_norm with a constant
    intercept column, y mapped to [-1, 1]) the intercept is penalized like the other
    coefficients, so that every mechanism's sensitivity is bounded. The privacy
    contract (neighbouring relation, what is public, what is released) is described
    in ``docs/privacy.md``.

    Parameters
    ----------
    alpha : float, default=1.0
        l2 penalty, in scikit-learn's Ridge units (>= 0). Solvers may add the extra
        l2 regularization their privacy proof calls for, as a data-independent
        function of (n_samples, n_features, epsilon, delta).
    epsilon : float, default=1.0
        Privacy loss bound in nats, in (0, 1e100] or ``numpy.inf`` (the non-private
        solution of the same objective).
    delta : float, default=1e-5
        Probability in [0, 1) that the epsilon bound fails; should be much smaller
        than 1/n_samples (a warning is raised otherwise). ``delta=0`` requests pure DP
        and is accepted only by solvers with a pure guarantee.
    data_norm : float, "auto" or None, default=None
        Public bound on the l2 norm of a row of X, in the units of X, in
        [1e-100, 1e100]. Rows beyond it are clipped, silently (``report_clipping``
        releases a private fraction). ``None``
        assumes standardized features and uses sqrt(n_features), or 1 for sparse X
        (normalized rows, e.g. of ``TfidfVectorizer``; whatever n_features). Never
        derived from the data.
        ``"auto"``: a private median of the row norms
        (exponential mechanism, 10% of epsilon; about half of the rows are clipped),
        released as ``data_norm_``; the l2 penalty is then measured at the reference
        norm (the value ``None`` gives).
    bounds_y : tuple of float (low, high), "auto" or None, default="auto"
        Public range of the target, finite with low < high; targets outside are
        clipped and predictions are clipped to it. ``"auto"``: a private range from
        quantiles of y (10% to 50% of epsilon, set by ``epsilon * n_samples``; with an
        intercept up to 80% below about 430, the predictions then shrunk toward the
        private median by ``dp_sklearn.linear_model._auto.shrink_factor``; below about
        270 the model predicts a private median, with a warning), released as
        ``bounds_y_`` (user guide: choosing parameters). ``None``: (-1, 1), with a warning.
    solver : str, default="auto"
        ``"auto"``: ``"noisy_newton"`` (a few passes: one noisy Gram matrix, then 5
        preconditioned noisy gradient steps) where its public test
        ``dp_sklearn.solvers._noisy_newton.newton_applies`` holds (at most 2000
        features and a Gram noise below a quarter of the mean eigenvalue of X^T X for
        rows on the bound: a function of n, n_features, epsilon and delta only), else
        ``"noisy_agd"`` (20 to 100 passes: accelerated noisy gradient steps with the public
        step, ``dp_sklearn.solvers._noisy_agd.agd_applies``; evidence in
        ``benchmarks/tabular/README.md``), or ``"noisy_gd"`` with ``batch_size``,
        ``accounting="paper"`` or ``delta=0``. Or a private mechanism: one of the registered solvers for the
        squared loss with an l2 penalty (``"noisy_gd"``, ``"noisy_newton"``, ``"noisy_agd"``, ``"output_perturbation"``,
        ``"objective_perturbation"``, ``"mirror_descent"``, ``"frank_wolfe_gaussian"``,
        ``"ssp"`` (sufficient-statistics perturbation, Wang 2018, AdaSSP) and any solver
        registered later; see the README's solver table). Solvers that
        need a bounded set work over the l2 ball of radius 1 / ||x_t|| bound, on which
        every in-bound prediction stays within ``bounds_y``. ``"exponential_sampling"``
        and ``"localization"`` (BST 2014, Algorithms 2 and 4: pure epsilon-DP with exact
        samplers) fit at most 2 coefficients (one feature with the intercept) and raise a
        ``ValueError`` beyond.
    fit_intercept : bool, default=True
        Whether to fit an intercept: a constant column of the normalized design, counted in
        the row bound (``docs/privacy.md``, P3). Regressors centre the targets on a private
        location of y first; the l0 models never threshold the intercept and it does not
        count toward ``n_nonzero_coefs``.
    max_iter : int, default=None
        Iterations of iterative solvers; ``None`` uses a data-independent default.
    tol : float, default=1e-8
        Certified gradient-norm tolerance of exact-minimizer solvers; the inexactness
        is paid for with extra noise.
    clip_norm : float, default=None
        Per-example gradient clipping norm of the gradient solvers (normalized
        units); ``None`` uses half the row bound.
    accounting : {"tight", "paper"}, default="tight"
        Calibrate iterative solvers with the accountant or with the paper's formula.
    batch_size : int or "full", default=None
        For solvers that take it (``"noisy_gd"``, ``"mirror_descent"``,
        ``"frank_wolfe_gaussian"``): Poisson-sampled mini-batches of this expected size,
        accounted under replace-one neighbours with the PLD accountant. ``None``: full
        batches, except at large n (n_samples >= 40,000 for noisy_gd, 100,000 for the
        others; ``accounting="tight"``) where the default plan uses Poisson samples at a
        rate chosen from public values
        (``dp_sklearn.solvers._common.default_sampling_rate``); ``"full"`` (or
        ``n_samples``) forces full batches at any n. ``accounting="paper"`` with sampled
        batches: noisy_gd only (the other papers calibrate full batches).
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
        Release a private estimate of how many records were clipped, as
        ``clipped_fraction_``: for ``data_norm`` and ``bounds_y``, the fraction of
        rows with norm above ``data_norm_`` and of targets outside ``bounds_y_``,
        each a count plus Laplace noise over n (Andrew et al. 2021, adaptive
        clipping; replace-one sensitivity 1 per count). It spends 5% of
        ``epsilon`` (``dp_sklearn._clipping.CLIPPING_SHARE``), composed into
        ``dp_event_``; the model gets the rest. Nothing about clipping is
        reported otherwise: no fit emits a warning that depends on the data
        (``docs/privacy.md``). Not supported for dask input.

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
        Only with ``report_clipping=True``: ``{"data_norm": ..., "bounds_y": ...}``,
        the private fractions of rows and targets beyond the bounds, in [0, 1].
    dp_event_ : dp_accounting.DpEvent
        What the fit released, for composition with other releases (with
        ``fit_intercept``, composed with the Laplace release of the mean of y).
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
        with a solver that needs delta > 0, NaN or inf in X or y, inconsistent lengths.

    See Also
    --------
    DPLasso : Private least squares over an l1 ball.

    References
    ----------
    R. Bassily, A. Smith and A. Thakurta, "Private empirical risk minimization:
    efficient algorithms and tight error bounds", FOCS 2014, Algorithms 1 and 3.
    A. G. Thakurta, PhD dissertation, Penn State, 2013, Algorithm 3.1.
    K. Chaudhuri, C. Monteleoni and A. Sarwate, "Differentially private empirical
    risk minimization", JMLR 2011.

    Examples
    --------
    Scale the raw features privately too (a non-private scaler fitted on the
    training data would release its statistics; see ``docs/privacy.md``):

    >>> from sklearn.datasets import load_diabetes
    >>> from dp_sklearn import DPRidge, DPStandardScaler
    >>> from dp_sklearn.pipeline import make_private_pipeline
    >>> X, y = load_diabetes(return_X_y=True, scaled=False)
    >>> model = make_private_pipeline(DPStandardScaler(random_state=0),
    ...                               DPRidge(bounds_y=(25, 346), random_state=0),
    ...                               epsilon=1.0).fit(X, y)
    >>> model[-1].coef_.shape
    (10,)
    """

    _parameter_constraints = {
        **REGRESSION_CONSTRAINTS, **BATCH_SIZE,
        "alpha": [Interval(Real, 0, np.inf, closed="left")],
        "solver": [SolverOptions(("none",), ("squared",), extra=("auto",))],
    }

    def __init__(self, alpha=1.0, *, epsilon=1.0, delta=1e-5, data_norm=None, bounds_y="auto",
                 solver="auto", fit_intercept=True, max_iter=None, tol=1e-8,
                 clip_norm=None, accounting="tight", batch_size=None, max_sample_weight=1.0, ledger=None, random_state=None,
                 verbose=0, report_clipping=False):
        self.alpha = alpha
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
        return self.alpha / (n_samples * data_norm**2)

    def _resolved_solver(self, n_samples=None):
        if self.solver == "auto":
            if self._few_pass_default(n_samples):
                return "noisy_newton"
            return "noisy_agd" if self._accelerated_default(n_samples) else "noisy_gd"
        return self.solver


class DPLasso(_DPRegressorBase):
    """Differentially private Lasso: least squares over an l1 ball.

    Minimizes ``(1/2n) ||y_t - X_t theta||^2`` subject to ``||theta||_1 <= radius`` in
    normalized units (X_t = clip(X) / data_norm with a constant intercept column,
    y_t = y mapped from ``bounds_y`` to [-1, 1]), the constrained form of
    :class:`sklearn.linear_model.Lasso` studied by Talwar, Thakurta & Zhang (2015).
    The privacy contract is described in ``docs/privacy.md``.

    Parameters
    ----------
    radius : float, default=1.0
        Radius of the l1 ball in normalized units (> 0); then ``|<x_t, theta>|`` <= radius.
    epsilon : float, default=1.0
        Privacy loss bound in nats, in (0, 1e100] or ``numpy.inf`` (the non-private
        solution of the same objective).
    delta : float, default=1e-5
        Probability in [0, 1) that the epsilon bound fails. ``delta=0`` (pure DP) is
        accepted by ``"frank_wolfe"`` only.
    data_norm : float, "auto" or None, default=None
        Public bound on the l2 norm of a row of X (or on every ``|x_j|`` when
        ``data_norm_ord=numpy.inf``), in the units of X, in [1e-100, 1e100]. ``None``
        uses sqrt(n_features) (l2) or 3.0 (l_inf), and 1 for sparse X (normalized
        rows, e.g. of ``TfidfVectorizer``; whatever n_features). Never derived from
        the data.
        ``"auto"``: a private median of the row norms
        (exponential mechanism, 10% of epsilon; about half of the rows are clipped),
        released as ``data_norm_``; the l2 penalty is then measured at the reference
        norm (the value ``None`` gives).
    data_norm_ord : {2, numpy.inf}, default=2
        Norm bounded by ``data_norm``: the row l2 norm, or every ``|x_j|`` (l_inf, the
        setting of TTZ Theorem 2.5).
    bounds_y : tuple of float (low, high), "auto" or None, default="auto"
        Public range of the target, finite with low < high; targets outside are
        clipped and predictions are clipped to it. ``"auto"``: a private range from
        quantiles of y (10% to 50% of epsilon, set by ``epsilon * n_samples``; with an
        intercept up to 80% below about 430, the predictions then shrunk toward the
        private median by ``dp_sklearn.linear_model._auto.shrink_factor``; below about
        270 the model predicts a private median, with a warning), released as
        ``bounds_y_`` (user guide: choosing parameters). ``None``: (-1, 1), with a warning.
    solver : str, default="frank_wolfe"
        One of the registered solvers for the l1 ball: ``"frank_wolfe"`` (TTZ
        Algorithm 2), ``"noisy_gd"`` (BST Algorithm 1), ``"mirror_descent"`` (TTZ full
        version, Algorithm 1).
    fit_intercept : bool, default=True
        Whether to fit an intercept: a constant column of the normalized design, counted in
        the row bound (``docs/privacy.md``, P3). Regressors centre the targets on a private
        location of y first; the l0 models never threshold the intercept and it does not
        count toward ``n_nonzero_coefs``.
    max_iter : int, default=None
        ``None``: T from TTZ Theorem 2.5 (frank_wolfe) or the solver's default.
    tol : float, default=1e-8
        Tolerance of the exact solver used at ``epsilon=inf``.
    clip_norm : float, default=None
        Per-example gradient clipping norm of the gradient solvers (normalized units).
    accounting : {"tight", "paper"}, default="tight"
        Calibrate with the accountant or with the paper's formula.
    batch_size : int or "full", default=None
        For solvers that take it (``"noisy_gd"``, ``"mirror_descent"``): Poisson-sampled
        mini-batches of this expected size. ``None``: full batches, except at large n
        (n_samples >= 40,000 for noisy_gd, 100,000 for the others; ``accounting="tight"``)
        where the default plan uses Poisson samples at a rate chosen from public values
        (``dp_sklearn.solvers._common.default_sampling_rate``); ``"full"`` (or
        ``n_samples``) forces full batches at any n. ``accounting="paper"`` with sampled
        batches: noisy_gd only (the other papers calibrate full batches).
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
        Release ``clipped_fraction_``, private fractions of the rows beyond
        ``data_norm_`` and the targets outside ``bounds_y_``, for 5% of
        ``epsilon`` (see :class:`DPRidge`).

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
        Only with ``report_clipping=True``: ``{"data_norm": ..., "bounds_y": ...}``,
        the private fractions of rows and targets beyond the bounds, in [0, 1].
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
        As :class:`DPRidge`, and when ``radius <= 0``.

    See Also
    --------
    DPRidge : Private ridge regression.

    References
    ----------
    K. Talwar, A. Thakurta and L. Zhang, "Nearly-optimal private LASSO", NeurIPS 2015,
    Algorithm 2, Theorem 2.5.

    Examples
    --------
    Scale the raw features privately too (see ``docs/privacy.md``):

    >>> from sklearn.datasets import load_diabetes
    >>> from dp_sklearn import DPLasso, DPStandardScaler
    >>> from dp_sklearn.pipeline import make_private_pipeline
    >>> X, y = load_diabetes(return_X_y=True, scaled=False)
    >>> model = make_private_pipeline(DPStandardScaler(random_state=0),
    ...                               DPLasso(radius=1.0, bounds_y=(25, 346), random_state=0),
    ...                               epsilon=1.0).fit(X, y)
    >>> model[-1].coef_.shape
    (10,)
    >>> model[-1].solver_
    'frank_wolfe'
    """

    _parameter_constraints = {
        **REGRESSION_CONSTRAINTS, **DATA_NORM_ORD, **BATCH_SIZE,
        "radius": [Interval(Real, 0, np.inf, closed="neither")],
        "solver": [SolverOptions(("l1",), ("squared",))],
    }

    def __init__(self, radius=1.0, *, epsilon=1.0, delta=1e-5, data_norm=None, data_norm_ord=2,
                 bounds_y="auto", solver="frank_wolfe", fit_intercept=True, max_iter=None, tol=1e-8,
                 clip_norm=None, accounting="tight", batch_size=None, max_sample_weight=1.0, ledger=None, random_state=None,
                 verbose=0, report_clipping=False):
        self.radius = radius
        self.epsilon = epsilon
        self.delta = delta
        self.data_norm = data_norm
        self.data_norm_ord = data_norm_ord
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
        return "l1"

    def _feasible_set(self):
        return L1Ball(self.radius)
