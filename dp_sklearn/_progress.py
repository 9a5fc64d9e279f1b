"""Progress of long fits (``verbose``): step t of T and elapsed time, nothing else.

A fit with ``verbose > 0`` opens :func:`progress`; the iterative mechanisms loop over
:func:`steps`, which is ``range(T)`` and, inside a report of level 2 or more, prints
``step t of T`` and the elapsed wall time at most ``MAX_STEP_LINES`` times. The levels
follow scikit-learn's ``verbose``: 1 prints the phases of a fit, 2 adds the steps. No loss,
norm, score or any other data-dependent number is ever printed (``docs/privacy.md``,
"What the analyst sees"): T is a public function of hyperparameters and n.
"""

from __future__ import annotations

import contextvars
import math
import time
from contextlib import contextmanager

__all__ = ["MAX_STEP_LINES", "progress", "steps"]

#: most step lines printed per mechanism run
MAX_STEP_LINES = 8

_ACTIVE = contextvars.ContextVar("dp_sklearn_progress", default=None)
_SILENT = contextvars.ContextVar("dp_sklearn_progress_silent", default=False)


class _Report:
    """Prints ``[label] message, elapsed x s`` lines to stdout (scikit-learn's convention)."""

    def __init__(self, label, level=1):
        self.label = label
        self.level = int(level)
        self.start = time.perf_counter()

    def line(self, message):
        print(f"[{self.label}] {message}, elapsed {time.perf_counter() - self.start:.2f} s", flush=True)


@contextmanager
def progress(label, verbose, inner_silent=False):
    """Report the progress of the enclosed fit when ``verbose > 0`` (else silence nested reports).

    Parameters
    ----------
    label : str
        Printed at the start of every line (the estimator's class name).
    verbose : int
        0: silent. 1: the phase lines the caller prints with the yielded report.
        2 or more: also at most ``MAX_STEP_LINES`` step lines per run.
    inner_silent : bool, default=False
        Silence every report opened inside (whatever its ``verbose``): a private search
        must not reveal how many fits it ran.

    Yields
    ------
    report : object or None
        ``report.line(message)`` prints one line (``None`` when silent).
    """
    report = _Report(label, verbose) if verbose and not _SILENT.get() else None
    token, silent = _ACTIVE.set(report), _SILENT.set(_SILENT.get() or inner_silent)
    try:
        yield report
    finally:
        _SILENT.reset(silent)
        _ACTIVE.reset(token)


def steps(T):
    """``range(T)`` that prints ``step t of T`` at most ``MAX_STEP_LINES`` times in a verbose fit.

    Parameters
    ----------
    T : int
        Public number of steps.

    Returns
    -------
    iterable of int
        0, 1, ..., T - 1.
    """
    report = _ACTIVE.get()
    return range(T) if report is None or report.level < 2 else _reported(report, int(T))


def _reported(report, T):
    marks = {math.ceil(k * T / MAX_STEP_LINES) for k in range(1, MAX_STEP_LINES + 1)}
    for t in range(T):
        yield t
        if t + 1 in marks:
            report.line(f"step {t + 1} of {T}")
