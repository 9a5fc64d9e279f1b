"""DPPoissonRegressor on a real count target: medpar's length of stay (``los``, the tabular suite's copy).

Checks epsilon=inf against scikit-learn's PoissonRegressor (same objective; relative coefficient
difference) and reports the mean Poisson deviance of private fits (5 seeds) against the
non-private fit and the constant mean. Command::

    python -m benchmarks.poisson_medpar > benchmarks/results/poisson_medpar.txt
"""

from __future__ import annotations

import numpy as np

FEATURES = ["hmo", "white", "age80", "type2", "type3"]


def _deviance(y, mu):
    with np.errstate(all="ignore"):
        t = np.where(y > 0, y * np.log(y / mu), 0.0)
    return 2.0 * float(np.mean(t - y + mu))


def main():
    from sklearn.linear_model import PoissonRegressor
    from sklearn.preprocessing import StandardScaler

    from benchmarks.tabular import datasets as D
    from dp_sklearn import DPPoissonRegressor

    X, died, _ = D.load("medpar")
    los = X["los"].to_numpy(float)
    F = StandardScaler().fit_transform(np.column_stack([X[c].to_numpy(float) for c in FEATURES] + [died]))
    B = 1.01 * np.linalg.norm(F, axis=1).max()
    print(f"medpar: los (length of stay, a count) on {', '.join(FEATURES)}, died; n = {len(los)}, max {los.max():g}")
    for a in (0.0, 1.0):
        sk = PoissonRegressor(alpha=a, solver="newton-cholesky", tol=1e-12, max_iter=1000).fit(F, los)
        m = DPPoissonRegressor(alpha=a, epsilon=np.inf, bounds_y=(0, 10 * los.max()), data_norm=B).fit(F, los)
        rel = np.abs(m.coef_ - sk.coef_).max() / np.abs(sk.coef_).max()
        print(f"epsilon=inf, alpha={a}: max |coef diff| / max |coef| = {rel:.2e}; "
              f"intercept {m.intercept_:.6f} vs {sk.intercept_:.6f}")
    sk = PoissonRegressor(alpha=0.0, solver="newton-cholesky").fit(F, los)
    print(f"mean deviance (training rows): scikit-learn {_deviance(los, sk.predict(F)):.3f}, "
          f"constant {_deviance(los, np.full_like(los, los.mean())):.3f}")
    for eps in (1.0, 5.0):
        for bounds in ((0, 60), "auto"):
            d = [_deviance(los, DPPoissonRegressor(alpha=0.0, epsilon=eps, bounds_y=bounds, random_state=s)
                           .fit(F, los).predict(F)) for s in range(5)]
            print(f"epsilon={eps:g} bounds_y={bounds}: mean deviance over 5 seeds {np.mean(d):.3f}")


if __name__ == "__main__":
    main()
