"""Shared helpers: warnings policy, estimator/solver discovery, Markdown output, timing."""

from __future__ import annotations

import inspect
import os
import shlex
import sys
import time
import traceback
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

RESULTS_DIR = Path(__file__).resolve().parent / "results"

#: stated in every results file
WARNINGS_NOTE = (
    "dp_sklearn.ClippingWarning is suppressed in the benchmarks (rows or targets beyond the "
    "public bounds are clipped, as documented; the count is not reported)."
)


# ---------------------------------------------------------------------------- warnings
def setup_warnings():
    """Silence warnings that would flood the logs; ClippingWarning is suppressed on purpose."""
    from dp_sklearn import ClippingWarning

    warnings.simplefilter("ignore", ClippingWarning)
    warnings.filterwarnings("ignore", message=".*delta=.*>= 1/n_samples.*")
    warnings.filterwarnings("ignore", message=".*bounds_y was not set.*")
    warnings.filterwarnings("ignore", category=DeprecationWarning)
    warnings.filterwarnings("ignore", category=FutureWarning)
    try:
        from sklearn.exceptions import ConvergenceWarning

        warnings.filterwarnings("ignore", category=ConvergenceWarning)
    except Exception:  # pragma: no cover
        pass
    # joblib workers inherit this through the environment
    os.environ.setdefault("PYTHONWARNINGS", "ignore")


# ---------------------------------------------------------------------------- run context
@dataclass
class Context:
    quick: bool
    data_dir: Path
    n_jobs: int
    command: str
    results_dir: Path = RESULTS_DIR
    notes: list = field(default_factory=list)  # printed skip notes, collected for the summary

    def note(self, msg):
        print(f"  [note] {msg}", flush=True)
        self.notes.append(msg)


def command_string(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    return "python -m benchmarks.run" + ("".join(" " + shlex.quote(a) for a in argv))


# ---------------------------------------------------------------------------- markdown
def md_table(headers, rows):
    out = ["| " + " | ".join(str(h) for h in headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    for r in rows:
        out.append("| " + " | ".join(str(c) for c in r) + " |")
    return "\n".join(out)


def fmt(x, digits=3):
    if x is None:
        return "n/a"
    if isinstance(x, str):
        return x
    if not np.isfinite(x):
        return str(x)
    ax = abs(x)
    if ax != 0 and (ax < 1e-3 or ax >= 1e5):
        return f"{x:.{digits - 1}e}"
    return f"{x:.{digits}f}"


def fmt_ms(values, digits=3):
    """mean +- std of a list (NaNs dropped); 'n/a' when empty."""
    v = np.asarray([x for x in values if x is not None and np.isfinite(x)], dtype=float)
    if v.size == 0:
        return "n/a"
    if v.size == 1:
        return fmt(v[0], digits)
    return f"{fmt(v.mean(), digits)} ± {fmt(v.std(ddof=1), digits)}"


def header_block(title, ctx, lines):
    """Standard preamble: what, how to reproduce, warnings policy."""
    out = [f"## {title}", "", f"- command: `{ctx.command}`"]
    out += lines
    out.append(f"- {WARNINGS_NOTE}")
    out.append("")
    return "\n".join(out) + "\n"


def write_result(ctx, filename, text):
    ctx.results_dir.mkdir(parents=True, exist_ok=True)
    path = ctx.results_dir / filename
    path.write_text(text)
    print(f"  wrote {path.relative_to(ctx.results_dir.parent.parent)}", flush=True)
    return path


# ---------------------------------------------------------------------------- discovery
def registered_solvers():
    from dp_sklearn.solvers import SOLVERS

    return dict(SOLVERS)


def estimator_params(cls):
    return set(inspect.signature(cls.__init__).parameters) - {"self"}


def _probe_data(task, n=60, p=6, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, p)) / np.sqrt(p)
    if task == "binary":
        y = (X[:, 0] + 0.1 * rng.standard_normal(n) > 0).astype(int)
    else:
        y = np.clip(X[:, 0] + 0.1 * rng.standard_normal(n), -1, 1)
    return X, y


@dataclass
class Combo:
    """One estimator configuration: class, fixed kwargs, a short label."""

    label: str
    cls: type
    kwargs: dict
    solver: str
    family: str  # "ridge", "lasso", "logistic-l2", "logistic-l1", "logistic-l0"

    def make(self, **over):
        kw = dict(self.kwargs)
        kw.update(over)
        return self.cls(**kw)


def discover_combos(task, n_nonzero_coefs=None, probe=True):
    """Every (estimator, penalty, solver) that fits on a tiny probe problem.

    Estimators: DPRidge / DPLasso (regression), DPLogisticRegression with penalty l2 and
    l1 (classification), and the sparse l0 estimators DPSparseLinearRegression /
    DPSparseLogisticRegression when the package has them. Solvers come from each
    estimator's declared list intersected with the registry, so new solvers are picked
    up automatically; a combination whose probe fit raises ``ValueError`` (or
    ``TypeError`` / ``NotImplementedError``) is skipped and listed in ``skipped``.
    ``n_nonzero_coefs`` (if given) is passed to estimators that take it.
    """
    import dp_sklearn

    solvers = registered_solvers()
    combos, skipped = [], []
    get = lambda name: getattr(dp_sklearn, name, None)  # noqa: E731
    if task == "regression":
        families = [("ridge", get("DPRidge"), {}), ("lasso", get("DPLasso"), {}),
                    ("sparse-linear", get("DPSparseLinearRegression"), {})]
    else:
        families = [("logistic-l2", get("DPLogisticRegression"), {"penalty": "l2"}),
                    ("logistic-l1", get("DPLogisticRegression"), {"penalty": "l1"}),
                    ("sparse-logistic", get("DPSparseLogisticRegression"), {})]
    X, y = _probe_data(task)
    for family, cls, base in families:
        if cls is None:
            skipped.append(f"{family}: estimator not available in this version of dp_sklearn")
            continue
        params = estimator_params(cls)
        for solver in _candidate_solvers(cls, base, solvers):
            kw = dict(base, solver=solver)
            if n_nonzero_coefs is not None and "n_nonzero_coefs" in params:
                kw["n_nonzero_coefs"] = int(n_nonzero_coefs)
            label = f"{cls.__name__}({_kwstr(kw, hide=('n_nonzero_coefs',))})"
            if probe:
                try:
                    probe_kw = dict(kw)
                    if "n_nonzero_coefs" in probe_kw:
                        probe_kw["n_nonzero_coefs"] = 3
                    if task == "regression":
                        probe_kw["bounds_y"] = (-1, 1)
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        cls(epsilon=1.0, delta=1e-5, random_state=0, **probe_kw).fit(X, y)
                except (ValueError, TypeError, NotImplementedError) as e:
                    skipped.append(f"{label}: {type(e).__name__}: {str(e)[:160]}")
                    continue
            combos.append(Combo(label, cls, kw, solver, family))
    return combos, skipped


def _candidate_solvers(cls, base, solvers):
    """The estimator's declared solvers when it says (``_allowed_solvers()`` or ``_solvers``),
    else every registered solver; each candidate is still probed."""
    declared = None
    try:
        inst = cls(**base)
        if hasattr(inst, "_allowed_solvers"):
            declared = list(inst._allowed_solvers())
    except Exception:  # noqa: BLE001
        declared = None
    if declared is None and hasattr(cls, "_solvers"):
        declared = list(cls._solvers)
    if declared is None:
        declared = list(solvers)
    return [s for s in declared if s in solvers]


def _kwstr(kw, hide=()):
    return ", ".join(f"{k}={v!r}" for k, v in kw.items() if k not in hide)


# ---------------------------------------------------------------------------- events
def event_noise_summary(event, n_iter):
    """Public noise parameters read off a dp_accounting event.

    Returns a dict with any of: ``gaussian_z`` (noise std per unit l2 sensitivity of one
    Gaussian step), ``steps``, ``zcdp_rho``, ``eps0`` (per-step pure-DP parameter),
    ``expmech_scale`` (= 2 / eps0, Gumbel / Laplace scale per unit score sensitivity).
    The y-centering Laplace event of the regressors is ignored.
    """
    from dp_accounting import dp_event

    out = {}

    def walk(ev, mult=1):
        name = type(ev).__name__
        if isinstance(ev, dp_event.ComposedDpEvent):
            for e in ev.events:
                if isinstance(e, dp_event.LaplaceDpEvent):
                    continue  # private centering of y (regressors)
                walk(e, mult)
        elif isinstance(ev, dp_event.SelfComposedDpEvent):
            walk(ev.event, mult * ev.count)
        elif isinstance(ev, dp_event.GaussianDpEvent):
            out.setdefault("gaussian_z", ev.noise_multiplier)
            out.setdefault("steps", mult)
        elif isinstance(ev, dp_event.ZCDpEvent):
            out["zcdp_rho"] = ev.rho
            if n_iter:
                out["eps0"] = float(np.sqrt(8.0 * ev.rho / n_iter))
                out["steps"] = n_iter
        elif name == "EpsilonDeltaDpEvent":
            if mult > 1 or "eps0" not in out:
                out["eps0"] = ev.epsilon
                out["steps"] = mult
        elif isinstance(ev, dp_event.LaplaceDpEvent):
            out["laplace_b"] = ev.noise_multiplier

    walk(event)
    if "eps0" in out and out["eps0"] > 0:
        out["expmech_scale"] = 2.0 / out["eps0"]
    return out


# ---------------------------------------------------------------------------- timing
def median_time(fn, repeats, min_time=0.0):
    """Median wall time of ``fn()`` over ``repeats`` runs (each run repeated until min_time)."""
    times = []
    for _ in range(repeats):
        k, t0 = 0, time.perf_counter()
        while True:
            fn()
            k += 1
            el = time.perf_counter() - t0
            if el >= min_time:
                break
        times.append(el / k)
    return float(np.median(times))


def safe_call(fn, *args, **kwargs):
    """(result, None) or (None, 'ExcType: message') -- benchmarks never crash on one config."""
    try:
        return fn(*args, **kwargs), None
    except Exception as e:  # noqa: BLE001
        msg = f"{type(e).__name__}: {str(e)[:200]}"
        if os.environ.get("DP_BENCH_DEBUG"):
            traceback.print_exc()
        return None, msg


class Timer:
    def __enter__(self):
        self.t0 = time.perf_counter()
        return self

    def __exit__(self, *exc):
        self.elapsed = time.perf_counter() - self.t0
        return False
