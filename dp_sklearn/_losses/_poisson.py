"""The Poisson loss (log link) with the mean capped at the public count bound: Lipschitz and smooth."""

from __future__ import annotations

import numpy as np

from ._base import GLMLoss, register_loss

__all__ = ["PoissonLoss"]


@register_loss
class PoissonLoss(GLMLoss):
    """phi(z, y) = exp(z) - y z for z <= 0, continued by its tangent 1 + (1 - y) z for z > 0.

    Half the Poisson deviance with the log link, up to a term free of z: with the targets
    divided by the public count bound ``y_max`` (``y`` in [0, 1]) and the margin
    ``z = log(mean / y_max)``, ``exp(z) - y z`` is the per-example part of
    ``d(y, mu) / 2 = y log(y / mu) - y + mu`` (McCullagh & Nelder, "Generalized Linear
    Models", 1989, Section 6.2). Above z = 0 (a predicted mean beyond ``y_max``, which no
    target reaches) the loss is continued linearly, so it stays convex and C^1 and
    ``phi'(z, y) = exp(min(z, 0)) - y`` lies in [-1, 1] for every margin: the gradient is
    bounded without a bounded domain (``lipschitz = 1``). Where every fitted mean is below
    ``y_max`` the capped loss has the Poisson minimizer (it equals the Poisson loss there
    and is convex). phi'' = exp(z) <= 1 below 0 and 0 above (smooth, curvature 1, not twice
    differentiable). phi >= y - y log y >= 0 and phi(0, y) = 1 (``value_at_zero``). The
    targets need the public bound (``needs_target_bound``): y / y_max in [0, 1].
    """

    name = "poisson"
    curvature = 1.0
    lipschitz = 1.0
    needs_target_bound = True
    twice_differentiable = False
    value_at_zero = 1.0
    #: normalized targets: counts divided by the public bound (the declarations hold for y in it)
    target_range = (0.0, 1.0)

    def phi(self, z, y):
        return np.exp(np.minimum(z, 0.0)) * (1.0 + np.maximum(z, 0.0)) - y * z

    def dphi(self, z, y):
        return np.exp(np.minimum(z, 0.0)) - y

    def dphi_inplace(self, z, y):
        np.minimum(z, 0.0, out=z)
        np.exp(z, out=z)
        z -= y
        return z

    def d2phi_times(self, z, y, v):
        return np.where(z < 0.0, np.exp(np.minimum(z, 0.0)), 0.0) * v

    def max_value(self, margin_bound):
        """sup phi(z, y) over |z| <= margin_bound and y in [0, 1]."""
        return 1.0 + margin_bound
