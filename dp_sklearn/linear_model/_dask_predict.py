"""Prediction on dask input: lazily, block of rows by block of rows, on the workers.

A fitted model is public (it is the release), so applying it to data needs no privacy
argument; what matters at scale is that X never comes to the client. For a dask array
(or dask DataFrame) ``predict``, ``decision_function``, ``predict_proba`` and
``predict_log_proba`` return a lazy dask array with the row chunks of X: each worker
applies the in-memory method of the (pickled) estimator to its own blocks, and nothing
is computed until the caller asks. ``score`` follows from ``predict`` (scikit-learn's
metrics then bring the two n-sized vectors, y and the predictions, to the client).
"""

from __future__ import annotations

import functools
import warnings

import numpy as np
from sklearn.utils.validation import _check_feature_names, check_is_fitted

from .._dask_design import is_dask_collection

__all__ = ["is_dask_collection", "dask_rows", "predict_blockwise", "blockwise_on_dask"]


def dask_rows(est, X):
    """``X`` as a 2-D dask array whose blocks hold whole rows, with its columns checked.

    Parameters
    ----------
    est : fitted estimator
        Gives ``n_features_in_`` (and ``feature_names_in_`` for a DataFrame).
    X : dask.array.Array or dask.dataframe.DataFrame of shape (n_samples, n_features)
        Samples.

    Returns
    -------
    X : dask.array.Array
        One chunk along the columns.

    Raises
    ------
    ValueError
        When X is not 2-D, its number of columns differs from ``n_features_in_``, or a
        DataFrame's column names differ from ``feature_names_in_``.
    """
    # a dask DataFrame's names are those of its (empty pandas) ``_meta``, as in fit
    _check_feature_names(est, getattr(X, "_meta", X) if hasattr(X, "columns") else X, reset=False)
    if hasattr(X, "to_dask_array"):  # DataFrame: partitions become row blocks
        X = X.to_dask_array(lengths=True)
    if X.ndim != 2:
        raise ValueError(f"Expected a 2-D dask array for X, got {X.ndim} dimension(s).")
    if X.shape[1] != est.n_features_in_:
        raise ValueError(f"X has {X.shape[1]} features, but {type(est).__name__} is expecting "
                         f"{est.n_features_in_} features as input.")
    return X.rechunk({1: -1}) if X.numblocks[1] > 1 else X


def predict_blockwise(est, method, X):
    """Lazy ``est.<method>(X)`` of a dask ``X``, computed block by block on the workers.

    Parameters
    ----------
    est : fitted estimator
        Its in-memory ``method`` is applied to each block (a NumPy array).
    method : {"predict", "decision_function", "predict_proba", "predict_log_proba"}
        The method.
    X : dask.array.Array or dask.dataframe.DataFrame of shape (n_samples, n_features)
        Samples.

    Returns
    -------
    out : dask.array.Array of shape (n_samples,) or (n_samples, n_outputs)
        Lazy; same row chunks as X.
    """
    check_is_fitted(est)
    X = dask_rows(est, X)
    probe = _apply(np.zeros((1, X.shape[1])), est, method)  # the output's dtype and width, from the public model
    if probe.ndim == 1:
        return X.map_blocks(_apply, est, method, drop_axis=1, dtype=probe.dtype,
                            meta=np.empty((0,), dtype=probe.dtype))
    return X.map_blocks(_apply, est, method, chunks=(X.chunks[0], (probe.shape[1],)), dtype=probe.dtype,
                        meta=np.empty((0, 0), dtype=probe.dtype))


def _apply(block, est, method):
    """``est.<method>(block)`` on one NumPy block of rows.

    The column names were checked once on the whole collection (:func:`dask_rows`);
    the blocks are plain arrays, so scikit-learn's "no valid feature names" warning
    would fire once per block and is silenced here.
    """
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="X does not have valid feature names")
        return getattr(est, method)(block)


def blockwise_on_dask(method):
    """Decorator: a prediction method that returns :func:`predict_blockwise` for dask ``X``.

    Parameters
    ----------
    method : callable
        ``method(self, X)``, the in-memory implementation (also what each block runs).

    Returns
    -------
    wrapper : callable
        Same name and docstring.
    """
    @functools.wraps(method)
    def wrapper(self, X):
        if is_dask_collection(X):
            return predict_blockwise(self, method.__name__, X)
        return method(self, X)
    return wrapper
