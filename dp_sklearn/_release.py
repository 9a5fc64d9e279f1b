"""One path for every private fit: plan -> validate -> reserve once -> run -> record or release.

Every private ``fit`` of dp_sklearn (estimators, scalers, online models, the search and
:class:`~dp_sklearn.pipeline.PrivatePipeline`) goes through :func:`private_fit`, after it
has validated its hyperparameters and data and planned its exact event from public values
only (``docs/privacy.md``, P7)::

    event = ...                                  # planned from n, p and hyperparameters
    with private_fit(self, event, ledgers=[self.ledger], epsilon=..., delta=...) as rel:
        rng = rel.rng(self.random_state)         # the fit's one Generator (tracked)
        ...                                      # the mechanism

* At the top level the event is reserved **once** in each ledger
  (:meth:`~dp_sklearn.PrivacyLedger.reserve`, all or none), the body runs, and the
  event is recorded by its reservation id. If the body raises before any noise was
  drawn (no tracked Generator moved, no nested fit drew), the reservation is released:
  the ledger's records are as before. If it raises after a draw, the planned event is
  recorded anyway (fail closed): a draw is a release.
* Inside an enclosing release (a pipeline's or a search's fit) a fit does not touch
  any ledger: it reports its event and whether it drew to the enclosing release,
  which reserved the composed event of all its steps before any of them ran.
* Inside a *plan* (:func:`planning`: a dry run of a pipeline on public synthetic data
  of the same schema) a fit reports its planned event and stops before its mechanism
  when it is not a transformer (nothing downstream needs its output).

The shapes follow scikit-learn's ``_fit_context`` (one wrapper around every fit) and
diffprivlib's ``BudgetAccountant.check`` / ``spend`` pair, with the pairing made by
reservation identity so that a failed fit's charge can never be consumed by another.

The module also holds what every private fit shares: :func:`make_rng` /
:func:`seed_sequence` (the one conversion of ``random_state``) and :func:`shares` (the one
budget split); the traversal of composite estimators is in :mod:`dp_sklearn._composite`.
"""

from __future__ import annotations

import contextvars
import numbers
import secrets
from contextlib import contextmanager

import numpy as np

from . import _discrete

__all__ = ["make_rng", "seed_sequence", "shares", "private_fit", "planning", "detached", "active_release",
           "PlanComplete"]

#: words of 32 bits drawn from a user's RandomState / Generator to seed a fit (256 bits)
_SEED_WORDS = 8


# ---------------------------------------------------------------------------- randomness
def seed_sequence(random_state, *, spawn_key=()):
    """The ``numpy.random.SeedSequence`` of a fit (``docs/privacy.md``, randomness).

    Parameters
    ----------
    random_state : None, int, SeedSequence, Generator or RandomState
        ``None``: 256 fresh bits from the operating system (``secrets``). An int (not a bool):
        ``SeedSequence(int)``, reproducible. A ``SeedSequence``: itself (with
        ``spawn_key`` appended). A ``Generator`` or legacy ``RandomState``: 256
        bits drawn from it (never a brute-forceable 31-bit seed).
    spawn_key : tuple of int, default=()
        Appended to the sequence's spawn key (e.g. the stream position of an
        online call), so that one seed gives independent streams.

    Returns
    -------
    seq : numpy.random.SeedSequence

    Raises
    ------
    ValueError
        If ``random_state`` is of another type.
    """
    spawn_key = tuple(int(k) for k in spawn_key)
    if random_state is None or (isinstance(random_state, numbers.Integral) and not isinstance(random_state, bool)):
        entropy = secrets.randbits(32 * _SEED_WORDS) if random_state is None else int(random_state)
        return np.random.SeedSequence(entropy, spawn_key=spawn_key)
    if isinstance(random_state, np.random.SeedSequence):
        if not spawn_key:
            return random_state
        return np.random.SeedSequence(random_state.entropy, spawn_key=tuple(random_state.spawn_key) + spawn_key)
    if isinstance(random_state, np.random.RandomState):
        words = random_state.randint(0, 2**32, size=_SEED_WORDS, dtype=np.uint64)
    elif isinstance(random_state, np.random.Generator):
        words = random_state.integers(0, 2**32, size=_SEED_WORDS, dtype=np.uint64)
    else:
        raise ValueError("random_state must be None, an int, a SeedSequence, a numpy Generator or a RandomState, "
                         f"got {random_state!r}.")
    return np.random.SeedSequence([int(w) for w in words], spawn_key=spawn_key)


def make_rng(random_state, *, spawn_key=()):
    """The one ``numpy.random.Generator`` of a fit.

    A ``Generator`` is used as it is (``spawn_key`` ignored); anything else goes
    through :func:`seed_sequence`, so ``make_rng(s)`` equals
    ``numpy.random.default_rng(s)`` for an int ``s`` (reproducible). ``None`` gives a
    :class:`dp_sklearn._discrete.CryptoGenerator`: its ``integers`` (the only draws of the
    exact noise samplers) read the operating system's cryptographic source
    (``os.urandom``); its other draws come from a PCG64 seeded with 256 bits of it
    (``docs/privacy.md``, Numeric model).

    Parameters
    ----------
    random_state : None, int, SeedSequence, Generator or RandomState
        See :func:`seed_sequence`.
    spawn_key : tuple of int, default=()
        See :func:`seed_sequence`.

    Returns
    -------
    rng : numpy.random.Generator

    Raises
    ------
    ValueError
        If ``random_state`` is of another type.
    """
    if isinstance(random_state, np.random.Generator):
        return random_state
    if random_state is None:
        return _discrete.CryptoGenerator(np.random.PCG64(seed_sequence(None, spawn_key=spawn_key)))
    return np.random.default_rng(seed_sequence(random_state, spawn_key=spawn_key))


# ---------------------------------------------------------------------------- budget split
def shares(weights, name):
    """Normalize positive finite ``weights`` to sum to 1 (the one budget split).

    Parameters
    ----------
    weights : sequence of float
        Relative shares, each finite and > 0.
    name : str
        The parameter the weights come from (named in the error).

    Returns
    -------
    shares : list of float

    Raises
    ------
    ValueError
        If a weight is not a finite number > 0 (booleans are not numbers here).
    """
    raw = list(weights)
    ok = raw and all(isinstance(w, numbers.Real) and not isinstance(w, bool) and 0 < w < float("inf") for w in raw)
    if not ok:
        raise ValueError(f"{name} must be finite numbers > 0, got {weights!r}.")
    total = float(sum(float(w) for w in raw))
    return [float(w) / total for w in raw]


# ---------------------------------------------------------------------------- the release
class PlanComplete(BaseException):  # noqa: N818 - a control-flow signal, not an error
    """Raised by a final (non-transformer) fit inside :func:`planning` once its event is known.

    A ``BaseException`` so that no ``except Exception`` between the planner and
    the fit (scikit-learn's meta-estimators) mistakes it for a failure.
    """


_ACTIVE = contextvars.ContextVar("dp_sklearn_release", default=None)


class _Release:
    """The state of one private fit (see the module docstring)."""

    def __init__(self, owner, event, mode, parent):
        self.owner, self.event, self.mode, self.parent = owner, event, mode, parent
        self.events = []  # events reported by the fits nested in this one, in order
        self.drawn = False
        self._tracked = []

    def rng(self, random_state, *, spawn_key=()):
        """The fit's Generator (:func:`make_rng`); a draw from it marks the release as made."""
        return self.track(make_rng(random_state, spawn_key=spawn_key))

    def track(self, rng):
        """Count any later draw from ``rng`` as a release (returns ``rng``)."""
        self._tracked.append((rng, rng.bit_generator.state))
        return rng

    def has_drawn(self):
        return self.drawn or any(rng.bit_generator.state != state for rng, state in self._tracked)


def active_release():
    """The enclosing release of the current fit (None at the top level)."""
    return _ACTIVE.get()


@contextmanager
def planning():
    """Collect the events of the fits run inside (a dry run on public data); yields the release.

    Fits inside report their planned event to it and touch no ledger; a fit that
    is not a transformer stops with :class:`PlanComplete` before its mechanism.
    """
    rel = _Release(None, None, "plan", _ACTIVE.get())
    token = _ACTIVE.set(rel)
    try:
        yield rel
    finally:
        _ACTIVE.reset(token)


@contextmanager
def detached():
    """Run fits outside any enclosing release (a search's calibration dry runs on public data)."""
    token = _ACTIVE.set(None)
    try:
        yield
    finally:
        _ACTIVE.reset(token)


def _distinct(ledgers):
    out = []
    for led in ledgers:
        if led is not None and not any(led is o or led == o for o in out):
            out.append(led)
    return out


@contextmanager
def private_fit(owner, event, *, ledgers=(), epsilon, delta, label=None):
    """Reserve, run and record one private fit whose event ``event`` is planned (see the module docstring).

    Call it after every validation, with the exact event planned from public
    values. On entry (top level) ``event`` is reserved in every ledger of
    ``ledgers`` (``None`` entries skipped; all or none); on a normal exit it is
    recorded with that reservation; on an exception it is released if nothing
    was drawn, else recorded (fail closed).

    Parameters
    ----------
    owner : estimator
        The estimator being fitted.
    event : dp_accounting.DpEvent
        The planned event.
    ledgers : iterable of PrivacyLedger or None, default=()
        Where the fit is reserved and recorded (ignored inside an enclosing release).
    epsilon, delta : float
        The stated guarantee (kept in the ledger for display).
    label : str, default=None
        Name in the ledger (the owner's class name by default).

    Yields
    ------
    release : _Release
        ``release.rng(random_state)`` gives the fit's tracked Generator.

    Raises
    ------
    BudgetExceededError
        If a ledger cannot afford ``event`` (nothing is reserved in any ledger).
    PlanComplete
        Inside :func:`planning`, for an owner without ``transform``.
    """
    parent = _ACTIVE.get()
    if parent is not None and parent.mode == "plan":
        parent.events.append(event)
        if not hasattr(owner, "transform"):
            raise PlanComplete()
        rel = _Release(owner, event, "plan", parent)  # a transformer: fitted on the public stand-in data
        token = _ACTIVE.set(rel)
        try:
            yield rel
        finally:
            _ACTIVE.reset(token)
        return
    label = type(owner).__name__ if label is None else label
    targets = _distinct(ledgers) if parent is None else []
    reserved = []
    try:
        for led in targets:
            reserved.append((led, led.reserve(float(epsilon), float(delta), event=event, label=label)))
    except BaseException:
        for led, rid in reserved:
            led.release(rid)
        raise
    rel = _Release(owner, event, "run", parent)
    token = _ACTIVE.set(rel)
    try:
        yield rel
    except BaseException:
        drawn = rel.has_drawn()
        _ACTIVE.reset(token)
        token = None
        if parent is not None:
            parent.drawn = parent.drawn or drawn
        for led, rid in reserved:
            if drawn:  # the draw happened: its charge stays (fail closed)
                led.record(event, float(epsilon), float(delta), label=f"{label} (failed after drawing)",
                           reservation=rid)
            else:
                led.release(rid)
        raise
    finally:
        if token is not None:
            _ACTIVE.reset(token)
    if parent is not None:
        parent.drawn = True
        parent.events.append(event)
    for led, rid in reserved:
        led.record(event, float(epsilon), float(delta), label=label, reservation=rid)
