"""The fit template of the private searches (scikit-learn's ``BaseSearchCV`` / ``_run_search`` split).

``_BaseDPSearch.fit`` validates everything (hyperparameters, data, candidates, the
calibration on public synthetic data), reserves the budget in the ledger, runs the
candidates that the subclass's ``_run_search`` asks for, and releases the selected
model. Subclasses say which candidates exist (``_candidate_pool``) and how runs are
chosen (``_run_search``).
"""

from __future__ import annotations

import copy
import warnings
from contextlib import contextmanager
from functools import partial

import numpy as np
import scipy.sparse as sp
from dp_accounting import dp_event
from sklearn.base import BaseEstimator, MetaEstimatorMixin, _fit_context, is_classifier
from sklearn.utils import _safe_indexing, get_tags
from sklearn.utils.metaestimators import available_if
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_array, check_consistent_length, check_is_fitted, column_or_1d, validate_data

from .._progress import MAX_STEP_LINES, progress
from .._release import private_fit, seed_sequence
from ._calibration import Calibrator
from ._estimator import (EstimatorSpec, check_categories, column_categories, public_label_set, released_event,
                         synthetic_like)
from ._repeat_select import covered
from ._scoring import noisy_score, resolve_scorer

__all__ = ["_BaseDPSearch"]

def _synthetic_pair(X, classes, categories, rng, rows):
    """Public synthetic (X, y) of ``rows`` rows with the layout of X and the public label set."""
    ys = np.resize(classes, rows) if classes is not None else np.zeros(rows)
    return synthetic_like(X, rows, rng, categories), ys


@contextmanager
def _withhold_warnings():
    """Drop every warning of the runs on the private data: none leaves the search.

    Whether a fit on the private data warns (and how many of the hidden number of runs
    did) can depend on the data (an encoder meeting an unseen category, a scikit-learn
    step that does not converge): the search emits no such warning.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


class _Runs:
    """Runs candidates on the private split: a DP fit plus a noisy validation score."""

    def __init__(self, spec, plan, data, scorer, noise_std, rng, seeds):
        self.spec, self.plan, self.scorer, self.noise_std = spec, plan, scorer, noise_std
        self.X_tr, self.y_tr, self.X_val, self.y_val = data
        self.rng, self.seeds = rng, seeds

    def fit(self, params, epsilon, delta, X, y, bound, score_event=None):
        """One private fit; its event (with ``score_event``) must be covered by the public ``bound``."""
        est = self.spec.make(params, epsilon, delta, self.seeds.spawn(1)[0])
        est.fit(X, y)  # inside the search's release: it reports its draws there
        self.spec.restore(est)
        ev = released_event(est)
        if score_event is not None:
            ev = dp_event.ComposedDpEvent([ev, score_event])
        if not covered(ev, bound):
            raise RuntimeError(
                f"The event of the fit with {params} ({ev}) is not covered by its calibration ({bound}): the "
                "estimator's event depends on the data, which dp_sklearn forbids (docs/privacy.md)."
            )
        return est

    def __call__(self, params, bound):
        """Fit ``params`` on the training part; return (noisy validation score, model)."""
        est = self.fit(params, self.plan.eps_fit, self.plan.delta_c, self.X_tr, self.y_tr, bound,
                       dp_event.GaussianDpEvent(self.plan.z_score))
        score = noisy_score(*self.scorer, self.y_val, est.predict(self.X_val), self.noise_std, self.rng)
        return score, est


class _BaseDPSearch(MetaEstimatorMixin, BaseEstimator):
    """Fit template shared by the private searches (see :class:`DPGridSearchCV`)."""

    _required_parameters = ["estimator"]

    def _check_data(self, X, y, is_clf, categories):
        """Validate X and y as the inner fits will (before any budget is reserved)."""
        if y is None:
            raise ValueError(f"{type(self).__name__} requires y.")
        check_array(X, accept_sparse=True, dtype=None if categories else "numeric", ensure_min_samples=3,
                    input_name="X")
        validate_data(self, X, skip_check_array=True)
        check_consistent_length(X, y)
        check_categories(self.estimator, X)
        y = column_or_1d(y, warn=True)
        if is_clf:
            check_classification_targets(y)
            if np.unique(y).size < 2:
                raise ValueError("y has a single class: a classifier needs at least two classes.")
        else:
            y = check_array(y, ensure_2d=False, dtype=np.float64, input_name="y")
        return X, y

    _label_set = staticmethod(public_label_set)

    @staticmethod
    def _split(X, y, n_val, rng):
        """Uniformly random validation part of ``n_val`` rows; nothing here depends on the values."""
        perm = rng.permutation(y.shape[0])
        idx_val, idx_tr = np.sort(perm[:n_val]), np.sort(perm[n_val:])
        return _safe_indexing(X, idx_tr), y[idx_tr], _safe_indexing(X, idx_val), y[idx_val]

    def _ledgers(self, spec):
        """Where the search is reserved and recorded: its own ledger, else every distinct inner one."""
        return [self.ledger] if self.ledger is not None else spec.inner_ledgers

    @_fit_context(prefer_skip_nested_validation=False)
    def fit(self, X, y):
        """Select hyperparameters privately.

        Parameters
        ----------
        X : {array-like, sparse matrix, DataFrame} of shape (n_samples, n_features)
            Training data; may hold categorical columns when the estimator
            starts with an encoder with explicit public categories.
        y : array-like of shape (n_samples,)
            Targets.

        Returns
        -------
        self : object
            The fitted search.
        """
        # no line from the internal fits (their number is secret): only the search's own
        with progress(type(self).__name__, self.verbose, inner_silent=True) as report:
            return self._fit(X, y, report)

    def _fit(self, X, y, report):
        spec = EstimatorSpec(self.estimator)
        # Repeat-and-select is accounted for full-batch runs: a DP step left at
        # batch_size=None (sampled by default at large n) fits full batches here.
        spec.full_batch = self.selection == "repeat_and_select"
        self._check_semantics(spec)
        is_clf = is_classifier(self.estimator)
        scorer = resolve_scorer(self.scoring, self.score_bounds, is_clf, spec.bounds_y)
        if not hasattr(X, "shape"):  # lists: an array of the inferred dtype (object for mixed columns)
            X = check_array(X, dtype=None, ensure_all_finite=False, input_name="X")
        categories = column_categories(self.estimator, X)
        check_categories(self.estimator, X)  # an unknown category would raise after the reservation
        X, y = self._check_data(X, y, is_clf, categories)
        if sp.issparse(X) and X.format not in ("csr", "csc"):  # COO, DIA, BSR: not row-indexable
            X = X.tocsr()
        labels = self._label_set(spec, y) if is_clf else None
        n = y.shape[0]
        n_val = int(round(self.cv * n))
        if n_val < 1 or n - n_val < 2:
            raise ValueError(f"cv={self.cv} leaves {n - n_val} training and {n_val} validation rows out of {n}.")
        ss_main, ss_fits = seed_sequence(self.random_state).spawn(2)
        rng = np.random.default_rng(ss_main)
        candidates, grid = self._candidate_pool(spec, rng)
        synthetic = partial(_synthetic_pair, X, labels, categories,
                            np.random.default_rng(12345))  # public stand-in data
        calibrator = Calibrator(spec, candidates, synthetic, n - n_val, n, delta_c=self._run_delta(len(candidates)),
                                score_fraction=self.score_fraction, selection=self.selection,
                                mean_k=self._mean_k(len(candidates), grid), shape=float(self.shape),
                                refit=None if isinstance(self.refit, bool) else float(self.refit))
        plan = calibrator.solve(float(self.epsilon), float(self.delta))
        noise_std = plan.z_score * (scorer[2] - scorer[1]) / n_val
        if self.verbose:
            print(f"[{type(self).__name__}] {self.selection}: {len(candidates)} calibration candidates, per-run "
                  f"epsilon_c={plan.eps_c:.4g} (fit {plan.eps_fit:.4g}, delta {plan.delta_c:.3g}), score noise "
                  f"std={noise_std:.4g}, total epsilon={plan.epsilon:.4g} at delta={float(self.delta):g}")
        data = self._split(X, y, n_val, rng)
        runs = _Runs(spec, plan, data, scorer, noise_std, rng, ss_fits)
        with private_fit(self, plan.total_event, ledgers=self._ledgers(spec), epsilon=plan.epsilon,
                         delta=self.delta) as release:
            release.track(rng)  # the split is drawn; the scores' noise and the runs draw from here on
            with _withhold_warnings():
                results = self._run_search(self._reporting(runs, len(candidates), report), candidates, grid, plan, rng)
                best = self._select(results)
                if best is not None and plan.refit_event is not None:  # refit on all the data
                    best = best[:2] + (runs.fit(best[0], calibrator.refit * float(self.epsilon),
                                                float(self.delta) / 2, X, y, plan.refit_event), best[3])
            self._release(plan, results, best, noise_std, (n - n_val, n_val), is_clf)
        return self

    def _reporting(self, runs, n_candidates, report):
        """``runs``, printing "run k of N" at most ``MAX_STEP_LINES`` times in an exhaustive verbose search.

        Repeat-and-select prints nothing per run: its number of runs is part of the
        mechanism's hidden randomness (the guarantee of Papernot & Steinke 2022 is for
        the selected run alone, the count unseen), so it is never printed.
        """
        if report is None or self.selection != "exhaustive":
            return runs
        marks = {-(-k * n_candidates // MAX_STEP_LINES) for k in range(1, MAX_STEP_LINES + 1)}
        done = []

        def evaluate(params, bound):
            out = runs(params, bound)
            done.append(None)
            if len(done) in marks:
                report.line(f"run {len(done)} of {n_candidates}")
            return out
        return evaluate

    @staticmethod
    def _select(results):
        if not results:
            return None
        return results[int(np.argmax([r[1] for r in results]))]

    def _release(self, plan, results, best, noise_std, sizes, is_clf):
        self.dp_event_ = plan.total_event
        self.epsilon_, self.delta_ = float(plan.epsilon), float(self.delta)
        self.candidate_epsilon_ = float(plan.eps_c)
        self.fit_epsilon_, self.fit_delta_ = float(plan.eps_fit), float(plan.delta_c)
        self.score_noise_std_ = float(noise_std)
        self.n_train_, self.n_val_ = sizes
        self.scorer_ = self.scoring if self.scoring is not None else (
            "accuracy" if is_clf else "neg_mean_squared_error")
        self.cv_results_ = self._results_dict(results)
        if best is None:
            warnings.warn("The Poisson draw gave K = 0 runs: nothing was selected.", UserWarning, stacklevel=3)
            self.best_params_, self.best_score_, self.best_index_ = None, float("nan"), -1
            return
        self.best_params_, self.best_score_, self.best_index_ = best[0], float(best[1]), best[3]
        if self.refit is not False:
            self.best_estimator_ = best[2]

    @staticmethod
    def _results_dict(results):
        params = [r[0] for r in results]
        scores = np.array([r[1] for r in results], dtype=float)
        out = {"params": params, "mean_test_score": scores}
        for name in sorted({k for p in params for k in p}):
            col = np.ma.MaskedArray(np.empty(len(params), dtype=object), mask=True)
            for i, p in enumerate(params):
                if name in p:
                    col[i] = p[name]
            out[f"param_{name}"] = col
        ranks = np.empty(len(scores), dtype=np.int32)
        ranks[np.argsort(-scores, kind="stable")] = np.arange(1, len(scores) + 1)
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
        """Predict with ``best_estimator_``.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Samples.

        Returns
        -------
        y_pred : ndarray of shape (n_samples,)
            Predictions of the selected model.
        """
        check_is_fitted(self, "best_estimator_")
        return self.best_estimator_.predict(X)

    @available_if(_has("predict_proba"))
    def predict_proba(self, X):
        """Class probabilities from ``best_estimator_``.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Samples.

        Returns
        -------
        proba : ndarray of shape (n_samples, n_classes)
            Probabilities of the selected model.
        """
        check_is_fitted(self, "best_estimator_")
        return self.best_estimator_.predict_proba(X)

    @available_if(_has("decision_function"))
    def decision_function(self, X):
        """Decision function of ``best_estimator_``.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Samples.

        Returns
        -------
        scores : ndarray of shape (n_samples,) or (n_samples, n_classes)
            Decision values of the selected model.
        """
        check_is_fitted(self, "best_estimator_")
        return self.best_estimator_.decision_function(X)

    @available_if(_has("score"))
    def score(self, X, y):
        """Score of ``best_estimator_`` on data you hold (not a private release).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Samples.
        y : array-like of shape (n_samples,)
            True targets.

        Returns
        -------
        score : float
            ``best_estimator_.score(X, y)``.
        """
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
