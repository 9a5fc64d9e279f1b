"""Per-fit overhead of a capped PrivacyLedger as records pile up (issue 8, item 5).

A capped ledger does two things per fit: ``check`` (compose the recorded events,
the outstanding reservations and the new event; append a reservation) and
``record`` (append the event; compose the total to warn above the cap). This script
fills a store with N records (N = 10, 100, 1000), then times ``check`` + ``record``
of further fits through a capped handle that has already read the store, and
compares with recomposing every event from scratch (``compose_epsilon``), which is
what each check cost before the running composition.

Event mixes (the events dp_sklearn's estimators emit, without fitting):

* ``gaussian``: ``DPLogisticRegression(solver="noisy_gd")``, a self-composed Gaussian;
* ``ridge``: default ``DPRidge``, a Laplace y-centering plus a self-composed Gaussian;
* ``mixed``: cycling through ridge, frank-wolfe lasso (Laplace + zCDP), objective
  perturbation (Laplace + generic (epsilon, delta) + Gaussian) and Poisson-sampled
  noisy GD, which exercises the RDP / PLD split.

Run: ``python -m benchmarks.ledger_overhead`` (a few minutes on one core, most of it the
full recompositions); ``LEDGER_SIZES=1000`` measures one size only.
"""

from __future__ import annotations

import os
import tempfile
import time

from dp_accounting import dp_event as E

from dp_sklearn import EpsilonDeltaDpEvent, PrivacyLedger
from dp_sklearn.composition import compose_epsilon

SIZES = tuple(int(s) for s in os.environ.get("LEDGER_SIZES", "10,100,1000").split(","))
N_TIMED = 20


def _events(mix):
    gauss = E.SelfComposedDpEvent(E.GaussianDpEvent(13.62), 11)
    ridge = E.ComposedDpEvent([E.LaplaceDpEvent(10.0), gauss])
    if mix == "gaussian":
        return [gauss]
    if mix == "ridge":
        return [ridge]
    fw = E.ComposedDpEvent([E.LaplaceDpEvent(10.0), E.ZCDpEvent(0.0252)])
    op = E.ComposedDpEvent([E.LaplaceDpEvent(10.0), EpsilonDeltaDpEvent(0.891, 1e-9), E.GaussianDpEvent(399.5)])
    sgd = E.SelfComposedDpEvent(E.PoissonSampledDpEvent(0.113, E.GaussianDpEvent(3.11)), 11)
    return [ridge, fw, op, sgd]


def measure(mix, n_records):
    """(ms per capped fit, ms per full recomposition, total epsilon) after ``n_records``."""
    kinds = _events(mix)
    fd, path = tempfile.mkstemp(suffix=".jsonl")
    os.close(fd)
    try:
        filler = PrivacyLedger(path=path)  # uncapped: record does not compose
        for i in range(n_records):
            filler.record(kinds[i % len(kinds)], 1.0, 1e-5, label="fill")
        capped = PrivacyLedger(max_epsilon=1e9, delta=1e-5, path=path)
        capped.total_epsilon()  # the handle reads the store once
        t0 = time.perf_counter()
        for i in range(N_TIMED):
            ev = kinds[(n_records + i) % len(kinds)]
            capped.check(1.0, 1e-5, event=ev, label="timed")
            capped.record(ev, 1.0, 1e-5, label="timed")
        per_fit = (time.perf_counter() - t0) / N_TIMED * 1e3
        events = capped.events
        t0 = time.perf_counter()
        full = compose_epsilon(events, 1e-5)
        per_full = (time.perf_counter() - t0) * 1e3
        assert abs(full - capped.total_epsilon()) <= 1e-6 * max(1.0, full)
        return per_fit, per_full, full
    finally:
        os.remove(path)


def main():
    print("PrivacyLedger overhead per capped fit (check + record), ms; one core")
    print(f"{'events':>9} {'records':>8} {'per fit':>9} {'full recomposition':>19} {'total eps':>10}")
    for mix in ("gaussian", "ridge", "mixed"):
        for n in SIZES:
            per_fit, per_full, total = measure(mix, n)
            print(f"{mix:>9} {n:>8} {per_fit:>9.1f} {per_full:>19.1f} {total:>10.3f}")


if __name__ == "__main__":
    main()
