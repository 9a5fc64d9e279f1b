"""Default data_norm for sparse input (issue 20, item 5): sqrt(n_features) vs 1 vs "auto".

    PYTHONPATH=$PWD python -m benchmarks.sparse_data_norm [--seeds 2] [--data-dir DIR]

DPLogisticRegression(epsilon) on the sparse sets of the shared data directory, as loaded
by benchmarks/datasets.py, and on the same rows hashed into 2**18 columns (a fixed public
random column map, as a HashingVectorizer would: same row norms, p = 262,144). Test
ROC AUC mean over seeds. Tuning half: rcv1, reuters; checking half: news20, adult.
"""

from __future__ import annotations

import argparse
import warnings

import numpy as np
import scipy.sparse as sp

from benchmarks.datasets import DatasetMissing, default_data_dir, load
from sklearn.metrics import roc_auc_score

from dp_sklearn.linear_model import DPLogisticRegression

HALVES = {"tuning": ("rcv1", "reuters"), "checking": ("news20", "adult")}


def hashed(X, n_columns=2**18, seed=0):
    """Rows of X with their columns sent to ``n_columns`` by a fixed random map (signs too)."""
    rng = np.random.default_rng(seed)
    cols = rng.integers(0, n_columns, size=X.shape[1])
    sign = rng.choice([-1.0, 1.0], size=X.shape[1])
    M = sp.csr_matrix((sign, (np.arange(X.shape[1]), cols)), shape=(X.shape[1], n_columns))
    return sp.csr_matrix(X @ M)


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=2)
    ap.add_argument("--eps", type=float, nargs="+", default=[1.0, 5.0])
    ap.add_argument("--data-dir", default=default_data_dir())
    args = ap.parse_args(argv)
    print("| half | dataset | p | epsilon | AUC sqrt(p) | AUC 1.0 | AUC auto |\n|---|---|---|---|---|---|---|")
    for half, names in HALVES.items():
        for name in names:
            try:
                ds = load(name, args.data_dir, quick=True)
            except DatasetMissing as exc:
                print(f"| {half} | {name} | skipped: {exc} |")
                continue
            for hash_it in (False, True):
                Xtr, Xte = (hashed(ds.X_train), hashed(ds.X_test)) if hash_it else (ds.X_train, ds.X_test)
                Xtr, Xte = sp.csr_matrix(Xtr), sp.csr_matrix(Xte)
                for eps in args.eps:
                    cells = []
                    for dn in (float(np.sqrt(Xtr.shape[1])), 1.0, "auto"):
                        acc = []
                        for s in range(args.seeds):
                            with warnings.catch_warnings():
                                warnings.simplefilter("ignore")
                                m = DPLogisticRegression(epsilon=eps, data_norm=dn, random_state=s).fit(Xtr, ds.y_train)
                            acc.append(roc_auc_score(ds.y_test, m.decision_function(Xte)))
                        cells.append(f"{np.mean(acc):.3f}")
                    label = f"{name} hashed" if hash_it else name
                    print(f"| {half} | {label} | {Xtr.shape[1]} | {eps:g} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
