"""Pure-DP (delta = 0) fits before/after the snapped norm-Gamma: utility and the sampler's time.

Usage (from the repository root)::

    python -m benchmarks.norm_gamma_snapping --before /work/main --seeds 20 --out benchmarks/results/norm_gamma_snapping.md

Utility: DPRidge (diabetes) and DPLogisticRegression (breast_cancer) with
``solver="output_perturbation"`` (and ``"objective_perturbation"``) and ``delta=0``, the
float norm-Gamma of the ``--before`` tree against the snapped one of this tree, each tree in
a subprocess (``PYTHONPATH``), the same seeds, split 70/30 with a fixed split seed; the
median and mean test score (R^2, accuracy) over seeds. Sampler time: the old float draw
(NumPy's gamma and normal) and :func:`dp_sklearn._noise.norm_gamma`, interleaved in one
process, medians of repeats.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import subprocess
import sys
import time

import numpy as np

_CHILD = r"""
import json, sys, warnings
import numpy as np
warnings.simplefilter("ignore")
from sklearn.datasets import load_breast_cancer, load_diabetes
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler
from dp_sklearn import DPLogisticRegression, DPRidge
seeds, eps_list = int(sys.argv[1]), [float(e) for e in sys.argv[2].split(",")]
data = {"diabetes": load_diabetes(return_X_y=True), "breast_cancer": load_breast_cancer(return_X_y=True)}
cases = [("DPRidge", DPRidge, "diabetes", "output_perturbation"),
         ("DPLogisticRegression", DPLogisticRegression, "breast_cancer", "output_perturbation"),
         ("DPLogisticRegression", DPLogisticRegression, "breast_cancer", "objective_perturbation")]
out = {}
for name, cls, ds, solver in cases:
    X, y = data[ds]
    X = StandardScaler().fit_transform(X)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, random_state=0)
    for eps in eps_list:
        scores = []
        for s in range(seeds):
            est = cls(epsilon=eps, delta=0.0, solver=solver, random_state=s).fit(Xtr, ytr)
            scores.append(float(est.score(Xte, yte)))
        out[f"{name}/{ds}/{solver}/eps={eps:g}"] = scores
print(json.dumps(out))
"""


def _run(tree, seeds, eps):
    env = dict(os.environ, PYTHONPATH=str(tree), OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    res = subprocess.run([sys.executable, "-c", _CHILD, str(seeds), eps], env=env, capture_output=True, text=True, cwd=str(tree),
                         check=True)
    return json.loads(res.stdout.strip().splitlines()[-1])


def _old_norm_gamma(rng, dim, scale):
    u = rng.standard_normal(dim)
    u /= np.linalg.norm(u)
    return rng.gamma(shape=dim, scale=scale) * u


def _timing(dims=(10, 30, 100), reps=9, draws=200):
    from dp_sklearn import _noise
    rng = np.random.default_rng(0)
    rows = []
    for d in dims:
        a, b = [], []
        for _ in range(reps):
            t = time.perf_counter()
            for _ in range(draws):
                _old_norm_gamma(rng, d, 1.0)
            a.append((time.perf_counter() - t) / draws)
            t = time.perf_counter()
            for _ in range(draws):
                _noise.norm_gamma(rng, d, 1.0)
            b.append((time.perf_counter() - t) / draws)
        rows.append((d, float(np.median(a)), float(np.median(b))))
    return rows


def _paired(seeds, eps_list):
    """In one process: the snapped release against the float path it replaced, alternating per seed.

    The float path is ``theta + gamma(d, s0) * normal / ||normal||`` at the textbook scale
    ``s0 = Delta / epsilon = s (1 - loss / epsilon)`` of the plan's snapping.
    Returns rows (fit, old mean, old se, new mean, new se, old median time, new median time).
    """
    import warnings
    from sklearn.datasets import load_breast_cancer, load_diabetes
    from sklearn.model_selection import train_test_split
    from sklearn.preprocessing import StandardScaler
    from dp_sklearn import DPLogisticRegression, DPRidge
    import dp_sklearn._noise as nz

    warnings.simplefilter("ignore")
    new = nz.add_norm_gamma

    def old(rng, value, snap):
        return value + _old_norm_gamma(rng, value.size, snap.scale * (1.0 - snap.loss / snap.epsilon))

    rows = []
    try:
        for name, cls, loader in [("DPLogisticRegression/breast_cancer", DPLogisticRegression, load_breast_cancer),
                                  ("DPRidge/diabetes", DPRidge, load_diabetes)]:
            X, y = loader(return_X_y=True)
            X = StandardScaler().fit_transform(X)
            Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, random_state=0)
            for eps in eps_list:
                res = {"old": ([], []), "new": ([], [])}
                for s in range(seeds):
                    for tag, f in (("old", old), ("new", new)) if s % 2 else (("new", new), ("old", old)):
                        nz.add_norm_gamma = f
                        t = time.perf_counter()
                        est = cls(epsilon=eps, delta=0.0, solver="output_perturbation", random_state=s)
                        est.fit(Xtr, ytr)
                        res[tag][1].append(time.perf_counter() - t)
                        res[tag][0].append(float(est.score(Xte, yte)))
                o, n = np.asarray(res["old"][0]), np.asarray(res["new"][0])
                rows.append((f"{name}/eps={eps:g}", o.mean(), o.std() / np.sqrt(seeds), n.mean(), n.std() / np.sqrt(seeds),
                             float(np.median(res["old"][1])), float(np.median(res["new"][1]))))
    finally:
        nz.add_norm_gamma = new
    return rows


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", required=True, help="the old tree (PYTHONPATH of the float norm-Gamma)")
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--epsilons", default="0.5,1,5")
    parser.add_argument("--paired-seeds", type=int, default=200)
    parser.add_argument("--out", default=None)
    args = parser.parse_args(argv)
    here = pathlib.Path(__file__).resolve().parents[1]
    before = _run(args.before, args.seeds, args.epsilons)
    after = _run(here, args.seeds, args.epsilons)
    lines = ["| fit | before median | after median | before mean | after mean |", "|---|---|---|---|---|"]
    for key in before:
        b, a = np.asarray(before[key]), np.asarray(after[key])
        lines.append(f"| {key} | {np.median(b):.4f} | {np.median(a):.4f} | {b.mean():.4f} | {a.mean():.4f} |")
    lines += ["", f"Paired in one process ({args.paired_seeds} seeds, output_perturbation, the float path at the "
              "textbook scale swapped in for add_norm_gamma, alternating):", "",
              "| fit | float mean (se) | snapped mean (se) | float fit time (ms) | snapped fit time (ms) |",
              "|---|---|---|---|---|"]
    for key, om, ose, nm, nse, ot, nt in _paired(args.paired_seeds, [float(e) for e in args.epsilons.split(",")]):
        lines.append(f"| {key} | {om:.4f} ({ose:.4f}) | {nm:.4f} ({nse:.4f}) | {ot * 1e3:.1f} | {nt * 1e3:.1f} |")
    lines += ["", "| d | float gamma x normal (us) | norm_gamma from integers (us) | ratio |", "|---|---|---|---|"]
    for d, a, b in _timing():
        lines.append(f"| {d} | {a * 1e6:.1f} | {b * 1e6:.1f} | {b / a:.1f} |")
    text = (f"python -m benchmarks.norm_gamma_snapping --before {args.before} --seeds {args.seeds} "
            f"--epsilons {args.epsilons} --paired-seeds {args.paired_seeds}\n\n" + "\n".join(lines) + "\n")
    print(text)
    if args.out:
        pathlib.Path(args.out).write_text(text)


if __name__ == "__main__":
    main()
