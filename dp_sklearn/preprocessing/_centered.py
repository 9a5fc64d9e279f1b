"""``DPStandardScaler(strategy="centered")``: the global scale after one private centering vector.

The global scale (:mod:`dp_sklearn.preprocessing._global`) divides every feature by one common
scale and does not center: a feature whose mean is large against its spread (a year, a price,
pixel intensities) then reaches the model as a near constant. Per-feature medians would center
it but cost ``n_features`` quantiles, out of reach where the global scale is chosen. One
Gaussian release of the *mean row* centers every feature at a cost independent of
``n_features``:

1. ``m1``: the private geometric-mean row norm of X (:func:`global_scale`'s Laplace release,
   ``epsilon_1``, noise target ``CENTERED_FIRST_NOISE`` nats); it only sets a clipping bound,
   but when it comes out low every row is clipped and the center falls short of the mean, so
   its target is as fine as the scale's (coarser ones, 0.5 to 2 nats, lost on the tuning half).
2. Rows (clipped to ``search_range``) are clipped to the l2 norm ``C = CENTERED_CLIP m1`` and
   their mean is released with the Gaussian mechanism: standard deviation ``sigma = z 2 C / n``
   per coordinate (replace-one l2 sensitivity ``2 C / n``; Dwork & Roth 2014, Appendix A), by
   the discrete Gaussian of :func:`dp_sklearn._noise.add_gaussian`. Each coordinate is shrunk
   towards 0 by the positive-part James-Stein factor ``max(0, 1 - sigma^2 / mhat_j^2)``
   (post-processing; a coordinate indistinguishable from its noise is not moved). The result
   is ``mean_``.
3. The global scale of the centered rows ``x - mean_`` (a second Laplace release,
   ``epsilon_2``, noise target ``GLOBAL_NOISE``); ``transform`` maps ``x`` to
   ``(clip(x, search_range) - mean_) / scale_`` with rows clipped to ``output_clip
   sqrt(n_features)`` as the global scale does.

Cost: ``Laplace(1 / epsilon_1) + Gaussian(z) + Laplace(1 / epsilon_2)``, by basic composition
``epsilon_1 + epsilon_g + epsilon_2`` with the Gaussian's ``(epsilon_g, delta)`` from the
analytic Gaussian mechanism (Balle & Wang 2018); the ledger's accountant composes the event
tighter (PLD). The targets (the two Laplace noises and ``z = CENTERED_Z``) cost
``centered_epsilon``; a fit at a smaller ``epsilon`` scales the three epsilons by the same
factor, a fit at a larger one spends only the targets (beyond them a better centering does not
help a model, and inside a pipeline the rest goes to the model; ``epsilon_`` still states the
``epsilon`` asked for, an upper bound).
``delta = 0`` is refused (the Gaussian needs ``delta > 0``). The strategy is opt-in:
``strategy="auto"`` never picks it (where per-feature statistics are out of reach it runs the
global scale; evidence in ``benchmarks/tabular/README.md``). Everything is a function of public values (n, n_features, the budget, the
search range) and of the released statistics.

References
----------
.. [1] C. Dwork and A. Roth, "The algorithmic foundations of differential privacy", 2014.
.. [2] B. Balle and Y.-X. Wang, "Improving the Gaussian mechanism for differential privacy:
   analytical calibration and optimal denoising", ICML 2018.
.. [3] W. James and C. Stein, "Estimation with quadratic loss", Berkeley Symposium 1961.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from dp_accounting import dp_event

from .._accounting import gaussian_epsilon, gaussian_noise_multiplier
from .. import _noise
from ._global import GLOBAL_NOISE, GLOBAL_ROW_NORM, clip_rows, global_log_width, global_scale

__all__ = ["CENTERED_CLIP", "CENTERED_FIRST_NOISE", "CENTERED_Z", "CenteredPlan", "centered_center",
           "centered_epsilon", "centered_plan", "centered_scale", "noisy_mean", "shrink"]

#: Gaussian noise multiplier (standard deviation over the l2 sensitivity ``2 C / n``) of the
#: centering release at its target (chosen on the tuning half of ``benchmarks/tabular``;
#: evidence in its README)
CENTERED_Z = 15.0
#: the rows are clipped to ``CENTERED_CLIP`` times the released geometric-mean row norm (tuning
#: half, with 1, 2 and 3)
CENTERED_CLIP = 1.5
#: Laplace scale, in nats, of the first (clipping-bound) row-norm release at its target (tuning
#: half, with 0.2, 0.5, 1 and 2)
CENTERED_FIRST_NOISE = 0.3


@dataclass(frozen=True)
class CenteredPlan:
    """Calibration of ``strategy="centered"`` (public values only).

    Attributes
    ----------
    epsilon_1, epsilon_2 : float
        Privacy loss of the first (raw rows) and second (centered rows) Laplace row-norm releases.
    z : float
        Gaussian noise multiplier of the centering release.
    event : dp_accounting.ComposedDpEvent
        ``[LaplaceDpEvent(1 / epsilon_1), GaussianDpEvent(z), LaplaceDpEvent(1 / epsilon_2)]``.
    """

    epsilon_1: float
    z: float
    epsilon_2: float
    event: dp_event.DpEvent

    @property
    def quantile_epsilon(self):  # the scaler's shared fit template reads it; no quantile here
        return 0.0


def _targets(n_samples, n_features, search, delta, z=CENTERED_Z, first_noise=CENTERED_FIRST_NOISE):
    w = global_log_width(n_features, search)
    e1, e2 = w / (first_noise * n_samples), w / (GLOBAL_NOISE * n_samples)
    return e1, e2, gaussian_epsilon(1.0 / z, float(delta))


def centered_plan(epsilon, delta, n_samples, n_features, search, z=CENTERED_Z, first_noise=CENTERED_FIRST_NOISE):
    """The three releases' calibration at ``(epsilon, delta)`` (``delta > 0``).

    Parameters
    ----------
    epsilon : float
        Privacy loss in nats (finite, > 0).
    delta : float
        In (0, 1).
    n_samples, n_features : int
        Shape of the data (public).
    search : tuple (low, high)
        The public ``search_range``.
    z : float, default=CENTERED_Z
        Target Gaussian multiplier.
    first_noise : float, default=CENTERED_FIRST_NOISE
        Target Laplace scale, in nats, of the first row-norm release.

    Returns
    -------
    plan : CenteredPlan
        Basic composition of ``epsilon_1 + epsilon_g + epsilon_2 <= epsilon`` (the Gaussian's
        ``(epsilon_g, delta)`` by the analytic Gaussian mechanism, Balle & Wang 2018): the
        targets ``epsilon_1* = w / (CENTERED_FIRST_NOISE n)``, ``epsilon_2* = w / (GLOBAL_NOISE
        n)`` (``w = global_log_width``) and ``epsilon_g*`` of the multiplier ``CENTERED_Z`` when
        ``epsilon`` affords their sum, else each scaled by ``epsilon / sum``.
    """
    e1, e2, eg = _targets(n_samples, n_features, search, delta, z, first_noise)
    s = min(1.0, float(epsilon) / (e1 + e2 + eg))
    e1, e2, eg = s * e1, s * e2, s * eg
    z = float(z) if s == 1.0 else gaussian_noise_multiplier(eg, float(delta))
    event = dp_event.ComposedDpEvent([dp_event.LaplaceDpEvent(1.0 / e1), dp_event.GaussianDpEvent(z),
                                      dp_event.LaplaceDpEvent(1.0 / e2)])
    return CenteredPlan(e1, z, e2, event)


def centered_epsilon(n_samples, n_features, search, delta, z=CENTERED_Z, first_noise=CENTERED_FIRST_NOISE):
    """Epsilon of the plan's targets at ``delta`` (basic composition): what a pipeline's default split gives it.

    ``epsilon_1* + epsilon_g* + epsilon_2*`` of :func:`centered_plan`. Public values only.
    """
    return float(sum(_targets(n_samples, n_features, search, delta, z, first_noise)))


def shrink(mhat, sigma):
    """Positive-part James-Stein shrinkage of each coordinate: ``mhat_j max(0, 1 - sigma^2 / mhat_j^2)``."""
    mhat = np.asarray(mhat, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        factor = np.where(mhat != 0.0, np.maximum(0.0, 1.0 - sigma ** 2 / np.square(mhat)), 0.0)
    return mhat * factor


def centered_center(X, plan, rng, search, clip=CENTERED_CLIP):
    """The released centering vector and the clipping bound ``C`` (steps 1 and 2; ``plan=None``: exact).

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)
        Finite data; clipped to ``search`` first.
    plan : CenteredPlan or None
        ``None``: the exact mean of the clipped rows (non-private, ``epsilon=inf``).
    rng : numpy.random.Generator or None
    search : tuple (low, high)
    clip : float, default=CENTERED_CLIP
        ``C`` over the released geometric-mean row norm.

    Returns
    -------
    center : ndarray of shape (n_features,)
        The shrunk private mean (exact mean for ``plan=None``).
    bound : float
        ``C``, the l2 norm the rows were clipped to.
    sigma : float
        Standard deviation of the Gaussian noise per coordinate, ``z 2 C / n`` (0 for ``plan=None``).
    """
    n, p = X.shape
    Xc = np.clip(X, *search)
    if plan is None:
        return Xc.mean(axis=0), np.inf, 0.0
    m1 = global_scale(X, plan.epsilon_1, rng, search) * GLOBAL_ROW_NORM * np.sqrt(p)
    bound = float(clip) * m1
    mhat, sigma = noisy_mean(Xc, bound, plan.z, rng)
    return shrink(mhat, sigma), bound, sigma


def noisy_mean(X, bound, z, rng):
    """The Gaussian release of the mean of the rows of ``X`` clipped to the l2 norm ``bound``.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)
    bound : float
        ``C`` (public or released), > 0.
    z : float
        Noise multiplier: the noise's standard deviation per coordinate is ``z 2 C / n``, ``2 C /
        n`` the replace-one l2 sensitivity of the mean of rows of norm at most ``C``.
    rng : numpy.random.Generator

    Returns
    -------
    mhat : ndarray of shape (n_features,)
    sigma : float
        ``z 2 C / n``.
    """
    sensitivity = 2.0 * float(bound) / X.shape[0]
    sigma = float(z) * sensitivity
    return _noise.add_gaussian(rng, clip_rows(X, bound).mean(axis=0), sigma, sensitivity), sigma


def centered_scale(X, center, plan, rng, search):
    """Step 3: the global scale of ``clip(X, search) - center`` (second Laplace release)."""
    reach = float(np.max(np.abs(center))) if center.size else 0.0
    wide = (search[0] - reach, search[1] + reach)
    return global_scale(np.clip(X, *search) - center, np.inf if plan is None else plan.epsilon_2, rng, wide)
