"""DPLogisticRegression: private binary and multinomial logistic regression."""

from __future__ import annotations

import numpy as np
from scipy.special import expit, softmax
from sklearn.linear_model._base import LinearClassifierMixin
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted

from .._losses import LogisticLoss, MultinomialLoss
from .._sets import L1Ball, L2Ball, Unconstrained
from ..solvers import get_solver
from ._base import _check_positive, _DPLinearBase, _make_rng
from ._ridge import _PRIVACY_PARAMS_DOC


class DPLogisticRegression(LinearClassifierMixin, _DPLinearBase):
    """Differentially private logistic regression (binary and multinomial).

    ``penalty="l2"`` minimizes scikit-learn's objective ``C sum_i log-loss + ||w||^2 / 2``
    (in normalized units the intercept is penalized too); ``penalty="l1"`` minimizes
    the mean log-loss over the l1 ball ``||theta||_1 <= radius`` (normalized units).
    More than two classes are fitted with the multinomial (softmax) loss in one
    mechanism: the budget is not split over classes.

    Parameters
    ----------
    penalty : {{"l2", "l1"}}, default="l2"
    C : float, default=1.0
        Inverse l2 regularization strength, as in scikit-learn (penalty="l2"). Solvers
        may add the extra l2 regularization their privacy proof calls for, as a
        data-independent function of (n_samples, n_features, epsilon, delta).
    radius : float, default=10.0
        Radius of the feasible ball in normalized units: the l1 ball for penalty="l1",
        the l2 ball for solvers that need a bounded set with penalty="l2".
    {privacy}
    data_norm_ord : {{2, numpy.inf}}, default=2
    solver : {{"auto", "noisy_gd", "objective_perturbation", "output_perturbation", "mirror_descent", \
"frank_wolfe_gaussian", "frank_wolfe"}}, default="auto"
        ``"auto"``: ``"noisy_gd"`` for penalty="l2" (the most accurate on the acceptance
        data, see the README), ``"frank_wolfe"`` for penalty="l1".
    fit_intercept : bool, default=True
    max_iter : int, default=None
    tol : float, default=1e-8
    clip_norm : float, default=None
    accounting : {{"tight", "paper"}}, default="tight"
    classes : array-like, default=None
        Public label set. The labels present in y are not protected (``classes_`` is
        taken from y as scikit-learn requires); pass ``classes`` to fix them publicly.
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
    classes_ : ndarray of shape (n_classes,)
    coef_ : ndarray of shape (1, n_features) or (n_classes, n_features)
    intercept_ : ndarray of shape (1,) or (n_classes,)
    dp_event_ : dp_accounting.DpEvent
    epsilon_, delta_ : float
    n_iter_ : int
    solver_ : str
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (n_features_in_,)

    Raises
    ------
    ValueError
        From ``fit``: bad privacy parameters (see :class:`DPRidge`), y with one
        class, labels outside ``classes``, NaN or inf in X, unknown penalty or solver.

    References
    ----------
    Thakurta (2013), Algorithm 3.1; Bassily, Smith & Thakurta (2014), Algorithms 1, 3;
    Talwar, Thakurta & Zhang (2015), Algorithm 2.
    """

    _loss_names = ("logistic", "multinomial")

    def _constraint_name(self):
        return "l1" if self.penalty == "l1" else "none"

    def _describe(self):
        return f"DPLogisticRegression(penalty={self.penalty!r})"

    def __init__(self, penalty="l2", *, C=1.0, radius=10.0, epsilon=1.0, delta=1e-5, data_norm=None,
                 data_norm_ord=2, solver="auto", fit_intercept=True, max_iter=None, tol=1e-8,
                 clip_norm=None, accounting="tight", batch_size=None, classes=None, ledger=None, random_state=None):
        self.penalty = penalty
        self.C = C
        self.radius = radius
        self.epsilon = epsilon
        self.delta = delta
        self.data_norm = data_norm
        self.data_norm_ord = data_norm_ord
        self.solver = solver
        self.fit_intercept = fit_intercept
        self.max_iter = max_iter
        self.tol = tol
        self.clip_norm = clip_norm
        self.accounting = accounting
        self.classes = classes
        self.batch_size = batch_size
        self.ledger = ledger
        self.random_state = random_state

    def _resolved_solver(self):
        if self.solver == "auto":
            return "frank_wolfe" if self.penalty == "l1" else "noisy_gd"
        return self.solver

    def fit(self, X, y):
        """Fit the private classifier.

        Parameters
        ----------
        X : {{array-like, sparse matrix}} of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)

        Returns
        -------
        self : DPLogisticRegression
        """
        if self.penalty not in ("l2", "l1"):
            raise ValueError(f"penalty must be 'l2' or 'l1', got {self.penalty!r}.")
        _check_positive("C", self.C)
        _check_positive("radius", self.radius)
        X, y = self._validate_X_y(X, y)
        check_classification_targets(y)
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
                f"This solver needs samples of at least 2 classes in the data, but the data contains only one class: {classes[0]!r}."
            )
        self.classes_ = classes
        idx = np.searchsorted(classes, y)
        if classes.size == 2:
            loss, y_int = LogisticLoss(), np.where(idx == 1, 1.0, -1.0)
        else:
            loss, y_int = MultinomialLoss(classes.size), np.eye(classes.size)[idx]
        B = self._data_norm_value(X.shape[1])
        if self.penalty == "l1":
            constraint, l2 = L1Ball(self.radius), 0.0
        elif "none" not in get_solver(solver).constraints:  # an l2-ball solver
            constraint, l2 = L2Ball(self.radius), 1.0 / (self.C * X.shape[0] * B**2)
        else:
            constraint, l2 = Unconstrained(), 1.0 / (self.C * X.shape[0] * B**2)
        coef, intercept = self._solve(X, y_int, loss, constraint, l2, solver, _make_rng(self.random_state))
        self.coef_ = np.ascontiguousarray(coef.T)
        self.intercept_ = np.asarray(intercept, dtype=float)
        return self

    def predict_proba(self, X):
        """Class probabilities.

        Parameters
        ----------
        X : {{array-like, sparse matrix}} of shape (n_samples, n_features)

        Returns
        -------
        proba : ndarray of shape (n_samples, n_classes)
        """
        check_is_fitted(self)
        scores = self.decision_function(X)
        if scores.ndim == 1:
            p1 = expit(scores)
            return np.column_stack([1 - p1, p1])
        return softmax(scores, axis=1)

    def predict_log_proba(self, X):
        """Logarithm of :meth:`predict_proba`."""
        return np.log(self.predict_proba(X))

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.classifier_tags.poor_score = True
        return tags


DPLogisticRegression.__doc__ = DPLogisticRegression.__doc__.format(privacy=_PRIVACY_PARAMS_DOC)
