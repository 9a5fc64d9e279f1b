"""The DP model alone on the tuning half's multiclass sets, for one source tree (release comparison).

Fits ``DPLogisticRegression(epsilon, delta=1e-5)`` with its defaults behind the suite's
NON-private preprocessing (``StandardScaler`` + public one-hot, the suite's comparison (b)),
on the suite's splits, and prints the mean macro one-vs-rest ROC AUC and accuracy. Run it
once per tree to compare releases on the same splits; the tree's ``dp_sklearn`` is imported,
the suite (datasets, splits, scores) comes from this checkout::

    git archive 2bf3332 dp_sklearn | tar -x -C /tmp/r010     # 0.1.0
    python -m benchmarks.tabular.release_compare /tmp/r010 0.1.0
    python -m benchmarks.tabular.release_compare . current

Results: ``benchmarks/tabular/results/tuning_multiclass_release.md``.
"""

from __future__ import annotations

import sys
import time
import warnings
from pathlib import Path

NAMES = ("digits", "cars", "chile", "yogurt")
EPSILONS = (1.0, 5.0)
SEEDS = 5


def main(tree, label, names=NAMES, seeds=SEEDS):
    tree = str(Path(tree).resolve())
    suite = str(Path(__file__).resolve().parents[2])
    sys.path[:0] = [tree, suite]
    warnings.simplefilter("ignore")
    import numpy as np
    import dp_sklearn
    from dp_sklearn import DPLogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    from benchmarks.tabular import datasets as D
    from benchmarks.tabular.run import column_transformer, score, split

    assert dp_sklearn.__file__.startswith(tree), dp_sklearn.__file__
    t0, rows = time.time(), {}
    for name in names:
        X, y, schema = D.load(name)
        for eps in EPSILONS:
            aucs, accs = [], []
            for s in range(seeds):
                Xtr, Xte, ytr, yte = split(X, y, schema.task, s)
                est = make_pipeline(column_transformer(schema, StandardScaler()),
                                    DPLogisticRegression(epsilon=eps, delta=1e-5, random_state=s))
                auc, acc = score(est.fit(Xtr, ytr), Xte, yte, schema.task)
                aucs.append(auc)
                accs.append(acc)
            rows[name, eps] = (float(np.mean(aucs)), float(np.mean(accs)))
            print(f"| {label} | {name} | {eps:g} | {rows[name, eps][0]:.3f} | {rows[name, eps][1]:.3f} |", flush=True)
    for eps in EPSILONS:
        auc, acc = (float(np.mean([rows[n, eps][i] for n in names])) for i in (0, 1))
        print(f"| {label} | mean | {eps:g} | {auc:.3f} | {acc:.3f} |")
    print(f"({label}: {time.time() - t0:.0f} s, {seeds} seeds)")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
