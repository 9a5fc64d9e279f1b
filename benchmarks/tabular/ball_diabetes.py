"""Squared-loss ball experiment on the bundled diabetes split of tests/conftest.py.

DPRidge defaults (bounds_y "auto" and the public (0, 400)), eps 0.2-5, 20 seeds: mean and
worst test R^2 per ball rule (see ball_factories).

    python -m benchmarks.tabular.ball_diabetes > benchmarks/tabular/results/tuning_ball_diabetes.md
"""

import warnings

import numpy as np
from sklearn.datasets import load_diabetes
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler

import dp_sklearn._sets as _sets
from dp_sklearn import DPRidge

from .ball_synthetic import RULES


def main(epsilons=(0.2, 0.5, 1.0, 2.0, 5.0), seeds=20):
    warnings.simplefilter("ignore")
    X, y = load_diabetes(return_X_y=True)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, random_state=0)
    sc = StandardScaler().fit(Xtr)
    Xtr, Xte = sc.transform(Xtr), sc.transform(Xte)
    print("| eps | bounds_y | solver | " + " | ".join(RULES) + " |")
    print("|---" * (3 + len(RULES)) + "|")
    for eps in epsilons:
        for by in ("auto", (0, 400)):
            for solver in ("auto", "noisy_gd"):
                cells = []
                for scale, power in RULES.values():
                    old = _sets.SQUARED_BALL_SCALE, _sets._BALL_DIM_POWER
                    _sets.SQUARED_BALL_SCALE, _sets._BALL_DIM_POWER = scale, power
                    try:
                        r = [DPRidge(epsilon=eps, bounds_y=by, solver=solver, random_state=s).fit(Xtr, ytr)
                             .score(Xte, yte) for s in range(seeds)]
                    finally:
                        _sets.SQUARED_BALL_SCALE, _sets._BALL_DIM_POWER = old
                    cells.append(f"{np.mean(r):.3f} ({np.min(r):.2f})")
                print(f"| {eps:g} | {by} | {solver} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
