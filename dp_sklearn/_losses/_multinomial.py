"""The multinomial (softmax cross-entropy) loss."""

from __future__ import annotations

import math

import numpy as np
from scipy.special import logsumexp, softmax

from ._base import GLMLoss, register_loss, typical_share

__all__ = ["MultinomialLoss"]


@register_loss
class MultinomialLoss(GLMLoss):
    """Softmax cross-entropy over K classes, y one-hot of shape (n, K).

    phi'(z, y) = softmax(z) - y has l2 norm <= sqrt(2); the per-example Hessian
    (diag(p) - p p^T) (x) x x^T has eigenvalues <= ||x||^2 / 2 and rank <= K - 1.
    """

    curvature = 0.5
    name = "multinomial"
    lipschitz = float(np.sqrt(2.0))
    typical_curvature_share = typical_share()
    single_output = False
    #: log K for K classes (set per instance; the class declares that it is known)
    value_at_zero = math.log(2.0)

    def __init__(self, n_classes):
        self.n_outputs = int(n_classes)
        self.hessian_rank = int(n_classes) - 1
        self.value_at_zero = math.log(max(self.n_outputs, 2))

    def derivative_linf_bound(self, margin_bound=None):
        """|p_k - y_k| <= 1 for every class k."""
        return 1.0

    def phi(self, z, y):
        return logsumexp(z, axis=1) - np.sum(z * y, axis=1)

    def dphi(self, z, y):
        return softmax(z, axis=1) - y

    def d2phi_times(self, z, y, v):
        p = softmax(z, axis=1)
        pv = p * v
        return pv - p * pv.sum(axis=1, keepdims=True)
