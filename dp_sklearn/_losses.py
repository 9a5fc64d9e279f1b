"""Per-example GLM losses l(theta; x, y) = phi(<x, theta>, y) and their constants (see ``docs/privacy.md``).

Coefficients are handled as a flat vector ``theta`` of size ``n_features * n_outputs``
(``n_outputs = 1`` for the squared and logistic losses, ``K`` for the multinomial
loss, stored feature-major: ``theta.reshape(n_features, K)``). Every method is
vectorized and works for dense arrays and scipy.sparse CSR matrices.
"""

from __future__ import annotations

import numpy as np
from scipy.special import expit, log_expit, logsumexp, softmax

__all__ = ["SquaredLoss", "LogisticLoss", "MultinomialLoss"]


class _GLMLoss:
    """Shared plumbing: margins, gradients and per-example gradient norms."""

    n_outputs = 1
    #: data-independent prior scale of ||theta||_2 (normalized units) used by the
    #: solvers that must pick a regularization strength before seeing the data
    prior_coef_norm = 1.0
    #: upper bound on phi'' (the per-example Hessian is phi'' x x^T, of rank ``hessian_rank``)
    curvature = 1.0
    hessian_rank = 1

    def margins(self, X, theta):
        return X @ theta.reshape(X.shape[1], -1) if self.n_outputs > 1 else X @ theta

    def value(self, X, y, theta):
        """Mean loss (1/n) sum_i phi(<x_i, theta>, y_i)."""
        return float(np.mean(self.phi(self.margins(X, theta), y)))

    def gradient(self, X, y, theta):
        """Gradient of the mean loss, flat, shape ``theta.shape``."""
        d = self.dphi(self.margins(X, theta), y)
        return np.asarray(X.T @ d).ravel() / X.shape[0]

    def value_and_gradient(self, X, y, theta):
        z = self.margins(X, theta)
        d = self.dphi(z, y)
        return float(np.mean(self.phi(z, y))), np.asarray(X.T @ d).ravel() / X.shape[0]

    def derivative_norms(self, X, y, theta):
        """Per-example ||phi'(z_i, y_i)||_2 (a scalar per row; l2 over classes for multinomial)."""
        d = self.dphi(self.margins(X, theta), y)
        return np.abs(d) if d.ndim == 1 else np.linalg.norm(d, axis=1)

    def dphi_inplace(self, z, y):
        """phi'(z, y), overwriting the margins ``z`` where the loss allows (same values as :meth:`dphi`)."""
        return self.dphi(z, y)

    def clipped_gradient_sum(self, X, y, theta, row_norms, clip_norm):
        """sum_i clip(grad l(theta; x_i, y_i), clip_norm), without forming per-example gradients.

        The per-example gradient is phi'_i x_i (an outer product for multinomial), whose
        l2 (Frobenius) norm is ||phi'_i|| * ||x_i||; clipping rescales phi'_i by
        ``min(1, clip_norm / (||phi'_i|| ||x_i||))``. Besides the two products, one
        step allocates one n-sized buffer (the margins are overwritten in place).
        """
        d = self.dphi_inplace(self.margins(X, theta), y)
        scale = np.abs(d) if d.ndim == 1 else np.linalg.norm(d, axis=1)
        scale *= row_norms
        np.maximum(scale, 1e-300, out=scale)
        np.divide(clip_norm, scale, out=scale)
        np.minimum(scale, 1.0, out=scale)
        d *= scale if d.ndim == 1 else scale[:, None]
        return np.asarray(X.T @ d).ravel()

    def hessian_vector(self, X, y, theta, v):
        """Hessian of the mean loss applied to ``v`` (for Newton-CG polishing)."""
        z = self.margins(X, theta)
        xv = self.margins(X, v)
        hv = self.d2phi_times(z, y, xv)
        return np.asarray(X.T @ hv).ravel() / X.shape[0]


class SquaredLoss(_GLMLoss):
    """phi(z, y) = (z - y)^2 / 2; |phi'| <= |z| + B_y, phi'' = 1 (y mapped to [-1, 1], B_y = 1)."""

    curvature = 1.0
    prior_coef_norm = 0.15
    name = "squared"

    def phi(self, z, y):
        return 0.5 * (z - y) ** 2

    def dphi(self, z, y):
        return z - y

    def dphi_inplace(self, z, y):
        z -= y
        return z

    def d2phi_times(self, z, y, v):
        return v

    def derivative_bound(self, margin_bound):
        """sup |phi'(z, y)| over |z| <= margin_bound and |y| <= 1."""
        return margin_bound + 1.0


class LogisticLoss(_GLMLoss):
    """phi(z, y) = log(1 + exp(-y z)), y in {-1, +1}; |phi'| <= 1, phi'' <= 1/4."""

    curvature = 0.25
    name = "logistic"

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

    def derivative_bound(self, margin_bound=None):
        return 1.0


class MultinomialLoss(_GLMLoss):
    """Softmax cross-entropy over K classes, y one-hot of shape (n, K).

    phi'(z, y) = softmax(z) - y has l2 norm <= sqrt(2); the per-example Hessian
    (diag(p) - p p^T) (x) x x^T has eigenvalues <= ||x||^2 / 2 and rank <= K - 1.
    """

    curvature = 0.5
    name = "multinomial"

    def __init__(self, n_classes):
        self.n_outputs = int(n_classes)
        self.hessian_rank = int(n_classes) - 1

    def phi(self, z, y):
        return logsumexp(z, axis=1) - np.sum(z * y, axis=1)

    def dphi(self, z, y):
        return softmax(z, axis=1) - y

    def d2phi_times(self, z, y, v):
        p = softmax(z, axis=1)
        pv = p * v
        return pv - p * pv.sum(axis=1, keepdims=True)

    def derivative_bound(self, margin_bound=None):
        return float(np.sqrt(2.0))
