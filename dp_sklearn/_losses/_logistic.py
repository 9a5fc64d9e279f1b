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
        with np.errstate(over="ignore"):  # the values of dphi_inplace ((-a) / b == -(a / b) in IEEE arithmetic)
            return -y / (1.0 + np.exp(y * z))

    def dphi_inplace(self, z, y):
        # -y expit(-y z) = -y / (1 + exp(y z)) for y in {-1, +1}: numpy's vectorized exp instead
        # of scipy's expit (same value to a few ulp; exp(y z) = inf gives -0 exactly as expit)
        z *= y
        with np.errstate(over="ignore"):
            np.exp(z, out=z)
        z += 1.0
        np.divide(y, z, out=z)
        np.negative(z, out=z)
        return z

    def d2phi_times(self, z, y, v):
        s = expit(z)
        return s * (1 - s) * v
