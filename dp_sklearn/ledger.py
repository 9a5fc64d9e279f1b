"""Privacy budget ledger and composition of recorded events with ``dp_accounting``.

Two layers:

* :func:`compose_epsilon` composes a list of ``dp_accounting`` events into one
  epsilon at a target delta. It never adds epsilons: events are composed by the
  privacy loss distribution (PLD) accountant where it supports them and by the
  Renyi DP (RDP) accountant otherwise (SPEC P7).
* :class:`PrivacyLedger` is a *handle* to a shared, append-only store of events
  (a JSON-lines file guarded by an ``fcntl`` lock). Every copy of the handle --
  made by :func:`sklearn.base.clone` (``copy.deepcopy``), by ``pickle`` or by a
  joblib worker process -- records into the same store, so the budget that a
  ``GridSearchCV`` spends across folds, candidates and processes is all seen in
  one place.
"""

from __future__ import annotations

import base64
import hashlib
import importlib
import json
import math
import os
import pickle
import tempfile
import threading
import time
import uuid
import warnings
from collections import namedtuple
from contextlib import contextmanager

import attr
from dp_accounting import dp_event
from dp_accounting import gaussian_mechanism
from dp_accounting.privacy_accountant import NeighboringRelation
from dp_accounting.pld import PLDAccountant, common
from dp_accounting.pld import privacy_loss_distribution as pld_lib
from dp_accounting.rdp import RdpAccountant

from ._accounting import EpsilonDeltaDpEvent

try:  # POSIX advisory locks; on other platforms appends are still single writes.
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None

__all__ = [
    "BudgetExceededError",
    "LedgerRecord",
    "PrivacyLedger",
    "compose_epsilon",
    "event_from_json",
    "event_to_json",
    "flatten_events",
]

_PLD_DISCRETIZATION = 1e-4
#: relative slack when comparing a projected total with the cap (PLD discretization noise)
_CAP_RTOL = 1e-9


# ---------------------------------------------------------------------------
# Composition
# ---------------------------------------------------------------------------
def flatten_events(events):
    """Flatten nested ``ComposedDpEvent`` into a list of leaf events.

    Parameters
    ----------
    events : iterable of dp_accounting.DpEvent

    Returns
    -------
    leaves : list of dp_accounting.DpEvent
        ``NoOpDpEvent`` are dropped; ``SelfComposedDpEvent`` and every other
        event are kept as they are.
    """
    out = []
    for ev in events:
        if isinstance(ev, dp_event.ComposedDpEvent):
            out.extend(flatten_events(ev.events))
        elif isinstance(ev, dp_event.NoOpDpEvent):
            continue
        else:
            out.append(ev)
    return out


def _expand(ev, count, out):
    """Append (leaf, multiplicity) pairs of ``ev`` to ``out``, unrolling compositions."""
    if isinstance(ev, dp_event.NoOpDpEvent) or count == 0:
        return
    if isinstance(ev, dp_event.ComposedDpEvent):
        for sub in ev.events:
            _expand(sub, count, out)
    elif isinstance(ev, dp_event.SelfComposedDpEvent):
        _expand(ev.event, count * int(ev.count), out)
    else:
        out.append((ev, count))


def _group(pairs):
    """Merge equal events (attrs equality), summing multiplicities; keeps first-seen order."""
    groups = []
    for ev, c in pairs:
        for g in groups:
            if g[0] == ev:
                g[1] += c
                break
        else:
            groups.append([ev, c])
    return [(ev, c) for ev, c in groups]


def _generic_pld(ev, count=1):
    pld = pld_lib.from_privacy_parameters(
        common.DifferentialPrivacyParameters(float(ev.epsilon), float(ev.delta)),
        value_discretization_interval=_PLD_DISCRETIZATION,
    )
    return pld.self_compose(count) if count > 1 else pld


def _replace_one_pld(poisson):
    """PLD of Poisson-sampled events under replace-one neighbours (SPEC P1).

    dp_accounting's amplification by sampling is for add/remove neighbours by default;
    with ``NeighboringRelation.REPLACE_ONE`` the PLD accountant models a replaced record
    that is sampled together with its replacement, its noise multiplier being per unit
    of the per-record clip norm (see :func:`dp_sklearn.solvers._noisy_gd.poisson_noise_multiplier`).
    """
    acc = PLDAccountant(NeighboringRelation.REPLACE_ONE, value_discretization_interval=_PLD_DISCRETIZATION)
    for ev, c in poisson:
        acc.compose(ev, c)
    return acc._pld  # noqa: SLF001 (the accountant's documented PLD state)


def _pld_epsilon(gauss_z, others, generics, delta, extra_pld=None):
    """PLD composition of one Gaussian, PLD-supported events, generic (epsilon, delta) events
    and an already built PLD (``extra_pld``, e.g. replace-one Poisson-sampled events)."""
    if gauss_z is not None and not others and not generics and extra_pld is None:
        # Exact: the analytic Gaussian mechanism (Balle & Wang 2018, Theorem 8).
        return float(gaussian_mechanism.get_epsilon_gaussian(gauss_z, delta))
    pld = extra_pld
    if gauss_z is not None or others:
        acc = PLDAccountant(value_discretization_interval=_PLD_DISCRETIZATION)
        if gauss_z is not None:
            acc.compose(dp_event.GaussianDpEvent(gauss_z))
        for ev, c in others:
            acc.compose(ev, c)
        own = acc._pld  # noqa: SLF001 (the accountant's documented PLD state)
        pld = own if pld is None else pld.compose(own)
    for ev, c in generics:
        g = _generic_pld(ev, c)
        pld = g if pld is None else pld.compose(g)
    return float(pld.get_epsilon_for_delta(delta))


def _rdp_epsilon(gauss_z, others, delta):
    acc = RdpAccountant()
    if gauss_z is not None:
        acc.compose(dp_event.GaussianDpEvent(gauss_z))
    for ev, c in others:
        acc.compose(ev, c)
    return float(acc.get_epsilon(delta))


def compose_epsilon(events, delta: float) -> float:
    """Epsilon of the (adaptive) composition of ``events`` at ``delta``.

    Parameters
    ----------
    events : list of dp_accounting.DpEvent
        Events as recorded by fitted estimators (``dp_event_``), possibly nested
        in ``ComposedDpEvent`` / ``SelfComposedDpEvent``; dp_sklearn's
        :class:`~dp_sklearn.EpsilonDeltaDpEvent` is accepted anywhere a leaf is.
    delta : float
        Target delta in [0, 1).

    Returns
    -------
    epsilon : float
        Privacy loss in nats; ``inf`` when an event is non-private or ``delta``
        is below what the events allow (e.g. below the sum of generic deltas).

    Raises
    ------
    dp_accounting.UnsupportedEventError
        If an event is supported by neither accountant (e.g. a
        ``RepeatAndSelectDpEvent`` wrapping a generic (epsilon, delta) event).

    Notes
    -----
    1. Compositions are unrolled into leaves with multiplicities; all Gaussian
       leaves (noise multipliers ``z_i``, stated relative to the l2 sensitivity)
       are merged exactly into one Gaussian with multiplier
       ``(sum_i 1 / z_i^2)^(-1/2)`` (Dong, Roth & Su 2019, Corollary 3.3). If
       nothing else is left, epsilon is that of the analytic Gaussian mechanism.
    2. Otherwise the PLD accountant composes everything (generic
       (epsilon, delta) events enter through the PLD of their dominating pair,
       ``from_privacy_parameters``; Zhu, Dong & Wang 2022).
    Poisson-sampled events are composed by a PLD accountant built with
    ``NeighboringRelation.REPLACE_ONE`` (never by the add/remove accountants), and
    enter the RDP paths below as a generic event at a quarter of ``delta``.
    3. If some event is RDP-only (zCDP, repeat-and-select) and there is no
       generic event, the RDP accountant composes everything.
    4. If both kinds are present, the RDP-only part (alone, or together with
       the other non-generic events) is converted by the RDP accountant to an
       (epsilon_r, delta_r) guarantee, entered as a generic event, and the PLD
       is evaluated at ``delta``; the smallest epsilon over a few splits
       ``delta_r`` of the delta left by the generic events is returned (each
       is a valid bound).
    """
    delta = float(delta)
    if not (0.0 <= delta < 1.0):
        raise ValueError(f"delta must be in [0, 1), got {delta!r}.")
    pairs = []
    for ev in events:
        _expand(ev, 1, pairs)
    if not pairs:
        return 0.0
    mu2 = 0.0
    generics, others = [], []
    for ev, c in pairs:
        if isinstance(ev, dp_event.NonPrivateDpEvent):
            return float("inf")
        if isinstance(ev, dp_event.GaussianDpEvent):
            if ev.noise_multiplier == 0:
                return float("inf")
            mu2 += c / float(ev.noise_multiplier) ** 2
        elif isinstance(ev, EpsilonDeltaDpEvent):
            if not math.isfinite(ev.epsilon):
                return float("inf")
            generics.append((ev, c))
        else:
            others.append((ev, c))
    generics, others = _group(generics), _group(others)
    poisson = [(ev, c) for ev, c in others if isinstance(ev, dp_event.PoissonSampledDpEvent)]
    others = [(ev, c) for ev, c in others if not isinstance(ev, dp_event.PoissonSampledDpEvent)]
    pois_pld = _replace_one_pld(poisson) if poisson else None
    gauss_z = 1.0 / math.sqrt(mu2) if mu2 > 0 else None
    if gauss_z is None and not others:
        # Only generic (and replace-one Poisson-sampled) events.
        return _pld_epsilon(None, [], generics, delta, pois_pld)
    probe = PLDAccountant(value_discretization_interval=_PLD_DISCRETIZATION)
    pld_ok = [(ev, c) for ev, c in others if probe.supports(ev)]
    rdp_only = [(ev, c) for ev, c in others if not probe.supports(ev)]
    if not rdp_only:
        return _pld_epsilon(gauss_z, others, generics, delta, pois_pld)
    if pois_pld is not None:
        # Never through the (add/remove) RDP accountant: enter as a generic event.
        if delta <= 0:
            return float("inf")
        delta_p = 0.25 * delta
        generics = generics + [(EpsilonDeltaDpEvent(float(pois_pld.get_epsilon_for_delta(delta_p)), delta_p), 1)]
    if not generics:
        return _rdp_epsilon(gauss_z, others, delta)
    if delta <= 0:
        return float("inf")
    generic_delta = 1.0 - math.prod((1.0 - ev.delta) ** c for ev, c in generics)
    slack = delta - generic_delta
    if slack <= 0:
        return float("inf")
    best = float("inf")
    for frac in (0.25, 0.5, 0.75):
        delta_r = frac * slack
        # (a) every non-generic event through RDP;
        eps_a = _rdp_epsilon(gauss_z, others, delta_r)
        best = min(best, _pld_epsilon(None, [], generics + [(EpsilonDeltaDpEvent(eps_a, delta_r), 1)], delta))
        # (b) only the RDP-only events through RDP, the rest in the PLD.
        if gauss_z is not None or pld_ok:
            eps_b = _rdp_epsilon(None, rdp_only, delta_r)
            best = min(best, _pld_epsilon(gauss_z, pld_ok,
                                          generics + [(EpsilonDeltaDpEvent(eps_b, delta_r), 1)], delta))
    return best


# ---------------------------------------------------------------------------
# Event (de)serialization
# ---------------------------------------------------------------------------
_ALLOWED_EVENT_MODULES = ("dp_accounting", "dp_sklearn")


def _encode(obj):
    if isinstance(obj, dp_event.DpEvent) and attr.has(type(obj)):
        cls = type(obj)
        return {
            "__event__": f"{cls.__module__}:{cls.__qualname__}",
            "fields": {f.name: _encode(getattr(obj, f.name)) for f in attr.fields(cls)},
        }
    if obj is None or isinstance(obj, (bool, str)):
        return obj
    if isinstance(obj, int):
        return int(obj)
    if isinstance(obj, float):
        return float(obj)
    if hasattr(obj, "item") and getattr(obj, "shape", None) == ():  # numpy scalar
        return _encode(obj.item())
    if isinstance(obj, list):
        return [_encode(v) for v in obj]
    if isinstance(obj, tuple):
        return {"__tuple__": [_encode(v) for v in obj]}
    return {"__pickle__": base64.b64encode(pickle.dumps(obj)).decode("ascii")}


def _decode(obj):
    if isinstance(obj, list):
        return [_decode(v) for v in obj]
    if not isinstance(obj, dict):
        return obj
    if "__event__" in obj:
        module, qualname = obj["__event__"].split(":")
        if module.split(".")[0] not in _ALLOWED_EVENT_MODULES:
            raise ValueError(f"refusing to load event class {obj['__event__']!r} from a ledger store.")
        cls = importlib.import_module(module)
        for part in qualname.split("."):
            cls = getattr(cls, part)
        if not (isinstance(cls, type) and issubclass(cls, dp_event.DpEvent)):
            raise ValueError(f"{obj['__event__']!r} is not a DpEvent class.")
        return cls(**{k: _decode(v) for k, v in obj["fields"].items()})
    if "__tuple__" in obj:
        return tuple(_decode(v) for v in obj["__tuple__"])
    if "__pickle__" in obj:
        return pickle.loads(base64.b64decode(obj["__pickle__"]))  # noqa: S301 (trusted store)
    raise ValueError(f"cannot decode {obj!r}.")


def event_to_json(event) -> str:
    """Serialize a ``dp_accounting`` event to a JSON string.

    attrs-based events (every ``dp_accounting`` event and
    :class:`~dp_sklearn.EpsilonDeltaDpEvent`) are written field by field, so the
    store stays human-readable; a field JSON cannot hold is pickled (base64).

    Parameters
    ----------
    event : dp_accounting.DpEvent

    Returns
    -------
    text : str
    """
    return json.dumps(_encode(event), sort_keys=True)


def event_from_json(text: str):
    """Inverse of :func:`event_to_json` (``event_from_json(event_to_json(e)) == e``).

    Only event classes defined in ``dp_accounting`` or ``dp_sklearn`` are
    instantiated. Load only ledger stores you trust: a pickled field is unpickled.
    """
    return _decode(json.loads(text))


# ---------------------------------------------------------------------------
# Ledger
# ---------------------------------------------------------------------------
class BudgetExceededError(ValueError):
    """Raised by :meth:`PrivacyLedger.check` when a release would exceed the cap."""


LedgerRecord = namedtuple("LedgerRecord", "label epsilon delta event time pid")
LedgerRecord.__doc__ = """One recorded release: the estimator's label, the (epsilon, delta) it
claimed, its ``dp_accounting`` event, a UNIX timestamp and the process id."""


def _rebuild_ledger(path, max_epsilon, delta):
    if not os.path.exists(path):
        warnings.warn(
            f"PrivacyLedger store {path!r} does not exist here; starting an empty store at that path.",
            UserWarning,
            stacklevel=2,
        )
    return PrivacyLedger(max_epsilon=max_epsilon, delta=delta, path=path)


class PrivacyLedger:
    """A privacy budget ledger shared by every copy of itself.

    Estimators take it as ``ledger=``. Before using the data, ``fit`` calls
    :meth:`check`, which raises :class:`BudgetExceededError` if the fit could
    push the composed total above ``max_epsilon``; after the mechanism, ``fit``
    calls :meth:`record` with the ``dp_accounting`` event it released. The
    ledger composes the recorded events with the accountants
    (:func:`compose_epsilon`), never by adding epsilons.

    The object is a handle to a store file (JSON lines, one record per line,
    appended under an exclusive ``fcntl.flock``). ``copy.deepcopy`` (hence
    :func:`sklearn.base.clone`) returns the handle itself, and pickling
    (joblib / loky worker processes, ``joblib.dump``) yields a handle to the
    same path, so ``GridSearchCV(..., n_jobs=2)``, ``cross_val_score`` and
    ``Pipeline`` all record into one place.

    Parameters
    ----------
    max_epsilon : float or None, default=None
        Cap on the composed total, in nats, at ``delta``. ``None``: no cap
        (:meth:`check` only validates its arguments).
    delta : float, default=1e-5
        The delta, in [0, 1), at which the total is stated and the cap applies.
        A fit that only promises (epsilon_i, delta_i) is checked as a generic
        (epsilon_i, delta_i)-DP release, which uses up delta_i of this delta
        outright: choose it well above the sum of the deltas of the fits you
        plan to check (e.g. fits at delta=1e-6 under a ledger at 1e-5).
    path : str or os.PathLike or None, default=None
        Store file. An existing store is continued (its records count). ``None``
        creates a fresh temporary file (``tempfile.mkstemp``), which is not
        deleted automatically so that copies in other processes keep working;
        see :meth:`delete`.

    Attributes
    ----------
    path : str
        Absolute path of the store.
    max_epsilon, delta : float
        As passed.

    Raises
    ------
    ValueError
        If ``max_epsilon`` is not None or a positive number, or ``delta`` is
        not in [0, 1).

    Notes
    -----
    * Concurrency: :meth:`check` composes the recorded events *and the
      outstanding reservations* with the new release and, if it fits under
      the cap, appends a reservation, all under one exclusive lock; the next
      :meth:`record` through the same handle consumes it. Two processes
      checking at the same time therefore cannot both slip under the cap. A
      fit that raises between check and record leaves its reservation
      pending (conservative); :meth:`cancel_pending` or :meth:`reset` clears it.
    * Locks are ``fcntl.flock`` advisory locks: the store should be on a local
      file system (not NFS). Without ``fcntl`` (Windows) records are single
      ``O_APPEND`` writes and the reservation is not atomic.
    * The store holds events, labels and timestamps only -- no data.

    Examples
    --------
    >>> from dp_sklearn.ledger import PrivacyLedger
    >>> from dp_accounting import dp_event
    >>> ledger = PrivacyLedger(max_epsilon=3.0, delta=1e-5)
    >>> ledger.record(dp_event.GaussianDpEvent(4.0), 1.2, 1e-5, label="manual")
    >>> len(ledger)
    1
    >>> round(ledger.total_epsilon(), 3)  # analytic Gaussian, z = 4, delta = 1e-5
    0.926
    >>> ledger.delete()
    """

    def __init__(self, max_epsilon=None, delta=1e-5, path=None):
        if max_epsilon is not None:
            ok = isinstance(max_epsilon, (int, float)) and not isinstance(max_epsilon, bool)
            if not ok or not (max_epsilon > 0) or math.isnan(max_epsilon):
                raise ValueError(f"max_epsilon must be None or a number > 0, got {max_epsilon!r}.")
            max_epsilon = float(max_epsilon)
        if isinstance(delta, bool) or not isinstance(delta, (int, float)) or not (0 <= delta < 1):
            raise ValueError(f"delta must be a probability in [0, 1), got {delta!r}.")
        if path is None:
            fd, path = tempfile.mkstemp(prefix="dp_sklearn_ledger_", suffix=".jsonl")
            os.close(fd)
        else:
            path = os.fspath(path)
            with open(path, "a", encoding="utf-8"):
                pass
        self.path = os.path.abspath(path)
        self.max_epsilon = max_epsilon
        self.delta = float(delta)
        self._pending = []  # reservation ids made through this handle, oldest first
        self._mutex = threading.Lock()
        self._cache = {}

    # ---------------------------------------------------------------- copying
    def __deepcopy__(self, memo):
        memo[id(self)] = self
        return self

    def __copy__(self):
        return self

    def __reduce__(self):
        return (_rebuild_ledger, (self.path, self.max_epsilon, self.delta))

    def __eq__(self, other):
        if not isinstance(other, PrivacyLedger):
            return NotImplemented
        return (self.path, self.max_epsilon, self.delta) == (other.path, other.max_epsilon, other.delta)

    def __hash__(self):
        return hash(self.path)

    # ---------------------------------------------------------------- store I/O
    @contextmanager
    def _locked(self, exclusive):
        with open(self.path, "a+", encoding="utf-8") as fh:
            if fcntl is not None:
                fcntl.flock(fh.fileno(), fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
            try:
                yield fh
            finally:
                if fcntl is not None:
                    fcntl.flock(fh.fileno(), fcntl.LOCK_UN)

    @staticmethod
    def _read(fh):
        fh.seek(0)
        raw = fh.read()
        lines = []
        for i, line in enumerate(raw.splitlines()):
            if not line.strip():
                continue
            try:
                lines.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise ValueError(f"corrupt PrivacyLedger store {fh.name!r}, line {i + 1}: {exc}") from None
        return raw, lines

    @staticmethod
    def _append(fh, entry):
        fh.seek(0, os.SEEK_END)
        fh.write(json.dumps(entry, sort_keys=True) + "\n")
        fh.flush()

    @staticmethod
    def _state(lines):
        """Recorded event entries and outstanding reservation entries."""
        events = [e for e in lines if e.get("kind") == "event"]
        closed = {e.get("reservation") for e in events} | {e.get("id") for e in lines if e.get("kind") == "release"}
        pending = [e for e in lines if e.get("kind") == "reserve" and e["id"] not in closed]
        return events, pending

    def _snapshot(self):
        with self._locked(exclusive=False) as fh:
            return self._read(fh)

    # ---------------------------------------------------------------- recording
    def check(self, epsilon, delta, *, event=None, label=None):
        """Raise if a release of (epsilon, delta) could push the total above the cap.

        Call it *before* the data is used. The release is projected as a
        generic (epsilon, delta)-DP event (the worst case of any mechanism with
        that guarantee), or as ``event`` when the caller already knows it.
        When a cap is set and the release fits, a reservation is appended to
        the store (under the same lock) and consumed by the next
        :meth:`record` through this handle.

        Parameters
        ----------
        epsilon : float
            Privacy loss of the release in nats, > 0 (``inf`` for a
            non-private fit).
        delta : float
            In [0, 1).
        event : dp_accounting.DpEvent, default=None
            The release's event, if known before it runs.
        label : str, default=None
            Stored with the reservation.

        Returns
        -------
        projected : float or None
            Composed total in nats at ``self.delta`` including this release
            (and other outstanding reservations); ``None`` without a cap.

        Raises
        ------
        BudgetExceededError
            If ``projected > max_epsilon``. Nothing is written then.
        ValueError
            If ``epsilon`` is not > 0 or ``delta`` is not in [0, 1).
        """
        epsilon, delta = float(epsilon), float(delta)
        if not (epsilon > 0):
            raise ValueError(f"epsilon must be > 0, got {epsilon!r}.")
        if not (0 <= delta < 1):
            raise ValueError(f"delta must be in [0, 1), got {delta!r}.")
        if event is not None and not isinstance(event, dp_event.DpEvent):
            raise TypeError(f"event must be a dp_accounting DpEvent, got {type(event).__name__}.")
        if self.max_epsilon is None:
            return None
        if event is None:
            event = dp_event.NonPrivateDpEvent() if math.isinf(epsilon) else EpsilonDeltaDpEvent(epsilon, delta)
        with self._mutex, self._locked(exclusive=True) as fh:
            _, lines = self._read(fh)
            recorded, pending = self._state(lines)
            evs = [_decode(e["event"]) for e in recorded] + [_decode(e["event"]) for e in pending]
            projected = compose_epsilon(evs + [event], self.delta)
            if projected > self.max_epsilon * (1.0 + _CAP_RTOL):
                spent = compose_epsilon([_decode(e["event"]) for e in recorded], self.delta)
                raise BudgetExceededError(
                    f"privacy budget exceeded: a release of (epsilon={epsilon:g}, delta={delta:g}) would bring "
                    f"the composed total to epsilon={projected:.4g} at delta={self.delta:g}, above "
                    f"max_epsilon={self.max_epsilon:g} (spent so far: {spent:.4g} over {len(recorded)} releases"
                    f"{f', {len(pending)} reserved' if pending else ''}). The release was refused; nothing "
                    "was recorded."
                )
            rid = uuid.uuid4().hex
            self._append(fh, {"kind": "reserve", "id": rid, "label": label, "epsilon": epsilon, "delta": delta,
                              "event": _encode(event), "time": time.time(), "pid": os.getpid()})
            self._pending.append(rid)
        return projected

    def record(self, event, epsilon=None, delta=None, *, label=None):
        """Append a release to the store.

        Parameters
        ----------
        event : dp_accounting.DpEvent
            What was released (``dp_event_`` of the fitted estimator).
        epsilon, delta : float, default=None
            The guarantee the releasing estimator states (``epsilon_``,
            ``delta_``); kept for display, never added up.
        label : str, default=None
            E.g. the estimator's class name.

        Returns
        -------
        None

        Warns
        -----
        UserWarning
            If the composed total now exceeds ``max_epsilon`` (possible only
            when the event was not checked first, or composes worse than the
            generic event it was checked as). The release has happened, so
            it is recorded regardless.
        """
        if not isinstance(event, dp_event.DpEvent):
            raise TypeError(f"event must be a dp_accounting DpEvent, got {type(event).__name__}.")
        entry = {
            "kind": "event", "id": uuid.uuid4().hex, "label": None if label is None else str(label),
            "epsilon": None if epsilon is None else float(epsilon),
            "delta": None if delta is None else float(delta),
            "event": _encode(event), "time": time.time(), "pid": os.getpid(), "reservation": None,
        }
        with self._mutex, self._locked(exclusive=True) as fh:
            if self._pending:
                entry["reservation"] = self._pending.pop(0)
            self._append(fh, entry)
        if self.max_epsilon is not None:
            total = self.total_epsilon()
            if total > self.max_epsilon * (1.0 + _CAP_RTOL):
                warnings.warn(
                    f"PrivacyLedger total epsilon={total:.4g} now exceeds max_epsilon={self.max_epsilon:g} "
                    f"at delta={self.delta:g}.",
                    UserWarning,
                    stacklevel=2,
                )

    def cancel_pending(self, *, all_handles=False):
        """Release outstanding reservations.

        Parameters
        ----------
        all_handles : bool, default=False
            ``False``: only the reservations made through this handle (e.g.
            after a fit failed between check and record). ``True``: every
            outstanding reservation in the store (e.g. left by a killed
            process).

        Returns
        -------
        n_cancelled : int
        """
        with self._mutex, self._locked(exclusive=True) as fh:
            _, lines = self._read(fh)
            _, pending = self._state(lines)
            ids = [e["id"] for e in pending] if all_handles else [
                e["id"] for e in pending if e["id"] in set(self._pending)]
            for rid in ids:
                self._append(fh, {"kind": "release", "id": rid, "time": time.time(), "pid": os.getpid()})
            self._pending = [r for r in self._pending if r not in set(ids)]
        return len(ids)

    def reset(self):
        """Erase every record and reservation in the store (for every handle)."""
        with self._mutex, self._locked(exclusive=True) as fh:
            fh.seek(0)
            fh.truncate(0)
            fh.flush()
            self._pending = []
        self._cache.clear()

    def delete(self):
        """Remove the store file. Handles to it become unusable until a record recreates it."""
        try:
            os.remove(self.path)
        except FileNotFoundError:
            pass
        self._cache.clear()

    # ---------------------------------------------------------------- reading
    @property
    def records(self):
        """list of :class:`LedgerRecord`: the recorded releases, oldest first."""
        _, lines = self._snapshot()
        recorded, _ = self._state(lines)
        return [LedgerRecord(e.get("label"), e.get("epsilon"), e.get("delta"), _decode(e["event"]),
                             e.get("time"), e.get("pid")) for e in recorded]

    @property
    def events(self):
        """list of dp_accounting.DpEvent: the recorded events, oldest first."""
        return [r.event for r in self.records]

    @property
    def pending(self):
        """list of (label, epsilon, delta): outstanding reservations in the store."""
        _, lines = self._snapshot()
        _, pending = self._state(lines)
        return [(e.get("label"), e.get("epsilon"), e.get("delta")) for e in pending]

    def total_epsilon(self, delta=None):
        """Composed epsilon of the recorded events, in nats.

        Parameters
        ----------
        delta : float, default=None
            Target delta in [0, 1); ``None`` uses the ledger's ``delta``.

        Returns
        -------
        epsilon : float
            :func:`compose_epsilon` of :attr:`events` (0.0 when empty;
            ``inf`` if a release was non-private).
        """
        delta = self.delta if delta is None else float(delta)
        raw, lines = self._snapshot()
        key = (hashlib.sha1(raw.encode("utf-8")).hexdigest(), delta)
        if key not in self._cache:
            recorded, _ = self._state(lines)
            self._cache.clear()
            self._cache[key] = compose_epsilon([_decode(e["event"]) for e in recorded], delta)
        return self._cache[key]

    def spent(self):
        """The composed budget spent so far.

        Returns
        -------
        (epsilon, delta) : tuple of float
            ``(total_epsilon(), self.delta)``.
        """
        return self.total_epsilon(), self.delta

    def remaining(self):
        """``max_epsilon - total_epsilon()`` (``inf`` without a cap), in nats."""
        if self.max_epsilon is None:
            return float("inf")
        return self.max_epsilon - self.total_epsilon()

    def summary(self):
        """A multi-line text report: releases per label and the composed total.

        Returns
        -------
        text : str
        """
        recs = self.records
        by_label = {}
        for r in recs:
            by_label.setdefault(r.label, []).append(r)
        lines = [f"PrivacyLedger at {self.path}", f"  {len(recs)} releases"]
        for lab, rs in by_label.items():
            claimed = sorted({(r.epsilon, r.delta) for r in rs}, key=str)
            shown = ", ".join(f"({e:g}, {d:g})" if e is not None else "(?, ?)" for e, d in claimed[:4])
            more = ", ..." if len(claimed) > 4 else ""
            lines.append(f"    {lab}: {len(rs)} x (epsilon, delta) in {{{shown}{more}}}")
        total = self.total_epsilon()
        cap = "" if self.max_epsilon is None else f" of max_epsilon={self.max_epsilon:g}"
        lines.append(f"  composed total: epsilon={total:.4g}{cap} at delta={self.delta:g}")
        pend = self.pending
        if pend:
            lines.append(f"  {len(pend)} outstanding reservation(s)")
        return "\n".join(lines)

    def __len__(self):
        _, lines = self._snapshot()
        return sum(1 for e in lines if e.get("kind") == "event")

    def __repr__(self):
        try:
            n = len(self)
        except (OSError, ValueError):
            n = "?"
        cap = "" if self.max_epsilon is None else f", max_epsilon={self.max_epsilon:g}"
        return f"PrivacyLedger(path={self.path!r}, n_events={n}{cap}, delta={self.delta:g})"

