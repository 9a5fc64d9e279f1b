"""The private mean of y (Laplace mechanism) that centers the regression targets."""

from __future__ import annotations

import numpy as np
from dp_accounting import dp_event
from . import _noise

__all__ = ["Y_CENTER_SHARE", "private_center_event", "private_center"]

#: share of epsilon spent on the private mean of y that centers the targets
Y_CENTER_SHARE = 0.1


def private_center_event(epsilon):
    """The ``LaplaceDpEvent`` of :func:`private_center` at total budget ``epsilon`` (public).

    Parameters
    ----------
    epsilon : float
        The fit's total epsilon; the mean gets ``Y_CENTER_SHARE * epsilon``.

    Returns
    -------
    event : dp_accounting.LaplaceDpEvent or None
        ``None`` at ``epsilon = inf`` (the exact mean is used).
    """
    if epsilon == np.inf:
        return None
    return dp_event.LaplaceDpEvent(1.0 / (Y_CENTER_SHARE * float(epsilon)))


def private_center(y, bounds, epsilon, rng):
    """Center the target range on a private mean of y (Laplace mechanism).

    The mean of y clipped to ``bounds`` has sensitivity (high - low) / n under
    replace-one neighbours; Laplace noise with scale sensitivity / (share * epsilon)
    makes it (share * epsilon)-DP (Dwork, McSherry, Nissim & Smith, TCC 2006). The
    returned bounds ``(c - r, c + r)`` with ``r = max(high - c, c - low)`` contain the
    public range, so no extra clipping occurs, and shrinkage pulls predictions toward
    the mean of y (the trivial predictor) rather than the middle of ``bounds_y``.

    Parameters
    ----------
    y : ndarray of shape (n_samples,)
        Targets, in the units of y.
    bounds : tuple of float
        Public range (low, high).
    epsilon : float
        The fit's total epsilon (``inf``: the exact mean, the limit of the private one).
    rng : numpy.random.Generator
        Source of the Laplace noise.

    Returns
    -------
    bounds : tuple of float
        The centered range (c - r, c + r).
    """
    low, high = bounds
    mean = float(np.mean(np.clip(y, low, high)))
    if epsilon == np.inf:
        c = mean
    else:
        eps_c = Y_CENTER_SHARE * float(epsilon)
        c = float(np.clip(_noise.add_laplace(rng, mean, (high - low) / (y.shape[0] * eps_c), (high - low) / y.shape[0]), low, high))
    r = max(high - c, c - low)
    return (c - r, c + r)
