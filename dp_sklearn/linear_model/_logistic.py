"""DPLogisticRegression: private binary and multinomial logistic regression."""

from __future__ import annotations

from numbers import Real

import numpy as np
from scipy.special import expit, softmax
from sklearn.linear_model._base import LinearClassifierMixin
from sklearn.utils._param_validation import StrOptions
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted

from .._constraints import Interval
from .._dask_design import is_dask_collection
from .._losses import LogisticLoss, MultinomialLoss
from .._sets import L1Ball, Unconstrained
from ._dask_fit import encode_dask_labels
from ._dask_predict import blockwise_on_dask
from ._class_weight import (CLASS_WEIGHT_SHARE, check_class_weight, class_weight_event, class_weights,
                            intercept_offset, max_class_weight, uses_offset)
from ._base import BATCH_SIZE, DATA_NORM_ORD, PRIVACY_CONSTRAINTS, SolverOptions, _DPLinearBase

__all__ = ["DPLogisticRegression"]


class _DPClassifierBase(LinearClassifierMixin, _DPLinearBase):
    """Labels: public ``classes`` or those of y, encoded for the logistic losses."""

    _y_validation = {}
    #: only two classes (the l0 models: Wang & Gu's analysis is for the binary model)
    _binary_only = False
    #: the classifiers without a ``class_weight`` parameter weigh every class 1
    class_weight = None

    def _check_model_params(self):
        check_class_weight(self.class_weight)

    # ------------------------------------------------------------ class weights
    #: whether class weights may enter as an intercept offset (the logistic model: prior correction)
    _class_weight_offset = False

    def _prior_corrected(self):
        """Whether the class weights are an intercept offset rather than loss weights (public values only).

        See :func:`dp_sklearn.linear_model._class_weight.uses_offset`.
        """
        return uses_offset(self.class_weight, self._class_weight_offset, self.fit_intercept, self.epsilon)

    def _weight_bound(self, sample_weight):
        """The public bound of the record weights: class weight bound x ``max_sample_weight``."""
        bound = super()._weight_bound(sample_weight)
        if self.class_weight is None or self._prior_corrected():
            return bound
        mean = 1.0 if isinstance(self.class_weight, str) else max_class_weight(self.class_weight)  # "balanced": mean 1
        cw = (max_class_weight(self.class_weight), mean)
        return cw if bound is None else (cw[0] * bound[0], cw[1] * bound[1])

    def _prior_events(self):
        event = class_weight_event(self.class_weight, self._model_epsilon())
        return () if event is None else (event,)

    def _solver_epsilon(self):
        return self._model_epsilon() * (1.0 - CLASS_WEIGHT_SHARE * bool(self._prior_events()))

    def _record_weights(self, y, sample_weight, rng):
        if self.class_weight is None:
            self.__dict__.pop("class_weight_", None)  # from an earlier fit
            return sample_weight
        idx = np.argmax(y, axis=1) if y.ndim > 1 else (y > 0).astype(int)
        self.class_weight_ = class_weights(self.class_weight, self.classes_, idx, self._model_epsilon(), rng)
        if self._prior_corrected():
            return sample_weight
        weights = self.class_weight_[idx]
        return weights if sample_weight is None else weights * sample_weight

    def _encode_targets(self, y):
        if self.class_weight is not None and is_dask_collection(y):
            raise ValueError("class_weight is not supported for dask input; fit in memory, or leave it None.")
        if is_dask_collection(y):  # encoded blockwise; only the distinct labels reach the client
            return encode_dask_labels(self, y)
        check_classification_targets(y)
        if self.classes is not None:
            classes = np.unique(np.asarray(self.classes))
            unknown = np.setdiff1d(np.unique(y), classes)
            if unknown.size:
                raise ValueError(f"y contains labels {unknown.tolist()} that are not in classes={classes.tolist()}.")
        else:
            classes = np.unique(y)
        if classes.size < 2:
            raise ValueError("This solver needs samples of at least 2 classes in the data, but the data contains only "
                             f"one class: {classes[0]!r}.")
        if self._binary_only and classes.size > 2:
            raise ValueError(f"Only binary classification is supported; classes has {classes.size} labels. Use "
                             "DPLogisticRegression for multiclass problems.")
        self.classes_ = classes
        idx = np.searchsorted(classes, y)
        if classes.size == 2:
            return np.where(idx == 1, 1.0, -1.0), LogisticLoss()
        return np.eye(classes.size)[idx], MultinomialLoss(classes.size)

    def _transform_targets(self, y, rng):
        return y, None

    def _set_coef(self, coef, intercept, target_map):
        self.coef_ = np.ascontiguousarray(coef.T)
        self.intercept_ = np.asarray(intercept, dtype=float)
        if self._prior_corrected():  # post-processing of the released model and class weights
            self.intercept_ = self.intercept_ + intercept_offset(self.class_weight_)

    @blockwise_on_dask
    def decision_function(self, X):
        """Confidence scores ``clip(x) @ coef_.T + intercept_`` (a post-processing of the released model).

        Parameters
        ----------
        X : {array-like, sparse matrix, dask array or dask DataFrame} of shape (n_samples, n_features)
            Samples. Dask input gives a lazy dask array computed block by block on the
            workers (X never comes to the client); the same holds for :meth:`predict`,
            :meth:`predict_proba` and :meth:`predict_log_proba`.

        Returns
        -------
        scores : ndarray or dask.array.Array of shape (n_samples,) or (n_samples, n_classes)
            Signed distance to the hyperplane (binary) or one score per class, with
            each row ``x`` clipped to ``data_norm_`` as in training (also in
            :meth:`predict` and :meth:`predict_proba`).
        """
        return self._linear_scores(X)

    @blockwise_on_dask
    def predict(self, X):
        """Predicted class labels (the class of highest score).

        Parameters
        ----------
        X : {array-like, sparse matrix, dask array or dask DataFrame} of shape (n_samples, n_features)
            Samples to label (dask: see :meth:`decision_function`).

        Returns
        -------
        y_pred : ndarray or dask.array.Array of shape (n_samples,)
            Labels taken from ``classes_``.
        """
        return super().predict(X)

    @blockwise_on_dask
    def predict_proba(self, X):
        """Class probabilities: the logistic (binary) or softmax (multiclass) of the scores.

        Parameters
        ----------
        X : {array-like, sparse matrix, dask array or dask DataFrame} of shape (n_samples, n_features)
            Samples to score (dask: see :meth:`decision_function`).

        Returns
        -------
        proba : ndarray or dask.array.Array of shape (n_samples, n_classes)
            One column per class, in the order of ``classes_``; rows sum to 1.
        """
        check_is_fitted(self)
        scores = self.decision_function(X)
        if scores.ndim == 1:
            p1 = expit(scores)
            return np.column_stack([1 - p1, p1])
        return softmax(scores, axis=1)

    @blockwise_on_dask
    def predict_log_proba(self, X):
        """Logarithm of :meth:`predict_proba`.

        Parameters
        ----------
        X : {array-like, sparse matrix, dask array or dask DataFrame} of shape (n_samples, n_features)
            Samples (dask: see :meth:`decision_function`).

        Returns
        -------
        log_proba : ndarray or dask.array.Array of shape (n_samples, n_classes)
            Natural log of each class probability.
        """
        return np.log(self.predict_proba(X))

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.classifier_tags.poor_score = True
        tags.classifier_tags.multi_class = not self._binary_only
        return tags


CLASSIFIER_CONSTRAINTS = {**PRIVACY_CONSTRAINTS, **DATA_NORM_ORD, "classes": ["array-like", None]}


class DPLogisticRegression(_DPClassifierBase):
    """Differentially private logistic regression (binary and multinomial).

    ``penalty="l2"`` minimizes scikit-learn's objective ``C sum_i log-loss + ||w||^2 / 2``
    (in normalized units the intercept is penalized too); ``penalty="l1"`` minimizes
    the mean log-loss over the l1 ball ``||theta||_1 <= radius`` (normalized units).
    More than two classes are fitted with the multinomial (softmax) loss in one
    mechanism: the budget is not split over classes. The privacy contract is
    described in ``docs/privacy.md``; the label set itself is not protected.

    Parameters
    ----------
    penalty : {"l2", "l1"}, default="l2"
        An l2 penalty of strength 1 / C, or an l1-ball constraint of radius ``radius``.
    C : float, default=1.0
        Inverse l2 regularization strength, as in scikit-learn (penalty="l2"); with
        penalty="l1" only the default is accepted (the l1 ball is sized by ``radius``). Solvers
        may add the extra l2 regularization their privacy proof calls for, as a
        data-independent function of (n_samples, n_features, epsilon, delta).
    radius : float, default=10.0
        Radius of the feasible ball in normalized units: the l1 ball for penalty="l1",
        the l2 ball for solvers that need a bounded set with penalty="l2".
    epsilon : float, default=1.0
        Privacy loss bound in nats, in (0, 1e100] or ``numpy.inf`` (the non-private
        solution of the same objective).
    delta : float, default=1e-5
        Probability in [0, 1) that the epsilon bound fails. ``delta=0`` (pure DP) is
        accepted only by solvers with a pure guarantee.
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
        Norm bounded by ``data_norm``.
    solver : str, default="auto"
        ``"auto"``: for penalty="l2", ``"noisy_newton"`` (27 passes: one noisy Gram matrix,
        then 26 accelerated noisy Newton steps) for two classes with at most 2000 features
        (``dp_sklearn.solvers._noisy_newton.newton_applies``: the label set, n_features,
        epsilon and delta only; evidence in ``benchmarks/tabular/README.md``);
        ``"noisy_agd"`` (20 to 100 passes: accelerated noisy gradient steps with the public step)
        for two classes with more than 2000 features
        (``dp_sklearn.solvers._noisy_agd.agd_applies``; evidence in
        ``benchmarks/results/few_pass_highdim.md``); else ``"noisy_gd"`` (more classes,
        ``class_weight``, ``batch_size`` or ``accounting="paper"``);
        ``"frank_wolfe"`` for penalty="l1". Or one of the registered
        solvers for the logistic losses and the penalty: ``"noisy_gd"``, ``"noisy_newton"``, ``"noisy_agd"``,
        ``"objective_perturbation"``, ``"output_perturbation"``, ``"mirror_descent"``, ``"frank_wolfe_gaussian"`` (l2) or ``"frank_wolfe"``,
        ``"noisy_gd"``, ``"mirror_descent"`` (l1). For penalty="l2" also
        ``"exponential_sampling"`` and ``"localization"`` (BST 2014, Algorithms 2 and 4:
        pure epsilon-DP with exact samplers, over the l2 ball of ``radius``), which fit at
        most 2 coefficients (one feature with the intercept, binary labels) and raise a
        ``ValueError`` beyond.
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
        Calibrate with the accountant or with the paper's formula.
    batch_size : int or "full", default=None
        For solvers that take it (``"noisy_gd"``, ``"mirror_descent"``,
        ``"frank_wolfe_gaussian"``): Poisson-sampled mini-batches of this expected size.
        ``None``: full batches, except at large n (n_samples >= 40,000 for noisy_gd, 100,000
        for the others; ``accounting="tight"``) where the default plan uses Poisson samples
        at a rate chosen from public values
        (``dp_sklearn.solvers._common.default_sampling_rate``); ``"full"`` (or
        ``n_samples``) forces full batches at any n. ``accounting="paper"`` with sampled
        batches: noisy_gd only (the other papers calibrate full batches).
    classes : array-like, default=None
        Public label set. The labels present in y are not protected (``classes_`` is
        taken from y as scikit-learn requires); pass ``classes`` to fix them publicly.
    class_weight : dict, "balanced" or None, default=None
        Weights of the classes, as scikit-learn's (``C sum_i w_i log-loss``). A dict
        ``{label: weight}`` (finite, >= 0; missing labels weigh 1) is public.
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
        Release a private estimate of the fraction of rows with norm above
        ``data_norm_`` (those clipped), as ``clipped_fraction_``: the count plus
        Laplace noise, over n (Andrew et al. 2021, adaptive clipping;
        replace-one sensitivity 1). It spends 5% of ``epsilon``
        (``dp_sklearn._clipping.CLIPPING_SHARE``), composed into ``dp_event_``;
        the model gets the rest. Nothing about clipping is reported otherwise:
        no fit emits a warning that depends on the data (``docs/privacy.md``).
        Not supported for dask input.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        Class labels.
    coef_ : ndarray of shape (1, n_features) or (n_classes, n_features)
        Released coefficients, in the units of X.
    intercept_ : ndarray of shape (1,) or (n_classes,)
        Released intercepts (zeros when ``fit_intercept=False``).
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
    class_weight_ : ndarray of shape (n_classes,)
        Only with ``class_weight``: the weight of each class of ``classes_`` (a release
        for ``"balanced"``).
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
        From ``fit``: a hyperparameter out of range (named in the message), y with
        one class, labels outside ``classes``, NaN or inf in X; ``C`` other than 1.0
        with ``penalty="l1"`` (the l1 ball has no l2 strength: C would be ignored; its
        size is ``radius``). Every such error is raised before any budget is reserved.

    See Also
    --------
    DPSparseLogisticRegression : l0-constrained binary logistic regression.

    References
    ----------
    A. G. Thakurta, PhD dissertation, Penn State, 2013, Algorithm 3.1.
    R. Bassily, A. Smith and A. Thakurta, FOCS 2014, Algorithms 1 and 3.
    K. Talwar, A. Thakurta and L. Zhang, NeurIPS 2015, Algorithm 2.

    Examples
    --------
    Scale the raw features privately too (a non-private scaler fitted on the
    training data would release its statistics; see ``docs/privacy.md``):

    >>> from sklearn.datasets import load_breast_cancer
    >>> from dp_sklearn import DPLogisticRegression, DPStandardScaler
    >>> from dp_sklearn.pipeline import make_private_pipeline
    >>> X, y = load_breast_cancer(return_X_y=True)
    >>> clf = make_private_pipeline(DPStandardScaler(random_state=0),
    ...                             DPLogisticRegression(random_state=0), epsilon=1.0).fit(X, y)
    >>> clf[-1].coef_.shape
    (1, 30)
    >>> clf.classes_.tolist()
    [0, 1]
    """

    _loss_names = ("logistic", "multinomial")
    _class_weight_offset = True
    _parameter_constraints = {
        **CLASSIFIER_CONSTRAINTS, **BATCH_SIZE,
        "penalty": [StrOptions({"l2", "l1"})],
        "C": [Interval(Real, 0, np.inf, closed="neither")],
        "radius": [Interval(Real, 0, np.inf, closed="neither")],
        "solver": [SolverOptions(("none", "l1"), _loss_names, extra=("auto",))],
        "class_weight": [dict, StrOptions({"balanced"}), None],
    }

    def __init__(self, penalty="l2", *, C=1.0, radius=10.0, epsilon=1.0, delta=1e-5, data_norm=None,
                 data_norm_ord=2, solver="auto", fit_intercept=True, max_iter=None, tol=1e-8,
                 clip_norm=None, accounting="tight", batch_size=None, classes=None, class_weight=None,
                 max_sample_weight=1.0, ledger=None,
                 random_state=None, verbose=0, report_clipping=False):
        self.class_weight = class_weight
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
        self.max_sample_weight = max_sample_weight
        self.ledger = ledger
        self.random_state = random_state
        self.verbose = verbose
        self.report_clipping = report_clipping

    def _constraint_name(self):
        return "l1" if self.penalty == "l1" else "none"

    def _check_model_params(self):
        super()._check_model_params()
        # penalty="l1" is the l1-ball constraint of radius ``radius``: it has no l2 strength,
        # so a C the user set would be silently ignored. Refuse it before any reservation.
        if self.penalty == "l1" and self.C != 1.0:
            raise ValueError(f"C={self.C!r} has no effect with penalty='l1' (an l1-ball constraint whose size is "
                             "`radius`); leave C at its default 1.0 and set radius instead.")

    def _describe(self):
        return f"DPLogisticRegression(penalty={self.penalty!r})"

    def _resolved_solver(self, n_samples=None):
        if self.solver == "auto":
            if self.penalty == "l1":
                return "frank_wolfe"
            # class weights in the loss: the majorizer scales with the largest public weight (up to
            # 20 for "balanced"), so the steps would shrink by it; noisy_gd steps at the mean
            # weight. As an intercept offset (_prior_corrected) the fit is the unweighted one.
            weighted_loss = self.class_weight is not None and not self._prior_corrected()
            if weighted_loss:
                return "noisy_gd"
            if self._few_pass_default(n_samples):
                return "noisy_newton"
            return "noisy_agd" if self._accelerated_default(n_samples) else "noisy_gd"
        return self.solver

    def _public_loss(self):
        """Binary or multinomial from the label set (``classes_`` once encoded, else ``classes``)."""
        classes = getattr(self, "classes_", None)
        if classes is None and self.classes is not None:
            classes = np.unique(np.asarray(self.classes))
        k = 2 if classes is None else len(classes)
        return LogisticLoss() if k <= 2 else MultinomialLoss(k)

    def _feasible_set(self):
        return L1Ball(self.radius) if self.penalty == "l1" else Unconstrained()

    def _ball_radius(self):
        return self.radius

    def _l2_reg(self, n_samples, data_norm):
        return 0.0 if self.penalty == "l1" else 1.0 / (self.C * n_samples * data_norm**2)
