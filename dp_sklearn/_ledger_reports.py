"""Read-only reports of a :class:`~dp_sklearn.PrivacyLedger` store (mixed into the ledger)."""

from __future__ import annotations

import math

from ._event_json import _delta
from ._records import LedgerRecord

__all__ = []


class _LedgerReports:
    """What a ledger handle can say about its store without writing to it.

    Needs ``_locked(write=False)`` yielding ``(handle, store)``, ``_epsilon(state, delta)``,
    ``path``, ``delta`` and ``max_epsilon`` from the class it is mixed into.
    """

    @property
    def records(self):
        """list of ``LedgerRecord``: the recorded releases, oldest first."""
        with self._locked(write=False) as (_, store):
            return [LedgerRecord(*r) for r in store.records]

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
        """Composed epsilon (nats) of the recorded events at ``delta``.

        Parameters
        ----------
        delta : float or None, default=None
            In [0, 1); ``None``: the ledger's ``delta``.

        Returns
        -------
        epsilon : float
            :func:`~dp_sklearn.composition.compose_epsilon` of :attr:`events`, from
            the running composition (0.0 when empty; ``inf`` after a non-private
            release).
        """
        delta = self.delta if delta is None else _delta(delta, "delta")
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
        """The budget left under the cap.

        Returns
        -------
        epsilon : float
            ``max_epsilon - total_epsilon()`` in nats (``inf`` without a cap).
        """
        if self.max_epsilon is None:
            return math.inf
        return self.max_epsilon - self.total_epsilon()

    def summary(self):
        """A text report of the store.

        Returns
        -------
        report : str
            Releases per label, their stated guarantees and the composed total.
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
