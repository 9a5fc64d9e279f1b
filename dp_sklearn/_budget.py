"""The split of one pipeline budget between its DP steps (at any depth), computed in one place."""

from __future__ import annotations

import numbers
from collections import namedtuple

import numpy as np
from sklearn.compose import ColumnTransformer
from sklearn.pipeline import Pipeline

from ._composite import children, inner_dp_nodes, is_dp
from ._release import shares

__all__ = ["DEFAULT_MODEL_SHARE", "StepBudget", "allotment", "check_budget", "set_budgets"]

#: share of epsilon given to the final estimator when it and at least one earlier
#: step are DP; the earlier DP steps share the rest in proportion to the number of columns
#: each reads (:func:`_column_counts`), and a step that needs less of its share for the
#: rows and columns it is fitted on returns the difference to the final estimator
#: (:func:`_fit_to_needs`)
DEFAULT_MODEL_SHARE = 0.75

StepBudget = namedtuple("StepBudget", "name epsilon delta")
StepBudget.__doc__ = """The (epsilon, delta) a DP step of a pipeline is set to spend.

Parameters
----------
name : str
    The step's name in the pipeline.
epsilon : float
    Its privacy loss in nats.
delta : float
    Its delta, in [0, 1).

See Also
--------
dp_sklearn.budget_split : returns one per DP step.

Examples
--------
>>> from dp_sklearn.pipeline import StepBudget
>>> StepBudget("dpridge", 1.5, 5e-6).epsilon
1.5
"""


def _final_path(pipeline):
    """Parameter path of the final estimator (following the last step of inner pipelines)."""
    name, step = pipeline.steps[-1]
    path = name
    while isinstance(step, Pipeline) and step.steps and not is_dp(step):
        name, step = step.steps[-1]
        path = f"{path}__{name}"
    return path


def _columns_read(spec):
    """Number of columns a ColumnTransformer entry selects, from its spec alone (None: unknown)."""
    if isinstance(spec, (str, int, np.integer)):
        return 1
    if isinstance(spec, (list, tuple, np.ndarray)) and not (len(spec) and isinstance(spec[0], (bool, np.bool_))):
        return len(spec)
    return None  # a slice, a boolean mask or a callable: resolved only against X


def _column_counts(pipeline, paths):
    """Public weight of each DP leaf: the number of columns it reads when a ColumnTransformer gives
    it an explicit column list (the outermost such list on its path), else 1.

    A step that scales many columns needs more of the preprocessing budget than one that scales
    a single column with public bounds; the counts come from the parameters only, never from X.
    """
    counts = []
    for path in paths:
        step, count = pipeline, None
        for name in path.split("__"):
            if isinstance(step, ColumnTransformer) and count is None:
                count = next((_columns_read(cols) for n, _, cols in step.transformers if n == name), None)
            step = dict(children(step) or []).get(name)
        counts.append(max(count or 1, 1))
    return counts


def _known_column_count(pipeline, path, n_features):
    """Columns the DP leaf at ``path`` reads, from public values only, or None when unknown.

    The length of the outermost explicit column list of a ``ColumnTransformer`` on its path; for
    a leaf that is the pipeline's first step, ``n_features`` (the width of X); else None.
    """
    step, count = pipeline, None
    names = path.split("__")
    for name in names:
        if isinstance(step, ColumnTransformer) and count is None:
            count = next((_columns_read(cols) for n, _, cols in step.transformers if n == name), None)
            if count is None:
                return None
        step = dict(children(step) or []).get(name)
    if count is not None:
        return count
    first = pipeline.steps[0][0] if isinstance(pipeline, Pipeline) and pipeline.steps else None
    return n_features if len(names) == 1 and names[0] == first else None


def _fit_to_needs(pipeline, nodes, weights, epsilon, leaf_delta, n_samples, n_features):
    """Default split only: each earlier DP leaf with a ``_pipeline_epsilon`` hook keeps what it needs.

    ``leaf._pipeline_epsilon(epsilon_i, delta_i, n_samples, n_columns)`` returns at most
    ``epsilon_i`` (its default allotment), from public values only (the rows, the columns it
    reads, the budget, its hyperparameters); what it gives back goes to the final estimator.
    ``DPStandardScaler`` gives back all but what its one global scale needs when that is what it
    would run (``dp_sklearn.preprocessing._global.global_epsilon``), and all but the cost of its
    targets when it is given ``strategy="centered"`` (``"auto"`` never runs it)
    (``dp_sklearn.preprocessing._centered.centered_epsilon``).
    """
    out = list(weights)
    for i, (path, leaf) in enumerate(nodes[:-1]):
        hook = getattr(leaf, "_pipeline_epsilon", None)
        cols = _known_column_count(pipeline, path, n_features)
        if hook is None or cols is None or cols < 1:
            continue
        need = float(hook(out[i] * epsilon, leaf_delta, int(n_samples), int(cols)))
        out[i] = min(out[i], max(need, 0.0) / epsilon)
    out[-1] = 1.0 - sum(out[:-1])
    return out


def _weights(paths, final_is_dp, split, sizes=None):
    """Normalized epsilon shares of the DP leaves, in fit order."""
    k = len(paths)
    if split is None:
        if k == 1 or not final_is_dp:
            return [1.0 / k] * k
        sizes = sizes or [1] * k
        total = float(sum(sizes[:-1]))
        return [(1.0 - DEFAULT_MODEL_SHARE) * c / total for c in sizes[:-1]] + [DEFAULT_MODEL_SHARE]
    if isinstance(split, dict):
        short = {}
        for path in paths:
            short.setdefault(path.rsplit("__", 1)[-1], []).append(path)
        keyed = {}
        for key in split:
            target = key if key in paths else (short[key][0] if len(short.get(key, ())) == 1 else None)
            if target is None or target in keyed:
                raise ValueError(f"split must name every DP step exactly once, by its path ({paths}) or its name "
                                 f"when unique, got keys {sorted(map(str, split))}.")
            keyed[target] = split[key]
        if len(keyed) != k:
            raise ValueError(f"split must name every DP step exactly once ({paths}), got keys {sorted(split)}.")
        raw = [keyed[p] for p in paths]
    elif isinstance(split, (list, tuple, np.ndarray)):
        raw = list(split)
        if len(raw) != k:
            raise ValueError(f"split must have one weight per DP step ({k}: {paths}), got {len(raw)}.")
    else:
        raise ValueError(f"split must be None, a sequence of weights or a dict {{step: weight}}, got {split!r}.")
    return shares(raw, "split weights")


def check_budget(epsilon, delta):
    ok = isinstance(epsilon, numbers.Real) and not isinstance(epsilon, bool) and 0 < epsilon < float("inf")
    if not ok:
        raise ValueError(f"epsilon must be a finite number > 0, got {epsilon!r}.")
    if isinstance(delta, bool) or not isinstance(delta, numbers.Real) or not 0 <= delta < 1:
        raise ValueError(f"delta must be a number in [0, 1), got {delta!r}.")
    return float(epsilon), float(delta)


def allotment(pipeline, epsilon, delta, split, n_samples=None, n_features=None):
    """``StepBudget`` of every DP leaf of ``pipeline`` under the total (epsilon, delta).

    ``n_samples`` and ``n_features`` (public: the shape of the X the pipeline is fitted on) let
    the default split (``split=None``) give a preprocessing step only what it needs
    (:func:`_fit_to_needs`); without them the split is the fixed default.
    """
    epsilon, delta = check_budget(epsilon, delta)
    nodes = inner_dp_nodes(pipeline)
    if not nodes:
        raise ValueError("A private pipeline needs at least one DP step (with epsilon and delta parameters), at any "
                         "depth.")
    paths = [path for path, _ in nodes]
    final_is_dp = paths[-1] == _final_path(pipeline)
    weights = _weights(paths, final_is_dp, split, _column_counts(pipeline, paths))
    if split is None and final_is_dp and len(paths) > 1 and n_samples is not None:
        weights = _fit_to_needs(pipeline, nodes, weights, epsilon, delta / (2 * len(paths)), n_samples, n_features)
    return [StepBudget(path, w * epsilon, delta / (2 * len(paths))) for path, w in zip(paths, weights)]


def set_budgets(pipeline, budgets):
    params = {}
    for b in budgets:
        params[f"{b.name}__epsilon"] = b.epsilon
        params[f"{b.name}__delta"] = b.delta
    return pipeline.set_params(**params)
