"""The DP steps of a composite estimator (Pipeline, ColumnTransformer, FeatureUnion), at any depth.

Shared by :class:`~dp_sklearn.pipeline.PrivatePipeline` and ``DPGridSearchCV``: which steps
are DP (:func:`dp_nodes`), which non-DP steps learn from the data (:func:`check_public`),
and what a fitted composite released (:func:`released_event`).
"""

from __future__ import annotations

from dp_accounting import dp_event
from sklearn.compose import ColumnTransformer
from sklearn.frozen import FrozenEstimator
from sklearn.pipeline import FeatureUnion, Pipeline
from sklearn.preprocessing import OneHotEncoder, OrdinalEncoder
from sklearn.utils import get_tags

__all__ = ["is_dp", "children", "dp_nodes", "inner_dp_nodes", "check_public", "compose", "released_event"]


def is_dp(step):
    """Whether ``step`` is a DP step: an estimator whose parameters include ``epsilon`` and ``delta``."""
    if step is None or isinstance(step, str) or not hasattr(step, "get_params"):
        return False
    params = step.get_params(deep=False)
    return "epsilon" in params and "delta" in params


def children(step):
    """Named sub-estimators of a composite (unfitted view), or None for a leaf."""
    if isinstance(step, Pipeline):
        return list(step.steps)
    if isinstance(step, ColumnTransformer):
        return [(name, t) for name, t, _ in step.transformers] + [("remainder", step.remainder)]
    if isinstance(step, FeatureUnion):
        return list(step.transformer_list)
    return None


def _fitted_children(step):
    if isinstance(step, Pipeline):
        return [s for _, s in step.steps]
    if isinstance(step, ColumnTransformer) and hasattr(step, "transformers_"):
        return [t for _, t, _ in step.transformers_]
    if isinstance(step, FeatureUnion):
        return [t for _, t in step.transformer_list]
    return []


def dp_nodes(estimator, path=""):
    """``(path, step)`` of every DP step in ``estimator``, at any depth, in fit order.

    The path is the ``get_params`` key prefix (``"columntransformer__num"``). A DP
    step is not searched further: a DP composite (a
    :class:`~dp_sklearn.pipeline.PrivatePipeline`) owns its inner steps' budgets.
    """
    if estimator is None or isinstance(estimator, str):
        return []
    if is_dp(estimator):
        return [(path, estimator)]
    out = []
    for name, child in children(estimator) or []:
        out.extend(dp_nodes(child, f"{path}__{name}" if path else name))
    return out


def inner_dp_nodes(composite):
    """:func:`dp_nodes` of the steps of ``composite`` (the composite itself is not a candidate)."""
    return [node for name, child in children(composite) or [] for node in dp_nodes(child, name)]


def _public_encoder(step):
    return (isinstance(step, (OneHotEncoder, OrdinalEncoder)) and not isinstance(step.categories, str)
            and getattr(step, "min_frequency", None) is None and getattr(step, "max_categories", None) is None)


def check_public(step, path="", owner="estimator"):
    """Raise unless every step of ``step`` is DP, stateless, frozen or fitted only to public information.

    Parameters
    ----------
    step : estimator
    path : str, default=""
        Its parameter path (named in the error).
    owner : str, default="estimator"
        Who refuses (named in the error).

    Raises
    ------
    ValueError
        Naming the first step that learns from the data without privacy
        (e.g. ``StandardScaler``, ``OneHotEncoder(categories="auto")``).
    """
    if step is None or isinstance(step, str):  # "passthrough", "drop"
        return
    subs = children(step)
    if subs is not None:  # composites (a PrivatePipeline included): every step inside
        for name, child in subs:
            check_public(child, f"{path}__{name}" if path else name, owner)
        return
    if is_dp(step) or isinstance(step, FrozenEstimator) or _public_encoder(step) or not get_tags(step).requires_fit:
        return
    raise ValueError(
        f"{owner} step {path or 'estimator'!r} ({type(step).__name__}) learns from the data without privacy: "
        "its fitted state would be released with the model but is not accounted. Use a DP step (e.g. "
        "dp_sklearn's private scalers), a stateless transformer, an encoder with explicit public categories "
        "(categories=[...], no min_frequency / max_categories), or a step fitted on public data and wrapped in "
        "sklearn.frozen.FrozenEstimator."
    )


def compose(events):
    """One event for a list of events (the event itself if there is one)."""
    events = list(events)
    return events[0] if len(events) == 1 else dp_event.ComposedDpEvent(events)


def released_event(est):
    """The dp_accounting event of a fitted estimator: its DP steps' events, composed.

    Raises
    ------
    ValueError
        If no fitted step exposes ``dp_event_``.
    """
    events, stack = [], [est]
    while stack:
        step = stack.pop(0)
        if hasattr(step, "dp_event_"):
            events.append(step.dp_event_)
        else:
            stack[:0] = _fitted_children(step)
    if not events:
        raise ValueError(
            f"{type(est).__name__} exposes no dp_event_ after fit: a dp_sklearn estimator (or a Pipeline with DP "
            "steps) is needed."
        )
    return compose(events)
