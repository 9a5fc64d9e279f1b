"""Issue 19 items 1-3: the regression audits at the issue's trial counts, fixed code and negative controls.

    python -m benchmarks.issue19_audits [--only search,online,sampler,timing,acceptance]

Reuses the pairs, mechanisms and re-injected old code paths of the tests
(tests/test_model_selection.py, tests/solvers/test_online.py,
tests/solvers/test_exponential_sampling.py) so that the numbers are those of the tests'
configurations at the issue's strength. Prints one line per audit: the empirical lower
bound on epsilon (audit_epsilon, 95% Clopper-Pearson) and the claimed epsilon. "timing"
audits the wall-clock time of one exponential_sampling draw (fixed code only, draws on the
two datasets interleaved, then replayed to the audit): a measurement, never a test
assertion. "acceptance" measures the exact sampler's acceptance rate over a grid of public
settings (it sets the tail of the running time).
"""

from __future__ import annotations

import argparse
import inspect
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "tests" / "solvers")]


class _Patch:
    """A minimal monkeypatch (setattr with undo) for the negative controls."""

    def __init__(self):
        self.undo = []

    def setattr(self, obj, name, value):
        # the raw attribute (a class's staticmethod stays a staticmethod when restored)
        self.undo.append((obj, name, inspect.getattr_static(obj, name)))
        setattr(obj, name, value)

    def close(self):
        for obj, name, value in reversed(self.undo):
            setattr(obj, name, value)
        self.undo.clear()


def _report(label, claimed, run):
    t = time.time()
    res = run()
    print(f"{label}: epsilon_lower={res.epsilon_lower:.3f} (claimed {claimed}), fpr={res.fpr:.4f}, "
          f"fnr={res.fnr:.4f}, {res.n_samples}+{res.n_samples} runs, {time.time() - t:.0f} s", flush=True)


def search(configs=((3, 0.1), (2, 0.1), (2, 0.3))):
    import test_model_selection as t

    from dp_sklearn.audit import audit_epsilon

    for n_classes, cv in configs:
        D, Dp = t._rare_label_pair(1000, n_classes)
        mech = t._rare_label_search(cv, n_classes)
        for control in (False, True):
            patch = _Patch()
            if control:
                t._reinject_rare_label_leak(patch)
            try:
                _report(f"item 1, {n_classes} classes, cv={cv}, n=1000, {'control' if control else 'fixed'}", 1.0,
                        lambda: audit_epsilon(mech, D, Dp, n_samples=1500, statistic=t._rare_label_event,
                                              random_state=0))
            finally:
                patch.close()


def online():
    import test_online as t

    from dp_sklearn.audit import audit_epsilon

    D, Dp = t._implicit_pair()
    for control in (False, True):
        patch = _Patch()
        if control:
            patch.setattr(t.online, "_implicit_step", t._old_implicit_step)
        try:
            _report(f"item 2, implicit step, {'control' if control else 'fixed'}", 1.0,
                    lambda: audit_epsilon(t._implicit_fit, D, Dp, n_samples=500, statistic=t._raised,
                                          random_state=0))
        finally:
            patch.close()


def sampler():
    import test_exponential_sampling as t

    from dp_sklearn.audit import audit_epsilon

    D, Dp = t._work_pair(2)
    for control in (False, True):
        patch = _Patch()
        calls = t._counting_work(patch)
        if control:
            patch.setattr(t.lc, "_envelope", t._old_envelope)
        try:
            _report(f"item 3, work count, 2-D, {'control' if control else 'fixed'}", 4.0,
                    lambda: audit_epsilon(t._work_mechanism(calls), D, Dp, n_samples=2000, random_state=0))
        finally:
            patch.close()


def timing():
    import test_exponential_sampling as t

    from dp_sklearn._data import Problem
    from dp_sklearn._losses import LogisticLoss
    from dp_sklearn._sets import L2Ball
    from dp_sklearn.audit import audit_epsilon

    def timed(X, y, rng):
        prob = Problem(X, y, LogisticLoss(), 1.0, 1.0, np.linalg.norm(X, axis=1), 0.0)
        start = time.perf_counter()
        t.es_mod.exponential_sampling(prob, L2Ball(2.0), epsilon=4.0, rng=rng)
        return time.perf_counter() - start

    D, Dp = t._work_pair(2)
    # Interleaved (D, D', D, D', ...) so that the machine's load drifts alike on both sides; the
    # audit then replays the recorded times in order.
    seeds = np.random.default_rng(0).spawn(2 * 2000)
    times = {id(D[0]): [], id(Dp[0]): []}
    for k in range(2000):
        for j, d in enumerate((D, Dp)):
            times[id(d[0])].append(timed(*d, np.random.default_rng(seeds[2 * k + j])))

    def replay(X, y, rng):
        return np.array([times[id(X)].pop(0)])

    _report("item 3, wall time, 2-D, fixed", 4.0, lambda: audit_epsilon(replay, D, Dp, n_samples=2000, random_state=0))


def acceptance():
    """Acceptance rate a of the exact sampler's proposals, and the tail (1 - a)^512 of a second block."""
    import math

    import dp_sklearn._logconcave as lc
    import dp_sklearn.solvers._exponential_sampling as es_mod
    from dp_sklearn._data import Problem
    from dp_sklearn._losses import LogisticLoss, SquaredLoss
    from dp_sklearn._sets import L2Ball

    worst = 1.0
    for loss in (LogisticLoss(), SquaredLoss()):
        for dim in (1, 2):
            for n in (30, 1000, 30000):
                for eps in (0.1, 1.0, 4.0, 20.0):
                    rng = np.random.default_rng(n + dim)
                    X = rng.uniform(-1, 1, (n, dim)) / math.sqrt(dim)
                    signal = X @ np.ones(dim) + 0.3 * rng.standard_normal(n)
                    y = np.where(signal > 0, 1.0, -1.0) if loss.name == "logistic" else np.clip(signal, -1, 1)
                    prob = Problem(X, y, loss, 1.0, 1.0, np.linalg.norm(X, axis=1), 0.0)
                    try:
                        info = es_mod.plan_exponential_sampling(prob, L2Ball(2.0), epsilon=eps).info
                    except ValueError:  # epsilon too large for float64 at this n (documented refusal)
                        continue
                    F = lc.glm_objective(prob, info["l2_reg"])
                    domain = (2.0, None, None)
                    lo, hi = lc._domain_box(dim, 2.0, None, None)
                    centers, half, log_env = lc._envelope(F, info["kappa"], n * info["curvature"], lo, hi, domain)
                    logw = log_env + np.sum(np.log(2.0 * half), axis=1)
                    prob_c = np.exp(logw - logw.max())
                    prob_c /= prob_c.sum()
                    m = 4096
                    idx = rng.choice(len(centers), size=m, p=prob_c)
                    theta = centers[idx] + half[idx] * (2.0 * rng.random((m, dim)) - 1.0)
                    inside = lc._inside(theta, *domain)
                    log_target = -info["kappa"] * F(np.where(inside[:, None], theta, 0.0))
                    a = float(np.mean(inside & (np.log(rng.random(m)) < log_target - log_env[idx])))
                    worst = min(worst, a)
                    print(f"{loss.name} dim={dim} n={n} eps={eps}: acceptance {a:.3f}, "
                          f"P(second block) = {(1 - a) ** lc._BLOCK_PROPOSALS:.2e}", flush=True)
    print(f"smallest acceptance {worst:.3f}: P(second block) <= {(1 - worst) ** 512:.2e}")


SECTIONS = {"search": search, "online": online, "sampler": sampler, "timing": timing, "acceptance": acceptance}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default=",".join(SECTIONS), help="comma-separated sections")
    args = parser.parse_args(argv)
    for name in args.only.split(","):
        SECTIONS[name]()


if __name__ == "__main__":
    main()
