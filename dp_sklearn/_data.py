"""Public bounds enforced by clipping, and the normalized problem every solver sees.

Rows are mapped to ``x_tilde = [clip(x) / data_norm, 1]`` (the constant 1 carries the
intercept and is counted in the bound, so the intercept leaks nothing beyond the
other coefficients) and regression targets to ``y_tilde = (clip(y) - mid) / half``
in [-1, 1]. Clipping is exact for every finite input: it is done in float64 on a
canonical copy of the data (sparse duplicates summed), with norms computed on rows
pre-scaled by their largest entry so that they neither overflow nor underflow.

Clipping is silent: whether a record exceeded a bound is a function of the data, so
it is never warned, printed or stored (``docs/privacy.md``, "What the analyst sees").
:func:`count_clipped_rows` counts the rows beyond the bound for the opt-in private
diagnostic ``report_clipping=True`` (:mod:`dp_sklearn._clipping`), which releases the
count only with noise.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ._blockwise import clip_block_inf, clip_block_l2, count_clipped, is_canonical_csr, normalize_csr, normalize_dense
from ._warnings import ClippingWarning

__all__ = [
    "ClippingWarning", "Problem", "check_bound", "check_bounds_y", "count_clipped_rows", "normalize_X", "normalize_y",
]

_TINY = float(np.finfo(np.float64).tiny)


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

    def clip_bounds(self, clip_norm):
        """``(-b, b)``, ``b_i = clip_norm / row_norms_i``: the range of a scalar phi'_i under clipping.

        :func:`dp_sklearn._losses._base.clip_bounds`, computed once per clip norm and kept
        (a fit's steps share one clip norm); ``None`` without row norms (a dask design).
        """
        if self.row_norms is None:
            return None
        cached = self.__dict__.get("_clip_bounds")
        if cached is None or cached[0] != clip_norm:
            from ._losses._base import clip_bounds

            cached = (clip_norm, clip_bounds(self.row_norms, clip_norm))
            self.__dict__["_clip_bounds"] = cached
        return cached[1]

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

    One copy of the stored entries (CSR input is copied as is, any other format is
    converted to CSR once), canonicalized in place. No format flag of the input
    (``has_canonical_format`` may be set by anyone) is trusted: the structure is
    checked and the sort and the sum of duplicates always run, so every product a
    solver takes sees exactly the entries that are clipped here.
    """
    if X.format == "csr":
        Xc = sp.csr_matrix((np.array(X.data, dtype=np.float64), X.indices.copy(), X.indptr.copy()), shape=X.shape)
    else:
        Xc = sp.csr_matrix(X.tocsr(), dtype=np.float64, copy=True)
    Xc.check_format(full_check=True)
    Xc.has_sorted_indices = False
    Xc.has_canonical_format = False
    Xc.sum_duplicates()
    Xc.eliminate_zeros()
    return Xc


def _as_array(X):
    """A 2-D numeric view of dense ``X`` (no copy when X is already a numeric ndarray), else ValueError."""
    try:
        Xa = np.asarray(X)
        if Xa.dtype.kind not in "biuf":
            Xa = np.asarray(X, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"X must be a numeric array or a scipy.sparse matrix: {exc}") from None
    if Xa.ndim != 2:
        raise ValueError(f"X must be 2-D, got an array of shape {Xa.shape}.")
    return Xa


# --------------------------------------------------------------------------- clipping
def _clip_setup(X, data_norm, data_norm_ord):
    """The checked bound, X as a numeric array or canonical CSR, and the clipping kernel."""
    B = check_bound(data_norm, "data_norm")
    if data_norm_ord not in (2, np.inf) or isinstance(data_norm_ord, (bool, np.bool_)):
        raise ValueError(f"data_norm_ord must be 2 or numpy.inf, got {data_norm_ord!r}.")
    if sp.issparse(X) and not (X.format == "csr" and is_canonical_csr(X)):
        X = _canonical_csr(X)
    return B, X, clip_block_l2 if data_norm_ord == 2 else clip_block_inf


def count_clipped_rows(X, data_norm, data_norm_ord):
    """Number of rows of X that :func:`normalize_X` clips (beyond rounding); X is not modified.

    The count is private data: it is released only with noise, by the opt-in
    diagnostic ``report_clipping=True`` (:mod:`dp_sklearn._clipping`).

    Parameters
    ----------
    X : {ndarray, sparse matrix} of shape (n_samples, n_features)
        Finite numeric data, as passed to :func:`normalize_X`.
    data_norm : float
        Public bound, in the units of X.
    data_norm_ord : {2, inf}
        The norm bounded.

    Returns
    -------
    int
        Rows with ``||x|| > data_norm`` by more than a relative 1e-12 (the clipping
        kernels' own test, on float64 row blocks).
    """
    B, X, clip = _clip_setup(X, data_norm, data_norm_ord)
    return count_clipped(X if sp.issparse(X) else _as_array(X), B, clip)


def normalize_X(X, data_norm, data_norm_ord, fit_intercept, order="C"):
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
    order : {"C", "F"}, default="C"
        Memory layout of a dense output (the same values): ``"F"`` (column-major) makes the
        full-batch products ``X @ theta`` and ``X.T @ d`` faster for a few columns
        (``benchmarks/results/speed_ab_issue22.md``), ``"C"`` keeps row gathers fast (Poisson
        samples). Sparse output is CSR either way.

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

    Notes
    -----
    Memory: dense input is read in row blocks of ``BLOCK_ENTRIES`` entries into one
    float64 allocation of the output (the intercept column included), clipped in
    place; the peak is X plus one output plus a few blocks. Sparse input costs its
    canonical copy (plus the output with the intercept column, built from it). The
    output is float64 even for float32 input: the clipping guarantee
    ``||x_tilde|| <= 1`` is checked and enforced in float64, and rounding a clipped
    row back to float32 could leave it above the bound.
    """
    B, X, clip = _clip_setup(X, data_norm, data_norm_ord)
    if sp.issparse(X):
        Xt = normalize_csr(X, B, clip, int(bool(fit_intercept)))
    else:
        Xt = normalize_dense(_as_array(X), B, clip, int(bool(fit_intercept)), order=order)
        if fit_intercept:
            Xt[:, -1] = 1.0
    p = Xt.shape[1] - bool(fit_intercept)
    x_norm = 1.0 if data_norm_ord == 2 else float(np.sqrt(p))
    if fit_intercept:
        x_norm = float(np.sqrt(x_norm**2 + 1.0))
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

    """
    low, high = check_bounds_y(bounds_y)
    mid, half = low / 2 + high / 2, high / 2 - low / 2
    y = np.asarray(y, dtype=np.float64)
    if not np.isfinite(y).all():
        raise ValueError("y contains NaN or infinity; clean or impute it first.")
    return np.clip((np.clip(y, low, high) - mid) / half, -1.0, 1.0), mid, half
