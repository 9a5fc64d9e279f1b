"""Private statistics: exponential-mechanism quantiles, bounded means and variances.

Every function here is a mechanism (or its calibration) under the replace-one
neighbouring relation of ``docs/privacy.md``: two datasets of the same public size
``n`` differ in one record. Each mechanism takes the one ``numpy.random.Generator``
of the fit and returns what it released together with, or calibrated by, a
``dp_accounting`` event.

References
----------
.. [1] A. Smith, "Privacy-preserving statistical estimation with optimal
   convergence rates", STOC 2011.
.. [2] J. Gillenwater, M. Joseph and A. Kulesza, "Differentially private
   quantiles", ICML 2021.
.. [3] F. McSherry and K. Talwar, "Mechanism design via differential privacy",
   FOCS 2007.
.. [4] M. Cesar and R. Rogers, "Bounding, concentrating, and truncating: unifying
   privacy loss composition for data analytics", ALT 2021.
.. [5] M. Bun and T. Steinke, "Concentrated differential privacy", TCC 2016.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

import numpy as np
from dp_accounting import dp_event

from ._accounting import EpsilonDeltaDpEvent, gaussian_noise_multiplier, zcdp_rho

__all__ = [
    "StatisticsPlan",
    "exponential_quantiles",
    "fenced_quantiles",
    "make_generator",
    "plan_statistics",
    "private_moments",
    "private_range",
    "quantile_epsilon",
    "search_unit",
]

#: relative margin taken off zCDP budgets so that float rounding of the sum of the
#: parts never lands above the target epsilon
_RHO_MARGIN = 1e-9


def make_generator(random_state):
    """The one ``numpy.random.Generator`` of a fit (``docs/privacy.md``, randomness).

    Parameters
    ----------
    random_state : None, int, numpy.random.SeedSequence, numpy.random.Generator or numpy.random.RandomState
        ``None`` draws fresh entropy from the operating system; an int or a
        ``SeedSequence`` makes the fit reproducible; a ``Generator`` is used as
        it is; a legacy ``RandomState`` seeds a new Generator with 128 bits drawn
        from it.

    Returns
    -------
    rng : numpy.random.Generator

    Raises
    ------
    ValueError
        If ``random_state`` is of another type.
    """
    if isinstance(random_state, np.random.Generator):
        return random_state
    if isinstance(random_state, np.random.RandomState):
        return np.random.default_rng(random_state.randint(0, 2**32, size=4, dtype=np.uint64))
    ok = random_state is None or isinstance(random_state, np.random.SeedSequence) or (
        isinstance(random_state, numbers.Integral) and not isinstance(random_state, bool))
    if not ok:
        raise ValueError(
            "random_state must be None, an int, a SeedSequence, a numpy Generator or a "
            f"RandomState, got {random_state!r}."
        )
    return np.random.default_rng(random_state)


def _as_bounds(lower, upper, n_features, name):
    """Broadcast public bounds to two float arrays of shape (n_features,) and check them."""
    try:
        lo = np.broadcast_to(np.asarray(lower, dtype=float), (n_features,)).copy()
        hi = np.broadcast_to(np.asarray(upper, dtype=float), (n_features,)).copy()
    except (TypeError, ValueError):
        raise ValueError(
            f"{name} must be scalars or arrays of shape ({n_features},), got {lower!r}, {upper!r}."
        ) from None
    if not (np.all(np.isfinite(lo)) and np.all(np.isfinite(hi)) and np.all(lo < hi)):
        raise ValueError(f"{name} must be finite with lower < upper for every feature, got {lower!r}, {upper!r}.")
    return lo, hi


def _check_epsilon(epsilon, name="epsilon"):
    ok = isinstance(epsilon, numbers.Real) and not isinstance(epsilon, bool)
    if not ok or not (0 < epsilon < np.inf):
        raise ValueError(f"{name} must be a finite real number > 0, got {epsilon!r}.")
    return float(epsilon)


def exponential_quantiles(X, quantiles, epsilon, rng, *, lower, upper, unit=None):
    """Private quantiles of each column, one exponential mechanism per (quantile, column).

    For a column with values clipped to the public range ``[a, b]`` and sorted,
    ``a = z_0 <= z_1 <= ... <= z_n <= z_{n+1} = b``, every point of the interval
    ``I_i = [z_i, z_{i+1}]`` has ``i`` values below it, and the utility of a
    point is ``u_i = -|i - q n|``. The mechanism samples an interval with
    probability proportional to ``|I_i| exp(epsilon u_i / 2)`` and then a point
    uniformly inside it (Smith 2011 [1]_, Section 3; the independent
    exponential-mechanism quantiles of Gillenwater, Joseph & Kulesza 2021 [2]_,
    Section 3). Sampling is exact: Gumbel-max over the log-weights
    ``log|I_i| + epsilon u_i / 2`` (empty intervals have weight 0), O(n log n)
    per column, vectorized over columns.

    Parameters
    ----------
    X : array-like of shape (n_samples,) or (n_samples, n_features)
        Data; values outside ``[lower, upper]`` are clipped to it.
    quantiles : float or array-like of shape (n_quantiles,)
        Quantile levels in [0, 1].
    epsilon : float
        Privacy loss of *each* exponential mechanism, in nats (> 0).
    rng : numpy.random.Generator
        The fit's only source of randomness.
    lower, upper : float or array-like of shape (n_features,)
        Public search range per column (finite, ``lower < upper``).
    unit : float or None, default=None
        Base measure of the mechanism. ``None``: uniform on ``[lower, upper]``
        (interval weights ``|I_i|``, Smith 2011). A positive float ``u``:
        uniform in ``t = asinh(x / u)``, i.e. log-uniform in ``|x|`` above ``u``
        (interval weights ``|asinh(z_{i+1} / u) - asinh(z_i / u)|``). The
        utility, hence the privacy guarantee, is the same; a wide search range
        then costs ``log`` of the ratio of *log*-widths instead of widths.

    Returns
    -------
    values : ndarray of shape (n_quantiles, n_features)
        One private quantile per level and column (shape (n_quantiles,) for 1-D ``X``).

    Raises
    ------
    ValueError
        If ``X`` is empty or not finite, a level is outside [0, 1], ``epsilon``
        is not a positive finite number or the bounds are invalid.

    Notes
    -----
    **Sensitivity.** Replacing one record removes one value and adds one, so the
    count of values below any point changes by at most 1 and ``|u_i - u'_i| <= 1``:
    the utility has replace-one sensitivity 1. Each mechanism is therefore
    ``epsilon``-DP (McSherry & Talwar 2007 [3]_) and, being ``epsilon``-bounded
    range, ``epsilon^2 / 8``-zCDP (Cesar & Rogers 2021 [4]_, Lemma 3.2). ``k``
    mechanisms compose to ``k epsilon``-DP or ``k epsilon^2 / 8``-zCDP
    (:func:`quantile_epsilon` picks the better). The release is accurate when
    ``epsilon q n / 2`` exceeds ``log((upper - lower) / spread)``, the log of how
    much wider the public range is than the data: see ``docs/privacy.md``.
    """
    eps = _check_epsilon(epsilon)
    X = np.asarray(X, dtype=float)
    one_d = X.ndim == 1
    X = X[:, None] if one_d else X
    if X.ndim != 2 or X.shape[0] == 0 or not np.all(np.isfinite(X)):
        raise ValueError("X must be a non-empty, finite 1-D or 2-D array.")
    q = np.atleast_1d(np.asarray(quantiles, dtype=float))
    if q.ndim != 1 or not np.all((q >= 0) & (q <= 1)):
        raise ValueError(f"quantiles must be levels in [0, 1], got {quantiles!r}.")
    n, p = X.shape
    lo, hi = _as_bounds(lower, upper, p, "lower, upper")
    edges = np.vstack([lo, np.sort(np.clip(X, lo, hi), axis=0), hi])  # (n + 2, p)
    if unit is not None:
        unit = _check_epsilon(unit, "unit")
        edges = np.arcsinh(edges / unit)  # monotone: ranks, hence the utility, are unchanged
    with np.errstate(divide="ignore"):
        log_len = np.log(np.diff(edges, axis=0))  # (n + 1, p), -inf for empty intervals
    ranks = np.arange(n + 1, dtype=float)[:, None]
    cols = np.arange(p)
    out = np.empty((q.size, p))
    for k, level in enumerate(q):  # a loop over the few quantile levels only
        logits = log_len - 0.5 * eps * np.abs(ranks - level * n) + rng.gumbel(size=log_len.shape)
        idx = np.argmax(logits, axis=0)
        left, right = edges[idx, cols], edges[idx + 1, cols]
        out[k] = left + (right - left) * rng.uniform(size=p)
    if unit is not None:
        out = np.clip(unit * np.sinh(out), lo, hi)  # back to the units of X (clip: rounding only)
    return out[:, 0] if one_d else out


def quantile_epsilon(epsilon, delta, count):
    """Per-mechanism epsilon for ``count`` exponential mechanisms within (epsilon, delta).

    Parameters
    ----------
    epsilon : float
        Total privacy loss in nats (> 0).
    delta : float
        Total delta in [0, 1); 0 forces pure composition.
    count : int
        Number of exponential mechanisms (>= 1).

    Returns
    -------
    epsilon0 : float
        Privacy loss of each mechanism.
    event : dp_accounting.DpEvent
        ``EpsilonDeltaDpEvent(count * epsilon0, 0)`` (basic composition of pure
        mechanisms) or ``ZCDpEvent(count * epsilon0^2 / 8)`` (zCDP composition,
        Cesar & Rogers 2021, Bun & Steinke 2016 [5]_), whichever allows the
        larger ``epsilon0``.
    """
    eps = _check_epsilon(epsilon)
    pure = eps / count
    if delta > 0:
        rho = zcdp_rho(eps, float(delta)) * (1.0 - _RHO_MARGIN)
        conc = math.sqrt(8.0 * rho / count)
        if conc > pure:
            return conc, dp_event.ZCDpEvent(count * conc**2 / 8.0)
    return pure, EpsilonDeltaDpEvent(count * pure, 0.0)


#: Tukey's fences: a private range is the private quartiles widened by this many IQRs
FENCE = 1.5


def search_unit(search_range):
    """Public unit of the log-uniform search base measure: 1e-9 times the largest |bound|."""
    return 1e-9 * max(abs(float(search_range[0])), abs(float(search_range[1])))


def fenced_quantiles(X, levels, epsilon, rng, *, lower, upper, unit, fence=FENCE):
    """Private quantiles at ``levels`` widened by ``fence`` times their spread, within the bounds.

    Post-processing of :func:`exponential_quantiles` (two levels per column):
    ``(q_lo - fence (q_hi - q_lo), q_hi + fence (q_hi - q_lo))`` clipped to
    ``[lower, upper]``. With the quartiles and ``fence=1.5`` these are Tukey's
    fences (about +-2.7 standard deviations for normal data).

    Returns
    -------
    lo, hi : ndarray of shape (n_features,)
    """
    q = np.sort(exponential_quantiles(X, levels, epsilon, rng, lower=lower, upper=upper, unit=unit), axis=0)
    spread = q[1] - q[0]
    return np.maximum(q[0] - fence * spread, lower), np.minimum(q[1] + fence * spread, upper)


def private_range(y, epsilon, rng, *, delta=0.0, search_range=(-1e6, 1e6), quantile_range=(0.25, 0.75),
                  fence=FENCE):
    """Private range ``[lo, hi]`` of a 1-D array: fenced exponential-mechanism quantiles.

    Meant for a target range (``bounds_y``) or a clipping range estimated from
    the data with a share of a fit's budget. Two private quantiles at
    ``quantile_range`` (:func:`exponential_quantiles`, each with half the
    budget, log-uniform base measure with unit :func:`search_unit`) are widened
    by ``fence`` times their distance (:func:`fenced_quantiles`).

    Parameters
    ----------
    y : array-like of shape (n_samples,)
        Values; clipped to ``search_range``.
    epsilon : float
        Privacy loss of the release in nats (> 0).
    rng : numpy.random.Generator
        The fit's only source of randomness.
    delta : float, default=0.0
        Delta of the release; with ``delta > 0`` the two mechanisms are
        composed by zCDP when that gives each a larger epsilon (never for two
        mechanisms at usual deltas, so pure DP in practice).
    search_range : tuple of float, default=(-1e6, 1e6)
        Public range known to contain the values (``low < high``).
    quantile_range : tuple of float, default=(0.25, 0.75)
        Quantile levels, ``0 <= q_lo < q_hi <= 1``. Inner levels need less
        budget: the mechanism lands near the data when ``epsilon q n / 4``
        exceeds about 3 (the log of the ratio of log-widths of the search range
        and of the data).
    fence : float, default=1.5
        Widening, in multiples of the distance between the two quantiles
        (0 returns the quantiles themselves).

    Returns
    -------
    lo, hi : float
        The private range, ``lo <= hi``.
    event : dp_accounting.DpEvent
        What was spent (see :func:`quantile_epsilon`).

    Raises
    ------
    ValueError
        If ``y`` is not 1-D, or ``epsilon``, ``fence`` or a range is invalid.

    Examples
    --------
    >>> import numpy as np
    >>> y = np.random.default_rng(0).uniform(25, 346, size=300)
    >>> lo, hi, event = private_range(y, 0.5, np.random.default_rng(1))
    >>> bool(-200 < lo < 100 and 250 < hi < 600)
    True
    """
    y = np.asarray(y, dtype=float)
    if y.ndim != 1:
        raise ValueError(f"y must be 1-D, got shape {y.shape}.")
    q_lo, q_hi = (float(v) for v in quantile_range)
    if not 0 <= q_lo < q_hi <= 1:
        raise ValueError(f"quantile_range must satisfy 0 <= q_lo < q_hi <= 1, got {quantile_range!r}.")
    if not (isinstance(fence, (int, float)) and 0 <= fence < np.inf):
        raise ValueError(f"fence must be a finite number >= 0, got {fence!r}.")
    low, high = (float(v) for v in search_range)
    if not (np.isfinite(low) and np.isfinite(high) and low < high):
        raise ValueError(f"search_range must be finite with low < high, got {search_range!r}.")
    eps0, event = quantile_epsilon(epsilon, delta, 2)
    lo, hi = fenced_quantiles(y[:, None], [q_lo, q_hi], eps0, rng, lower=low, upper=high,
                              unit=search_unit(search_range), fence=fence)
    return float(lo[0]), float(hi[0]), event


@dataclass(frozen=True)
class StatisticsPlan:
    """Data-independent calibration of a private-statistics fit.

    Attributes
    ----------
    quantile_epsilon : float
        Privacy loss of each exponential-mechanism quantile (0.0 if none).
    mean_multiplier, moment_multiplier : float
        Noise per unit of sensitivity for the mean and the second moment: the
        Gaussian standard deviation, or the Laplace scale when ``noise`` is
        ``"laplace"`` (0.0 if that statistic is not released).
    noise : {"gaussian", "laplace"}
        Noise distribution of the moments.
    event : dp_accounting.DpEvent
        Everything the plan spends, one ``ComposedDpEvent``.
    """

    quantile_epsilon: float
    mean_multiplier: float
    moment_multiplier: float
    noise: str
    event: dp_event.DpEvent


def plan_statistics(epsilon, delta, *, n_quantiles=0, quantile_share=0.0, mean_share=0.5, moments=True):
    """Split (epsilon, delta) between quantile mechanisms and the two moments.

    Parameters
    ----------
    epsilon : float
        Total privacy loss in nats (> 0).
    delta : float
        Total delta in [0, 1). ``0`` gives pure DP: basic composition of the
        exponential mechanisms and Laplace moments.
    n_quantiles : int, default=0
        Number of exponential-mechanism quantiles (levels times features).
    quantile_share : float, default=0.0
        Share of the budget for the quantiles, in [0, 1) (1 allowed when
        ``moments=False``): of epsilon for pure DP, of the zCDP parameter rho
        otherwise (rho the largest whose conversion is (epsilon, delta)-DP).
    mean_share : float, default=0.5
        Share of the moments' budget for the mean, in (0, 1) (of epsilon for
        Laplace, of ``1 / z^2`` for Gaussian noise).
    moments : bool, default=True
        Whether the mean and the second moment are released.

    Returns
    -------
    plan : StatisticsPlan

    Notes
    -----
    With ``delta > 0`` and no quantile, the two Gaussian releases compose
    exactly into one Gaussian of multiplier ``z`` (Dong, Roth & Su 2019,
    Corollary 3.3) with ``z`` from the analytic Gaussian mechanism (Balle &
    Wang 2018). With quantiles the plan composes in zCDP (Gaussian with
    multiplier ``z`` is ``1 / (2 z^2)``-zCDP), which the RDP accountant of
    :class:`dp_sklearn.PrivacyLedger` reproduces exactly.
    """
    eps = _check_epsilon(epsilon)
    delta = float(delta)
    share = float(quantile_share) if n_quantiles else 0.0
    parts, eps_q, z_m, z_v = [], 0.0, 0.0, 0.0
    noise = "laplace" if delta == 0 else "gaussian"
    if delta == 0:
        if n_quantiles:
            eps_q = share * eps / n_quantiles
            parts.append(EpsilonDeltaDpEvent(share * eps, 0.0))
        if moments:
            eps_m = (1.0 - share) * eps
            z_m, z_v = 1.0 / (mean_share * eps_m), 1.0 / ((1.0 - mean_share) * eps_m)
            parts += [dp_event.LaplaceDpEvent(z_m), dp_event.LaplaceDpEvent(z_v)]
    elif not n_quantiles:
        z = gaussian_noise_multiplier(eps, delta)
        z_m, z_v = z / math.sqrt(mean_share), z / math.sqrt(1.0 - mean_share)
        parts += [dp_event.GaussianDpEvent(z_m), dp_event.GaussianDpEvent(z_v)]
    else:
        rho = zcdp_rho(eps, delta) * (1.0 - _RHO_MARGIN)
        eps_q = math.sqrt(8.0 * share * rho / n_quantiles)
        parts.append(dp_event.ZCDpEvent(share * rho))
        if moments:
            z = 1.0 / math.sqrt(2.0 * (1.0 - share) * rho)
            z_m, z_v = z / math.sqrt(mean_share), z / math.sqrt(1.0 - mean_share)
            parts += [dp_event.GaussianDpEvent(z_m), dp_event.GaussianDpEvent(z_v)]
    return StatisticsPlan(eps_q, z_m, z_v, noise, dp_event.ComposedDpEvent(parts))


def private_moments(X, rng, *, lower, upper, mean_multiplier, moment_multiplier, noise="gaussian"):
    """Private per-feature mean and variance of data clipped to public bounds.

    Each column is clipped to ``[lower_j, upper_j]`` and mapped to
    ``s = (x - lower_j) / (upper_j - lower_j) - 1/2`` in ``[-1/2, 1/2]``. The
    mechanism releases the noisy means of ``s`` and of ``s^2`` and returns the
    mean ``m = E[s]`` and variance ``E[s^2] - m^2`` mapped back to the units of X.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)
        Finite data.
    rng : numpy.random.Generator
        The fit's only source of randomness.
    lower, upper : float or array-like of shape (n_features,)
        Public bounds per feature.
    mean_multiplier, moment_multiplier : float
        Noise per unit of sensitivity (from :func:`plan_statistics`): Gaussian
        standard deviation over the l2 sensitivity, or Laplace scale over the
        l1 sensitivity.
    noise : {"gaussian", "laplace"}, default="gaussian"

    Returns
    -------
    mean : ndarray of shape (n_features,)
        Private mean, clipped to the bounds.
    var : ndarray of shape (n_features,)
        Private variance, clipped to ``[0, ((upper - lower) / 2)^2]``.

    Notes
    -----
    **Sensitivities (replace-one).** One record moves each ``s_j`` by at most 1
    and each ``s_j^2`` (in ``[0, 1/4]``) by at most 1/4, so the vector of means
    of ``s`` has l2 sensitivity ``sqrt(p) / n`` (l1: ``p / n``) and that of
    ``s^2`` has ``sqrt(p) / (4 n)`` (l1: ``p / (4 n)``). Per feature in the
    units of X the mean's sensitivity is ``(upper_j - lower_j) / n``. Gaussian
    noise of standard deviation ``z`` times the l2 sensitivity is the event
    ``GaussianDpEvent(z)``; Laplace noise of scale ``b`` times the l1
    sensitivity is ``LaplaceDpEvent(b)`` (``1 / b``-DP).
    """
    X = np.asarray(X, dtype=float)
    n, p = X.shape
    lo, hi = _as_bounds(lower, upper, p, "lower, upper")
    width = hi - lo
    S = (np.clip(X, lo, hi) - lo) / width - 0.5
    stats = np.stack([S.mean(axis=0), np.square(S).mean(axis=0)])  # (2, p)
    if noise == "gaussian":
        sens = math.sqrt(p) / n
        draw = rng.standard_normal(size=(2, p))
    elif noise == "laplace":
        sens = p / n
        draw = rng.laplace(size=(2, p))
    else:
        raise ValueError(f"noise must be 'gaussian' or 'laplace', got {noise!r}.")
    stats += draw * (sens * np.array([[mean_multiplier], [0.25 * moment_multiplier]]))
    m = np.clip(stats[0], -0.5, 0.5)
    var = np.clip(stats[1] - np.square(m), 0.0, 0.25)
    return lo + (m + 0.5) * width, var * np.square(width)
