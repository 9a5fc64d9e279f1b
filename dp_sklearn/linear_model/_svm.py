"""DPLinearSVC: private linear support vector classification (squared hinge loss)."""

from __future__ import annotations

from numbers import Real

import numpy as np
from sklearn.utils._param_validation import StrOptions

from .._constraints import Interval
from .._losses._squared_hinge import SquaredHingeLoss
from ._base import BATCH_SIZE, SolverOptions
from ._logistic import CLASSIFIER_CONSTRAINTS, _DPClassifierBase

__all__ = ["DPLinearSVC"]


class DPLinearSVC(_DPClassifierBase):
    """Differentially private linear SVM (binary), with the squared hinge loss.

    Minimizes :class:`sklearn.linear_model.LinearSVC`'s default objective
    ``0.5 ||w||^2 + C sum_i max(0, 1 - y_i (<x_i, w> + b))^2`` on rows clipped to
    ``data_norm``. In normalized units (X / data_norm with a constant intercept column)
    the intercept is penalized like the other coefficients, as liblinear does: the
    non-private fit equals ``LinearSVC(intercept_scaling=data_norm)``. The squared
    hinge is smooth but its derivative grows with the margin, so the solvers work over
    the l2 ball of radius 2 / ||x_t|| bound (margins at most 2; the predicted class is
    unchanged by this scaling) or clip per-example gradients. The hinge loss itself is
    not offered: it is not smooth (Chaudhuri, Monteleoni & Sarwate 2011 smooth it for
    objective perturbation). The privacy contract is described in ``docs/privacy.md``;
    the label set is not protected.

    Parameters
    ----------
    C : float, default=1.0
        Inverse l2 regularization strength (> 0), as in scikit-learn.
    epsilon : float, default=1.0
        Privacy loss bound in nats, in (0, 1e100] or ``numpy.inf`` (the non-private
        minimizer of the same objective).
    delta : float, default=1e-5
        Probability in [0, 1) that the epsilon bound fails. ``delta=0`` (pure DP):
        ``"output_perturbation"``, ``"exponential_sampling"``, ``"localization"``.
    data_norm : float, "auto" or None, default=None
        Public bound on the l2 norm of a row of X, in the units of X, in
        [1e-100, 1e100]; ``None`` uses sqrt(n_features); ``"auto"``: a private median
        of the row norms (10% of epsilon).
    data_norm_ord : {2, numpy.inf}, default=2
        Norm bounded by ``data_norm``.
    solver : str, default="noisy_gd"
        A registered solver whose requirements the squared hinge meets (smooth, not
        twice differentiable): ``"noisy_gd"``, ``"output_perturbation"``,
        ``"mirror_descent"``, ``"frank_wolfe_gaussian"`` and the exact samplers (at most
        2 coefficients). ``"objective_perturbation"`` is refused.
    fit_intercept : bool, default=True
        Whether to fit an intercept: a constant column of the normalized design, counted in
        the row bound (``docs/privacy.md``, P3). Regressors centre the targets on a private
        location of y first; the l0 models never threshold the intercept and it does not
        count toward ``n_nonzero_coefs``.
    max_iter : int, default=None
        Iterations of iterative solvers; ``None`` uses a data-independent default.
    tol : float, default=1e-8
        Tolerance of the exact solvers.
    clip_norm : float, default=None
        Per-example gradient clipping norm (normalized units).
    accounting : {"tight", "paper"}, default="tight"
        Calibrate with the accountant or with the paper's formula.
    batch_size : int or "full", default=None
        Poisson-sampled mini-batches (see :class:`DPRidge`).
    classes : array-like, default=None
        The two public class labels; ``None`` takes those of y (the label set is then
        not protected).
    class_weight : dict, "balanced" or None, default=None
        Weights of the classes in the loss, as scikit-learn's (``C sum_i w_i loss_i``).
        A dict ``{label: weight}`` (finite, >= 0; missing labels weigh 1) is public; its
        largest value bounds every weight. ``"balanced"``: ``n / (n_classes * count_c)``
        from class counts released by the Laplace mechanism (l1 sensitivity 2, 5% of
        epsilon, ``dp_sklearn.linear_model._class_weight``), capped at the public 20; the
        release is composed into ``dp_event_``. The bound scales the Lipschitz and
        curvature constants the mechanisms use; the clipping solvers clip each weighted
        per-example gradient. Multiplies ``sample_weight``. Not supported for dask input.
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
    classes_ : ndarray of shape (2,)
        The class labels.
    coef_ : ndarray of shape (1, n_features)
        Released coefficients, in the units of X.
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
        The row bound used.
    class_weight_ : ndarray of shape (2,)
        Only with ``class_weight``: the weight of each class of ``classes_`` (a release
        for ``"balanced"``).
    clipped_fraction_ : dict of str to float
        Only with ``report_clipping=True``.
    solver_ : str
        The solver used.
    n_features_in_ : int
        Number of features seen during fit.
    feature_names_in_ : ndarray of shape (``n_features_in_``,)
        Names of features seen during fit, when X has string column names.

    Raises
    ------
    ValueError
        From ``fit``: a hyperparameter out of range (named in the message), more than
        two classes, a solver the loss cannot serve, NaN or inf in X; before any
        reservation.
    BudgetExceededError
        From ``fit``: the planned event would exceed ``ledger``'s cap (nothing is drawn).

    See Also
    --------
    DPLogisticRegression : Private logistic regression (calibrated probabilities).

    Notes
    -----
    ``predict_proba`` is the logistic function of the SVM margin (a post-processing),
    not a calibrated probability.

    References
    ----------
    K. Chaudhuri, C. Monteleoni and A. Sarwate, "Differentially private empirical risk
    minimization", JMLR 2011 (private SVMs; output perturbation, Algorithm 1).
    R. Bassily, A. Smith and A. Thakurta, FOCS 2014, Algorithm 1 (noisy gradient descent).

    Examples
    --------
    Scale the raw features privately too (see ``docs/privacy.md``):

    >>> from sklearn.datasets import load_breast_cancer
    >>> from dp_sklearn import DPLinearSVC, DPStandardScaler, make_private_pipeline
    >>> X, y = load_breast_cancer(return_X_y=True)
    >>> clf = make_private_pipeline(DPStandardScaler(random_state=0),
    ...                             DPLinearSVC(random_state=0), epsilon=1.0).fit(X, y)
    >>> clf[-1].coef_.shape
    (1, 30)
    """

    _binary_only = True
    _loss_names = ("squared_hinge",)
    _parameter_constraints = {
        **CLASSIFIER_CONSTRAINTS, **BATCH_SIZE,
        "C": [Interval(Real, 0, np.inf, closed="neither")],
        "solver": [SolverOptions(("none",), _loss_names)],
        "class_weight": [dict, StrOptions({"balanced"}), None],
    }

    def __init__(self, C=1.0, *, epsilon=1.0, delta=1e-5, data_norm=None, data_norm_ord=2, solver="noisy_gd",
                 fit_intercept=True, max_iter=None, tol=1e-8, clip_norm=None, accounting="tight", batch_size=None,
                 classes=None, class_weight=None, max_sample_weight=1.0, ledger=None, random_state=None, verbose=0,
                 report_clipping=False):
        self.C = C
        self.class_weight = class_weight
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
        self.batch_size = batch_size
        self.classes = classes
        self.max_sample_weight = max_sample_weight
        self.ledger = ledger
        self.random_state = random_state
        self.verbose = verbose
        self.report_clipping = report_clipping

    def _encode_targets(self, y):
        y_enc, _ = super()._encode_targets(y)  # labels -> +-1 (binary only)
        return y_enc, SquaredHingeLoss()

    def _l2_reg(self, n_samples, data_norm):
        # 0.5 ||w||^2 + C sum phi, divided by C n, with w = theta / data_norm
        return 1.0 / (self.C * n_samples * data_norm**2)
