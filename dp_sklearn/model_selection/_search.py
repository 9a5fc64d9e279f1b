"""DPGridSearchCV: differentially private hyperparameter selection.

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

import math
from collections.abc import Mapping, Sequence
from numbers import Integral, Real

import numpy as np
from sklearn.model_selection import ParameterGrid
from sklearn.utils._param_validation import HasMethods, StrOptions

from .._constraints import Interval
from ..ledger import PrivacyLedger
from ._base import _BaseDPSearch
from ._repeat_select import sample_repetitions

__all__ = ["DPGridSearchCV"]

#: number of public draws from ``param_distributions`` used to calibrate repeat-and-select
_N_CALIBRATION_DRAWS = 16


class DPGridSearchCV(_BaseDPSearch):
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
    (events are data-independent, see ``docs/privacy.md``), and every real
    fit's event is then checked against it (a mismatch raises ``RuntimeError``).

    Parameters
    ----------
    estimator : dp_sklearn estimator or Pipeline
        Has one or more DP steps: steps (at any depth) with both an ``epsilon``
        and a ``delta`` parameter, as in ``"dplogisticregression__epsilon"``;
        the search sets them. With several DP steps (e.g. a DP scaler and a DP
        model), each run's budget is split among them in proportion to the
        ``epsilon`` configured on each (and delta in proportion to the
        configured ``delta``, equal shares if all are 0), and their events are
        composed. Other steps must not learn from the data: stateless
        transformers (``FunctionTransformer``), encoders with explicit public
        categories (``OneHotEncoder(categories=[...])``, no ``min_frequency``
        or ``max_categories``), steps fitted on public data and wrapped in
        ``sklearn.frozen.FrozenEstimator``, and ``Pipeline`` /
        ``ColumnTransformer`` / ``FeatureUnion`` made of those. Any other step
        (e.g. ``StandardScaler``, ``OneHotEncoder(categories="auto")``) is
        refused with a ``ValueError``.
    param_grid : dict or list of dicts, default=None
        As in :class:`sklearn.model_selection.GridSearchCV`; must not contain the
        privacy parameters. Exactly one of ``param_grid`` and
        ``param_distributions`` is given.
    param_distributions : dict or list of dicts, default=None
        As in :class:`sklearn.model_selection.RandomizedSearchCV`: lists are
        sampled uniformly, objects with ``rvs`` (scipy.stats) are sampled.
    epsilon : float
        Total privacy loss of the whole search, in nats, > 0 (keyword-only).
    delta : float, default=1e-5
        Total delta, in (0, 1) (keyword-only), the estimators' default.
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
    random_state : int, numpy.random.RandomState, numpy.random.Generator or None, default=None
        Root of all the search's randomness: a ``numpy.random.SeedSequence``
        drives the split, the candidate draws, K and the score noise, and
        every candidate fit gets its own ``Generator`` spawned from it (the
        inner estimators' ``random_state`` is overridden during the search and
        set back to the user's value afterwards, so no Generator or seed stays
        reachable from the fitted search). ``None`` draws fresh OS entropy. A
        ``RandomState`` or ``Generator`` is consumed to draw 256 bits of seed
        (never reduced to a 31-bit seed). An int makes the search
        reproducible, as in scikit-learn; but then the published model
        carries the key to its own noise: anyone who knows the int can re-run
        the search on candidate datasets and match the released coefficients
        exactly. The same holds for a ``RandomState`` or ``Generator`` kept
        as this parameter (its state can be rewound to the bits drawn). Do
        not publish a search or a model fitted with a fixed seed
        (``docs/privacy.md``).
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
        > 0 prints the public calibration (budgets, noise scale; all functions
        of the hyperparameters and n), never scores, K or anything else that
        depends on the data.

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
        Budget of each candidate fit (of all its DP steps together).
    score_noise_std_ : float
        Standard deviation of the Gaussian noise on a validation score.
    n_train_, n_val_ : int
        Sizes of the two parts (public).
    n_features_in_ : int
        Number of features seen during ``fit``.
    classes_ : ndarray of shape (n_classes,)
        Class labels of the selected model (classifiers).

    Raises
    ------
    ValueError
        From ``fit``: invalid parameters; both or neither of ``param_grid`` and
        ``param_distributions``; a grid that sets epsilon/delta; a scoring that
        is not a mean of bounded terms; repeat-and-select over an estimator
        whose event the RDP accountant does not support (use
        ``selection="exhaustive"`` or a Gaussian/zCDP solver); a budget too
        small to calibrate; under ``selection="repeat_and_select"``, a
        candidate whose event contains a subsampled (``batch_size``) event,
        which is private only under replace-one while the RDP accountant of
        repeat-and-select works under add/remove; a non-private data-fitted
        step; several DP steps of which one has no finite epsilon > 0 to
        split the budget by; invalid data (NaN or inf, inconsistent lengths, one class, labels
        outside the final step's ``classes``, values outside an encoder's public categories);
        a classifier with no ``classes`` parameter on its final step. Everything is validated before the ledger is asked for budget, and a
        reservation is released if the search fails before its first private
        fit.
    dp_sklearn.ledger.BudgetExceededError
        If ``ledger`` would go over its cap (raised before the data is used).
    RuntimeError
        If a real fit's event differs from its calibration (an estimator whose
        event depends on the data, which ``docs/privacy.md`` forbids).

    Warns
    -----
    UserWarning
        Only when a Poisson draw gives no run. Every warning of the internal fits
        is withheld: it could depend on the data, and their number on the hidden
        number of runs (``docs/privacy.md``).

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

    See Also
    --------
    sklearn.model_selection.GridSearchCV : the non-private search it replaces.
    dp_sklearn.model_selection.sample_repetitions : draws the hidden number of runs K.
    dp_sklearn.PrivacyLedger : caps what many searches spend together.

    References
    ----------
    .. [PS22] N. Papernot and T. Steinke, "Hyperparameter tuning with Renyi
       differential privacy", ICLR 2022 (arXiv:2110.03620).

    Examples
    --------
    The scaler inside the tuned pipeline is private too (its share of each run's
    budget follows the epsilons the steps are configured with):

    >>> from sklearn.datasets import load_breast_cancer
    >>> from sklearn.pipeline import make_pipeline
    >>> from dp_sklearn import DPLogisticRegression, DPStandardScaler
    >>> from dp_sklearn.model_selection import DPGridSearchCV
    >>> X, y = load_breast_cancer(return_X_y=True)
    >>> pipe = make_pipeline(DPStandardScaler(epsilon=0.25),
    ...                      DPLogisticRegression(epsilon=0.75, solver="noisy_gd"))
    >>> search = DPGridSearchCV(pipe, {"dplogisticregression__C": [0.1, 1.0, 10.0]},
    ...                         epsilon=2.0, delta=1e-5, random_state=0).fit(X, y)
    >>> search.epsilon_ <= 2.0
    True
    """

    _parameter_constraints: dict = {
        "estimator": [HasMethods(["fit", "get_params"])],
        "param_grid": [dict, list, None],
        "param_distributions": [dict, list, None],
        "epsilon": [Interval(Real, 0, math.inf, closed="neither")],
        "delta": [Interval(Real, 0, 1, closed="neither")],
        "n_iter": [Interval(Real, 1, math.inf, closed="left"), None],
        "selection": [StrOptions({"repeat_and_select", "exhaustive"})],
        "shape": [Interval(Real, 0, math.inf, closed="both")],
        "scoring": [str, callable, None],
        "score_bounds": [tuple, list, np.ndarray, None],
        "score_fraction": [Interval(Real, 0, 1, closed="neither")],
        "cv": [Interval(Real, 0, 1, closed="neither"), Interval(Integral, 2, None, closed="left"),
               HasMethods(["split"])],
        "random_state": [Interval(Integral, 0, None, closed="left"), np.random.RandomState, np.random.Generator,
                         None],
        "ledger": [PrivacyLedger, None],
        "refit": ["boolean", Interval(Real, 0, 1, closed="neither")],
        "verbose": ["verbose"],
    }

    def __init__(self, estimator, param_grid=None, param_distributions=None, *, epsilon, delta=1e-5, n_iter=None,
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
    def _check_semantics(self, spec):
        """Checks across parameters that ``_parameter_constraints`` cannot express."""
        if not isinstance(self.cv, Real) or isinstance(self.cv, Integral):
            raise ValueError(
                f"cv must be the validation fraction in (0, 1), got {self.cv!r}; k-fold cross-validation is not "
                "offered because every fold is another private fit."
            )
        if (self.param_grid is None) == (self.param_distributions is None):
            raise ValueError("Pass exactly one of param_grid and param_distributions.")
        if self.selection == "exhaustive" and self.n_iter is not None:
            if self.param_grid is not None:
                raise ValueError(
                    "n_iter must be None with selection='exhaustive' and a param_grid (every candidate runs once)."
                )
            if int(self.n_iter) != self.n_iter:
                raise ValueError(f"n_iter must be an integer with selection='exhaustive', got {self.n_iter!r}.")
        forbidden = spec.forbidden_keys()
        name = "param_grid" if self.param_grid is not None else "param_distributions"
        for d in self._as_list(getattr(self, name), name):
            bad = sorted(k for k in d if k in forbidden or k.endswith("ledger") or k.endswith("random_state"))
            if bad:
                raise ValueError(f"The search sets {bad} itself; remove them from {name}.")

    @staticmethod
    def _as_list(spec, name):
        if isinstance(spec, Mapping):
            return [spec]
        if isinstance(spec, Sequence) and spec and all(isinstance(d, Mapping) for d in spec):
            return list(spec)
        raise ValueError(f"{name} must be a dict or a non-empty list of dicts, got {spec!r}.")

    def _run_delta(self, n_candidates):
        """Delta of one run: the whole delta (RDP analysis) or a share of it (exhaustive)."""
        if self.selection == "repeat_and_select":
            return float(self.delta)
        return float(self.delta) / (2.0 * n_candidates)

    def _mean_k(self, n_candidates, grid):
        if self.selection != "repeat_and_select":
            return None
        if self.n_iter is not None:
            return float(self.n_iter)
        return float(3 * n_candidates if grid is not None else 10)

    # ------------------------------------------------------------------ candidates
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

    def _candidate_pool(self, spec, rng):
        """Public candidates used for calibration, and the grid (or None for distributions)."""
        if self.param_grid is not None:
            grid = list(ParameterGrid(self.param_grid))
            return grid, grid
        dists = self._as_list(self.param_distributions, "param_distributions")
        cal_rng = np.random.default_rng(rng.integers(2**63))
        rs = self.selection == "repeat_and_select"
        n_draw = _N_CALIBRATION_DRAWS if rs else int(self.n_iter if self.n_iter is not None else 10)
        return [self._draw(dists, cal_rng) for _ in range(n_draw)], None

    def _run_search(self, evaluate, candidates, grid, plan, rng):
        """Run the candidates; returns the released rows ``(params, noisy score, model, index)``.

        ``evaluate(params, bound) -> (noisy score, fitted model)`` runs one
        candidate whose event must be covered by the public ``bound``.
        """
        if self.selection == "exhaustive":
            return [(c, *evaluate(c, plan.runs[i]), i) for i, c in enumerate(candidates)]
        dists = None if grid is not None else self._as_list(self.param_distributions, "param_distributions")
        best = None
        for _ in range(sample_repetitions(rng, self._mean_k(len(candidates), grid), float(self.shape))):
            i = int(rng.integers(len(grid))) if grid is not None else -1
            params = grid[i] if grid is not None else self._draw(dists, rng)
            score, est = evaluate(params, plan.inner)
            if best is None or score > best[1]:
                best = (params, score, est, i)
        return [] if best is None else [best]  # only the selected run is released ([PS22]_)
