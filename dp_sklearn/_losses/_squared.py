"""The squared loss (least squares; the Gram path)."""

from __future__ import annotations

import numpy as np

from ._base import GLMLoss, register_loss

__all__ = ["SquaredLoss"]


@register_loss
class SquaredLoss(GLMLoss):
    """phi(z, y) = (z - y)^2 / 2; |phi'| <= |z| + B_y, phi'' = 1 (y mapped to [-1, 1], B_y = 1)."""

    curvature = 1.0
    prior_coef_norm = 0.15
    name = "squared"
    needs_target_bound = True
    gram_path = True
    value_at_zero = 0.5

    def max_value(self, margin_bound):
        return 0.5 * (margin_bound + 1.0) ** 2

    def implicit_margin(self, xv, y, k, a, bound):
        s = (xv + a * y) / (k + a)
        if abs(s - y) > bound:
            s = (xv - a * bound * np.sign(s - y)) / k
        return s

    def phi(self, z, y):
        return 0.5 * (z - y) ** 2

    def dphi(self, z, y):
        return z - y

    def dphi_inplace(self, z, y):
        z -= y
        return z

    def d2phi_times(self, z, y, v):
        return v

    def derivative_bound(self, margin_bound=None):
        """sup |phi'(z, y)| over |z| <= margin_bound and |y| <= 1."""
        return margin_bound + 1.0
