"""Privacy accounting and noise calibration, delegated to ``dp_accounting``.

Every mechanism in dp_sklearn describes what it released as a ``dp_accounting``
``DpEvent`` and calibrates its noise with ``dp_accounting`` (SPEC P7).

Noise multipliers are always stated relative to the **true l2 sensitivity of the
released quantity under replace-one neighbours** (SPEC P1), so the accountants
are used with their default relation: a Gaussian event with noise multiplier
``z`` means "Gaussian noise of standard deviation ``z`` times the sensitivity".
"""

from __future__ import annotations

import math
from functools import lru_cache

import attr
import numpy as np
from dp_accounting import dp_event
from dp_accounting import gaussian_mechanism
from dp_accounting.rdp import RdpAccountant

__all__ = [
    "EpsilonDeltaDpEvent",
    "gaussian_noise_multiplier",
    "composed_gaussian_noise_multiplier",
    "zcdp_rho",
    "zcdp_epsilon_upper_bound",
    "epsilon_of_event",
]


@attr.define(frozen=True)
class EpsilonDeltaDpEvent(dp_event.DpEvent):
    """A release that a theorem proves (epsilon, delta)-DP, with no finer description.

    Used for mechanisms whose privacy loss is not one of ``dp_accounting``'s
    primitive events (objective perturbation, Kifer et al. 2012 / Thakurta 2013,
    Theorem 3.8). :class:`dp_sklearn.PrivacyLedger` composes it through the
    privacy loss distribution of the dominating pair of a generic
    (epsilon, delta)-DP mechanism
    (``privacy_loss_distribution.from_privacy_parameters``).

    Attributes
    ----------
    epsilon : float
        Privacy loss bound in nats.
    delta : float
        Failure probability, in [0, 1).
    """

    epsilon: float
    delta: float


def _check_eps_delta(epsilon, delta):
    if not (epsilon > 0):
        raise ValueError(f"epsilon must be > 0, got {epsilon!r}.")
    if not (0 <= delta < 1):
        raise ValueError(f"delta must be in [0, 1), got {delta!r}.")


@lru_cache(maxsize=4096)
def gaussian_noise_multiplier(epsilon: float, delta: float) -> float:
    """Noise multiplier of the analytic Gaussian mechanism for one release.

    Returns the smallest ``z`` such that adding ``N(0, (z * Delta_2)^2)`` noise to
    a query of l2 sensitivity ``Delta_2`` is (epsilon, delta)-DP (Balle & Wang,
    "Improving the Gaussian mechanism for differential privacy", ICML 2018,
    Theorem 8), computed by ``dp_accounting.get_sigma_gaussian``.

    Parameters
    ----------
    epsilon : float
        Privacy loss in nats, > 0. ``np.inf`` returns 0.
    delta : float
        In (0, 1).

    Returns
    -------
    z : float
        Noise standard deviation per unit of l2 sensitivity.

    Raises
    ------
    ValueError
        If epsilon <= 0 or delta not in (0, 1).
    """
    if epsilon == np.inf:
        return 0.0
    _check_eps_delta(epsilon, delta)
    if delta == 0:
        raise ValueError("delta must be > 0 for the Gaussian mechanism.")
    return float(gaussian_mechanism.get_sigma_gaussian(float(epsilon), float(delta)))


def composed_gaussian_noise_multiplier(epsilon: float, delta: float, steps: int) -> float:
    """Noise multiplier for ``steps`` adaptive Gaussian releases of equal sensitivity.

    The T-fold adaptive composition of Gaussian mechanisms with noise multiplier
    ``z`` is exactly a single Gaussian mechanism with multiplier ``z / sqrt(T)``
    (Dong, Roth & Su 2019, Gaussian differential privacy, Corollary 3.3), so the
    tightest multiplier is ``sqrt(T) * gaussian_noise_multiplier(epsilon, delta)``.
    The matching event is ``SelfComposedDpEvent(GaussianDpEvent(z), T)``.
    """
    if steps < 1:
        raise ValueError(f"steps must be >= 1, got {steps!r}.")
    return math.sqrt(steps) * gaussian_noise_multiplier(epsilon, delta)


def zcdp_epsilon_upper_bound(rho: float, delta: float) -> float:
    """Closed-form (epsilon, delta) of rho-zCDP: rho + 2 sqrt(rho log(1/delta)).

    Bun & Steinke, "Concentrated differential privacy", TCC 2016, Proposition 1.3.
    """
    return rho + 2.0 * math.sqrt(rho * math.log(1.0 / delta))


@lru_cache(maxsize=4096)
def zcdp_rho(epsilon: float, delta: float) -> float:
    """Largest zCDP parameter rho whose event ``ZCDpEvent(rho)`` is (epsilon, delta)-DP.

    The conversion is the RDP accountant of ``dp_accounting`` (tighter than the
    closed form of :func:`zcdp_epsilon_upper_bound`, which it never exceeds).

    Parameters
    ----------
    epsilon : float
        Target privacy loss in nats, > 0.
    delta : float
        Target delta, in (0, 1).

    Returns
    -------
    rho : float
    """
    _check_eps_delta(epsilon, delta)
    if delta == 0:
        raise ValueError("delta must be > 0 to convert zCDP to (epsilon, delta)-DP.")

    def eps_of(rho):
        acc = RdpAccountant()
        acc.compose(dp_event.ZCDpEvent(rho))
        return acc.get_epsilon(delta)

    # Closed form lower bracket: rho_cf satisfies the closed form, hence eps_of <= epsilon.
    lo = (math.sqrt(math.log(1 / delta) + epsilon) - math.sqrt(math.log(1 / delta))) ** 2
    hi = max(2 * lo, epsilon)
    while eps_of(hi) < epsilon:
        hi *= 2
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        if eps_of(mid) <= epsilon:
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-12 * hi:
            break
    return lo


def epsilon_of_event(event: dp_event.DpEvent, delta: float) -> float:
    """Epsilon spent by ``event`` at ``delta``, by the tightest applicable accountant.

    Uses the PLD accountant where it supports the event and the RDP accountant
    otherwise; :class:`EpsilonDeltaDpEvent` parts are composed through their
    dominating-pair privacy loss distribution (see :mod:`dp_sklearn.ledger`).
    """
    from .ledger import compose_epsilon

    return compose_epsilon([event], delta)
