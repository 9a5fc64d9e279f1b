"""Seed-paper mechanisms (issue 13): tight vs paper objective perturbation, Algorithm 4.2, exponential sampling,
localization.

Usage: ``python -m benchmarks.seeds [n_seeds]`` from the repository root. Prints Markdown tables.
Data: breast_cancer and diabetes, 70/30 split (random_state=0), features standardized on the
training part (as in ``tests/conftest.py``); estimator defaults, delta = 1e-5.
"""

from __future__ import annotations

import sys
import warnings

import numpy as np
from sklearn.datasets import load_breast_cancer, load_diabetes
from sklearn.metrics import r2_score
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler

import dp_sklearn as dps

EPSILONS = (0.5, 1.0, 2.0)
BOUNDS_Y = (25.0, 346.0)


def _split(X, y):
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, random_state=0)
    sc = StandardScaler().fit(Xtr)
    return sc.transform(Xtr), sc.transform(Xte), ytr, yte


def _cancer(epsilon, seeds, **kw):
    Xtr, Xte, ytr, yte = _split(*load_breast_cancer(return_X_y=True))
    return np.mean([dps.DPLogisticRegression(epsilon=epsilon, random_state=s, **kw).fit(Xtr, ytr).score(Xte, yte)
                    for s in range(seeds)])


def _diabetes(epsilon, seeds, **kw):
    Xtr, Xte, ytr, yte = _split(*load_diabetes(return_X_y=True))
    return np.median([r2_score(yte, dps.DPRidge(epsilon=epsilon, bounds_y=BOUNDS_Y, random_state=s, **kw)
                               .fit(Xtr, ytr).predict(Xte)) for s in range(seeds)])


def objective_perturbation_table(seeds):
    rows = ["| epsilon | cancer paper | cancer tight | cancer noisy_gd | diabetes paper | diabetes tight "
            "| diabetes Alg 4.2 (ddr) | diabetes ssp | diabetes noisy_gd |", "|---" * 9 + "|"]
    for eps in EPSILONS:
        c = [_cancer(eps, seeds, solver="objective_perturbation", accounting=a) for a in ("paper", "tight")]
        c.append(_cancer(eps, seeds, solver="noisy_gd"))
        d = [_diabetes(eps, seeds, solver="objective_perturbation", accounting=a) for a in ("paper", "tight")]
        d += [_diabetes(eps, seeds, solver=s) for s in ("objective_perturbation_ddr", "ssp", "noisy_gd")]
        rows.append(f"| {eps} | " + " | ".join(f"{v:.3f}" for v in c + d) + " |")
    return "\n".join(rows)


def exponential_sampling_table(seeds):
    """1 coefficient (breast_cancer's first feature / 4, clipped to [-1, 1]), logistic loss, ball of radius 8.

    Reported: mean training excess risk (mean logistic loss minus its minimum over the ball),
    beside BST 2014 Theorem III.2's scale p L ||C|| / (epsilon n) (p = 1, L = 1, ||C|| = 16).
    """
    from dp_sklearn._data import Problem
    from dp_sklearn._losses import LogisticLoss
    from dp_sklearn._sets import L2Ball
    from dp_sklearn.solvers._exponential_sampling import exponential_sampling

    Xtr = np.clip(_split(*load_breast_cancer(return_X_y=True))[0][:, :1] / 4.0, -1, 1)
    ytr = np.where(_split(*load_breast_cancer(return_X_y=True))[2] > 0, 1.0, -1.0)
    prob = Problem(Xtr, ytr, LogisticLoss(), 1.0, 1.0, np.abs(Xtr[:, 0]), 0.0)
    grid = np.linspace(-8, 8, 16001)
    risk = LogisticLoss().phi(np.outer(Xtr[:, 0], grid), ytr[:, None]).mean(axis=0)
    rows = ["| epsilon | mean excess risk | p L diam(C) / (epsilon n) |", "|---|---|---|"]
    for eps in EPSILONS:
        th = [exponential_sampling(prob, L2Ball(8.0), epsilon=eps, rng=np.random.default_rng(s)).coef[0]
              for s in range(seeds)]
        excess = np.mean(np.interp(th, grid, risk)) - risk.min()
        rows.append(f"| {eps} | {excess:.4f} | {16.0 / (eps * len(ytr)):.4f} |")
    return "\n".join(rows)


def _cancer_one_coefficient():
    """breast_cancer's first feature / 4, clipped to [-1, 1] (no intercept), labels in {-1, +1}: a Problem."""
    from dp_sklearn._data import Problem
    from dp_sklearn._losses import LogisticLoss

    Xtr, _, ytr, _ = _split(*load_breast_cancer(return_X_y=True))
    X = np.clip(Xtr[:, :1] / 4.0, -1, 1)
    return Problem(X, np.where(ytr > 0, 1.0, -1.0), LogisticLoss(), 1.0, 1.0, np.abs(X[:, 0]), 0.0)


#: strong convexity of the localization benchmark's objective (above every mechanism's default at eps >= 0.5)
LOCALIZATION_L2 = 0.15


def localization_table(seeds, l2_reg=LOCALIZATION_L2, radius=8.0):
    """Excess risk of BST 2014 Algorithm 4 (localization) vs Algorithm 2 vs Algorithm 3, pure epsilon-DP.

    One objective for the three: J(theta) = mean logistic loss + (l2_reg / 2) theta^2 over
    the ball |theta| <= radius, on the 1-coefficient breast_cancer problem (n = 398);
    reported: mean over seeds of J(theta_priv) - min J. Output perturbation (delta = 0,
    norm-Gamma noise) is projected onto the ball (post-processing).
    """
    from dp_sklearn._exact import minimize
    from dp_sklearn._logconcave import glm_objective
    from dp_sklearn._sets import L2Ball
    from dp_sklearn.solvers import SOLVERS

    prob, ball = _cancer_one_coefficient(), L2Ball(radius)
    F = glm_objective(prob, l2_reg)
    best = F(minimize(prob, ball, l2_reg=l2_reg, tol=1e-12)[None, :])[0]
    rows = ["| epsilon | localization (Alg 4) | exponential sampling (Alg 2) | output perturbation (Alg 3) "
            "| theta = 0 |", "|---" * 5 + "|"]
    for eps in EPSILONS:
        cells = []
        for name in ("localization", "exponential_sampling", "output_perturbation"):
            constraint = ball if name != "output_perturbation" else None
            th = np.array([ball.project(SOLVERS[name].func(prob, constraint, epsilon=eps, delta=0.0, l2_reg=l2_reg,
                                                           rng=np.random.default_rng(s)).coef) for s in range(seeds)])
            cells.append(np.mean(F(th) - best) / prob.n)
        cells.append((F(np.zeros((1, 1)))[0] - best) / prob.n)
        rows.append(f"| {eps} | " + " | ".join(f"{v:.5f}" for v in cells) + " |")
    return "\n".join(rows)


def localization_estimator_table(seeds):
    """Estimator defaults on one feature plus the intercept (2 coefficients): diabetes' bmi (median
    test R^2, bounds_y = (25, 346)) and breast_cancer's worst perimeter (mean test accuracy).
    Pure DP (delta = 0) for the three pure mechanisms, delta = 1e-5 for noisy_gd."""
    solvers = ("localization", "exponential_sampling", "output_perturbation", "noisy_gd")
    data = {}
    for name, loader, col in (("diabetes", load_diabetes, 2), ("cancer", load_breast_cancer, 22)):
        X, y = loader(return_X_y=True)
        data[name] = _split(X[:, [col]], y)
    rows = ["| epsilon | data | " + " | ".join(solvers) + " |", "|---" * (2 + len(solvers)) + "|"]
    for eps in EPSILONS:
        for name, (Xtr, Xte, ytr, yte) in data.items():
            cells = []
            for solver in solvers:
                kw = dict(solver=solver, epsilon=eps, delta=1e-5 if solver == "noisy_gd" else 0.0)
                if name == "diabetes":
                    cells.append(np.median([dps.DPRidge(bounds_y=BOUNDS_Y, random_state=k, **kw).fit(Xtr, ytr)
                                            .score(Xte, yte) for k in range(seeds)]))
                else:
                    cells.append(np.mean([dps.DPLogisticRegression(random_state=k, **kw).fit(Xtr, ytr).score(Xte, yte)
                                          for k in range(seeds)]))
            rows.append(f"| {eps} | {name} | " + " | ".join(f"{v:.3f}" for v in cells) + " |")
    return "\n".join(rows)


def main(seeds=10):
    warnings.simplefilter("ignore")
    print(f"## Objective perturbation ({seeds} seeds; cancer: mean test accuracy, diabetes: median test R^2)\n")
    print(objective_perturbation_table(seeds))
    print(f"\n## Exponential sampling, 1 coefficient ({seeds} seeds)\n")
    print(exponential_sampling_table(seeds))
    print(f"\n## Localization vs exponential sampling vs output perturbation, 1 coefficient ({seeds} seeds)\n")
    print(localization_table(seeds))
    print(f"\n## Localization at the estimator defaults, 1 feature + intercept ({seeds} seeds)\n")
    print(localization_estimator_table(seeds))


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 10)
