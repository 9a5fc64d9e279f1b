"""The public face of the ledger's store format: records and the event codec.

The closed schema itself lives in :mod:`dp_sklearn._event_json`; see ``docs/privacy.md`` (P7).
"""

from __future__ import annotations

import json
from collections import namedtuple

from ._event_json import decode_event, encode_event, loads

__all__ = ["LedgerRecord", "event_from_json", "event_to_json"]

LedgerRecord = namedtuple("LedgerRecord", "label epsilon delta event time pid")
LedgerRecord.__doc__ = """One release recorded in a :class:`~dp_sklearn.PrivacyLedger` store.

Parameters
----------
label : str or None
    Who released it (e.g. the estimator's class name).
epsilon : float or None
    The epsilon the release states, in nats (shown, never added up).
delta : float or None
    The delta it states.
event : dp_accounting.DpEvent
    What was released; the ledger composes these.
time : float
    UNIX timestamp of the record.
pid : int
    Process id of the writer.

See Also
--------
dp_sklearn.PrivacyLedger.records : the list of these records.

Examples
--------
>>> from dp_accounting import dp_event
>>> from dp_sklearn.ledger import LedgerRecord
>>> LedgerRecord("manual", 1.0, 1e-5, dp_event.GaussianDpEvent(4.0), 0.0, 1).epsilon
1.0
"""


def event_to_json(event) -> str:
    """Serialize a dp_sklearn event to a JSON string in the closed schema.

    Parameters
    ----------
    event : dp_accounting.DpEvent
        Gaussian, Laplace, Poisson-sampled, self-composed, composed, zCDP,
        repeat-and-select, non-private or no-op event, or
        :class:`~dp_sklearn.EpsilonDeltaDpEvent`, nested in any way.

    Returns
    -------
    text : str
        E.g. ``{"noise_multiplier": 2.5, "type": "gaussian"}``.

    Raises
    ------
    ValueError
        If the event is of another type or has a field out of range (e.g. a NaN
        noise multiplier).

    See Also
    --------
    event_from_json : the inverse.

    Examples
    --------
    >>> from dp_accounting import dp_event
    >>> event_to_json(dp_event.GaussianDpEvent(2.5))
    '{"noise_multiplier": 2.5, "type": "gaussian"}'
    """
    obj = encode_event(event)
    decode_event(obj)  # the schema's checks apply to what is written, too
    return json.dumps(obj, sort_keys=True)


def event_from_json(text: str):
    """Parse an event written by :func:`event_to_json` (``event_from_json(event_to_json(e)) == e``).

    Parameters
    ----------
    text : str
        A JSON text in the closed schema.

    Returns
    -------
    event : dp_accounting.DpEvent
        The event it describes.

    Raises
    ------
    ValueError
        If ``text`` is not JSON or does not follow the schema. Nothing in the text
        is ever executed, imported or unpickled.

    See Also
    --------
    event_to_json : the inverse.

    Examples
    --------
    >>> from dp_accounting import dp_event
    >>> event_from_json('{"noise_multiplier": 2.5, "type": "gaussian"}') == dp_event.GaussianDpEvent(2.5)
    True
    """
    return decode_event(loads(text))
