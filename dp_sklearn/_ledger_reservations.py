"""Reservations of a :class:`~dp_sklearn.PrivacyLedger` by identity (mixed into the ledger).

:meth:`~_Reservations.reserve` returns an id that :meth:`~dp_sklearn.PrivacyLedger.record`
and :meth:`~_Reservations.release` take, so a failed fit's reservation can never be consumed
by another fit; :meth:`~_Reservations.cancel_pending` serves the order-based pairing of
:meth:`~dp_sklearn.PrivacyLedger.check` kept for hand-written releases.
"""

from __future__ import annotations

import math
import os
import time

from ._event_json import append_line, dump_line

__all__ = []


class _Reservations:
    """Needs ``_reserve``, ``_locked``, ``_my_pending``, ``_epsilon``, ``delta`` and ``max_epsilon``."""

    def reserve(self, epsilon, delta, *, event=None, label=None):
        """Reserve a release of (epsilon, delta) under the cap; return the reservation's id.

        The reservation counts in every later projection (from any handle or
        process sharing the store) until :meth:`record` is called with
        ``reservation=`` this id, or :meth:`release` releases it. Pairing is by
        identity: what happens to other reservations never affects this one.

        Parameters
        ----------
        epsilon, delta : float
            The release's guarantee: epsilon > 0 in nats (``inf``: non-private),
            delta in [0, 1).
        event : dp_accounting.DpEvent, default=None
            The release's exact event if known before it runs (dp_sklearn's
            fits pass their planned, data-independent event); ``None``: a
            generic (epsilon, delta)-DP event.
        label : str, default=None
            Name of the release in the store.

        Returns
        -------
        reservation : str or None
            The reservation's id; ``None`` when the ledger has no cap (nothing
            needs reserving; :meth:`record` and :meth:`release` accept ``None``).

        Raises
        ------
        BudgetExceededError
            If the projected total exceeds ``max_epsilon`` (nothing is written).
        ValueError
            For invalid arguments or an event dp_sklearn cannot store or compose.

        Examples
        --------
        >>> from dp_accounting import dp_event
        >>> from dp_sklearn import PrivacyLedger
        >>> led = PrivacyLedger(max_epsilon=2.0)
        >>> rid = led.reserve(1.0, 0.0, event=dp_event.LaplaceDpEvent(1.0))
        >>> led.record(dp_event.LaplaceDpEvent(1.0), 1.0, 0.0, reservation=rid)
        >>> len(led), led.pending
        (1, [])
        >>> led.delete()
        """
        return self._reserve(epsilon, delta, event, label)[1]

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

    def release(self, reservation):
        """Release the reservation ``reservation`` (a release that did not happen).

        For a release that failed before drawing any noise; once noise is drawn
        the release has happened and must be recorded (dp_sklearn's fits record
        their planned event then, failed or not).

        Parameters
        ----------
        reservation : str or None
            An id returned by :meth:`reserve` (``None``: nothing to release).

        Returns
        -------
        released : bool
            ``True`` if the reservation was outstanding and is now released.

        Raises
        ------
        TypeError
            If ``reservation`` is not None or a str.
        """
        if reservation is None:
            return False
        if not isinstance(reservation, str):
            raise TypeError(f"reservation must be None or the str returned by reserve(), got {reservation!r}.")
        with self._locked(write=True) as (fh, store):
            mine = self._my_pending()
            if reservation in mine:
                mine.remove(reservation)
            if reservation not in store.pending:
                return False
            append_line(fh, dump_line({"kind": "release", "id": reservation, "time": time.time(),
                                       "pid": os.getpid()}))
        return True

    def cancel_pending(self, *, all_handles=False):
        """Release outstanding reservations made by :meth:`check`.

        For hand-written releases paired by :meth:`check` that fail before
        their first noise draw (dp_sklearn's fits use :meth:`reserve` /
        :meth:`release` instead).

        Parameters
        ----------
        all_handles : bool, default=False
            ``False``: this handle's reservations in the calling thread. ``True``:
            every outstanding reservation (e.g. left by a killed process).

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
