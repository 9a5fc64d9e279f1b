"""The squared hinge loss (linear SVM, scikit-learn's LinearSVC default): smooth, derivative growing with the margin."""

from __future__ import annotations

import numpy as np

from ._base import GLMLoss, register_loss

__all__ = ["SquaredHingeLoss"]


@register_loss
class SquaredHingeLoss(GLMLoss):
    """phi(z, y) = max(0, 1 - y z)^2, y in {-1, +1}; phi' = -2 y max(0, 1 - y z), phi'' <= 2.

    Smooth (curvature 2) but not twice differentiable (phi'' jumps at y z = 1: objective
    perturbation does not apply); |phi'| <= 2 (1 + |z|) grows with the margin, so a
    mechanism needs a bounded domain (:func:`dp_sklearn._sets.bounded_domain`) or
    clipping, as for the squared loss. No target bound: labels are +-1.
    """

    name = "squared_hinge"
    curvature = 2.0
    twice_differentiable = False
    value_at_zero = 1.0

    def max_value(self, margin_bound):
        return (1.0 + margin_bound) ** 2

    def derivative_bound(self, margin_bound=None):
        """sup |phi'(z, y)| over |z| <= margin_bound."""
        return 2.0 * (1.0 + margin_bound)

    def phi(self, z, y):
        return np.maximum(0.0, 1.0 - y * z) ** 2

    def dphi(self, z, y):
        return -2.0 * y * np.maximum(0.0, 1.0 - y * z)

    def d2phi_times(self, z, y, v):
        return np.where(y * z < 1.0, 2.0 * v, 0.0)
