"""Private online linear models with ``partial_fit`` (Thakurta 2013, Chapter 5).

``fit`` is one pass over the data (POffL, Algorithm 5.4, by default averaging the iterates);
``partial_fit`` continues the stream. The mechanism, its sensitivity derivation and the
stream's privacy are in ``dp_sklearn.solvers._online``: each call releases a noisy model,
the estimator keeps only that release and public counts, and the whole stream is one
Gaussian release (``dp_event_``), recorded in the ledger once, by the call that starts it.
"""

from __future__ import annotations

import warnings

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin, _fit_context
from sklearn.linear_model._base import LinearClassifierMixin
from sklearn.utils.multiclass import check_classification_targets
from scipy.special import expit, softmax
from sklearn.utils._param_validation import StrOptions
from sklearn.utils.validation import _num_samples, validate_data
from dp_accounting import dp_event

from .._dask_design import is_dask_collection
from .._data import check_bounds_y, normalize_X, normalize_y
from .._progress import progress
from .._losses import LogisticLoss, MultinomialLoss, SquaredLoss
from .._losses._weighted import WeightedLoss
from ..solvers._online import plan_online, run_online
from .._release import private_fit
from ._base import check_sample_weight, linear_scores
from ._class_weight import (CLASS_WEIGHT_SHARE, check_class_weight, class_weight_event, class_weights,
                            intercept_offset, max_class_weight, uses_offset)
from ._online_params import _ATTRS_DOC, _CONSTRAINTS, _PARAMS_DOC

__all__ = ["DPOnlineRegressor", "DPOnlineClassifier"]

class _DPOnlineBase(BaseEstimator):
    """The stream template: validate, plan from public values, run a call, keep the release."""

    _parameter_constraints = dict(_CONSTRAINTS)
    #: the models without a ``class_weight`` parameter weigh every record by its sample weight only
    class_weight = None
    #: whether class weights may enter as an intercept offset (the logistic model: prior correction)
    _class_weight_offset = False

    def _start_stream(self):
        for name in ("n_samples_seen_", "_theta", "dp_event_"):
            self.__dict__.pop(name, None)

    def _stream_params(self):
        """Hyperparameters the stream's privacy and schedule depend on (fixed when it starts)."""
        params = self.get_params(deep=False)
        return {k: repr(v) for k, v in params.items() if k not in ("ledger", "random_state", "verbose")}

    def _call(self, X, y, classes, first, from_fit=False, sample_weight=None):
        cw = self.class_weight
        check_class_weight(cw)
        if cw is not None and is_dask_collection(y):
            raise ValueError("class_weight is not supported for dask input; fit in memory, or leave it None.")
        if isinstance(cw, str) and not from_fit:
            raise ValueError("class_weight='balanced' is not supported for partial_fit: the stream's class counts "
                             "are not known when it starts (as in scikit-learn's SGDClassifier). Pass a public "
                             "dict {label: weight}, or use fit(), which releases the class counts privately.")
        if first:
            self._start_stream()
        elif self._stream_params() != self._stream_config:
            changed = sorted(k for k, v in self._stream_params().items() if self._stream_config.get(k) != v)
            raise ValueError(f"{changed} changed since the stream started: its privacy and schedule rest on the "
                             "values it started with. Restore them, or start a new stream with fit().")
        elif self.ledger is not None and self.ledger != getattr(self, "_stream_ledger", None):
            raise ValueError("ledger was attached or changed after the stream started: the stream is one release, "
                             "reserved and recorded by the call that starts it, so a ledger set later would never "
                             "be charged. Start a new stream with fit() to account it in this ledger.")
        if y is None:
            raise ValueError(f"{type(self).__name__} requires y to be passed, but the target y is None.")
        n_x, n_y = _num_samples(X), _num_samples(y)
        if n_x != n_y:
            raise ValueError(f"X and y have inconsistent numbers of samples: X has {n_x}, y has {n_y}.")
        X, y = validate_data(self, X, y, reset=first, accept_sparse="csr", dtype=np.float64, **self._y_validation)
        sample_weight = check_sample_weight(sample_weight, X, self.max_sample_weight)
        t0 = 0 if first else int(self.n_samples_seen_)
        m = X.shape[0]
        if self.horizon is not None and t0 + m > self.horizon:
            raise ValueError(f"horizon={self.horizon} exceeded: the stream has consumed {t0} records and this call "
                             f"brings {m}. Start a new stream with fit(), or set a larger horizon.")
        y_t, loss = self._encode(y, classes, first)
        # class weights: the intercept offset log w_c of the unweighted fit, or loss weights (public values only)
        offset = uses_offset(cw, self._class_weight_offset, self.fit_intercept, self.epsilon)
        loss_cw = cw is not None and not offset
        weighted = sample_weight is not None or self.max_sample_weight != 1.0 or loss_cw
        if weighted and self.update == "implicit":
            raise ValueError("update='implicit' does not support sample_weight, nor class_weight as loss weights "
                             "(without an intercept or at epsilon=inf): its proximal step is the loss's closed "
                             "form for unit weights; use update='gradient'.")
        if weighted:  # the plan uses the stream's public bound on the weights
            loss = WeightedLoss(loss, self.max_sample_weight * (max_class_weight(cw) if loss_cw else 1.0))
        counts_event = class_weight_event(cw, self.epsilon)  # "balanced" in fit: the counts are a release
        solver_epsilon = self.epsilon * (1.0 - CLASS_WEIGHT_SHARE) if counts_event is not None else self.epsilon
        ref = self.horizon or m
        if first and self.epsilon != np.inf and self.delta >= 1.0 / ref:
            warnings.warn(f"delta={self.delta:g} >= 1/{ref}: such a delta allows releasing a record outright; "
                          "choose delta much smaller than 1/horizon.", UserWarning, stacklevel=3)
        p = X.shape[1]
        B = float(np.sqrt(p)) if self.data_norm is None else float(self.data_norm)
        x_norm = float(np.sqrt(2.0)) if self.fit_intercept else 1.0
        if first and not from_fit and isinstance(self.alpha, str) and self.horizon is None:
            warnings.warn("alpha='auto' without horizon: the penalty is set for the first call's "
                          f"{m} records; pass horizon= (the stream's length) for a stream of many calls.",
                          UserWarning, stacklevel=3)
        plan = plan_online(loss, x_norm, epsilon=solver_epsilon, delta=self.delta,
                           alpha=self.alpha if first else self.alpha_, n_ref=self.horizon or m,
                           radius=self.radius, clip_norm=self.clip_norm, batch_size=self.batch_size,
                           update=self.update)
        event = plan.event if counts_event is None else dp_event.ComposedDpEvent([counts_event, plan.event])
        # later calls are covered by the stream's event, reserved and recorded by the first
        with private_fit(self, event, ledgers=[self.ledger if first else None], epsilon=self.epsilon,
                         delta=self.delta) as release:
            rng = release.rng(self.random_state, spawn_key=(t0,))  # one stream per call position
            if cw is not None:
                idx = np.argmax(y_t, axis=1) if y_t.ndim > 1 else (y_t > 0).astype(int)
                self.class_weight_ = class_weights(cw, self.classes_, idx, self.epsilon, rng)
            else:
                self.__dict__.pop("class_weight_", None)  # from an earlier stream
            if weighted:
                w = np.ones(X.shape[0]) if sample_weight is None else sample_weight
                y_t = WeightedLoss.attach(y_t, w * self.class_weight_[idx] if loss_cw else w)
            Xt, _, _ = normalize_X(X, B, 2, self.fit_intercept)
            theta = np.zeros(Xt.shape[1] * loss.n_outputs) if first else self._theta
            with progress(type(self).__name__, self.verbose) as report:
                if report is not None:
                    report.line(f"records {t0 + 1} to {t0 + m} of the stream")
                theta = run_online(plan, loss, Xt, y_t, theta, t0, rng, average=self.average)
        self._theta = theta
        if first:
            self._stream_ledger = self.ledger
        self.n_samples_seen_ = t0 + m
        self.alpha_ = plan.alpha
        self._stream_config = self._stream_params() if first else self._stream_config
        self.dp_event_, self.epsilon_, self.delta_ = event, float(self.epsilon), float(self.delta)
        self.data_norm_ = B
        Theta = self._theta.reshape(-1, loss.n_outputs)  # feature-major (one column per class for K > 2)
        self._set_coef(Theta[:p] / B, Theta[p] if self.fit_intercept else np.zeros(loss.n_outputs))
        if offset:  # post-processing of the released model and the released (or public) class weights
            self.intercept_ = self.intercept_ + intercept_offset(self.class_weight_)
        return self

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None):
        """Start a new stream and make one pass over (X, y) (POffL, Algorithm 5.4).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Training data, in stream order; CSR input is never densified.
        y : array-like of shape (n_samples,)
            Targets (regressor) or class labels (classifier).
        sample_weight : array-like of shape (n_samples,), default=None
            Per-record weights in [0, ``max_sample_weight``] (the loss of record i is
            scaled by w_i); refused outside it before any budget is reserved.

        Returns
        -------
        self : object
            The fitted estimator; its ledger records one release.
        """
        return self._call(X, y, None, first=True, from_fit=True, sample_weight=sample_weight)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags


class DPOnlineRegressor(RegressorMixin, _DPOnlineBase):
    __doc__ = f"""Differentially private online least squares with ``partial_fit``.

    Projected online gradient descent on the squared loss (clipped gradients) plus an l2
    penalty, over an l2 ball (Thakurta 2013, Algorithms 5.1 and 5.3; ``fit`` is POffL,
    Algorithm 5.4). Every call releases a Gaussian-perturbed model and keeps only that
    release; the whole stream is (epsilon, delta)-DP under replace-one neighbours,
    however it is split into calls (derivation in ``docs/user_guide/online.md``).

    Parameters
    ----------
    bounds_y : tuple (low, high) or None, default=None
        Public range of the targets (clipped to it, mapped to [-1, 1]); ``None`` assumes
        [-1, 1] with a warning. There is no private estimate in a stream.{_PARAMS_DOC}
    Attributes
    ----------
    coef_ : ndarray of shape (n_features,)
        Released coefficients, in the units of X and y.
    intercept_ : float
        Released intercept.
    bounds_y_ : tuple
        The public target range used.
    data_norm_ : float
        The public row bound used.{_ATTRS_DOC}
    See Also
    --------
    DPOnlineClassifier : the logistic counterpart.
    DPRidge : batch private ridge regression.

    Examples
    --------
    >>> import numpy as np
    >>> from dp_sklearn import DPOnlineRegressor
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(2000, 3))
    >>> y = X @ [1.0, -1.0, 0.5] + 0.1 * rng.normal(size=2000)
    >>> reg = DPOnlineRegressor(bounds_y=(-5, 5), horizon=2000, random_state=0)
    >>> for start in range(0, 2000, 500):
    ...     reg = reg.partial_fit(X[start:start + 500], y[start:start + 500])
    >>> reg.n_samples_seen_, reg.epsilon_
    (2000, 1.0)
    """

    _y_validation = {"y_numeric": True, "multi_output": False}

    def __init__(self, *, bounds_y=None, epsilon=1.0, delta=1e-5, alpha="auto", radius=10.0, data_norm=None,
                 fit_intercept=True, clip_norm=None, batch_size=1, update="gradient", horizon=None, average=False,
                 max_sample_weight=1.0, ledger=None, random_state=None, verbose=0):
        self.bounds_y = bounds_y
        self.epsilon = epsilon
        self.delta = delta
        self.alpha = alpha
        self.radius = radius
        self.data_norm = data_norm
        self.fit_intercept = fit_intercept
        self.clip_norm = clip_norm
        self.batch_size = batch_size
        self.update = update
        self.horizon = horizon
        self.average = average
        self.max_sample_weight = max_sample_weight
        self.ledger = ledger
        self.random_state = random_state
        self.verbose = verbose

    _parameter_constraints = {**_CONSTRAINTS, "bounds_y": ["array-like", None]}

    def _encode(self, y, classes, first):
        if self.bounds_y is None:
            if first:
                warnings.warn("bounds_y=None: assuming targets in [-1, 1]; pass the public range of y as "
                              "bounds_y=(low, high).", UserWarning, stacklevel=4)
            self.bounds_y_ = (-1.0, 1.0)
        else:
            self.bounds_y_ = check_bounds_y(self.bounds_y)
        y_t, mid, half = normalize_y(y, self.bounds_y_)
        self._target_map = (mid, half)
        return y_t, SquaredLoss()

    def _set_coef(self, coef, intercept):
        mid, half = self._target_map
        self.coef_ = half * coef[:, 0]
        self.intercept_ = float(mid + half * intercept[0])

    @_fit_context(prefer_skip_nested_validation=True)
    def partial_fit(self, X, y, sample_weight=None):
        """Continue the stream with the records (X, y) and release the updated model.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            The next records of the stream.
        y : array-like of shape (n_samples,)
            Their targets.
        sample_weight : array-like of shape (n_samples,), default=None
            Per-record weights in [0, ``max_sample_weight``]; see :meth:`fit`.

        Returns
        -------
        self : object
            The estimator; only the first call of a stream records to the ledger.
        """
        return self._call(X, y, None, first=not hasattr(self, "n_samples_seen_"), sample_weight=sample_weight)

    def predict(self, X):
        """Predict with the released model, clipped to ``bounds_y_``.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Samples.

        Returns
        -------
        y_pred : ndarray of shape (n_samples,)
            Predictions: ``clip(x) @ coef_ + intercept_`` with the row ``x`` clipped
            to ``data_norm_`` (l2) as in training, then clipped to ``bounds_y_``.
        """
        return np.clip(linear_scores(self, X, 2), *self.bounds_y_)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.regressor_tags.poor_score = True
        return tags


class DPOnlineClassifier(LinearClassifierMixin, _DPOnlineBase):
    __doc__ = f"""Differentially private online logistic regression (binary or multinomial) with ``partial_fit``.

    Projected online gradient descent on the logistic loss (two classes) or the
    multinomial (softmax cross-entropy) loss (K > 2 classes, one coefficient vector per
    class) plus an l2 penalty, over an l2 ball (Thakurta 2013, Algorithms 5.1 and 5.3;
    ``fit`` is POffL, Algorithm 5.4). Every call releases a Gaussian-perturbed model and
    keeps only that release; the whole stream is (epsilon, delta)-DP under replace-one
    neighbours, however it is split into calls. The label set (``classes`` of the first
    ``partial_fit``, or those of y in ``fit``) is public, not protected.

    More than two classes. The per-example gradient ``(softmax(z) - y) x^T`` has Frobenius
    norm at most ``sqrt(2) ||x||``, so the gradient sum of a step has replace-one
    sensitivity ``2 sqrt(2) x_norm`` without clipping, and the multinomial loss is convex
    and ``x_norm^2 / 2``-smooth: the contraction of the explicit step (step 1 of the
    derivation in ``dp_sklearn.solvers._online``) holds as for two classes.
    Clipping a vector of K derivatives to a norm below ``sqrt(2) x_norm`` is not the
    derivative of a convex function, which that step needs, so ``clip_norm`` must be
    ``None`` (then ``sqrt(2)`` times the row bound: no clipping) or at least that. The
    implicit (proximal) step has no closed form for K > 2 (its fixed point is K-dimensional,
    and a numerical solver could fail on some record, a data-dependent exception): K > 2
    takes the explicit step only (``update="gradient"``, the default), and
    ``update="implicit"`` is refused with a ``ValueError`` before anything is reserved.

    Parameters
    ----------{_PARAMS_DOC}    class_weight : dict, "balanced" or None, default=None
        Weights of the classes, as scikit-learn's (``C sum_i w_i log-loss``). A dict
        ``{{label: weight}}`` (finite, >= 0; missing labels weigh 1) is public.
        ``"balanced"``: ``n / (n_classes * count_c)`` from class counts released by the
        Laplace mechanism (l1 sensitivity 2, 5% of epsilon,
        ``dp_sklearn.linear_model._class_weight``), capped at the public 20; the release is
        composed into ``dp_event_``. With an intercept at finite epsilon the weights are
        the intercept offset ``log w_c`` of the unweighted private fit (the prior
        correction of King & Zeng 2001: for a logistic model, weighting the classes changes
        only the intercepts, by ``log w_c``; a post-processing, and it keeps the clipping
        solvers from undoing the weights). At ``epsilon=inf``, without an intercept, or
        for a dict with a zero weight, they weigh the loss (bounded by the largest weight
        in the sensitivity) as scikit-learn's do. Multiplies ``sample_weight`` in the loss.
        Not supported for dask input.

    Attributes
    ----------
    coef_ : ndarray of shape (1, n_features) or (n_classes, n_features)
        Released coefficients (one row per class for more than two classes).
    intercept_ : ndarray of shape (1,) or (n_classes,)
        Released intercept.
    classes_ : ndarray of shape (n_classes,)
        The public label set.
    class_weight_ : ndarray of shape (n_classes,)
        Only with ``class_weight``: the weight of each class of ``classes_`` (a release
        for ``"balanced"``).
    data_norm_ : float
        The public row bound used.{_ATTRS_DOC}
    See Also
    --------
    DPOnlineRegressor : the least-squares counterpart.
    DPLogisticRegression : batch private logistic regression.

    Raises
    ------
    ValueError
        From ``fit`` and ``partial_fit``: a hyperparameter out of range, labels outside the
        stream's classes, ``update="implicit"`` or ``clip_norm < sqrt(2)`` times the row
        bound with more than two classes, ``horizon`` exceeded, ``class_weight="balanced"``
        in ``partial_fit``, ``update="implicit"`` with loss weights; before any budget is
        reserved.
    BudgetExceededError
        From the call that starts a stream: its event would exceed ``ledger``'s cap.

    References
    ----------
    A. G. Thakurta, "Beyond worst case sensitivity in private data analysis", PhD
    dissertation, Penn State, 2013, Chapter 5 (Algorithms 5.1-5.4).
    G. King and L. Zeng, "Logistic regression in rare events data", Political Analysis
    9(2), 2001 (prior correction, eq. 7).

    Examples
    --------
    >>> import numpy as np
    >>> from dp_sklearn import DPOnlineClassifier
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(2000, 3))
    >>> y = (X[:, 0] > 0).astype(int)
    >>> clf = DPOnlineClassifier(horizon=2000, random_state=0)
    >>> clf = clf.partial_fit(X[:1000], y[:1000], classes=[0, 1])
    >>> clf = clf.partial_fit(X[1000:], y[1000:])
    >>> clf.score(X, y) > 0.8
    True
    """

    _y_validation = {}

    _parameter_constraints = {**_CONSTRAINTS, "class_weight": [dict, StrOptions({"balanced"}), None]}
    _class_weight_offset = True

    def __init__(self, *, epsilon=1.0, delta=1e-5, alpha="auto", radius=10.0, data_norm=None, fit_intercept=True,
                 clip_norm=None, batch_size=1, update="gradient", horizon=None, average=False,
                 max_sample_weight=1.0, ledger=None, random_state=None, verbose=0, class_weight=None):
        self.class_weight = class_weight
        self.epsilon = epsilon
        self.delta = delta
        self.alpha = alpha
        self.radius = radius
        self.data_norm = data_norm
        self.fit_intercept = fit_intercept
        self.clip_norm = clip_norm
        self.batch_size = batch_size
        self.update = update
        self.horizon = horizon
        self.average = average
        self.max_sample_weight = max_sample_weight
        self.ledger = ledger
        self.random_state = random_state
        self.verbose = verbose

    def _encode(self, y, classes, first):
        check_classification_targets(y)
        if first:
            labels = np.unique(y) if classes is None else np.unique(np.asarray(classes))
            if labels.size < 2:
                raise ValueError(f"DPOnlineClassifier needs 2 classes, but the data contains only one class: "
                                 f"{labels[0]!r}; pass classes= to partial_fit.")
            self.classes_ = labels
        elif classes is not None and not np.array_equal(np.unique(np.asarray(classes)), self.classes_):
            raise ValueError(f"classes={np.asarray(classes).tolist()!r} differs from the stream's classes "
                             f"{self.classes_.tolist()!r}; start a new stream with fit() to change the label set.")
        unknown = np.setdiff1d(np.unique(y), self.classes_)
        if unknown.size:
            raise ValueError(f"y contains labels {unknown.tolist()} that are not in classes={self.classes_.tolist()}.")
        if self.classes_.size == 2:
            return np.where(y == self.classes_[1], 1.0, -1.0), LogisticLoss()
        if self.update == "implicit":
            raise ValueError(f"update='implicit' is not available for more than two classes (got "
                             f"{self.classes_.size}): the multinomial proximal step has no closed form. Use "
                             "update='gradient' (the explicit step).")
        return (np.asarray(y)[:, None] == self.classes_[None, :]).astype(float), MultinomialLoss(self.classes_.size)

    def _set_coef(self, coef, intercept):
        self.coef_ = np.ascontiguousarray(np.asarray(coef, dtype=float).T)
        self.intercept_ = np.asarray(intercept, dtype=float).ravel().copy()

    def decision_function(self, X):
        """Scores ``clip(x) @ coef_.T + intercept_`` of the released model (post-processing).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Samples; each row is clipped to ``data_norm_`` (l2) as in training (also in
            :meth:`predict` and :meth:`predict_proba`).

        Returns
        -------
        scores : ndarray of shape (n_samples,) or (n_samples, n_classes)
            Signed distance to the hyperplane (two classes) or one score per class.
        """
        return linear_scores(self, X, 2)

    def predict_proba(self, X):
        """Class probabilities of the released model (post-processing).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Samples.

        Returns
        -------
        proba : ndarray of shape (n_samples, n_classes)
            ``[1 - sigmoid(f), sigmoid(f)]`` for two classes, ``softmax(f)`` for more, with
            ``f`` the decision function; columns in the order of ``classes_``.
        """
        scores = self.decision_function(X)
        if scores.ndim == 1:
            p = expit(scores)
            return np.column_stack([1.0 - p, p])
        return softmax(scores, axis=1)

    def predict_log_proba(self, X):
        """Logarithm of :meth:`predict_proba`.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Samples.

        Returns
        -------
        log_proba : ndarray of shape (n_samples, n_classes)
            Log-probabilities, columns in the order of ``classes_``.
        """
        return np.log(self.predict_proba(X))

    @_fit_context(prefer_skip_nested_validation=True)
    def partial_fit(self, X, y, classes=None, sample_weight=None):
        """Continue the stream with the records (X, y) and release the updated model.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            The next records of the stream.
        y : array-like of shape (n_samples,)
            Their labels, within the stream's classes.
        classes : array-like of shape (n_classes,), default=None
            The public label set; required on the first call of a stream. A later
            call may repeat it; a different set raises a ``ValueError``.
        sample_weight : array-like of shape (n_samples,), default=None
            Per-record weights in [0, ``max_sample_weight``]; see :meth:`fit`.

        Returns
        -------
        self : object
            The estimator; only the first call of a stream records to the ledger.

        Raises
        ------
        ValueError
            ``class_weight="balanced"``, before any budget is reserved: the stream's class
            counts are not known when it starts (scikit-learn's ``SGDClassifier`` refuses
            it in ``partial_fit`` too); pass a public dict, or use :meth:`fit`, which
            releases the counts privately.
        """
        first = not hasattr(self, "n_samples_seen_")
        if first and classes is None:
            raise ValueError("classes must be passed to the first call of partial_fit (the public label set).")
        return self._call(X, y, classes, first=first, sample_weight=sample_weight)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.poor_score = True
        tags.classifier_tags.multi_class = True
        return tags
