"""DPRidge noisy_agd: T = min(30, default) with a later averaging window against today's default and noisy_gd (issue 22).

Dense synthetic data where n / z >= ``SQUARED_MIN_N_OVER_Z`` (every cell; noisy_agd forced, also at
1e5 x 20 where noisy_newton is the default). Variants, all on the same seeds:
``gd`` noisy_gd; ``agd`` noisy_agd at its default T averaging the last half (the default before the cap);
``t30_a09`` / ``t30_a067`` T = min(30, default T) averaging the last tenth / last third (other caps
with ``CAP,CAP``).
The averaging window is set through ``SQUARED_AVERAGE_FROM`` (read at planning time) and T through
``max_iter``, so the script runs on any tree. ``python -m benchmarks.ridge_agd_cap [SEEDS [CAP,CAP,... [p100]]]``;
see benchmarks/results/ridge_agd_dense.md.
"""
import sys
import warnings

import numpy as np

from dp_sklearn import DPRidge
from dp_sklearn._accounting import gaussian_noise_multiplier
from dp_sklearn.solvers import _noisy_agd as A



def syn(n, p, seed=5, n_test=5000):
    """The data of benchmarks/ridge_agd_t30.py."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n + n_test, p))
    w = rng.standard_normal(p) / np.sqrt(p)
    y = X @ w + 0.5 * rng.standard_normal(n + n_test)
    return X[:n], y[:n], X[n:], y[n:]

CELLS = ((10_000, 20, (2, 5)), (10_000, 100, (2, 5)), (20_000, 100, (1, 2, 5)),
         (100_000, 20, (0.5, 1, 2, 5)), (100_000, 100, (0.5, 1, 2, 5)))


def main(seeds=5, caps=(30,), cells=CELLS):
    warnings.simplefilter("ignore")
    for n, p, epss in cells:
        Xtr, ytr, Xte, yte = syn(n, p)
        for eps in epss:
            d = min(1e-5, 0.1 / n)
            T0 = A.default_n_iter(n, eps, d)  # the uncapped default T
            variants = (("gd", dict(solver="noisy_gd"), 0.5), ("agd", dict(solver="noisy_agd", max_iter=T0), 0.5))
            variants += tuple((f"t{c}_a{a}", dict(solver="noisy_agd", max_iter=min(c, T0)), share)
                              for c in caps for a, share in (("09", 0.9), ("067", 2.0 / 3.0)))
            r, T = {}, {}
            for name, kw, av in variants:
                old = A.SQUARED_AVERAGE_FROM
                A.SQUARED_AVERAGE_FROM = av
                try:
                    ms = [DPRidge(epsilon=eps, delta=d, random_state=k, data_norm=float(np.sqrt(p)), bounds_y=(-4, 4),
                                  **kw).fit(Xtr, ytr) for k in range(seeds)]
                finally:
                    A.SQUARED_AVERAGE_FROM = old
                r[name] = np.array([m.score(Xte, yte) for m in ms])
                T[name] = ms[0].n_iter_
            nz = round(n / gaussian_noise_multiplier(eps, d))
            se = lambda x: np.std(x, ddof=1) / np.sqrt(seeds)
            cells = [f"{k} T={T[k]} - agd {np.mean(r[k] - r['agd']):+.4f} ({se(r[k] - r['agd']):.4f}), - gd {np.mean(r[k] - r['gd']):+.4f} ({se(r[k] - r['gd']):.4f})"
                     for k in r if k not in ("gd", "agd")]
            print(n, p, eps, f"n/z {nz}", f"gd T={T['gd']} {r['gd'].mean():.4f}",
                  f"agd T={T['agd']} {r['agd'].mean():.4f} - gd {np.mean(r['agd'] - r['gd']):+.4f} ({se(r['agd'] - r['gd']):.4f})",
                  *cells, sep=" | ", flush=True)


if __name__ == "__main__":
    # python -m benchmarks.ridge_agd_cap [SEEDS [CAP,CAP,... [p100]]]: p100 runs the 100-column cells only
    caps = tuple(int(c) for c in sys.argv[2].split(",")) if len(sys.argv) > 2 else (30,)
    cells = tuple(c for c in CELLS if c[1] == 100) if len(sys.argv) > 3 and sys.argv[3] == "p100" else CELLS
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 5, caps, cells)
