"""DPRidge solver="auto": a larger SIGNAL_RATIO for noisy_newton against today's choice (issue 22).

Dense synthetic data of ``benchmarks/ridge_agd_cap.py`` (``syn``), delta = min(1e-5, 0.1 / n), 5000
held-out rows. Per cell: ``ratio`` = Lambda / (n x_norm^2 / dim), the quantity
:func:`dp_sklearn.solvers._noisy_newton.newton_applies` compares with ``SIGNAL_RATIO``, at the
solver's (epsilon, delta) of the fitted default; ``today`` = DPRidge's default solver (``solver_``);
``newton`` = ``solver="noisy_newton"`` with every other parameter the same. Paired on the seed,
standard errors (ddof 1) in parentheses; both with public ``bounds_y=(-4, 4)`` and the default
``bounds_y="auto"``. ``python -m benchmarks.ridge_newton_ratio [SEEDS [p200 | band]]``;
see benchmarks/results/ridge_agd_dense.md.
"""
import math
import sys
import warnings

import numpy as np

from dp_sklearn import DPRidge
from dp_sklearn.solvers import _noisy_newton as N
from dp_sklearn.solvers._common import gaussian_steps_plan

from .ridge_agd_cap import syn

CELLS = ((2_000, 10, (1, 2)), (10_000, 20, (1, 2)), (20_000, 20, (0.5, 1)), (20_000, 100, (2, 5)),
         (50_000, 100, (1, 2, 5)), (100_000, 100, (0.5, 1, 2)))


def ratio(model, n):
    """Lambda / (n x_norm^2 / dim) for the fitted model's public problem (as newton_applies computes it)."""
    public = model._few_pass_public(n)
    p = N._gram_dim(public)
    z, _, _ = gaussian_steps_plan(model._solver_epsilon(), float(model.delta), N.default_n_iter(public.loss) + 1)
    lam = N._shift(z * math.sqrt(2.0) * public.x_norm**2, p)
    return lam / (public.n * public.x_norm**2 / p)


def main(seeds=5, cells=CELLS):
    warnings.simplefilter("ignore")
    for n, p, epss in cells:
        Xtr, ytr, Xte, yte = syn(n, p)
        for eps in epss:
            d = min(1e-5, 0.1 / n)
            for by in ((-4, 4), "auto"):
                r, solver = {}, {}
                for name, kw in (("today", {}), ("newton", dict(solver="noisy_newton"))):
                    ms = [DPRidge(epsilon=eps, delta=d, random_state=k, data_norm=float(np.sqrt(p)), bounds_y=by,
                                  **kw).fit(Xtr, ytr) for k in range(seeds)]
                    r[name] = np.array([m.score(Xte, yte) for m in ms])
                    solver[name] = f"{ms[0].solver_} T={ms[0].n_iter_}"
                diff = r["newton"] - r["today"]
                se = np.std(diff, ddof=1) / np.sqrt(seeds)
                print(n, p, eps, "bounds_y=" + ("(-4,4)" if by != "auto" else "auto"), f"ratio {ratio(ms[0], n):.3f}",
                      f"today {solver['today']} {r['today'].mean():.4f}", f"newton {solver['newton']} {r['newton'].mean():.4f}",
                      f"newton - today {diff.mean():+.4f} ({se:.4f}) = {diff.mean() / max(se, 1e-12):+.1f} se",
                      sep=" | ", flush=True)


#: cells where Lambda / (n x_norm^2 / dim) is in (1/4, 1/2] and n / z >= 5000 (the band a ratio of 1/2 moves
#: from noisy_agd to noisy_newton), run with ``band``
BAND = ((20_000, 50, (2,)), (50_000, 50, (1,)), (100_000, 50, (0.5,)), (50_000, 100, (5,)), (100_000, 100, (2,)),
        (50_000, 150, (5,)), (100_000, 200, (5,)), (200_000, 100, (1,)), (200_000, 200, (2,)))

if __name__ == "__main__":
    # python -m benchmarks.ridge_newton_ratio [SEEDS [p200 | band]]
    arg = sys.argv[2] if len(sys.argv) > 2 else None
    cells = ((100_000, 200, (2, 5)),) if arg == "p200" else BAND if arg == "band" else CELLS
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 5, cells)
