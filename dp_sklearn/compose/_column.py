"""make_private_column_transformer: a DataFrame's public schema -> private scalers + one-hot encoding."""

from __future__ import annotations

import numbers

import numpy as np
from sklearn.base import clone
from sklearn.compose import ColumnTransformer
from sklearn.preprocessing import OneHotEncoder

from ..preprocessing import DPStandardScaler

__all__ = ["make_private_column_transformer"]


def _schema(X):
    """Column names and dtypes of a DataFrame (its public schema; no value is read)."""
    if not (hasattr(X, "columns") and hasattr(X, "dtypes")):
        raise TypeError(
            "X must be a pandas DataFrame (its column names and dtypes are the public schema), "
            f"got {type(X).__name__}.")
    names = [str(c) for c in X.columns]
    if any(not isinstance(c, str) for c in X.columns) or len(set(names)) != len(names):
        raise ValueError("X must have unique string column names.")
    return dict(zip(names, X.dtypes))


def _is_numeric(dtype):
    kind = getattr(dtype, "kind", None)
    return kind in ("i", "u", "f") and not _is_categorical(dtype)


def _is_categorical(dtype):
    return str(dtype) == "category"


def _check_categories(categories, schema):
    """``categories`` as a dict column -> list of public levels."""
    if categories is None:
        return {}
    if not isinstance(categories, dict):
        raise ValueError(f"categories must be None or a dict column -> list of levels, got {type(categories).__name__}.")
    out = {}
    for col, levels in categories.items():
        if col not in schema:
            raise ValueError(f"categories names a column that is not in X: {col!r}.")
        if isinstance(levels, (str, bytes)) or not hasattr(levels, "__iter__"):
            raise ValueError(f"categories[{col!r}] must be a list of levels, got {levels!r}.")
        levels = list(levels)
        if not levels or len(set(map(repr, levels))) != len(levels):
            raise ValueError(f"categories[{col!r}] must be a non-empty list of distinct levels, got {levels!r}.")
        out[col] = levels
    return out


def _check_bounds(bounds, schema, numeric):
    """``bounds`` as a dict numeric column -> (low, high) of finite floats, low < high."""
    if bounds is None:
        return {}
    if not isinstance(bounds, dict):
        raise ValueError(f"bounds must be None or a dict column -> (low, high), got {type(bounds).__name__}.")
    out = {}
    for col, pair in bounds.items():
        if col not in schema:
            raise ValueError(f"bounds names a column that is not in X: {col!r}.")
        if col not in numeric:
            raise ValueError(f"bounds[{col!r}]: the column is categorical (one-hot columns lie in [0, 1]); "
                             "give bounds for numeric columns only.")
        try:
            lo, hi = pair
            ok = all(isinstance(v, numbers.Real) and not isinstance(v, bool) for v in (lo, hi))
        except (TypeError, ValueError):
            ok = False
        if not ok or not (np.isfinite(lo) and np.isfinite(hi) and lo < hi):
            raise ValueError(f"bounds[{col!r}] must be a pair (low, high) of finite numbers with low < high, "
                             f"got {pair!r}.")
        out[col] = (float(lo), float(hi))
    return out


def make_private_column_transformer(X, *, categories=None, bounds=None, scaler=None):
    """Build a private ColumnTransformer from a DataFrame's public schema.

    Reads only the schema of ``X``: its column names, dtypes and the categories of pandas
    ``Categorical`` columns, never a value. Categorical columns are one-hot encoded with their
    public levels (``OneHotEncoder(categories=..., handle_unknown="ignore")``: fitting it reads
    nothing, each output lies in [0, 1] and spends no budget). Numeric columns go to private
    scalers: those with public ``bounds`` to one scaler that clips to them (it pays only for
    the means and variances), the others to one that also finds their ranges privately.

    Parameters
    ----------
    X : pandas.DataFrame
        A table with the training data's columns (only its schema is used, so an empty frame
        with the right dtypes works as well).
    categories : dict or None, default=None
        Public levels per column, ``{column: [level, ...]}``: required for every object,
        string or boolean-free non-numeric column that is not a pandas ``Categorical``; also
        turns a numeric column of integer codes into a categorical one, and overrides the
        levels of a ``Categorical`` column. Values outside the levels are encoded as all zeros.
    bounds : dict or None, default=None
        Public ranges of numeric columns, ``{column: (low, high)}`` in the column's units (e.g.
        ``{"age": (0, 120)}``). Values outside are clipped to the range.
    scaler : transformer or None, default=None
        Template of the private scaler of the numeric columns (cloned; its ``bounds`` is set
        per group). ``None``: ``DPStandardScaler()``.

    Returns
    -------
    transformer : sklearn.compose.ColumnTransformer
        Steps ``"scaled_bounded"`` (numeric columns with ``bounds``), ``"scaled"`` (numeric
        columns without) and ``"onehot"`` (categorical columns), each present only when it has
        columns; dense output (``sparse_threshold=0``), columns not listed are dropped (there
        are none: every column of ``X`` is assigned or an error is raised). The private
        scalers' ``epsilon`` and ``delta`` are set by the enclosing private pipeline (see
        ``dp_sklearn.make_private_pipeline``) or by hand.

    Raises
    ------
    TypeError
        If ``X`` is not a DataFrame.
    ValueError
        If a column is neither numeric, boolean nor ``Categorical`` and ``categories`` does not
        list its levels (the message names the columns and the parameter ``categories``); if
        ``categories`` or ``bounds`` names a column not in ``X``, a level list is empty or
        repeats a level, or a bound is not a finite pair with low < high (the message names
        the parameter ``bounds`` and the column); if ``bounds`` names a categorical column.

    See Also
    --------
    dp_sklearn.DPStandardScaler : the default private scaler.
    dp_sklearn.make_private_pipeline : one budget for the whole pipeline.

    Notes
    -----
    What is public: the schema, the declared levels and bounds, ``n_samples``. What is private:
    the scalers' statistics (``docs/privacy.md``, "Private statistics and preprocessing"). A
    Categorical's levels are part of its dtype and are taken as public: build it with the
    levels from the data's documentation (``pd.CategoricalDtype([...])``). ``astype("category")``
    or ``X[col].unique()`` on the training data makes the levels that occur in it public,
    which this function cannot detect.

    Examples
    --------
    >>> import pandas as pd
    >>> from dp_sklearn.compose import make_private_column_transformer
    >>> X = pd.DataFrame({"age": [31.0, 45.0, 62.0], "income": [41e3, 83e3, 25e3],
    ...                   "region": pd.Categorical(["north", "south", "north"],
    ...                                            categories=["north", "south", "west"])})
    >>> ct = make_private_column_transformer(X, bounds={"age": (0, 120)})
    >>> [(name, cols) for name, _, cols in ct.transformers]
    [('scaled_bounded', ['age']), ('scaled', ['income']), ('onehot', ['region'])]
    """
    schema = _schema(X)
    cats = _check_categories(categories, schema)
    for col, dtype in schema.items():
        if col in cats:
            continue
        if _is_categorical(dtype):
            cats[col] = list(dtype.categories)
        elif getattr(dtype, "kind", None) == "b":
            cats[col] = [False, True]
    numeric = [c for c, d in schema.items() if c not in cats and _is_numeric(d)]
    missing = [c for c in schema if c not in cats and c not in numeric]
    if missing:
        raise ValueError(
            f"columns {missing} are neither numeric nor pandas Categorical: declare their public levels with "
            "categories={column: [level, ...]} (from the data's documentation, not from the training values), "
            "or convert them before building the transformer.")
    pub = _check_bounds(bounds, schema, numeric)
    template = DPStandardScaler() if scaler is None else scaler
    steps = []
    bounded = [c for c in numeric if c in pub]
    if bounded:
        lo = np.array([pub[c][0] for c in bounded])
        hi = np.array([pub[c][1] for c in bounded])
        steps.append(("scaled_bounded", clone(template).set_params(bounds=(lo, hi)), bounded))
    free = [c for c in numeric if c not in pub]
    if free:
        steps.append(("scaled", clone(template).set_params(bounds=None), free))
    onehot = [c for c in schema if c in cats]
    if onehot:
        enc = OneHotEncoder(categories=[cats[c] for c in onehot], handle_unknown="ignore", sparse_output=False)
        steps.append(("onehot", enc, onehot))
    return ColumnTransformer(steps, remainder="drop", sparse_threshold=0.0, verbose_feature_names_out=True)
