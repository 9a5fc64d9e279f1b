"""Composition of recorded privacy events with the ``dp_accounting`` accountants.

Never adds epsilons: events are composed by the PLD accountant where it supports
them, by the RDP accountant otherwise (SPEC P7).
"""

from __future__ import annotations

from dp_accounting import dp_event
from dp_accounting.pld import PLDAccountant, common
from dp_accounting.pld import privacy_loss_distribution as pld_lib
from dp_accounting.privacy_accountant import UnsupportedEventError
from dp_accounting.rdp import RdpAccountant

from ._accounting import EpsilonDeltaDpEvent

__all__ = ["compose_epsilon", "flatten_events"]

_PLD_DISCRETIZATION = 1e-4


def flatten_events(events):
    """Flatten nested ``ComposedDpEvent`` into a list of leaf events."""
    out = []
    for ev in events:
        if isinstance(ev, dp_event.ComposedDpEvent):
            out.extend(flatten_events(ev.events))
        elif isinstance(ev, dp_event.NoOpDpEvent):
            continue
        else:
            out.append(ev)
    return out


def _generic_pld(ev):
    return pld_lib.from_privacy_parameters(
        common.DifferentialPrivacyParameters(ev.epsilon, ev.delta),
        value_discretization_interval=_PLD_DISCRETIZATION,
    )


def compose_epsilon(events, delta: float) -> float:
    """Epsilon of the composition of ``events`` at ``delta``.

    Parameters
    ----------
    events : list of dp_accounting.DpEvent
        Events as recorded by fitted estimators (``dp_event_``).
    delta : float
        Target delta in [0, 1).

    Returns
    -------
    epsilon : float
        ``np.inf`` when an event is non-private.

    Notes
    -----
    Order of preference: (1) the PLD accountant for every event (generic
    (epsilon, delta) events enter through the PLD of their dominating pair);
    (2) the RDP accountant, when no generic (epsilon, delta) event is present;
    (3) otherwise RDP-only events are converted to (epsilon_i, delta_i) with an
    equal share of half of ``delta`` and composed with the generic ones by PLD.
    """
    leaves = flatten_events(events)
    if any(isinstance(ev, dp_event.NonPrivateDpEvent) for ev in leaves):
        return float("inf")
    if not leaves:
        return 0.0
    generic = [ev for ev in leaves if isinstance(ev, EpsilonDeltaDpEvent)]
    rest = [ev for ev in leaves if not isinstance(ev, EpsilonDeltaDpEvent)]
    generic_delta = sum(ev.delta for ev in generic)
    if generic and delta <= generic_delta and delta > 0:
        # PLD handles this: the composed profile may still meet delta.
        pass
    # (1) PLD for everything.
    try:
        acc = PLDAccountant(value_discretization_interval=_PLD_DISCRETIZATION)
        for ev in rest:
            acc.compose(ev)
        pld = acc._pld if rest else None  # noqa: SLF001 (documented attribute of PLDAccountant)
        for ev in generic:
            g = _generic_pld(ev)
            pld = g if pld is None else pld.compose(g)
        return float(pld.get_epsilon_for_delta(delta))
    except UnsupportedEventError:
        pass
    if not generic:
        acc = RdpAccountant()
        acc.compose(dp_event.ComposedDpEvent(rest))
        return float(acc.get_epsilon(delta))
    if delta <= 0:
        raise ValueError("delta must be > 0 to compose approximate-DP events.")
    share = 0.5 * delta / len(rest)
    converted = []
    for ev in rest:
        acc = RdpAccountant()
        acc.compose(ev)
        converted.append(EpsilonDeltaDpEvent(float(acc.get_epsilon(share)), share))
    pld = None
    for ev in converted + generic:
        g = _generic_pld(ev)
        pld = g if pld is None else pld.compose(g)
    return float(pld.get_epsilon_for_delta(0.5 * delta))
