"""Calibration of the search before the data is used.

Each candidate's event is obtained by a dry run on public synthetic data of the
same shape and column layout (events are functions of hyperparameters, n and p
only, see ``docs/privacy.md``); the per-run budget ``epsilon_c`` is then the largest
value (bisection to 0.1 %) for which the accountant certifies the whole release.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from functools import partial

from dp_accounting import dp_event

from .._accounting import gaussian_noise_multiplier
from .._release import detached
from ..composition import compose_epsilon
from ._estimator import released_event
from ._repeat_select import UnsupportedEventError, contains_sampling, dominating_event, rdp_curve

__all__ = ["Plan", "Calibrator"]


@dataclass
class Plan:
    """The public calibration of one search (data-independent)."""

    eps_c: float
    eps_fit: float
    delta_c: float
    z_score: float
    total_event: object
    inner: object
    runs: list
    refit_event: object
    epsilon: float


class Calibrator:
    """Events of the candidates at a per-run budget, and the budget that meets the target.

    Parameters
    ----------
    spec : EstimatorSpec
    candidates : list of dict
        Public candidate parameters (the grid, or public draws from the distributions).
    synthetic : callable
        ``synthetic(n_rows) -> (X, y)``, public stand-in data.
    n_train, n_samples : int
    delta_c : float
        Delta of each run.
    score_fraction : float
    selection : {"repeat_and_select", "exhaustive"}
    mean_k, shape : float or None
        Repeat-and-select parameters.
    refit : float or None
        Budget fraction of a refit on all the data.
    """

    def __init__(self, spec, candidates, synthetic, n_train, n_samples, *, delta_c, score_fraction, selection,
                 mean_k, shape, refit):
        self.spec, self.candidates = spec, candidates
        self.delta_c, self.score_fraction = delta_c, score_fraction
        self.rs = selection == "repeat_and_select"
        self.mean_k, self.shape, self.refit = mean_k, shape, refit
        self._train = synthetic(n_train)
        self._synthetic, self._n = synthetic, n_samples
        self._cache = {}

    def dry_event(self, params, epsilon, delta, data):
        """The event of a fit with these parameters on public synthetic ``data``."""
        est = self.spec.make(params, epsilon, delta)
        with warnings.catch_warnings(), detached():  # a dry run reports to no enclosing release
            warnings.simplefilter("ignore")
            try:
                est.fit(*data)
            except Exception as exc:  # noqa: BLE001 - reported with context
                raise ValueError(
                    f"Calibration dry-run of {type(est).__name__} with {params} on public synthetic data of the "
                    f"same shape failed ({type(exc).__name__}: {exc}); DPGridSearchCV needs estimators that "
                    "accept input of that shape and column layout."
                ) from exc
        return released_event(est)

    def _fit_event(self, i, eps_fit):
        key = (i, eps_fit)
        if key not in self._cache:
            ev = self.dry_event(self.candidates[i], eps_fit, self.delta_c, self._train)
            if self.rs and contains_sampling(ev):
                raise ValueError(
                    f"The candidate {self.candidates[i]} releases a subsampled (batch_size) event {ev}, which is "
                    "private only under the replace-one relation; selection='repeat_and_select' is accounted by "
                    "the add/remove RDP accountant and would under-count it. Use selection='exhaustive' or "
                    "full-batch candidates (batch_size=None or 'full')."
                )
            self._cache[key] = ev
        return self._cache[key]

    def _refit_event(self, eps_total, delta_total):
        if self.refit is None:
            return None
        data = self._synthetic(self._n)
        return dominating_event([self.dry_event(c, self.refit * eps_total, delta_total / 2.0, data)
                                 for c in self.candidates])

    def plan(self, eps_c, refit_event):
        """The release at per-run budget ``eps_c``."""
        eps_fit = (1.0 - self.score_fraction) * eps_c
        z_s = gaussian_noise_multiplier(self.score_fraction * eps_c, self.delta_c)
        runs = [dp_event.ComposedDpEvent([self._fit_event(i, eps_fit), dp_event.GaussianDpEvent(z_s)])
                for i in range(len(self.candidates))]
        inner = None
        if self.rs:
            inner = dominating_event(runs)
            try:
                rdp_curve(inner)
            except UnsupportedEventError:
                raise ValueError(
                    "selection='repeat_and_select' is accounted by the RDP accountant, which does not support "
                    f"the candidates' event {inner}. Use a solver with a Gaussian or zCDP event "
                    "(e.g. solver='noisy_gd' or 'output_perturbation'), or selection='exhaustive'."
                ) from None
            ev = dp_event.RepeatAndSelectDpEvent(inner, self.mean_k, self.shape)
        else:
            ev = dp_event.ComposedDpEvent(runs)
        total = ev if refit_event is None else dp_event.ComposedDpEvent([ev, refit_event])
        return Plan(eps_c, eps_fit, self.delta_c, z_s, total, inner, runs, refit_event, math.nan)

    def _accounted(self, eps_c, refit_event, delta):
        return compose_epsilon([self.plan(eps_c, refit_event).total_event], delta)

    def solve(self, eps_total, delta_total):
        """The plan with the largest per-run budget whose total is at most ``eps_total``.

        Raises
        ------
        ValueError
            If even a tiny per-run budget does not fit.
        """
        refit_event = self._refit_event(eps_total, delta_total)
        accounted = partial(self._accounted, refit_event=refit_event, delta=delta_total)
        lo = eps_total
        if accounted(lo) > eps_total:
            for _ in range(40):
                lo /= 2.0
                if accounted(lo) <= eps_total:
                    break
            else:
                raise ValueError(
                    f"The budget epsilon={eps_total:g} is too small to calibrate this search (try a smaller "
                    "n_iter, shape or refit share)."
                )
            hi = 2.0 * lo
            while hi / lo > 1.001:
                mid = math.sqrt(lo * hi)
                if accounted(mid) <= eps_total:
                    lo = mid
                else:
                    hi = mid
        plan = self.plan(lo, refit_event)
        plan.epsilon = float(compose_epsilon([plan.total_event], delta_total))
        return plan
