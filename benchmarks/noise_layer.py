"""Default fits before/after the exact noise layer: time ratio and utility, in one run.

Usage (from the repository root)::

    python -m benchmarks.noise_layer --before /path/to/old/tree --seeds 20 --rounds 3

Each round runs the same fits in a fresh subprocess per tree (``PYTHONPATH`` set to the
tree), alternating trees, so that both see the same machine load. Times: per fit, the
minimum over seeds and rounds (robust to load) and the median; utility: the median test
score over seeds (R^2 for regressors, accuracy for the classifier), split 70/30 with a
fixed split seed. Bundled data only (diabetes, breast_cancer).
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


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", required=True, help="source tree without the noise layer")
    parser.add_argument("--after", default=str(pathlib.Path(__file__).resolve().parents[1]))
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
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
