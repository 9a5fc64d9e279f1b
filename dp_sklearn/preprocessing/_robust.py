"""Per-feature location and scale from private quantiles only (no moments).

``DPStandardScaler(strategy="robust")`` spends its whole budget on
exponential-mechanism quantiles (Smith 2011) at the *median* level, the level the mechanism
locates with the fewest rows: a level ``q`` is lost to the empty part of the public search
range unless ``epsilon_q min(q, 1 - q) n / 4`` exceeds a few nats
(:func:`~dp_sklearn.preprocessing._global.per_feature_feasible`), so the median needs half
the rows the quartiles need, and no budget goes to a mean or a variance, whose noise grows
with the width of the clipping range over ``n``.

``robust_center_scale`` releases the private median ``m_j`` of each feature, then the private
median of ``|x_j - m_j|`` (the median absolute deviation, MAD; the released ``m_j`` is a
public input of the second mechanism, adaptive composition). The scale is ``MAD_TO_STD``
times the MAD (the standard deviation of a normal feature), floored at the search range's
public unit. It uses the log-uniform base measure of :func:`~dp_sklearn._private_stats.exponential_quantiles`
(``unit = search_unit(search_range)``) and the public tie dither ``TIE_DITHER``; its cost is
``2 n_features`` mechanisms composed in zCDP (``plan_statistics`` with
``quantile_share=1, moments=False``).

References
----------
.. [1] A. Smith, "Privacy-preserving statistical estimation with optimal convergence rates",
   STOC 2011.
.. [2] C. Dwork and J. Lei, "Differential privacy and robust statistics", STOC 2009.
"""

from __future__ import annotations

import numpy as np

from .._private_stats import ATOM_WEIGHT, INTEGER_ATOMS, TIE_DITHER, exponential_quantiles, search_unit
from ._global import per_feature_feasible

__all__ = ["MAD_TO_STD", "PER_FEATURE_MARGIN", "ROBUST_REACH", "prefer_per_feature", "robust_center_scale",
           "robust_feasible"]

#: the standard deviation of a normal variable over its median absolute deviation, 1 / Phi^{-1}(3/4)
MAD_TO_STD = 1.482602218505602
#: half-width of the clipping range, in scales, when ``output_clip=None`` (else ``output_clip``)
ROBUST_REACH = 3.0


#: ``strategy="auto"`` prefers per-feature ranges and moments to the median and MAD only when
#: their quantiles clear the criterion this many times over (chosen on the tuning half of the
#: public suite, ``benchmarks/tabular``; evidence in ``benchmarks/results/preproc_scaling.md``)
PER_FEATURE_MARGIN = 2.0


def prefer_per_feature(quantile_eps, level, n_samples):
    """Public rule of ``strategy="auto"``: per-feature ranges when ``epsilon_q q n / 4 > PER_FEATURE_MARGIN * 3``.

    Parameters
    ----------
    quantile_eps : float
        Privacy loss of each per-feature range quantile (``strategy="per_feature"``'s plan).
    level : float
        Its lower quantile level.
    n_samples : int
        Number of rows (public).

    Returns
    -------
    prefer : bool
        ``per_feature_feasible`` with ``PER_FEATURE_MARGIN`` times the required ranks. Between
        one and ``PER_FEATURE_MARGIN`` times, the ranges are located but their moments and the
        quartile fences are noisier than the median and MAD bought with the whole budget.
    """
    return per_feature_feasible(quantile_eps / PER_FEATURE_MARGIN, level, n_samples)


def robust_feasible(quantile_eps, n_samples):
    """Public criterion of the median-level quantiles: ``per_feature_feasible(quantile_eps, 0.5, n)``."""
    return per_feature_feasible(quantile_eps, 0.5, n_samples)


def _quantile(X, level, eps, rng, lower, upper, unit, atoms, atom_weight):
    """One private quantile per column (``eps=None``: the exact, non-private one)."""
    if eps is None:
        return np.quantile(np.clip(X, lower, upper), level, axis=0)
    return exponential_quantiles(X, [level], eps, rng, lower=lower, upper=upper, unit=unit, dither=TIE_DITHER,
                                 atoms=atoms, atom_weight=atom_weight)[0]


def robust_center_scale(X, quantile_eps, rng, search, atoms=INTEGER_ATOMS, atom_weight=ATOM_WEIGHT):
    """Private median and normal-consistent MAD of each feature.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)
        Finite data, clipped to ``search``.
    quantile_eps : float or None
        Privacy loss of each of the ``2 n_features`` exponential mechanisms; ``None`` computes
        the exact (non-private) statistics.
    rng : numpy.random.Generator or None
        The fit's generator.
    search : tuple (low, high)
        The public search range of the features.
    atoms : array-like or None, default=INTEGER_ATOMS
        Public point masses of the quantiles' base measure (``exponential_quantiles``): a
        median or MAD inside a repeated integer (binary columns, codes) is found exactly.
    atom_weight : float, default=ATOM_WEIGHT
        Base measure of each atom.

    Returns
    -------
    center : ndarray of shape (n_features,)
        Private median, within ``search``.
    scale : ndarray of shape (n_features,)
        ``max(MAD_TO_STD * MAD, unit)``, ``unit = search_unit(search)`` (public).

    Notes
    -----
    Each mechanism's rank utility has replace-one sensitivity 1 (one record moves one value of
    ``x_j`` and, the released median being fixed, one value of ``|x_j - m_j|``), so each is
    ``quantile_eps``-DP and ``quantile_eps^2 / 8``-zCDP; the plan composes the ``2 n_features``
    of them. The scale is post-processing.
    """
    unit = search_unit(search)
    Xc = np.clip(X, *search)
    center = _quantile(Xc, 0.5, quantile_eps, rng, search[0], search[1], unit, atoms, atom_weight)
    mad = _quantile(np.abs(Xc - center), 0.5, quantile_eps, rng, 0.0, search[1] - search[0], unit, atoms,
                    atom_weight)
    return center, np.maximum(MAD_TO_STD * mad, unit)

