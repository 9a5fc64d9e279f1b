"""DPRidge and DPLasso: private least squares with an l2 penalty or an l1-ball constraint."""

from __future__ import annotations

import warnings

import numpy as np
from dp_accounting import dp_event
from sklearn.base import RegressorMixin
from sklearn.utils.validation import check_is_fitted, validate_data

from .._data import normalize_y
from .._losses import SquaredLoss
from .._sets import L1Ball, Unconstrained
from ._base import _check_positive, _DPLinearBase, _make_rng

_PRIVACY_PARAMS_DOC = """
    epsilon : float, default=1.0
        Privacy loss bound in nats (> 0). ``numpy.inf`` fits the non-private solution
        of the same objective.
    delta : float, default=1e-5
        Probability in [0, 1) that the epsilon bound fails. Should be much smaller
        than 1/n_samples (a warning is raised otherwise). ``delta=0`` requests pure
        DP and is accepted only by solvers with a pure guarantee.
    data_norm : float, default=None
        Public bound on the l2 norm of a row of X (or on ``|x_j|`` when
        ``data_norm_ord=numpy.inf``), in the units of X. Rows beyond it are clipped
        (a :class:`~dp_sklearn.ClippingWarning` is raised; nothing is stored). ``None``
        assumes standardized features and uses sqrt(n_features) (l2) or 3.0 (l_inf).
        Never derived from the data.
    bounds_y : tuple (low, high), default=None
        Public range of the target, in the units of y; targets outside are clipped
        and mapped affinely onto [-1, 1]. ``None`` uses (-1, 1) with a warning."""


#: share of epsilon spent on the private mean of y that centers the targets
Y_CENTER_SHARE = 0.1


def _private_center(y, bounds, epsilon, rng):
    """Center the target range on a private mean of y (Laplace mechanism).

    The mean of y clipped to ``bounds`` has sensitivity (high - low) / n under
    replace-one neighbours; Laplace noise with scale sensitivity / (share * epsilon)
    makes it (share * epsilon)-DP (Dwork et al. 2006). The returned bounds
    ``(c - r, c + r)`` with ``r = max(high - c, c - low)`` contain the public range,
    so no extra clipping occurs, and shrinkage pulls predictions toward the mean
    of y (the trivial predictor) rather than the middle of ``bounds_y``.
    """
    low, high = bounds
    n = y.shape[0]
    mean = float(np.mean(np.clip(y, low, high)))
    if epsilon == np.inf:
        c, event = mean, None
    else:
        eps_c = Y_CENTER_SHARE * float(epsilon)
        c = float(np.clip(mean + rng.laplace(scale=(high - low) / (n * eps_c)), low, high))
        event = dp_event.LaplaceDpEvent(1.0 / eps_c)
    r = max(high - c, c - low)
    return (c - r, c + r), event


class _DPRegressorBase(RegressorMixin, _DPLinearBase):
    def _prepare_y(self, y):
        if self.bounds_y is None:
            warnings.warn(
                "bounds_y was not set: assuming targets in [-1, 1]. Pass the public range of y "
                "as bounds_y=(low, high).",
                UserWarning,
                stacklevel=3,
            )
            bounds = (-1.0, 1.0)
        else:
            try:
                low, high = (float(v) for v in self.bounds_y)
            except (TypeError, ValueError):
                raise ValueError(f"bounds_y must be a pair (low, high), got {self.bounds_y!r}.") from None
            if not (np.isfinite(low) and np.isfinite(high) and low < high):
                raise ValueError(f"bounds_y must be finite with low < high, got {self.bounds_y!r}.")
            bounds = (low, high)
        return bounds

    def _fit_regression(self, X, y, constraint, l2_reg_fn, **solver_kwargs):
        X, y = self._validate_X_y(X, y, y_numeric=True, multi_output=False)
        solver = self._validate_privacy_params(X.shape[0])
        bounds = self._prepare_y(y)
        self.bounds_y_ = bounds  # public: the hyperparameter (or its documented default)
        rng = _make_rng(self.random_state)  # the one Generator of this fit (SPEC P6)
        center_event = None
        if self.fit_intercept:
            # epsilon = inf: the exact mean, the limit of the private one (same objective).
            bounds, center_event = _private_center(y, bounds, self.epsilon, rng)
        yt, mid, half = normalize_y(y, bounds)
        B = self._data_norm_value(X.shape[1])
        coef, intercept = self._solve(X, yt, SquaredLoss(), constraint, l2_reg_fn(X.shape[0], B), solver, rng,
                                      budget_share=1.0 - Y_CENTER_SHARE if center_event else 1.0,
                                      prior_events=(center_event,) if center_event else (), **solver_kwargs)
        self.coef_ = half * coef[:, 0]
        self.intercept_ = float(mid + half * intercept[0]) if self.fit_intercept else 0.0
        return self

    def predict(self, X):
        """Predict with the released linear model, clipped to the public ``bounds_y``.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)

        Returns
        -------
        y_pred : ndarray of shape (n_samples,)
        """
        check_is_fitted(self)
        X = validate_data(self, X, accept_sparse="csr", dtype=np.float64, reset=False)
        # Post-processing: no target lies outside the public bounds_y, so clipping a
        # prediction to it never increases its error; noise can never make it diverge.
        return np.clip(np.asarray(X @ self.coef_).ravel() + self.intercept_, *self.bounds_y_)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.regressor_tags.poor_score = True
        return tags


class DPRidge(_DPRegressorBase):
    """Differentially private ridge regression.

    Minimizes the ridge objective ``||y - X w - b||^2 + alpha ||w||^2`` of
    :class:`sklearn.linear_model.Ridge` on clipped data, with a private solver. In
    the normalized units the solvers work in (X / data_norm with a constant
    intercept column, y mapped to [-1, 1]) the intercept is penalized like the other
    coefficients, so that every mechanism's sensitivity is bounded.

    Parameters
    ----------
    alpha : float, default=1.0
        l2 penalty, in scikit-learn's Ridge units. Solvers may add the extra l2
        regularization their privacy proof calls for (objective perturbation's
        Delta >= 2 lambda / epsilon; output perturbation's strong convexity), as a
        data-independent function of (n_samples, n_features, epsilon, delta).
    {privacy}
    solver : {{"noisy_gd", "output_perturbation", "objective_perturbation", "mirror_descent", \
"frank_wolfe_gaussian"}}, default="noisy_gd"
        Private mechanism, see the solver table in the README. The last two work over
        the l2 ball of radius 1 / ||x_t|| bound (every in-bound prediction within bounds_y).
    fit_intercept : bool, default=True
    max_iter : int, default=None
        Iterations of iterative solvers; ``None`` uses a data-independent default.
    tol : float, default=1e-8
        Certified gradient-norm tolerance of exact-minimizer solvers (SPEC P5); the
        inexactness is paid for with extra noise.
    clip_norm : float, default=None
        Per-example gradient clipping norm of ``noisy_gd`` (normalized units).
    accounting : {{"tight", "paper"}}, default="tight"
        Calibrate iterative solvers with the accountant or with the paper's formula.
    batch_size : int, default=None
        ``noisy_gd`` only: Poisson-sampled mini-batches of this expected size (sampling
        rate batch_size / n_samples), accounted under replace-one neighbours with the PLD
        accountant. ``None``: full batches.
    ledger : dp_sklearn.PrivacyLedger, default=None
        Budget ledger this fit reports its event to; it survives ``clone`` and joblib
        processes. A fit whose (epsilon, delta) would exceed the ledger's cap raises
        before the data is used.
    random_state : int, numpy.random.Generator or None, default=None
        ``None`` draws fresh OS entropy. Do not publish models fitted with a fixed seed.

    Attributes
    ----------
    coef_ : ndarray of shape (n_features,)
    intercept_ : float
    dp_event_ : dp_accounting.DpEvent
        What the fit released, for composition with other releases.
    epsilon_, delta_ : float
        The (epsilon, delta) this fit spends.
    n_iter_ : int
        Data-independent iteration count.
    solver_ : str
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (n_features_in_,)

    Raises
    ------
    ValueError
        From ``fit`` when epsilon <= 0, delta is outside [0, 1), delta = 0 with a
        solver that needs delta > 0, X or y contain NaN or inf, X and y lengths
        differ, or the solver name is unknown.

    References
    ----------
    Bassily, Smith & Thakurta, FOCS 2014, Algorithms 1 and 3; Thakurta (2013),
    Algorithm 3.1; Chaudhuri, Monteleoni & Sarwate, JMLR 2011.
    """


    def __init__(self, alpha=1.0, *, epsilon=1.0, delta=1e-5, data_norm=None, bounds_y=None,
                 solver="noisy_gd", fit_intercept=True, max_iter=None, tol=1e-8,
                 clip_norm=None, accounting="tight", batch_size=None, ledger=None, random_state=None):
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
        self.ledger = ledger
        self.random_state = random_state

    def fit(self, X, y):
        """Fit the private ridge model.

        Parameters
        ----------
        X : {{array-like, sparse matrix}} of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)

        Returns
        -------
        self : DPRidge
        """
        _check_positive("alpha", self.alpha, allow_zero=True)
        return self._fit_regression(X, y, Unconstrained(), lambda n, B: self.alpha / (n * B**2))


DPRidge.__doc__ = DPRidge.__doc__.format(privacy=_PRIVACY_PARAMS_DOC)


class DPLasso(_DPRegressorBase):
    """Differentially private Lasso: least squares over an l1 ball.

    Minimizes ``(1/2n) ||y_t - X_t theta||^2`` subject to ``||theta||_1 <= radius`` in
    normalized units (X_t = clip(X) / data_norm with a constant intercept column,
    y_t = y mapped from ``bounds_y`` to [-1, 1]), the constrained form of
    :class:`sklearn.linear_model.Lasso` studied by Talwar, Thakurta & Zhang (2015).

    Parameters
    ----------
    radius : float, default=1.0
        Radius of the l1 ball in normalized units (then |<x_t, theta>| <= radius).
    {privacy}
    data_norm_ord : {{2, numpy.inf}}, default=2
        Norm bounded by ``data_norm``: the row l2 norm, or every |x_j| (l_inf, the
        setting of TTZ Theorem 2.5).
    solver : {{"frank_wolfe", "noisy_gd", "mirror_descent"}}, default="frank_wolfe"
        Private Frank-Wolfe (TTZ Algorithm 2), noisy projected gradient descent
        (BST Algorithm 1) or private mirror descent (TTZ full version, Algorithm 1).
    fit_intercept : bool, default=True
    max_iter : int, default=None
        ``None``: T from TTZ Theorem 2.5 (frank_wolfe) or the noisy_gd default.
    tol : float, default=1e-8
        Tolerance of the exact solver used at ``epsilon=inf``.
    clip_norm : float, default=None
    accounting : {{"tight", "paper"}}, default="tight"
    batch_size : int, default=None
        ``noisy_gd`` only: Poisson-sampled mini-batches of this expected size (sampling
        rate batch_size / n_samples), accounted under replace-one neighbours with the PLD
        accountant. ``None``: full batches.
    ledger : dp_sklearn.PrivacyLedger, default=None
        Budget ledger this fit reports its event to; it survives ``clone`` and joblib
        processes. A fit whose (epsilon, delta) would exceed the ledger's cap raises
        before the data is used.
    random_state : int, numpy.random.Generator or None, default=None

    Attributes
    ----------
    coef_ : ndarray of shape (n_features,)
    intercept_ : float
    dp_event_ : dp_accounting.DpEvent
    epsilon_, delta_ : float
    n_iter_ : int
    solver_ : str
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (n_features_in_,)

    Raises
    ------
    ValueError
        As :class:`DPRidge`, and when ``radius <= 0``.

    References
    ----------
    Talwar, Thakurta & Zhang, "Nearly-optimal private LASSO", NeurIPS 2015.
    """

    def _constraint_name(self):
        return "l1"

    def __init__(self, radius=1.0, *, epsilon=1.0, delta=1e-5, data_norm=None, data_norm_ord=2,
                 bounds_y=None, solver="frank_wolfe", fit_intercept=True, max_iter=None, tol=1e-8,
                 clip_norm=None, accounting="tight", batch_size=None, ledger=None, random_state=None):
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
        self.ledger = ledger
        self.random_state = random_state

    def fit(self, X, y):
        """Fit the private Lasso.

        Parameters
        ----------
        X : {{array-like, sparse matrix}} of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)

        Returns
        -------
        self : DPLasso
        """
        _check_positive("radius", self.radius)
        return self._fit_regression(X, y, L1Ball(self.radius), lambda n, B: 0.0)


DPLasso.__doc__ = DPLasso.__doc__.format(privacy=_PRIVACY_PARAMS_DOC)
