"""The regressors' shared target handling: public or private ``bounds_y``, private centering."""

from __future__ import annotations

import warnings

import numpy as np
from sklearn.base import RegressorMixin
from sklearn.utils._param_validation import StrOptions

from .._dask_design import is_dask_collection, normalize_y_dask
from .._data import check_bounds_y, normalize_y
from .._losses import SquaredLoss
from .._private_mean import Y_CENTER_SHARE, private_center, private_center_event
from . import _auto
from ._auto import bounds_y_plan, shrink_factor
from ._base import PRIVACY_CONSTRAINTS, _DPLinearBase
from ._dask_predict import blockwise_on_dask

__all__ = ["REGRESSION_CONSTRAINTS", "_DPRegressorBase"]


class _DPRegressorBase(RegressorMixin, _DPLinearBase):
    """Least-squares targets: public ``bounds_y``, private centering, back-transform."""

    _y_validation = {"y_numeric": True, "multi_output": False}

    def _check_model_params(self):
        if self.bounds_y is None or (isinstance(self.bounds_y, str) and self.bounds_y == "auto"):
            return
        check_bounds_y(self.bounds_y)  # a pair of finite reals (never bools), low < high

    def _encode_targets(self, y):
        if self.bounds_y is None:
            warnings.warn("bounds_y=None: assuming targets in [-1, 1] (targets outside are clipped, so the "
                          "model cannot predict outside it). Pass the public range of y as bounds_y=(low, high), "
                          "or bounds_y='auto' (the default) to estimate it privately.", UserWarning, stacklevel=4)
            self.bounds_y_ = (-1.0, 1.0)
        elif not isinstance(self.bounds_y, str):
            self.bounds_y_ = tuple(float(v) for v in self.bounds_y)  # public: the hyperparameter
        self._n_targets = int(y.shape[0])  # public: sets the share of bounds_y="auto"
        if isinstance(self.bounds_y, str) and self._bounds_y_plan().mode == "center":
            warnings.warn(f"bounds_y='auto' with epsilon * n_samples = {self.epsilon * self._n_targets:.4g}: too "
                          "little to locate the range of y, so the model predicts a private median of y. Pass "
                          "the public range of y as bounds_y=(low, high).", UserWarning, stacklevel=4)
        return y, SquaredLoss()

    def _clip_counts(self, X, y, data_norm):
        low, high = self.bounds_y_  # the public or "auto" range (the centred range used with an intercept contains it)
        return {**super()._clip_counts(X, y, data_norm), "bounds_y": int(np.count_nonzero((y < low) | (y > high)))}

    def _auto_estimates(self):
        auto_y = isinstance(self.bounds_y, str)
        return ("bounds_y",) * auto_y + super()._auto_estimates()

    def _auto_share(self, name):
        if name == "bounds_y":
            return self._bounds_y_plan().share
        return super()._auto_share(name)

    def _shrinks(self):
        """Whether the predictions are shrunk toward the released center (public: the hyperparameters)."""
        return isinstance(self.bounds_y, str) and bool(self.fit_intercept)

    def _bounds_y_plan(self):
        # with an intercept, the shrunk model fits on the "mad" mode's budget up to SHRUNK_MAD_SHARE
        return bounds_y_plan(self.epsilon, self._n_targets, mad_share=_auto.SHRUNK_MAD_SHARE if self._shrinks() else None)

    def _prior_events(self):
        # bounds_y="auto" releases its own center (a private median): no private mean then
        auto_y = isinstance(self.bounds_y, str)
        event = private_center_event(self._model_epsilon()) if self.fit_intercept and not auto_y else None
        return () if event is None else (event,)

    def _solver_epsilon(self):
        eps = self._model_epsilon()
        return (1.0 - Y_CENTER_SHARE) * eps if self._prior_events() else eps

    def _transform_targets(self, y, rng):
        bounds = self.bounds_y_
        if self.fit_intercept and isinstance(self.bounds_y, str):  # the released center of bounds_y="auto"
            low, high = bounds
            r = max(high - self._y_center, self._y_center - low)
            bounds = (self._y_center - r, self._y_center + r)
        elif self.fit_intercept:
            # epsilon = inf: the exact mean, the limit of the private one (same objective).
            bounds = private_center(y, bounds, self._model_epsilon(), rng)
        y_t, mid, half = (normalize_y_dask if is_dask_collection(y) else normalize_y)(y, bounds)
        return y_t, (mid, half)

    def _set_coef(self, coef, intercept, target_map):
        mid, half = target_map
        lam = 1.0
        if self._shrinks():  # toward the released center (post-processing; a public factor)
            lam = shrink_factor(self._solver_epsilon(), self._n_targets)
        self.coef_ = lam * half * coef[:, 0]
        self.intercept_ = float(mid + lam * half * intercept[0]) if self.fit_intercept else 0.0

    @blockwise_on_dask
    def predict(self, X):
        """Predict with the released linear model, clipped to the public ``bounds_y``.

        Parameters
        ----------
        X : {array-like, sparse matrix, dask array or dask DataFrame} of shape (n_samples, n_features)
            Samples. Dask input gives a lazy dask array computed block by block on the
            workers (X never comes to the client).

        Returns
        -------
        y_pred : ndarray or dask.array.Array of shape (n_samples,)
            Predictions, within ``bounds_y_``: ``clip(x) @ coef_ + intercept_`` with the
            row ``x`` clipped to ``data_norm_`` as in training.
        """
        # Post-processing: no target lies outside the public bounds_y, so clipping a
        # prediction to it never increases its error; noise can never make it diverge.
        return np.clip(self._linear_scores(X), *self.bounds_y_)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.regressor_tags.poor_score = True
        return tags


REGRESSION_CONSTRAINTS = {**PRIVACY_CONSTRAINTS, "bounds_y": ["array-like", StrOptions({"auto"}), None]}
