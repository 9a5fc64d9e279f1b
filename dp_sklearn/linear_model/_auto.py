"""``data_norm="auto"`` and ``bounds_y="auto"``: public bounds estimated privately inside a fit.

Each estimate spends a share ``AUTO_SHARE`` of the fit's epsilon (10% for data_norm,
20% for bounds_y), fixed before the data is
used; its ``dp_accounting`` event is composed into the fit's ``dp_event_`` and checked by
the ledger with the rest of the fit. The estimates are releases (mechanism outputs) and
are stored on the estimator as ``data_norm_`` and ``bounds_y_``.

* ``data_norm``: the median (``DATA_NORM_QUANTILE``) of the row norms by the
  exponential mechanism over the public search range ``DATA_NORM_SEARCH`` with a
  log-uniform base measure (Smith 2011; Gillenwater, Joseph & Kulesza 2021). About half
  of the rows are clipped to it (clipping keeps a row's direction); a higher level such
  as 0.9 sits only 0.1 n ranks from the top of the data, and at small ``epsilon n`` the
  exponential mechanism then often lands in the empty upper part of the search range.
* ``bounds_y``: a private median plus or minus four private median absolute deviations
  (:func:`private_bounds_y`) over ``BOUNDS_Y_SEARCH``.

Both are pure epsilon-DP (``EpsilonDeltaDpEvent(epsilon, 0)``): the utility of a quantile
has replace-one sensitivity 1 (see ``docs/privacy.md``).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from .._private_stats import TIE_DITHER, exponential_quantiles, quantile_epsilon, search_unit

__all__ = ["AUTO_SHARE", "DATA_NORM_QUANTILE", "DATA_NORM_SEARCH", "BOUNDS_Y_SEARCH", "MAD_WIDTH", "MEDIAN_SPLIT", "auto_event",
           "private_data_norm", "private_bounds_y"]

#: share of the fit's epsilon spent on each "auto" estimate
AUTO_SHARE = {"data_norm": 0.1, "bounds_y": 0.2}
#: quantile level of the row norms released as data_norm="auto" (the median: its rank is
#: n/2 away from both ends, so the release stays inside the data at small epsilon n)
DATA_NORM_QUANTILE = 0.5
#: public search range of data_norm="auto" (units of X); the lower end is also its floor
DATA_NORM_SEARCH = (1e-6, 1e6)
#: public search range of bounds_y="auto" (units of y)
BOUNDS_Y_SEARCH = (-1e6, 1e6)
#: bounds_y="auto" is the private median +- this many private MADs: 3 MADs are about 2
#: standard deviations of normal data, so about 5% of the targets are clipped while the
#: normalized noise (proportional to the width) is 3/4 of what 4 MADs give
MAD_WIDTH = 3.0
#: share of the bounds_y budget spent on the median; the MAD gets the rest. An even split:
#: at 3/4 for the median the MAD was the noisier release (diabetes, n=309, epsilon 1.5:
#: half-width 86 to 358 between its 10% and 90% points) and a wide MAD ruins the fit
MEDIAN_SPLIT = 0.5


def auto_event(epsilon, name):
    """The event of the "auto" estimate ``name`` (public: fixed before the data is used).

    Parameters
    ----------
    epsilon : float
        The fit's total epsilon (finite); the estimate gets ``AUTO_SHARE[name] * epsilon``.
    name : {"data_norm", "bounds_y"}
        One quantile (data_norm) or two quartiles (bounds_y).

    Returns
    -------
    epsilon0 : float
        Privacy loss of each exponential mechanism.
    event : dp_accounting.DpEvent
        ``EpsilonDeltaDpEvent(AUTO_SHARE[name] * epsilon, 0)`` (basic composition).
    """
    return quantile_epsilon(AUTO_SHARE[name] * float(epsilon), 0.0, 1 if name == "data_norm" else 2)


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


def private_bounds_y(y, epsilon, rng):
    """``bounds_y="auto"``: ``median +- MAD_WIDTH * MAD`` of y, both private medians.

    Two exponential-mechanism medians (:func:`dp_sklearn._private_stats.exponential_quantiles`,
    ``MEDIAN_SPLIT`` = 1/2 of the estimate's budget each, basic composition,
    log-uniform base measure over ``BOUNDS_Y_SEARCH``):
    the median ``m`` of y, then the median of ``|y - m|`` (the MAD; ``m`` is a release, so
    this is an adaptive composition and the second utility still has replace-one
    sensitivity 1). Medians sit n/2 ranks from both ends of the data, so they stay inside
    it at much smaller ``epsilon n`` than quartiles. The base measure is log-uniform in
    ``|y|``: targets far from 0 with a small relative spread (e.g. y in [5025, 5346])
    need a larger ``epsilon n`` than targets spread over a decade; pass a public
    ``bounds_y`` when it is known. ``MAD_WIDTH = 3`` gives about +-2 standard deviations
    for normal data.

    Parameters
    ----------
    y : ndarray of shape (n_samples,)
        Targets.
    epsilon : float
        The fit's total epsilon; ``inf`` gives the exact median and MAD (non-private fit).
    rng : numpy.random.Generator

    Returns
    -------
    bounds : tuple of float
        ``(low, high)`` with ``low < high`` (widened by ``search_unit`` if the range
        collapsed).
    """
    lo_s, hi_s = BOUNDS_Y_SEARCH
    y = np.clip(y, lo_s, hi_s)
    if epsilon == np.inf:
        m = float(np.median(y))
        mad = float(np.median(np.abs(y - m)))
    else:
        eps = AUTO_SHARE["bounds_y"] * float(epsilon)
        unit = search_unit(BOUNDS_Y_SEARCH)
        m = float(exponential_quantiles(y, 0.5, MEDIAN_SPLIT * eps, rng, lower=lo_s, upper=hi_s, unit=unit,
                                        dither=TIE_DITHER)[0])
        mad = float(exponential_quantiles(np.abs(y - m), 0.5, (1.0 - MEDIAN_SPLIT) * eps, rng, lower=0.0,
                                          upper=hi_s - lo_s, unit=unit, dither=TIE_DITHER)[0])
    half = max(MAD_WIDTH * mad, search_unit(BOUNDS_Y_SEARCH))
    return m - half, m + half
