"""Composition of the ``dp_accounting`` events that dp_sklearn emits (see ``docs/privacy.md``).

Neighbours differ in one record (replace-one). Gaussian, Laplace, zCDP and generic
(epsilon, delta) events state their noise relative to the replace-one sensitivity,
so ``dp_accounting``'s default (add/remove) accountants read them correctly. A
``PoissonSampledDpEvent`` (mini-batch noisy GD) states its noise per unit of the
per-record clip norm and is valid only under ``NeighboringRelation.REPLACE_ONE``.
:func:`neighboring_relation` tells which case an event is; :func:`compose_epsilon`
composes any list of them correctly, wherever the sampled event is nested.
"""

from __future__ import annotations

import hashlib
import math
from collections import Counter

from dp_accounting import dp_event
from dp_accounting.rdp import RdpAccountant

from ._accounting import EpsilonDeltaDpEvent, event_pld, gaussian_epsilon, leaf_pld, pld_epsilon
from ._event_tree import (_PLD_MAX_COUNT, _PLD_MAX_LEAVES, _PLD_MAX_TOTAL_WIDTH, _PLD_MAX_WIDTH,  # noqa: F401
                          UnsupportedCompositionError, _compose_all, _gaussian_mu, _merged_leaves, _one_gaussian,
                          _pld_width, _self_composed, contains_poisson_sampling, flatten_events, neighboring_relation)

__all__ = [
    "RunningComposition",
    "UnsupportedCompositionError",
    "compose_epsilon",
    "contains_poisson_sampling",
    "epsilon_of_event",
    "flatten_events",
    "neighboring_relation",
]

#: Gaussian leaves with mu = sqrt(count) / z above this (epsilon in the hundreds), and
#: Laplace leaves with count / b above _WIDE_LAPLACE, are too wide for a PLD grid; they
#: are composed separately by a closed form (see RunningComposition.epsilon).
_WIDE_MU = 10.0
_WIDE_LAPLACE = 50.0
#: shares of the delta left by generic events given to the RDP-only part when it meets PLD-only events
#: (one share keeps a mixed ledger to two large PLD compositions per check; 0.25 and 0.75 gained <2%)
_RDP_DELTA_SHARES = (0.5,)


class RunningComposition:
    """The composition of a growing sequence of events, updated one event at a time.

    :meth:`add` never revisits earlier events, so a ledger can keep one instance and add
    only new records. The PLDs are folded lazily: equal events by one ``self_compose``,
    distinct ones by a balanced tree (time linear in their supports). :func:`compose_epsilon`
    is ``RunningComposition().add(*events).epsilon(delta)``; states folded in different
    steps agree to the PLD discretization (both pessimistic: upper bounds).

    Attributes
    ----------
    digest : str
        SHA-1 chain over the ``repr`` of the added events: equal digests mean equal
        sequences (used to cache :meth:`epsilon`).
    n_events : int
        Number of events added.

    See Also
    --------
    compose_epsilon : the same composition of a whole list at once.

    Examples
    --------
    >>> from dp_accounting import dp_event
    >>> running = RunningComposition().add(dp_event.GaussianDpEvent(4.0))
    >>> round(running.add(dp_event.GaussianDpEvent(4.0)).epsilon(1e-5), 3)
    1.356
    """

    def __init__(self):
        self.digest, self.n_events, self.nonprivate = "", 0, False
        self.mu2 = 0.0  # sum of count / z^2 over narrow Gaussian leaves
        self.pure_epsilon, self.all_pure = 0.0, True  # basic composition of the pure leaves
        self.generic_log1m_delta = 0.0  # sum of count * log(1 - delta_i) over generic leaves in the PLD
        self.wide_log1m_delta = 0.0  # the same over generic leaves composed by basic composition
        self.pld_width = 0.0  # span of the Laplace, Poisson-sampled and generic leaves in the PLD
        # Gaussian (and Poisson bounded at q = 1) and Laplace leaves too wide for the PLD grid
        self.wide_mu2, self.wide_laplace = 0.0, 0.0
        self.kinds = set()  # "not_gauss" (PLD), "pld_only" (Poisson, generic), "rdp_only" (zCDP, repeat-and-select)
        self.rdp_groups = {}  # repr -> [event, count]: Laplace and repeat-and-select, for the RDP accountant
        self.zcdp = (0.0, 0.0)
        self._pld = self._pld_strict = None
        self._unfolded, self._leaves = [], []  # per-event leaf tuples not yet in the PLDs

    def copy(self):
        """A copy that shares the (immutable) composed PLD; earlier work is not redone.

        Returns
        -------
        RunningComposition
            An independent state: adding to it leaves ``self`` unchanged.
        """
        if self.kinds:  # anything but Gaussians: fold now, once, rather than in every copy
            self.pld()
        new = RunningComposition.__new__(RunningComposition)
        new.__dict__.update(self.__dict__)
        new.kinds = set(self.kinds)
        new.rdp_groups = {k: list(v) for k, v in self.rdp_groups.items()}
        new._unfolded = list(self._unfolded)
        return new

    def add(self, *events):
        """Compose ``events`` in order (on ``UnsupportedCompositionError`` the state is unchanged).

        Parameters
        ----------
        *events : dp_accounting.DpEvent
            The events, as :func:`compose_epsilon` accepts them.

        Returns
        -------
        self : RunningComposition
        """
        for event in events:
            if not isinstance(event, dp_event.DpEvent):
                raise TypeError(f"events must be dp_accounting DpEvents, got {type(event).__name__}.")
            pairs, self._leaves = _merged_leaves(event), []
            width, gauss_wide = _pld_width(pairs), _gaussian_mu(pairs) > _WIDE_MU
            wide = width > _PLD_MAX_WIDTH or self.pld_width + width > _PLD_MAX_TOTAL_WIDTH
            self.pld_width += 0.0 if wide else width
            for leaf, count in pairs:
                self._add_leaf(leaf, count, gauss_wide if isinstance(leaf, dp_event.GaussianDpEvent) else wide)
            if self._leaves:  # one PLD per event, so that each event costs one large composition
                self._unfolded.append(_one_gaussian(self._leaves))
            self.n_events += 1
            self.digest = hashlib.sha1((self.digest + repr(event)).encode("utf-8")).hexdigest()
        return self

    def _add_leaf(self, ev, c, wide=False):
        if isinstance(ev, dp_event.NonPrivateDpEvent):
            self.nonprivate = True
        elif isinstance(ev, dp_event.GaussianDpEvent):
            self.all_pure = False
            if ev.noise_multiplier == 0:
                self.nonprivate = True
            elif wide or math.sqrt(c) / ev.noise_multiplier > _WIDE_MU:
                self.wide_mu2 += c / float(ev.noise_multiplier) ** 2
            else:
                self.mu2 += c / float(ev.noise_multiplier) ** 2
                self._to_pld("gauss", float(ev.noise_multiplier), c)
        elif isinstance(ev, dp_event.LaplaceDpEvent):
            if ev.noise_multiplier == 0:
                self.nonprivate = True
                return
            self.pure_epsilon += c / float(ev.noise_multiplier)
            if wide or c / ev.noise_multiplier > _WIDE_LAPLACE:
                self.wide_laplace += c / float(ev.noise_multiplier)
                return
            self._to_rdp(ev, c)
            self._to_pld("laplace", float(ev.noise_multiplier), c)
        elif isinstance(ev, dp_event.PoissonSampledDpEvent):
            self.all_pure = False
            q, z = float(ev.sampling_probability), float(ev.event.noise_multiplier)
            if q == 0:
                return
            if z == 0:
                self.nonprivate = True
            elif wide or 2.0 * math.sqrt(c) / z > _WIDE_MU:  # bounded by the q = 1 Gaussian of sensitivity 2
                self.wide_mu2 += 4.0 * c / z**2
            else:
                self.kinds.add("pld_only")  # never through the (add/remove) RDP accountant
                self._to_pld("poisson", (q, z), c)
        elif isinstance(ev, EpsilonDeltaDpEvent):
            self._add_generic(float(ev.epsilon), float(ev.delta), c, wide)
        elif isinstance(ev, dp_event.ZCDpEvent):
            self.all_pure = False
            self.kinds.add("rdp_only")
            self.zcdp = (self.zcdp[0] + c * float(ev.rho), self.zcdp[1] + c * float(ev.xi))
        else:  # RepeatAndSelectDpEvent, checked by _expand
            self.all_pure = False
            self.kinds.add("rdp_only")
            self._to_rdp(ev, c)

    def _add_generic(self, eps, delta, c, wide=False):
        if math.isinf(eps):
            self.nonprivate = True
            return
        if delta > 0:
            self.all_pure = False
        else:
            self.pure_epsilon += c * eps
        if wide or c * eps > _WIDE_LAPLACE:  # basic composition: (c eps, 1 - (1 - delta)^c)
            self.wide_laplace += c * eps
            self.wide_log1m_delta += c * math.log1p(-delta)
            return
        self.generic_log1m_delta += c * math.log1p(-delta)
        self.kinds.add("pld_only")
        self._to_pld("generic", (eps, delta), c)

    def _to_pld(self, kind, params, count):
        if kind != "gauss":
            self.kinds.add("not_gauss")
        self._leaves.append((kind, params, count))

    def _to_rdp(self, ev, c):
        key = repr(ev)
        if key in self.rdp_groups:
            self.rdp_groups[key][1] += c
        else:
            self.rdp_groups[key] = [ev, c]

    # ------------------------------------------------------------------ evaluation
    def pld(self, strict=False):
        """The composed privacy loss distribution of the leaves composed by PLD.

        Parameters
        ----------
        strict : bool, default=False
            Only the Poisson-sampled and generic leaves.

        Returns
        -------
        pld : dp_accounting.pld.privacy_loss_distribution.PrivacyLossDistribution or None
            ``None`` when there is no such leaf.
        """
        if self._unfolded:
            full, strict_parts = [p for p in (self._pld,) if p], [p for p in (self._pld_strict,) if p]
            for leaves, m in Counter(self._unfolded).items():  # equal events: one self-composition
                full.append(_self_composed(event_pld(leaves), m))
                only = tuple(leaf for leaf in leaves if leaf[0] in ("poisson", "generic"))
                if only:
                    strict_parts.append(_self_composed(event_pld(only), m))
            self._pld, self._pld_strict = _compose_all(full), _compose_all(strict_parts)
        self._unfolded = []
        return self._pld_strict if strict else self._pld

    @property
    def generic_delta(self):
        """Sum-like total of the generic events' deltas: 1 - prod (1 - delta_i)^count."""
        return -math.expm1(self.generic_log1m_delta + self.wide_log1m_delta)

    def _rdp_epsilon(self, delta, with_pld_part):
        acc = RdpAccountant()
        if self.zcdp != (0.0, 0.0):
            acc.compose(dp_event.ZCDpEvent(*self.zcdp))
        for ev, c in self.rdp_groups.values():
            if with_pld_part or not isinstance(ev, dp_event.LaplaceDpEvent):
                acc.compose(ev, c)
        if with_pld_part and self.mu2 > 0:
            acc.compose(dp_event.GaussianDpEvent(1.0 / math.sqrt(self.mu2)))
        return float(acc.get_epsilon(delta))

    def _narrow_epsilon(self, delta):
        """Epsilon at ``delta > 0`` of everything but the wide leaves."""
        if self.mu2 == 0 and not self.kinds:
            return 0.0
        if "rdp_only" not in self.kinds:
            if self.kinds == set() and self.mu2 > 0:  # Gaussians only: exact (Dong, Roth & Su 2019)
                return gaussian_epsilon(math.sqrt(self.mu2), delta)
            return pld_epsilon(self.pld(), delta)
        if "pld_only" not in self.kinds:
            return self._rdp_epsilon(delta, with_pld_part=True)
        slack = delta + math.expm1(self.generic_log1m_delta)
        if slack <= 0:
            return math.inf
        best = math.inf
        for share in _RDP_DELTA_SHARES:
            delta_r = share * slack
            # (a) every RDP-capable leaf through RDP; (b) only the RDP-only leaves.
            for with_pld_part in (True, False):
                generic = (self._rdp_epsilon(delta_r, with_pld_part), delta_r)
                pld = self.pld(strict=with_pld_part)
                if pld is None:
                    best = min(best, pld_epsilon(leaf_pld("generic", generic, 1), delta))
                else:  # composed with the generic event's dominating pair in closed form
                    best = min(best, pld_epsilon(pld, delta, generic))
        return best

    def epsilon(self, delta):
        """Epsilon of the composed events (see :func:`compose_epsilon`).

        Parameters
        ----------
        delta : float
            In [0, 1).

        Returns
        -------
        epsilon : float
            In nats (``inf`` after a non-private event).
        """
        if self.nonprivate:
            return math.inf
        if delta == 0:
            return self.pure_epsilon if self.all_pure else math.inf
        wide = self.wide_laplace
        if self.wide_log1m_delta:  # basic composition with the wide generic leaves' deltas
            delta += math.expm1(self.wide_log1m_delta)
            if delta <= 0:
                return math.inf
        if self.wide_mu2 > 0:  # basic composition with the wide Gaussians at half of delta
            delta = 0.5 * delta
            wide += gaussian_epsilon(math.sqrt(self.wide_mu2), delta)
        eps = wide + self._narrow_epsilon(delta)
        return min(eps, self.pure_epsilon) if self.all_pure else eps


def compose_epsilon(events, delta: float) -> float:
    """Epsilon of the (adaptive) composition of ``events`` at ``delta``.

    Parameters
    ----------
    events : list of dp_accounting.DpEvent
        Events as recorded by fitted estimators (``dp_event_``), possibly nested
        in ``ComposedDpEvent`` / ``SelfComposedDpEvent``: Gaussian, Laplace,
        Poisson-sampled Gaussian, zCDP, repeat-and-select, non-private, no-op and
        dp_sklearn's :class:`~dp_sklearn.EpsilonDeltaDpEvent`.
    delta : float
        Target delta in [0, 1).

    Returns
    -------
    epsilon : float
        Privacy loss in nats under replace-one neighbours; ``inf`` when an event is
        non-private or ``delta`` is below what the events allow (e.g. not above the
        sum of the generic events' deltas, or ``delta = 0`` with a non-pure event).

    Raises
    ------
    ValueError
        If ``delta`` is not in [0, 1).
    UnsupportedCompositionError
        (a ``ValueError``) for an event outside that list, or a
        ``RepeatAndSelectDpEvent`` wrapping a Poisson-sampled event.

    Notes
    -----
    Compositions are unrolled into leaves with multiplicities. (1) ``delta = 0``:
    basic composition of the pure leaves, optimal there. (2) Only Gaussian leaves:
    one Gaussian with ``mu^2 = sum_i count_i / z_i^2`` (Dong, Roth & Su 2019,
    Corollary 3.3), exact by the analytic Gaussian mechanism. (3) No zCDP /
    repeat-and-select leaf: the PLDs of the events are composed in order, each
    Poisson-sampled Gaussian built under ``REPLACE_ONE`` and each generic event
    through its dominating pair (``from_privacy_parameters``); all-pure lists are
    also capped by basic composition. (4) zCDP / repeat-and-select leaves without
    Poisson-sampled or generic ones: the RDP accountant. (5) Both: the RDP part is
    converted to (epsilon_r, delta_r) at half of the delta left by the generic
    events and composed with the PLD of the rest (with and without the Gaussian and
    Laplace leaves in the RDP part; the smaller epsilon is returned). Gaussian leaves
    with ``sqrt(count) / z > 10`` and Laplace leaves with ``count / b > 50`` (epsilon in
    the hundreds) are added by basic composition, the Gaussians at half of ``delta``.
    See ``docs/privacy.md``.

    See Also
    --------
    RunningComposition : the same composition, one event at a time.
    dp_sklearn.PrivacyLedger.total_epsilon : this composition of a ledger's events.

    References
    ----------
    .. [1] J. Dong, A. Roth and W. Su, "Gaussian differential privacy", JRSS B 2022.
    .. [2] N. Papernot and T. Steinke, "Hyperparameter tuning with Renyi differential
       privacy", ICLR 2022 (repeat-and-select).

    Examples
    --------
    >>> from dp_accounting import dp_event
    >>> from dp_sklearn import EpsilonDeltaDpEvent
    >>> round(compose_epsilon([dp_event.GaussianDpEvent(4.0)] * 2, 1e-5), 3)
    1.356
    >>> round(compose_epsilon([EpsilonDeltaDpEvent(1.0, 1e-6)] * 2, 1e-5), 3)
    2.0
    """
    delta = float(delta)
    if not (0.0 <= delta < 1.0):
        raise ValueError(f"delta must be in [0, 1), got {delta!r}.")
    return RunningComposition().add(*events).epsilon(delta)


def epsilon_of_event(event, delta: float) -> float:
    """Epsilon spent by one event at ``delta``: ``compose_epsilon([event], delta)``.

    Parameters
    ----------
    event : dp_accounting.DpEvent
        One event, as :func:`compose_epsilon` accepts them.
    delta : float
        Target delta in [0, 1).

    Returns
    -------
    epsilon : float
        In nats.

    See Also
    --------
    compose_epsilon : the same for a list of events.

    Examples
    --------
    >>> from dp_accounting import dp_event
    >>> round(epsilon_of_event(dp_event.GaussianDpEvent(4.0), 1e-5), 3)
    0.926
    """
    return compose_epsilon([event], delta)
