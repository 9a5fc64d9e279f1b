"""DPSparseLinearRegression and DPSparseLogisticRegression: l0-constrained private models.

Declarations only: the l0 feasible set, the loss, the default solver. The fit template
(:mod:`dp_sklearn.linear_model._base`) runs the same algorithm without noise at
``epsilon=inf`` for the l0 solvers (non-private IGHT, Jain, Tewari & Kar 2014; or
exact top-s selection and an exact restricted fit).
"""

from __future__ import annotations

from numbers import Integral, Real

import numpy as np

from .._constraints import Interval
from .._sets import L0Set
from ._base import DATA_NORM_ORD, SolverOptions
from ._logistic import CLASSIFIER_CONSTRAINTS, _DPClassifierBase
from ._regressor import REGRESSION_CONSTRAINTS, _DPRegressorBase

__all__ = ["DPSparseLinearRegression", "DPSparseLogisticRegression"]

SPARSE_CONSTRAINTS = {
    "n_nonzero_coefs": [Interval(Integral, 1, None, closed="left")],
    "step_size": [Interval(Real, 0, np.inf, closed="neither"), None],
}


class _SparseMixin:
    """The l0 constraint: ``n_nonzero_coefs`` features, the intercept never thresholded."""

    def _constraint_name(self):
        return "l0"

    def _feasible_set(self):
        # With more nonzeros than features, hard thresholding is the identity.
        return L0Set(int(self.n_nonzero_coefs), n_free=1 if self.fit_intercept else 0)


class DPSparseLinearRegression(_SparseMixin, _DPRegressorBase):
    """Differentially private sparse linear regression (l0 constraint).

    Minimizes the least-squares loss ``(1/2n) ||y_t - X_t theta||^2`` subject to
    ``||theta||_0 <= n_nonzero_coefs`` (Wang & Gu 2019, eq. 5.2) in normalized units
    (``X_t = clip(X) / data_norm`` with a constant intercept column, ``y_t`` = y mapped
    from ``bounds_y`` to [-1, 1]), with a private solver. An l0 constraint is a
    different model class from the l1/l2 models, as scikit-learn keeps
    :class:`~sklearn.linear_model.OrthogonalMatchingPursuit` separate from
    :class:`~sklearn.linear_model.Lasso`. The privacy contract is described in
    ``docs/privacy.md``.

    Parameters
    ----------
    n_nonzero_coefs : int, default=10
        Sparsity level s of the coefficient vector (the intercept does not count).
        Values above n_features are reduced to n_features.
    epsilon : float, default=1.0
        Privacy loss bound in nats, in (0, 1e100] or ``numpy.inf`` (the same algorithm
        without noise).
    delta : float, default=1e-5
        Probability in [0, 1) that the epsilon bound fails. ``delta=0`` (pure DP) is
        accepted by ``"two_stage"`` only.
    data_norm : float, "auto" or None, default=None
        Public bound on the l2 norm of a row of X (or on every ``|x_j|`` when
        ``data_norm_ord=numpy.inf``), in the units of X, in [1e-100, 1e100]. ``None``
        uses sqrt(n_features) (l2) or 3.0 (l_inf), and 1 for sparse X (normalized
        rows, e.g. of ``TfidfVectorizer``; whatever n_features).
        ``"auto"``: a private median of the row norms
        (exponential mechanism, 10% of epsilon; about half of the rows are clipped),
        released as ``data_norm_``; the l2 penalty is then measured at the reference
        norm (the value ``None`` gives).
    data_norm_ord : {2, numpy.inf}, default=2
        Norm bounded by ``data_norm``: the row l2 norm (Wang & Gu 2019) or every ``|x_j|``
        (Thakurta 2013, Ch. 6, under which the two-stage selector's scores have the
        smallest sensitivity).
    bounds_y : tuple of float (low, high), "auto" or None, default="auto"
        Public range of the target, finite with low < high; targets outside are
        clipped and predictions are clipped to it. ``"auto"``: a private range from
        quantiles of y (10% to 50% of epsilon, set by ``epsilon * n_samples``; with an
        intercept up to 80% below about 430, the predictions then shrunk toward the
        private median by ``dp_sklearn.linear_model._auto.shrink_factor``; below about
        270 the model predicts a private median, with a warning), released as
        ``bounds_y_`` (user guide: choosing parameters). ``None``: (-1, 1), with a warning.
    solver : {"ight", "two_stage"}, default="ight"
        ``"ight"``: DP iterative gradient hard thresholding (Wang & Gu, IJCAI 2019,
        Algorithm 1). ``"two_stage"``: private top-s support selection by the
        exponential mechanism, then objective perturbation on the selected columns
        (Thakurta 2013, Algorithm 6.2, with a practical selector); it also accepts
        ``delta=0``.
    fit_intercept : bool, default=True
        Whether to fit an intercept: a constant column of the normalized design, counted in
        the row bound (``docs/privacy.md``, P3). Regressors centre the targets on a private
        location of y first; the l0 models never threshold the intercept and it does not
        count toward ``n_nonzero_coefs``.
    max_iter : int, default=None
        Number of IGHT steps; ``None`` uses a data-independent default.
    tol : float, default=1e-8
        Certified gradient tolerance of the two-stage solver's exact second stage.
    step_size : float, default=None
        IGHT's feature step in units of 1 / (phi''_max a_f); ``None`` means 0.5, which
        assumes standardized, weakly correlated features. Privacy does not depend on it.
    clip_norm : float, default=None
        Per-example gradient l2 clip norm of IGHT, in normalized units; ``None`` uses
        half the row bound.
    accounting : {"tight", "paper"}, default="tight"
        ``"tight"``: exact Gaussian composition; ``"paper"``: Wang & Gu's zCDP
        calibration for IGHT, basic composition for the two-stage selector.
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
        Released coefficients, at most ``n_nonzero_coefs`` nonzeros.
    intercept_ : float
        Released intercept.
    bounds_y_ : tuple of float
        The target range used: ``bounds_y`` (public) or its private estimate.
    data_norm_ : float
        The row bound used: ``data_norm`` (public) or its private estimate.
    clipped_fraction_ : dict of str to float
        Only with ``report_clipping=True``: ``{"data_norm": ..., "bounds_y": ...}``,
        the private fractions of rows and targets beyond the bounds, in [0, 1].
    dp_event_ : dp_accounting.DpEvent
        What the fit released (with ``fit_intercept``, composed with the Laplace
        release of the private mean of y used to center the targets).
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
        From ``fit``: a hyperparameter out of range (named in the message).

    See Also
    --------
    DPLasso : The convex l1 relaxation.

    References
    ----------
    L. Wang and Q. Gu, "Differentially private iterative gradient hard thresholding
    for sparse learning", IJCAI 2019, Algorithm 1, Theorem 5.2.
    A. G. Thakurta, PhD dissertation, Penn State, 2013, Chapter 6, Algorithm 6.2.

    Examples
    --------
    Scale the raw features privately too (see ``docs/privacy.md``):

    >>> from sklearn.datasets import load_diabetes
    >>> from dp_sklearn import DPSparseLinearRegression, DPStandardScaler
    >>> from dp_sklearn.pipeline import make_private_pipeline
    >>> X, y = load_diabetes(return_X_y=True, scaled=False)
    >>> model = make_private_pipeline(DPStandardScaler(random_state=0),
    ...                               DPSparseLinearRegression(3, bounds_y=(25, 346), random_state=0),
    ...                               epsilon=1.0).fit(X, y)
    >>> int((model[-1].coef_ != 0).sum()) <= 3
    True
    """

    _parameter_constraints = {
        **REGRESSION_CONSTRAINTS, **DATA_NORM_ORD, **SPARSE_CONSTRAINTS,
        "solver": [SolverOptions(("l0",), ("squared",))],
    }

    def __init__(self, n_nonzero_coefs=10, *, epsilon=1.0, delta=1e-5, data_norm=None, data_norm_ord=2,
                 bounds_y="auto", solver="ight", fit_intercept=True, max_iter=None, tol=1e-8, step_size=None,
                 clip_norm=None, accounting="tight", max_sample_weight=1.0, ledger=None, random_state=None,
                 verbose=0, report_clipping=False):
        self.n_nonzero_coefs = n_nonzero_coefs
        self.epsilon = epsilon
        self.delta = delta
        self.data_norm = data_norm
        self.data_norm_ord = data_norm_ord
        self.bounds_y = bounds_y
        self.solver = solver
        self.fit_intercept = fit_intercept
        self.max_iter = max_iter
        self.tol = tol
        self.step_size = step_size
        self.clip_norm = clip_norm
        self.accounting = accounting
        self.max_sample_weight = max_sample_weight
        self.ledger = ledger
        self.random_state = random_state
        self.verbose = verbose
        self.report_clipping = report_clipping


class DPSparseLogisticRegression(_SparseMixin, _DPClassifierBase):
    """Differentially private sparse (l0-constrained) binary logistic regression.

    Minimizes the mean log-loss subject to ``||theta||_0 <= n_nonzero_coefs``
    (Wang & Gu 2019, eq. 5.3) in normalized units, with a private solver. Binary
    only: Wang & Gu's analysis (Corollary 5.8) is for the binary model. The privacy
    contract is described in ``docs/privacy.md``; the label set is not protected.

    Parameters
    ----------
    n_nonzero_coefs : int, default=10
        Sparsity level s (the intercept does not count); reduced to n_features if
        larger.
    epsilon : float, default=1.0
        Privacy loss bound in nats, in (0, 1e100] or ``numpy.inf`` (the same algorithm
        without noise).
    delta : float, default=1e-5
        Probability in [0, 1) that the epsilon bound fails. ``delta=0`` (pure DP) is
        accepted by ``"two_stage"`` only.
    data_norm : float, "auto" or None, default=None
        Public bound on the l2 norm of a row of X (or on every ``|x_j|`` when
        ``data_norm_ord=numpy.inf``), in [1e-100, 1e100]. ``None`` uses
        sqrt(n_features) (l2) or 3.0 (l_inf), and 1 for sparse X. ``"auto"``: a
        private median of the row norms (10% of epsilon), released as ``data_norm_``.
    data_norm_ord : {2, numpy.inf}, default=2
        Norm bounded by ``data_norm``.
    solver : {"ight", "two_stage"}, default="ight"
        DP iterative gradient hard thresholding, or private top-s selection followed
        by objective perturbation (see :class:`DPSparseLinearRegression`).
    fit_intercept : bool, default=True
        Whether to fit an intercept: a constant column of the normalized design, counted in
        the row bound (``docs/privacy.md``, P3). Regressors centre the targets on a private
        location of y first; the l0 models never threshold the intercept and it does not
        count toward ``n_nonzero_coefs``.
    max_iter : int, default=None
        Number of IGHT steps; ``None`` uses a data-independent default.
    tol : float, default=1e-8
        Certified gradient tolerance of the two-stage solver's exact second stage.
    step_size : float, default=None
        IGHT's feature step in units of 1 / (phi''_max a_f); ``None`` means 0.5.
    clip_norm : float, default=None
        Per-example gradient l2 clip norm of IGHT, in normalized units.
    accounting : {"tight", "paper"}, default="tight"
        Calibrate with the accountant or with the paper's formula.
    classes : array-like of shape (2,), default=None
        Public label set. The labels present in y are not protected (``classes_`` is
        taken from y as scikit-learn requires); pass ``classes`` to fix them publicly.
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
        Release ``clipped_fraction_``, a private fraction of the rows beyond
        ``data_norm_``, for 5% of ``epsilon`` (see :class:`DPLogisticRegression`).

    Attributes
    ----------
    classes_ : ndarray of shape (2,)
        Class labels.
    coef_ : ndarray of shape (1, n_features)
        Released coefficients, at most ``n_nonzero_coefs`` nonzeros.
    intercept_ : ndarray of shape (1,)
        Released intercept.
    dp_event_ : dp_accounting.DpEvent
        What the fit released.
    epsilon_ : float
        The epsilon this fit spends.
    delta_ : float
        The delta this fit spends.
    n_iter_ : int
        Data-independent iteration count.
    data_norm_ : float
        The row bound used: ``data_norm`` (public) or its private estimate.
    clipped_fraction_ : dict of str to float
        Only with ``report_clipping=True``: ``{"data_norm": ...}``, the private
        fraction of rows beyond ``data_norm_``, in [0, 1].
    solver_ : str
        The solver used.
    n_features_in_ : int
        Number of features seen during fit.
    feature_names_in_ : ndarray of shape (``n_features_in_``,)
        Names of features seen during fit, when X has string column names.

    Raises
    ------
    ValueError
        From ``fit``: a hyperparameter out of range, more or fewer than two classes,
        labels outside ``classes``.

    See Also
    --------
    DPLogisticRegression : l1- or l2-penalized private logistic regression.

    References
    ----------
    L. Wang and Q. Gu, IJCAI 2019, Algorithm 1, Corollary 5.8.
    A. G. Thakurta, PhD dissertation, Penn State, 2013, Chapter 6, Algorithm 6.2.

    Examples
    --------
    Scale the raw features privately too (see ``docs/privacy.md``):

    >>> from sklearn.datasets import load_breast_cancer
    >>> from dp_sklearn import DPSparseLogisticRegression, DPStandardScaler
    >>> from dp_sklearn.pipeline import make_private_pipeline
    >>> X, y = load_breast_cancer(return_X_y=True)
    >>> clf = make_private_pipeline(DPStandardScaler(random_state=0),
    ...                             DPSparseLogisticRegression(5, random_state=0), epsilon=1.0).fit(X, y)
    >>> int((clf[-1].coef_ != 0).sum()) <= 5
    True
    """

    _loss_names = ("logistic",)
    _binary_only = True
    _parameter_constraints = {
        **CLASSIFIER_CONSTRAINTS, **SPARSE_CONSTRAINTS,
        "solver": [SolverOptions(("l0",), ("logistic",))],
    }

    def __init__(self, n_nonzero_coefs=10, *, epsilon=1.0, delta=1e-5, data_norm=None, data_norm_ord=2,
                 solver="ight", fit_intercept=True, max_iter=None, tol=1e-8, step_size=None, clip_norm=None,
                 accounting="tight", classes=None, max_sample_weight=1.0, ledger=None, random_state=None,
                 verbose=0, report_clipping=False):
        self.n_nonzero_coefs = n_nonzero_coefs
        self.epsilon = epsilon
        self.delta = delta
        self.data_norm = data_norm
        self.data_norm_ord = data_norm_ord
        self.solver = solver
        self.fit_intercept = fit_intercept
        self.max_iter = max_iter
        self.tol = tol
        self.step_size = step_size
        self.clip_norm = clip_norm
        self.accounting = accounting
        self.classes = classes
        self.max_sample_weight = max_sample_weight
        self.ledger = ledger
        self.random_state = random_state
        self.verbose = verbose
        self.report_clipping = report_clipping
