"""The binary logistic loss."""

from __future__ import annotations

import math

import numpy as np
from scipy.special import expit, log_expit

from ._base import GLMLoss, register_loss, typical_share

__all__ = ["LogisticLoss"]


@register_loss
class LogisticLoss(GLMLoss):
    """phi(z, y) = log(1 + exp(-y z)), y in {-1, +1}; |phi'| <= 1, phi'' <= 1/4."""

    curvature = 0.25
    name = "logistic"
    lipschitz = 1.0
    value_at_zero = math.log(2.0)
    typical_curvature_share = typical_share()

    def max_value(self, margin_bound):
        return margin_bound + math.log(2.0)

    def phi(self, z, y):
        return -log_expit(y * z)

    def dphi(self, z, y):
        return -y * expit(-y * z)

    def dphi_inplace(self, z, y):
        # -y expit(-y z) with the same rounding ((-a) b == -(a b) exactly in IEEE arithmetic)
        z *= y
        np.negative(z, out=z)
        expit(z, out=z)
        z *= y
        np.negative(z, out=z)
        return z

    def d2phi_times(self, z, y, v):
        s = expit(z)
        return s * (1 - s) * v
