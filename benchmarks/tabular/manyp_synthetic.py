"""Caravan-shaped synthetic stand-in for diagnosis (issue 20, branch h-manyp): never a tuning set.

85 integer-coded columns (43 bands 0-9 ~ Binomial(9, p_j); 42 zero-inflated counts 1-9), a
logistic label on 6 of them (about 13% positives), 5,800 rows, 70/30 split. Prints the mean
ROC AUC and the normalized score ((AUC - 0.5) / (sklearn's - 0.5)) of the default pipeline,
the three strategies, the comparison (non-private scaler + same DP model) and two oracles.

    python -m benchmarks.tabular.manyp_synthetic --eps 1 --seeds 6
"""

import argparse
import warnings

import numpy as np


def make(seed=0, n=5800):
    r = np.random.default_rng(1000 + seed)
    p1, p2 = 43, 42
    A = r.binomial(9, r.uniform(0.1, 0.7, p1), size=(n, p1)).astype(float)
    nz, lev = r.uniform(0.01, 0.5, p2), r.integers(1, 7, p2)
    B = (r.random((n, p2)) < nz) * np.minimum(r.poisson(lev, (n, p2)) + 1, 9).astype(float)
    X = np.hstack([A, B])
    w = np.zeros(85)
    idx = r.choice(85, 6, replace=False)
    w[idx] = r.normal(0, 1, 6)
    s = ((X - X.mean(0)) / (X.std(0) + 1e-9)) @ w
    s = 2.0 * s / s.std()
    y = (r.random(n) < 1 / (1 + np.exp(-(s + np.log(0.06 / 0.94) - 0.2)))).astype(int)
    return X, y


def main(eps, seeds):
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import roc_auc_score
    from sklearn.model_selection import train_test_split
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    from dp_sklearn import DPLogisticRegression, DPStandardScaler, make_private_pipeline

    from .manyp_factories import _LatticeFloor, _Orc

    warnings.simplefilter("ignore")
    res = {}
    for seed in range(seeds):
        X, y = make(seed)
        Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, random_state=seed, stratify=y)

        def m(e=1.0):
            return DPLogisticRegression(classes=(0, 1), epsilon=e, delta=1e-5, random_state=seed)

        def priv(scaler):
            return make_private_pipeline(scaler, m(), epsilon=eps, delta=1e-5)

        stdall = type("_O", (_Orc,), {"mode": "stdall_mean"})
        cfgs = {"sklearn": make_pipeline(StandardScaler(), LogisticRegression(max_iter=2000)),
                "default": priv(DPStandardScaler(random_state=seed)),
                "comparison": make_pipeline(StandardScaler(), m(eps)),
                "oracle exact per-feature stats, model at 0.75 eps": make_pipeline(DPStandardScaler(epsilon=np.inf),
                                                                                   m(0.75 * eps)),
                "oracle robust form with exact mean/std": priv(stdall(strategy="robust", random_state=seed)),
                "lattice floor": priv(_LatticeFloor(random_state=seed))}
        for st in ("robust", "per_feature", "global"):
            cfgs[st] = priv(DPStandardScaler(strategy=st, random_state=seed))
        for k, est in cfgs.items():
            est.fit(Xtr, ytr)
            res.setdefault(k, []).append(roc_auc_score(yte, est.predict_proba(Xte)[:, 1]))
    sk = np.mean(res["sklearn"])
    for k, v in res.items():
        print(f"{k:55s} AUC {np.mean(v):.3f}  normalized {(np.mean(v) - 0.5) / (sk - 0.5):.3f}")


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--eps", type=float, default=1.0)
    ap.add_argument("--seeds", type=int, default=6)
    a = ap.parse_args()
    main(a.eps, a.seeds)
