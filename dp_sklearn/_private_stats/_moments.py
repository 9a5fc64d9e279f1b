"""Private bounded means and variances, and the calibration plan of a private-statistics fit."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from dp_accounting import dp_event

from .._accounting import EpsilonDeltaDpEvent, gaussian_noise_multiplier, zcdp_rho
from ._common import _RHO_MARGIN, _as_bounds, _check_epsilon
from .. import _noise


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
        sens, add = math.sqrt(p) / n, _noise.add_gaussian
    elif noise == "laplace":
        sens, add = p / n, _noise.add_laplace
    else:
        raise ValueError(f"noise must be 'gaussian' or 'laplace', got {noise!r}.")
    stats[0] = add(rng, stats[0], sens * mean_multiplier, sens)  # S in [-1/2, 1/2]
    stats[1] = add(rng, stats[1], 0.25 * sens * moment_multiplier, 0.25 * sens)  # S^2 in [0, 1/4]
    m = np.clip(stats[0], -0.5, 0.5)
    var = np.clip(stats[1] - np.square(m), 0.0, 0.25)
    return lo + (m + 0.5) * width, var * np.square(width)
