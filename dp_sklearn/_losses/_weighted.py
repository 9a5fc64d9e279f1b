"""Per-record weights on a loss (class weights), with a public bound that the declared constants use."""

from __future__ import annotations

import numpy as np

from ._base import GLMLoss

__all__ = ["WeightedLoss"]


class WeightedLoss(GLMLoss):
    """w_i phi(z_i, y_i) for a base loss phi and weights 0 <= w_i <= ``max_weight`` (public).

    The weights travel with the targets: ``y`` holds the base targets with the weight
    appended as a last column (``(n, 2)`` for a one-output loss, ``(n, K + 1)`` for the
    multinomial loss), so every row subset (Poisson batches) keeps its weights. The
    declared constants (Lipschitz constant, curvature, value at 0) are the base loss's
    times ``max_weight``, which is what the mechanisms that rely on them use; the
    clipping mechanisms clip each weighted per-example gradient, so their sensitivity is
    the clip norm's whatever the weights. Not registered: it is built by an estimator
    from its base loss; the Gram path and the exact samplers do not serve it.

    Parameters
    ----------
    base : loss object
        The unweighted loss.
    max_weight : float
        Public bound on every weight (> 0).
    mean_weight : float, default=None
        Public nominal mean weight (1 for scikit-learn's "balanced" rule), used only for
        step sizes (``step_curvature``); ``None``: ``max_weight``.
    """

    def __init__(self, base, max_weight, mean_weight=None):
        self.base, self.max_weight = base, float(max_weight)
        self.mean_weight = self.max_weight if mean_weight is None else float(mean_weight)
        self.name, self.n_outputs, self.hessian_rank = base.name, base.n_outputs, base.hessian_rank
        self.curvature = base.curvature * self.max_weight
        self.lipschitz = None if base.lipschitz is None else base.lipschitz * self.max_weight
        self.value_at_zero = None if base.value_at_zero is None else base.value_at_zero * self.max_weight
        self.needs_target_bound, self.twice_differentiable = base.needs_target_bound, base.twice_differentiable
        self.typical_curvature_share, self.prior_coef_norm = base.typical_curvature_share, base.prior_coef_norm
        self.clip_scale = base.clip_scale

    @property
    def step_curvature(self):
        """The base curvature times the nominal mean weight (steps of the mean objective; utility only)."""
        return self.base.curvature * self.mean_weight

    def properties(self):
        """The base loss's properties, without the Gram path and the exact samplers' bounded value."""
        return set(self.base.properties()) - {"gram_path", "bounded_value"}

    def _split(self, y):
        labels = y[:, 0] if self.base.n_outputs == 1 else y[:, :-1]
        return labels, y[:, -1]

    def _scale(self, d, w):
        return d * w if d.ndim == 1 else d * w[:, None]

    def phi(self, z, y):
        labels, w = self._split(y)
        return w * self.base.phi(z, labels)

    def dphi(self, z, y):
        labels, w = self._split(y)
        return self._scale(self.base.dphi(z, labels), w)

    def dphi_inplace(self, z, y):
        return self.dphi(z, y)

    def d2phi_times(self, z, y, v):
        labels, w = self._split(y)
        return self._scale(self.base.d2phi_times(z, labels, v), w)

    def derivative_bound(self, margin_bound=None):
        return self.max_weight * self.base.derivative_bound(margin_bound)

    def derivative_linf_bound(self, margin_bound=None):
        return self.max_weight * self.base.derivative_linf_bound(margin_bound)

    @staticmethod
    def attach(y, weights):
        """Targets with the weights appended as the last column."""
        y = np.asarray(y, dtype=float)
        return np.column_stack([y.reshape(y.shape[0], -1), np.asarray(weights, dtype=float)])
