"""Sufficient statistics of the squared loss: the full gradient from the p x p Gram matrix.

For the squared loss l(theta; x, y) = (<x, theta> - y)^2 / 2 the sum of the
per-example gradients is

    sum_i (<x_i, theta> - y_i) x_i = G theta - b,    G = X^T X,  b = X^T y,

so one pass over the data forms ``(G, b)`` and every later gradient costs O(p^2)
instead of a pass over X. This is an exact rewriting of the same sum, so it changes
no released quantity -- but only of the *unclipped* sum. The gradient mechanisms
release ``sum_i clip(grad_i, C) + noise`` (see ``docs/privacy.md``), and a clipped sum
is not a function of ``G``. The two coincide when no per-example gradient can exceed C:

    ||grad_i|| = |<x_i, theta> - y_i| ||x_i|| <= (M + 1) x_norm,

for every theta in the feasible set (``M = constraint.margin_bound(x_norm, x_inf)``
bounds ``|<x, theta>|`` over the set and all in-bound rows), every normalized row
(``||x_i|| <= x_norm``, enforced by clipping in :func:`dp_sklearn._data.normalize_X`)
and every normalized target (``|y_i| <= 1``, :func:`dp_sklearn._data.normalize_y`).
:func:`gram_applies` checks ``C >= (M + 1) x_norm`` from these public values only; when
it holds the clip scale is exactly 1 for every record, the Gram path computes the same
sum, and the mechanism, its sensitivity 2C and its privacy analysis are unchanged.
The check never looks at the data, so *which* path runs reveals nothing.

Frank-Wolfe over the l1 ball (:mod:`dp_sklearn.solvers._frank_wolfe`) scores the exact
mean gradient ``loss.gradient`` (its sensitivity bound does not rely on clipping), so
it can always use the Gram path for the squared loss.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

__all__ = ["GRAM_MAX_DIM", "GramGradient", "gram_applies", "gram_worthwhile"]

#: largest number of coefficients for which the p x p Gram matrix is formed
GRAM_MAX_DIM = 2000


def gram_worthwhile(problem):
    """Public size test: squared loss, dim <= ``GRAM_MAX_DIM`` and n >= dim (one output)."""
    return (problem.loss.gram_path and problem.loss.n_outputs == 1
            and problem.dim <= GRAM_MAX_DIM and problem.n >= problem.dim)


def gram_applies(problem, constraint, clip_norm):
    """Whether the clipped gradient sum equals the Gram gradient for every feasible theta.

    Parameters
    ----------
    problem : Problem or PublicProblem
        Only the public fields are read: loss, n, dim, x_norm, x_inf.
    constraint : feasible set
        Needs ``margin_bound(x_norm, x_inf)`` (l1 and l2 balls); unbounded sets
        (``Unconstrained``, ``L0Set``) never qualify.
    clip_norm : float
        Per-example clip norm C.

    Returns
    -------
    bool
        ``True`` when the Gram matrix is worth forming (:func:`gram_worthwhile`) and
        ``clip_norm >= (M + 1) x_norm`` (see the module docstring).
    """
    if not gram_worthwhile(problem) or not hasattr(constraint, "margin_bound"):
        return False
    M = constraint.margin_bound(problem.x_norm, problem.x_inf)
    bound = problem.loss.derivative_bound(M) * problem.x_norm
    return bool(np.isfinite(bound) and clip_norm >= bound)


def _sparse_gram(X, block_entries=2**20):
    """X^T X of a CSR matrix in row blocks: X_b^T (dense X_b), O(nnz p + n p) work whatever the rows.

    A sparse-sparse product costs sum_i nnz_i^2, unbounded when rows store duplicate
    entries; densifying one block of rows (duplicates summed, as in every product)
    keeps the cost linear in nnz and the memory at ``block_entries`` floats.
    """
    n, p = X.shape
    G = np.zeros((p, p))
    step = max(1, block_entries // max(p, 1))
    for start in range(0, n, step):  # blocks of rows, not single samples
        B = X[start:start + step]
        G += np.asarray(B.T @ B.toarray())
    return G


class GramGradient:
    """``G = X^T X`` and ``b = X^T y`` of a problem, formed in one pass.

    Parameters
    ----------
    X : ndarray or csr_matrix of shape (n_samples, dim)
        Normalized design (not copied).
    y : ndarray of shape (n_samples,)
        Normalized targets.

    Attributes
    ----------
    gram : ndarray of shape (dim, dim)
    xty : ndarray of shape (dim,)
    n : int
    """

    def __init__(self, X, y):
        self.gram = _sparse_gram(X) if sp.issparse(X) else np.asarray(X.T @ X, dtype=np.float64)  # one BLAS call
        self.xty = np.asarray(X.T @ y, dtype=np.float64).ravel()
        self.n = X.shape[0]

    def gradient_sum(self, theta):
        """sum_i (<x_i, theta> - y_i) x_i = G theta - b, shape (dim,)."""
        g = self.gram @ theta
        g -= self.xty
        return g

    def gradient(self, theta):
        """Gradient of the mean squared loss, (G theta - b) / n."""
        g = self.gradient_sum(theta)
        g /= self.n
        return g
