"""Private online learning (issue 13, item 2): regret and excess risk against the non-private online algorithm.

Usage (from the repository root): ``python -m benchmarks.online [--quick] [--seeds N] [--data-dir DIR]``.
Writes ``benchmarks/results/online.md`` (``online_quick.md`` with ``--quick``).

Two measurements per dataset (ijcnn1 and NYC flights from the shared data, breast_cancer and
diabetes bundled with scikit-learn):

* **Regret on a stream.** The training split, in its stored order, is fed to ``partial_fit`` in
  calls of ``CHUNK`` records (``horizon`` = its length). Before each call, the model released by the previous call
  predicts the call's records (progressive validation; the first call is predicted by the
  zero model). The average online loss minus that of the best fixed model in hindsight
  (scikit-learn's non-private ``LogisticRegression`` / ``LinearRegression`` fitted on the whole
  stream, evaluated on it) is the average regret per record. The same algorithm without noise
  (``epsilon=inf``) is the non-private online baseline.
* **Excess risk of one pass** (``fit``): test loss and test metric of the released model
  (last iterate, POffL average, PIGD implicit steps), against the same pass at ``epsilon=inf``
  and the batch DP estimator (``DPLogisticRegression`` / ``DPRidge`` defaults, many passes).

Losses are in the data's units: log-loss for classification, squared error for regression
(predictions clipped to the public ``bounds_y``). Hyperparameters are the estimators' defaults
(``alpha="auto"``, ``radius=10``): public, not tuned on the data. The non-private baseline is the
same algorithm with the same (public) ``alpha_`` at ``epsilon=inf``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402
from sklearn.linear_model import LinearRegression, LogisticRegression  # noqa: E402
from sklearn.metrics import r2_score, roc_auc_score  # noqa: E402

from benchmarks.common import fmt, fmt_ms, md_table  # noqa: E402
from benchmarks.datasets import DatasetMissing, default_data_dir, load  # noqa: E402
from dp_sklearn import DPLogisticRegression, DPOnlineClassifier, DPOnlineRegressor, DPRidge  # noqa: E402

EPSILONS = (0.5, 1.0, 2.0, 5.0)
DELTA = 1e-5
CHUNK = 100
DATASETS = ("ijcnn1", "flights", "breast_cancer", "diabetes")
VARIANTS = {"last iterate": {}, "POffL average": {"average": True}, "PIGD (implicit)": {"update": "implicit"}}


def _online_loss(ds, est, X, y):
    """Per-record loss of ``est`` (None: the zero model) on (X, y)."""
    if ds.task == "binary":
        d = np.zeros(X.shape[0]) if est is None else est.decision_function(X)
        return np.logaddexp(0.0, -np.where(y == 1, 1.0, -1.0) * d)
    pred = np.full(X.shape[0], np.mean(ds.bounds_y)) if est is None else est.predict(X)
    return (pred - y) ** 2


def _metric(ds, est, X, y):
    if ds.task == "binary":
        return roc_auc_score(y, est.decision_function(X))
    return r2_score(y, est.predict(X))


def _make(ds, epsilon, seed, **kw):
    if ds.task == "binary":
        return DPOnlineClassifier(epsilon=epsilon, data_norm=ds.data_norm, random_state=seed, **kw)
    return DPOnlineRegressor(bounds_y=ds.bounds_y, epsilon=epsilon, data_norm=ds.data_norm, random_state=seed, **kw)


def stream_regret(ds, epsilon, seed, **kw):
    """Average online loss per record over the training stream (calls of CHUNK records) and alpha_."""
    X, y = ds.X_train, ds.y_train
    est, total = _make(ds, epsilon, seed, horizon=X.shape[0], **kw), 0.0
    extra = {"classes": np.unique(y)} if ds.task == "binary" else {}
    for start in range(0, X.shape[0], CHUNK):
        Xc, yc = X[start:start + CHUNK], y[start:start + CHUNK]
        total += _online_loss(ds, est if start else None, Xc, yc).sum()
        est.partial_fit(Xc, yc, **(extra if not start else {}))
    return total / X.shape[0], est.alpha_


def hindsight_loss(ds):
    """Average loss on the stream of the best fixed (non-private, unconstrained) model."""
    if ds.task == "binary":
        m = LogisticRegression(C=1e4, max_iter=5000).fit(ds.X_train, ds.y_train)
        d = m.decision_function(ds.X_train)
        return float(np.mean(np.logaddexp(0.0, -np.where(ds.y_train == 1, 1.0, -1.0) * d)))
    m = LinearRegression().fit(ds.X_train, np.clip(ds.y_train, *ds.bounds_y))
    return float(np.mean((np.clip(m.predict(ds.X_train), *ds.bounds_y) - ds.y_train) ** 2))


def regret_table(ds, seeds):
    best = hindsight_loss(ds)
    rows, t0 = [], time.time()
    for eps in EPSILONS:
        for name, kw in VARIANTS.items():
            runs = [stream_regret(ds, eps, s, **kw) for s in range(seeds)]
            losses = [r[0] for r in runs]
            exact, _ = stream_regret(ds, np.inf, 0, **{**kw, "alpha": runs[0][1]})  # same algorithm and alpha_
            rows.append([fmt(eps, 1), name, fmt(runs[0][1], 3), fmt_ms(losses), fmt(exact),
                         fmt_ms([v - best for v in losses]), fmt(exact - best)])
    head = (f"Stream: {ds.X_train.shape[0]} records in calls of {CHUNK} (`horizon` = the stream's length); best "
            f"fixed model in hindsight: average loss {fmt(best)}. Non-private: the same algorithm and `alpha_` "
            f"at epsilon = inf. ({time.time() - t0:.0f} s)\n\n")
    return head + md_table(["epsilon", "update", "alpha_", "average online loss (DP)", "(non-private)",
                            "average regret per record (DP)", "(non-private)"], rows)


def _batch_dp(ds, eps, seed):
    if ds.task == "binary":
        return DPLogisticRegression(epsilon=eps, data_norm=ds.data_norm, random_state=seed)
    return DPRidge(epsilon=eps, data_norm=ds.data_norm, bounds_y=ds.bounds_y, random_state=seed)


def excess_risk_table(ds, seeds):
    rows = []
    for eps in EPSILONS:
        for name, kw in VARIANTS.items():
            fits = [_make(ds, eps, s, **kw).fit(ds.X_train, ds.y_train) for s in range(seeds)]
            exact = _make(ds, np.inf, 0, **{**kw, "alpha": fits[0].alpha_}).fit(ds.X_train, ds.y_train)
            base = float(np.mean(_online_loss(ds, exact, ds.X_test, ds.y_test)))
            loss = [float(np.mean(_online_loss(ds, f, ds.X_test, ds.y_test))) for f in fits]
            rows.append([fmt(eps, 1), name, fmt_ms([_metric(ds, f, ds.X_test, ds.y_test) for f in fits]),
                         fmt(_metric(ds, exact, ds.X_test, ds.y_test)), fmt_ms([v - base for v in loss])])
        batch = [_batch_dp(ds, eps, s).fit(ds.X_train, ds.y_train) for s in range(seeds)]
        rows.append([fmt(eps, 1), "batch DP (default solver)", fmt_ms([_metric(ds, f, ds.X_test, ds.y_test)
                                                                       for f in batch]), "", ""])
    default = _make(ds, np.inf, 0).fit(ds.X_train, ds.y_train)
    metric = "ROC AUC" if ds.task == "binary" else "R^2"
    return (f"Non-private: the same pass and `alpha_` at epsilon = inf. The default non-private pass "
            f"(`alpha='auto'` = 1/n) scores {fmt(_metric(ds, default, ds.X_test, ds.y_test))}.\n\n" +
            md_table(["epsilon", "one pass", f"test {metric} (DP)", f"test {metric} (non-private)",
                      "excess test loss over non-private"], rows))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="3 seeds, at most 5,000 training rows")
    parser.add_argument("--seeds", type=int, default=None)
    parser.add_argument("--data-dir", default=None)
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")
    os.environ.setdefault("PYTHONWARNINGS", "ignore")
    seeds = args.seeds or (3 if args.quick else 5)
    data_dir = args.data_dir or default_data_dir()
    max_train = 5000 if args.quick else 20000
    command = "python -m benchmarks.online" + ("".join(" " + a for a in (argv or sys.argv[1:])))
    out = ["# Private online learning: regret and excess risk", "",
           f"- command: `{command}`", f"- epsilons {list(EPSILONS)}, delta = {DELTA:g}, {seeds} seeds, "
           f"training streams of at most {max_train} records (uniform subsample, seed 0, order kept)",
           "- estimators: `DPOnlineClassifier` / `DPOnlineRegressor` defaults (alpha = 'auto', radius = 10, "
           "batch_size = 1), public data_norm / bounds_y of each dataset (benchmarks/datasets.py)",
           "- warnings (ClippingWarning, delta >= 1/n) are suppressed", ""]
    for name in DATASETS:
        try:
            ds = load(name, data_dir, quick=False)
        except DatasetMissing as exc:
            out += [f"## {name}", "", f"skipped: {exc}", ""]
            continue
        from benchmarks.datasets import _subsample

        ds = _subsample(ds, max_train, 20000)
        print(f"{ds.name}: n_train={ds.X_train.shape[0]}", flush=True)
        out += [f"## {ds.name} (p = {ds.X_train.shape[1]}; {ds.preprocessing}; {ds.subsample_note or 'full'})", "",
                "### Regret on a stream of partial_fit calls", "", regret_table(ds, seeds), "",
                "### One pass (fit): test metric and excess test loss", "", excess_risk_table(ds, seeds), ""]
    path = os.path.join(os.path.dirname(__file__), "results", "online_quick.md" if args.quick else "online.md")
    with open(path, "w") as fh:
        fh.write("\n".join(out))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
