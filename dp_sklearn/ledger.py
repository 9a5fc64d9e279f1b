"""Privacy budget ledger: a shared, append-only store of the events fits released.

:class:`PrivacyLedger` is a *handle* to a JSON-lines file guarded by an ``fcntl``
lock. Every copy of the handle -- made by :func:`sklearn.base.clone`
(``copy.deepcopy``), by ``pickle`` or by a joblib worker process -- records into the
same store, so the budget that a ``GridSearchCV`` spends across folds, candidates
and processes is all seen in one place. Lines follow the closed schema of
:mod:`dp_sklearn._event_json` and are composed by :mod:`dp_sklearn.composition`;
each handle parses only the lines appended since it last looked (by byte offset)
and keeps the running composition, so a check costs the same at 10 or 1,000
records. ``compose_epsilon``, ``flatten_events``, ``event_to_json`` and
``event_from_json`` are re-exported here.
"""

from __future__ import annotations

import math
import numbers
import os
import tempfile
import threading
import time
import uuid
import warnings
from contextlib import contextmanager

from dp_accounting import dp_event

from ._accounting import EpsilonDeltaDpEvent
from ._event_json import LedgerRecord, StoreCache, append_line, dump_line, encode_event, event_from_json, event_to_json
from .composition import compose_epsilon, flatten_events

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

#: relative slack when comparing a projected total with the cap (PLD discretization noise)
_CAP_RTOL = 1e-9


class BudgetExceededError(BaseException):
    """Raised by :meth:`PrivacyLedger.check` when a release would exceed the cap.

    It derives from ``BaseException`` (like ``KeyboardInterrupt``), not from
    ``Exception``: scikit-learn's ``GridSearchCV``, ``RandomizedSearchCV``,
    ``cross_val_score`` and ``cross_validate`` catch ``Exception`` in each fit and
    turn it into a NaN score (``error_score``), after which a search would silently
    pick among the candidates that still fitted. A ``BaseException`` passes through
    them, and through joblib's loky workers (``n_jobs > 1``), so hitting the cap
    stops the whole search, as ``error_score="raise"`` would. Catch it by name
    (``except BudgetExceededError``); ``except Exception`` does not catch it. The
    message says how much was spent and how much was asked.
    """


def _real(value, name, *, low, high, low_open, high_open):
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or math.isnan(value):
        ok = False
    else:
        value = float(value)
        ok = (value > low if low_open else value >= low) and (value < high if high_open else value <= high)
    if not ok:
        raise ValueError(f"{name} must be a number in {'(' if low_open else '['}{low:g}, {high:g}"
                         f"{')' if high_open else ']'}, got {value!r}.")
    return value


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
    (:func:`dp_sklearn.composition.compose_epsilon`), never by adding epsilons.

    The object is a handle to a store file (JSON lines in a closed schema, one
    record per line, appended under an exclusive ``fcntl.flock``).
    ``copy.deepcopy`` (hence :func:`sklearn.base.clone`) returns the handle
    itself, and pickling (joblib / loky worker processes, ``joblib.dump``) yields
    a handle to the same path, so ``GridSearchCV(..., n_jobs=2)``,
    ``cross_val_score`` and ``Pipeline`` all record into one place.

    Parameters
    ----------
    max_epsilon : float or None, default=None
        Cap on the composed total, in nats, at ``delta``. ``None``: no cap
        (:meth:`check` only validates its arguments). NumPy scalars are accepted.
    delta : float, default=1e-5
        The delta, in [0, 1), at which the total is stated and the cap applies
        (0 for a pure-DP ledger, whose total is the basic composition of pure
        events). It equals the estimators' default delta: a fit checked with its
        exact event (as dp_sklearn's estimators do) composes with the others at
        this delta without spending it. A fit checked only as a generic
        (epsilon_i, delta_i)-DP release uses up delta_i of this delta outright, so
        a ledger at 1e-5 holds just one generic fit at delta_i = 1e-5; for such
        fits, choose this delta well above the sum of their deltas (e.g. fits at
        delta=1e-6 under a ledger at 1e-5).
    path : str or os.PathLike or None, default=None
        Store file. An existing store is continued (its records count); a
        read-only one can be read (:meth:`total_epsilon`, :attr:`records`,
        :meth:`summary`) and raises ``PermissionError`` only when written.
        ``None`` creates a fresh temporary file (``tempfile.mkstemp``), which is
        not deleted automatically so that copies in other processes keep working;
        see :meth:`delete`.

    Attributes
    ----------
    path : str
        Absolute path of the store.
    max_epsilon, delta : float
        As passed (converted to ``float``).

    Raises
    ------
    ValueError
        If ``max_epsilon`` is not None or a number > 0, or ``delta`` is not in
        [0, 1).

    Notes
    -----
    * Concurrency: :meth:`check` composes the recorded events *and the
      outstanding reservations* with the new release and, if it fits under
      the cap, appends a reservation, all under one exclusive lock; the next
      :meth:`record` through the same handle in the same thread consumes it.
      Two processes checking at the same time therefore cannot both slip under
      the cap. A fit that fails after :meth:`check` and before its first noise
      draw calls :meth:`cancel_pending`; a process killed in between leaves its
      reservation counted (conservative) until ``cancel_pending(all_handles=True)``
      or :meth:`reset`.
    * Untrusted stores: every line is parsed against a closed JSON schema; a
      line that does not follow it raises ``ValueError`` naming the file and the
      line. Nothing in a store is executed, imported or unpickled.
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
            max_epsilon = _real(max_epsilon, "max_epsilon", low=0.0, high=math.inf, low_open=True, high_open=False)
        delta = _real(delta, "delta", low=0.0, high=1.0, low_open=False, high_open=True)
        if path is None:
            fd, path = tempfile.mkstemp(prefix="dp_sklearn_ledger_", suffix=".jsonl")
            os.close(fd)
        else:
            path = os.fspath(path)
            if not os.path.exists(path):
                try:
                    open(path, "a", encoding="utf-8").close()
                except OSError:  # unwritable location: readable as empty, writes raise
                    pass
        self.path = os.path.abspath(path)
        self.max_epsilon = max_epsilon
        self.delta = delta
        self._pending = {}  # thread id -> reservation ids made through this handle, oldest first
        self._mutex = threading.RLock()
        self._projected = None  # RunningComposition projected by the last check
        self._store = None  # StoreCache: lines parsed so far and their running composition
        self._eps_cache = {}

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
    def _locked(self, write):
        """The store, locked and synced: yields ``(file or None, StoreCache)``."""
        with self._mutex:
            try:
                fh = open(self.path, "a+b" if write else "rb")
            except FileNotFoundError:
                if write:
                    raise
                self._store = StoreCache(self.path)
                yield None, self._store
                return
            except PermissionError as exc:
                raise PermissionError(
                    f"PrivacyLedger store {self.path!r} is not writable here: it can be read (total_epsilon, "
                    "records, summary) but not written (check under a cap, record, cancel_pending, reset)."
                ) from exc
            with fh:
                if fcntl is not None:
                    fcntl.flock(fh.fileno(), fcntl.LOCK_EX if write else fcntl.LOCK_SH)
                try:
                    self._store = store = StoreCache.synced(self._store, fh)
                    proj = self._projected
                    if proj is not None and (proj.digest, proj.n_events) == (store.state.digest, store.state.n_events):
                        store.state = proj  # same events in the same order, already composed
                    if proj is not None and store.state.n_events >= proj.n_events:
                        self._projected = None
                    yield fh, self._store
                finally:
                    if fcntl is not None:
                        fcntl.flock(fh.fileno(), fcntl.LOCK_UN)

    def _epsilon(self, state, delta):
        key = (state.digest, state.n_events, delta)
        if key not in self._eps_cache:
            if len(self._eps_cache) > 256:
                self._eps_cache.clear()
            self._eps_cache[key] = state.epsilon(delta)
        return self._eps_cache[key]

    def _my_pending(self):
        return self._pending.setdefault(threading.get_ident(), [])

    # ---------------------------------------------------------------- recording
    def check(self, epsilon, delta, *, event=None, label=None):
        """Raise if a release of (epsilon, delta) could push the total above the cap.

        Call it *before* the data is used. The release is projected as ``event``
        when the caller knows it before it runs (dp_sklearn's estimators pass
        their exact, data-independent event), otherwise as a generic
        (epsilon, delta)-DP event (the worst case of any mechanism with that
        guarantee). When a cap is set and the release fits, a reservation is
        appended to the store (under the same lock) and consumed by the next
        :meth:`record` through this handle in this thread; if the caller fails
        before its first noise draw, it releases it with :meth:`cancel_pending`.

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
            If ``projected > max_epsilon``; the message gives the amount spent,
            the amount asked and, when the generic events' deltas leave no room
            at the ledger's delta, says so. Nothing is written then.
        ValueError
            If ``epsilon`` is not > 0, ``delta`` is not in [0, 1), or ``event``
            is not one dp_sklearn can store and compose.
        """
        epsilon = _real(epsilon, "epsilon", low=0.0, high=math.inf, low_open=True, high_open=False)
        delta = _real(delta, "delta", low=0.0, high=1.0, low_open=False, high_open=True)
        if event is not None and not isinstance(event, dp_event.DpEvent):
            raise TypeError(f"event must be a dp_accounting DpEvent, got {type(event).__name__}.")
        if self.max_epsilon is None:
            return None
        if event is None:
            event = dp_event.NonPrivateDpEvent() if math.isinf(epsilon) else EpsilonDeltaDpEvent(epsilon, delta)
        encoded = encode_event(event)
        with self._locked(write=True) as (fh, store):
            projected_state = store.state.copy().add(*[r["event"] for r in store.pending.values()], event)
            projected = self._epsilon(projected_state, self.delta)
            self._projected = projected_state  # the store's state once this event is recorded
            if projected > self.max_epsilon * (1.0 + _CAP_RTOL):
                raise BudgetExceededError(self._refusal(epsilon, delta, projected, projected_state, store))
            rid = uuid.uuid4().hex
            append_line(fh, dump_line({"kind": "reserve", "id": rid, "label": None if label is None else str(label),
                                       "epsilon": epsilon, "delta": delta, "event": encoded,
                                       "time": time.time(), "pid": os.getpid()}))
            self._my_pending().append(rid)
        return projected

    def _refusal(self, epsilon, delta, projected, projected_state, store):
        spent = self._epsilon(store.state, self.delta)
        n_res = len(store.pending)
        text = (f"privacy budget exceeded: a release of (epsilon={epsilon:g}, delta={delta:g}) would bring the "
                f"composed total to epsilon={projected:.4g} at delta={self.delta:g}, above "
                f"max_epsilon={self.max_epsilon:g}. Spent so far: epsilon={spent:.4g} over "
                f"{len(store.records)} releases{f', {n_res} reserved' if n_res else ''}. The release was "
                "refused; nothing was recorded.")
        if projected_state.nonprivate:
            return text + " A non-private release (epsilon=inf) never fits under a cap."
        generic = projected_state.generic_delta
        if math.isinf(projected) and self.delta > 0 and generic >= self.delta:
            text += (f" The cause is delta: the generic (epsilon, delta) releases' deltas add up to {generic:.3g} "
                     f"(this release {delta:g}), not below the ledger's delta={self.delta:g}, so no finite "
                     "epsilon exists at that delta. Pass the release's exact event (check(..., event=...)), "
                     f"give the fits a smaller delta (e.g. {self.delta / 10:g}), or use a ledger with a larger "
                     "delta.")
        elif math.isinf(projected) and self.delta == 0:
            text += " This ledger has delta=0 (pure DP), which only pure releases (delta=0) can fit under."
        return text

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

        Raises
        ------
        ValueError
            If ``event`` is not one dp_sklearn can store (see
            :func:`dp_sklearn.ledger.event_to_json`).

        Warns
        -----
        UserWarning
            If the composed total now exceeds ``max_epsilon`` (possible only
            when the event was not checked first, or composes worse than the
            event it was checked as). The release has happened, so it is
            recorded regardless.
        """
        if not isinstance(event, dp_event.DpEvent):
            raise TypeError(f"event must be a dp_accounting DpEvent, got {type(event).__name__}.")
        entry = {
            "kind": "event", "id": uuid.uuid4().hex, "label": None if label is None else str(label),
            "epsilon": None if epsilon is None else float(epsilon),
            "delta": None if delta is None else float(delta),
            "event": encode_event(event), "time": time.time(), "pid": os.getpid(), "reservation": None,
        }
        with self._locked(write=True) as (fh, _):
            mine = self._my_pending()
            if mine:
                entry["reservation"] = mine.pop(0)
            append_line(fh, dump_line(entry))
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
        """Release outstanding reservations made by :meth:`check`.

        Estimators call it when a fit fails after :meth:`check` and before its
        mechanism's first noise draw (nothing was released, so nothing is
        spent); a reservation is kept once noise has been drawn.

        Parameters
        ----------
        all_handles : bool, default=False
            ``False``: only the reservations made through this handle in the
            calling thread. ``True``: every outstanding reservation in the store
            (e.g. left by a killed process).

        Returns
        -------
        n_cancelled : int
        """
        with self._locked(write=True) as (fh, store):
            mine = self._my_pending()
            ids = list(store.pending) if all_handles else [r for r in mine if r in store.pending]
            for rid in ids:
                append_line(fh, dump_line({"kind": "release", "id": rid, "time": time.time(), "pid": os.getpid()}))
            mine[:] = [] if not all_handles else [r for r in mine if r not in set(ids)]
        return len(ids)

    def reset(self):
        """Erase every record and reservation in the store (for every handle)."""
        with self._locked(write=True) as (fh, _):
            fh.truncate(0)
            fh.flush()
            self._pending.clear()
            self._store = None

    def delete(self):
        """Remove the store file. Handles to it become unusable until a record recreates it."""
        with self._mutex:
            try:
                os.remove(self.path)
            except FileNotFoundError:
                pass
            self._store = None

    # ---------------------------------------------------------------- reading
    @property
    def records(self):
        """list of :class:`LedgerRecord`: the recorded releases, oldest first."""
        with self._locked(write=False) as (_, store):
            return list(store.records)

    @property
    def events(self):
        """list of dp_accounting.DpEvent: the recorded events, oldest first."""
        return [r.event for r in self.records]

    @property
    def pending(self):
        """list of (label, epsilon, delta): outstanding reservations in the store."""
        with self._locked(write=False) as (_, store):
            return [(r["label"], r["epsilon"], r["delta"]) for r in store.pending.values()]

    def total_epsilon(self, delta=None):
        """Composed epsilon of the recorded events, in nats.

        Parameters
        ----------
        delta : float, default=None
            Target delta in [0, 1); ``None`` uses the ledger's ``delta``.

        Returns
        -------
        epsilon : float
            :func:`dp_sklearn.composition.compose_epsilon` of :attr:`events`
            (0.0 when empty; ``inf`` if a release was non-private), computed
            from the running composition of the store.
        """
        delta = self.delta if delta is None else _real(delta, "delta", low=0.0, high=1.0, low_open=False,
                                                        high_open=True)
        with self._locked(write=False) as (_, store):
            return self._epsilon(store.state, delta)

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
            return math.inf
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
        cap = "" if self.max_epsilon is None else f" of max_epsilon={self.max_epsilon:g}"
        lines.append(f"  composed total: epsilon={self.total_epsilon():.4g}{cap} at delta={self.delta:g}")
        pend = self.pending
        if pend:
            lines.append(f"  {len(pend)} outstanding reservation(s)")
        return "\n".join(lines)

    def __len__(self):
        return len(self.records)

    def __repr__(self):
        try:
            n = len(self)
        except (OSError, ValueError):
            n = "?"
        cap = "" if self.max_epsilon is None else f", max_epsilon={self.max_epsilon:g}"
        return f"PrivacyLedger(path={self.path!r}, n_events={n}{cap}, delta={self.delta:g})"

