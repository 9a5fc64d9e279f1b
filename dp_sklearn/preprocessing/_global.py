"""The ``strategy`` of :class:`DPStandardScaler` when ``bounds=None``: per feature or one global scale.

Per-feature private ranges cost ``2 n_features`` exponential-mechanism quantiles. Each
locates its quantile to within about ``log(search width / unit) / epsilon_q`` ranks
(Smith 2011), so with few rows, many features or a small budget every quantile lands
anywhere in the wide public search range and the standardized features are noise (on
breast_cancer, n=398 rows, 30 features, epsilon 0.25: per quantile ``epsilon_q`` is
about 0.011, far from the roughly ``12 / (q n) = 0.12`` that a quartile needs). The
budget is then better spent on *one* statistic: ``strategy="global"`` releases a
private geometric mean ``m`` of the row l2 norms (a Laplace mean of the log norms, pure
``epsilon``-DP, all of the budget; :func:`global_scale`) and divides every feature by the
common scale ``m / (GLOBAL_ROW_NORM sqrt(n_features))``, with no centering. Relative feature scales
are kept as they are in X: features on a large scale dominate, which is what a model
can still use when per-feature statistics are out of reach.

``strategy="auto"`` (the default) chooses per feature when the public criterion
:func:`per_feature_feasible` holds twice over, the private median and MAD per feature
(``dp_sklearn.preprocessing._robust``) when the criterion holds for them, and the global
scale otherwise. The criterion and
the choice depend only on ``n_samples``, ``n_features``, ``epsilon``, ``delta`` and the
hyperparameters, never on the data, so the choice reveals nothing.

References
----------
.. [1] A. Smith, "Privacy-preserving statistical estimation with optimal convergence
   rates", STOC 2011.
"""

from __future__ import annotations

import numpy as np
from dp_accounting import dp_event

from .._private_stats import search_unit
from .. import _noise

__all__ = ["GLOBAL_ROW_NORM", "GLOBAL_NOISE", "FEASIBLE_RANKS", "AUTO_LEVELS", "AUTO_LEVEL_MARGIN", "auto_quantile_level", "clip_rows",
           "per_feature_feasible", "global_epsilon", "global_event", "global_scale", "global_log_width"]

#: the private median row norm is mapped to ``GLOBAL_ROW_NORM * sqrt(n_features)``: half
#: the default ``data_norm = sqrt(n_features)`` of the models, so that the median row sits
#: well inside their clipping bound (measured over 0.2 to 1.0 on breast_cancer and diabetes:
#: 0.4 to 0.7 are within 0.01 of each other; 1.0 loses 0.05 to 0.1)
GLOBAL_ROW_NORM = 0.5
#: a quantile at level ``q`` is located when ``epsilon_q q n / 4`` exceeds this many
#: nats (the log-width of the exponential mechanism's search measure is about 30 nats)
FEASIBLE_RANKS = 3.0


def per_feature_feasible(quantile_eps, level, n_samples):
    """Public criterion: can ``quantile_eps``-DP quantiles at ``level`` locate each feature?

    Parameters
    ----------
    quantile_eps : float
        Privacy loss of each per-feature quantile (from the fit's plan).
    level : float
        The lower quantile level (``quantile_range[0]``); the upper one is symmetric.
    n_samples : int
        Number of rows (public).

    Returns
    -------
    feasible : bool
        ``quantile_eps * min(level, 1 - level) * n_samples / 4 > FEASIBLE_RANKS``.
    """
    return quantile_eps * min(level, 1.0 - level) * n_samples / 4.0 > FEASIBLE_RANKS


#: range of the lower level ``quantile_range="auto"`` picks, and its margin over the criterion
AUTO_LEVELS, AUTO_LEVEL_MARGIN = (0.01, 0.25), 3.0


def auto_quantile_level(quantile_eps, n_samples):
    """Lower quantile level of ``quantile_range="auto"``: the most extreme one the budget can locate.

    ``q = AUTO_LEVEL_MARGIN * 4 FEASIBLE_RANKS / (quantile_eps n_samples)`` (three times the
    level at which :func:`per_feature_feasible` starts to hold: the target rank then sits
    ``6 AUTO_LEVEL_MARGIN`` = 18 nats of utility inside the data, which also beats the gaps
    around a repeated value, e.g. of a binary feature: on binary columns with 30-70% ones,
    n = 20,000, epsilon 1, twice the level left 93 of 240 columns with a range drawn from the
    search range, three times none), within ``AUTO_LEVELS`` = [0.01,
    0.25]; the levels are ``(q, 1 - q)``. Clipping at fences around the quartiles
    winsorizes heavy tails (a delay, an income, a count) at about 3 interquartile ranges
    whatever n, so the scaled feature loses the large values a linear model needs; the
    exponential mechanism locates a level q to within about ``4 FEASIBLE_RANKS /
    (quantile_eps n)`` in rank, so q can shrink like ``1 / (epsilon n)``, and the range then
    covers all but about 2q of the data: as n grows the private scaler approaches
    StandardScaler. Below ``n = 12 FEASIBLE_RANKS / (0.25 quantile_eps)`` these are the
    quartiles, as before. Public values only. ``quantile_eps = inf`` (a non-private fit)
    gives 0.01.
    """
    if not np.isfinite(quantile_eps):
        return AUTO_LEVELS[0]
    q = AUTO_LEVEL_MARGIN * 4.0 * FEASIBLE_RANKS / (float(quantile_eps) * n_samples)
    return float(min(AUTO_LEVELS[1], max(AUTO_LEVELS[0], q)))


def global_event(epsilon, delta):
    """Event of the global scale: one Laplace mechanism with all of ``epsilon`` (pure DP).

    Parameters
    ----------
    epsilon : float
        Privacy loss in nats (finite, > 0).
    delta : float
        Unused (the release is pure DP); kept for a uniform signature.

    Returns
    -------
    epsilon0 : float
        ``epsilon``.
    event : dp_accounting.LaplaceDpEvent
        Noise multiplier ``1 / epsilon`` (scale over l1 sensitivity).
    """
    return float(epsilon), dp_event.LaplaceDpEvent(1.0 / float(epsilon))


#: Laplace scale, in nats, that the global scale's log is released with when a pipeline's default
#: split sizes the scaler's budget (:func:`global_epsilon`). Theory: ``log(2) / log(10) = 0.3``,
#: so that the released scale is off by more than a factor of 2 (which moves the median row,
#: mapped to half the models' ``data_norm``, past it) in at most 10% of fits
#: (``P(|Laplace(b)| > t) = exp(-t / b)``); checked against 0.25, 0.5 and 1 on the tuning half of
#: ``benchmarks/tabular`` (evidence in its README)
GLOBAL_NOISE = 0.3


def global_log_width(n_features, search):
    """Width in nats of the public interval the log row norms are clipped to (:func:`global_scale`)."""
    top = np.sqrt(n_features) * max(abs(search[0]), abs(search[1]))
    return float(np.log(top / search_unit(search)))


def global_epsilon(n_samples, n_features, search, noise=GLOBAL_NOISE):
    """Epsilon at which :func:`global_scale`'s Laplace noise on the log scale is ``noise`` nats.

    Parameters
    ----------
    n_samples, n_features : int
        Shape of the data (public).
    search : tuple (low, high)
        The public ``search_range``.
    noise : float, default=GLOBAL_NOISE
        Target Laplace scale, in nats, of the released mean log row norm.

    Returns
    -------
    epsilon : float
        ``w / (noise n_samples)``, ``w = global_log_width(n_features, search)``: the Laplace
        scale of the release is ``w / (n epsilon)``.
    """
    return global_log_width(n_features, search) / (float(noise) * int(n_samples))


def global_scale(X, epsilon, rng, search):
    """Common scale of every feature: private geometric-mean row norm over ``GLOBAL_ROW_NORM sqrt(p)``.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)
        Finite data; each feature is clipped to ``search`` before the norms.
    epsilon : float
        Privacy loss of the release (``inf``: exact, non-private).
    rng : numpy.random.Generator or None
        The fit's generator.
    search : tuple (low, high)
        The public ``search_range`` of the features.

    Returns
    -------
    scale : float
        Positive: ``exp(mu) / (GLOBAL_ROW_NORM sqrt(p))``.

    Notes
    -----
    ``mu`` is the mean of ``log ||x_i||`` clipped to the public interval
    ``[log unit, log top]`` (``unit = search_unit(search)``, ``top = sqrt(p)
    max(|low|, |high|)``, width ``w = log(top / unit)``), plus Laplace noise of scale
    ``w / (n epsilon)``: the mean of values in an interval of width ``w`` has
    replace-one sensitivity ``w / n``, so the release is ``epsilon``-DP (Dwork, McSherry,
    Nissim & Smith 2006). The log makes the error relative: a noise of ``b`` nats moves
    the scale by the factor ``exp(b)`` (at n=398, epsilon 0.25 and the default search
    range, ``b`` is about 0.22). The scale is a post-processing of ``mu``.
    """
    n, p = X.shape
    unit = search_unit(search)
    lo, hi = np.log(unit), np.log(np.sqrt(p) * max(abs(search[0]), abs(search[1])))
    with np.errstate(divide="ignore"):
        logs = np.clip(np.log(np.linalg.norm(np.clip(X, *search), axis=1)), lo, hi)
    mu = float(np.mean(logs))
    if epsilon != np.inf:
        mu = float(np.clip(_noise.add_laplace(rng, mu, (hi - lo) / (n * float(epsilon)), (hi - lo) / n), lo, hi))
    return float(np.exp(mu)) / (GLOBAL_ROW_NORM * np.sqrt(p))


def clip_rows(Z, bound):
    """Rows of ``Z`` scaled down to l2 norm at most ``bound`` (a new array; public post-processing)."""
    norms = np.linalg.norm(Z, axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        factor = np.where(norms > bound, bound / norms, 1.0)
    return Z * factor[:, None]
