"""Squared-loss ball experiment on dense synthetic regression (see ball_factories).

y = X w + 0.5 noise, X ~ N(0, 1)^(n x p), ||w|| ~ 1; DPRidge defaults except the
ball rule; bounds_y "auto" or public (+-3 sd of y from the generating model).
Prints mean/min test R^2 over seeds per (p, n, eps, bounds, rule).

    python -m benchmarks.tabular.ball_synthetic > benchmarks/tabular/results/tuning_ball_synthetic.md
"""

import sys
import warnings

import numpy as np
from sklearn.metrics import r2_score

import dp_sklearn._sets as _sets
from dp_sklearn import DPRidge

RULES = {"s2": (2.0, 0.0), "s4": (4.0, 0.0), "s8": (8.0, 0.0), "d1": (1.0, 0.5), "d2": (2.0, 0.5),
         "none": (1e6, 0.0)}


def main(ps=(20, 100), ns=(2000, 20000, 100000), epsilons=(0.5, 1.0, 2.0, 5.0), seeds=3):
    warnings.simplefilter("ignore")
    print("| p | n | eps | bounds_y | " + " | ".join(RULES) + " |")
    print("|---" * (4 + len(RULES)) + "|")
    for p in ps:
        for n in ns:
            data = []
            for s in range(seeds):
                rng = np.random.default_rng(1000 + s)
                X = rng.standard_normal((n + 5000, p))
                w = rng.standard_normal(p) / np.sqrt(p)
                y = X @ w + 0.5 * rng.standard_normal(n + 5000)
                data.append((X[:n], y[:n], X[n:], y[n:], 3 * np.sqrt(w @ w + 0.25)))
            for eps in epsilons:
                for bname in ("auto", "public"):
                    cells = []
                    for rule, (scale, power) in RULES.items():
                        old = _sets.SQUARED_BALL_SCALE, _sets._BALL_DIM_POWER
                        _sets.SQUARED_BALL_SCALE, _sets._BALL_DIM_POWER = scale, power
                        r = []
                        try:
                            for s, (Xtr, ytr, Xte, yte, hw) in enumerate(data):
                                by = "auto" if bname == "auto" else (-hw, hw)
                                m = DPRidge(epsilon=eps, delta=min(1e-5, 0.1 / n), bounds_y=by,
                                            random_state=s).fit(Xtr, ytr)
                                r.append(r2_score(yte, m.predict(Xte)))
                        finally:
                            _sets.SQUARED_BALL_SCALE, _sets._BALL_DIM_POWER = old
                        cells.append(f"{np.mean(r):.3f} ({np.min(r):.2f})")
                    print(f"| {p} | {n} | {eps:g} | {bname} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main(**({"ns": tuple(int(v) for v in sys.argv[1].split(","))} if len(sys.argv) > 1 else {}))
