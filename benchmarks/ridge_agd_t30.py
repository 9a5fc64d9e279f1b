"""DPRidge noisy_agd at its default T against T = 30 (and noisy_gd) where n / z >= 5000, dense synthetic data (issue 22).

``python -m benchmarks.ridge_agd_t30``; see benchmarks/results/ridge_agd_dense.md.
"""
import warnings

import numpy as np

from dp_sklearn import DPRidge
from dp_sklearn._accounting import gaussian_noise_multiplier

from benchmarks.ridge_agd_cap import syn  # the same synthetic data


S = 6
warnings.simplefilter("ignore")
for n, p, epss in ((10_000, 20, (2, 5)), (10_000, 100, (2, 5)), (20_000, 100, (1, 2, 5)), (100_000, 100, (0.5, 1, 2, 5))):
    Xtr, ytr, Xte, yte = syn(n, p)
    for eps in epss:
        d = min(1e-5, 0.1 / n)
        r = {}
        for name, kw in (("gd", dict(solver="noisy_gd")), ("agd", dict(solver="noisy_agd")),
                         ("agd_t30", dict(solver="noisy_agd", max_iter=30))):
            r[name] = np.array([DPRidge(epsilon=eps, delta=d, random_state=k, data_norm=float(np.sqrt(p)),
                                        bounds_y=(-4, 4), **kw).fit(Xtr, ytr).score(Xte, yte) for k in range(S)])
        nz = round(n / gaussian_noise_multiplier(eps, d))
        cells = [f"{k} - gd {np.mean(r[k] - r['gd']):+.4f} ({np.std(r[k] - r['gd']) / np.sqrt(S):.4f})" for k in ("agd", "agd_t30")]
        print(n, p, eps, f"n/z {nz}", f"gd {r['gd'].mean():.4f}", *cells, sep=" | ", flush=True)
