"""Small synthetic data shared by the estimator test files (imported by name; tests/ is on sys.path)."""

import numpy as np

from dp_sklearn import DPLogisticRegression


def small_data(est_cls, n=60, p=4, seed=0):
    """(X, y) of n Gaussian rows: labels from the first feature for DPLogisticRegression, else a linear target."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p))
    if est_cls is DPLogisticRegression:
        y = (X[:, 0] + 0.3 * rng.normal(size=n) > 0).astype(int)
    else:
        y = X @ np.array([0.5, -0.3, 0.0, 0.2])[:p] + 0.1 * rng.normal(size=n)
    return X, y
