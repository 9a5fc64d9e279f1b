"""Factories and a table for ``class_weight="balanced"`` on the suite's imbalanced binary sets.

``balanced_factory`` is the suite's default private pipeline (``run.default_private``) with
``DPLogisticRegression(class_weight="balanced")``: same total epsilon (the class counts are a
release inside the model's share). Run it next to the default pipeline and tabulate minority
recall and ROC AUC::

    python -m benchmarks.tabular.run --datasets default,hdma --epsilons 1,5 \
        --factory benchmarks.tabular.class_weight:balanced_factory --out /tmp/weights_cw
    python -m benchmarks.tabular.class_weight /tmp/weights_cw.csv
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


if __name__ == "__main__":
    print(table(sys.argv[1], tuple(sys.argv[2:]) or ("private", "balanced_factory")))
