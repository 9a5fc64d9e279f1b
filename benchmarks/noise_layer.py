"""Default fits before/after the exact noise layer: time ratio and utility, in one run.

Usage (from the repository root)::

    python -m benchmarks.noise_layer --out benchmarks/results/noise_layer.md  # in one process
    python -m benchmarks.noise_layer --before OLD_TREE   # and the old tree in subprocesses

In one process, each fit runs alternately with the exact layer and with the float draws
it replaced (``Generator.normal`` / ``laplace`` swapped in for ``dp_sklearn._noise``'s
Gaussian and Laplace functions and streams), so both see the same machine load: the
time ratio of the noise layer alone, as medians after warm-up (``--out FILE`` writes the
table as markdown, ``benchmarks/results/noise_layer.md``). With ``--before``, each round also runs the same fits in a fresh
subprocess per tree (``PYTHONPATH`` set to the tree), alternating trees. Times: the
minimum over seeds and rounds (robust to load) and the median; utility: the median test
score over seeds (R^2 for regressors, accuracy for the classifier), split 70/30 with a
fixed split seed. Bundled data only (diabetes, breast_cancer); default hyperparameters
with epsilon = 1, ``random_state`` an int and None.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import subprocess
import sys

import numpy as np

_CHILD = r"""
import json, sys, time, warnings
import numpy as np
warnings.simplefilter("ignore")
from sklearn.datasets import load_breast_cancer, load_diabetes
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler
from dp_sklearn import DPLasso, DPLogisticRegression, DPRidge
seeds = int(sys.argv[1])
data = {"diabetes": load_diabetes(return_X_y=True), "breast_cancer": load_breast_cancer(return_X_y=True)}
cases = [("DPRidge", DPRidge, "diabetes"), ("DPLasso", DPLasso, "diabetes"),
         ("DPLogisticRegression", DPLogisticRegression, "breast_cancer")]
out = {}
for name, cls, ds in cases:
    X, y = data[ds]
    X = StandardScaler().fit_transform(X)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, random_state=0)
    times, scores = [], []
    for s in list(range(seeds)) + [None]:
        est = cls(epsilon=1.0, random_state=s)
        t0 = time.perf_counter()
        est.fit(Xtr, ytr)
        times.append(time.perf_counter() - t0)
        if s is not None:
            scores.append(float(est.score(Xte, yte)))
    out[f"{name}/{ds}"] = {"times": times, "scores": scores}
print(json.dumps(out))
"""


def _run(tree, seeds):
    env = dict(os.environ, PYTHONPATH=str(tree), OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    res = subprocess.run([sys.executable, "-c", _CHILD, str(seeds)], env=env, capture_output=True, text=True,
                         check=True, cwd=str(tree))
    return json.loads(res.stdout.strip().splitlines()[-1])


class _FloatStream:
    """The float path a stream replaced: ``value + rng.normal(0, scale, shape)`` at every step."""

    def __init__(self, rng, scale, sensitivity, size, count, norm=2):
        self.rng, self.scale = rng, float(scale)

    def add(self, value):
        return value + self.rng.normal(0.0, self.scale, np.shape(value)) if self.scale else np.array(value)


def _inprocess(reps, out=None, warmup=3):
    """Each default fit alternately on the exact layer and on the float draws it replaced; medians.

    Every repetition runs the pair (float, exact) back to back, in alternating order, for
    ``random_state`` an int and None (the default), after ``warmup`` unmeasured pairs; the
    ratio is the median exact time over the median float time, and the median of the
    paired ratios (robust to load that drifts between repetitions).
    """
    import datetime
    import platform
    import time
    import warnings

    from sklearn.datasets import load_breast_cancer, load_diabetes
    from sklearn.preprocessing import StandardScaler

    from dp_sklearn import DPLasso, DPLogisticRegression, DPRidge, _noise

    warnings.simplefilter("ignore")
    names = ("add_gaussian", "add_laplace", "gaussian", "laplace", "gaussian_stream")
    floats = (lambda rng, v, scale, sens, norm=2: v + rng.normal(0.0, scale, np.shape(v)) if scale else v,
              lambda rng, v, scale, sens, norm=1: v + rng.laplace(0.0, scale, np.shape(v)) if scale else v,
              lambda rng, scale, size=None: rng.normal(0.0, scale, size),
              lambda rng, scale, size=None: rng.laplace(0.0, scale, size),
              _FloatStream)
    have = [i for i, n in enumerate(names) if hasattr(_noise, n)]  # a tree before streams has no gaussian_stream
    names, floats = tuple(names[i] for i in have), tuple(floats[i] for i in have)
    exact = tuple(getattr(_noise, n) for n in names)
    data = {"diabetes": load_diabetes(return_X_y=True), "breast_cancer": load_breast_cancer(return_X_y=True)}
    paths = {"float": floats, "exact": exact}

    def fit(cls, X, y, label, seed):
        for n, f in zip(names, paths[label]):
            setattr(_noise, n, f)
        try:
            c0, w0 = time.process_time(), time.perf_counter()
            est = cls(epsilon=1.0, random_state=seed).fit(X, y)
            return (time.process_time() - c0, time.perf_counter() - w0), est
        finally:
            for n, f in zip(names, exact):
                setattr(_noise, n, f)

    rows = []
    for cls, ds in ((DPRidge, "diabetes"), (DPLasso, "diabetes"), (DPLogisticRegression, "breast_cancer")):
        X, y = data[ds]
        X = StandardScaler().fit_transform(X)
        for rep in range(warmup):
            fit(cls, X, y, "float", rep), fit(cls, X, y, "exact", rep)
        t = {(label, kind): [] for label in paths for kind in ("int", "None")}  # (cpu, wall) pairs
        solver = None
        for rep in range(reps):
            for kind, seed in (("int", rep), ("None", None)):
                order = ("float", "exact") if rep % 2 == 0 else ("exact", "float")
                for label in order:
                    dt, est = fit(cls, X, y, label, seed)
                    t[label, kind].append(dt)
                    solver = getattr(est, "solver_", solver)
        row = {"fit": f"{cls.__name__}/{ds}", "solver": solver, "n_iter": None}
        for kind, kinds in (("None", ("None",)), ("int", ("int",)), ("all", ("None", "int"))):
            f = np.array([v for k in kinds for v in t["float", k]])
            e = np.array([v for k in kinds for v in t["exact", k]])
            fm, em = np.median(f, axis=0), np.median(e, axis=0)
            row[kind] = (fm[0] * 1e3, em[0] * 1e3, em[0] / fm[0], np.median(e[:, 0] / f[:, 0]),
                         em[1] / fm[1], np.median(e[:, 1] / f[:, 1]))
        rows.append(row)
    head = ("| fit (default, epsilon = 1) | solver | random_state | CPU ms float | CPU ms exact | "
            "CPU ratio of medians | CPU paired ratio | wall ratio of medians | wall paired ratio |")
    lines = [head, "|" + "---|" * 9]
    for row in rows:
        for kind in ("None", "int", "all"):
            fm, em, r, pr, rw, prw = row[kind]
            lines.append(f"| {row['fit']} | {row['solver']} | {kind} | {fm:.2f} | {em:.2f} | {r:.2f} | {pr:.2f} | "
                         f"{rw:.2f} | {prw:.2f} |")
    table = "\n".join(lines)
    print(table)
    if out is not None:
        load = os.getloadavg() if hasattr(os, "getloadavg") else (0.0,)
        busy = load[0] > (os.cpu_count() or 1)
        text = (
            "# Noise layer: default fits, exact layer vs the float draws it replaced (one run)\n\n"
            "Generated by `python -m benchmarks.noise_layer --seeds {reps} --out {out}` "
            "(do not edit by hand).\n\n"
            "In one process, each default fit runs alternately (order alternating per repetition) on the exact "
            "noise layer and with the float draws it replaced (`Generator.normal` / `laplace` swapped in for "
            "`dp_sklearn._noise`'s Gaussian and Laplace functions and streams, a `normal` draw per step), after "
            "{warmup} unmeasured warm-up pairs; {reps} repetitions per `random_state` kind (None: the default, "
            "`os.urandom` integers; int: PCG64). Ratio = exact / float; the paired ratio is the median over "
            "repetitions of the ratio of the two adjacent fits. CPU: `time.process_time` of the fit (one "
            "thread; robust to other processes sharing the machine), wall: `time.perf_counter`. Bundled "
            "data, standardized, all rows.\n\n"
            "{table}\n\n"
            "Run {when} UTC, Python {py}, NumPy {npv}, {machine}; load average at the end {load}{busy}.\n"
        ).format(reps=reps, out=out, warmup=warmup, table=table, when=datetime.datetime.now(datetime.timezone.utc)
                 .strftime("%Y-%m-%d %H:%M"), py=platform.python_version(), npv=np.__version__,
                 machine=platform.machine(), load=", ".join(f"{v:.1f}" for v in load),
                 busy=(f" on {os.cpu_count()} cores: other jobs preempted the fits, so the wall-clock ratios "
                       "of these millisecond fits are noise and the CPU ratios are the measurement") if busy else "")
        pathlib.Path(out).write_text(text)
        print(f"written {out}")
    return rows


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", default=None, help="source tree without the noise layer (optional)")
    parser.add_argument("--after", default=str(pathlib.Path(__file__).resolve().parents[1]))
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", default=None, help="write the in-process table as markdown here")
    args = parser.parse_args(argv)
    _inprocess(max(args.seeds, 1), args.out)
    if args.before is None:
        return
    acc = {"before": {}, "after": {}}
    for _ in range(args.rounds):
        for label in ("before", "after"):
            for case, r in _run(getattr(args, label), args.seeds).items():
                entry = acc[label].setdefault(case, {"times": [], "scores": []})
                entry["times"] += r["times"]
                entry["scores"] = r["scores"]  # same seeds each round: identical
    print(f"{'fit':38s} {'min s before':>12s} {'after':>8s} {'ratio':>6s} {'median ratio':>12s} "
          f"{'score before':>12s} {'after':>8s}")
    for case in acc["before"]:
        b, a = acc["before"][case], acc["after"][case]
        print(f"{case:38s} {min(b['times']):12.4f} {min(a['times']):8.4f} {min(a['times']) / min(b['times']):6.2f} "
              f"{np.median(a['times']) / np.median(b['times']):12.2f} {np.median(b['scores']):12.3f} "
              f"{np.median(a['scores']):8.3f}")


if __name__ == "__main__":
    main()
