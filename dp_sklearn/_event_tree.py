"""The tree of a ``dp_accounting`` event: leaves, the relation it assumes, what we compose.

Lower layer of :mod:`dp_sklearn.composition`, which re-exports the public names.
"""

from __future__ import annotations

import math

from dp_accounting import dp_event
from dp_accounting.privacy_accountant import NeighboringRelation, UnsupportedEventError
from dp_accounting.rdp import RdpAccountant

from ._accounting import EpsilonDeltaDpEvent

__all__ = ["UnsupportedCompositionError", "contains_poisson_sampling", "flatten_events", "neighboring_relation"]


class UnsupportedCompositionError(UnsupportedEventError, ValueError):
    """An event that dp_sklearn cannot compose correctly (also a ``ValueError``).

    See Also
    --------
    compose_epsilon : raises it for an event outside the list it composes.

    Examples
    --------
    >>> from dp_accounting import dp_event
    >>> from dp_sklearn.composition import compose_epsilon
    >>> try:
    ...     compose_epsilon([dp_event.UnsupportedDpEvent()], 1e-5)
    ... except UnsupportedCompositionError:
    ...     print("refused")
    refused
    """


#: Bounds on the PLD work of one event (a ledger line may come from anyone, see docs/privacy.md,
#: P7). A Laplace, Poisson-sampled or generic leaf repeated more than _PLD_MAX_COUNT times (no
#: default plan takes more than a few thousand steps), every such leaf of an event with more
#: than _PLD_MAX_LEAVES distinct ones or wider than _PLD_MAX_WIDTH nats (count / b for Laplace,
#: count * epsilon for generic events, 10 mu for Poisson-sampled ones), and events arriving once
#: the PLD spans _PLD_MAX_TOTAL_WIDTH nats are composed by the closed forms of wide leaves in
#: dp_sklearn.composition: never smaller, in constant time.
_PLD_MAX_COUNT = 2**16
_PLD_MAX_LEAVES = 8
_PLD_MAX_WIDTH = 100.0
_PLD_MAX_TOTAL_WIDTH = 2000.0


def flatten_events(events):
    """Flatten nested ``ComposedDpEvent`` into a list of leaf events (``NoOpDpEvent`` dropped).

    Parameters
    ----------
    events : iterable of dp_accounting.DpEvent
        Events, possibly nested in ``ComposedDpEvent``.

    Returns
    -------
    leaves : list of dp_accounting.DpEvent
        The non-composed events, in order (``SelfComposedDpEvent`` kept whole).

    See Also
    --------
    compose_epsilon : the composition of such a list.

    Examples
    --------
    >>> from dp_accounting import dp_event
    >>> inner = dp_event.ComposedDpEvent([dp_event.GaussianDpEvent(4.0), dp_event.LaplaceDpEvent(2.0)])
    >>> flatten_events([inner, dp_event.NoOpDpEvent()])
    [GaussianDpEvent(noise_multiplier=4.0), LaplaceDpEvent(noise_multiplier=2.0)]
    """
    out = []
    for ev in events:
        if isinstance(ev, dp_event.ComposedDpEvent):
            out.extend(flatten_events(ev.events))
        elif not isinstance(ev, dp_event.NoOpDpEvent):
            out.append(ev)
    return out


def contains_poisson_sampling(event) -> bool:
    """Whether ``event`` contains a ``PoissonSampledDpEvent`` at any depth.

    Parameters
    ----------
    event : dp_accounting.DpEvent
        E.g. a fitted estimator's ``dp_event_``.

    Returns
    -------
    bool
        True for a ``PoissonSampledDpEvent`` at the top or inside a composed,
        self-composed or repeat-and-select event.

    See Also
    --------
    neighboring_relation : the relation such an event must be read under.

    Examples
    --------
    >>> from dp_accounting import dp_event
    >>> sampled = dp_event.PoissonSampledDpEvent(0.01, dp_event.GaussianDpEvent(1.0))
    >>> contains_poisson_sampling(dp_event.SelfComposedDpEvent(sampled, 10))
    True
    """
    if isinstance(event, dp_event.PoissonSampledDpEvent):
        return True
    if isinstance(event, dp_event.ComposedDpEvent):
        return any(contains_poisson_sampling(e) for e in event.events)
    if isinstance(event, (dp_event.SelfComposedDpEvent, dp_event.RepeatAndSelectDpEvent)):
        return contains_poisson_sampling(event.event)
    return False


def neighboring_relation(event):
    """The neighbouring relation under which ``event`` must be read by an accountant.

    Parameters
    ----------
    event : dp_accounting.DpEvent
        E.g. a fitted estimator's ``dp_event_``.

    Returns
    -------
    relation : dp_accounting.NeighboringRelation or str
        ``NeighboringRelation.REPLACE_ONE`` if the event contains a Poisson-sampled
        event (noise per unit of the clip norm: only ``REPLACE_ONE`` accountants read
        it correctly); otherwise ``"any"``: multipliers are relative to the
        replace-one sensitivity, and the default accountants read them correctly.

    See Also
    --------
    compose_epsilon : composes any mix of both kinds correctly.

    Examples
    --------
    >>> from dp_accounting import dp_event
    >>> neighboring_relation(dp_event.GaussianDpEvent(4.0))
    'any'
    >>> neighboring_relation(dp_event.PoissonSampledDpEvent(0.01, dp_event.GaussianDpEvent(1.0)))
    <NeighboringRelation.REPLACE_ONE: 2>
    """
    return NeighboringRelation.REPLACE_ONE if contains_poisson_sampling(event) else "any"


def _expand(ev, count, out):
    """Append (leaf, multiplicity) pairs of ``ev`` to ``out``, unrolling compositions."""
    if isinstance(ev, dp_event.NoOpDpEvent) or count == 0:
        return
    if isinstance(ev, dp_event.ComposedDpEvent):
        for sub in ev.events:
            _expand(sub, count, out)
    elif isinstance(ev, dp_event.SelfComposedDpEvent):
        _expand(ev.event, count * int(ev.count), out)
    elif isinstance(ev, (dp_event.GaussianDpEvent, dp_event.LaplaceDpEvent, dp_event.NonPrivateDpEvent,
                         dp_event.ZCDpEvent, EpsilonDeltaDpEvent)):
        out.append((ev, count))
    elif isinstance(ev, dp_event.PoissonSampledDpEvent):
        if not isinstance(ev.event, dp_event.GaussianDpEvent):
            raise UnsupportedCompositionError(
                f"{ev!r}: only Poisson-sampled Gaussian events can be composed under replace-one neighbours.")
        out.append((ev, count))
    elif isinstance(ev, dp_event.RepeatAndSelectDpEvent):
        if contains_poisson_sampling(ev.event):
            raise UnsupportedCompositionError(
                "a RepeatAndSelectDpEvent wrapping a Poisson-sampled event cannot be composed: its RDP curve "
                "would be the add/remove one, while the sampled event is valid only under replace-one "
                "neighbours. Use full batches (batch_size=None) inside repeat-and-select.")
        if not RdpAccountant().supports(ev):
            raise UnsupportedCompositionError(
                f"the RDP accountant does not support the event inside repeat-and-select: {ev.event!r}.")
        out.append((ev, count))
    else:
        raise UnsupportedCompositionError(f"dp_sklearn does not compose {type(ev).__name__} events: {ev!r}.")


def _width(leaf, count):
    """The span in nats of the PLD of ``count`` compositions of ``leaf`` (see ``_PLD_MAX_WIDTH``)."""
    if isinstance(leaf, dp_event.LaplaceDpEvent):
        return count / leaf.noise_multiplier if leaf.noise_multiplier else math.inf
    if isinstance(leaf, EpsilonDeltaDpEvent):
        return count * leaf.epsilon
    z = leaf.event.noise_multiplier  # PoissonSampledDpEvent
    return 20.0 * math.sqrt(count) / z if z else math.inf  # 10 mu: its PLD costs more per nat


def _pld_width(pairs):
    """The span of one event's Laplace, Poisson-sampled and generic leaves (``inf``: too many or repeated)."""
    pld = [(leaf, count) for leaf, count in pairs
           if isinstance(leaf, (dp_event.LaplaceDpEvent, EpsilonDeltaDpEvent, dp_event.PoissonSampledDpEvent))]
    if len(pld) > _PLD_MAX_LEAVES or any(count > _PLD_MAX_COUNT for _, count in pld):
        return math.inf
    return sum(_width(leaf, count) for leaf, count in pld)


def _self_composed(pld, m):
    return pld.self_compose(m) if m > 1 else pld


def _compose_all(plds):
    """The composition of ``plds`` by pairs (a balanced tree: linear in their total support)."""
    if not plds:
        return None
    while len(plds) > 1:
        plds = [plds[i].compose(plds[i + 1]) if i + 1 < len(plds) else plds[i] for i in range(0, len(plds), 2)]
    return plds[0]


def _merged_leaves(event):
    """(leaf, multiplicity) pairs of ``event``, equal leaves merged into one with the summed count."""
    pairs, merged = [], {}
    _expand(event, 1, pairs)
    for leaf, count in pairs:
        merged.setdefault(repr(leaf), [leaf, 0])[1] += count
    return list(merged.values())


def _one_gaussian(leaves):
    """PLD leaves ((kind, params, count), ...) with the Gaussians composed into one, exactly
    (mu^2 = sum count / z^2, Dong, Roth & Su 2019)."""
    gauss = [leaf for leaf in leaves if leaf[0] == "gauss"]
    if len(gauss) < 2:
        return tuple(leaves)
    mu2 = sum(count / z**2 for _, z, count in gauss)
    return tuple(leaf for leaf in leaves if leaf[0] != "gauss") + (("gauss", mu2**-0.5, 1),)


def _gaussian_mu(pairs):
    """mu = sqrt(sum count / z^2) of the Gaussian leaves among (leaf, count) ``pairs`` (z = 0 left out)."""
    return math.sqrt(sum(count / leaf.noise_multiplier**2 for leaf, count in pairs
                         if isinstance(leaf, dp_event.GaussianDpEvent) and leaf.noise_multiplier))
