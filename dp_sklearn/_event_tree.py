"""The tree of a ``dp_accounting`` event: leaves, the relation it assumes, what we compose.

Lower layer of :mod:`dp_sklearn.composition`, which re-exports the public names.
"""

from __future__ import annotations

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
