"""Repeat-and-select: the number-of-runs distribution and the RDP helpers of the search.

Only public ``dp_accounting`` API is used: ``RdpAccountant.compose`` and its
``rdp`` property (the RDP curve at the accountant's ``orders``). The success
probability of the truncated negative binomial is inverted here from its closed-form
mean ([PS22]_, Definition 1) instead of calling a private ``dp_accounting`` helper.

References
----------
.. [PS22] N. Papernot and T. Steinke, "Hyperparameter tuning with Renyi
   differential privacy", ICLR 2022 (arXiv:2110.03620), Section 2 and Theorems 2, 6.
"""

from __future__ import annotations

import math

import numpy as np
from dp_accounting import dp_event
from dp_accounting.privacy_accountant import UnsupportedEventError
from dp_accounting.rdp import RdpAccountant

__all__ = ["sample_repetitions", "tnb_gamma", "rdp_curve", "dominating_event", "covered",
           "contains_sampling", "UnsupportedEventError"]

#: relative tolerance when checking that one RDP curve dominates another
_RDP_RTOL = 1e-9

#: events whose privacy depends on the neighbouring relation (subsampling)
_SAMPLED = (dp_event.PoissonSampledDpEvent, dp_event.SampledWithReplacementDpEvent,
            dp_event.SampledWithoutReplacementDpEvent)


# ---------------------------------------------------------------------------
# the distribution of the number of runs K
# ---------------------------------------------------------------------------
def _tnb_mean(gamma, shape):
    """E[K] of the truncated negative binomial ``D_{shape, gamma}`` ([PS22]_, Definition 1)."""
    if gamma >= 1.0:
        return 1.0
    if shape == 1:
        return 1.0 / gamma
    if shape == 0:  # logarithmic distribution
        return (1.0 - gamma) / (gamma * math.log(1.0 / gamma))
    return shape * (1.0 - gamma) / (gamma * -math.expm1(shape * math.log(gamma)))


def tnb_gamma(shape, mean, rtol=1e-12):
    """Success probability gamma of the truncated negative binomial with mean ``mean``.

    Bisection on the closed-form mean (decreasing in gamma). The returned gamma
    is the upper end of the final bracket, so the distribution sampled has a mean
    at most ``mean``: the [PS22]_ bound that the accountant evaluates for ``mean``
    (increasing in E[K] and in log(1/gamma)) also covers it.

    Parameters
    ----------
    shape : float
        >= 0 and finite.
    mean : float
        >= 1.
    rtol : float, default=1e-12
        Relative width of the final bracket.

    Returns
    -------
    gamma : float
        In (0, 1].
    """
    if shape == 1 or mean == 1:
        return 1.0 / mean
    lo, hi = 0.0, min(1.0, 2.0 * (shape + 1.0) / mean)
    while hi > lo * (1.0 + rtol):
        mid = 0.5 * (lo + hi)
        if _tnb_mean(mid, shape) < mean:
            hi = mid
        else:
            lo = mid
    return hi


def sample_repetitions(rng, mean, shape):
    """Draw the number of runs K of repeat-and-select ([PS22]_, Section 2).

    Parameters
    ----------
    rng : numpy.random.Generator
        The search's generator (never derived from the data).
    mean : float
        E[K], >= 1.
    shape : float
        ``0``: logarithmic, ``1``: geometric, ``0 < shape < inf``: truncated
        negative binomial ``D_{shape, gamma}``, ``inf``: Poisson (K may be 0).

    Returns
    -------
    K : int
        Number of candidate runs, >= 1 (>= 0 for Poisson).

    See Also
    --------
    dp_sklearn.DPGridSearchCV : the search that draws K with it.

    References
    ----------
    .. [PS22] N. Papernot and T. Steinke, ICLR 2022, Definition 1 and Theorems 2, 6.

    Examples
    --------
    >>> import numpy as np
    >>> from dp_sklearn.model_selection import sample_repetitions
    >>> rng = np.random.default_rng(0)
    >>> [sample_repetitions(rng, mean=3.0, shape=1.0) for _ in range(5)]  # geometric
    [1, 5, 2, 4, 5]
    """
    if shape == np.inf:
        return int(rng.poisson(mean))
    gamma = tnb_gamma(shape, mean)
    if gamma >= 1:
        return 1
    if shape == 0:
        # P(K = k) proportional to (1 - gamma)^k / k, k >= 1.
        return int(rng.logseries(1.0 - gamma))
    while True:
        # Failures before `shape` successes: P(k) prop. to C(k + shape - 1, k) (1 - gamma)^k; truncate k = 0.
        k = int(rng.negative_binomial(shape, gamma))
        if k >= 1:
            return k


# ---------------------------------------------------------------------------
# RDP helpers (public dp_accounting API only)
# ---------------------------------------------------------------------------
def rdp_curve(event):
    """RDP of ``event`` at ``RdpAccountant().orders`` (add/remove relation).

    Raises
    ------
    dp_accounting.UnsupportedEventError
        If the RDP accountant does not support the event.
    """
    return np.asarray(RdpAccountant().compose(event).rdp, dtype=float)


def _unique(items):
    out = []
    for it in items:
        if not any(it == u for u in out):
            out.append(it)
    return out


def _dominates(bound_curve, curve):
    return bool(np.all(curve <= bound_curve + _RDP_RTOL * np.abs(bound_curve)))


def dominating_event(events):
    """An event whose RDP curve is >= that of every event in ``events`` at every order.

    One of the events if one dominates all the others; otherwise their
    composition (RDP curves are non-negative, so a sum dominates each term).
    Events the RDP accountant does not support are composed.
    """
    distinct = _unique(events)
    if len(distinct) == 1:
        return distinct[0]
    try:
        curves = [rdp_curve(ev) for ev in distinct]
    except UnsupportedEventError:
        return dp_event.ComposedDpEvent(distinct)
    for ev, c in zip(distinct, curves):
        if all(_dominates(c, d) for d in curves):
            return ev
    return dp_event.ComposedDpEvent(distinct)


def covered(event, bound):
    """True if ``event`` is certified by ``bound``: equal, or RDP-dominated by it."""
    if event == bound:
        return True
    try:
        return _dominates(rdp_curve(bound), rdp_curve(event))
    except UnsupportedEventError:
        return False


def contains_sampling(event):
    """True if a subsampled event (Poisson or fixed-size sampling) occurs anywhere in ``event``.

    Walks ``ComposedDpEvent.events`` and the ``event`` field of every wrapper
    (self-composed, sampled, repeat-and-select).
    """
    stack = [event]
    while stack:
        ev = stack.pop()
        if isinstance(ev, _SAMPLED):
            return True
        stack.extend(getattr(ev, "events", None) or [])
        inner = getattr(ev, "event", None)
        if isinstance(inner, dp_event.DpEvent):
            stack.append(inner)
    return False
