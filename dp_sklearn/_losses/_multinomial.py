"""The multinomial (softmax cross-entropy) loss."""

from __future__ import annotations

import math

import numpy as np
from scipy.special import logsumexp, softmax

from ._base import TYPICAL_MARGIN, GLMLoss, register_loss

__all__ = ["MultinomialLoss", "typical_trace_share"]


def typical_trace_share(n_classes):
    """Share f_K of the curvature bound 1/2 that the Hessian's trace reaches at a typical fit.

    The flat-direction cost in ``noisy_gd``'s ``default_n_iter`` reads the trace of the
    per-example Hessian ``(diag(p) - p p^T) (x) x x^T``, which is ``(1 - ||p||^2) ||x||^2``:
    up to ``(1 - 1/K) ||x||^2`` (rank K - 1), not the largest eigenvalue ``||x||^2 / 2``. At a
    typical fitted model the true class has the binary's typical probability
    ``p = sigma(TYPICAL_MARGIN)`` (0.95) and the other K - 1 classes share the rest equally, so

        f_K = 2 (1 - p^2 - (1 - p)^2 / (K - 1)).

    At K = 2 this is ``4 p (1 - p) = sigma'(3) / sigma'(0)``, the logistic loss's share (0.18),
    and it grows to ``2 (1 - p^2)`` (0.185) as K grows: the binary share derived for K classes.

    Parameters
    ----------
    n_classes : int
        K >= 2.

    Returns
    -------
    f : float
    """
    p = 1.0 / (1.0 + math.exp(-TYPICAL_MARGIN))
    k = max(int(n_classes), 2)
    return 2.0 * (1.0 - p * p - (1.0 - p) ** 2 / (k - 1))


@register_loss
class MultinomialLoss(GLMLoss):
    """Softmax cross-entropy over K classes, y one-hot of shape (n, K).

    phi'(z, y) = softmax(z) - y has l2 norm <= sqrt(2); the per-example Hessian
    (diag(p) - p p^T) (x) x x^T has eigenvalues <= ||x||^2 / 2 and rank <= K - 1, and its
    trace at a typical fit is ``typical_curvature_share`` = :func:`typical_trace_share` (K)
    times ``||x||^2 / 2``.
    """

    curvature = 0.5
    name = "multinomial"
    lipschitz = float(np.sqrt(2.0))
    typical_curvature_share = typical_trace_share(2)
    #: default clip norm ``CLIP_FRACTION * clip_scale * x_norm`` = x_norm / 4, half the
    #: logistic loss's: chosen on the tuning half of the tabular suite (grid x_norm times
    #: 1/8, 1/4, sqrt(2 / K) / 2, 1/2, sqrt(1 - 1/K); ``benchmarks/tabular/README.md``,
    #: "Evidence for defaults")
    clip_scale = 0.5
    single_output = False
    #: log K for K classes (set per instance; the class declares that it is known)
    value_at_zero = math.log(2.0)

    def __init__(self, n_classes):
        self.n_outputs = int(n_classes)
        self.hessian_rank = int(n_classes) - 1
        self.value_at_zero = math.log(max(self.n_outputs, 2))
        self.typical_curvature_share = typical_trace_share(self.n_outputs)

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
