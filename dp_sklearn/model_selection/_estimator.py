"""What the search needs to know about the estimator it tunes.

* :class:`EstimatorSpec` finds the DP steps (every step, at any depth, exposing both
  ``epsilon`` and ``delta``), the ``ledger`` / ``random_state`` / ``bounds_y`` parameters,
  and refuses non-private steps that learn from the data.
* :func:`synthetic_like` builds public stand-in data with the column layout of X
  (categorical columns drawn from the public categories of an encoder).
* :func:`released_event` collects the events of all DP steps of a fitted estimator.
"""

from __future__ import annotations

import math

import numpy as np
import scipy.sparse as sp
from sklearn.base import clone
from sklearn.compose import ColumnTransformer
from sklearn.pipeline import Pipeline

from .._composite import _public_encoder, check_public, released_event
from .._release import shares

__all__ = ["EstimatorSpec", "released_event", "synthetic_like", "column_categories", "check_categories",
           "public_label_set"]


def _check_public(step, path):
    """Raise unless ``step`` is DP, stateless, frozen or fitted only to public information."""
    check_public(step, path, owner="estimator")


class EstimatorSpec:
    """Parameter keys of the tuned estimator and the budget split among its DP steps.

    Parameters
    ----------
    estimator : estimator or Pipeline
        With at least one DP step. With several, each DP step gets a share of a
        run's budget proportional to the ``epsilon`` it is configured with (and
        a share of delta proportional to its configured ``delta``; equal shares
        if they are all 0).

    Raises
    ------
    ValueError
        No DP step; several DP steps with an epsilon that is not finite and > 0;
        a non-private data-fitted step.
    """

    def __init__(self, estimator):
        params = estimator.get_params(deep=True)

        def keys(name):
            return [k for k in params if k == name or k.endswith("__" + name)]

        found = [k[: -len("epsilon")] for k in keys("epsilon") if k[: -len("epsilon")] + "delta" in params]
        # a DP composite (a PrivatePipeline) owns its inner steps' budgets: only the outermost are set
        prefixes = [p for p in found if not any(q != p and p.startswith(q) for q in found)]
        self.owned_keys = [p + name for p in found if p not in prefixes for name in ("epsilon", "delta")]
        if not prefixes:
            raise ValueError(
                "estimator must have a DP step with 'epsilon' and 'delta' parameters (a dp_sklearn estimator, or "
                f"a Pipeline with DP steps); found none in {type(estimator).__name__}."
            )
        _check_public(estimator, "")
        self.eps_keys = [p + "epsilon" for p in prefixes]
        self.delta_keys = [p + "delta" for p in prefixes]
        self.eps_shares, self.delta_shares = self._shares(params)
        self.ledger_keys = keys("ledger")
        self.rs_keys = keys("random_state")
        self.inner_ledgers = [params[k] for k in self.ledger_keys if params[k] is not None]
        bounds = [params[k] for k in keys("bounds_y") if params[k] is not None and not isinstance(params[k], str)]
        self.bounds_y = bounds[-1] if bounds else None
        self.user_random_state = {k: params[k] for k in self.rs_keys}
        #: set by the search: DP steps whose batch_size is None fit full batches ("full"),
        #: so that no subsampled event enters a repeat-and-select release
        self.full_batch = False
        self.default_batch_keys = [k for k in keys("batch_size") if params[k] is None]
        #: the ``classes`` parameter of the final step (None if it has none)
        prefix = ""
        final = estimator
        while isinstance(final, Pipeline) and final.steps:
            prefix, final = prefix + final.steps[-1][0] + "__", final.steps[-1][1]
        self.classes_key = prefix + "classes" if prefix + "classes" in params else None
        #: parameters set on every clone (the search sets the public label set here)
        self.fixed = {}
        self.estimator = estimator

    def _shares(self, params):
        if len(self.eps_keys) == 1:
            return [1.0], [1.0]
        eps = []
        for k in self.eps_keys:
            e = params[k]
            if isinstance(e, bool) or not isinstance(e, (int, float, np.number)) or not (0 < e < math.inf):
                raise ValueError(
                    f"With several DP steps the search splits each run's budget in proportion to the epsilons "
                    f"configured on them, so {k} must be a finite number > 0, got {e!r}."
                )
            eps.append(float(e))
        deltas = [float(params[k]) for k in self.delta_keys]
        d_sum = sum(deltas)
        d_shares = [d / d_sum for d in deltas] if d_sum > 0 else [1.0 / len(deltas)] * len(deltas)
        return shares(eps, "epsilon"), d_shares

    def forbidden_keys(self):
        """Parameters the search sets itself (never in a grid)."""
        keys = (set(self.eps_keys) | set(self.delta_keys) | set(self.ledger_keys) | set(self.rs_keys)
                | set(self.owned_keys))
        return keys | ({self.classes_key} if self.classes_key else set())

    def make(self, params, epsilon, delta, seed_seq=None):
        """A clone with the DP steps' budget set, ledgers off and fresh Generators.

        ``seed_seq`` (a ``numpy.random.SeedSequence``) gives every ``random_state``
        parameter its own spawned Generator; ``None`` gives them a fixed public
        seed (dry runs on synthetic data only).
        """
        over = {k: float(epsilon) * s for k, s in zip(self.eps_keys, self.eps_shares)}
        over.update({k: float(delta) * s for k, s in zip(self.delta_keys, self.delta_shares)})
        over.update({k: None for k in self.ledger_keys})
        children = seed_seq.spawn(len(self.rs_keys)) if seed_seq is not None else [0] * len(self.rs_keys)
        over.update({k: np.random.default_rng(c) for k, c in zip(self.rs_keys, children)})
        if self.full_batch:
            over.update({k: "full" for k in self.default_batch_keys})
        over.update(self.fixed)
        over.update(params)
        return clone(self.estimator).set_params(**over)

    def restore(self, est):
        """Set every ``random_state`` back to the user's value: no Generator stays reachable."""
        if self.rs_keys:
            est.set_params(**self.user_random_state)
        return est


def _resolve_columns(cols, X):
    """Column indices selected by a ColumnTransformer spec (from the schema of X only)."""
    names = list(X.columns) if hasattr(X, "columns") else None
    p = X.shape[1]
    if callable(cols):
        cols = cols(X.iloc[:0] if names is not None else X[:0])
    if isinstance(cols, slice):
        if names is not None and isinstance(cols.start or cols.stop, str):
            start = names.index(cols.start) if cols.start is not None else 0
            stop = names.index(cols.stop) + 1 if cols.stop is not None else p
            return list(range(start, stop))
        return list(range(p))[cols]
    cols = [cols] if np.isscalar(cols) else list(cols)
    if cols and isinstance(cols[0], (bool, np.bool_)):
        return [i for i, c in enumerate(cols) if c]
    return [names.index(c) if isinstance(c, str) else int(c) for c in cols]


def column_categories(estimator, X, unknown=None):
    """{column index: public categories} for the encoders that read X's columns directly.

    ``unknown="error"``: only the encoders that raise on an unknown value.
    """
    def wanted(step):
        return _public_encoder(step) and (unknown is None or getattr(step, "handle_unknown", None) == unknown)

    first = estimator
    while isinstance(first, Pipeline):
        first = next((s for _, s in first.steps if s is not None and s != "passthrough"), None)
    if wanted(first):
        return dict(enumerate(first.categories))
    out = {}
    if isinstance(first, ColumnTransformer):
        for _, trans, cols in first.transformers:
            while isinstance(trans, Pipeline):
                trans = trans.steps[0][1]
            if wanted(trans):
                out.update(zip(_resolve_columns(cols, X), trans.categories))
    return out


def synthetic_like(X, n_rows, rng, categories=None):
    """Public stand-in data with the shape and column layout of X (never derived from its values).

    Numeric columns are N(0, 1/p); a column in ``categories`` takes values drawn
    uniformly from its public categories. Sparse X gives a CSR matrix with one
    N(0, 1) entry per row.
    """
    p = X.shape[1]
    if sp.issparse(X):  # one nonzero per row: O(n) memory whatever p is
        cols = rng.integers(p, size=n_rows) if p else np.zeros(n_rows, dtype=int)
        return sp.csr_matrix((rng.standard_normal(n_rows), (np.arange(n_rows), cols)), shape=(n_rows, p))
    Z = rng.standard_normal((n_rows, p)) / math.sqrt(max(p, 1))
    categories = categories or {}
    cols = [np.asarray(categories[j], dtype=object)[rng.integers(len(categories[j]), size=n_rows)]
            if j in categories else Z[:, j] for j in range(p)]
    if hasattr(X, "columns") and hasattr(X, "iloc"):
        import pandas as pd

        frame = pd.DataFrame(dict(zip(range(p), cols)))
        frame.columns = X.columns
        return frame
    if categories:
        out = np.column_stack([np.asarray(c, dtype=object) for c in cols])
        return out.astype(X.dtype) if getattr(X, "dtype", object) != object else out
    return Z


def check_categories(estimator, X):
    """Refuse, before any budget is reserved, a value of X outside an encoder's public categories.

    Only encoders that read X's columns directly (see :func:`column_categories`) and
    raise on unknown values (``handle_unknown="error"``) are checked; their error
    would otherwise come after the reservation.

    Raises
    ------
    ValueError
        Naming the column and the unknown values.
    """
    cats = column_categories(estimator, X, unknown="error")
    for j, allowed in cats.items():
        col = X.iloc[:, j] if hasattr(X, "iloc") else (X[:, j] if not sp.issparse(X) else None)
        if col is None:
            continue
        values = np.asarray(col, dtype=object)
        known = set(np.asarray(allowed, dtype=object).tolist())
        unknown = sorted({v for v in values.tolist() if v not in known}, key=repr)
        if unknown:
            name = X.columns[j] if hasattr(X, "columns") else j
            raise ValueError(f"Column {name!r} of X holds values {unknown[:5]!r} outside the public categories "
                             f"{list(allowed)!r} of its encoder (handle_unknown='error'): add them to categories= or "
                             "set handle_unknown='ignore'. Nothing was reserved.")


def public_label_set(spec, y):
    """The public label set every inner fit of the search is given (before any budget is reserved).

    ``classes_`` of y is public (docs/privacy.md, P2), or the ``classes`` the user set on the
    final step. Passing it to every fit (the final step's ``classes``) makes each model's
    ``classes_`` that set whichever records fall in the training part: a label absent from it
    still gets coefficients from the mechanism, and nothing raises. Sets ``spec.fixed`` (the
    parameters every clone gets) and returns the label set.

    Raises
    ------
    ValueError
        If the final step has no ``classes`` parameter, or y holds labels outside the
        ``classes`` set on it.
    """
    if spec.classes_key is None:
        raise ValueError(
            "DPGridSearchCV gives every internal fit the public label set through the classifier's `classes` "
            "parameter (otherwise a label absent from the training part would change the model's classes_ "
            f"or make the fit raise, revealing how many records carry it); {type(spec.estimator).__name__} "
            "has no such parameter on its final step."
        )
    given = spec.estimator.get_params(deep=True)[spec.classes_key]
    labels = np.unique(y)
    if given is not None:
        given = np.unique(np.asarray(given))
        unknown = np.setdiff1d(labels, given)
        if unknown.size:
            raise ValueError(f"y contains labels {unknown.tolist()} that are not in "
                             f"{spec.classes_key}={given.tolist()}.")
        labels = given
    spec.fixed = {spec.classes_key: labels}
    return labels
