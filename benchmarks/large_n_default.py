"""Utility check of the large-n default plans (issue 11): Poisson-sampled steps vs full batches.

From n = 40,000 on, ``batch_size=None`` plans Poisson-sampled steps for ``noisy_gd``,
``mirror_descent`` and ``frank_wolfe_gaussian`` at the rate of
``dp_sklearn.solvers._common.default_sampling_rate`` (public n, T, epsilon, delta);
``batch_size="full"`` forces the former full-batch plan. This script fits both on the
full (not subsampled) real datasets large enough to switch, and on dense synthetic
data, at epsilon = 1, delta = 1e-5, and prints the test metric (mean over seeds) and
the fit time of each::

    python -m benchmarks.large_n_default [--data-dir DIR] [--seeds 3] [--synthetic 1e6]
        [--solvers noisy_gd,mirror_descent,frank_wolfe_gaussian]
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np

from . import datasets as D
from .common import md_table, setup_warnings
from .utility import _evaluate, _metric_names

DATASETS = ("adult", "ijcnn1", "flights")


def _make(task, ds, **kw):
    from dp_sklearn import DPLogisticRegression, DPRidge

    common = dict(epsilon=1.0, delta=1e-5, data_norm=ds.data_norm, **kw)
    if task == "regression":
        return DPRidge(bounds_y=ds.bounds_y, **common)
    return DPLogisticRegression(**common)


def compare(ds, seeds, solver="noisy_gd"):
    """(data, solver, n, metric, default mean, full-batch mean, diff, T, q, default s, full-batch s)."""
    from dp_sklearn.solvers._common import default_sampling_rate

    title, key = _metric_names(ds)
    n = ds.X_train.shape[0]
    out = {}
    for label, extra in (("default", {}), ("full batch", {"batch_size": "full"})):
        scores, times, T = [], [], None
        for seed in range(seeds):
            with warnings.catch_warnings():
                setup_warnings()
                est = _make(ds.task, ds, random_state=seed, solver=solver, **extra)
                t0 = time.perf_counter()
                est.fit(ds.X_train, ds.y_train)
                times.append(time.perf_counter() - t0)
            scores.append(_evaluate(est, ds)[key])
            T = est.n_iter_
        out[label] = (float(np.mean(scores)), float(np.median(times)), T)
    from dp_sklearn.solvers import _common, _frank_wolfe_gaussian, _mirror_descent

    max_rate = {"mirror_descent": _mirror_descent.MAX_SAMPLED_RATE,
                "frank_wolfe_gaussian": _frank_wolfe_gaussian.MAX_SAMPLED_RATE}.get(solver, _common.MAX_SAMPLED_RATE)
    q = default_sampling_rate(n, out["default"][2], 1.0, 1e-5, max_rate)
    return [ds.name, solver, n, title, f"{out['default'][0]:.4f}", f"{out['full batch'][0]:.4f}",
            f"{out['default'][0] - out['full batch'][0]:+.4f}", out["default"][2], f"{q:.4g}",
            f"{out['default'][1]:.2f}", f"{out['full batch'][1]:.2f}"]


def _synthetic(n, p=100, seed=0):
    rng = np.random.default_rng(seed)
    X, y = D.dense_regression(n + 100_000, p, rng)
    yb = (y > 0).astype(int)
    return D.Dataset(f"synthetic N(0,1) {n}x{p} (binary)", "binary", X[:n], yb[:n], X[n:], yb[n:],
                     data_norm=float(np.sqrt(p)), data_norm_note="", preprocessing="none", split_note="",
                     source="benchmarks.datasets.dense_regression")


def main(argv=None):
    from threadpoolctl import threadpool_limits

    ap = argparse.ArgumentParser()
    ap.add_argument("--data-dir", default="../shared/data")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--synthetic", type=float, default=0)
    ap.add_argument("--solvers", default="noisy_gd")
    ap.add_argument("--datasets", default=",".join(DATASETS))
    args = ap.parse_args(argv)
    solvers = args.solvers.split(",")
    rows = []
    with threadpool_limits(1):
        for name in args.datasets.split(","):
            try:
                ds = D.load(name, args.data_dir)
            except Exception as exc:  # noqa: BLE001
                print(f"{name}: skipped ({exc})")
                continue
            for solver in solvers:
                rows.append(compare(ds, args.seeds, solver))
                print(rows[-1], flush=True)
        if args.synthetic:
            syn = _synthetic(int(args.synthetic))
            for solver in solvers:
                rows.append(compare(syn, args.seeds, solver))
                print(rows[-1], flush=True)
    print(md_table(["data", "solver", "n_train", "metric", "default", "full batch", "diff", "T", "q (default)",
                    "default s", "full batch s"], rows))


if __name__ == "__main__":
    main()
