"""``data_norm="auto"`` and ``bounds_y="auto"``: public bounds estimated privately inside a fit.

Each estimate spends a share of the fit's epsilon fixed before the data is used (10% for
data_norm, ``AUTO_SHARE``; for bounds_y a function of ``epsilon`` and ``n_samples``,
:func:`bounds_y_plan`); its ``dp_accounting`` event is composed into the fit's ``dp_event_`` and checked by
the ledger with the rest of the fit. The estimates are releases (mechanism outputs) and
are stored on the estimator as ``data_norm_`` and ``bounds_y_``.

* ``data_norm``: the median (``DATA_NORM_QUANTILE``) of the row norms by the
  exponential mechanism over the public search range ``DATA_NORM_SEARCH`` with a
  log-uniform base measure (Smith 2011; Gillenwater, Joseph & Kulesza 2021). About half
  of the rows are clipped to it (clipping keeps a row's direction); a higher level such
  as 0.9 sits only 0.1 n ranks from the top of the data, and at small ``epsilon n`` the
  exponential mechanism then often lands in the empty upper part of the search range.
* ``bounds_y``: three independent private quantiles of y at levels ``(q, 1/2, 1 - q)``
  on a symmetric log scale over ``BOUNDS_Y_SEARCH`` = +-1e15, each side widened to about
  two standard deviations, with a budget share and a level ``q`` set from ``epsilon`` and
  ``n_samples`` (:func:`bounds_y_share`, :func:`private_bounds_y`).

Both are pure epsilon-DP (``EpsilonDeltaDpEvent(epsilon, 0)``): the utility of a quantile
has replace-one sensitivity 1 (see ``docs/privacy.md``).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import scipy.sparse as sp
from scipy.special import ndtri

from .._private_stats import TIE_DITHER, exponential_quantiles, quantile_epsilon, search_unit

__all__ = ["AUTO_SHARE", "DATA_NORM_QUANTILE", "DATA_NORM_SEARCH", "BOUNDS_Y_SEARCH", "BOUNDS_Y_UNIT", "LOCATE_NATS",
           "BOUNDS_Y_SHARE", "SIDE_LEVELS", "COVER_Z", "SIDE_RATIO", "POINT_MASS", "auto_event", "BoundsYPlan", "bounds_y_plan",
           "private_data_norm", "private_bounds_y"]

#: share of the fit's epsilon spent on data_norm="auto" (bounds_y="auto": :func:`bounds_y_plan`)
AUTO_SHARE = {"data_norm": 0.1}
#: quantile level of the row norms released as data_norm="auto" (the median: its rank is
#: n/2 away from both ends, so the release stays inside the data at small epsilon n)
DATA_NORM_QUANTILE = 0.5
#: public search range of data_norm="auto" (units of X); the lower end is also its floor
DATA_NORM_SEARCH = (1e-6, 1e6)
#: public search range of bounds_y="auto" (units of y): targets beyond +-1e15 are clipped to it
BOUNDS_Y_SEARCH = (-1e15, 1e15)
#: unit of the symmetric log scale ``t = asinh(y / unit)`` of the bounds_y search: log-uniform
#: in ``|y|`` from 1e-12 to 1e15 (27 decades each side, 125 nats of ``t`` in all); targets
#: that vary by less than about 1e-12 look constant
BOUNDS_Y_UNIT = 1e-12
#: utility margin, in nats, that each bounds_y quantile is given when the budget allows. An
#: exponential-mechanism quantile lands outside the data with probability about
#: ``(T_search / T_data) (epsilon n / 4) exp(-margin)``: 125 nats of search, data as narrow
#: as the 0.05 nats of the tie dither (a constant target) and ``epsilon n / 4`` about 25
#: give ``exp(-18) * 2500 * 25``, about 1e-3 (13 nats, measured: 3 of 30 constant targets
#: and 2 of 30 offset targets with a side outside the data)
LOCATE_NATS = 18.0
#: smallest and largest share of the fit's epsilon spent on bounds_y="auto"
BOUNDS_Y_SHARE = (0.1, 0.9)
#: range of the side level q of bounds_y="auto" (the quartiles at small epsilon n)
SIDE_LEVELS = (0.01, 0.25)
#: each side of bounds_y="auto" reaches about this many standard deviations of normal
#: data (the former median +- 3 MAD): the side quantile at level q is widened by
#: ``max(1, COVER_Z / z_{1-q})`` from the median
COVER_Z = 2.0
#: a side more than this many times longer than the other missed the data and is replaced
#: by the other one (a lognormal target with log-sd 3 has a ratio of about 1e3 at q = 0.01)
SIDE_RATIO = 1e3
#: ... unless the shorter side is below this fraction of the longer: a point mass at the
#: median (zeros of a count, a constant) has a side of about the tie dither only
POINT_MASS = 1e-6


def auto_event(epsilon, name, share=None):
    """The event of the "auto" estimate ``name`` (public: fixed before the data is used).

    Parameters
    ----------
    epsilon : float
        The fit's total epsilon (finite); the estimate gets ``share * epsilon``.
    name : {"data_norm", "bounds_y"}
        One quantile (data_norm) or three (bounds_y).
    share : float or None, default=None
        Share of ``epsilon`` spent on the estimate; ``None`` is ``AUTO_SHARE[name]``
        (data_norm only; bounds_y: ``bounds_y_plan(epsilon, n_samples).share``).

    Returns
    -------
    epsilon0 : float
        Privacy loss of the estimate (data_norm: of its one exponential mechanism).
    event : dp_accounting.DpEvent
        ``EpsilonDeltaDpEvent(share * epsilon, 0)`` (basic composition).
    """
    share = AUTO_SHARE[name] if share is None else float(share)
    return quantile_epsilon(share * float(epsilon), 0.0, 1)


class BoundsYPlan(NamedTuple):
    """What ``bounds_y="auto"`` releases, from public values only (:func:`bounds_y_plan`)."""

    #: share of the fit's epsilon spent on the estimate
    share: float
    #: True: only the two medians are released and the fit predicts the second (too
    #: little ``epsilon n`` to locate the sides and leave the model a useful budget)
    center_only: bool
    #: privacy loss of each median and of each side quantile
    eps_median: float
    eps_side: float
    #: side level q (the sides are the quantiles at q and 1 - q)
    level: float


def bounds_y_plan(epsilon, n_samples):
    """The public plan of ``bounds_y="auto"``: share of epsilon, releases, side level.

    A median at privacy loss ``e`` has a utility margin of ``e n / 4`` nats, a side quantile
    at level ``q`` one of ``e q n / 2``. Four releases (two medians, two sides at the
    quartiles) all reach ``LOCATE_NATS`` with ``24 LOCATE_NATS / n`` in all, split ``1/6,
    1/6, 1/3, 1/3``; the share is that over ``epsilon``, at least ``BOUNDS_Y_SHARE[0]``,
    and the side level ``q = 2 LOCATE_NATS / (eps_side n)`` goes below the quartiles (to
    ``SIDE_LEVELS[0]``) when the share is at its floor. If the share would exceed
    ``BOUNDS_Y_SHARE[1]``, the model would be left with too little budget and the sides
    could not be located: only the two medians are released (``8 LOCATE_NATS / n``, half
    each, within the shares) and the fit predicts the second median (``center_only``).

    Parameters
    ----------
    epsilon : float
        The fit's total epsilon (``inf``: exact quantiles, nothing spent).
    n_samples : int
        Number of training rows (public).

    Returns
    -------
    plan : BoundsYPlan
    """
    n = max(int(n_samples), 1)
    if not np.isfinite(epsilon):
        return BoundsYPlan(BOUNDS_Y_SHARE[0], False, np.inf, np.inf, SIDE_LEVELS[0])
    eps = float(epsilon)
    need = 24.0 * LOCATE_NATS / n
    if need > BOUNDS_Y_SHARE[1] * eps:
        share = float(np.clip(8.0 * LOCATE_NATS / (n * eps), *BOUNDS_Y_SHARE))
        return BoundsYPlan(share, True, share * eps / 2.0, 0.0, SIDE_LEVELS[1])
    share = float(np.clip(need / eps, *BOUNDS_Y_SHARE))
    eps_side = share * eps / 3.0
    level = float(np.clip(2.0 * LOCATE_NATS / (eps_side * n), *SIDE_LEVELS))
    return BoundsYPlan(share, False, share * eps / 6.0, eps_side, level)


def _row_norms(X, ord_):
    """Row norms of raw X (l2 or l_inf), finite, within the public search range."""
    if sp.issparse(X):
        X = sp.csr_matrix(X, copy=True)
        X.sum_duplicates()
        if ord_ == 2:
            with np.errstate(over="ignore"):
                norms = np.sqrt(np.asarray(X.multiply(X).sum(axis=1)).ravel())
        else:
            norms = np.asarray(abs(X).max(axis=1).todense()).ravel()
    else:  # float64 row blocks of a few MB: no X-sized temporary, no float32 overflow
        step = max(1, 2**20 // max(X.shape[1], 1))
        with np.errstate(over="ignore"):
            norms = np.concatenate([np.linalg.norm(np.asarray(X[s:s + step], dtype=np.float64), ord=ord_, axis=1)
                                    for s in range(0, X.shape[0], step)]) if X.shape[1] else np.zeros(X.shape[0])
    return np.clip(np.nan_to_num(norms, posinf=DATA_NORM_SEARCH[1]), *DATA_NORM_SEARCH)


def private_data_norm(X, ord_, epsilon, rng, *, row_norms=None):
    """``data_norm="auto"``: the private ``DATA_NORM_QUANTILE`` quantile of the row norms.

    Parameters
    ----------
    X : {ndarray, sparse matrix} of shape (n_samples, n_features)
        Validated training data, in its own units.
    ord_ : {2, numpy.inf}
        The norm bounded by data_norm.
    epsilon : float
        The fit's total epsilon; ``inf`` gives the exact quantile (non-private fit).
    rng : numpy.random.Generator
        The fit's generator.
    row_norms : ndarray of shape (n_samples,), default=None
        The row norms of X as :func:`_row_norms` computes them (e.g. blockwise on a
        cluster for dask input); ``None`` computes them from X.

    Returns
    -------
    data_norm : float
        In ``DATA_NORM_SEARCH``.
    """
    norms = _row_norms(X, ord_) if row_norms is None else row_norms
    if epsilon == np.inf:
        return float(max(np.quantile(norms, DATA_NORM_QUANTILE), DATA_NORM_SEARCH[0]))
    eps0, _ = auto_event(epsilon, "data_norm")
    value = exponential_quantiles(norms, DATA_NORM_QUANTILE, eps0, rng, lower=DATA_NORM_SEARCH[0],
                                  upper=DATA_NORM_SEARCH[1], unit=search_unit(DATA_NORM_SEARCH), dither=TIE_DITHER)
    return float(np.clip(value[0], *DATA_NORM_SEARCH))


def private_bounds_y(y, epsilon, rng, *, plan=None):
    """``bounds_y="auto"``: a private target range and center from four quantiles of y.

    Exponential-mechanism quantiles (:func:`dp_sklearn._private_stats.exponential_quantiles`,
    Smith 2011) of y clipped to ``BOUNDS_Y_SEARCH``, ties dithered by ``TIE_DITHER``, with
    the budgets and side level ``q`` of :func:`bounds_y_plan`, in two stages:

    1. a coarse median ``m0`` with a log-uniform base measure in ``|y|`` (unit
       ``BOUNDS_Y_UNIT``): it finds the magnitude of y to within a few percent;
    2. the median ``m`` and the side quantiles ``lo, hi`` at levels ``q, 1 - q`` of y,
       with a base measure log-uniform in ``|y - m0|`` (same unit): resolution relative
       to the distance from ``m0``, so targets with a large offset and a small spread
       (``5000 + y``), which stage 1 alone places only to within a few percent of 5000,
       are resolved at their own spread.

    The range is ``[m - F (m - lo), m + F (hi - m)]`` with ``F = max(1, COVER_Z /
    z_{1-q})`` (each side separately, so a right-skewed target gets a longer upper side).
    Every step after the releases is post-processing:

    * if ``m`` is outside ``[lo, hi]``, the median missed the data: the center is
      ``(lo + hi) / 2``; if ``lo > hi``, a side did: the range is uninformative and
      collapses onto the middle of the three values (a point inside the data unless two
      releases failed), so the fit predicts that constant (as it does for a
      ``center_only`` plan, where ``lo = hi = m``);
    * a side more than ``SIDE_RATIO`` times longer than the other (unless the other is a
      point mass, below ``POINT_MASS`` times it) landed outside the data and is replaced
      by the other side;
    * the released quantiles are of y itself, never of ``|y - m|``: deviations from a
      released center that missed the data have almost no spread on a log scale, so a
      spread measured around it cannot be located either and the range came out tiny and
      far from the data (the cause of the ``R^2`` of -1e8 of the former median +- 3 MAD).

    Parameters
    ----------
    y : ndarray of shape (n_samples,)
        Finite targets.
    epsilon : float
        The fit's total epsilon, in nats: the estimate spends ``bounds_y_plan(epsilon,
        n_samples).share`` of it; ``inf`` gives the exact quantiles (non-private fit).
    rng : numpy.random.Generator
    plan : BoundsYPlan or None, default=None
        ``None``: :func:`bounds_y_plan` of ``epsilon`` and ``n_samples``. Another plan
        (its releases spend ``eps_median`` twice and ``eps_side`` twice, or
        ``eps_median`` twice if ``center_only``) is for audits and calibration tests.

    Returns
    -------
    bounds : tuple of float
        ``(low, high)`` with ``low < high``, within ``BOUNDS_Y_SEARCH`` (at least
        ``BOUNDS_Y_UNIT`` or 1e-9 ``|center|`` on each side of the center).
    center : float
        The released median (or, for an uninformative range, the middle release), in
        ``bounds``: the center the targets are normalized around.
    """
    lo_s, hi_s = BOUNDS_Y_SEARCH
    y = np.clip(np.asarray(y, dtype=np.float64), lo_s, hi_s)
    plan = bounds_y_plan(epsilon, y.shape[0]) if plan is None else plan
    if not np.isfinite(epsilon):
        lo, m, hi = (float(v) for v in np.quantile(y, [plan.level, 0.5, 1.0 - plan.level]))
    else:
        def draw(levels, eps, shift=0.0):  # quantiles of y, log-uniform in |y - shift|
            return shift + exponential_quantiles(y - shift, levels, eps, rng, lower=lo_s - shift,
                                                 upper=hi_s - shift, unit=BOUNDS_Y_UNIT, dither=TIE_DITHER)
        m0 = float(np.clip(draw(0.5, plan.eps_median)[0], lo_s / 2, hi_s / 2))
        m = float(draw(0.5, plan.eps_median, m0)[0])
        lo = hi = m
        if not plan.center_only:
            lo, hi = (float(v) for v in draw([plan.level, 1.0 - plan.level], plan.eps_side, m0))
    if lo <= hi and not lo <= m <= hi:  # the median missed the data, the sides did not
        m = 0.5 * (lo + hi)
    if not lo <= m <= hi:  # uninformative: collapse onto the middle release
        m = lo = hi = float(np.median([lo, m, hi]))
    below, above = m - lo, hi - m
    short, long_ = min(below, above), max(below, above)
    if long_ > SIDE_RATIO * short and short > POINT_MASS * long_:  # one side missed the data
        below = above = short
    widen = max(1.0, COVER_Z / float(ndtri(1.0 - plan.level)))
    floor = max(BOUNDS_Y_UNIT, 1e-9 * abs(m))
    low = max(m - max(widen * below, floor), lo_s)
    high = min(m + max(widen * above, floor), hi_s)
    return (float(low), float(high)), m
