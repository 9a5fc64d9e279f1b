"""DPRidge solver="auto" against noisy_agd (default T and T capped at 30) on dense synthetic data; see benchmarks/results/ridge_agd_dense.md."""
import numpy as np, warnings, sys; warnings.simplefilter("ignore")
from dp_sklearn import DPRidge
from dp_sklearn.solvers._noisy_agd import default_n_iter
def syn(n, p, seed=5, n_test=5000):
    rng = np.random.default_rng(seed); X = rng.standard_normal((n + n_test, p)); w = rng.standard_normal(p) / np.sqrt(p)
    y = X @ w + 0.5 * rng.standard_normal(n + n_test); return X[:n], y[:n], X[n:], y[n:]
seeds = int(sys.argv[1]) if len(sys.argv) > 1 else 3
for n, p in ((10_000, 20), (10_000, 100), (100_000, 20), (100_000, 100)):
    Xtr, ytr, Xte, yte = syn(n, p)
    for eps in (0.5, 1, 2, 5):
        d = min(1e-5, 0.1 / n); res = {}
        for name, kw in (("auto", {}), ("agd", dict(solver="noisy_agd")), ("agd_t30", dict(solver="noisy_agd", max_iter=min(30, default_n_iter(n, eps, d))))):
            sc = []
            for s in range(seeds):
                m = DPRidge(epsilon=eps, delta=d, random_state=s, data_norm=float(np.sqrt(p)), bounds_y="auto", **kw).fit(Xtr, ytr)
                sc.append(m.score(Xte, yte))
            res[name] = (np.array(sc), m.solver_, m.n_iter_)
        a = res["auto"][0]
        print(n, p, eps, f"auto {res['auto'][1]} T={res['auto'][2]} {a.mean():.4f}",
              *[f"{k} T={res[k][2]} {res[k][0].mean():.4f} diff {np.mean(res[k][0]-a):+.4f} se {np.std(res[k][0]-a)/np.sqrt(seeds):.4f}" for k in ("agd", "agd_t30")], sep=" | ", flush=True)
