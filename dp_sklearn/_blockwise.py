"""Blockwise clipping kernels of :func:`dp_sklearn._data.normalize_X` (issue 11: one copy of X).

Dense input is read in row blocks of about ``BLOCK_ENTRIES`` entries into one float64
allocation of the output and clipped in place; canonical CSR input is clipped block by
block into one allocation of its nnz (plus n for the intercept column). Norms are
computed on rows pre-scaled by their largest entry, so that they neither overflow nor
underflow for any finite input; a row whose computed norm after clipping is 1 + O(ulp)
is pushed back to <= 1. Only row blocks are looped over, never single samples.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

__all__ = ["BLOCK_ENTRIES", "clip_block_inf", "clip_block_l2", "count_clipped", "is_canonical_csr", "normalize_csr",
           "normalize_dense", "row_norms"]

_SHRINK = 1.0 + 2.0**-50  # pushes a row whose computed norm is 1 + O(ulp) back to <= 1

#: entries per row block of the blockwise normalization (512 kB of float64)
BLOCK_ENTRIES = 2**16


def _row_blocks(n, sizes):
    """Boundaries of consecutive row blocks of about ``BLOCK_ENTRIES`` entries (``sizes``: cumulative)."""
    if n == 0:
        return [0, 0]
    cuts = np.searchsorted(sizes, np.arange(BLOCK_ENTRIES, sizes[-1], BLOCK_ENTRIES), side="right")
    return np.unique(np.r_[0, np.minimum(cuts, n), n]).tolist()


#: B range of the direct dense path: there a row whose squared norm under- or overflows
#: (entries below 1e-154 or above 1e154) is decided correctly or falls back to the scaled path
_FAST_B = (1e-140, 1e140)


def _push_back(V, rows, n_rows, per):
    """Rows of a clipped block whose computed norm is 1 + O(ulp) are divided back to <= 1."""
    nt = np.linalg.norm(V, axis=1) if rows is None else np.sqrt(np.bincount(rows, V * V, n_rows))
    over = nt > 1.0
    if over.any():
        sel = over if rows is None else over[rows]
        V[sel] /= per(nt * _SHRINK)[sel]


def _clip_direct(V, rows, n_rows, norms, B):
    """Rows whose squared norms are finite: clip in place with the directly computed norms.

    Used when ``1e-140 < B < 1e140`` and no squared norm overflowed: a row whose squared
    norm underflows has norm below ``sqrt(p) 1e-154 < B`` and is correctly left unclipped;
    every other norm has relative error O(p ulp), and the final check below pushes any
    row of computed norm 1 + O(ulp) back to <= 1 (as in the scaled path). Three passes
    over the block instead of about ten.
    """
    warn = norms > B * (1 + 1e-12)  # rounding at the bound is not reported
    clipped = norms > B
    per = (lambda a: a[:, None]) if rows is None else (lambda a: a[rows])
    V *= per(np.where(clipped, 1.0 / np.where(clipped, norms, 1.0), 1.0 / B))
    _push_back(V, rows, n_rows, per)
    return warn


def clip_block_l2(V, rows, n_rows, B):
    """Clip, in place, the rows of one block to ||x_tilde||_2 = min(||x||, B) / B <= 1.

    ``V`` holds the values of ``n_rows`` rows: a dense (n_rows, p) block (``rows`` is
    None) or the stored values of CSR rows (``rows``: their local row ids). Norms are
    computed on rows pre-scaled by their largest entry (``||x|| = m r``, r in [1, sqrt(p)]),
    so they neither overflow nor underflow; a row whose computed norm after scaling is
    1 + O(ulp) is pushed back to <= 1. Returns the mask of rows clipped beyond rounding.
    """
    if _FAST_B[0] < B < _FAST_B[1]:
        sq = np.einsum("ij,ij->i", V, V) if rows is None else np.bincount(rows, V * V, n_rows)
        if np.isfinite(sq).all():
            return _clip_direct(V, rows, n_rows, np.sqrt(sq), B)
    A = np.abs(V)
    if rows is None:
        m = A.max(axis=1) if V.shape[1] else np.zeros(n_rows)
    else:
        m = np.zeros(n_rows)
        np.maximum.at(m, rows, A)
    del A
    safe = np.where(m > 0, m, 1.0)
    per = (lambda a: a[:, None]) if rows is None else (lambda a: a[rows])
    S = V / per(safe)
    r = np.sqrt(np.einsum("ij,ij->i", S, S) if rows is None else np.bincount(rows, S * S, n_rows))
    with np.errstate(over="ignore", divide="ignore"):
        limit = B / safe  # ||x|| > B  <=>  r > B / m (inf: never)
    clipped = (m > 0) & (r > limit)
    warn = (m > 0) & (r > limit * (1 + 1e-12))  # rounding at the bound is not reported
    safe_r = np.where(clipped, r, 1.0)
    with np.errstate(over="ignore"):  # x / B overflows only in rows that are clipped
        V[...] = np.where(per(clipped), S / per(safe_r), V / B)
    del S
    _push_back(V, rows, n_rows, per)
    return warn


def clip_block_inf(V, rows, n_rows, B):
    """Clip, in place, the entries of one block to [-B, B] and divide by B (|x_tilde_ij| <= 1)."""
    over = np.abs(V) > B
    if rows is None:
        warn = over.any(axis=1)
    else:
        warn = np.zeros(n_rows, dtype=bool)
        warn[rows[over]] = True
    np.clip(V, -B, B, out=V)
    V /= B
    return warn


def _pairwise_sums(S):
    """Sums over axis 0 of a 2-D array ``S`` (shape (m, k)), in NumPy's pairwise order, as k-vectors.

    ``np.add.reduce`` of float64 adds a run of ``m`` values in the order of NumPy's
    ``pairwise_sum`` (``numpy/_core/src/umath/loops_utils.h.src``): below 8 values one by one
    from -0.0; up to 128, eight running sums over the multiples of 8, combined as
    ``((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))``, then the rest one by one; above
    128, the two halves (the first a multiple of 8) recursively. Here the same additions are
    made on whole rows of ``S``, one vector operation per addition, so the k sums are those of
    ``np.add.reduce(R, axis=1)`` for the row-major block ``R = S.T`` bit for bit (the norms of
    ``np.linalg.norm(R, axis=1)``, which tests/test_blockwise.py checks; a column-major ``R`` is
    reduced in another order), at the cost of a few contiguous passes instead of one short
    reduction per row.
    """
    m = S.shape[0]
    if m < 8:
        out = np.full(S.shape[1], -0.0)
        for i in range(m):
            out += S[i]
        return out
    if m <= 128:
        stop = m - m % 8
        r = S[:8].copy()
        for i in range(8, stop, 8):
            r += S[i:i + 8]
        r[0] += r[1]
        r[2] += r[3]
        r[0] += r[2]
        r[4] += r[5]
        r[6] += r[7]
        r[4] += r[6]
        out = r[0]
        out += r[4]
        for i in range(stop, m):
            out += S[i]
        return out
    half = m // 2
    half -= half % 8
    out = _pairwise_sums(S[:half])
    out += _pairwise_sums(S[half:])
    return out


def _clip_dense_l2(V, B, dest, T, S):
    """:func:`clip_block_l2` of a dense block on its direct path: the same values, written to ``dest``.

    ``V`` (rows, p) is the block as read from X (C-contiguous float64, not modified); ``dest``
    a (rows, p) view of the output (any layout); ``T`` and ``S`` (p, rows) C-contiguous
    scratch. Returns False (nothing written) when the direct path does not apply: ``B``
    outside ``_FAST_B``, or a squared row norm that is not finite (a NaN or infinite entry,
    or an overflow: the caller then checks the entries and runs the general kernel).

    The values are those of :func:`clip_block_l2` bit for bit: the same ``einsum`` norms on
    rows of the same layout, the same scale factors and products, and the same push-back
    test on the norms of ``np.linalg.norm(V, axis=1)`` (:func:`_pairwise_sums` on the
    transposed block), with rows that pass it divided by 1.0 (exact) instead of being left
    out. The clipped block is formed transposed, so that every later pass is contiguous
    and the division writes straight into ``dest`` (whose columns are contiguous in a
    column-major output). No branch depends on the data (besides the non-finite fallback):
    the same passes for every block of a shape.
    """
    if not _FAST_B[0] < B < _FAST_B[1]:
        return False
    sq = np.einsum("ij,ij->i", V, V)
    if not np.isfinite(sq).all():
        return False
    norms = np.sqrt(sq, out=sq)
    factor = np.full(norms.shape, 1.0 / B)
    np.divide(1.0, norms, out=factor, where=norms > B)
    np.multiply(V.T, factor, out=T)  # the clipped rows, transposed
    nt = _pairwise_sums(np.multiply(T, T, out=S))
    np.sqrt(nt, out=nt)
    over = nt > 1.0
    nt *= _SHRINK
    np.copyto(nt, 1.0, where=~over)
    np.divide(T, nt, out=dest.T)
    return True


def normalize_dense(X, B, clip, n_extra, order="C"):
    """One float64 (n, p + n_extra) allocation, filled and clipped in row blocks of the input.

    ``order="F"``: the output is column-major; each row block is cast and clipped in one
    reused C-ordered buffer, then copied into the output's columns (the same values). The
    l2 kernel's direct path is fused (:func:`_clip_dense_l2`: the same values in fewer
    passes; a C-contiguous float64 X is read in place, without the cast copy).
    """
    n, p = X.shape
    out = np.empty((n, p + n_extra), order=order)
    step = max(1, BLOCK_ENTRIES // max(p, 1))
    rows = min(step, n)
    buf = np.empty((rows, p)) if order == "F" else None
    fused = clip is clip_block_l2 and _FAST_B[0] < B < _FAST_B[1]
    if fused:
        T, S = np.empty((p, rows)), np.empty((p, rows))
        direct = X.dtype == np.float64 and X.flags.c_contiguous  # blocks of X are C-contiguous (rows, p) already
        cast = buf if buf is not None else np.empty((rows, p))
    for start in range(0, n, step):  # blocks of rows, each a few MB
        stop = min(start + step, n)
        k = stop - start
        if fused:
            if direct:
                Vin = X[start:stop]
            else:
                Vin = cast[:k]
                Vin[...] = X[start:stop]
            if _clip_dense_l2(Vin, B, out[start:stop, :p], T[:, :k], S[:, :k]):
                continue
        V = out[start:stop, :p] if buf is None else buf[:k]
        V[...] = X[start:stop]  # the float64 cast of any numeric input, exact for float16/32
        # a finite sum has finite terms; a non-finite one (inf, NaN, or finite entries whose sum
        # overflows) falls back to the entrywise test
        with np.errstate(over="ignore", invalid="ignore"):  # no data-dependent warning
            total = V.sum()
        if not np.isfinite(total) and not np.isfinite(V).all():
            raise ValueError("X contains NaN or infinity; clean or impute it first.")
        clip(V, None, V.shape[0], B)
        if buf is not None:
            out[start:stop, :p] = V
    return out


def is_canonical_csr(X):
    """Whether CSR ``X`` is well formed with strictly increasing column indices in every row and no stored zero.

    Checked on the arrays themselves in row blocks (flags such as ``has_canonical_format``
    are not trusted), without modifying X.
    """
    n, p = X.shape
    ptr, nnz = np.asarray(X.indptr), X.indptr[-1] if len(X.indptr) == n + 1 else -1
    if nnz < 0 or ptr[0] != 0 or nnz > min(len(X.indices), len(X.data)) or (np.diff(ptr) < 0).any():
        return False
    bounds = _row_blocks(n, ptr[1:])
    for s, e in zip(bounds[:-1], bounds[1:]):
        idx = X.indices[ptr[s]:ptr[e]]
        if idx.size and (idx.min() < 0 or idx.max() >= p or (X.data[ptr[s]:ptr[e]] == 0).any()):
            return False
        inner = np.ones(max(idx.size - 1, 0), dtype=bool)
        inner[ptr[s + 1:e][(ptr[s + 1:e] > ptr[s]) & (ptr[s + 1:e] < ptr[e])] - ptr[s] - 1] = False
        if (np.diff(idx)[inner] <= 0).any():
            return False
    return True


def normalize_csr(X, B, clip, n_extra):
    """Clipped float64 CSR ``[X / B, 1]`` in one allocation of nnz + n_extra n entries, filled in row blocks.

    ``X`` must be canonical (:func:`is_canonical_csr`); each block's values are cast
    to float64, checked finite and clipped, then written after the constant of the
    intercept column (stored last in each row).
    """
    n, p = X.shape
    ptr = np.asarray(X.indptr, dtype=np.int64)
    out_ptr = ptr + n_extra * np.arange(n + 1)
    index_dtype = np.int64 if max(out_ptr[-1], p + 1) > np.iinfo(np.int32).max else np.int32
    data, indices = np.empty(out_ptr[-1]), np.empty(out_ptr[-1], dtype=index_dtype)
    bounds = _row_blocks(n, ptr[1:])
    for s, e in zip(bounds[:-1], bounds[1:]):
        lo, hi = ptr[s], ptr[e]
        V = np.array(X.data[lo:hi], dtype=np.float64)
        if not np.isfinite(V).all():
            raise ValueError("X contains NaN or infinity (after summing duplicate sparse entries); "
                             "clean or impute it first.")
        rows = np.repeat(np.arange(e - s), np.diff(ptr[s:e + 1]))
        clip(V, rows, e - s, B)
        cols = X.indices[lo:hi]
        if n_extra:
            ends = ptr[s + 1:e + 1] - lo
            V, cols = np.insert(V, ends, 1.0), np.insert(cols, ends, p)
        data[out_ptr[s]:out_ptr[e]], indices[out_ptr[s]:out_ptr[e]] = V, cols
    out = sp.csr_matrix((data, indices, out_ptr.astype(index_dtype)), shape=(n, p + n_extra))
    out.has_sorted_indices = True
    return out


def count_clipped(X, B, clip):
    """Rows of X (2-D numeric ndarray or canonical CSR) that ``clip`` clips beyond rounding.

    Runs the clipping kernel on float64 copies of row blocks (X is not modified, no
    X-sized temporary), so the count is exactly the number of rows the normalization
    clips by more than a relative 1e-12.
    """
    n = X.shape[0]
    if not sp.issparse(X):
        step = max(1, BLOCK_ENTRIES // max(X.shape[1], 1))
        return int(sum(np.count_nonzero(clip(np.array(X[s:s + step], dtype=np.float64), None, min(step, n - s), B))
                       for s in range(0, n, step)))
    ptr = np.asarray(X.indptr, dtype=np.int64)
    bounds = _row_blocks(n, ptr[1:])
    total = 0
    for s, e in zip(bounds[:-1], bounds[1:]):
        rows = np.repeat(np.arange(e - s), np.diff(ptr[s:e + 1]))
        total += np.count_nonzero(clip(np.array(X.data[ptr[s]:ptr[e]], dtype=np.float64), rows, e - s, B))
    return int(total)


def row_norms(X):
    """||x_i||_2 of every row of a float64 ndarray or CSR matrix, without an X-sized temporary."""
    if not sp.issparse(X):
        return np.sqrt(np.einsum("ij,ij->i", X, X))
    n = X.shape[0]
    sq = np.zeros(n)
    bounds = _row_blocks(n, X.indptr[1:])
    for s, e in zip(bounds[:-1], bounds[1:]):  # blocks of rows
        lo, hi = X.indptr[s], X.indptr[e]
        rows = np.repeat(np.arange(e - s), np.diff(X.indptr[s:e + 1]))
        sq[s:e] = np.bincount(rows, np.square(X.data[lo:hi]), e - s)
    return np.sqrt(sq)
