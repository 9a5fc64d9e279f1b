"""A closed JSON schema for the events dp_sklearn emits and the ledger store's records.

A ledger store is data that may come from elsewhere: each event is a JSON object
``{"type": <name>, <field>: <value>, ...}`` whose type comes from a fixed table and
whose fields are checked for type and range. No pickle, no ``eval``, no lookup of a
class or module by name; dp_sklearn 0.1's lines (``{"__event__":
"dp_accounting.dp_event:GaussianDpEvent", "fields": {...}}``) are read through the
same table by exact name. Anything else raises ``ValueError``; writing goes through
the same checks.

The work a line can demand is bounded (``docs/privacy.md``, P7): at most ``_MAX_LINE``
bytes, ``_MAX_NODES`` event objects nested at most ``_MAX_DEPTH`` deep, and a product of
``self_composed`` counts along any path of at most ``_MAX_COUNT``. The store itself (files,
locks, incremental reading, torn lines, identity) is :mod:`dp_sklearn._store`.
"""

from __future__ import annotations

import json
import math
import numbers
import os
from functools import partial

from dp_accounting import dp_event

from ._accounting import EpsilonDeltaDpEvent

__all__ = ["append_line", "decode_event", "decode_record", "dump_line", "encode_event", "loads"]

#: Bounds on one store line. dp_sklearn writes events nested at most about 8 deep, with at
#: most a few thousand event objects (a search over a large grid) in lines well below 1 MiB,
#: and counts below 2**53 (where floats stop being exact integers).
_MAX_DEPTH = 32
_MAX_COUNT = 2**53
_MAX_NODES = 2**14
_MAX_LINE = 2**22


def _number(value, where, *, low=0.0, high=math.inf, low_open=False, high_open=False, allow_inf=False):
    if type(value) is not float and (isinstance(value, bool) or not isinstance(value, numbers.Real)):
        raise ValueError(f"{where} must be a number, got {value!r}.")
    value = float(value)
    if math.isnan(value) or (math.isinf(value) and not allow_inf):
        raise ValueError(f"{where} must be a finite number, got {value!r}.")
    if value < low or (low_open and value == low) or value > high or (high_open and value == high):
        lo, hi = "(" if low_open else "[", ")" if high_open or high == math.inf else "]"
        raise ValueError(f"{where} must be in {lo}{low:g}, {high:g}{hi}, got {value!r}.")
    return value


def _count(value, where):
    if (type(value) is not int and (isinstance(value, bool) or not isinstance(value, numbers.Integral))) or not (
            0 <= value <= _MAX_COUNT):
        raise ValueError(f"{where} must be an integer in [0, 2**53], got {value!r}.")
    return int(value)


_nonneg = _number
_probability = partial(_number, high=1.0)
_delta = partial(_number, high=1.0, high_open=True)
_epsilon = partial(_number, low_open=True, allow_inf=True)
_shape = partial(_number, allow_inf=True)


#: type name -> (event class, ((field, validator), ...)); "event" / "events" are nested events
_SCHEMA = {
    "gaussian": (dp_event.GaussianDpEvent, (("noise_multiplier", _nonneg),)),
    "laplace": (dp_event.LaplaceDpEvent, (("noise_multiplier", _nonneg),)),
    "poisson_sampled": (dp_event.PoissonSampledDpEvent, (("sampling_probability", _probability), ("event", None))),
    "self_composed": (dp_event.SelfComposedDpEvent, (("event", None), ("count", _count))),
    "composed": (dp_event.ComposedDpEvent, (("events", None),)),
    "zcdp": (dp_event.ZCDpEvent, (("rho", _nonneg), ("xi", _nonneg))),
    "repeat_and_select": (dp_event.RepeatAndSelectDpEvent, (("event", None), ("mean", _nonneg), ("shape", _shape))),
    "epsilon_delta": (EpsilonDeltaDpEvent, (("epsilon", _epsilon), ("delta", _delta))),
    "non_private": (dp_event.NonPrivateDpEvent, ()),
    "no_op": (dp_event.NoOpDpEvent, ()),
}
_TYPE_OF_CLASS = {cls: name for name, (cls, _) in _SCHEMA.items()}
#: the exact class names that dp_sklearn 0.1 wrote (read only)
_LEGACY = {
    "dp_accounting.dp_event:GaussianDpEvent": "gaussian",
    "dp_accounting.dp_event:LaplaceDpEvent": "laplace",
    "dp_accounting.dp_event:PoissonSampledDpEvent": "poisson_sampled",
    "dp_accounting.dp_event:SelfComposedDpEvent": "self_composed",
    "dp_accounting.dp_event:ComposedDpEvent": "composed",
    "dp_accounting.dp_event:ZCDpEvent": "zcdp",
    "dp_accounting.dp_event:RepeatAndSelectDpEvent": "repeat_and_select",
    "dp_sklearn._accounting:EpsilonDeltaDpEvent": "epsilon_delta",
    "dp_accounting.dp_event:NonPrivateDpEvent": "non_private",
    "dp_accounting.dp_event:NoOpDpEvent": "no_op",
}


def encode_event(event):
    """The schema's JSON object (a dict) for ``event``; ``ValueError`` for a type outside the schema."""
    name = _TYPE_OF_CLASS.get(type(event))
    if name is None:
        raise ValueError(f"cannot store a {type(event).__name__} in a ledger: dp_sklearn stores only "
                         f"{', '.join(sorted(_SCHEMA))} events.")
    out = {"type": name}
    for field, check in _SCHEMA[name][1]:
        value = getattr(event, field)
        if field == "event":
            value = encode_event(value)
        elif field == "events":
            value = [encode_event(e) for e in value]
        elif check is _count:
            value = int(value)
        else:
            value = float(value)
        out[field] = value
    return out


def decode_event(obj, where="event", _depth=0, _budget=None, _multiplicity=1):
    """The event for the schema object ``obj``; ``ValueError`` naming the offending part otherwise.

    Refuses more than ``_MAX_NODES`` event objects, nesting deeper than ``_MAX_DEPTH`` and
    a product of ``self_composed`` counts above ``_MAX_COUNT`` along any path.
    """
    budget = [_MAX_NODES] if _budget is None else _budget
    budget[0] -= 1
    if budget[0] < 0:
        raise ValueError(f"{where}: more than {_MAX_NODES} events in one event.")
    if _depth > _MAX_DEPTH:
        raise ValueError(f"{where}: events nested deeper than {_MAX_DEPTH} levels.")
    if not isinstance(obj, dict):
        raise ValueError(f"{where} must be a JSON object, got {type(obj).__name__}.")
    if "__event__" in obj and set(obj) == {"__event__", "fields"}:
        name, fields = _LEGACY.get(obj["__event__"]) if isinstance(obj["__event__"], str) else None, obj["fields"]
        if name is None:
            raise ValueError(f"{where}: unknown event class {obj['__event__']!r}.")
        if not isinstance(fields, dict):
            raise ValueError(f"{where}.fields must be a JSON object.")
    else:
        name, fields = obj.get("type"), {k: v for k, v in obj.items() if k != "type"}
        if not isinstance(name, str) or name not in _SCHEMA:
            raise ValueError(f"{where}: unknown or missing event type {name!r} (expected one of "
                             f"{', '.join(sorted(_SCHEMA))}).")
    cls, spec = _SCHEMA[name]
    expected = [f for f, _ in spec]
    if sorted(fields) != sorted(expected):
        raise ValueError(f"{where}: a {name} event has exactly the fields {expected}, got {sorted(fields)}.")
    kwargs = {}
    if name == "self_composed":
        kwargs["count"] = _count(fields["count"], f"{where}.count")
        _multiplicity *= kwargs["count"]
        if _multiplicity > _MAX_COUNT:
            raise ValueError(f"{where}.count: the nested self_composed counts multiply to more than 2**53.")
    for field, check in spec:
        value, here = fields[field], f"{where}.{field}"
        if field == "event":
            kwargs[field] = decode_event(value, here, _depth + 1, budget, _multiplicity)
        elif field == "events":
            if not isinstance(value, list):
                raise ValueError(f"{here} must be a JSON array.")
            kwargs[field] = [decode_event(v, f"{here}[{i}]", _depth + 1, budget, _multiplicity)
                             for i, v in enumerate(value)]
        elif field not in kwargs:
            kwargs[field] = check(value, here)
    return cls(**kwargs)


def _constant(name):
    if name == "Infinity":
        return math.inf
    raise ValueError(f"{name} is not allowed.")


def loads(text):
    """``json.loads`` accepting ``Infinity``, refusing ``NaN`` and ``-Infinity`` (``ValueError``)."""
    try:
        return json.loads(text, parse_constant=_constant)
    except RecursionError:
        raise ValueError("JSON nested too deeply.") from None


_STR_OR_NONE = (str, type(None))
#: line kind -> {key: check}; a line has exactly these keys
_RECORD_KEYS = {
    "event": ("id", "label", "epsilon", "delta", "event", "time", "pid", "reservation"),
    "reserve": ("id", "label", "epsilon", "delta", "event", "time", "pid"),
    "release": ("id", "time", "pid"),
}


def decode_record(obj):
    """Check one parsed ledger store line and decode its event.

    Parameters
    ----------
    obj : object
        The parsed JSON line.

    Returns
    -------
    record : dict
        The line's fields, with ``"event"`` decoded to a ``DpEvent``.

    Raises
    ------
    ValueError
        If the line is not a ledger record (closed set of keys, types and ranges).
    """
    if not isinstance(obj, dict) or obj.get("kind") not in _RECORD_KEYS:
        raise ValueError("not a PrivacyLedger record (expected an object with kind event, reserve or release).")
    keys = _RECORD_KEYS[obj["kind"]]
    if len(obj) != len(keys) + 1 or not all(k in obj for k in keys):
        raise ValueError(f"a {obj['kind']!r} record has exactly the keys {sorted(keys + ('kind',))}, "
                         f"got {sorted(obj)}.")
    out = dict(obj)
    for key in ("id", "label", "reservation"):
        if key in obj and not isinstance(obj[key], str if key == "id" else _STR_OR_NONE):
            raise ValueError(f"{key} must be a string{'' if key == 'id' else ' or null'}, got {obj[key]!r}.")
    _number(obj["time"], "time", allow_inf=False)
    _count(obj["pid"], "pid")
    for key, check in (("epsilon", _epsilon), ("delta", _delta)):
        if key in obj and (obj[key] is not None or obj["kind"] == "reserve"):
            out[key] = check(obj[key], key)
    if "event" in obj:
        out["event"] = _decode_cached(obj["event"])
    return out


_DECODED = {}  # repr of a parsed event object -> its decoded event (a ledger repeats a few events)


def _decode_cached(obj):
    key = repr(obj)  # exact: repr tells 1 from 1.0 and True, and round-trips floats
    event = _DECODED.get(key)
    if event is None:
        event = decode_event(obj)
        if len(key) <= 4096:
            if len(_DECODED) >= 1024:
                _DECODED.clear()
            _DECODED[key] = event
    return event


#: keys written first, so that a torn line still tells what it was (see dp_sklearn._store)
_FIRST_KEYS = ("kind", "id", "reservation")


def dump_line(entry):
    """One store line (bytes, newline-terminated) for the record ``entry``, checked by the schema.

    The keys ``kind``, ``id`` and ``reservation`` come first, the others sorted.
    """
    ordered = {k: entry[k] for k in _FIRST_KEYS if k in entry}
    ordered.update((k, entry[k]) for k in sorted(entry) if k not in ordered)
    text = json.dumps(ordered)
    if len(text) >= _MAX_LINE:
        raise ValueError(f"a ledger record of {len(text)} bytes is above the store's limit of {_MAX_LINE} bytes.")
    decode_record(loads(text))
    return (text + "\n").encode("utf-8")


def append_line(fh, line):
    """Append ``line`` to the store opened for writing, on a line of its own."""
    fh.seek(0, os.SEEK_END)
    if fh.tell() > 0:
        fh.seek(-1, os.SEEK_END)
        if fh.read(1) != b"\n":
            line = b"\n" + line
    fh.seek(0, os.SEEK_END)
    fh.write(line)
    fh.flush()
