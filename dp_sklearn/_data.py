"""Public bounds enforced by clipping, and the normalized problem every solver sees.

Rows are mapped to ``x_tilde = [clip(x) / data_norm, 1]`` (the constant 1 carries the
intercept and is counted in the bound, so the intercept leaks nothing beyond the
other coefficients) and regression targets to ``y_tilde = (clip(y) - mid) / half``
in [-1, 1]. Clipping is exact for every finite input: it is done in float64 on a
canonical copy of the data (sparse duplicates summed), with norms computed on rows
pre-scaled by their largest entry so that they neither overflow nor underflow.

Clipping is reported to the caller with a :class:`ClippingWarning` that names the
public bound and no count, and is never stored on the estimator (see
``docs/privacy.md``, "What the analyst sees"). Inside :func:`clipping_report` every
clip event is collected and at most one warning is emitted when the outermost
context exits.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ._warnings import ClippingWarning, _report_clip, clipping_report

__all__ = [
    "ClippingWarning", "Problem", "check_bound", "check_bounds_y", "clipping_report", "normalize_X", "normalize_y",
]

_TINY = float(np.finfo(np.float64).tiny)
_SHRINK = 1.0 + 2.0**-50  # pushes a row whose computed norm is 1 + O(ulp) back to <= 1


@dataclass
class Problem:
    """What a solver sees: normalized data with public bounds.

    Parameters
    ----------
    X : ndarray or csr_matrix of shape (n_samples, d)
        Clipped, normalized design (with the intercept column if any), float64.
    y : ndarray
        Targets in [-1, 1], labels in {-1, +1}, or one-hot (n_samples, K).
    loss : object
        Loss from :mod:`dp_sklearn._losses` (value, gradient, constants).
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
        """Number of samples (public)."""
        return self.X.shape[0]

    @property
    def dim(self):
        """Number of coefficients: columns of X times the loss's outputs."""
        return self.X.shape[1] * self.loss.n_outputs


# --------------------------------------------------------------------------- validation
def check_bound(value, name):
    """Validate a public positive bound such as ``data_norm``; return it as a float.

    Parameters
    ----------
    value : float
        The bound, in the units of the data.
    name : str
        Parameter name used in the error message.

    Returns
    -------
    float
        ``value`` as a Python float.

    Raises
    ------
    ValueError
        Naming ``name``, unless ``value`` is a real (not bool), finite, positive and a
        normal float64 (>= 2.2e-308), so that dividing by it cannot overflow to infinity.
    """
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise ValueError(f"{name} must be a positive real number, got {value!r}.")
    out = float(value)
    if not (np.isfinite(out) and out >= _TINY):
        raise ValueError(
            f"{name} must be a finite positive number of at least {_TINY:.3g} (a normal float64), got {value!r}."
        )
    return out


def _canonical_csr(X):
    """A float64 CSR copy of sparse ``X`` with duplicates summed, zeros dropped, indices sorted.

    Built afresh from the (row, column, value) triplets, so no format flag of the input
    (``has_canonical_format`` may be set by anyone) is trusted: every product a solver
    takes sees exactly the entries that are clipped here.
    """
    coo = sp.coo_matrix(X)
    data = np.asarray(coo.data, dtype=np.float64)
    Xc = sp.csr_matrix((data.copy(), (np.asarray(coo.row, dtype=np.int64), np.asarray(coo.col, dtype=np.int64))),
                       shape=coo.shape, dtype=np.float64)
    Xc.has_canonical_format = False
    Xc.sum_duplicates()
    Xc.eliminate_zeros()
    Xc.sort_indices()
    return Xc


def _as_float64(X):
    """Canonical float64 copy of ``X`` (dense ndarray or CSR), finite, 2-D; else ValueError."""
    if sp.issparse(X):
        Xc = _canonical_csr(X)
        values = Xc.data
    else:
        try:
            Xc = np.array(X, dtype=np.float64, copy=True)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"X must be a numeric array or a scipy.sparse matrix: {exc}") from None
        values = Xc
    if Xc.ndim != 2:
        raise ValueError(f"X must be 2-D, got an array of shape {Xc.shape}.")
    if not np.isfinite(values).all():
        raise ValueError("X contains NaN or infinity (after summing duplicate sparse entries); "
                         "clean or impute it first.")
    return Xc


# --------------------------------------------------------------------------- clipping
def _row_ids(X):
    return np.repeat(np.arange(X.shape[0]), np.diff(X.indptr))


def _scaled_rows(X):
    """Per-row max |x_ij| ``m`` and the scaled values ``x / m`` with their row norms ``r``.

    ``||x_i|| = m_i r_i`` with ``r_i`` in [1, sqrt(p)] (0 for an empty row), computed
    without overflow or underflow for any finite input.
    """
    if sp.issparse(X):
        rows = _row_ids(X)
        m = np.zeros(X.shape[0])
        np.maximum.at(m, rows, np.abs(X.data))
        safe = np.where(m > 0, m, 1.0)
        S = X.data / safe[rows]
        r = np.sqrt(np.bincount(rows, weights=S * S, minlength=X.shape[0]))
        return m, S, r
    m = np.abs(X).max(axis=1) if X.shape[1] else np.zeros(X.shape[0])
    safe = np.where(m > 0, m, 1.0)
    S = X / safe[:, None]
    return m, S, np.sqrt(np.einsum("ij,ij->i", S, S))


def _clip_l2(X, B):
    """Rows scaled to ||x_tilde||_2 = min(||x||, B) / B <= 1; returns (X_tilde, warn mask)."""
    m, S, r = _scaled_rows(X)
    with np.errstate(over="ignore", divide="ignore"):
        limit = B / np.where(m > 0, m, 1.0)  # ||x|| > B  <=>  r > B / m (inf: never)
    clipped = (m > 0) & (r > limit)
    warn = (m > 0) & (r > limit * (1 + 1e-12))  # rounding at the bound is not reported
    safe_r = np.where(clipped, r, 1.0)
    if sp.issparse(X):
        rows = _row_ids(X)
        Xt = X.copy()
        with np.errstate(over="ignore"):  # x / B overflows only in rows that are clipped
            Xt.data = np.where(clipped[rows], S / safe_r[rows], X.data / B)
        sq = np.bincount(rows, weights=Xt.data * Xt.data, minlength=X.shape[0])
        over = np.sqrt(sq) > 1.0
        if over.any():
            Xt.data = np.where(over[rows], Xt.data / (np.sqrt(sq)[rows] * _SHRINK), Xt.data)
        return Xt, warn
    with np.errstate(over="ignore"):  # x / B overflows only in rows that are clipped
        Xt = np.where(clipped[:, None], S / safe_r[:, None], X / B)
    nt = np.linalg.norm(Xt, axis=1)
    over = nt > 1.0
    if over.any():
        Xt[over] /= (nt[over] * _SHRINK)[:, None]
    return Xt, warn


def _clip_inf(X, B):
    """Entries clipped to [-B, B] in float64 and divided by B (so |x_tilde_ij| <= 1 exactly)."""
    if sp.issparse(X):
        Xt = X.copy()
        over = np.abs(X.data) > B
        warn = np.zeros(X.shape[0], dtype=bool)
        warn[_row_ids(X)[over]] = True
        Xt.data = np.clip(X.data, -B, B) / B
        return Xt, warn
    return np.clip(X, -B, B) / B, (np.abs(X) > B).any(axis=1)


def normalize_X(X, data_norm, data_norm_ord, fit_intercept):
    """Clip rows to the public bound and rescale so that the bound becomes 1.

    Parameters
    ----------
    X : {ndarray, sparse matrix or array} of shape (n_samples, n_features)
        Any numeric dtype and any scipy.sparse format; never modified. Sparse input is
        canonicalized on a float64 copy (duplicate entries summed, explicit zeros
        dropped, indices sorted) before any norm or clip, so the clipped values are
        exactly the ones every later product uses.
    data_norm : float
        Public bound on ||x||_2 (``data_norm_ord=2``) or ||x||_inf (``np.inf``), in the
        units of X: finite, positive and a normal float64 (>= 2.2e-308).
    data_norm_ord : {2, inf}
    fit_intercept : bool
        Append the constant column 1 (counted in ``x_norm``).

    Returns
    -------
    X_tilde : ndarray or csr_matrix of shape (n_samples, n_features + fit_intercept)
        Float64; rows satisfy ||x_tilde[:p]||_2 <= 1 (ord 2) or |x_tilde_ij| <= 1 (ord inf)
        in floating point.
    x_norm : float
        Public bound on ||x_tilde||_2 (1, or sqrt(n_features) for ord inf; +1 under the
        square root with an intercept).
    x_inf : float
        Public bound on ||x_tilde||_inf (1).

    Raises
    ------
    ValueError
        If ``data_norm`` or ``data_norm_ord`` is invalid, or X is not a finite 2-D
        numeric array (NaN, infinity, or sparse duplicates summing to infinity).

    Warns
    -----
    ClippingWarning
        If some row exceeded the bound (no count is given), unless collected by
        :func:`clipping_report`.
    """
    B = check_bound(data_norm, "data_norm")
    if data_norm_ord not in (2, np.inf) or isinstance(data_norm_ord, (bool, np.bool_)):
        raise ValueError(f"data_norm_ord must be 2 or numpy.inf, got {data_norm_ord!r}.")
    Xc = _as_float64(X)
    n, p = Xc.shape
    if data_norm_ord == 2:
        Xt, warn = _clip_l2(Xc, B)
        x_norm = 1.0
    else:
        Xt, warn = _clip_inf(Xc, B)
        x_norm = float(np.sqrt(p))
    if warn.any():
        _report_clip(f"some rows of X exceeded data_norm={B:g} (ord={data_norm_ord}) and were clipped")
    if fit_intercept:
        ones = np.ones((n, 1))
        Xt = sp.hstack([Xt, sp.csr_matrix(ones)], format="csr") if sp.issparse(Xt) else np.hstack([Xt, ones])
        x_norm = float(np.sqrt(x_norm**2 + 1.0))
    if sp.issparse(Xt):
        Xt = sp.csr_matrix(Xt)
        Xt.sort_indices()
    return Xt, x_norm, 1.0


def check_bounds_y(bounds_y):
    """Validate public target bounds; return ``(low, high)`` as floats.

    Parameters
    ----------
    bounds_y : tuple (low, high)
        Public range of the targets.

    Returns
    -------
    low : float
        Lower bound.
    high : float
        Upper bound.

    Raises
    ------
    ValueError
        Naming ``bounds_y``, unless it is a pair of finite reals with ``high - low``
        finite and positive in float64 and ``(high - low) / 2`` a normal float64.
    """
    try:
        low, high = bounds_y
    except (TypeError, ValueError):
        raise ValueError(f"bounds_y must be a pair (low, high), got {bounds_y!r}.") from None
    for v in (low, high):
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, numbers.Real) or not np.isfinite(float(v)):
            raise ValueError(f"bounds_y must hold two finite real numbers, got {bounds_y!r}.")
    low, high = float(low), float(high)
    with np.errstate(over="ignore"):
        width = np.float64(high) - np.float64(low)
    if not (np.isfinite(width) and width > 0):
        raise ValueError(f"bounds_y=(low, high) needs low < high with high - low finite in float64, got {bounds_y!r}.")
    if not high / 2 - low / 2 >= _TINY:
        raise ValueError(f"bounds_y is too narrow to be represented in float64, got {bounds_y!r}.")
    return low, high


def normalize_y(y, bounds_y):
    """Clip y to the public ``bounds_y = (low, high)`` and map it affinely onto [-1, 1].

    Parameters
    ----------
    y : array-like of shape (n_samples,)
        Finite numeric targets.
    bounds_y : tuple (low, high)
        Public bounds, finite reals with ``high - low`` finite and positive in float64.

    Returns
    -------
    y_tilde : ndarray of shape (n_samples,)
        ``(clip(y, low, high) - mid) / half``, in [-1, 1] in floating point.
    mid, half : float
        ``low / 2 + high / 2`` and ``high / 2 - low / 2`` (computed without overflow).

    Raises
    ------
    ValueError
        If ``bounds_y`` is not a pair of finite reals with a finite positive width
        (whose half is a normal float64), or y contains NaN or infinity.

    Warns
    -----
    ClippingWarning
        If some target fell outside ``bounds_y`` (no count is given), unless collected
        by :func:`clipping_report`.
    """
    low, high = check_bounds_y(bounds_y)
    mid, half = low / 2 + high / 2, high / 2 - low / 2
    y = np.asarray(y, dtype=np.float64)
    if not np.isfinite(y).all():
        raise ValueError("y contains NaN or infinity; clean or impute it first.")
    if ((y < low) | (y > high)).any():
        _report_clip(f"some targets fell outside bounds_y=({low:g}, {high:g}) and were clipped")
    return np.clip((np.clip(y, low, high) - mid) / half, -1.0, 1.0), mid, half
