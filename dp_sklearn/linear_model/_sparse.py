"""Sparse (l0-constrained) DP linear models: DPSparseLinearRegression, DPSparseLogisticRegression.

An l0 constraint ||w||_0 <= s is a different model class from the convex l1/l2
models (non-convex feasible set, its own mechanisms: hard thresholding and support
selection), so, like scikit-learn's :class:`~sklearn.linear_model.OrthogonalMatchingPursuit`
next to :class:`~sklearn.linear_model.Lasso`, the sparse models are separate
estimators with the ``n_nonzero_coefs`` hyperparameter rather than a ``penalty``
option of :class:`~dp_sklearn.DPLasso` / :class:`~dp_sklearn.DPLogisticRegression`.
"""

from __future__ import annotations

import numbers

import numpy as np
from dp_accounting import dp_event
from scipy.special import expit
from sklearn.linear_model._base import LinearClassifierMixin
from sklearn.utils.multiclass import check_classification_targets, type_of_target
from sklearn.utils.validation import check_is_fitted

from .._losses import LogisticLoss
from ..solvers import get_solver
from ..solvers._ight import L0Set
from ._base import _check_positive, _DPLinearBase, _make_rng
from ._ridge import _PRIVACY_PARAMS_DOC, _DPRegressorBase

__all__ = ["DPSparseLinearRegression", "DPSparseLogisticRegression"]


_SPARSE_PARAMS_DOC = """
    data_norm_ord : {{2, numpy.inf}}, default=2
        Norm bounded by ``data_norm``: the row l2 norm (the setting of Wang & Gu 2019)
        or every |x_j| (the setting of Thakurta 2013, Ch. 6, under which the
        two-stage selector's scores have the smallest sensitivity).
    solver : {{"ight", "two_stage"}}, default="ight"
        ``"ight"``: DP iterative gradient hard thresholding (Wang & Gu, IJCAI 2019,
        Algorithm 1). ``"two_stage"``: private top-s support selection by the
        exponential mechanism, then objective perturbation on the selected columns
        (Thakurta 2013, Algorithm 6.2, with a practical selector; see
        :mod:`dp_sklearn.solvers._two_stage`); it also accepts ``delta=0``.
    fit_intercept : bool, default=True
        The intercept is the last column of the normalized design; it is never
        thresholded and does **not** count toward ``n_nonzero_coefs`` (as in
        :class:`~sklearn.linear_model.OrthogonalMatchingPursuit`).
    max_iter : int, default=None
        Number of IGHT steps; ``None`` uses a data-independent default
        (:func:`dp_sklearn.solvers._ight.default_n_iter`).
    tol : float, default=1e-8
        Certified gradient tolerance of the exact solver of the two-stage solver's
        second stage (paid for with output noise, SPEC P5).
    step_size : float, default=None
        IGHT's feature step in units of 1 / (phi''_max a_f), with a_f the public
        mean-square bound of a standardized feature column; ``None`` means 0.5,
        which assumes standardized (centered) and weakly correlated features. Use
        ``1 / (2 n_nonzero_coefs + 1)`` for a step that is a descent step for any
        correlation (slower). Privacy does not depend on it.
    clip_norm : float, default=None
        Per-example gradient l2 clip norm of IGHT, in normalized units (rows scaled
        to ``||x|| <= 1``, targets to [-1, 1]); ``None`` uses half the row bound.
        Smaller values mean less noise and a Huber-like fit (the squared loss's
        gradient is clipped on large residuals).
    accounting : {{"tight", "paper"}}, default="tight"
        ``"tight"``: exact Gaussian composition (dp_accounting); ``"paper"``: Wang &
        Gu's zCDP calibration (Theorem 5.2 with the replace-one sensitivity) for
        IGHT, basic composition of pure exponential mechanisms for the two-stage
        selector.
    ledger : dp_sklearn.PrivacyLedger, default=None
        Budget ledger this fit reports its event to.
    random_state : int, numpy.random.Generator or None, default=None
        ``None`` draws fresh OS entropy. Do not publish models fitted with a fixed seed."""


class _SparseMixin:
    """l0 constraint, parameter checks and the non-private (epsilon = inf) path."""

    def _constraint_name(self):
        return "l0"

    def _describe(self):
        return type(self).__name__

    def _check_sparse_params(self):
        s = self.n_nonzero_coefs
        if not (isinstance(s, numbers.Integral) and not isinstance(s, bool) and s >= 1):
            raise ValueError(f"n_nonzero_coefs must be an int >= 1, got {s!r}.")
        _check_positive("step_size", self.step_size, allow_none=True)
        # With more nonzeros than features, hard thresholding is the identity.
        return L0Set(int(s), n_free=1 if self.fit_intercept else 0)

    def _solve(self, X, y_internal, loss, constraint, l2_reg, solver, rng, budget_share=1.0, prior_events=(),
               **solver_kwargs):
        if self.epsilon != np.inf:
            return super()._solve(X, y_internal, loss, constraint, l2_reg, solver, rng,
                                  budget_share=budget_share, prior_events=prior_events, **solver_kwargs)
        # epsilon = inf: the same algorithm without noise (non-private IGHT, Jain, Tewari &
        # Kar 2014, Wang & Gu's baseline; or exact top-s selection + exact restricted fit),
        # rather than the convex exact minimizer the base class uses. Mirrors _DPLinearBase._solve.
        problem, B = self._make_problem(X, y_internal, loss, l2_reg)
        res = get_solver(solver).func(
            problem, constraint, epsilon=np.inf, delta=float(self.delta), rng=rng, max_iter=self.max_iter,
            tol=self.tol, l2_reg=l2_reg, clip_norm=self.clip_norm, accounting=self.accounting, **solver_kwargs,
        )
        self.dp_event_ = dp_event.NonPrivateDpEvent()
        self.epsilon_, self.delta_ = float("inf"), float(self.delta)
        self.n_iter_ = res.n_iter
        self.solver_ = solver
        ledger = getattr(self, "ledger", None)
        if ledger is not None:
            ledger.record(self.dp_event_, self.epsilon_, self.delta_, label=type(self).__name__)
        theta = res.coef
        p = X.shape[1]
        coef = theta[:p].reshape(p, 1) / B
        intercept = theta[p:p + 1] if self.fit_intercept else np.zeros(1)
        return coef, intercept


class DPSparseLinearRegression(_SparseMixin, _DPRegressorBase):
    """Differentially private sparse linear regression (l0 constraint).

    Minimizes the least-squares loss ``(1/2n) ||y_t - X_t theta||^2`` subject to
    ``||theta||_0 <= n_nonzero_coefs`` (Wang & Gu 2019, eq. 5.2) in normalized units
    (``X_t = clip(X) / data_norm`` with a constant intercept column, ``y_t`` = y mapped
    from ``bounds_y`` to [-1, 1]), with a private solver.

    Why a separate estimator: an l0 constraint is a different model class from the
    l1/l2 models (a non-convex feasible set with its own mechanisms, hard
    thresholding and private support selection), just as scikit-learn keeps
    :class:`~sklearn.linear_model.OrthogonalMatchingPursuit` (``n_nonzero_coefs``)
    separate from :class:`~sklearn.linear_model.Lasso` (``alpha``). The shared
    validation, clipping, ledger and back-transform come from dp_sklearn's base
    classes.

    Parameters
    ----------
    n_nonzero_coefs : int, default=10
        Sparsity level s of the coefficient vector (the intercept does not count).
        Values above n_features are reduced to n_features.
    {privacy}
    {sparse}

    Attributes
    ----------
    coef_ : ndarray of shape (n_features,)
        At most ``n_nonzero_coefs`` nonzeros.
    intercept_ : float
    dp_event_ : dp_accounting.DpEvent
        What the fit released (with ``fit_intercept``, composed with the Laplace
        release of the private mean of y used to center the targets).
    epsilon_, delta_ : float
    n_iter_ : int
        Data-independent iteration count.
    solver_ : str
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (n_features_in_,)

    Raises
    ------
    ValueError
        From ``fit``: bad privacy parameters (see :class:`~dp_sklearn.DPRidge`),
        ``n_nonzero_coefs`` not a positive int, ``step_size <= 0``, unknown solver.

    References
    ----------
    L. Wang and Q. Gu, "Differentially private iterative gradient hard thresholding
    for sparse learning", IJCAI 2019, Algorithm 1, Theorem 5.2.
    A. G. Thakurta, PhD dissertation, Penn State, 2013, Chapter 6, Algorithm 6.2.
    """

    def __init__(self, n_nonzero_coefs=10, *, epsilon=1.0, delta=1e-5, data_norm=None, data_norm_ord=2,
                 bounds_y=None, solver="ight", fit_intercept=True, max_iter=None, tol=1e-8, step_size=None,
                 clip_norm=None, accounting="tight", ledger=None, random_state=None):
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
        self.ledger = ledger
        self.random_state = random_state

    def fit(self, X, y):
        """Fit the private sparse linear model.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            CSR input is never densified.
        y : array-like of shape (n_samples,)

        Returns
        -------
        self : DPSparseLinearRegression
        """
        constraint = self._check_sparse_params()
        return self._fit_regression(X, y, constraint, lambda n, B: 0.0, step_size=self.step_size)


DPSparseLinearRegression.__doc__ = DPSparseLinearRegression.__doc__.format(
    privacy=_PRIVACY_PARAMS_DOC, sparse=_SPARSE_PARAMS_DOC.format())


class DPSparseLogisticRegression(_SparseMixin, LinearClassifierMixin, _DPLinearBase):
    """Differentially private sparse (l0-constrained) binary logistic regression.

    Minimizes the mean log-loss subject to ``||theta||_0 <= n_nonzero_coefs``
    (Wang & Gu 2019, eq. 5.3) in normalized units, with a private solver.

    Why a separate estimator: an l0 constraint is a different model class from the
    l1/l2 penalties of :class:`~dp_sklearn.DPLogisticRegression` (a non-convex
    feasible set with its own mechanisms), as scikit-learn keeps
    :class:`~sklearn.linear_model.OrthogonalMatchingPursuit` separate from
    :class:`~sklearn.linear_model.Lasso`. Binary only: Wang & Gu's analysis
    (Corollary 5.8) is for the binary model.

    Parameters
    ----------
    n_nonzero_coefs : int, default=10
        Sparsity level s (the intercept does not count); reduced to n_features if
        larger.
    {privacy}
    {sparse}
    classes : array-like of shape (2,), default=None
        Public label set. The labels present in y are not protected (``classes_`` is
        taken from y as scikit-learn requires); pass ``classes`` to fix them publicly.

    Attributes
    ----------
    classes_ : ndarray of shape (2,)
    coef_ : ndarray of shape (1, n_features)
        At most ``n_nonzero_coefs`` nonzeros.
    intercept_ : ndarray of shape (1,)
    dp_event_ : dp_accounting.DpEvent
    epsilon_, delta_ : float
    n_iter_ : int
    solver_ : str
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (n_features_in_,)

    Raises
    ------
    ValueError
        From ``fit``: bad privacy parameters, more or fewer than two classes, labels
        outside ``classes``, bad ``n_nonzero_coefs`` or ``step_size``.

    References
    ----------
    L. Wang and Q. Gu, IJCAI 2019, Algorithm 1, Corollary 5.8.
    A. G. Thakurta, PhD dissertation, 2013, Chapter 6, Algorithm 6.2.
    """

    _loss_names = ("logistic",)

    def __init__(self, n_nonzero_coefs=10, *, epsilon=1.0, delta=1e-5, data_norm=None, data_norm_ord=2,
                 solver="ight", fit_intercept=True, max_iter=None, tol=1e-8, step_size=None, clip_norm=None,
                 accounting="tight", classes=None, ledger=None, random_state=None):
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
        self.ledger = ledger
        self.random_state = random_state

    def fit(self, X, y):
        """Fit the private sparse classifier.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            CSR input is never densified.
        y : array-like of shape (n_samples,)

        Returns
        -------
        self : DPSparseLogisticRegression
        """
        X, y = self._validate_X_y(X, y)
        check_classification_targets(y)
        y_type = type_of_target(y, input_name="y", raise_unknown=True)
        if y_type != "binary":
            raise ValueError(
                "Only binary classification is supported. The type of the target is "
                f"{y_type}; use DPLogisticRegression for multiclass problems."
            )
        constraint = self._check_sparse_params()
        solver = self._validate_privacy_params(X.shape[0])
        if self.classes is not None:
            classes = np.unique(np.asarray(self.classes))
            unknown = np.setdiff1d(np.unique(y), classes)
            if unknown.size:
                raise ValueError(f"y contains labels {unknown.tolist()} that are not in classes={classes.tolist()}.")
        else:
            classes = np.unique(y)
        if classes.size < 2:
            raise ValueError(
                "This solver needs samples of at least 2 classes in the data, but the data contains only one "
                f"class: {classes[0]!r}."
            )
        if classes.size > 2:
            raise ValueError(
                f"Only binary classification is supported; classes has {classes.size} labels. Use "
                "DPLogisticRegression for multiclass problems."
            )
        self.classes_ = classes
        y_int = np.where(np.searchsorted(classes, y) == 1, 1.0, -1.0)
        coef, intercept = self._solve(X, y_int, LogisticLoss(), constraint, 0.0, solver,
                                      _make_rng(self.random_state), step_size=self.step_size)
        self.coef_ = np.ascontiguousarray(coef.T)
        self.intercept_ = np.asarray(intercept, dtype=float)
        return self

    def predict_proba(self, X):
        """Class probabilities.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)

        Returns
        -------
        proba : ndarray of shape (n_samples, 2)
        """
        check_is_fitted(self)
        p1 = expit(self.decision_function(X))
        return np.column_stack([1 - p1, p1])

    def predict_log_proba(self, X):
        """Logarithm of :meth:`predict_proba`."""
        return np.log(self.predict_proba(X))

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.classifier_tags.poor_score = True
        tags.classifier_tags.multi_class = False
        return tags


DPSparseLogisticRegression.__doc__ = DPSparseLogisticRegression.__doc__.format(
    privacy=_PRIVACY_PARAMS_DOC.replace(
        """
    bounds_y : tuple (low, high), default=None
        Public range of the target, in the units of y; targets outside are clipped
        and mapped affinely onto [-1, 1]. ``None`` uses (-1, 1) with a warning.""", ""),
    sparse=_SPARSE_PARAMS_DOC.format())
