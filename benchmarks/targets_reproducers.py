"""bounds_y="auto" reproducers (issue 20, item 4): min and median R^2 over seeds.

    PYTHONPATH=$PWD python -m benchmarks.targets_reproducers [--seeds 30] [--eps 1 5] [--model huber]

Raw diabetes (load_diabetes(scaled=False), 70/30 split per seed, n=309) through
``make_private_pipeline(DPStandardScaler(), DPRidge(), epsilon=eps)`` and ``DPRidge`` alone
(``diabetes-scaled``: the README's ``DPStandardScaler(epsilon / 3)`` + ``DPRidge(epsilon)``
on diabetes as loaded; ``diabetes-stdscaler[-public]``: a non-private ``StandardScaler``
in front, for comparison), and synthetic targets ``y = c + s (X w + noise)`` (600 rows, 5 features: offset 5000,
scale 1e-8 and 1e8, constant y) through ``DPRidge`` alone. Never run by the tests.
"""

from __future__ import annotations

import argparse
import warnings

import numpy as np
from sklearn.datasets import load_diabetes
from sklearn.metrics import r2_score
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from dp_sklearn.pipeline import make_private_pipeline
from dp_sklearn.preprocessing import DPStandardScaler


def synthetic(kind, seed, n=600, p=5):
    rng = np.random.default_rng(1000 + seed)
    X = rng.normal(size=(n, p))
    base = X @ rng.normal(size=p) + 0.5 * rng.normal(size=n)
    y = {"offset": 5000 + base, "tiny": 1e-8 * base, "huge": 1e8 * base, "plain": base,
         "constant": np.full(n, 7.0), "skewed": np.exp(0.6 * base / base.std())}[kind]
    return train_test_split(X, y, test_size=0.3, random_state=seed)


def diabetes(seed, scaled=False):
    X, y = load_diabetes(return_X_y=True, scaled=scaled)
    return train_test_split(X, y, test_size=0.3, random_state=seed)


def score(model, split):
    Xtr, Xte, ytr, yte = split
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pred = model.fit(Xtr, ytr).predict(Xte)
    if np.ptp(yte) == 0:  # constant y: error relative to the target's magnitude
        return float(-np.sqrt(np.mean((pred - yte) ** 2)) / abs(yte[0]))
    return float(r2_score(yte, pred))


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=30)
    ap.add_argument("--eps", type=float, nargs="+", default=[1.0, 5.0])
    ap.add_argument("--cases", nargs="+", default=["diabetes-pipeline", "diabetes-ridge", "offset", "tiny", "huge",
                                                      "constant", "skewed"])
    ap.add_argument("--model", choices=["ridge", "huber"], default="ridge",
                    help="the regressor: DPRidge (bounds_y='auto') or DPHuberRegressor (huber_threshold='auto')")
    args = ap.parse_args(argv)
    if args.model == "huber":
        from dp_sklearn.linear_model import DPHuberRegressor as Model
    else:
        from dp_sklearn.linear_model import DPRidge as Model
    print("| case | epsilon | min | median | seeds < -1 |\n|---|---|---|---|---|")
    for case in args.cases:
        for eps in args.eps:
            scores = []
            for s in range(args.seeds):
                if case == "diabetes-pipeline":
                    model, split = make_private_pipeline(DPStandardScaler(random_state=s), Model(random_state=s),
                                                         epsilon=eps), diabetes(s)
                elif case == "diabetes-scaled":  # README: DPStandardScaler(eps / 3) + DPRidge(eps), as loaded
                    model = make_pipeline(DPStandardScaler(epsilon=eps / 3, delta=1e-6, random_state=s),
                                          Model(epsilon=eps, delta=1e-6, random_state=s))
                    split = diabetes(s, scaled=True)
                elif case.startswith("diabetes-stdscaler"):  # comparison: a non-private StandardScaler
                    bounds = (25.0, 346.0) if case.endswith("public") else "auto"
                    kw = {"bounds_y": bounds} if args.model == "ridge" else {}
                    model = make_pipeline(StandardScaler(), Model(epsilon=eps, random_state=s, **kw))
                    split = diabetes(s)
                elif case == "diabetes-ridge":
                    model, split = Model(epsilon=eps, random_state=s), diabetes(s)
                else:
                    model, split = Model(epsilon=eps, random_state=s), synthetic(case, s)
                scores.append(score(model, split))
            scores = np.array(scores)
            print(f"| {case} | {eps:g} | {scores.min():.3g} | {np.median(scores):.3g} | {(scores < -1).sum()} |",
                  flush=True)


if __name__ == "__main__":
    main()
