"""Factories and a table for ``class_weight="balanced"`` on the suite's imbalanced binary sets.

``balanced_factory`` is the suite's default private pipeline (``run.default_private``) with
``DPLogisticRegression(class_weight="balanced")``: same total epsilon (the class counts are a
release inside the model's share). ``weighting`` is the same with the class weights kept in
the loss (the mechanism before the intercept offset; see
``dp_sklearn/linear_model/_class_weight.py``). Run them next to the default pipeline and
tabulate minority recall and ROC AUC::

    python -m benchmarks.tabular.run --datasets default,hdma,caravan,treatment,nwtco --epsilons 1,5 \
        --factory benchmarks.tabular.class_weight:weighting \
        --factory benchmarks.tabular.class_weight:balanced_factory --out /tmp/weights_cw
    python -m benchmarks.tabular.class_weight /tmp/weights_cw.csv private weighting balanced_factory
    python -m benchmarks.tabular.class_weight --sklearn   # the non-private balanced reference
"""

from __future__ import annotations

import sys

from . import run as R

#: the imbalanced binary sets (positive share): tuning, then checking
IMBALANCED = {"default": "3.3%", "hdma": "12%", "caravan": "6.0%", "treatment": "6.9%", "nwtco": "14%"}


def balanced_factory(schema, task, epsilon, delta=R.DELTA):
    """``default_private`` with ``class_weight="balanced"`` on the logistic model."""
    pipe = R.default_private(schema, task, epsilon, delta)
    pipe.steps[-1][1].set_params(class_weight="balanced")
    return pipe


def weighting(schema, task, epsilon, delta=R.DELTA):
    """``balanced_factory`` with the class weights in the loss (no intercept offset): the comparison."""
    from dp_sklearn import DPLogisticRegression

    class LossWeightedLogisticRegression(DPLogisticRegression):
        _class_weight_offset = False

    pipe = balanced_factory(schema, task, epsilon, delta)
    name, model = pipe.steps[-1]
    pipe.steps[-1] = (name, LossWeightedLogisticRegression(**model.get_params()))
    return pipe


def _online(schema, task, epsilon, delta, cls=None, **params):
    """``default_private`` with ``DPOnlineClassifier(**params)`` (one pass, ``fit``) as the model."""
    from dp_sklearn import DPOnlineClassifier

    pipe = R.default_private(schema, task, epsilon, delta)
    name, model = pipe.steps[-1]
    pipe.steps[-1] = (name, (cls or DPOnlineClassifier)(epsilon=model.epsilon, delta=model.delta, **params))
    return pipe


def online_none(schema, task, epsilon, delta=R.DELTA):
    """The online classifier without class weights."""
    return _online(schema, task, epsilon, delta)


def online_balanced(schema, task, epsilon, delta=R.DELTA):
    """The online classifier with ``class_weight="balanced"`` (the library's route: the intercept offset)."""
    return _online(schema, task, epsilon, delta, class_weight="balanced")


def _loss_weighted_online():
    from dp_sklearn import DPOnlineClassifier

    class LossWeightedOnlineClassifier(DPOnlineClassifier):
        _class_weight_offset = False

    return LossWeightedOnlineClassifier


def online_loss_weights(schema, task, epsilon, delta=R.DELTA):
    """``online_balanced`` with the weights in the loss, clipped at the default (unit-weight) norm."""
    return _online(schema, task, epsilon, delta, cls=_loss_weighted_online(), class_weight="balanced")


def online_loss_weights_unclipped(schema, task, epsilon, delta=R.DELTA):
    """``online_loss_weights`` with the clip norm at the weight cap times the row bound (no clipping; the
    sensitivity, hence the noise, scales by the cap)."""
    from dp_sklearn.linear_model._class_weight import MAX_BALANCED_WEIGHT

    return _online(schema, task, epsilon, delta, cls=_loss_weighted_online(), class_weight="balanced",
                   clip_norm=MAX_BALANCED_WEIGHT * 2 ** 0.5)


def table(csv, configs=("private", "balanced_factory")):
    """Markdown: mean minority recall and ROC AUC per (dataset, epsilon) for each config (mean over seeds)."""
    import pandas as pd

    df = pd.read_csv(csv)
    df = df[df.config.isin(configs) & df.epsilon.notna()]
    g = df.groupby(["dataset", "epsilon", "config"]).agg(recall=("minority_recall", "mean"),
                                                         auc=("score", "mean"), n=("score", "size"))
    names = [n for n in IMBALANCED if n in set(df.dataset)]
    head = "| dataset (positives) | epsilon | " + " | ".join(
        f"recall {c} | ROC AUC {c}" for c in configs) + " |"
    lines = [head, "|" + "---|" * (2 + 2 * len(configs))]
    for name in names:
        for eps in sorted(set(df[df.dataset == name].epsilon)):
            cells = []
            for c in configs:
                row = g.loc[(name, eps, c)] if (name, eps, c) in g.index else None
                cells += ["n/a", "n/a"] if row is None else [f"{row.recall:.3f}", f"{row.auc:.3f}"]
            lines.append(f"| {name} ({IMBALANCED[name]}) | {eps:g} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def sklearn_balanced(names=tuple(IMBALANCED), seeds=R.SEEDS):
    """Non-private reference: scikit-learn's ``LogisticRegression(class_weight="balanced")`` after the
    suite's ``StandardScaler`` + public one-hot, on the suite's splits; ``{name: (recall, ROC AUC)}``."""
    import numpy as np
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    from . import datasets as D

    out = {}
    for name in names:
        X, y, _ = D.load(name)
        rec, auc = [], []
        for seed in range(seeds):
            Xtr, Xte, ytr, yte = R.split(X, y, "binary", seed)
            est = make_pipeline(R.column_transformer(D.BY_NAME[name], StandardScaler()),
                                LogisticRegression(max_iter=2000, class_weight="balanced")).fit(Xtr, ytr)
            rec.append(R.minority_recall(est, Xte, yte, "binary"))
            auc.append(R.score(est, Xte, yte, "binary")[0])
        out[name] = (float(np.mean(rec)), float(np.mean(auc)))
    return out


if __name__ == "__main__":
    if sys.argv[1] == "--sklearn":
        for name, (rec, auc) in sklearn_balanced().items():
            print(f"{name}: recall {rec:.3f}, ROC AUC {auc:.3f}")
    else:
        print(table(sys.argv[1], tuple(sys.argv[2:]) or ("private", "balanced_factory")))
