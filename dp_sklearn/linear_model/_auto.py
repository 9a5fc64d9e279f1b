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

__all__ = ["AUTO_SHARE", "SPARSE_DATA_NORM", "DATA_NORM_QUANTILE", "DATA_NORM_SEARCH", "BOUNDS_Y_SEARCH", "BOUNDS_Y_UNIT", "LOCATE_NATS",
           "BOUNDS_Y_SHARE", "SHRUNK_MAD_SHARE", "SHRINK_RHO", "CENTER_SHARE", "SIDE_LEVELS", "COVER_Z", "SIDE_RATIO", "POINT_MASS", "auto_event", "default_data_norm", "BoundsYPlan", "bounds_y_plan", "shrink_factor",
           "private_data_norm", "private_bounds_y"]

#: share of the fit's epsilon spent on data_norm="auto" (bounds_y="auto": :func:`bounds_y_plan`)
AUTO_SHARE = {"data_norm": 0.1}
#: quantile level of the row norms released as data_norm="auto" (the median: its rank is
#: n/2 away from both ends, so the release stays inside the data at small epsilon n)
DATA_NORM_QUANTILE = 0.5
#: default data_norm of sparse input (see :func:`default_data_norm`)
SPARSE_DATA_NORM = 1.0
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
#: smallest and largest share of the fit's epsilon spent on bounds_y="auto": above 10% the
#: margins are met with room to spare at large epsilon n and the spare budget moves the side
#: level out instead; the model always keeps at least half of the budget
BOUNDS_Y_SHARE = (0.1, 0.5)
#: largest share of the "mad" mode for a model whose predictions are shrunk toward the released
#: center by :func:`shrink_factor` (the least-squares regressors' ``bounds_y="auto"`` and
#: ``DPHuberRegressor``): with the shrinkage a model on the remaining 20% beats predicting the
#: median; chosen on the tabular suite's tuning half (benchmarks/tabular/README.md, "Evidence
#: for defaults")
SHRUNK_MAD_SHARE = 0.8
#: the ``epsilon n`` of the model at which :func:`shrink_factor` halves its deviation from the
#: center (chosen with ``SHRUNK_MAD_SHARE``)
SHRINK_RHO = 90.0


#: largest share of the "center" mode (the model's output is replaced by the released median)
CENTER_SHARE = 0.95
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


def default_data_norm(n_features, data_norm_ord, sparse):
    """The default ``data_norm`` (``data_norm=None``), and the reference value of ``"auto"``.

    Dense input: ``sqrt(n_features)`` (l2) or 3 (l_inf), the norms of standardized rows.
    Sparse input (a public fact: the type of X): ``SPARSE_DATA_NORM`` = 1 for either norm,
    whatever ``n_features``: sparse rows are usually normalized (the l2-normalized rows of
    ``TfidfVectorizer`` and ``HashingVectorizer``, whose entries are then at most 1), and a
    row above it is clipped with its direction kept. ``sqrt(n_features)`` would be 512 for
    ``HashingVectorizer(n_features=2**18)``: rows of norm 1 then fill 1/512 of the
    normalized unit ball and the model is noise (``benchmarks/sparse_data_norm.py``).

    Parameters
    ----------
    n_features : int
    data_norm_ord : {2, numpy.inf}
    sparse : bool
        Whether X is a scipy.sparse matrix.

    Returns
    -------
    data_norm : float
    """
    if sparse:
        return SPARSE_DATA_NORM
    return float(np.sqrt(n_features)) if data_norm_ord == 2 else 3.0


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
    #: "range": two medians and two side quantiles; "mad": two medians and the median of
    #: ``|y - m|`` (a symmetric range); "center": the two medians only, the fit predicts
    #: the second
    mode: str
    #: privacy loss of each median, and of each side quantile (or of the MAD)
    eps_median: float
    eps_side: float
    #: side level q (the sides are the quantiles at q and 1 - q; 1/4 for "mad")
    level: float


def shrink_factor(epsilon, n_samples):
    """The public factor ``lambda`` by which a model's predictions are shrunk toward the released center.

    The noise a private linear fit adds to a prediction ``<x, theta>`` (rows of norm at most
    1 in normalized units, an intercept) is the noise of the coefficients along ``x``: its
    scale falls like ``1 / (n epsilon)`` (noisy gradient descent, Bassily, Smith & Thakurta
    2014; AdaSSP, Wang 2018) and does not grow with the number of features, while the
    signal it blurs does not depend on the budget. With ``rho = n epsilon`` the factor is
    the Wiener ratio ``rho^2 / (rho^2 + rho_0^2)`` (``rho_0 = SHRINK_RHO``, the ``epsilon
    n`` at which the model keeps half of its deviation from the center): about 1 once
    ``epsilon n`` is large, and toward 0 where the model's noise would dominate its
    predictions, which then stay near the released center (a prediction ``center + lambda
    (f(x) - center)`` is post-processing of the releases).

    Parameters
    ----------
    epsilon : float
        The model's epsilon (after the target statistics), in nats; ``inf`` gives 1.
    n_samples : int
        Number of training rows (public).

    Returns
    -------
    lam : float
        In (0, 1].
    """
    if not np.isfinite(epsilon):
        return 1.0
    rho = float(n_samples) * float(epsilon)
    return float(rho**2 / (rho**2 + SHRINK_RHO**2))


def bounds_y_plan(epsilon, n_samples, *, mad_share=None):
    """The public plan of ``bounds_y="auto"``: share of epsilon, releases, side level.

    A median (or the MAD) at privacy loss ``e`` has a utility margin of ``e n / 4`` nats, a
    side quantile at level ``q`` one of ``e q n / 2``. Every release gets ``LOCATE_NATS``
    of margin, and the mode is the richest one whose releases fit in ``BOUNDS_Y_SHARE[1]``
    of ``epsilon``:

    * ``"range"``: two medians and two sides at the quartiles need ``24 LOCATE_NATS / n``
      in all, split ``1/6, 1/6, 1/3, 1/3``; the share is that over ``epsilon``, at least
      ``BOUNDS_Y_SHARE[0]``, and the side level ``q = 2 LOCATE_NATS / (eps_side n)`` goes
      below the quartiles (to ``SIDE_LEVELS[0]``) when the share is at its floor;
    * ``"mad"``: two medians and the MAD need ``12 LOCATE_NATS / n``, a third each, within
      ``mad_share`` of ``epsilon`` (``BOUNDS_Y_SHARE[1]``, or ``SHRUNK_MAD_SHARE`` for a model
      whose predictions are shrunk toward the center by :func:`shrink_factor`: such a model
      beats the median on the budget left);
    * ``"center"``: the two medians, ``8 LOCATE_NATS / n`` (at most ``CENTER_SHARE``):
      the model's output is then replaced by the released median (post-processing), so
      its budget would be wasted; it keeps ``1 - CENTER_SHARE`` only because the fit
      template runs it. Below ``epsilon n`` of about ``8 LOCATE_NATS / CENTER_SHARE``
      (150) even the medians get less than ``LOCATE_NATS``: pass a public ``bounds_y``.

    Parameters
    ----------
    epsilon : float
        The fit's total epsilon (``inf``: exact quantiles, nothing spent).
    n_samples : int
        Number of training rows (public).
    mad_share : float or None, default=None
        Largest share of the ``"mad"`` mode; ``None`` is ``BOUNDS_Y_SHARE[1]``.

    Returns
    -------
    plan : BoundsYPlan
    """
    n = max(int(n_samples), 1)
    if not np.isfinite(epsilon):
        return BoundsYPlan(BOUNDS_Y_SHARE[0], "range", np.inf, np.inf, SIDE_LEVELS[0])
    eps = float(epsilon)
    for mode, need, parts in (("range", 24.0, 6.0), ("mad", 12.0, 3.0), ("center", 8.0, 2.0)):
        share = need * LOCATE_NATS / (n * eps)
        cap = {"range": BOUNDS_Y_SHARE[1], "mad": BOUNDS_Y_SHARE[1] if mad_share is None else float(mad_share),
               "center": CENTER_SHARE}[mode]
        if share <= cap or mode == "center":
            break
    share = float(np.clip(share, BOUNDS_Y_SHARE[0], cap))
    if mode == "range":
        eps_side = share * eps / 3.0
        level = float(np.clip(2.0 * LOCATE_NATS / (eps_side * n), *SIDE_LEVELS))
        return BoundsYPlan(share, mode, share * eps / 6.0, eps_side, level)
    eps0 = share * eps / parts
    return BoundsYPlan(share, mode, eps0, eps0 if mode == "mad" else 0.0, SIDE_LEVELS[1])


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
    """``bounds_y="auto"``: a private target range and center from quantiles of y.

    Exponential-mechanism quantiles (:func:`dp_sklearn._private_stats.exponential_quantiles`,
    Smith 2011) of y clipped to ``BOUNDS_Y_SEARCH``, ties dithered by ``TIE_DITHER``, with
    the mode, budgets and side level ``q`` of :func:`bounds_y_plan`, in two stages:

    1. a coarse median ``m0`` with a log-uniform base measure in ``|y|`` (unit
       ``BOUNDS_Y_UNIT``): it finds the magnitude of y to within a few percent;
    2. the median ``m`` and (``"range"``) the side quantiles ``lo, hi`` at levels ``q, 1 -
       q`` of y, with a base measure log-uniform in ``|y - m0|`` (same unit): resolution
       relative to the distance from ``m0``, so targets with a large offset and a small
       spread (``5000 + y``), which stage 1 alone places only to within a few percent of
       5000, are resolved at their own spread (up to offsets of about 1e4 spreads). In
       ``"mad"`` mode the spread is instead the median ``d`` of ``|y - m|`` (log-uniform
       over ``[0, 2e15]``), ``lo, hi = m -+ d``; in ``"center"`` mode ``lo = hi = m``.
       In ``"range"`` mode the three releases of stage 2 are made in one call of
       ``exponential_quantiles`` (one per-level epsilon each): they rank the same dithered
       values, drawn once, so the values are sorted once. Each is still the same
       exponential mechanism at its own epsilon for every fixed draw of the dither (the
       dither is public, independent of the data, one value per record: neighbouring
       datasets stay neighbouring after it), so the three compose as before for each draw,
       hence for the mixture over draws (``docs/privacy.md``, Numeric model).

    The range is ``[m - F (m - lo), m + F (hi - m)]`` with ``F = max(1, COVER_Z /
    z_{1-q})`` (each side separately, so a right-skewed target gets a longer upper side).
    Every step after the releases is post-processing:

    * if ``m`` is outside ``[lo, hi]``, the median missed the data: the center is
      ``(lo + hi) / 2``; if ``lo > hi``, a side did: the range is uninformative and
      collapses onto the middle of the three values (a point inside the data unless two
      releases failed), so the fit predicts that constant (as it does in ``"center"``
      mode);
    * a side more than ``SIDE_RATIO`` times longer than the other (unless the other is a
      point mass, below ``POINT_MASS`` times it) landed outside the data and is replaced
      by the other side.

    The former default, median +- 3 MAD with 10% of epsilon each at any ``epsilon n``,
    gave ``R^2`` down to -1e8: at small ``epsilon n`` the median often missed the data, the
    deviations from it then had almost no spread on a log scale, so the MAD missed too and
    the range came out tiny and far from the data. Here every release gets
    ``LOCATE_NATS`` of margin or is not made, and stage 2 is centered at ``m0``.

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
        ``eps_median`` twice and the MAD at ``eps_side`` for ``"mad"``, the medians only
        for ``"center"``) is for audits and calibration tests.

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
        if plan.mode == "range":  # stage 2 in one call: one dither and one sort for the median and the sides
            m, lo, hi = (float(v) for v in draw([0.5, plan.level, 1.0 - plan.level],
                                                [plan.eps_median, plan.eps_side, plan.eps_side], m0))
        else:
            m = float(draw(0.5, plan.eps_median, m0)[0])
            lo = hi = m
        if plan.mode == "mad":  # the median of |y - m|, log-uniform over [0, 2e15]
            mad = float(exponential_quantiles(np.abs(y - m), 0.5, plan.eps_side, rng, lower=0.0, upper=hi_s - lo_s,
                                              unit=BOUNDS_Y_UNIT, dither=TIE_DITHER)[0])
            lo, hi = m - mad, m + mad  # the quartiles of a symmetric target
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
