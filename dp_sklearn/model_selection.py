"""Differentially private hyperparameter selection.

``sklearn.model_selection.GridSearchCV`` on a DP estimator fits every candidate
on every fold and refits the winner: with 6 candidates and 5 folds that is 31
private releases, and the scores it compares are computed on the private data
without noise (so even ``best_params_`` is not covered by any DP guarantee).
:class:`DPGridSearchCV` replaces it by an accounted private selection.

References
----------
.. [PS22] N. Papernot and T. Steinke, "Hyperparameter tuning with Renyi
   differential privacy", ICLR 2022 (arXiv:2110.03620).
.. [LT19] J. Liu and K. Talwar, "Private selection from private candidates",
   STOC 2019.
.. [DRS19] J. Dong, A. Roth and W. Su, "Gaussian differential privacy",
   J. R. Stat. Soc. B 84(1), 2022 (arXiv:1905.02383).
"""

from __future__ import annotations

import copy
import math
import numbers
import warnings
from collections.abc import Mapping, Sequence

import numpy as np
import scipy.sparse as sp
from dp_accounting import dp_event
from dp_accounting.privacy_accountant import UnsupportedEventError
from dp_accounting.rdp import RdpAccountant
from sklearn.base import BaseEstimator, MetaEstimatorMixin, clone, is_classifier
from sklearn.model_selection import ParameterGrid
from sklearn.pipeline import Pipeline
from sklearn.utils import _safe_indexing, get_tags
from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import _num_samples, check_is_fitted

from ._accounting import gaussian_noise_multiplier
from .ledger import compose_epsilon

__all__ = ["DPGridSearchCV"]

#: relative tolerance when checking that one RDP curve dominates another
_RDP_RTOL = 1e-9
#: number of public draws from ``param_distributions`` used to calibrate repeat-and-select
_N_CALIBRATION_DRAWS = 16


# ---------------------------------------------------------------------------
# repeat-and-select: the distribution of the number of repetitions
# ---------------------------------------------------------------------------
def _tnb_gamma(shape, mean):
    """Success probability gamma of the truncated negative binomial with this mean.

    Uses ``dp_accounting``'s own inversion, so the sampler draws from exactly the
    distribution that the RDP accountant analyses.
    """
    try:
        from dp_accounting.rdp.rdp_privacy_accountant import _gamma_truncated_negative_binomial
    except ImportError:  # pragma: no cover - older/newer dp_accounting
        _gamma_truncated_negative_binomial = None
    if _gamma_truncated_negative_binomial is not None:
        return float(_gamma_truncated_negative_binomial(shape, mean))
    raise ImportError("dp_accounting does not expose _gamma_truncated_negative_binomial")  # pragma: no cover


def sample_repetitions(rng, mean, shape):
    """Draw the number of repetitions K of repeat-and-select ([PS22], Section 2).

    Parameters
    ----------
    rng : numpy.random.Generator
    mean : float
        E[K], >= 1.
    shape : float
        ``0``: logarithmic, ``1``: geometric, ``0 < shape < inf``: truncated
        negative binomial ``D_{shape, gamma}``, ``inf``: Poisson (K may be 0).

    Returns
    -------
    K : int
    """
    if shape == np.inf:
        return int(rng.poisson(mean))
    if mean == 1:
        return 1
    gamma = _tnb_gamma(shape, mean)
    if gamma >= 1:
        return 1
    if shape == 0:
        # P(K = k) proportional to (1 - gamma)^k / k, k >= 1.
        return int(rng.logseries(1.0 - gamma))
    while True:
        # Failures before `shape` successes: P(k) prop. to C(k + shape - 1, k) (1 - gamma)^k; truncate k = 0.
        k = int(rng.negative_binomial(shape, gamma))
        if k >= 1:
            return k


# ---------------------------------------------------------------------------
# RDP helpers
# ---------------------------------------------------------------------------
def _rdp_curve(event):
    acc = RdpAccountant()
    acc.compose(event)
    return np.asarray(acc._rdp, dtype=float)  # noqa: SLF001 (RDP at acc._orders)


def _unique(events):
    out = []
    for ev in events:
        if not any(ev == u for u in out):
            out.append(ev)
    return out


def _dominates(bound_curve, curve):
    return bool(np.all(curve <= bound_curve + _RDP_RTOL * np.abs(bound_curve)))


def _dominating_event(events):
    """An event whose RDP curve is >= that of every event in ``events`` at every order.

    One of the events if one dominates all the others; otherwise their composition
    (RDP curves are non-negative, so a sum dominates each term). Events the RDP
    accountant does not support are composed.
    """
    distinct = _unique(events)
    if len(distinct) == 1:
        return distinct[0]
    try:
        curves = [_rdp_curve(ev) for ev in distinct]
    except UnsupportedEventError:
        return dp_event.ComposedDpEvent(distinct)
    for ev, c in zip(distinct, curves):
        if all(_dominates(c, d) for d in curves):
            return ev
    return dp_event.ComposedDpEvent(distinct)


def _covered(event, bound):
    """True if ``event`` is certified by ``bound``: equal, or RDP-dominated by it."""
    if event == bound:
        return True
    try:
        return _dominates(_rdp_curve(bound), _rdp_curve(event))
    except UnsupportedEventError:
        return False


# ---------------------------------------------------------------------------
# scoring: means of bounded per-record terms
# ---------------------------------------------------------------------------
def _acc_terms(y_true, y_pred):
    return (np.asarray(y_true) == np.asarray(y_pred)).astype(float)


def _neg_se_terms(y_true, y_pred):
    return -(np.asarray(y_true, dtype=float) - np.asarray(y_pred, dtype=float)) ** 2


def _neg_ae_terms(y_true, y_pred):
    return -np.abs(np.asarray(y_true, dtype=float) - np.asarray(y_pred, dtype=float))


_SCORERS = {
    "accuracy": _acc_terms,
    "neg_mean_squared_error": _neg_se_terms,
    "neg_mean_absolute_error": _neg_ae_terms,
}


def _released_event(est):
    """The dp_accounting event of a fitted DP estimator or of every DP step of a Pipeline."""
    if hasattr(est, "dp_event_"):
        return est.dp_event_
    if isinstance(est, Pipeline):
        evs = [step.dp_event_ for _, step in est.steps if hasattr(step, "dp_event_")]
        if evs:
            return evs[0] if len(evs) == 1 else dp_event.ComposedDpEvent(evs)
    raise ValueError(
        f"{type(est).__name__} exposes no dp_event_ after fit: DPGridSearchCV needs a dp_sklearn "
        "estimator (or a Pipeline ending in one)."
    )


def _synthetic_like(X, n_rows, rng):
    """Public stand-in data with the shape and column layout of X (never derived from its values)."""
    p = X.shape[1]
    Z = rng.standard_normal((n_rows, p)) / math.sqrt(max(p, 1))
    if sp.issparse(X):
        return sp.csr_matrix(Z)
    if hasattr(X, "columns") and hasattr(X, "iloc"):
        import pandas as pd

        return pd.DataFrame(Z, columns=X.columns)
    return Z


class DPGridSearchCV(MetaEstimatorMixin, BaseEstimator):
    """Differentially private hyperparameter selection for dp_sklearn estimators.

    One public random split of the rows into a training part and a validation
    part (fraction ``cv``). A *candidate run* draws hyperparameters, fits the DP
    estimator on the training part with a per-candidate budget, and scores it
    on the validation part with a noisy mean of bounded per-record terms
    (Gaussian noise). Two selection rules:

    ``selection="repeat_and_select"`` (default; [PS22]_)
        Draw the number of runs K at random (mean ``n_iter``, distribution
        ``shape``), run K candidates drawn uniformly from ``param_grid`` (or
        from ``param_distributions``), and release only the run with the best
        noisy score. Accounted by
        ``RepeatAndSelectDpEvent(candidate_event, n_iter, shape)`` with the RDP
        accountant. Neither K nor the other runs are released -- the analysis
        needs them hidden -- so ``cv_results_`` has one row.
    ``selection="exhaustive"``
        Run every grid candidate (or ``n_iter`` public draws from
        ``param_distributions``) once and release all noisy scores; accounted
        as the composition of the candidate runs (PLD accountant, or RDP).
        Works with every solver, including those accounted as a generic
        (epsilon, delta) event (``objective_perturbation``).

    The per-candidate budget ``epsilon_c`` is the largest value (bisection to
    0.1 %) for which the accountant certifies the whole selection event -- and
    the refit, if any -- at the requested (``epsilon``, ``delta``). Within a
    run, the fit gets ``(1 - score_fraction) * epsilon_c`` and the noisy score
    a Gaussian mechanism calibrated to ``(score_fraction * epsilon_c,
    delta_c)``; both are in the run's event, ``ComposedDpEvent([fit, score])``.
    Calibration needs each candidate's event before the data is used: it is
    obtained by fitting the candidate on public synthetic data of the same shape
    (events are data-independent, SPEC P4), and every real fit's event is then
    checked against it (a mismatch raises ``RuntimeError``).

    Parameters
    ----------
    estimator : dp_sklearn estimator or Pipeline
        Has exactly one ``epsilon`` / ``delta`` parameter (possibly nested, as in
        ``"dplogisticregression__epsilon"``); the search sets them. Any non-DP
        step of a Pipeline must not learn from the data (or be fitted on public
        data): only the DP step's release is accounted.
    param_grid : dict or list of dicts, default=None
        As in :class:`sklearn.model_selection.GridSearchCV`; must not contain the
        privacy parameters. Exactly one of ``param_grid`` and
        ``param_distributions`` is given.
    param_distributions : dict or list of dicts, default=None
        As in :class:`sklearn.model_selection.RandomizedSearchCV`: lists are
        sampled uniformly, objects with ``rvs`` (scipy.stats) are sampled.
    epsilon : float
        Total privacy loss of the whole search, in nats, > 0 (keyword-only).
    delta : float
        Total delta, in (0, 1) (keyword-only).
    n_iter : float or int, default=None
        ``"repeat_and_select"``: mean number of candidate runs, >= 1; ``None``
        uses 3 x the grid size (``param_grid``) or 10 (``param_distributions``).
        ``"exhaustive"``: number of draws from ``param_distributions`` (default
        10); must be None with ``param_grid``.
    selection : {"repeat_and_select", "exhaustive"}, default="repeat_and_select"
    shape : float, default=1.0
        Distribution of the number of runs for repeat-and-select: ``0``
        logarithmic, ``1`` geometric, ``(0, inf)`` truncated negative binomial,
        ``numpy.inf`` Poisson ([PS22]_, Theorems 2 and 6). Larger shapes
        concentrate K (fewer missed candidates) but cost more budget.
    scoring : {"accuracy", "neg_mean_squared_error", "neg_mean_absolute_error"} or callable, default=None
        ``None``: ``"accuracy"`` for classifiers, ``"neg_mean_squared_error"``
        for regressors. A callable ``f(y_true, y_pred) -> ndarray of shape
        (n_val,)`` returns per-record terms (larger is better) and needs
        ``score_bounds``. Scores that are not means of per-record terms (ROC
        AUC, R^2) are not supported: their sensitivity is not bounded.
    score_bounds : tuple (low, high), default=None
        Public range of the per-record terms; terms are clipped to it, so the
        mean has l2 sensitivity ``(high - low) / n_val`` under replace-one.
        ``None``: (0, 1) for accuracy; for the regression scores
        ``(-(hi - lo)^2, 0)`` and ``(-(hi - lo), 0)`` from the estimator's
        ``bounds_y=(lo, hi)`` (required then).
    score_fraction : float, default=0.4
        Share of ``epsilon_c`` given to the noisy score, in (0, 1).
    cv : float, default=0.3
        Validation fraction of the single public random split, in (0, 1).
        k-fold CV is not offered: every fold is another private fit.
    random_state : int, numpy.random.Generator or None, default=None
        Drives the split, the candidate draws, K, the score noise and the seeds
        of the candidate fits. ``None`` draws fresh OS entropy; do not publish
        results obtained with a fixed seed.
    ledger : dp_sklearn.PrivacyLedger, default=None
        Checked before the data is used (with the exact event of the search)
        and recorded into afterwards, once, with the search's total event. If
        None and the estimator carries a ledger, that one is used. Ledgers on
        the estimator are never used by the internal fits.
    refit : bool or float, default=True
        ``True``: ``best_estimator_`` is the selected run's model, fitted on the
        training part (no extra cost). ``False``: no model is kept (same
        accounting). A float ``r`` in (0, 1): refit the selected candidate on
        all the data with ``(r * epsilon, delta / 2)``; the selection is then
        calibrated so that selection and refit together meet
        (``epsilon``, ``delta``) (the refit's event is the worst over the
        candidates, so the total does not depend on which one wins).
    verbose : int, default=0
        > 0 prints the public calibration (never scores or K).

    Attributes
    ----------
    best_params_ : dict or None
        Selected hyperparameters (None if a Poisson draw gave K = 0).
    best_estimator_ : estimator
        See ``refit``. Its own ``epsilon_`` is the per-candidate fit budget; the
        search's total is ``epsilon_``.
    best_score_ : float
        Noisy validation score of the selected run (may leave ``score_bounds``).
    best_index_ : int
        Index of ``best_params_`` in ``ParameterGrid(param_grid)`` (grid) or in
        ``cv_results_["params"]`` (exhaustive); -1 otherwise.
    cv_results_ : dict of arrays
        Released quantities only: ``params``, ``param_<name>``,
        ``mean_test_score`` (noisy), ``rank_test_score``. One row for
        repeat-and-select, one per candidate for exhaustive.
    dp_event_ : dp_accounting.DpEvent
        The whole release: ``RepeatAndSelectDpEvent(...)`` or
        ``ComposedDpEvent([...])``, composed with the refit's event if any.
    epsilon_ : float
        Accounted epsilon of ``dp_event_`` at ``delta_``, in nats (<= ``epsilon``).
    delta_ : float
        The requested ``delta``.
    candidate_epsilon_ : float
        ``epsilon_c``, the per-run budget.
    fit_epsilon_, fit_delta_ : float
        Budget of each candidate fit.
    score_noise_std_ : float
        Standard deviation of the Gaussian noise on a validation score.
    n_train_, n_val_ : int
        Sizes of the two parts (public).
    n_features_in_ : int
    classes_ : ndarray
        Of the selected model (classifiers).

    Raises
    ------
    ValueError
        From ``fit``: invalid parameters; both or neither of ``param_grid`` and
        ``param_distributions``; a grid that sets epsilon/delta; a scoring that
        is not a mean of bounded terms; repeat-and-select over an estimator
        whose event the RDP accountant does not support (use
        ``selection="exhaustive"`` or a Gaussian/zCDP solver); a budget too
        small to calibrate.
    dp_sklearn.ledger.BudgetExceededError
        If ``ledger`` would go over its cap (raised before the data is used).
    RuntimeError
        If a real fit's event differs from its calibration (an estimator whose
        event depends on the data, which SPEC P4 forbids).

    Notes
    -----
    Privacy argument: the split, the candidate draws and K use randomness
    independent of the data. Each run is a composition of the fit on the
    training part and the noisy mean on the validation part, with event
    ``ComposedDpEvent([fit_event, GaussianDpEvent(z_score)])``; a candidate
    drawn at random is a mixture of such runs, whose RDP is at most the
    largest RDP curve among the candidates (joint quasi-convexity of Renyi
    divergence), which the event used here dominates. [PS22]_ (Theorems 2, 6)
    then bound the release of the best run. The number of runs, the runs not
    selected and the running time must stay hidden (``verbose`` never prints
    them; the running time of the search is a side channel this
    implementation does not close).

    Examples
    --------
    >>> from sklearn.datasets import load_breast_cancer
    >>> from sklearn.preprocessing import StandardScaler
    >>> from dp_sklearn import DPLogisticRegression
    >>> from dp_sklearn.model_selection import DPGridSearchCV
    >>> X, y = load_breast_cancer(return_X_y=True)
    >>> X = StandardScaler().fit_transform(X)  # illustration only: not private
    >>> search = DPGridSearchCV(DPLogisticRegression(solver="noisy_gd"),
    ...                         {"C": [0.1, 1.0, 10.0]}, epsilon=2.0, delta=1e-5,
    ...                         random_state=0).fit(X, y)
    >>> search.epsilon_ <= 2.0
    True
    """

    _required_parameters = ["estimator"]

    def __init__(self, estimator, param_grid=None, param_distributions=None, *, epsilon, delta, n_iter=None,
                 selection="repeat_and_select", shape=1.0, scoring=None, score_bounds=None, score_fraction=0.4,
                 cv=0.3, random_state=None, ledger=None, refit=True, verbose=0):
        self.estimator = estimator
        self.param_grid = param_grid
        self.param_distributions = param_distributions
        self.epsilon = epsilon
        self.delta = delta
        self.n_iter = n_iter
        self.selection = selection
        self.shape = shape
        self.scoring = scoring
        self.score_bounds = score_bounds
        self.score_fraction = score_fraction
        self.cv = cv
        self.random_state = random_state
        self.ledger = ledger
        self.refit = refit
        self.verbose = verbose

    # ------------------------------------------------------------------ validation
    def _validate_params_(self):
        def real(v):
            return isinstance(v, numbers.Real) and not isinstance(v, bool) and not np.isnan(v)

        if not (real(self.epsilon) and 0 < self.epsilon < np.inf):
            raise ValueError(f"epsilon must be a finite number > 0, got {self.epsilon!r}.")
        if not (real(self.delta) and 0 < self.delta < 1):
            raise ValueError(f"delta must be in (0, 1) (the validation score uses Gaussian noise), got {self.delta!r}.")
        if self.selection not in ("repeat_and_select", "exhaustive"):
            raise ValueError(f"selection must be 'repeat_and_select' or 'exhaustive', got {self.selection!r}.")
        if not (real(self.shape) and self.shape >= 0):
            raise ValueError(f"shape must be a number >= 0 (numpy.inf for Poisson), got {self.shape!r}.")
        if not (real(self.score_fraction) and 0 < self.score_fraction < 1):
            raise ValueError(f"score_fraction must be in (0, 1), got {self.score_fraction!r}.")
        if not (real(self.cv) and 0 < self.cv < 1):
            raise ValueError(
                f"cv must be the validation fraction in (0, 1), got {self.cv!r}; k-fold cross-validation is not "
                "offered because every fold is another private fit."
            )
        if not (self.refit is True or self.refit is False or (real(self.refit) and 0 < self.refit < 1)):
            raise ValueError(f"refit must be True, False or a budget fraction in (0, 1), got {self.refit!r}.")
        if (self.param_grid is None) == (self.param_distributions is None):
            raise ValueError("Pass exactly one of param_grid and param_distributions.")
        if self.n_iter is not None and not (real(self.n_iter) and self.n_iter >= 1):
            raise ValueError(f"n_iter must be None or a number >= 1, got {self.n_iter!r}.")
        if self.selection == "exhaustive" and self.param_grid is not None and self.n_iter is not None:
            raise ValueError(
                "n_iter must be None with selection='exhaustive' and a param_grid (every candidate runs once)."
            )
        if self.selection == "exhaustive" and self.n_iter is not None and int(self.n_iter) != self.n_iter:
            raise ValueError(f"n_iter must be an integer with selection='exhaustive', got {self.n_iter!r}.")

    def _param_keys(self):
        params = self.estimator.get_params(deep=True)

        def keys(name):
            return [k for k in params if k == name or k.endswith("__" + name)]

        eps_keys, delta_keys = keys("epsilon"), keys("delta")
        if len(eps_keys) != 1 or len(delta_keys) != 1:
            raise ValueError(
                f"estimator must have exactly one 'epsilon' and one 'delta' parameter (a dp_sklearn estimator, or a "
                f"Pipeline with one DP step); found {eps_keys} and {delta_keys}."
            )
        ledgers = [params[k] for k in keys("ledger") if params[k] is not None]
        bounds = [params[k] for k in keys("bounds_y") if params[k] is not None]
        return eps_keys[0], delta_keys[0], keys("ledger"), keys("random_state"), ledgers, bounds

    def _check_grid_keys(self, dicts, eps_key, delta_key):
        for d in dicts:
            bad = [k for k in d if k in (eps_key, delta_key) or k.endswith("ledger")]
            if bad:
                raise ValueError(f"The search sets {bad} itself; remove them from the parameter grid.")

    def _scorer(self, is_clf, bounds_y):
        scoring = self.scoring
        if scoring is None:
            scoring = "accuracy" if is_clf else "neg_mean_squared_error"
        if callable(scoring):
            func = scoring
            if self.score_bounds is None:
                raise ValueError("A callable scoring needs score_bounds=(low, high) for its per-record terms.")
        elif scoring in _SCORERS:
            func = _SCORERS[scoring]
        else:
            raise ValueError(
                f"scoring must be one of {sorted(_SCORERS)} or a callable returning per-record terms, got "
                f"{scoring!r}: a private score must be a mean of bounded per-record terms."
            )
        if self.score_bounds is not None:
            try:
                lo, hi = (float(v) for v in self.score_bounds)
            except (TypeError, ValueError):
                raise ValueError(f"score_bounds must be a pair (low, high), got {self.score_bounds!r}.") from None
        elif scoring == "accuracy":
            lo, hi = 0.0, 1.0
        else:
            if not bounds_y:
                raise ValueError(
                    f"scoring={scoring!r} needs a public bound on the per-record error: pass score_bounds, or set "
                    "bounds_y on the estimator."
                )
            width = float(bounds_y[0][1]) - float(bounds_y[0][0])
            lo, hi = (-(width**2), 0.0) if scoring == "neg_mean_squared_error" else (-width, 0.0)
        if not (np.isfinite(lo) and np.isfinite(hi) and lo < hi):
            raise ValueError(f"score_bounds must be finite with low < high, got {(lo, hi)!r}.")
        return func, lo, hi

    # ------------------------------------------------------------------ candidates
    @staticmethod
    def _as_list(spec, name):
        if isinstance(spec, Mapping):
            return [spec]
        if isinstance(spec, Sequence) and spec and all(isinstance(d, Mapping) for d in spec):
            return list(spec)
        raise TypeError(f"{name} must be a dict or a non-empty list of dicts, got {spec!r}.")

    @staticmethod
    def _draw(dists, rng):
        d = dists[int(rng.integers(len(dists)))]
        out = {}
        for k in sorted(d):
            v = d[k]
            if hasattr(v, "rvs"):
                out[k] = v.rvs(random_state=rng)
            else:
                v = list(v)
                if not v:
                    raise ValueError(f"param_distributions[{k!r}] is empty.")
                out[k] = v[int(rng.integers(len(v)))]
        return out

    def _make(self, params, eps, delta, seed):
        est = clone(self.estimator)
        over = {self._eps_key: float(eps), self._delta_key: float(delta)}
        over.update({k: None for k in self._ledger_keys})
        if seed is not None:
            over.update({k: int(seed) for k in self._rs_keys if k not in params})
        over.update(params)
        return est.set_params(**over)

    def _dry_event(self, params, eps, delta, Xs, ys):
        est = self._make(params, eps, delta, seed=0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                est.fit(Xs, ys)
            except Exception as exc:  # noqa: BLE001 - reported with context
                raise ValueError(
                    f"Calibration dry-run of {type(est).__name__} with {params} on public synthetic data of the "
                    f"same shape failed ({type(exc).__name__}: {exc}); DPGridSearchCV needs estimators that accept "
                    "numeric input of that shape."
                ) from exc
        return _released_event(est)

    # ------------------------------------------------------------------ fit
    def fit(self, X, y):
        """Select hyperparameters privately.

        Parameters
        ----------
        X : {array-like, sparse matrix, DataFrame} of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)

        Returns
        -------
        self : DPGridSearchCV
        """
        self._validate_params_()
        (self._eps_key, self._delta_key, self._ledger_keys, self._rs_keys, inner_ledgers,
         bounds_y) = self._param_keys()
        is_clf = is_classifier(self.estimator)
        score_func, lo, hi = self._scorer(is_clf, bounds_y)
        if y is None:
            raise ValueError("DPGridSearchCV requires y.")
        n = _num_samples(X)
        if _num_samples(y) != n:
            raise ValueError(f"X and y have inconsistent numbers of samples: {n} and {_num_samples(y)}.")
        y = np.asarray(y)
        n_val = int(round(self.cv * n))
        n_tr = n - n_val
        if n_val < 1 or n_tr < 2:
            raise ValueError(f"cv={self.cv} leaves {n_tr} training and {n_val} validation rows out of {n}.")
        rng = self.random_state if isinstance(self.random_state, np.random.Generator) else (
            np.random.default_rng(self.random_state))
        eps_total, delta_total = float(self.epsilon), float(self.delta)
        rs = self.selection == "repeat_and_select"

        # ---- candidates (public) ------------------------------------------------
        grid = None
        if self.param_grid is not None:
            dicts = self._as_list(self.param_grid, "param_grid")
            self._check_grid_keys(dicts, self._eps_key, self._delta_key)
            grid = list(ParameterGrid(self.param_grid))
            candidates = grid
        else:
            dists = self._as_list(self.param_distributions, "param_distributions")
            self._check_grid_keys(dists, self._eps_key, self._delta_key)
            cal_rng = np.random.default_rng(rng.integers(2**63))
            n_draw = _N_CALIBRATION_DRAWS if rs else int(self.n_iter if self.n_iter is not None else 10)
            candidates = [self._draw(dists, cal_rng) for _ in range(n_draw)]
        n_cand = len(candidates)
        mean_k = None
        if rs:
            mean_k = float(self.n_iter) if self.n_iter is not None else float(3 * n_cand if grid is not None else 10)
        # Calibration knobs: per-run delta (RDP-only analysis: a knob; exhaustive: a share of delta).
        delta_c = delta_total if rs else delta_total / (2.0 * n_cand)
        refit_frac = None if isinstance(self.refit, bool) else float(self.refit)

        # ---- calibration on public synthetic data (the data is not used) --------------
        syn_rng = np.random.default_rng(12345)
        classes = np.unique(y) if is_clf else None

        def syn(rows):
            Xs = _synthetic_like(X, rows, syn_rng)
            ys = np.resize(classes, rows) if is_clf else np.zeros(rows)
            return Xs, ys

        Xs_tr, ys_tr = syn(n_tr)
        cache = {}

        def fit_event(i, eps_fit):
            key = (i, eps_fit)
            if key not in cache:
                cache[key] = self._dry_event(candidates[i], eps_fit, delta_c, Xs_tr, ys_tr)
            return cache[key]

        def run_events(eps_c):
            eps_fit = (1.0 - self.score_fraction) * eps_c
            z_s = gaussian_noise_multiplier(self.score_fraction * eps_c, delta_c)
            score_ev = dp_event.GaussianDpEvent(z_s)
            return [dp_event.ComposedDpEvent([fit_event(i, eps_fit), score_ev]) for i in range(n_cand)], z_s

        refit_event = None
        if refit_frac is not None:
            Xs_all, ys_all = syn(n)
            refit_events = [self._dry_event(c, refit_frac * eps_total, delta_total / 2.0, Xs_all, ys_all)
                            for c in candidates]
            refit_event = _dominating_event(refit_events)

        def selection_event(eps_c):
            runs, z_s = run_events(eps_c)
            if rs:
                inner = _dominating_event(runs)
                try:
                    _rdp_curve(inner)
                except UnsupportedEventError:
                    raise ValueError(
                        "selection='repeat_and_select' is accounted by the RDP accountant, which does not support "
                        f"the candidates' event {inner}. Use a solver with a Gaussian or zCDP event "
                        "(e.g. solver='noisy_gd' or 'output_perturbation'), or selection='exhaustive'."
                    ) from None
                ev = dp_event.RepeatAndSelectDpEvent(inner, mean_k, float(self.shape))
            else:
                inner = None
                ev = dp_event.ComposedDpEvent(runs)
            total = ev if refit_event is None else dp_event.ComposedDpEvent([ev, refit_event])
            return total, inner, runs, z_s

        def accounted(eps_c):
            return compose_epsilon([selection_event(eps_c)[0]], delta_total)

        hi_c = eps_total
        if accounted(hi_c) <= eps_total:
            eps_c = hi_c
        else:
            lo_c = hi_c
            for _ in range(40):
                lo_c /= 2.0
                if accounted(lo_c) <= eps_total:
                    break
            else:
                raise ValueError(
                    f"The budget epsilon={eps_total:g} is too small to calibrate {self.selection} with these "
                    "settings (try a smaller n_iter, shape or refit share)."
                )
            hi_c = 2.0 * lo_c
            while hi_c / lo_c > 1.001:
                mid = math.sqrt(lo_c * hi_c)
                if accounted(mid) <= eps_total:
                    lo_c = mid
                else:
                    hi_c = mid
            eps_c = lo_c
        total_event, inner, runs, z_s = selection_event(eps_c)
        eps_fit = (1.0 - self.score_fraction) * eps_c
        sens = (hi - lo) / n_val
        noise_std = z_s * sens
        epsilon_spent = compose_epsilon([total_event], delta_total)
        if self.verbose:
            print(f"[DPGridSearchCV] {self.selection}: {n_cand} calibration candidates, per-run epsilon_c="
                  f"{eps_c:.4g} (fit {eps_fit:.4g}, delta {delta_c:.3g}), score noise std={noise_std:.4g}, "
                  f"total epsilon={epsilon_spent:.4g} at delta={delta_total:g}")

        # ---- ledger: check before the data is used ---------------------------------
        targets = [self.ledger] if self.ledger is not None else _unique(inner_ledgers)
        for led in targets:
            led.check(epsilon_spent, delta_total, event=total_event, label=type(self).__name__)

        # ---- the private runs ------------------------------------------------------
        perm = rng.permutation(n)
        idx_val, idx_tr = np.sort(perm[:n_val]), np.sort(perm[n_val:])
        X_tr, y_tr = _safe_indexing(X, idx_tr), y[idx_tr]
        X_val, y_val = _safe_indexing(X, idx_val), y[idx_val]

        def run(params, bound_event):
            est = self._make(params, eps_fit, delta_c, seed=rng.integers(2**31 - 1))
            est.fit(X_tr, y_tr)
            ev = dp_event.ComposedDpEvent([_released_event(est), dp_event.GaussianDpEvent(z_s)])
            if not _covered(ev, bound_event):
                raise RuntimeError(
                    f"The event of the fit with {params} ({ev}) is not covered by its calibration ({bound_event}): "
                    "the estimator's event depends on the data, which dp_sklearn forbids (SPEC P4)."
                )
            terms = np.clip(np.asarray(score_func(y_val, est.predict(X_val)), dtype=float), lo, hi)
            if terms.shape != (n_val,):
                raise ValueError(f"scoring must return one term per validation row, got shape {terms.shape}.")
            return est, float(terms.mean() + rng.normal(0.0, noise_std))

        results = []  # (params, noisy score, model, index)
        if rs:
            K = sample_repetitions(rng, mean_k, float(self.shape))
            best = None
            for _ in range(K):
                params = candidates[int(rng.integers(n_cand))] if grid is not None else self._draw(dists, rng)
                est, s = run(params, inner)
                if best is None or s > best[1]:
                    best = (params, s, est)
            if best is not None:
                bi = grid.index(best[0]) if grid is not None else -1
                results = [(best[0], best[1], best[2], bi)]
        else:
            for i, params in enumerate(candidates):
                est, s = run(params, runs[i])
                results.append((params, s, est, i))

        # ---- release --------------------------------------------------------------
        self.dp_event_ = total_event
        self.epsilon_ = float(epsilon_spent)
        self.delta_ = delta_total
        self.candidate_epsilon_ = float(eps_c)
        self.fit_epsilon_, self.fit_delta_ = float(eps_fit), float(delta_c)
        self.score_noise_std_ = float(noise_std)
        self.n_train_, self.n_val_ = n_tr, n_val
        self.n_features_in_ = X.shape[1]
        if hasattr(X, "columns"):
            self.feature_names_in_ = np.asarray(X.columns, dtype=object)
        self.scorer_ = self.scoring if self.scoring is not None else (
            "accuracy" if is_clf else "neg_mean_squared_error")
        self.cv_results_ = self._results_dict(results)
        if results:
            scores = [r[1] for r in results]
            b = int(np.argmax(scores))
            self.best_params_, self.best_score_ = results[b][0], float(results[b][1])
            self.best_index_ = results[b][3]
            if self.refit is True:
                self.best_estimator_ = results[b][2]
            elif refit_frac is not None:
                est = self._make(self.best_params_, refit_frac * eps_total, delta_total / 2.0,
                                 seed=rng.integers(2**31 - 1))
                est.fit(X, y)
                if not _covered(_released_event(est), refit_event):
                    raise RuntimeError("The refit's event is not covered by its calibration (SPEC P4).")
                self.best_estimator_ = est
        else:
            warnings.warn("The Poisson draw gave K = 0 runs: nothing was selected.", UserWarning, stacklevel=2)
            self.best_params_, self.best_score_, self.best_index_ = None, float("nan"), -1
        for led in targets:
            led.record(self.dp_event_, self.epsilon_, self.delta_, label=type(self).__name__)
        return self

    @staticmethod
    def _results_dict(results):
        params = [r[0] for r in results]
        scores = np.array([r[1] for r in results], dtype=float)
        out = {"params": params, "mean_test_score": scores}
        names = sorted({k for p in params for k in p})
        for name in names:
            col = np.ma.MaskedArray(np.empty(len(params), dtype=object), mask=True)
            for i, p in enumerate(params):
                if name in p:
                    col[i] = p[name]
            out[f"param_{name}"] = col
        order = np.argsort(-scores, kind="stable")
        ranks = np.empty(len(scores), dtype=np.int32)
        ranks[order] = np.arange(1, len(scores) + 1)
        out["rank_test_score"] = ranks
        return out

    # ------------------------------------------------------------------ delegation
    def _has(attr):  # noqa: N805 - used as a decorator factory below
        def check(self):
            if hasattr(self, "best_estimator_"):
                return hasattr(self.best_estimator_, attr)
            return hasattr(self.estimator, attr)

        return check

    @available_if(_has("predict"))
    def predict(self, X):
        """Predict with ``best_estimator_``. X : array-like of shape (n_samples, n_features)."""
        check_is_fitted(self, "best_estimator_")
        return self.best_estimator_.predict(X)

    @available_if(_has("predict_proba"))
    def predict_proba(self, X):
        """``best_estimator_.predict_proba``; returns ndarray of shape (n_samples, n_classes)."""
        check_is_fitted(self, "best_estimator_")
        return self.best_estimator_.predict_proba(X)

    @available_if(_has("decision_function"))
    def decision_function(self, X):
        """``best_estimator_.decision_function``."""
        check_is_fitted(self, "best_estimator_")
        return self.best_estimator_.decision_function(X)

    @available_if(_has("score"))
    def score(self, X, y):
        """``best_estimator_.score`` on data you hold (not a private release)."""
        check_is_fitted(self, "best_estimator_")
        return self.best_estimator_.score(X, y)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        sub = get_tags(self.estimator)
        tags.estimator_type = sub.estimator_type
        tags.classifier_tags = copy.deepcopy(sub.classifier_tags)
        tags.regressor_tags = copy.deepcopy(sub.regressor_tags)
        tags.input_tags.sparse = sub.input_tags.sparse
        tags.non_deterministic = True
        return tags

    @property
    def classes_(self):
        """Classes of ``best_estimator_`` (classifiers)."""
        check_is_fitted(self, "best_estimator_")
        return self.best_estimator_.classes_

    del _has
