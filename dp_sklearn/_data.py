"""Public bounds enforced by clipping, and the normalized problem every solver sees (SPEC P3).

Rows are mapped to ``x_tilde = [clip(x) / data_norm, 1]`` (the constant 1 carries the
intercept and is counted in the bound, so the intercept leaks nothing beyond the
other coefficients) and regression targets to ``y_tilde = (clip(y) - mid) / half``
in [-1, 1]. Clipping is reported to the caller with a :class:`ClippingWarning`
and never stored on the estimator (SPEC P2).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

__all__ = ["ClippingWarning", "Problem", "normalize_X", "normalize_y"]


class ClippingWarning(UserWarning):
    """Some records exceeded the public bounds and were clipped (SPEC P3)."""


@dataclass
class Problem:
    """What a solver sees: normalized data with public bounds.

    Attributes
    ----------
    X : ndarray or csr_matrix of shape (n_samples, d)
        Clipped, normalized design (with the intercept column if any).
    y : ndarray
        Targets in [-1, 1], labels in {-1, +1}, or one-hot (n_samples, K).
    loss : loss object from :mod:`dp_sklearn._losses`
    x_norm : float
        Public bound on ||x_tilde||_2.
    x_inf : float
        Public bound on ||x_tilde||_inf.
    row_norms : ndarray of shape (n_samples,)
        ||x_tilde_i||_2, used only for per-example gradient clipping.
    l2_reg : float
        Mean-scale l2 penalty lambda of the objective (lambda/2) ||theta||^2.
    """

    X: object
    y: np.ndarray
    loss: object
    x_norm: float
    x_inf: float
    row_norms: np.ndarray
    l2_reg: float = 0.0

    @property
    def n(self):
        return self.X.shape[0]

    @property
    def dim(self):
        return self.X.shape[1] * self.loss.n_outputs


def _row_norms(X):
    if sp.issparse(X):
        return np.sqrt(np.asarray(X.multiply(X).sum(axis=1)).ravel())
    return np.linalg.norm(X, axis=1)


def normalize_X(X, data_norm, data_norm_ord, fit_intercept):
    """Clip rows to the public bound and rescale so that the bound becomes 1.

    Parameters
    ----------
    X : {ndarray, csr_matrix} of shape (n_samples, n_features)
    data_norm : float
        Public bound on ||x||_2 (``data_norm_ord=2``) or ||x||_inf (``np.inf``), in the units of X.
    data_norm_ord : {2, inf}
    fit_intercept : bool

    Returns
    -------
    X_tilde, x_norm, x_inf
    """
    n, p = X.shape
    if data_norm_ord == 2:
        norms = _row_norms(X)
        clipped = norms > data_norm * (1 + 1e-12)
        scale = np.where(clipped, 1.0 / np.maximum(norms, 1e-300), 1.0 / data_norm)
        Xt = sp.diags(scale) @ X if sp.issparse(X) else X * scale[:, None]
        x_norm, x_inf = 1.0, 1.0
    else:
        if sp.issparse(X):
            Xt = X.astype(np.float64, copy=True)
            clipped_entries = np.abs(Xt.data) > data_norm
            Xt.data = np.clip(Xt.data, -data_norm, data_norm) / data_norm
            clipped = np.zeros(n, dtype=bool)
            if clipped_entries.any():
                rows = np.repeat(np.arange(n), np.diff(Xt.indptr))
                clipped[rows[clipped_entries]] = True
        else:
            clipped = (np.abs(X) > data_norm).any(axis=1)
            Xt = np.clip(X, -data_norm, data_norm) / data_norm
        x_norm, x_inf = float(np.sqrt(p)), 1.0
    n_clipped = int(np.count_nonzero(clipped))
    if n_clipped:
        warnings.warn(
            f"{n_clipped} of {n} rows of X exceeded data_norm={data_norm:g} "
            f"(ord={data_norm_ord}) and were clipped; the privacy guarantee holds, "
            "but the model fits the clipped data.",
            ClippingWarning,
            stacklevel=4,
        )
    if fit_intercept:
        ones = np.ones((n, 1))
        Xt = sp.hstack([Xt, sp.csr_matrix(ones)], format="csr") if sp.issparse(Xt) else np.hstack([Xt, ones])
        x_norm = float(np.sqrt(x_norm**2 + 1.0))
    elif sp.issparse(Xt):
        Xt = sp.csr_matrix(Xt)
    return Xt, x_norm, x_inf


def normalize_y(y, bounds_y):
    """Clip y to the public ``bounds_y = (low, high)`` and map it affinely onto [-1, 1]."""
    low, high = bounds_y
    mid, half = 0.5 * (low + high), 0.5 * (high - low)
    n_clipped = int(np.count_nonzero((y < low) | (y > high)))
    if n_clipped:
        warnings.warn(
            f"{n_clipped} of {y.shape[0]} targets fell outside bounds_y={tuple(bounds_y)} and were clipped.",
            ClippingWarning,
            stacklevel=4,
        )
    return (np.clip(y, low, high) - mid) / half, mid, half
