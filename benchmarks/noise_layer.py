"""Default fits before/after the exact noise layer: time ratio and utility, in one run.

Usage (from the repository root)::

    python -m benchmarks.noise_layer                     # in one process: float vs exact layer
    python -m benchmarks.noise_layer --before OLD_TREE   # and the old tree in subprocesses

In one process, each fit runs alternately with the exact layer and with the float draws
it replaced (``Generator.normal`` / ``laplace`` swapped in for ``dp_sklearn._noise``'s
Gaussian and Laplace functions), so both see the same machine load: the time ratio of
the noise layer alone. With ``--before``, each round also runs the same fits in a fresh
subprocess per tree (``PYTHONPATH`` set to the tree), alternating trees. Times: the
minimum over seeds and rounds (robust to load) and the median; utility: the median test
score over seeds (R^2 for regressors, accuracy for the classifier), split 70/30 with a
fixed split seed. Bundled data only (diabetes, breast_cancer); default hyperparameters
with epsilon = 1, ``random_state`` an int and None.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import subprocess
import sys

import numpy as np

_CHILD = r"""
import json, sys, time, warnings
import numpy as np
warnings.simplefilter("ignore")
from sklearn.datasets import load_breast_cancer, load_diabetes
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler
from dp_sklearn import DPLasso, DPLogisticRegression, DPRidge
seeds = int(sys.argv[1])
data = {"diabetes": load_diabetes(return_X_y=True), "breast_cancer": load_breast_cancer(return_X_y=True)}
cases = [("DPRidge", DPRidge, "diabetes"), ("DPLasso", DPLasso, "diabetes"),
         ("DPLogisticRegression", DPLogisticRegression, "breast_cancer")]
out = {}
for name, cls, ds in cases:
    X, y = data[ds]
    X = StandardScaler().fit_transform(X)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, random_state=0)
    times, scores = [], []
    for s in list(range(seeds)) + [None]:
        est = cls(epsilon=1.0, random_state=s)
        t0 = time.perf_counter()
        est.fit(Xtr, ytr)
        times.append(time.perf_counter() - t0)
        if s is not None:
            scores.append(float(est.score(Xte, yte)))
    out[f"{name}/{ds}"] = {"times": times, "scores": scores}
print(json.dumps(out))
"""


def _run(tree, seeds):
    env = dict(os.environ, PYTHONPATH=str(tree), OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    res = subprocess.run([sys.executable, "-c", _CHILD, str(seeds)], env=env, capture_output=True, text=True,
                         check=True, cwd=str(tree))
    return json.loads(res.stdout.strip().splitlines()[-1])


def _inprocess(reps):
    import time
    import warnings

    from sklearn.datasets import load_breast_cancer, load_diabetes
    from sklearn.preprocessing import StandardScaler

    from dp_sklearn import DPLasso, DPLogisticRegression, DPRidge, _noise

    warnings.simplefilter("ignore")
    names = ("add_gaussian", "add_laplace", "gaussian", "laplace")
    exact = tuple(getattr(_noise, n) for n in names)
    floats = (lambda rng, v, scale, sens, norm=2: v + rng.normal(0.0, scale, np.shape(v)) if scale else v,
              lambda rng, v, scale, sens, norm=1: v + rng.laplace(0.0, scale, np.shape(v)) if scale else v,
              lambda rng, scale, size=None: rng.normal(0.0, scale, size),
              lambda rng, scale, size=None: rng.laplace(0.0, scale, size))
    data = {"diabetes": load_diabetes(return_X_y=True), "breast_cancer": load_breast_cancer(return_X_y=True)}
    print(f"{'fit':38s} {'min ms float':>12s} {'exact':>8s} {'ratio':>6s} {'median ratio':>12s}")
    for cls, ds in ((DPRidge, "diabetes"), (DPLasso, "diabetes"), (DPLogisticRegression, "breast_cancer")):
        X, y = data[ds]
        X = StandardScaler().fit_transform(X)
        t = {"float": [], "exact": []}
        for rep in range(reps):
            for label, fs in (("float", floats), ("exact", exact)):
                for n, f in zip(names, fs):
                    setattr(_noise, n, f)
                for s in (rep, None):
                    t0 = time.perf_counter()
                    cls(epsilon=1.0, random_state=s).fit(X, y)
                    t[label].append(time.perf_counter() - t0)
        for n, f in zip(names, exact):
            setattr(_noise, n, f)
        print(f"{cls.__name__ + '/' + ds:38s} {min(t['float']) * 1e3:12.2f} {min(t['exact']) * 1e3:8.2f} "
              f"{min(t['exact']) / min(t['float']):6.2f} {np.median(t['exact']) / np.median(t['float']):12.2f}")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", default=None, help="source tree without the noise layer (optional)")
    parser.add_argument("--after", default=str(pathlib.Path(__file__).resolve().parents[1]))
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    _inprocess(max(args.seeds, 1))
    if args.before is None:
        return
    acc = {"before": {}, "after": {}}
    for _ in range(args.rounds):
        for label in ("before", "after"):
            for case, r in _run(getattr(args, label), args.seeds).items():
                entry = acc[label].setdefault(case, {"times": [], "scores": []})
                entry["times"] += r["times"]
                entry["scores"] = r["scores"]  # same seeds each round: identical
    print(f"{'fit':38s} {'min s before':>12s} {'after':>8s} {'ratio':>6s} {'median ratio':>12s} "
          f"{'score before':>12s} {'after':>8s}")
    for case in acc["before"]:
        b, a = acc["before"][case], acc["after"][case]
        print(f"{case:38s} {min(b['times']):12.4f} {min(a['times']):8.4f} {min(a['times']) / min(b['times']):6.2f} "
              f"{np.median(a['times']) / np.median(b['times']):12.2f} {np.median(b['scores']):12.3f} "
              f"{np.median(a['scores']):8.3f}")


if __name__ == "__main__":
    main()
