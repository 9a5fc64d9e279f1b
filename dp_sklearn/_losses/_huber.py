"""The Huber loss (robust regression): Lipschitz in the residual, so no target bound is needed."""

from __future__ import annotations

import numpy as np

from ._base import GLMLoss, register_loss

__all__ = ["HuberLoss"]


@register_loss
class HuberLoss(GLMLoss):
    """phi(z, y) = H(z - y) with H(r) = r^2 / 2 for |r| <= 1 and |r| - 1/2 beyond (Huber 1964).

    Targets are divided by the public Huber threshold (the estimator's ``huber_threshold``,
    in units of y), so the threshold is 1 in normalized units. |phi'| = |clip(z - y, -1, 1)|
    <= 1 for every margin and target: the gradient is bounded without a target bound or a
    bounded domain. phi'' <= 1 but jumps at |r| = 1 (not twice differentiable, so
    objective perturbation does not apply), and the loss at theta = 0 grows with |y| (no
    public ``value_at_zero``).
    """

    name = "huber"
    curvature = 1.0
    lipschitz = 1.0
    twice_differentiable = False

    def phi(self, z, y):
        r = np.abs(z - y)
        return np.where(r <= 1.0, 0.5 * r**2, r - 0.5)

    def dphi(self, z, y):
        return np.clip(z - y, -1.0, 1.0)

    def dphi_inplace(self, z, y):
        z -= y
        np.clip(z, -1.0, 1.0, out=z)
        return z

    def d2phi_times(self, z, y, v):
        return np.where(np.abs(z - y) <= 1.0, v, 0.0)
