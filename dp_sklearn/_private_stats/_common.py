"""Helpers shared by the private-statistics mechanisms: the fit's generator, input checks."""

from __future__ import annotations

import numbers

import numpy as np

from .._release import make_rng

#: relative margin taken off zCDP budgets so that float rounding of the sum of the
#: parts never lands above the target epsilon
_RHO_MARGIN = 1e-9
#: widest public range ``upper - lower`` accepted: the variance of values spread over a
#: range of width w reaches (w / 2)^2, which must stay a finite float64 (< 1.8e308)
MAX_BOUNDS_WIDTH = 1e150


#: the one Generator of a fit (``docs/privacy.md``, randomness): see dp_sklearn._release.make_rng
make_generator = make_rng


def _as_bounds(lower, upper, n_features, name):
    """Broadcast public bounds to two float arrays of shape (n_features,) and check them.

    Refuses booleans, non-finite values, ``lower >= upper`` and a width ``upper - lower``
    above ``MAX_BOUNDS_WIDTH``, with a ``ValueError`` naming ``name``.
    """
    if any(np.asarray(v).dtype.kind == "b" for v in (lower, upper)):
        raise ValueError(f"{name} must be real numbers, not booleans, got {lower!r}, {upper!r}.")
    try:
        lo = np.broadcast_to(np.asarray(lower, dtype=float), (n_features,)).copy()
        hi = np.broadcast_to(np.asarray(upper, dtype=float), (n_features,)).copy()
    except (TypeError, ValueError):
        raise ValueError(
            f"{name} must be scalars or arrays of shape ({n_features},), got {lower!r}, {upper!r}."
        ) from None
    if not (np.all(np.isfinite(lo)) and np.all(np.isfinite(hi)) and np.all(lo < hi)):
        raise ValueError(f"{name} must be finite with lower < upper for every feature, got {lower!r}, {upper!r}.")
    with np.errstate(over="ignore"):
        width = hi - lo
    if not np.all(width <= MAX_BOUNDS_WIDTH):
        raise ValueError(f"{name} must satisfy upper - lower <= {MAX_BOUNDS_WIDTH:g} for every feature (the variance "
                         f"of such values would overflow float64), got {lower!r}, {upper!r}.")
    return lo, hi


def _check_epsilon(epsilon, name="epsilon"):
    ok = isinstance(epsilon, numbers.Real) and not isinstance(epsilon, bool)
    if not ok or not (0 < epsilon < np.inf):
        raise ValueError(f"{name} must be a finite real number > 0, got {epsilon!r}.")
    return float(epsilon)
