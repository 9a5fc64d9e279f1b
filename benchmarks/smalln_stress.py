"""Synthetic stress of the small ``epsilon * n`` target plan: targets with little or no signal.

    PYTHONPATH=$PWD python -m benchmarks.smalln_stress [--seeds 30] [--eps 0.7 0.8 1.0]

A model shrunk toward the released median (``dp_sklearn.linear_model._auto.shrink_factor``)
fitted where the former plan predicted the median only: its noise must never drive R^2
below -1, whatever the signal. 560 rows (392 to fit), ``DPRidge()`` and ``DPHuberRegressor()``
alone, no public bound; min and median test R^2 over the seeds, ridge | huber. Targets:
``noise2`` / ``noise8``: ``100 + 10 N(0, 1)`` independent of 2 / 8 features (no signal at
all); ``zeros``: 30% exact zeros, else ``500 + 300 b`` (``b`` a linear signal plus noise; a
card balance); ``lognorm2``: ``exp(1.5 b)``. Variants: ``old`` (the "mad" plan up to 50% of
epsilon, no shrinkage), ``sqrtd_r10`` (the first candidate, ``rho = n epsilon / sqrt(n_coef)``,
``rho_0 = 10``), and ``k<rho_0>``: ``rho = n epsilon``. Never run by the tests.
"""

from __future__ import annotations

import argparse
import warnings

import numpy as np
from sklearn.metrics import r2_score
from sklearn.model_selection import train_test_split


def data(kind, seed, n=560):
    rng = np.random.default_rng(seed)
    if kind.startswith("noise"):
        X = rng.normal(size=(n, int(kind[5:])))
        y = 100 + 10 * rng.normal(size=n)
    else:
        p = 8
        X = rng.normal(size=(n, p))
        b = X @ rng.normal(size=p) / np.sqrt(p) + 0.5 * rng.normal(size=n)
        y = {"zeros": np.where(rng.random(n) < 0.3, 0.0, 500 + 300 * b), "lognorm2": np.exp(1.5 * b)}[kind]
    return train_test_split(X, y, test_size=0.3, random_state=seed)


def main(argv=None):
    import dp_sklearn.linear_model._auto as A
    import dp_sklearn.linear_model._huber as H
    import dp_sklearn.linear_model._regressor as R
    from dp_sklearn import DPHuberRegressor, DPRidge

    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=30)
    ap.add_argument("--eps", type=float, nargs="+", default=[0.7, 0.8, 1.0])
    ap.add_argument("--kinds", nargs="+", default=["noise2", "noise8", "zeros", "lognorm2"])
    args = ap.parse_args(argv)
    plain = A.shrink_factor

    def sqrtd(rho0):  # the first candidate: rho = n epsilon / sqrt(n_coef) (n_coef from the model at call time)
        def f(epsilon, n_samples):
            return plain(epsilon, n_samples) if not np.isfinite(epsilon) else (
                lambda r: r * r / (r * r + rho0 ** 2))(n_samples * epsilon / np.sqrt(f.n_coef))
        return f

    variants = {"old": (0.5, plain, 0.0), "sqrtd_r10": (0.8, sqrtd(10.0), 0.0), "k60": (0.8, plain, 60.0),
                "k90": (0.8, plain, 90.0), "k120": (0.8, plain, 120.0)}
    saved = A.SHRUNK_MAD_SHARE, H.Y_SHARE, A.SHRINK_RHO, R.shrink_factor, H.shrink_factor
    print("| target | epsilon | variant | ridge min | ridge median | huber min | huber median |\n|---|---|---|---|---|---|---|")
    try:
        for kind in args.kinds:
            for eps in args.eps:
                for name, (cap, f, rho) in variants.items():
                    A.SHRUNK_MAD_SHARE, H.Y_SHARE, A.SHRINK_RHO = cap, (0.1, cap), (rho or 1.0)
                    R.shrink_factor = H.shrink_factor = f if name != "old" else (lambda e, n: 1.0)
                    cells = []
                    for model in (DPRidge, DPHuberRegressor):
                        r2 = []
                        for s in range(args.seeds):
                            Xtr, Xte, ytr, yte = data(kind, s)
                            f.n_coef = Xtr.shape[1] + 1
                            with warnings.catch_warnings():
                                warnings.simplefilter("ignore")
                                r2.append(r2_score(yte, model(epsilon=eps, random_state=s).fit(Xtr, ytr).predict(Xte)))
                        cells += [f"{min(r2):.3f}", f"{np.median(r2):.3f}"]
                    print(f"| {kind} | {eps:g} | {name} | " + " | ".join(cells) + " |", flush=True)
    finally:
        A.SHRUNK_MAD_SHARE, H.Y_SHARE, A.SHRINK_RHO, R.shrink_factor, H.shrink_factor = saved


if __name__ == "__main__":
    main()
