"""Paired differences of the normalized score between two configurations of one suite run.

``python -m benchmarks.tabular.paired RESULTS.csv CANDIDATE BASELINE`` prints, per dataset and
epsilon, the mean over seeds of ``(score_candidate - score_baseline) / (sklearn - trivial)``
(the difference of the normalized scores, seed by seed on the same split) and, per epsilon, the
mean over datasets with its standard error (from the seed variance).
"""

import sys

import numpy as np
import pandas as pd

from .run import TRIVIAL_SCORE


def paired(csv, candidate, baseline, datasets=None):
    df = pd.read_csv(csv)
    if datasets:
        df = df[df.dataset.isin(datasets)]
    ref = df[df.config == "sklearn"].groupby("dataset").score.mean()
    task = df.groupby("dataset").task.first()
    rows = []
    for (name, eps), g in df[df.epsilon.notna()].groupby(["dataset", "epsilon"]):
        a = g[g.config == candidate].set_index("seed").score
        b = g[g.config == baseline].set_index("seed").score
        d = ((a - b).dropna()) / (ref[name] - TRIVIAL_SCORE[task[name]])
        if len(d):
            rows.append(dict(dataset=name, epsilon=eps, diff=d.mean(), se=d.std(ddof=1) / np.sqrt(len(d)), n=len(d)))
    out = pd.DataFrame(rows)
    total = out.groupby("epsilon").apply(
        lambda g: pd.Series(dict(diff=g["diff"].mean(), se=np.sqrt((g.se ** 2).sum()) / len(g))), include_groups=False)
    return out, total


if __name__ == "__main__":
    per, total = paired(*sys.argv[1:4], datasets=sys.argv[4].split(",") if len(sys.argv) > 4 else None)
    print(per.pivot(index="dataset", columns="epsilon", values="diff").round(3).to_string())
    print(total.round(3).to_string())
