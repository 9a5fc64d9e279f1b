"""The distributed engine: a normalized design whose rows stay on a dask cluster.

A fit on ``dask.array`` (or ``dask.dataframe``) input runs the same mechanism as the
in-memory fit; only *where* the data-facing sums are computed changes. The rows are
normalized block by block on the workers by the in-memory functions themselves
(:func:`dp_sklearn._data.normalize_X` and :func:`dp_sklearn._data.normalize_y` applied
to each block of rows: both act row by row, so a block's rows are clipped exactly as
in a whole-array call), and the only quantities that reach the client are

* per full-batch step, the clipped gradient sum ``sum_i clip(grad l(theta; x_i, y_i), C)``
  (or the exact gradient sum for Frank-Wolfe's scores): a ``dim``-vector, the sum of
  one ``dim``-vector per block, each computed with the loss's own
  ``clipped_gradient_sum`` on the block;
* per Poisson-sampled step, the clipped gradient sum over the sampled rows: the
  indices are drawn on the client from the fit's Generator exactly as in memory
  (:func:`dp_sklearn.solvers._common.poisson_sample`), split at the block boundaries,
  and each block sums the clipped gradients of its sampled rows;
* for the squared loss's Gram path (:mod:`dp_sklearn._gram`), ``G = X^T X`` and
  ``b = X^T y`` once per fit (``dim x dim`` and ``dim``), summed over blocks;
and nothing about clipping: no count and no warning leaves the blocks (``docs/privacy.md``,
"What the analyst sees"; ``report_clipping=True`` is refused for dask input).

**Privacy.** The mechanism is unchanged, so its analysis is: the clipped sum a step
releases is the same function of the data (a sum over blocks is a sum over rows, and
every row is clipped to the same public bound), so its replace-one sensitivity is the
same 2C; the noise is drawn on the client from the fit's single
``numpy.random.Generator`` in the same order and with the same scales as in memory,
after the block sums are added, and the plan (the solver ``"auto"`` resolves to, T,
step sizes, noise scales, the sampling rate, which of the Gram or the per-step path
runs) is the in-memory fit's own plan, from the same planning function and public
values only. With the
same ``random_state`` the coefficients therefore equal the in-memory ones up to the
rounding of the block sums (``tests/test_dask.py``), and the statistical audits of
the in-memory mechanisms cover it. The cluster and the client are inside the trust
boundary, like the process holding an in-memory X: the partial sums are not releases.
The chunking of the array reveals n (public) and nothing else.

Persistence: a mechanism that makes several passes (a per-step gradient, full or
sampled) persists the normalized blocks on the cluster at its first step (one copy of X
with its intercept column, spread over the workers); the Gram path makes a single pass
and persists nothing. On a distributed client a step is one task per worker, over the
blocks that worker holds, so its cost is one round trip plus the worker's share of the
pass (``benchmarks/results/dask_scale.md`` measures it against the in-memory fit); on a
local scheduler the blocks live in this process. Dask is imported only when a dask
collection is passed.
"""

from __future__ import annotations

import sys

import numpy as np
import scipy.sparse as sp

from ._data import Problem, normalize_X, normalize_y

__all__ = ["DaskDesign", "DaskTargets", "is_dask_collection", "dask_problem", "normalize_dask", "normalize_y_dask"]


def is_dask_collection(obj):
    """Whether ``obj`` is a dask collection (array, dataframe, ...), without importing dask.

    Parameters
    ----------
    obj : object
        Any input.

    Returns
    -------
    bool
        ``False`` whenever dask has not been imported (no dask object can exist then).
    """
    if "dask" not in sys.modules:
        return False
    from dask import is_dask_collection as _is_dask

    return bool(_is_dask(obj))


# --------------------------------------------------------------------------- block tasks (run on the workers)
def _block_row_norms(Xt):
    if sp.issparse(Xt):
        return np.sqrt(np.asarray(Xt.multiply(Xt).sum(axis=1)).ravel())
    return np.linalg.norm(Xt, axis=1)


def _prepare_block(Xb, yb, x_args, y_bounds):
    """One block of the normalized problem: (X_tilde, y_tilde, row norms)."""
    Xt, _, _ = normalize_X(Xb, *x_args)
    yt = np.asarray(yb, dtype=np.float64) if y_bounds is None else normalize_y(yb, y_bounds)[0]
    return Xt, yt, _block_row_norms(Xt)


def _gram_block(Xb, yb, x_args, y_bounds):
    """(X_b^T X_b, X_b^T y_b) of one block, normalized on the worker (no row norms: not needed)."""
    Xt, _, _ = normalize_X(Xb, *x_args)
    yt = np.asarray(yb, dtype=np.float64) if y_bounds is None else normalize_y(yb, y_bounds)[0]
    G = np.asarray((Xt.T @ Xt).toarray() if sp.issparse(Xt) else Xt.T @ Xt, dtype=np.float64)
    return G, np.asarray(Xt.T @ yt, dtype=np.float64).ravel()


def _gram_of_prepared(block, _):
    """``[vec(X_b^T X_b), X_b^T y_b]`` of one persisted (normalized) block."""
    Xt, yt, _ = block
    G = np.asarray((Xt.T @ Xt).toarray() if sp.issparse(Xt) else Xt.T @ Xt, dtype=np.float64)
    return np.concatenate([G.ravel(), np.asarray(Xt.T @ yt, dtype=np.float64).ravel()])


def _gradient_block(block, clip_norm, *, loss, theta):
    """The block's clipped gradient sum (``clip_norm`` given) or its exact gradient sum."""
    Xt, yt, rn = block
    if clip_norm is not None:
        return loss.clipped_gradient_sum(Xt, yt, theta, rn, clip_norm)
    d = loss.dphi(loss.margins(Xt, theta), yt)
    return np.asarray(Xt.T @ d).ravel()


def _sampled_gradient_block(block, rows, *, loss, theta, clip_norm):
    """The block's clipped gradient sum over its rows ``rows`` (local indices of a Poisson sample)."""
    Xt, yt, rn = block
    return loss.clipped_gradient_sum(Xt[rows], yt[rows], theta, rn[rows], clip_norm)


def _blocks_sum(func, blocks, args, shared):
    """Worker task: ``sum_k func(block_k, arg_k, **shared)`` over blocks this worker holds, in block order."""
    return _sum_parts([func(block, arg, **shared) for block, arg in zip(blocks, args)])


def _sum_parts(parts):
    """Sum of the per-block results, in block order (deterministic)."""
    total = np.array(parts[0], dtype=np.float64, copy=True)
    for part in parts[1:]:  # a loop over blocks (a few per worker), not over samples
        total += part
    return total


def _sum_gram_parts(parts):
    return _sum_parts([p[0] for p in parts]), _sum_parts([p[1] for p in parts])


# --------------------------------------------------------------------------- client side
class DaskTargets:
    """The targets of a dask fit: a dask array aligned with the design's row blocks.

    Parameters
    ----------
    y : dask.array.Array of shape (n_samples,) or (n_samples, K)
        Encoded targets, chunked like the rows of X.
    bounds : tuple (low, high) or None
        Public range passed to :func:`dp_sklearn._data.normalize_y` on each block, or
        ``None`` for targets used as they are (class labels encoded as +-1 or one-hot).
    """

    def __init__(self, y, bounds=None):
        self.y = y
        self.bounds = bounds
        self.shape = y.shape

    def blocks(self):
        """One dask ``Delayed`` per block of rows."""
        return list(self.y.to_delayed(optimize_graph=False).ravel())


class _Transposed:
    """``design.T``: answers ``design.T @ design`` (G) and ``design.T @ targets`` (b)."""

    def __init__(self, design):
        self.design = design

    def __matmul__(self, other):
        gram, xty = self.design.gram_xty()
        if other is self.design:
            return gram
        if other is self.design.targets:
            return xty
        raise TypeError("a DaskDesign only forms X^T X and X^T y of its own targets.")


class DaskDesign:
    """The normalized design ``[clip(X) / data_norm, 1]`` of a dask fit, kept on the cluster.

    Offers the operations the gradient mechanisms take: the Gram matrix and ``X^T y``
    (``design.T @ design`` and ``design.T @ targets``, one pass), and, through
    :class:`_BlockwiseLoss`, the clipped or exact gradient sum at ``theta`` (one
    pass over the persisted blocks per call).

    Parameters
    ----------
    X : dask.array.Array of shape (n_samples, n_features)
        Raw data, one chunk along the features.
    data_norm : float
        Public row bound (units of X).
    data_norm_ord : {2, inf}
    fit_intercept : bool
    """

    def __init__(self, X, data_norm, data_norm_ord, fit_intercept):
        self.X = X
        self.x_args = (data_norm, data_norm_ord, fit_intercept)
        self.shape = (X.shape[0], X.shape[1] + bool(fit_intercept))
        self.targets = None
        self._gram = None
        self._blocks = None
        self._client = None
        self._groups = {}
        #: whether the Gram matrix is formed from the persisted blocks (set by :func:`dask_problem`)
        self.keep_blocks = False

    @property
    def T(self):
        """The transposed design, for ``design.T @ design`` and ``design.T @ targets``."""
        return _Transposed(self)

    def _pairs(self):
        x_blocks = list(self.X.to_delayed(optimize_graph=False).ravel())
        return list(zip(x_blocks, self.targets.blocks()))

    def gram_xty(self):
        """``(X^T X, X^T y)`` of the normalized problem, summed over blocks on the cluster (cached).

        From the persisted blocks when the plan also makes per-step passes (``keep_blocks``:
        they are normalized once for both), else in one pass that persists nothing.
        """
        if self._gram is None and self.keep_blocks:
            k, d = len(self._persisted()), self.shape[1]
            flat = self._block_sum(_gram_of_prepared, range(k), [None] * k)
            self._gram = (flat[:d * d].reshape(d, d), flat[d * d:])
        if self._gram is None:
            import dask

            parts = [dask.delayed(_gram_block, pure=False)(xb, yb, self.x_args, self.targets.bounds)
                     for xb, yb in self._pairs()]
            gram, xty = dask.compute(dask.delayed(_sum_gram_parts)(parts))[0]
            self._gram = (gram, xty)
        return self._gram

    def _persisted(self):
        """The normalized blocks, computed once at the first call and kept where they are.

        On a distributed client: one future per block, held by the workers, grouped by the
        worker that holds them (a step is one task per worker). On a local scheduler
        (threads, synchronous), whose workers are this process: the computed blocks themselves.
        """
        if self._blocks is None:
            import dask

            blocks = [dask.delayed(_prepare_block, pure=False)(xb, yb, self.x_args, self.targets.bounds)
                      for xb, yb in self._pairs()]
            client = _distributed_client()
            if client is None:
                self._blocks = list(dask.compute(*blocks))
            else:
                from distributed import wait

                futures = client.compute(blocks)
                wait(futures)
                who = client.who_has(futures)
                groups = {}
                for k, fut in enumerate(futures):  # blocks by the worker holding them (a few per worker)
                    groups.setdefault((tuple(who.get(fut.key, ())) or (None,))[0], []).append(k)
                self._client, self._groups, self._blocks = client, groups, futures
        return self._blocks

    def _block_sum(self, func, selected, per_block, **shared):
        """``sum_k func(block_k, per_block[i], **shared)`` over the blocks ``selected`` (the block sums, added).

        On a cluster, one task per worker sums its own selected blocks (no block moves; a
        step costs one round trip); the per-worker results (``dim``-vectors) are added on the
        client. On a local scheduler the blocks are summed here, in block order.
        """
        blocks = self._persisted()
        if self._client is None:
            return _sum_parts([func(blocks[k], arg, **shared) for k, arg in zip(selected, per_block)])
        args = dict(zip(selected, per_block))
        futures = []
        for addr, ks in self._groups.items():
            ks = [k for k in ks if k in args]
            if ks:
                futures.append(self._client.submit(_blocks_sum, func, [blocks[k] for k in ks], [args[k] for k in ks],
                                                   shared, workers=None if addr is None else [addr],
                                                   allow_other_workers=True, pure=False))
        return _sum_parts(self._client.gather(futures))

    def gradient_sum(self, loss, theta, clip_norm=None):
        """Sum over rows of the clipped (``clip_norm``) or exact per-example gradients at ``theta``."""
        k = len(self._persisted())
        return self._block_sum(_gradient_block, range(k), [clip_norm] * k, loss=loss, theta=theta)

    def sampled_gradient_sum(self, loss, theta, clip_norm, idx):
        """Sum of the clipped per-example gradients at ``theta`` over the rows ``idx`` (sorted global indices).

        The indices of a Poisson sample, drawn on the client from the fit's Generator
        (:func:`dp_sklearn.solvers._common.poisson_sample`), are split at the public block
        boundaries; each block holding sampled rows sums their clipped gradients with the
        loss's own ``clipped_gradient_sum`` (the in-memory step's quantity: a sum over the
        same rows, in another order). O(q n) indices leave the client per step.
        """
        loss = loss.loss if isinstance(loss, _BlockwiseLoss) else loss
        offsets = np.concatenate(([0], np.cumsum(self.X.chunks[0])))
        cuts = np.searchsorted(idx, offsets)
        selected = [k for k in range(len(offsets) - 1) if cuts[k + 1] > cuts[k]]
        if not selected:
            return np.zeros(theta.size)
        rows = [idx[cuts[k]:cuts[k + 1]] - offsets[k] for k in selected]
        return self._block_sum(_sampled_gradient_block, selected, rows, loss=loss, theta=theta, clip_norm=clip_norm)


def _distributed_client():
    """The distributed ``Client`` dask would compute with now, or ``None`` (a local scheduler)."""
    import dask.base

    owner = getattr(dask.base.get_scheduler(), "__self__", None)
    return owner if hasattr(owner, "map") and hasattr(owner, "gather") else None


class _BlockwiseLoss:
    """The fit's loss, whose data-facing sums run blockwise on the :class:`DaskDesign`.

    Every other attribute (name, constants, bounds) is the wrapped loss's own.
    """

    def __init__(self, loss):
        self.loss = loss

    def __getattr__(self, name):
        return getattr(self.loss, name)

    def clipped_gradient_sum(self, X, y, theta, row_norms, clip_norm, *args, **kwargs):
        """sum_i clip(grad l(theta; x_i, y_i), clip_norm), summed over the blocks."""
        return X.gradient_sum(self.loss, theta, clip_norm)

    def gradient(self, X, y, theta):
        """Gradient of the mean loss, from the blockwise exact gradient sum."""
        g = X.gradient_sum(self.loss, theta)
        g /= X.shape[0]
        return g


def normalize_dask(X, data_norm, data_norm_ord, fit_intercept):
    """:func:`dp_sklearn._data.normalize_X` for a dask array: the same bounds, applied per block.

    Parameters
    ----------
    X : dask.array.Array of shape (n_samples, n_features)
        Validated raw data (one chunk along the features).
    data_norm : float
    data_norm_ord : {2, inf}
    fit_intercept : bool

    Returns
    -------
    design : DaskDesign
        Lazy: no block is computed until a mechanism asks for a sum.
    x_norm, x_inf : float
        The public bounds, from ``normalize_X`` itself (applied to zero rows, which also
        validates ``data_norm`` and ``data_norm_ord``).
    """
    _, x_norm, x_inf = normalize_X(np.zeros((0, X.shape[1])), data_norm, data_norm_ord, fit_intercept)
    return DaskDesign(X, float(data_norm), data_norm_ord, fit_intercept), x_norm, x_inf


def normalize_y_dask(y, bounds_y):
    """:func:`dp_sklearn._data.normalize_y` for a dask array: ``(targets, mid, half)``, lazily.

    ``mid`` and ``half`` come from ``normalize_y`` itself (applied to no target, which
    also validates ``bounds_y``); each block is clipped and mapped on its worker.
    """
    _, mid, half = normalize_y(np.zeros(0), bounds_y)
    return DaskTargets(y, tuple(float(v) for v in bounds_y)), mid, half


def dask_problem(Xt, y_t, loss, x_norm, x_inf, l2_reg, passes=1):
    """The :class:`dp_sklearn._data.Problem` of a dask fit (design and targets on the cluster).

    ``y_t`` is a :class:`DaskTargets` (or a dask array of encoded labels); ``row_norms``
    is ``None`` (each block carries its own) and the loss is wrapped so that its sums
    run blockwise. ``passes``: the plan's public number of passes (``info["passes"]``);
    above 1 a Gram matrix is formed from the persisted blocks the steps use.
    """
    targets = y_t if isinstance(y_t, DaskTargets) else DaskTargets(y_t)
    Xt.targets = targets
    Xt.keep_blocks = passes > 1
    return Problem(Xt, targets, _BlockwiseLoss(loss), x_norm, x_inf, None, l2_reg)
