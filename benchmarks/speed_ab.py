"""Paired speed A/B of two source trees: default fits, interleaved, under the same load.

``python -m benchmarks.speed_ab BASE_TREE [--new NEW_TREE] [--configs EST:N:P,...] [--rounds R] [--out F] [--clock cpu]``

Each tree's ``dp_sklearn`` runs in its own warm worker process (``PYTHONPATH`` = the tree,
one BLAS thread); every configuration is fitted once by each worker as a warm-up, then in R
rounds of (base DP fit, new DP fit, scikit-learn counterpart), so both trees see the same
load. Reports the medians, the new / base time, both ratios to scikit-learn and the largest
absolute difference of the released coefficients between the trees (a speedup that keeps the
mechanism gives 0 or rounding). DP fits are the estimators' defaults with ``random_state=0`` and
``delta = min(1e-5, 0.1 / n)`` on ``datasets.dense_regression(n, p, seed 0)`` (or ``news20``),
as in ``python -m benchmarks.speed defaults``.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import subprocess
import sys

import numpy as np

_WORKER = r'''
import json, sys, time, warnings, gc
import numpy as np
warnings.simplefilter("ignore")
from threadpoolctl import threadpool_limits
threadpool_limits(1)
import dp_sklearn as dps
from sklearn.linear_model import Lasso, LogisticRegression, Ridge
from benchmarks import datasets as D
cache = {}
def data(n, p):
    if (n, p) not in cache:
        cache.clear(); gc.collect()
        if n == "news20":
            ds = D.load_news20(DATA_DIR)
            cache[(n, p)] = (ds.X_train, ds.y_train.astype(float), ds.y_train)
        else:
            X, y = D.dense_regression(n, p, np.random.default_rng(0))
            cache[(n, p)] = (X, y, (y > 0).astype(int))
    return cache[(n, p)]
SK = {"DPRidge": Ridge, "DPLasso": lambda: Lasso(alpha=0.01), "DPLogisticRegression": LogisticRegression}
print(json.dumps({"ready": dps.__file__}), flush=True)
for line in sys.stdin:
    msg = json.loads(line)
    X, yr, yc = data(msg["n"], msg["p"])
    y = yc if msg["est"] == "DPLogisticRegression" else yr
    dp = msg["side"] == "dp"
    m = getattr(dps, msg["est"])(delta=min(1e-5, 0.1 / X.shape[0]), random_state=0) if dp else SK[msg["est"]]()
    t = CLOCK(); m.fit(X, y); dt = CLOCK() - t
    coef = np.r_[np.ravel(m.coef_), np.ravel(m.intercept_)].tolist() if dp else None
    print(json.dumps({"t": dt, "coef": coef, "solver": getattr(m, "solver_", None) if dp else None,
                      "n_iter": getattr(m, "n_iter_", None) if dp else None}, default=str), flush=True)
'''

DEFAULT_CONFIGS = ",".join(f"{e}:{n}:{p}" for n in ("1e4", "1e5") for p in (20, 100)
                           for e in ("DPRidge", "DPLasso", "DPLogisticRegression"))


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m benchmarks.speed_ab")
    ap.add_argument("base", help="source tree of the base (a checkout or `git archive` of it)")
    ap.add_argument("--new", default=str(pathlib.Path(__file__).resolve().parents[1]))
    ap.add_argument("--configs", default=DEFAULT_CONFIGS, help="EST:N:P,... (N = news20 for news20)")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--data-dir", default="/work/shared/data")
    ap.add_argument("--out", default=None, help="JSON file of the rows")
    ap.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                    help="time.perf_counter (wall) or time.process_time (cpu: robust to other jobs on the cores)")
    args = ap.parse_args(argv)
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
    code = _WORKER.replace("DATA_DIR", repr(args.data_dir)).replace(
        "CLOCK()", "time.process_time()" if args.clock == "cpu" else "time.perf_counter()")
    workers = {k: subprocess.Popen([sys.executable, "-c", code], cwd=tree, env=dict(env, PYTHONPATH=tree),
                                   stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
               for k, tree in (("base", args.base), ("new", args.new))}
    for k, w in workers.items():
        print(k, json.loads(w.stdout.readline())["ready"], flush=True)

    def ask(k, **msg):
        workers[k].stdin.write(json.dumps(msg) + "\n")
        workers[k].stdin.flush()
        return json.loads(workers[k].stdout.readline())

    print(f"load average at start: {os.getloadavg()}", flush=True)
    print("| data | estimator | solver | T | base s | new s | sklearn s | new / base | base ÷ sklearn | new ÷ sklearn "
          "| max abs coef diff | reps |\n|---|---|---|---|---|---|---|---|---|---|---|---|", flush=True)
    rows = []
    for spec in args.configs.split(","):
        est, n, p = spec.split(":")
        n, p = (n if n == "news20" else int(float(n))), int(p)
        for k in workers:
            ask(k, n=n, p=p, est=est, side="dp")  # warm-up on this data
        ask("new", n=n, p=p, est=est, side="sk")
        times, last = {"base": [], "new": [], "sk": []}, {}
        for r in range(args.rounds):
            for k in ("base", "new"):
                last[k] = ask(k, n=n, p=p, est=est, side="dp")
                times[k].append(last[k]["t"])
            times["sk"].append(ask("new", n=n, p=p, est=est, side="sk")["t"])
            if r >= 1 and min(times["base"]) > 20:  # slow fits: two rounds
                break
        med = {k: float(np.median(v)) for k, v in times.items()}
        row = {"estimator": est, "data": "news20" if n == "news20" else f"{n:.0e} x {p}".replace("e+0", "e"),
               "solver": last["new"]["solver"], "T": last["new"]["n_iter"], **{f"{k}_s": v for k, v in med.items()},
               "new_over_base": med["new"] / med["base"], "base_over_sk": med["base"] / med["sk"],
               "new_over_sk": med["new"] / med["sk"], "reps": len(times["sk"]),
               "max_coef_diff": float(np.max(np.abs(np.subtract(last["base"]["coef"], last["new"]["coef"]))))}
        rows.append(row)
        print(f"| {row['data']} | {est} | {row['solver']} | {row['T']} | {med['base']:.4f} | {med['new']:.4f} | "
              f"{med['sk']:.4f} | {row['new_over_base']:.2f} | {row['base_over_sk']:.2f}x | {row['new_over_sk']:.2f}x | "
              f"{row['max_coef_diff']:.1e} | {row['reps']} |", flush=True)
    print(f"load average at end: {os.getloadavg()}", flush=True)
    for w in workers.values():
        w.stdin.close()
        w.wait()
    if args.out:
        pathlib.Path(args.out).write_text(json.dumps(rows, indent=1))
    return rows


if __name__ == "__main__":
    main()
