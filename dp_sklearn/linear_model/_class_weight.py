"""``class_weight`` of the classifiers: a public dict, or "balanced" from private class counts.

"balanced" weights class c by ``n / (K * count_c)`` (scikit-learn's rule) with the counts
released by the Laplace mechanism: replacing one record changes two counts by 1, so the
histogram has l1 sensitivity 2 and Laplace noise of scale ``2 / epsilon_w`` per count is
``epsilon_w``-DP (Dwork, McSherry, Nissim & Smith 2006), with ``epsilon_w =
CLASS_WEIGHT_SHARE * epsilon`` fixed before the data is used and composed into the fit's
``dp_event_``. Weights are capped at the public ``MAX_BALANCED_WEIGHT``.

How the weights enter the fit (public values only: :func:`uses_offset`):

* as loss weights (:class:`dp_sklearn._losses._weighted.WeightedLoss`, whose declared
  constants scale by the public bound): at ``epsilon = inf`` (scikit-learn's weighted
  objective), without an intercept, for a dict with a zero weight, and for the losses other
  than the logistic ones (``DPLinearSVC``);
* as the intercept offset ``log w_c`` of the unweighted private fit (the logistic models with
  an intercept at finite epsilon). Weighting class c by w_c is case-control sampling at
  rates proportional to w_c; for a logistic model this changes only the intercepts, by
  ``log w_c`` (Prentice & Pyke 1979, Biometrika 66(3); the "prior correction" of King &
  Zeng 2001, Political Analysis 9(2), eq. 7). The offset is a post-processing of the
  released model and the released (or public) weights. Loss weights fare worse under DP:
  the clipping solvers clip each weighted per-example gradient at a clip norm fixed for
  unit weights, so a minority record of weight ``1 / (2 p)`` is cut back to about the
  majority's size and the weighting is mostly undone (on the suite's tuning sets the
  minority recall barely moved from epsilon 1 to 5: a bias, not noise), while scaling the
  clip norm by the bound multiplies the noise by it (``benchmarks/tabular/README.md``,
  class weights).
"""

from __future__ import annotations

import numbers

import numpy as np
from dp_accounting import dp_event

from .. import _noise

__all__ = ["CLASS_WEIGHT_SHARE", "MAX_BALANCED_WEIGHT", "check_class_weight", "class_weight_event",
           "class_weights", "intercept_offset", "max_class_weight", "uses_offset"]

#: share of the fit's epsilon spent on the class counts of class_weight="balanced"
CLASS_WEIGHT_SHARE = 0.05
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
    """Whether class weights enter as the intercept offset ``log w_c`` (public values only; module docstring).

    Parameters
    ----------
    class_weight : dict, "balanced" or None
    offset_model : bool
        The estimator declares the offset valid for its model (the logistic losses).
    fit_intercept : bool
    epsilon : float

    Returns
    -------
    bool
        False without class weights, an intercept or a finite epsilon, or for a dict with a zero weight
        (whose offset would be infinite).
    """
    if class_weight is None or not offset_model or not fit_intercept or epsilon == np.inf:
        return False
    return isinstance(class_weight, str) or min(class_weight.values()) > 0


def intercept_offset(weights):
    """``log w_c`` per class (binary: ``log(w_1 / w_0)``, the offset of the one decision function)."""
    logw = np.log(np.asarray(weights, dtype=float))
    return np.array([logw[1] - logw[0]]) if logw.size == 2 else logw
