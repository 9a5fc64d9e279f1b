"""Rows of the public tabular suite for the issue-21 estimators (run against the suite's harness).

The suite (``benchmarks/tabular/`` of the ``suite`` branch) is loaded from ``--suite``; this
tree's ``dp_sklearn`` is imported first, so the rows measure this branch. Every row is a fully
private pipeline shaped as the suite's ``default_private`` (DPStandardScaler on numeric
columns, public one-hot on categorical ones, the library's budget shares), with the model
swapped:

* ``huber``: ``DPHuberRegressor()`` -- no target bound (the rows in
  ``benchmarks/results/family_issue21.md`` now come from ``benchmarks/huber_factories.py`` on this
  tree's harness, both halves).
* ``ridge_range``: ``DPRidge(bounds_y=<range>)`` with the target range of the whole table
  passed as if public (the most favourable public range; an oracle labelled as such).
* ``quantile`` (``--rows quantile``): ``DPQuantileRegressor()`` (median regression, no target
  bound; centre and smoothing width private, 20%); the reference "sklearn" column is
  scikit-learn's ``QuantileRegressor(quantile=0.5, alpha=0, solver="highs")`` after
  ``StandardScaler``, the trivial one the training median, and the score is Koenker &
  Machado's (1999) R1 = 1 - pinball loss / pinball loss of the test median (0: the constant).
* ``balanced`` / ``unweighted``: ``DPLogisticRegression(class_weight="balanced" | None)``.

Command (bounded; CPU is shared)::

    timeout 3000 python benchmarks/family_suite_rows.py --suite /work/wt/suite --rows regression \
        --epsilons 1 --seeds 5 --out /tmp/family_regression
    timeout 3000 python benchmarks/family_suite_rows.py --suite . --rows quantile --half tuning \
        --epsilons 1,5 --seeds 2 --out /tmp/family_quantile
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(HERE))
import dp_sklearn  # noqa: E402,F401  (this branch's library, imported before the suite's tree)

RANGES = {}


def _suite(path):
    for mod in [m for m in sys.modules if m == "benchmarks" or m.startswith("benchmarks.")]:
        del sys.modules[mod]
    sys.path.insert(0, str(Path(path).resolve()))
    from benchmarks.tabular import datasets, run
    return datasets, run


def _pipeline(R, schema, model, epsilon, delta=1e-5):
    from dp_sklearn import DPStandardScaler, budget_split, make_private_pipeline
    from dp_sklearn.pipeline import DEFAULT_MODEL_SHARE

    ct = R.column_transformer(schema, DPStandardScaler())
    pipe = make_private_pipeline(ct, model, epsilon=epsilon, delta=delta)
    if not schema.numeric or len(budget_split(pipe)) > 1:
        return pipe
    share = DEFAULT_MODEL_SHARE  # as the suite's default_private: split by hand when nested steps are not budgeted
    pipe = make_private_pipeline(ct, model, epsilon=share * epsilon, delta=delta / 2)
    pipe.set_params(columntransformer__num__epsilon=(1.0 - share) * epsilon, columntransformer__num__delta=delta / 4)
    return pipe


def _nonprivate_scaler(R, schema, task, epsilon):
    """The suite's labelled non-private-scaler comparison as a plain scikit-learn Pipeline (this branch's
    make_private_pipeline refuses a non-private scaler, as it should)."""
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    model = R.dp_model(schema, task).set_params(epsilon=epsilon)
    return make_pipeline(R.column_transformer(schema, StandardScaler()), model)


def _auc_and_minority_recall(est, X, y, task):
    """``(ROC AUC, recall of class 1)``: the positive class is the minority on the imbalanced sets."""
    from sklearn.metrics import recall_score, roc_auc_score

    proba = np.asarray(est.predict_proba(X), dtype=float)
    classes = list(est.classes_)
    recall = float(recall_score(y, est.predict(X), pos_label=1, zero_division=0.0))
    if not np.all(np.isfinite(proba)):
        return float("nan"), recall
    return float(roc_auc_score(y, proba[:, classes.index(1)])), recall


def _pinball_r1(est, X, y, task, quantile=0.5):
    """Koenker & Machado's R1: 1 - sum rho_q(y - pred) / sum rho_q(y - test quantile)."""
    from dp_sklearn._losses._pinball import pinball

    y = np.asarray(y, dtype=float)
    ours = float(np.sum(pinball(y - est.predict(X), quantile)))
    const = float(np.sum(pinball(y - np.quantile(y, quantile), quantile)))
    return 1.0 - ours / const, None


def _quantile_references(R):
    """The quantile rows' reference (scikit-learn's QuantileRegressor), trivial model (the median) and score."""
    from sklearn.dummy import DummyRegressor
    from sklearn.linear_model import QuantileRegressor
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    from dp_sklearn import DPQuantileRegressor

    R.sklearn_model = lambda schema, task: make_pipeline(
        R.column_transformer(schema, StandardScaler()), QuantileRegressor(quantile=0.5, alpha=0.0, solver="highs"))
    R.trivial_model = lambda task: DummyRegressor(strategy="median")
    R.score = _pinball_r1
    R.nonprivate_scaler = lambda schema, task, epsilon, delta=1e-5: make_pipeline(
        R.column_transformer(schema, StandardScaler()), DPQuantileRegressor(epsilon=epsilon, delta=delta))


def main(argv=None):
    parser = argparse.ArgumentParser()
    parser.add_argument("--suite", required=True)
    parser.add_argument("--rows", choices=["regression", "imbalanced", "quantile"], required=True)
    parser.add_argument("--datasets", default=None)
    parser.add_argument("--half", default="checking", choices=["tuning", "checking"])
    parser.add_argument("--epsilons", default="1")
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--out", default=None)
    args = parser.parse_args(argv)
    D, R = _suite(args.suite)
    R.nonprivate_scaler = lambda schema, task, epsilon, delta=1e-5: _nonprivate_scaler(R, schema, task, epsilon)
    from dp_sklearn import DPHuberRegressor, DPLogisticRegression, DPQuantileRegressor, DPRidge

    if args.rows == "regression":
        names = args.datasets.split(",") if args.datasets else [n for n in D.CHECKING
                                                                if D.BY_NAME[n].task == "regression"]
        for name in names:
            _, y, _ = D.load(name)
            RANGES[name] = (float(min(y)), float(max(y)))
        factories = {
            "huber": lambda s, t, e: _pipeline(R, s, DPHuberRegressor(), e),
            "ridge_range": lambda s, t, e: _pipeline(R, s, DPRidge(bounds_y=RANGES[s.name]), e),
        }
    elif args.rows == "quantile":
        half = D.TUNING if args.half == "tuning" else D.CHECKING
        names = args.datasets.split(",") if args.datasets else [n for n in half if D.BY_NAME[n].task == "regression"]
        _quantile_references(R)
        factories = {"quantile": lambda s, t, e: _pipeline(R, s, DPQuantileRegressor(), e)}
    else:
        # the "accuracy" column of the records holds the minority (positive-class) recall here
        R.score = _auc_and_minority_recall
        names = args.datasets.split(",") if args.datasets else ["treatment", "caravan", "nwtco"]
        factories = {
            "unweighted": lambda s, t, e: _pipeline(R, s, DPLogisticRegression(classes=(0, 1)), e),
            "balanced": lambda s, t, e: _pipeline(R, s, DPLogisticRegression(classes=(0, 1),
                                                                             class_weight="balanced"), e),
        }
    epsilons = tuple(float(e) for e in args.epsilons.split(","))
    records, summ, md = R.run(names=names, epsilons=epsilons, seeds=args.seeds, factories=factories, n_jobs=1,
                              out=args.out, command=" ".join(sys.argv), verbose=False)
    print(md)
    return records


if __name__ == "__main__":
    main()
