"""Fit every estimator x solver with fixed seeds; save or compare coef_ (refactor check).

Usage: python benchmarks/refactor_numbers.py save OUT.npz | compare REF.npz
"""
import sys
import warnings

import numpy as np
import scipy.sparse as sp
from sklearn.datasets import load_breast_cancer, load_diabetes, load_iris
from sklearn.preprocessing import StandardScaler

import dp_sklearn as dps

warnings.simplefilter("ignore")
Xd, yd = load_diabetes(return_X_y=True)
Xd = StandardScaler().fit_transform(Xd)
Xb, yb = load_breast_cancer(return_X_y=True)
Xb = StandardScaler().fit_transform(Xb)
Xi, yi = load_iris(return_X_y=True)
Xi = StandardScaler().fit_transform(Xi)
B = (25.0, 346.0)

CASES = []
for s in ["noisy_gd", "output_perturbation", "objective_perturbation", "mirror_descent", "frank_wolfe_gaussian"]:
    CASES.append((f"ridge-{s}", lambda s=s: dps.DPRidge(solver=s, bounds_y=B, random_state=0), "d"))
    CASES.append((f"ridge-{s}-noint", lambda s=s: dps.DPRidge(solver=s, bounds_y=B, fit_intercept=False,
                                                               random_state=1), "d"))
    CASES.append((f"ridge-{s}-inf", lambda s=s: dps.DPRidge(solver=s, bounds_y=B, epsilon=np.inf, random_state=0), "d"))
    CASES.append((f"ridge-{s}-csr", lambda s=s: dps.DPRidge(solver=s, bounds_y=B, random_state=0), "dcsr"))
for s in ["output_perturbation", "objective_perturbation"]:
    CASES.append((f"ridge-{s}-pure", lambda s=s: dps.DPRidge(solver=s, bounds_y=B, delta=0, random_state=0), "d"))
for s in ["noisy_gd", "mirror_descent", "frank_wolfe_gaussian"]:
    CASES.append((f"ridge-{s}-paper", lambda s=s: dps.DPRidge(solver=s, bounds_y=B, accounting="paper",
                                                               random_state=0), "d"))
CASES.append(("ridge-batch", lambda: dps.DPRidge(bounds_y=B, batch_size=64, random_state=0), "d"))
for s in ["frank_wolfe", "noisy_gd", "mirror_descent"]:
    CASES.append((f"lasso-{s}", lambda s=s: dps.DPLasso(solver=s, bounds_y=B, random_state=0), "d"))
    CASES.append((f"lasso-{s}-ordinf", lambda s=s: dps.DPLasso(solver=s, bounds_y=B, data_norm=3,
                                                                data_norm_ord=np.inf, random_state=0), "d"))
    CASES.append((f"lasso-{s}-inf", lambda s=s: dps.DPLasso(solver=s, bounds_y=B, epsilon=np.inf, random_state=0), "d"))
CASES.append(("lasso-fw-pure", lambda: dps.DPLasso(bounds_y=B, delta=0, random_state=0), "d"))
CASES.append(("lasso-fw-paper", lambda: dps.DPLasso(bounds_y=B, accounting="paper", random_state=0), "d"))
CASES.append(("lasso-batch", lambda: dps.DPLasso(solver="noisy_gd", bounds_y=B, batch_size=50, random_state=0), "d"))
for s in ["auto", "noisy_gd", "output_perturbation", "objective_perturbation", "mirror_descent",
          "frank_wolfe_gaussian"]:
    CASES.append((f"logreg-{s}", lambda s=s: dps.DPLogisticRegression(solver=s, random_state=0), "b"))
    CASES.append((f"logreg-{s}-multi", lambda s=s: dps.DPLogisticRegression(solver=s, random_state=0), "i"))
    CASES.append((f"logreg-{s}-inf", lambda s=s: dps.DPLogisticRegression(solver=s, epsilon=np.inf,
                                                                          random_state=0), "b"))
for s in ["frank_wolfe", "noisy_gd", "mirror_descent"]:
    CASES.append((f"logreg-l1-{s}", lambda s=s: dps.DPLogisticRegression(penalty="l1", solver=s, random_state=0), "b"))
CASES.append(("logreg-batch", lambda: dps.DPLogisticRegression(batch_size=100, random_state=0), "b"))
for s in ["ight", "two_stage"]:
    CASES.append((f"sparse-{s}", lambda s=s: dps.DPSparseLinearRegression(3, solver=s, bounds_y=B, random_state=0), "d"))
    CASES.append((f"sparse-{s}-inf", lambda s=s: dps.DPSparseLinearRegression(3, solver=s, bounds_y=B, epsilon=np.inf,
                                                                              random_state=0), "d"))
    CASES.append((f"sparse-{s}-paper", lambda s=s: dps.DPSparseLinearRegression(3, solver=s, bounds_y=B,
                                                                                accounting="paper", random_state=0), "d"))
    CASES.append((f"sparse-{s}-csr", lambda s=s: dps.DPSparseLinearRegression(3, solver=s, bounds_y=B,
                                                                              random_state=0), "dcsr"))
    CASES.append((f"sparselog-{s}", lambda s=s: dps.DPSparseLogisticRegression(5, solver=s, random_state=0), "b"))
    CASES.append((f"sparselog-{s}-inf", lambda s=s: dps.DPSparseLogisticRegression(5, solver=s, epsilon=np.inf,
                                                                                   random_state=0), "b"))
CASES.append(("sparse-two_stage-pure", lambda: dps.DPSparseLinearRegression(3, solver="two_stage", bounds_y=B,
                                                                           delta=0, random_state=0), "d"))
CASES.append(("ridge-rs", lambda: dps.DPRidge(bounds_y=B, random_state=np.random.default_rng(5)), "d"))

DATA = {"d": (Xd, yd), "dcsr": (sp.csr_matrix(Xd), yd), "b": (Xb, yb), "i": (Xi, yi)}


def run():
    out = {}
    for name, make, data in CASES:
        X, y = DATA[data]
        est = make().fit(X, y)
        out[name + ":coef"] = np.asarray(est.coef_, dtype=float)
        out[name + ":intercept"] = np.atleast_1d(np.asarray(est.intercept_, dtype=float))
        out[name + ":eps"] = np.array([est.epsilon_, est.delta_, est.n_iter_])
        out[name + ":event"] = np.array([repr(est.dp_event_)])
    return out


if __name__ == "__main__":
    mode, path = sys.argv[1], sys.argv[2]
    res = run()
    if mode == "save":
        np.savez(path, **res)
        print(len(res), "arrays saved")
    else:
        ref = np.load(path)
        bad = 0
        for k in ref.files:
            a, b = ref[k], res.get(k)
            if b is None:
                print("MISSING", k); bad += 1
            elif a.dtype.kind in "US":
                if a[0] != b[0]:
                    print("EVENT DIFF", k, a[0][:200], "|", b[0][:200]); bad += 1
            elif a.shape != b.shape or not np.allclose(a, b, rtol=0, atol=1e-10):
                print("DIFF", k, np.max(np.abs(a - b)) if a.shape == b.shape else (a.shape, b.shape)); bad += 1
        print(f"{len(ref.files)} compared, {bad} differ")
