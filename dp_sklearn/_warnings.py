"""What fitting tells the analyst about clipping: one count-free warning per public call.

See ``docs/privacy.md``, "What the analyst sees versus what is released".
"""

from __future__ import annotations

import contextlib
import contextvars
import warnings

__all__ = ["ClippingWarning", "clipping_report"]


class ClippingWarning(UserWarning):
    """Some records exceeded the public bounds and were clipped (see ``docs/privacy.md``).

    Emitted at most once per fit, with no count: the guarantee holds, but the model
    fits the clipped data. Raise the public bound only from public knowledge.

    See Also
    --------
    dp_sklearn.DPRidge : its ``data_norm`` and ``bounds_y`` are such bounds.

    Examples
    --------
    >>> import warnings
    >>> import numpy as np
    >>> from dp_sklearn import ClippingWarning, DPRidge
    >>> X, y = np.array([[3.0, 0.0], [0.0, 0.5], [0.5, 0.5]]), np.array([1.0, 2.0, 3.0])
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     _ = DPRidge(data_norm=1.0, bounds_y=(0, 4), random_state=0).fit(X, y)
    >>> [w.category.__name__ for w in caught]
    ['ClippingWarning']
    """


_REPORT = contextvars.ContextVar("dp_sklearn_clipping_report", default=None)
_ADVICE = "the privacy guarantee holds, but the model fits the clipped data."


@contextlib.contextmanager
def clipping_report():
    """Collect clip events and emit at most one :class:`ClippingWarning` on exit.

    Every clip event raised by :func:`normalize_X` or :func:`normalize_y` inside the
    context is recorded instead of warned. When the outermost context exits normally,
    one warning lists the distinct events (each names only the public bound that was
    exceeded, never a count); nested contexts merge into the outermost one, so a public
    call that runs many internal fits (a search with a secret number of repetitions)
    emits the same single warning whatever the number of fits (if the fits that run are
    chosen at random, normalize every candidate once before the loop: later duplicates
    merge, so the warning cannot depend on which fits ran). The state lives in a
    :class:`contextvars.ContextVar`, so concurrent threads and asyncio tasks do not
    share reports. If the context exits with an exception, the collected events are
    dropped and the exception propagates unchanged.

    Yields
    ------
    None
    """
    if _REPORT.get() is not None:
        yield
        return
    events = []
    token = _REPORT.set(events)
    try:
        yield
    finally:
        _REPORT.reset(token)
    if events:
        warnings.warn("; ".join(events) + "; " + _ADVICE, ClippingWarning, stacklevel=3)


def _report_clip(message):
    """Record ``message`` in the active report, or warn at once outside any report."""
    events = _REPORT.get()
    if events is None:
        warnings.warn(message + "; " + _ADVICE, ClippingWarning, stacklevel=5)
    elif message not in events:
        events.append(message)
