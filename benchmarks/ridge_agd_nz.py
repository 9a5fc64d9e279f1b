"""DPRidge noisy_gd against noisy_agd on dense synthetic data across n / z (issue 22): python -m benchmarks.ridge_agd_nz; see benchmarks/results/ridge_agd_dense.md."""
import numpy as np, warnings, sys; warnings.simplefilter("ignore")
from dp_sklearn import DPRidge
from dp_sklearn._accounting import gaussian_noise_multiplier
def syn(n, p, seed=5, n_test=5000):
    rng = np.random.default_rng(seed); X = rng.standard_normal((n + n_test, p)); w = rng.standard_normal(p) / np.sqrt(p)
    y = X @ w + 0.5 * rng.standard_normal(n + n_test); return X[:n], y[:n], X[n:], y[n:]
S=10
for n, p in ((500, 10), (1000, 10), (2000, 20), (4000, 20), (10000, 20), (10000, 100), (20000, 100)):
    Xtr, ytr, Xte, yte = syn(n, p)
    for eps in (0.5, 1, 2, 5):
        d = 1e-5; r = {}; T = {}
        for s in ("noisy_gd", "noisy_agd"):
            ms = [DPRidge(epsilon=eps, delta=min(1e-5, 0.1 / n), random_state=k, data_norm=float(np.sqrt(p)), bounds_y=(-4, 4), solver=s).fit(Xtr, ytr) for k in range(S)]
            r[s] = np.array([m.score(Xte, yte) for m in ms]); T[s] = ms[0].n_iter_
        df = r["noisy_agd"] - r["noisy_gd"]
        print(n, p, eps, "n/z", round(n / gaussian_noise_multiplier(eps, min(1e-5, 0.1 / n))), T, round(r["noisy_gd"].mean(), 3), round(r["noisy_agd"].mean(), 3), "diff", round(df.mean(), 3), "se", round(df.std() / np.sqrt(S), 3), flush=True)
