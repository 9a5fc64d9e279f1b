"""dp_sklearn demo: every estimator and solver on scikit-learn's bundled data.

Run ``python -m dp_sklearn.demo`` (or the ``dp-sklearn-demo`` console script).
It fits every private estimator with every applicable solver on diabetes
(regression, test R^2) and breast_cancer (classification, test accuracy) at
several epsilons over many seeds, prints mean +- std (and the median) beside
non-private scikit-learn and the trivial predictor, runs one ``Pipeline`` +
``GridSearchCV`` example, and writes a privacy-utility plot.

Every DP row is a fully private pipeline on the raw training split:
``make_private_pipeline(DPStandardScaler(bounds=public), model, epsilon=eps)``
(25% of epsilon for the scaler's private means and variances, 75% for the model,
one ledger-composable event per step). What is public is printed in the output:
the per-feature ranges documented with each dataset (breast_cancer's DESCR
"Summary Statistics"; diabetes: every column is documented to have standard
deviation 1/sqrt(442), and +-4 of it is the clipping range), the target range
``bounds_y=(0, 400)`` (the progression score is documented in 25..346), n, p and
the hyperparameters. Everything computed from the records is private. Non-private
scikit-learn models on ``StandardScaler``-ed data are printed only as a labelled
comparison.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import time

import numpy as np
from sklearn.datasets import load_breast_cancer, load_diabetes
from sklearn.dummy import DummyClassifier, DummyRegressor
from sklearn.linear_model import Lasso, LogisticRegression, Ridge
from sklearn.model_selection import GridSearchCV, train_test_split
from sklearn.preprocessing import StandardScaler

import dp_sklearn
from dp_sklearn import DPLasso, DPLogisticRegression, DPRidge, PrivacyLedger
from dp_sklearn.pipeline import make_private_pipeline
from dp_sklearn.preprocessing import DPStandardScaler
from dp_sklearn.solvers import SOLVERS

EPSILONS = (0.5, 1.0, 2.0, 5.0)
BOUNDS_Y = (0.0, 400.0)


def _split(X, y):
    """The raw 70/30 split (random_state=0); DP rows scale it privately."""
    return tuple(train_test_split(X, y, test_size=0.3, random_state=0))


def public_bounds(task):
    """Per-feature ranges documented with the dataset (public, not computed by the demo)."""
    if task == "regression":
        bound = 4.0 / np.sqrt(442)  # documented: every column has standard deviation 1/sqrt(442)
        return (-bound, bound)
    rows = re.findall(r"^[a-z ()]+:\s+([-0-9.]+)\s+([-0-9.]+)\s*$", load_breast_cancer().DESCR, flags=re.M)
    low, high = np.array(rows, dtype=float).T
    return (low, high)


def _standardized(data):
    """Non-private comparison only: StandardScaler fitted on the training split."""
    Xtr, Xte, ytr, yte = data
    scaler = StandardScaler().fit(Xtr)
    return scaler.transform(Xtr), scaler.transform(Xte), ytr, yte


def _configs(task):
    """(label, factory(epsilon, seed)) for every estimator x applicable solver."""
    out = []
    if task == "regression":
        estimators = [("DPRidge", DPRidge, {}), ("DPLasso", DPLasso, {})]
        sparse_cls = getattr(dp_sklearn, "DPSparseLinearRegression", None)
        if sparse_cls is not None:
            estimators.append(("DPSparseLinearRegression", sparse_cls, {"n_nonzero_coefs": 5}))
        common = {"bounds_y": BOUNDS_Y}
    else:
        estimators = [("DPLogisticRegression", DPLogisticRegression, {}),
                      ("DPLogisticRegression(l1)", DPLogisticRegression, {"penalty": "l1"})]
        sparse_cls = getattr(dp_sklearn, "DPSparseLogisticRegression", None)
        if sparse_cls is not None:
            estimators.append(("DPSparseLogisticRegression", sparse_cls, {"n_nonzero_coefs": 10}))
        common = {}
    bounds = public_bounds(task)
    for name, cls, extra in estimators:
        probe = cls(**extra)
        if probe.solver == "auto":  # the default picks its solver from n, p and epsilon: its own row

            def factory(eps, seed, cls=cls, extra=extra):
                model = cls(random_state=seed, **common, **extra)
                scaler = DPStandardScaler(bounds=bounds, random_state=seed)
                return make_private_pipeline(scaler, model, epsilon=eps, delta=1e-5)

            out.append((f"{name} solver='auto' (default)", factory))
        default = probe.solver
        # the exact samplers (exponential_sampling, localization) take at most 2 coefficients: not these data
        for solver in [s for s in probe._allowed_solvers() if SOLVERS[s].max_dim is None]:
            label = f"{name} {solver}" + (" (default)" if solver == default else "")

            def factory(eps, seed, cls=cls, extra=extra, solver=solver):
                model = cls(solver=solver, random_state=seed, **common, **extra)
                scaler = DPStandardScaler(bounds=bounds, random_state=seed)
                return make_private_pipeline(scaler, model, epsilon=eps, delta=1e-5)

            out.append((label, factory))
    return out


def _evaluate(task, data, seeds, epsilons, progress):
    Xtr, Xte, ytr, yte = data
    rows = []
    for label, factory in _configs(task):
        row = {"label": label}
        for eps in epsilons:
            scores = []
            for s in range(seeds):
                try:
                    scores.append(factory(eps, s).fit(Xtr, ytr).score(Xte, yte))
                except ValueError as exc:  # a solver that cannot serve this configuration
                    scores = None
                    row["error"] = str(exc)
                    break
            row[eps] = None if scores is None else np.asarray(scores)
            progress()
        rows.append(row)
    return rows


def _baselines(task, data, seeds):
    Xtr, Xte, ytr, yte = _standardized(data)
    if task == "regression":
        dp = [DPRidge(epsilon=1.0, bounds_y=BOUNDS_Y, random_state=s).fit(Xtr, ytr).score(Xte, yte)
              for s in range(seeds)]
        return {
            "sklearn Ridge (non-private)": (Ridge().fit(Xtr, ytr).score(Xte, yte), "no epsilon"),
            "sklearn Lasso (non-private)": (Lasso(alpha=0.1).fit(Xtr, ytr).score(Xte, yte), "no epsilon"),
            "DPRidge after a NON-private StandardScaler": (float(np.median(dp)), "epsilon=1 only"),
            "trivial (mean of y)": (DummyRegressor().fit(Xtr, ytr).score(Xte, yte), "no epsilon"),
        }
    dp = [DPLogisticRegression(epsilon=1.0, random_state=s).fit(Xtr, ytr).score(Xte, yte) for s in range(seeds)]
    return {
        "sklearn LogisticRegression (non-private)": (LogisticRegression(max_iter=1000).fit(Xtr, ytr).score(Xte, yte),
                                                     "no epsilon"),
        "DPLogisticRegression after a NON-private StandardScaler": (float(np.mean(dp)), "epsilon=1 only"),
        "trivial (majority class)": (DummyClassifier().fit(Xtr, ytr).score(Xte, yte), "no epsilon"),
    }


def _print_table(title, metric, rows, baselines, epsilons, seeds, median):
    print(f"\n## {title}: test {metric}, mean +- std over {seeds} seeds" + (" [median]" if median else ""))
    head = f"{'estimator / solver':<52}" + "".join(f"{'eps=' + str(e):>27}" for e in epsilons)
    print(head)
    print("-" * len(head))
    for row in rows:
        cells = []
        for eps in epsilons:
            v = row.get(eps)
            if v is None:
                cells.append(f"{'n/a':>27}")
            else:
                cell = f"{v.mean():.3f} +- {v.std():.3f}" + (f" [{np.median(v):.3f}]" if median else "")
                cells.append(f"{cell:>27}")
        print(f"{row['label']:<52}" + "".join(cells))
    print("comparisons (one number each, not a function of the epsilon columns):")
    for name, (value, note) in baselines.items():
        print(f"  {name:<56}{value:>8.3f}  ({note})")


def _pipeline_example(data):
    Xtr, Xte, ytr, yte = data
    ledger = PrivacyLedger(delta=1e-5)  # no cap: it only totals what the search spends
    try:
        pipe = make_private_pipeline(DPStandardScaler(bounds=public_bounds("classification"), random_state=0),
                                     DPLogisticRegression(random_state=0), epsilon=1.0, delta=1e-5, ledger=ledger)
        grid = GridSearchCV(pipe, {"dplogisticregression__C": [0.1, 1.0, 10.0]}, cv=3).fit(Xtr, ytr)
        total = ledger.total_epsilon()
    finally:
        ledger.delete()
    print("\n## scikit-learn's GridSearchCV over make_private_pipeline(DPStandardScaler, DPLogisticRegression), "
          "epsilon=1 per fit, C in {0.1, 1, 10}, 3 folds")
    print(f"best params: {grid.best_params_}, test accuracy {grid.score(Xte, yte):.3f}")
    print("privacy cost of the whole search: 10 private fits (3 candidates x 3 folds + 1 refit), composed "
          f"by a PrivacyLedger to epsilon={total:.2f} at delta=1e-5, not 1.")
    print("NOT private: GridSearchCV compared noiseless validation scores, so best_params_ (the choice of C) is a")
    print("non-private release. dp_sklearn.model_selection.DPGridSearchCV selects privately "
          "(docs/model_selection.md).")


def _plot(path, results, epsilons):
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("\n(matplotlib is not installed: no plot written; pip install 'dp-sklearn[demo]')")
        return
    fig, axes = plt.subplots(1, 2, figsize=(14, 9))
    for ax, (task, metric, rows, baselines) in zip(axes, results):
        colors = iter(plt.get_cmap("tab20").colors)  # one colour per curve within a panel
        for row in rows:
            xs = [e for e in epsilons if row.get(e) is not None]
            if not xs:
                continue
            means = [row[e].mean() for e in xs]
            stds = [row[e].std() for e in xs]
            ax.errorbar(xs, means, yerr=stds, marker="o", capsize=3, label=row["label"], color=next(colors))
        styles = iter(["--", ":", "-.", (0, (1, 3))])
        for name, (value, note) in baselines.items():
            ax.axhline(value, color="k", linestyle=next(styles), linewidth=1, label=f"{name} ({note})")
        ax.set_xscale("log")
        ax.set_xticks(list(epsilons), [f"{e:g}" for e in epsilons])
        ax.minorticks_off()
        ax.set_xlabel("epsilon (delta = 1e-5)")
        ax.set_ylabel(f"test {metric}")
        ax.set_title(task)
        ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.1), ncol=1)  # below, off the curves
    axes[0].set_ylim(bottom=-0.5)
    fig.tight_layout()
    fig.savefig(path, dpi=110, bbox_inches="tight")
    print(f"\nplot written to {os.path.abspath(path)}")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=20, help="seeds per (solver, epsilon) (default 20)")
    parser.add_argument("--plot", default="dp_sklearn_demo.png",
                        help="PNG path for the privacy-utility plot (default: dp_sklearn_demo.png in the current "
                             "directory; the absolute path is printed)")
    args = parser.parse_args(argv)
    t0 = time.time()
    print(f"dp_sklearn {dp_sklearn.__version__} demo: delta = 1e-5, epsilons {list(EPSILONS)}, {args.seeds} seeds")
    print("private: every DP row is make_private_pipeline(DPStandardScaler, model) on the RAW 70% training split")
    print("         (random_state=0); the scaler's means/variances (25% of epsilon) and the model (75%) are DP.")
    print("public:  per-feature ranges documented with the data (breast_cancer DESCR min/max; diabetes +-4")
    print("         documented std = 4/sqrt(442)), diabetes bounds_y = (0, 400), data_norm = sqrt(n_features)")
    print("         (default, on the privately standardized features), n, p and hyperparameters.")
    print("comparison rows marked NON-private fit a StandardScaler on the training data (not DP).")
    reg = _split(*load_diabetes(return_X_y=True))
    clf = _split(*load_breast_cancer(return_X_y=True))
    total = (len(_configs("regression")) + len(_configs("classification"))) * len(EPSILONS)
    done = [0]

    live = sys.stderr.isatty()  # a terminal: one updating line; a log: a line at each quarter (tqdm's rule)

    def progress():
        done[0] += 1
        message = f"fitting: {done[0]}/{total} (solver, epsilon) cells, {time.time() - t0:5.1f} s"
        if live:
            print(f"\r{message}", end="", file=sys.stderr, flush=True)
        elif done[0] in {-(-total * k // 4) for k in range(1, 5)}:
            print(message, file=sys.stderr, flush=True)

    reg_rows = _evaluate("regression", reg, args.seeds, EPSILONS, progress)
    clf_rows = _evaluate("classification", clf, args.seeds, EPSILONS, progress)
    if live:
        print(file=sys.stderr)
    reg_base, clf_base = _baselines("regression", reg, args.seeds), _baselines("classification", clf, args.seeds)
    _print_table(f"diabetes (n_train={reg[0].shape[0]}, p={reg[0].shape[1]})", "R^2", reg_rows, reg_base,
                 EPSILONS, args.seeds, median=True)
    _print_table(f"breast_cancer (n_train={clf[0].shape[0]}, p={clf[0].shape[1]})", "accuracy", clf_rows,
                 clf_base, EPSILONS, args.seeds, median=False)
    _pipeline_example(clf)
    _plot(args.plot, [("diabetes", "R^2", reg_rows, reg_base), ("breast_cancer", "accuracy", clf_rows, clf_base)],
          EPSILONS)
    print(f"\ndone in {time.time() - t0:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
