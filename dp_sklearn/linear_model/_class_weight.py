"""``class_weight`` of the classifiers: a public dict, or "balanced" from private class counts.

"balanced" weights class c by ``n / (K * count_c)`` (scikit-learn's rule) with the counts
released by the Laplace mechanism: replacing one record changes two counts by 1, so the
histogram has l1 sensitivity 2 and Laplace noise of scale ``2 / epsilon_w`` per count is
``epsilon_w``-DP (Dwork, McSherry, Nissim & Smith 2006), with ``epsilon_w =
CLASS_WEIGHT_SHARE * epsilon`` fixed before the data is used and composed into the fit's
``dp_event_``. Weights are capped at the public ``MAX_BALANCED_WEIGHT``, the bound that the
weighted loss's declared constants use (:class:`dp_sklearn._losses._weighted.WeightedLoss`).
"""

from __future__ import annotations

import numbers

import numpy as np
from dp_accounting import dp_event

from .. import _noise

__all__ = ["CLASS_WEIGHT_SHARE", "MAX_BALANCED_WEIGHT", "OFFSET", "check_class_weight", "class_weight_event",
           "class_weights", "intercept_offset", "max_class_weight", "uses_offset"]

#: share of the fit's epsilon spent on the class counts of class_weight="balanced"
CLASS_WEIGHT_SHARE = 0.05
#: whether the logistic models take class weights as an intercept offset at finite epsilon
OFFSET = True
#: public cap on a "balanced" weight (a class of 1 / (2 * 20) = 2.5% of two classes reaches it)
MAX_BALANCED_WEIGHT = 20.0


def check_class_weight(class_weight):
    """Raise a ValueError naming ``class_weight`` unless it is None, "balanced" or a dict of weights >= 0.

    Raises
    ------
    ValueError
        A dict value that is not a finite number >= 0 (bools refused), or all zero.
    """
    if class_weight is None or isinstance(class_weight, str):
        return
    values = list(class_weight.values())
    if not values or any(isinstance(v, (bool, np.bool_)) or not isinstance(v, numbers.Real) or not np.isfinite(v)
                         or v < 0 for v in values) or max(values) <= 0:
        raise ValueError(f"class_weight must be None, 'balanced' or a dict of finite weights >= 0 (not all 0), "
                         f"got {class_weight!r}.")


def max_class_weight(class_weight):
    """The public bound on every weight."""
    return MAX_BALANCED_WEIGHT if isinstance(class_weight, str) else float(max(class_weight.values()))


def class_weight_event(class_weight, epsilon):
    """``LaplaceDpEvent(1 / epsilon_w)`` for "balanced" at finite epsilon (scale over l1 sensitivity), else None."""
    if not isinstance(class_weight, str) or epsilon == np.inf:
        return None
    return dp_event.LaplaceDpEvent(1.0 / (CLASS_WEIGHT_SHARE * float(epsilon)))


def class_weights(class_weight, classes, idx, epsilon, rng):
    """Per-class weights (a release for "balanced"), in the order of ``classes``.

    Parameters
    ----------
    class_weight : dict or "balanced"
    classes : ndarray of shape (K,)
        Public class labels.
    idx : ndarray of shape (n,)
        Class index of each record.
    epsilon : float
        The fit's total epsilon (``inf``: the exact counts).
    rng : numpy.random.Generator

    Returns
    -------
    weights : ndarray of shape (K,)
        In [0, ``max_class_weight(class_weight)``].
    """
    K = len(classes)
    if not isinstance(class_weight, str):
        return np.array([float(class_weight.get(c, 1.0)) for c in classes])
    counts = np.bincount(idx, minlength=K).astype(float)
    if epsilon != np.inf:
        # replace-one moves one record between two classes: l1 sensitivity 2
        counts = _noise.add_laplace(rng, counts, 2.0 / (CLASS_WEIGHT_SHARE * float(epsilon)), 2.0, norm=1)
    return np.minimum(idx.size / (K * np.maximum(counts, 1.0)), MAX_BALANCED_WEIGHT)


def uses_offset(class_weight, offset_model, fit_intercept, epsilon):
    """Whether class weights enter as the intercept offset ``log w_c`` (public values only)."""
    if class_weight is None or not offset_model or not fit_intercept or epsilon == np.inf or not OFFSET:
        return False
    return isinstance(class_weight, str) or min(class_weight.values()) > 0


def intercept_offset(weights):
    """``log w_c`` per class (binary: ``log(w_1 / w_0)``, the offset of the one decision function)."""
    logw = np.log(np.asarray(weights, dtype=float))
    return np.array([logw[1] - logw[0]]) if logw.size == 2 else logw
