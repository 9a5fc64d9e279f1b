"""The fit template's steps for dask input (see :mod:`dp_sklearn._dask_design` for the engine).

* :func:`validate_dask` -- shapes, dtypes, finiteness (one pass, before any budget is
  reserved), row chunks aligned between X and y, and the solvers that can run
  blockwise (:data:`DASK_SOLVERS`: every gradient mechanism, full-batch or
  Poisson-sampled, and every Gram mechanism);
* :func:`encode_dask_labels` -- the classifiers' label encoding, lazily per block (only
  the distinct labels reach the client);
* :func:`auto_inputs` -- the inputs of the ``"auto"`` bounds. The private quantiles of
  :mod:`dp_sklearn._private_stats` sort their 1-D input and draw one Gumbel per
  interval from the fit's Generator on the client, so their input comes to the client:
  the n targets for ``bounds_y="auto"``, the n row norms (computed blockwise) for
  ``data_norm="auto"``. That is 8 bytes per row, 1 / n_features of X; pass public
  bounds (``bounds_y=(low, high)``, a numeric ``data_norm``) and no n-sized vector
  leaves the cluster.
"""

from __future__ import annotations

import numpy as np
from sklearn.utils.validation import _check_feature_names

from .._dask_design import is_dask_collection
from ..solvers import get_solver

__all__ = ["DASK_SOLVERS", "check_dask_solver", "validate_dask", "encode_dask_labels", "auto_inputs"]

#: solvers whose data access is clipped gradient sums (full or Poisson-sampled) or the Gram matrix (blockwise)
DASK_SOLVERS = ("frank_wolfe", "frank_wolfe_gaussian", "ight", "mirror_descent", "noisy_agd", "noisy_gd", "noisy_newton", "ssp")
#: feasible sets whose solvers run their own (noiseless) iteration at epsilon = inf (as
#: ``_base._RUNS_AT_INF``); the other solvers call an exact in-memory minimizer there
_RUN_AT_INF = ("l0",)


def _as_dask_array(obj, name, row_chunks=None):
    import dask.array as da

    if is_dask_collection(obj) and hasattr(obj, "to_dask_array"):  # dask DataFrame or Series
        obj = obj.to_dask_array(lengths=True)
    elif not is_dask_collection(obj):
        arr = np.asarray(obj)
        obj = da.from_array(arr, chunks=(row_chunks,) + arr.shape[1:] if row_chunks else "auto")
    if not isinstance(obj, da.Array):
        raise ValueError(f"{name} must be a dask array or dataframe (or array-like), got {type(obj).__name__}.")
    if any(np.isnan(c) for chunks in obj.chunks for c in chunks):
        obj = obj.compute_chunk_sizes()
    return obj


def check_dask_solver(est, n_samples=None):
    """Raise a ValueError naming the solver unless it (and its settings) can run blockwise.

    Full-batch and Poisson-sampled steps (``batch_size``, or the sampled large-n default)
    both run blockwise, on the in-memory fit's own plan.
    """
    solver = est._resolved_solver(n_samples)
    allowed = est._allowed_solvers()
    if solver not in allowed:
        return  # the template raises its own error for a solver the estimator does not serve
    capable = [s for s in allowed if s in DASK_SOLVERS]
    if solver not in DASK_SOLVERS:
        raise ValueError(f"solver={solver!r} cannot run on dask input (it needs the whole data in memory: an exact "
                         f"minimizer, output/objective perturbation or sampling); solvers of {est._describe()} that "
                         f"accept dask input: {capable}.")
    if est.epsilon == np.inf and not set(get_solver(solver).constraints) & set(_RUN_AT_INF):
        raise ValueError(f"epsilon=inf (the exact non-private minimizer) is not supported for dask input with "
                         f"solver={solver!r}; use a finite epsilon.")


def validate_dask(est, X, y):
    """Validate dask (or mixed dask / in-memory) X and y; return dask arrays with aligned row chunks.

    Parameters
    ----------
    est : _DPLinearBase
        The estimator (sets ``n_features_in_`` and ``feature_names_in_``).
    X : dask array or dataframe of shape (n_samples, n_features)
    y : dask array or series of shape (n_samples,)

    Returns
    -------
    X, y : dask.array.Array
        X with one chunk along the features; y chunked like the rows of X.

    Raises
    ------
    ValueError
        Bad shapes or dtypes, NaN or infinity, a solver that cannot run blockwise.
    """
    import dask
    import dask.array as da

    if y is None:
        raise ValueError(f"{type(est).__name__} requires y to be passed, but the target y is None.")
    X_in = X
    X = _as_dask_array(X, "X")
    if X.ndim != 2:
        raise ValueError(f"X must be 2-D, got an array of shape {X.shape}.")
    check_dask_solver(est, X.shape[0])
    if X.dtype.kind not in "biuf":
        raise ValueError(f"X must be numeric, got dtype {X.dtype}.")
    X = X.rechunk({1: -1})
    y = _as_dask_array(y, "y", X.chunks[0])
    if y.ndim == 2 and y.shape[1] == 1:
        y = y[:, 0]
    if y.ndim != 1:
        raise ValueError(f"y must be 1-D, got an array of shape {y.shape}.")
    if X.shape[0] != y.shape[0]:
        raise ValueError(f"X and y have inconsistent numbers of samples: X has {X.shape[0]}, y has {y.shape[0]}.")
    if X.shape[0] < 1:
        raise ValueError("X has 0 samples; a minimum of 1 is required.")
    if est._y_validation.get("y_numeric") and y.dtype.kind not in "biuf":
        raise ValueError(f"y must be numeric for a regressor, got dtype {y.dtype}.")
    y = y.rechunk({0: X.chunks[0]})
    checks = [da.map_blocks(_all_finite, a, drop_axis=tuple(range(1, a.ndim)), dtype=bool).all()
              for a in ([X, y] if y.dtype.kind in "biuf" else [X])]
    if not all(dask.compute(*checks)):
        raise ValueError("Input X or y contains NaN or infinity; clean or impute it first.")
    # a dask DataFrame's names are those of its (empty, pandas) meta frame
    _check_feature_names(est, getattr(X_in, "_meta", X_in) if hasattr(X_in, "columns") else X_in, reset=True)
    est.n_features_in_ = X.shape[1]
    return X, y


def _all_finite(block):
    """One flag per row block (shape (rows,), all equal): whether every entry of the block is finite.

    A finite sum proves every entry finite (a NaN or infinity makes the sum non-finite); a
    non-finite sum (which finite entries can also give, by overflow) falls back to the
    entrywise test. One pass without a block-sized temporary in the common case.
    """
    with np.errstate(over="ignore", invalid="ignore"):
        ok = bool(np.isfinite(np.sum(block))) or bool(np.isfinite(block).all())
    return np.full(block.shape[0], ok)


def encode_dask_labels(est, y):
    """The classifiers' ``_encode_targets`` on dask labels: (lazily encoded y, loss).

    The distinct labels are computed on the cluster and passed to the estimator's own
    in-memory encoding (which checks them and sets ``classes_``); each block is then
    encoded the same way (``+-1`` for two classes, one-hot for more).
    """
    import dask.array as da

    labels = np.asarray(da.unique(y).compute())
    _, loss = est._encode_targets(labels)
    classes = est.classes_
    if classes.size == 2:
        return da.map_blocks(_encode_binary, y, classes, dtype=np.float64), loss
    return da.map_blocks(_encode_onehot, y, classes, dtype=np.float64, new_axis=1,
                         chunks=(y.chunks[0], (classes.size,))), loss


def _encode_binary(yb, classes):
    return np.where(np.searchsorted(classes, yb) == 1, 1.0, -1.0)


def _encode_onehot(yb, classes):
    return np.eye(classes.size)[np.searchsorted(classes, yb)]


def auto_inputs(X, y, names, row_norms):
    """The client-side inputs of the ``"auto"`` bounds ``names`` (see the module docstring).

    Parameters
    ----------
    X : dask.array.Array of shape (n_samples, n_features)
    y : dask.array.Array of shape (n_samples,)
    names : tuple of str
        The estimates this fit makes (``"bounds_y"``, ``"data_norm"``).
    row_norms : callable
        ``row_norms(block) -> (rows,)``: the row norms of one block of X, as the
        in-memory estimate computes them.

    Returns
    -------
    y : ndarray or dask array
        y on the client when ``"bounds_y"`` is estimated, else unchanged.
    norms : ndarray of shape (n_samples,) or None
        The row norms when ``"data_norm"`` is estimated.
    """
    import dask
    import dask.array as da

    wanted = {}
    if "bounds_y" in names:
        wanted["y"] = y
    if "data_norm" in names:
        wanted["norms"] = da.map_blocks(row_norms, X, drop_axis=1, dtype=np.float64)
    got = dict(zip(wanted, dask.compute(*wanted.values())))
    return got.get("y", y), got.get("norms")
