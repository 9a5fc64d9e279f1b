"""Privacy budget ledger: a shared, append-only store of the events fits released.

Layers: :mod:`dp_sklearn._accounting` (calibration) <- :mod:`dp_sklearn.composition`
<- :mod:`dp_sklearn._event_json` (closed-schema store format) <- :mod:`dp_sklearn._store`
(the store file) <- this module.
``compose_epsilon``, ``flatten_events``, ``event_to_json`` and ``event_from_json``
are re-exported here.
"""

from __future__ import annotations

import math
import os
import threading
import time
import uuid
import warnings
from contextlib import contextmanager, suppress

from dp_accounting import dp_event

from ._accounting import EpsilonDeltaDpEvent
from ._event_json import _delta, _epsilon, append_line, dump_line, encode_event
from ._store import forget_temporary_store, locked_store, pinned_cache, store_path, temporary_store
from ._records import LedgerRecord, event_from_json, event_to_json
from ._ledger_reports import _LedgerReports
from ._ledger_reservations import _Reservations
from .composition import compose_epsilon, flatten_events

__all__ = ["BudgetExceededError", "LedgerRecord", "PrivacyLedger", "compose_epsilon", "event_from_json",
           "event_to_json", "flatten_events"]

#: relative slack when comparing a projected total with the cap (PLD discretization noise)
_CAP_RTOL = 1e-9


class BudgetExceededError(BaseException):
    """Raised by :meth:`PrivacyLedger.check` when a release would exceed the cap.

    It derives from ``BaseException`` (like ``KeyboardInterrupt``), not ``Exception``:
    scikit-learn's searches and ``cross_val_score`` turn an ``Exception`` raised in a
    fit into a NaN score (``error_score``) and go on; a ``BaseException`` passes
    through them and through joblib's loky workers (``n_jobs > 1``), so hitting the
    cap stops the whole search, as ``error_score="raise"`` would. Catch it by name;
    ``except Exception`` does not. The message says how much was spent and asked.

    See Also
    --------
    PrivacyLedger.check : raises it; PrivacyLedger.remaining : the budget left.

    Examples
    --------
    >>> from dp_sklearn import BudgetExceededError, PrivacyLedger
    >>> ledger = PrivacyLedger(max_epsilon=1.0)
    >>> try:
    ...     ledger.check(2.0, 0.0)
    ... except BudgetExceededError:
    ...     print("refused")
    refused
    >>> ledger.delete()
    """


def _rebuild_ledger(path, max_epsilon, delta):
    if not os.path.exists(path):
        warnings.warn(f"PrivacyLedger store {path!r} does not exist here; starting an empty store at that path.",
                      UserWarning, stacklevel=2)
    return PrivacyLedger(max_epsilon=max_epsilon, delta=delta, path=path)


#: path -> number of reset() / delete() calls through handles in this process: a handle whose
#: store was emptied on purpose by a copy of itself (clone, pickle) starts again from it
_RESETS = {}


class PrivacyLedger(_Reservations, _LedgerReports):
    """A privacy budget ledger shared by every copy of itself.

    Estimators take it as ``ledger=``. Before using the data, ``fit`` calls
    :meth:`reserve` with its planned event, which raises :class:`BudgetExceededError`
    if the fit could push the composed total above ``max_epsilon``; after the
    mechanism, ``fit`` calls :meth:`record` with that reservation's id (a fit that
    fails before drawing noise calls :meth:`release`; one that fails after records
    its planned event: the draw happened). Totals are composed by
    :func:`dp_sklearn.composition.compose_epsilon`, never by adding epsilons.
    ``copy.deepcopy`` (hence :func:`sklearn.base.clone`) returns the handle itself
    and pickling (joblib / loky workers) yields a handle to the same store, so
    ``GridSearchCV(..., n_jobs=2)``, ``cross_val_score`` and ``Pipeline`` all
    record into one place. See ``docs/privacy.md``.

    Parameters
    ----------
    max_epsilon : float or None, default=None
        Cap on the composed total, in nats, at ``delta``; ``None``: no cap.
    delta : float, default=1e-5
        Delta in [0, 1) at which the total is stated and capped (0: pure DP, basic
        composition of pure events). It equals the estimators' default: fits
        checked with their exact event compose at it without using it up, but a
        fit checked as a generic (epsilon_i, delta_i) release spends delta_i of it
        outright -- for such fits choose it well above the sum of their deltas.
    path : str or os.PathLike or None, default=None
        Store file (JSON lines; ``~`` is expanded). An existing store is continued; a
        read-only one can be read and raises ``PermissionError`` only when written.
        ``None``: a temporary file, removed when the process that created it exits
        (copies in other processes, e.g. joblib workers, write to it until then).

    Attributes
    ----------
    path : str
        Absolute path of the store.
    max_epsilon, delta : float
        As passed (NumPy scalars are accepted and converted to ``float``).

    Raises
    ------
    ValueError
        If ``max_epsilon`` is not None or a number > 0, ``delta`` is not in [0, 1), or
        ``path`` is not a regular file (a directory, ``/dev/null``) or is in a missing
        directory. Later, for a store line outside the schema or its limits.
    RuntimeError
        From any method, once the store this handle has used was deleted, replaced,
        truncated or rewritten by someone else: its history is gone, so the handle
        fails closed instead of starting again from zero. ``reset()`` and ``delete()``
        through the handle itself stay allowed.

    Notes
    -----
    :meth:`check` composes the recorded events, the outstanding reservations and
    the new release and appends a reservation under one exclusive ``fcntl.flock``
    (local file systems), so concurrent processes cannot both slip under the cap.
    Each line is parsed against a closed JSON schema (``dp_sklearn._event_json``):
    anything else raises ``ValueError`` naming file and line, and nothing in a store
    is executed, imported or unpickled. The work one line can demand is bounded, and a
    last line torn by a writer that died mid-write is settled without under-counting
    (``docs/privacy.md``, P7). A handle parses only the bytes appended since it last
    read and keeps the running composition. The store holds events, labels and
    timestamps only -- no data.

    See Also
    --------
    dp_sklearn.composition.compose_epsilon : the composition behind the totals.

    Examples
    --------
    >>> from dp_sklearn.ledger import PrivacyLedger
    >>> from dp_accounting import dp_event
    >>> ledger = PrivacyLedger(max_epsilon=3.0, delta=1e-5)
    >>> ledger.record(dp_event.GaussianDpEvent(4.0), 1.2, 1e-5, label="manual")
    >>> round(ledger.total_epsilon(), 3)  # analytic Gaussian, z = 4, delta = 1e-5
    0.926
    >>> ledger.delete()
    """

    def __init__(self, max_epsilon=None, delta=1e-5, path=None):
        if max_epsilon is not None:
            max_epsilon = _epsilon(max_epsilon, "max_epsilon")
        delta = _delta(delta, "delta")
        if path is None:
            path = temporary_store()
        else:
            path = store_path(path)
        self.path = os.path.abspath(path)
        self.max_epsilon = max_epsilon
        self.delta = delta
        self._pending = {}  # thread id -> reservation ids made through this handle, oldest first
        self._mutex = threading.RLock()
        self._projected = None  # RunningComposition projected by the last check
        # StoreCache: the file (inode) this handle uses, the lines parsed so far and their composition
        self._store = pinned_cache(self.path)
        self._resets = _RESETS.get(self.path, 0)
        self._eps_cache = {}

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

    @contextmanager
    def _locked(self, write):
        """The store, locked and synced: yields ``(file or None, StoreCache)``."""
        with self._mutex:
            if self._resets != _RESETS.get(self.path, 0):  # reset or deleted through a copy of this handle
                self._resets, self._store, self._projected = _RESETS.get(self.path, 0), None, None
        with self._mutex, locked_store(self.path, self._store, write) as (fh, store):
            self._store, proj = store, self._projected
            if proj is not None and (proj.digest, proj.n_events) == (store.state.digest, store.state.n_events):
                store.state = proj  # the events checked last, in the same order, already composed
            if proj is not None and store.state.n_events >= proj.n_events:
                self._projected = None
            yield fh, store

    def _epsilon(self, state, delta):
        key = (state.digest, state.n_events, delta)
        if key not in self._eps_cache:
            if len(self._eps_cache) > 256:
                self._eps_cache.clear()
            self._eps_cache[key] = state.epsilon(delta)
        return self._eps_cache[key]

    def _my_pending(self):
        return self._pending.setdefault(threading.get_ident(), [])

    def check(self, epsilon, delta, *, event=None, label=None):
        """Raise if a release of (epsilon, delta) could push the total above the cap.

        Call it *before* the data is used. Like :meth:`reserve`, but the
        reservation is kept by this handle for the calling thread, oldest first:
        the next :meth:`record` without ``reservation=`` consumes the oldest, and
        :meth:`cancel_pending` releases them. This order-based pairing is for
        hand-written releases made one at a time; dp_sklearn's own fits use
        :meth:`reserve` and pair by identity, so a failed fit's reservation can
        never be consumed by another fit's record.

        Parameters
        ----------
        epsilon, delta : float
            As for :meth:`reserve`.
        event : dp_accounting.DpEvent, default=None
            As for :meth:`reserve` (``None``: a generic event).
        label : str, default=None
            As for :meth:`reserve`.

        Returns
        -------
        projected : float or None
            Composed total in nats at ``self.delta`` with this release and the
            outstanding reservations; ``None`` without a cap.

        Raises
        ------
        BudgetExceededError
            If ``projected > max_epsilon`` (nothing is written). The message gives
            the amount spent and asked and, when the generic deltas leave no room
            at the ledger's delta, says so with the numbers.
        ValueError
            For invalid arguments or an event dp_sklearn cannot store or compose.
        """
        projected, rid = self._reserve(epsilon, delta, event, label)
        if rid is not None:
            with self._mutex:
                self._my_pending().append(rid)
        return projected

    def _reserve(self, epsilon, delta, event, label):
        epsilon = _epsilon(epsilon, "epsilon")
        delta = _delta(delta, "delta")
        if event is not None and not isinstance(event, dp_event.DpEvent):
            raise TypeError(f"event must be a dp_accounting DpEvent, got {type(event).__name__}.")
        if self.max_epsilon is None:
            return None, None
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
        return projected, rid

    def record(self, event, epsilon=None, delta=None, *, label=None, reservation=None):
        """Append a release (``dp_event_`` of a fitted estimator) to the store.

        Parameters
        ----------
        event : dp_accounting.DpEvent
            What the release disclosed; the totals compose it.
        epsilon, delta : float, default=None
            The estimator's stated guarantee; kept for display, never added up.
        label : str, default=None
            Name of the release in the store (e.g. the estimator's class name).
        reservation : str or None, default=None
            The id :meth:`reserve` returned for this release: that reservation,
            and only it, is consumed. ``None``: the oldest reservation made by
            :meth:`check` through this handle in this thread, if any.

        Raises
        ------
        ValueError
            If ``event`` is not one dp_sklearn can store.
        TypeError
            If ``reservation`` is not None or a str.

        Warns
        -----
        UserWarning
            If the composed total now exceeds ``max_epsilon`` (the release has
            happened, so it is recorded regardless).
        """
        if not isinstance(event, dp_event.DpEvent):
            raise TypeError(f"event must be a dp_accounting DpEvent, got {type(event).__name__}.")
        if reservation is not None and not isinstance(reservation, str):
            raise TypeError(f"reservation must be None or the str returned by reserve(), got {reservation!r}.")
        entry = {"kind": "event", "id": uuid.uuid4().hex, "label": None if label is None else str(label),
                 "epsilon": None if epsilon is None else float(epsilon),
                 "delta": None if delta is None else float(delta),
                 "event": encode_event(event), "time": time.time(), "pid": os.getpid(), "reservation": None}
        with self._locked(write=True) as (fh, _):
            mine = self._my_pending()
            if reservation is None:
                entry["reservation"] = mine.pop(0) if mine else None
            else:
                entry["reservation"] = reservation
                if reservation in mine:
                    mine.remove(reservation)
            append_line(fh, dump_line(entry))
        total = None if self.max_epsilon is None else self.total_epsilon()
        if total is not None and total > self.max_epsilon * (1.0 + _CAP_RTOL):
            warnings.warn(f"PrivacyLedger total epsilon={total:.4g} now exceeds max_epsilon={self.max_epsilon:g} "
                          f"at delta={self.delta:g}.", UserWarning, stacklevel=2)

    def reset(self):
        """Erase every record and reservation in the store.

        This handle and its copies in this process go on from the empty store; handles in
        other processes that had read it raise ``RuntimeError`` (their history is gone).
        """
        with self._mutex, locked_store(self.path, None, True, sync=False) as (fh, _):
            fh.truncate(0)
            fh.flush()
            self._pending.clear()
            self._forget()

    def delete(self):
        """Remove the store file. Handles to it become unusable until a record recreates it.

        Handles in this process (this one and its copies) go on from the deleted store (the
        next write starts a new, empty one); handles in other processes raise ``RuntimeError``
        (their history is gone), as after :meth:`reset`.
        """
        with self._mutex:
            with suppress(FileNotFoundError):
                os.remove(self.path)
            forget_temporary_store(self.path)
            self._forget()

    def _forget(self):
        """Start again from the store now at ``path`` (after reset or delete), in every handle of this process."""
        _RESETS[self.path] = self._resets = _RESETS.get(self.path, 0) + 1
        self._store = None

    def __len__(self):  # number of recorded releases
        return len(self.records)

    def __repr__(self):
        try:
            n = len(self)
        except (OSError, ValueError):
            n = "?"
        cap = "" if self.max_epsilon is None else f", max_epsilon={self.max_epsilon:g}"
        return f"PrivacyLedger(path={self.path!r}, n_events={n}{cap}, delta={self.delta:g})"

