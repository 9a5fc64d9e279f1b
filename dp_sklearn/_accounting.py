"""Noise calibration, delegated to ``dp_accounting`` (the lowest accounting layer).

Every mechanism in dp_sklearn describes what it released as a ``dp_accounting``
``DpEvent`` and calibrates its noise with ``dp_accounting`` (see ``docs/privacy.md``).
This module only calibrates; composing events is :mod:`dp_sklearn.composition`,
storing them :mod:`dp_sklearn._event_json` and :mod:`dp_sklearn.ledger`.

Noise multipliers are stated relative to the **true l2 sensitivity of the released
quantity under replace-one neighbours**, so that the accountants can be used with
their default relation: a Gaussian event with noise multiplier ``z`` means "Gaussian
noise of standard deviation ``z`` times the sensitivity". The one exception is the
Poisson-sampled Gaussian of :func:`poisson_noise_multiplier`, stated per unit of
the per-record clip norm and valid only under ``NeighboringRelation.REPLACE_ONE``
(see :func:`dp_sklearn.composition.neighboring_relation`).
"""

from __future__ import annotations

import math
from functools import lru_cache

import attr
import numpy as np
from dp_accounting import dp_event, gaussian_mechanism, mechanism_calibration
from dp_accounting.pld import PLDAccountant, common
from dp_accounting.pld import privacy_loss_distribution as pld_lib
from dp_accounting.privacy_accountant import NeighboringRelation
from dp_accounting.rdp import RdpAccountant
from scipy.optimize import brentq
from scipy.special import ndtri

__all__ = [
    "PLD_DISCRETIZATION",
    "EpsilonDeltaDpEvent",
    "gaussian_noise_multiplier",
    "composed_gaussian_noise_multiplier",
    "poisson_noise_multiplier",
    "zcdp_rho",
    "zcdp_epsilon_upper_bound",
]

#: Value discretization interval (nats) of every privacy loss distribution (PLD) that
#: dp_sklearn builds, for calibration here and for composition in
#: :mod:`dp_sklearn.composition`. With the connect-the-dots PLDs of ``dp_accounting``,
#: 1e-3 changes epsilon by less than 1e-3 relative to 1e-4 and is ten times faster.
PLD_DISCRETIZATION = 1e-3

#: Above this epsilon, the Gaussian multiplier and the zCDP parameter use closed forms
#: (``dp_accounting``'s root finders lose accuracy and then fail beyond about 1e10).
_HUGE_EPSILON = 1e6


@attr.define(frozen=True)
class EpsilonDeltaDpEvent(dp_event.DpEvent):
    """A release that a theorem proves (epsilon, delta)-DP, with no finer description.

    Used for mechanisms whose privacy loss is not one of ``dp_accounting``'s
    primitive events (objective perturbation, Kifer et al. 2012 / Thakurta 2013,
    Theorem 3.8). :func:`dp_sklearn.composition.compose_epsilon` composes it through
    the privacy loss distribution of the dominating pair of a generic
    (epsilon, delta)-DP mechanism
    (``privacy_loss_distribution.from_privacy_parameters``), and by basic
    composition when ``delta == 0``.

    Parameters
    ----------
    epsilon : float
        Privacy loss bound in nats, > 0 (``inf``: no guarantee); also an attribute.
    delta : float
        Failure probability, in [0, 1); also an attribute.

    See Also
    --------
    dp_sklearn.composition.compose_epsilon : composes it with the other events.

    References
    ----------
    .. [1] D. Kifer, A. Smith and A. Thakurta, "Private convex empirical risk
       minimization and high-dimensional regression", COLT 2012.

    Examples
    --------
    >>> from dp_sklearn import EpsilonDeltaDpEvent
    >>> from dp_sklearn.composition import compose_epsilon
    >>> event = EpsilonDeltaDpEvent(epsilon=0.5, delta=1e-6)
    >>> round(compose_epsilon([event, event], 1e-5), 3)
    1.0
    """

    epsilon: float
    delta: float


def _check_eps_delta(epsilon, delta):
    if not (epsilon > 0):
        raise ValueError(f"epsilon must be > 0, got {epsilon!r}.")
    if not (0 <= delta < 1):
        raise ValueError(f"delta must be in [0, 1), got {delta!r}.")


def _huge_epsilon_gaussian_multiplier(epsilon, delta):
    """A valid multiplier for huge epsilon: the smallest z with Phi(1/(2z) - epsilon z) <= delta.

    The analytic Gaussian mechanism's delta (Balle & Wang 2018, Theorem 8) is
    Phi(1/(2z) - eps z) - e^eps Phi(-1/(2z) - eps z) <= Phi(1/(2z) - eps z), so this z
    is (epsilon, delta)-DP; it solves eps z^2 - t z - 1/2 = 0 with t = Phi^-1(1 - delta),
    written without overflow for epsilon up to the largest float.
    """
    r = float(-ndtri(delta)) / epsilon
    return 0.5 * r + math.sqrt(0.25 * r * r + 0.5 / epsilon)


@lru_cache(maxsize=4096)
def gaussian_noise_multiplier(epsilon: float, delta: float) -> float:
    """Noise multiplier of the analytic Gaussian mechanism for one release.

    Returns the smallest ``z`` such that adding ``N(0, (z * Delta_2)^2)`` noise to
    a query of l2 sensitivity ``Delta_2`` is (epsilon, delta)-DP (Balle & Wang,
    "Improving the Gaussian mechanism for differential privacy", ICML 2018,
    Theorem 8), computed by ``dp_accounting.get_sigma_gaussian``. For
    ``epsilon > 1e6`` it uses the closed-form sufficient condition
    ``Phi(1 / (2 z) - epsilon z) <= delta`` (the first term of Theorem 8), which is
    within 1e-6 relative of the exact value there and stays finite and positive up
    to the largest float.

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
        If epsilon is not > 0 (or is NaN), or delta is not in (0, 1).
    """
    if epsilon == np.inf:
        return 0.0
    _check_eps_delta(epsilon, delta)
    if delta == 0:
        raise ValueError("delta must be > 0 for the Gaussian mechanism.")
    if epsilon > _HUGE_EPSILON:
        return _huge_epsilon_gaussian_multiplier(float(epsilon), float(delta))
    return float(gaussian_mechanism.get_sigma_gaussian(float(epsilon), float(delta)))


def composed_gaussian_noise_multiplier(epsilon: float, delta: float, steps: int) -> float:
    """Noise multiplier for ``steps`` adaptive Gaussian releases of equal sensitivity.

    The T-fold adaptive composition of Gaussian mechanisms with noise multiplier
    ``z`` is exactly a single Gaussian mechanism with multiplier ``z / sqrt(T)``
    (Dong, Roth & Su 2019, Gaussian differential privacy, Corollary 3.3), so the
    tightest multiplier is ``sqrt(T) * gaussian_noise_multiplier(epsilon, delta)``.
    The matching event is ``SelfComposedDpEvent(GaussianDpEvent(z), T)``.

    Parameters
    ----------
    epsilon : float
        Total privacy loss in nats, > 0.
    delta : float
        In (0, 1).
    steps : int
        Number of releases T, >= 1.

    Returns
    -------
    z : float
        Noise standard deviation per unit of l2 sensitivity, per release.

    Raises
    ------
    ValueError
        If ``steps < 1`` or epsilon, delta are invalid.
    """
    if steps < 1:
        raise ValueError(f"steps must be >= 1, got {steps!r}.")
    return math.sqrt(steps) * gaussian_noise_multiplier(epsilon, delta)


@lru_cache(maxsize=1024)
def poisson_noise_multiplier(epsilon, delta, T, sampling_rate):
    """Smallest z' with T Poisson-sampled Gaussian steps (epsilon, delta)-DP under replace-one.

    Calibrated with ``dp_accounting.mechanism_calibration.calibrate_dp_mechanism``
    and the PLD accountant with ``NeighboringRelation.REPLACE_ONE`` at
    :data:`PLD_DISCRETIZATION` (the discretization the composition code uses). That
    accountant models a record replaced by another one, each contributing a vector
    of norm <= 1 in units of the noise multiplier: its privacy loss compares
    q N(-1, z'^2) + (1-q) N(0, z'^2) with q N(+1, z'^2) + (1-q) N(0, z'^2), i.e. it
    assumes sensitivity 2 per unit of z'. So z' is the noise standard deviation
    divided by the per-record clip norm C (not by the sensitivity 2C). At q = 1 it
    reduces to a Gaussian of sensitivity 2, z' = 2 z with z the full-batch
    multiplier of :func:`composed_gaussian_noise_multiplier`. The matching event,
    ``SelfComposedDpEvent(PoissonSampledDpEvent(q, GaussianDpEvent(z')), T)``, is
    valid only under replace-one (see ``docs/privacy.md``).

    Parameters
    ----------
    epsilon, delta : float
        Target guarantee of all T steps together: epsilon > 0 in nats, delta in (0, 1).
    T : int
        Number of steps, >= 1.
    sampling_rate : float
        Poisson sampling probability q, in (0, 1].

    Returns
    -------
    z_prime : float
        Noise standard deviation per unit of clip norm.
    """
    def make_accountant():
        return PLDAccountant(NeighboringRelation.REPLACE_ONE, value_discretization_interval=PLD_DISCRETIZATION)
    def make_event(zp):
        return dp_event.SelfComposedDpEvent(
            dp_event.PoissonSampledDpEvent(sampling_rate, dp_event.GaussianDpEvent(zp)), T)

    def eps_of(zp):
        return make_accountant().compose(make_event(zp)).get_epsilon(float(delta))

    # Bracket: 2 z_full at q = 1; about 2 q z_full (lossless amplification) below it, searched
    # in small factors (a PLD far below the answer takes minutes to build and is never needed).
    cap = 2.0 * composed_gaussian_noise_multiplier(epsilon, delta, T) * 1.02
    while eps_of(cap) > epsilon:
        cap *= 1.5
    lower = upper = 0.9 * min(cap, sampling_rate * cap / 1.02)
    while eps_of(lower) <= epsilon:
        lower = upper = lower * 0.7
    while upper < cap and (upper == lower or eps_of(upper) > epsilon):
        upper = min(cap, upper * 1.25)
    bracket = mechanism_calibration.ExplicitBracketInterval(lower, upper)
    return float(mechanism_calibration.calibrate_dp_mechanism(
        make_accountant, make_event, float(epsilon), float(delta), bracket_interval=bracket, tol=1e-4 * upper))


def zcdp_epsilon_upper_bound(rho: float, delta: float) -> float:
    """Closed-form (epsilon, delta) of rho-zCDP: rho + 2 sqrt(rho log(1/delta)).

    Bun & Steinke, "Concentrated differential privacy", TCC 2016, Proposition 1.3.

    Parameters
    ----------
    rho : float
        zCDP parameter, >= 0.
    delta : float
        In (0, 1).

    Returns
    -------
    epsilon : float
        In nats.
    """
    return rho + 2.0 * math.sqrt(rho * math.log(1.0 / delta))


@lru_cache(maxsize=4096)
def zcdp_rho(epsilon: float, delta: float) -> float:
    """Largest zCDP parameter rho whose event ``ZCDpEvent(rho)`` is (epsilon, delta)-DP.

    The conversion is the RDP accountant of ``dp_accounting`` (tighter than the
    closed form of :func:`zcdp_epsilon_upper_bound`, which it never exceeds). For
    ``epsilon > 1e6`` it returns the closed form's rho,
    ``(epsilon / (sqrt(log(1/delta) + epsilon) + sqrt(log(1/delta))))^2``.

    Parameters
    ----------
    epsilon : float
        Target privacy loss in nats, > 0.
    delta : float
        Target delta, in (0, 1).

    Returns
    -------
    rho : float

    Raises
    ------
    ValueError
        If epsilon is not > 0 (or is NaN), or delta is not in (0, 1).
    """
    _check_eps_delta(epsilon, delta)
    if delta == 0:
        raise ValueError("delta must be > 0 to convert zCDP to (epsilon, delta)-DP.")
    log_inv = math.log(1.0 / delta)
    # Closed form (Bun & Steinke, Proposition 1.3), solved for rho; a lower bracket.
    lo = (epsilon / (math.sqrt(log_inv + epsilon) + math.sqrt(log_inv))) ** 2
    if epsilon > _HUGE_EPSILON:
        return lo

    def eps_of(rho):
        return RdpAccountant().compose(dp_event.ZCDpEvent(rho)).get_epsilon(delta)

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


# ---------------------------------------------------------------------------
# Building blocks of dp_sklearn.composition
# ---------------------------------------------------------------------------
def gaussian_epsilon(mu, delta):
    """Epsilon at ``delta`` of a Gaussian mechanism with mu = sensitivity / sigma.

    The analytic Gaussian mechanism (Balle & Wang 2018, Theorem 8) via
    ``dp_accounting``; for mu > 100 the sufficient condition Phi(mu/2 - eps/mu) <= delta
    (first term of Theorem 8), eps = mu^2/2 + mu Phi^-1(1 - delta), which stays finite.
    """
    if mu <= 100.0:
        return float(gaussian_mechanism.get_epsilon_gaussian(1.0 / mu, delta))
    return 0.5 * mu * mu + mu * float(-ndtri(delta))


def _pmf_epsilon(pmf, delta, eps_r, delta_r):
    """Smallest epsilon >= 0 whose hockey-stick divergence is <= ``delta`` (see :func:`pld_epsilon`)."""
    losses = (pmf._lower_loss + np.arange(len(pmf._probs))) * pmf._discretization
    with np.errstate(over="ignore"):  # suffix sums, accumulated from the largest loss down
        tail_p = np.append(np.cumsum(pmf._probs[::-1])[::-1], 0.0)
        tail_e = np.append(np.cumsum((pmf._probs * np.exp(-losses))[::-1])[::-1], 0.0)
    inf_mass = pmf._infinity_mass
    a = 1.0 / (1.0 + math.exp(-eps_r))

    def pmf_delta(x):  # delta(x) = inf_mass + sum over losses l > x of p_l (1 - e^(x - l))
        i = int(np.searchsorted(losses, x, side="right"))  # e^x tail_e in logs: no overflow above x = 709
        return inf_mass + max(0.0, tail_p[i] - (math.exp(x + math.log(tail_e[i])) if tail_e[i] > 0 else 0.0))

    def excess(x):  # composed with the (eps_r, delta_r) dominating pair, minus the target
        return delta_r + (1.0 - delta_r) * (a * pmf_delta(x - eps_r) + (1.0 - a) * pmf_delta(x + eps_r)) - delta

    if excess(0.0) <= 0:
        return 0.0
    upper = max(0.0, float(losses[-1])) + eps_r + pmf._discretization
    if excess(upper) > 0:
        return math.inf
    if excess(upper) == 0:  # delta is all in the infinite losses: the largest finite loss with mass
        return float(losses[np.flatnonzero(pmf._probs)[-1]]) + eps_r
    root = brentq(excess, 0.0, upper, xtol=1e-12, rtol=1e-15)
    return root + 2e-12  # brentq brackets the root within xtol: round up


def pld_epsilon(pld, delta, generic=(0.0, 0.0)):
    """Epsilon at ``delta`` of ``pld`` composed with a generic ``(epsilon, delta)``-DP event.

    ``pld_epsilon(pld, delta)`` is ``pld.get_epsilon_for_delta(delta)`` (to about 1e-11,
    tested), computed from suffix sums of the PMF and a root finder instead of
    ``dp_accounting``'s Python loop over the support (tens of ms on the 1e5-point
    supports of a long ledger). With ``generic = (eps_r, delta_r)`` it is the epsilon
    of ``pld`` composed with the dominating pair of an (eps_r, delta_r)-DP mechanism
    (Kairouz, Oh & Viswanath 2015), without building it: the composed hockey-stick
    divergence is ``delta_r + (1 - delta_r) (a d(eps - eps_r) + (1 - a) d(eps + eps_r))``
    with ``a = e^eps_r / (1 + e^eps_r)`` and ``d`` the divergence of ``pld``.

    Uses dp_accounting 0.6's private PMF fields (``_pmf_remove``, ``_pmf_add``,
    ``_symmetric``, ``_probs``, ``_lower_loss``, ``_discretization``,
    ``_infinity_mass``) of dense PMFs; pinned by ``tests/test_ledger.py``.
    """
    pmfs = [pld._pmf_remove] if pld._symmetric else [pld._pmf_remove, pld._pmf_add]
    pmfs = [pmf.to_dense_pmf() for pmf in pmfs]
    return max(_pmf_epsilon(pmf, float(delta), float(generic[0]), float(generic[1])) for pmf in pmfs)


@lru_cache(maxsize=256)
def leaf_pld(kind, params, count):
    """PLD (at :data:`PLD_DISCRETIZATION`) of ``count`` compositions of one leaf."""
    d = PLD_DISCRETIZATION
    if kind == "gauss":
        return pld_lib.from_gaussian_mechanism(params / math.sqrt(count), value_discretization_interval=d)
    if kind == "laplace":
        pld = pld_lib.from_laplace_mechanism(params, value_discretization_interval=d)
    elif kind == "poisson":
        q, z = params
        pld = pld_lib.from_gaussian_mechanism(z, sampling_prob=q, value_discretization_interval=d,
                                              neighboring_relation=NeighboringRelation.REPLACE_ONE)
    else:  # "generic"
        pld = pld_lib.from_privacy_parameters(common.DifferentialPrivacyParameters(*params),
                                              value_discretization_interval=d)
    return pld.self_compose(count) if count > 1 else pld


@lru_cache(maxsize=256)
def event_pld(leaves):
    """PLD of one event's leaves ((kind, params, count), ...), composed in order."""
    pld = leaf_pld(*leaves[0])
    for leaf in leaves[1:]:
        pld = pld.compose(leaf_pld(*leaf))
    return pld

