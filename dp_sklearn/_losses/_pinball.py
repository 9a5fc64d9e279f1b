"""The pinball (quantile) loss, smoothed by its Moreau envelope: Lipschitz in the residual, no target bound."""

from __future__ import annotations

import numpy as np

from ._base import GLMLoss, register_loss

__all__ = ["PinballLoss", "pinball"]


def pinball(residual, quantile):
    """rho_q(r) = r (q - 1[r < 0]), the loss of quantile regression (Koenker & Bassett 1978)."""
    r = np.asarray(residual, dtype=float)
    return np.where(r >= 0.0, quantile * r, (quantile - 1.0) * r)


@register_loss
class PinballLoss(GLMLoss):
    """The Moreau envelope, of width 1, of the pinball loss: phi(z, y) = min_v rho_q(y - v) + (z - v)^2 / 2.

    With ``u = z - y`` (prediction minus target) the envelope is ``u^2 / 2`` on
    ``[-q, 1 - q]``, ``(1 - q) u - (1 - q)^2 / 2`` above and ``-q u - q^2 / 2`` below, and
    ``phi'(z, y) = clip(z - y, -q, 1 - q)``: the pinball loss's subgradient, made
    continuous (Moreau 1965; Nesterov, "Smooth minimization of non-smooth functions",
    Math. Program. 2005; Beck, "First-Order Methods in Optimization", SIAM 2017,
    Thm 6.60: the envelope of a convex function with parameter h is 1/h-smooth, and
    ``rho_q - h max(q, 1 - q)^2 / 2 <= phi <= rho_q``). Targets are divided by the public
    smoothing width (the estimator's ``smoothing``, in units of y), so the width is 1 in
    normalized units and the curvature is 1.

    |phi'| <= max(q, 1 - q) <= 1 for every margin and target: the gradient is bounded with
    no target bound and no bounded domain (declared ``lipschitz = 1``, the bound over every
    q; an instance carries its own ``max(q, 1 - q)``). phi'' jumps at the ends of the
    quadratic piece (not twice differentiable: objective perturbation does not apply), and
    the loss at theta = 0 grows with |y| (no public ``value_at_zero``). The non-smooth
    pinball loss itself is minimized exactly only by the non-private fit (``epsilon=inf``,
    a linear program in :mod:`dp_sklearn.linear_model._quantile`).

    Parameters
    ----------
    quantile : float, default=0.5
        q in (0, 1).
    """

    name = "pinball"
    curvature = 1.0
    lipschitz = 1.0
    twice_differentiable = False

    def __init__(self, quantile=0.5):
        self.quantile = float(quantile)
        self.lipschitz = max(self.quantile, 1.0 - self.quantile)

    def phi(self, z, y):
        q = self.quantile
        u = z - y
        return np.where(u > 1.0 - q, (1.0 - q) * u - 0.5 * (1.0 - q) ** 2,
                        np.where(u < -q, -q * u - 0.5 * q**2, 0.5 * u**2))

    def dphi(self, z, y):
        return np.clip(z - y, -self.quantile, 1.0 - self.quantile)

    def dphi_inplace(self, z, y):
        z -= y
        np.clip(z, -self.quantile, 1.0 - self.quantile, out=z)
        return z

    def d2phi_times(self, z, y, v):
        u = z - y
        return np.where((u >= -self.quantile) & (u <= 1.0 - self.quantile), v, 0.0)
