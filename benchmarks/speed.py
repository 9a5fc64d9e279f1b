"""Section 3: speed against scikit-learn, in the same run and on the same data.

* fit-time ratio of every DP estimator x solver to its non-private scikit-learn
  counterpart (Ridge, Lasso, LogisticRegression), dense synthetic data over n and the
  sparse news20 data;
* peak memory of a fit (tracemalloc: numpy and Python allocations; BLAS-internal buffers
  are not seen), as a ratio to the counterpart's and to the size of X;
* per-iteration time of each iterative solver divided by the time of one X^T (X w)
  product on the same data (marginal cost: (t(T2) - t(T1)) / (T2 - T1)).

Everything runs in the main process, one BLAS thread, one configuration at a time.
"""

from __future__ import annotations

import gc
import json
import time
import tracemalloc
import warnings

import numpy as np
import scipy.sparse as sp

from . import datasets as D
from .common import (discover_combos, fmt, header_block, md_table, safe_call, setup_warnings, write_result)

P_DENSE = 50
N_FULL = [1000, 10000, 100000, 300000]
N_QUICK = [1000, 10000, 100000]
SLOW_CUT = 2.0  # seconds: a single fit slower than this is not repeated (1 s in quick mode)
QUICK_SLOW_CUT = 1.0  # quick mode: a fit slower than this is run once
QUICK_MAX_FIT = 12.0  # quick mode: skip a configuration whose predicted fit time exceeds this
ITER_T = (5, 25)
QUICK_NEWS20 = 2500


def _counterpart(family):
    from sklearn.linear_model import Lasso, LogisticRegression, Ridge

    if family == "ridge":
        return "Ridge(alpha=1)", lambda: Ridge(alpha=1.0)
    if family in ("lasso", "sparse-linear"):
        return "Lasso(alpha=0.01)", lambda: Lasso(alpha=0.01)
    if family == "logistic-l2":
        return "LogisticRegression(C=1, lbfgs)", lambda: LogisticRegression(C=1.0, max_iter=1000)
    return ("LogisticRegression(l1_ratio=1, C=1, liblinear)",
            lambda: LogisticRegression(C=1.0, l1_ratio=1.0, solver="liblinear", max_iter=1000))


def _time_fit(make, X, y, repeats, slow_cut=None):
    """Median wall time of make().fit(X, y); fast fits are repeated until 0.3 s total."""
    slow_cut = SLOW_CUT if slow_cut is None else slow_cut
    times, est = [], None
    gc.collect()  # once: a full collection costs ~0.1 s with scipy / sklearn / dp_accounting loaded
    while True:
        est = make()
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            setup_warnings()
            est.fit(X, y)
        dt = time.perf_counter() - t0
        times.append(dt)
        if dt > slow_cut:
            break
        if len(times) >= repeats and (sum(times) > 0.3 or len(times) >= 30):
            break
    return float(np.median(times)), len(times), est


def _peak_mem(make, X, y):
    gc.collect()
    tracemalloc.start()
    try:
        with warnings.catch_warnings():
            setup_warnings()
            make().fit(X, y)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return peak


def _matvec_time(X):
    w = np.random.default_rng(0).standard_normal(X.shape[1])

    def f():
        return X.T @ (X @ w)

    times = []
    for _ in range(7):
        k, t0 = 0, time.perf_counter()
        while True:
            f()
            k += 1
            if time.perf_counter() - t0 > 0.05:
                break
        times.append((time.perf_counter() - t0) / k)
    return float(np.median(times))


def _nbytes(X):
    if sp.issparse(X):
        return X.data.nbytes + X.indices.nbytes + X.indptr.nbytes
    return X.nbytes


def _dense_data(n, task, seed=0):
    rng = np.random.default_rng(seed)
    X, y = D.dense_regression(n, P_DENSE, rng)
    if task == "binary":
        y = (y > 0).astype(int)
    return X, y


def _news20(ctx):
    ds, err = safe_call(D.load_news20, ctx.data_dir)
    if err:
        ctx.note(f"speed: news20 skipped ({err})")
        return None
    return ds


def _dp_make(combo, task, data_norm, extra=None):
    kw = {"epsilon": 1.0, "delta": 1e-6, "random_state": 0, "data_norm": data_norm}
    if task == "regression":
        kw["bounds_y"] = (-4.0, 4.0)
    kw.update(extra or {})
    return lambda: combo.make(**kw)


def _per_iter(rec, combo, task, data_norm, X, y):
    """Marginal time per iteration: (t(T2) - t(T1)) / (T2 - T1), medians of 3 fits each."""
    t1, t2 = ITER_T
    r1, _ = safe_call(_time_fit, _dp_make(combo, task, data_norm, {"max_iter": t1}), X, y, 3)
    r2, _ = safe_call(_time_fit, _dp_make(combo, task, data_norm, {"max_iter": t2}), X, y, 3)
    if r1 and r2 and r1[2].n_iter_ == t1 and r2[2].n_iter_ == t2:
        rec["per_iter"] = max(r2[0] - r1[0], 0.0) / (t2 - t1)


def _bench_data(ctx, label, X, y_reg, y_bin, data_norm, combos, repeats, do_mem, do_iter, results, history,
                do_fit=True):
    """All timings for one dataset; fills ``results[label]``.

    ``history`` maps a configuration to its last (n, time, n_iter): in quick mode a
    configuration whose predicted time (linear in n, times n^(2/3) for iterative solvers
    whose T grows with n) exceeds QUICK_MAX_FIT is skipped and marked so in the table.
    """
    slow_cut = QUICK_SLOW_CUT if ctx.quick else SLOW_CUT
    t_start = time.perf_counter()
    n = X.shape[0]
    out = {"n": n, "p": X.shape[1], "sparse": sp.issparse(X), "x_bytes": _nbytes(X), "sk": {}, "dp": {},
           "fit_measured": do_fit}
    for task, y in (("regression", y_reg), ("binary", y_bin)):
        for combo in combos[task]:
            fam = combo.family
            if not do_fit:  # per-iteration cost only
                rec = {"family": fam, "time": None}
                _per_iter(rec, combo, task, data_norm, X, y)
                out["dp"][combo.label] = rec
                continue
            if fam not in out["sk"]:
                name, mk = _counterpart(fam)
                res, err = safe_call(_time_fit, mk, X, y, repeats, slow_cut)
                out["sk"][fam] = {"name": name, "time": res[0] if res else None, "runs": res[1] if res else 0,
                                  "error": err}
                if do_mem and not err:
                    out["sk"][fam]["mem"] = _peak_mem(mk, X, y)
            hist_key = (combo.label, sp.issparse(X))
            if ctx.quick and hist_key in history:
                n0, t0, it0 = history[hist_key]
                pred = t0 * (n / n0) * ((n / n0) ** (2 / 3) if it0 > 1 else 1.0)
                if pred > QUICK_MAX_FIT:
                    out["dp"][combo.label] = {"family": fam, "time": None, "skipped": f"predicted {pred:.0f} s"}
                    ctx.note(f"speed: {combo.label} at {label} skipped in quick mode (predicted {pred:.0f} s per fit)")
                    continue
            mk = _dp_make(combo, task, data_norm)
            res, err = safe_call(_time_fit, mk, X, y, repeats, slow_cut)
            rec = {"family": fam, "time": res[0] if res else None, "runs": res[1] if res else 0,
                   "n_iter": int(getattr(res[2], "n_iter_", 1)) if res else None, "error": err}
            if res:
                history[hist_key] = (n, res[0], rec["n_iter"])
            if do_mem and not err and not (ctx.quick and res[0] > slow_cut):  # quick: skip slow ones
                rec["mem"] = _peak_mem(mk, X, y)
            if do_iter and not err:
                _per_iter(rec, combo, task, data_norm, X, y)
            out["dp"][combo.label] = rec
            t = rec["time"]
            print(f"    {label:>14} {combo.label:<72} "
                  + (f"{t:8.3f} s ({rec['n_iter']} it)" if t is not None else f"ERROR {err}"), flush=True)
    if do_iter:
        out["matvec"] = _matvec_time(X)
    out["section_time"] = time.perf_counter() - t_start
    print(f"    {label}: {out['section_time']:.1f} s", flush=True)
    results[label] = out


def _warm_up(combos):
    """One untimed fit of every DP combination and counterpart on small data: the first fit of a
    class in a process is several times slower (imports, caches), which used to flatter the ratios."""
    X, y_reg = _dense_data(500, "regression", seed=1)
    y_bin = (y_reg > 0).astype(int)
    for task, y in (("regression", y_reg), ("binary", y_bin)):
        for combo in combos[task]:
            safe_call(_one_fit, _counterpart(combo.family)[1], X, y)
            safe_call(_one_fit, _dp_make(combo, task, float(np.sqrt(P_DENSE)), {"max_iter": 2}), X, y)


def run(ctx):
    from threadpoolctl import threadpool_limits

    quick = ctx.quick
    ns = N_QUICK if quick else N_FULL
    repeats = 3 if quick else 5
    combos = {"regression": discover_combos("regression")[0], "binary": discover_combos("binary")[0]}
    results, history = {}, {}
    t0 = time.perf_counter()
    mem_n = 10000
    iter_n = 30000 if quick else ns[-1]
    with threadpool_limits(1):
        _warm_up(combos)
        for n in sorted(set(ns) | {iter_n}):
            X, y_reg = _dense_data(n, "regression")
            y_bin = (y_reg > 0).astype(int)
            _bench_data(ctx, f"dense n={n}", X, y_reg, y_bin, float(np.sqrt(P_DENSE)), combos, repeats,
                        do_mem=(n == mem_n), do_iter=(n == iter_n), results=results, history=history,
                        do_fit=(n in ns))
        ds = _news20(ctx)
        if ds is not None and quick:
            ds = D._subsample(ds, QUICK_NEWS20, None)
        if ds is not None:
            X = ds.X_train
            y_bin = ds.y_train
            y_reg = ds.y_train.astype(float)
            _bench_data(ctx, "news20", X, y_reg, y_bin, 1.0, combos, repeats, do_mem=True, do_iter=True,
                        results=results, history=history)
    el = time.perf_counter() - t0
    text = _report(ctx, results, ns, repeats, mem_n, iter_n, el)
    write_result(ctx, "speed.md", text)
    png = _plot(ctx, results, ns)
    if png:
        with open(ctx.results_dir / "speed.md", "a") as f:
            f.write(f"\n![fit-time ratio vs n]({png})\n")
    (ctx.results_dir / "speed.json").write_text(json.dumps(results, indent=1, default=float))
    steps_md = step_report(quick)
    with open(ctx.results_dir / "speed.md", "a") as f:
        f.write("\n" + steps_md)
    return results


def step_report(quick):
    """Markdown: per-step cost of every iterative solver, Gram formation, default fits vs scikit-learn."""
    if quick:
        rows = step_table(step_datasets(20_000, 100, (5_000, 20_000), 0.005))
        fits = fit_table(100_000, mem=True)
    else:
        rows = step_table(step_datasets())
        fits = fit_table(1_000_000, mem=True)
    out = ["### Per-step cost (issue 11, item 1)", "",
           "Marginal time per step of `run_<solver>` (min over repeats of t(T=13) - t(T=3), / 10) divided by "
           "one `X.T @ (X @ w)` on the same normalized data, one BLAS thread. `gram` rows: the one-off "
           "formation of X^T X (in units of one product); a Gram-path step then costs O(p^2).", "",
           md_table(["data", "solver", "loss", "set", "ms / step", "ratio"],
                    [[r[0], r[1], r[2], r[3], fmt(r[4]), fmt(r[5])] for r in rows]), "",
           "### Default fits vs scikit-learn (issue 11, acceptance)", "",
           "fixed = fit with max_iter=1 (validation, normalization, plan); step = marginal cost of one step; "
           "fit = default fit (measured, or predicted as fixed + (T - 1) step when marked *); peak = tracemalloc "
           "peak of the default fit / X.nbytes (new allocations; X itself not counted).", "",
           md_table(["estimator", "solver", "T", "sklearn s", "fixed s", "step s", "step / X^T(Xw)", "fit s",
                     "ratio", "peak / X"],
                    [[r["estimator"], r["solver"], r["T"], fmt(r["sk"]), fmt(r["fixed"]), fmt(r["step"]),
                      fmt(r["step_ratio"]), fmt(r["fit"]) + ("" if r["measured"] else "*"), fmt(r["ratio"]),
                      fmt(r["peak_over_X"])] for r in fits])]
    return "\n".join(out) + "\n"


def _ratio(a, b):
    if a is None or b is None or b <= 0:
        return None
    return a / b


def _report(ctx, results, ns, repeats, mem_n, iter_n, elapsed):
    all_labels = list(results)
    labels = [lab for lab in all_labels if results[lab].get("fit_measured", True)]
    all_dp = []
    for lab in labels:
        for k in results[lab]["dp"]:
            if k not in all_dp:
                all_dp.append(k)
    fam_of = {k: results[lab]["dp"][k]["family"] for lab in all_labels for k in results[lab]["dp"]}
    lines = [
        f"- data: dense synthetic X ~ N(0, 1)^(n x {P_DENSE}) (standardized design, data_norm = sqrt(p)), "
        "y = X w + N(0, 0.25) (regression, bounds_y = (-4, 4)) or 1[y > 0] (classification); "
        + ("and news20 class-1-vs-rest (sparse CSR, unit rows, data_norm = 1; regression fits use the 0/1 label)"
           if "news20" in results else "news20 not available"),
        "- DP fits: epsilon = 1, delta = 1e-6, random_state = 0, estimator defaults otherwise (default T)",
        f"- timing: median wall time over >= {repeats} fits (fast fits repeated until 0.3 s; a fit slower than "
        f"{SLOW_CUT:.0f} s is run once), one BLAS thread (threadpoolctl), sequential, same process, same data",
        "- metric: **ratio = DP fit time / scikit-learn counterpart fit time** (1 = as fast; the counterpart "
        "and its absolute time are listed for reference)",
        f"- total wall time of this section: {elapsed:.1f} s",
    ]
    if ctx.quick:
        lines.append(f"- QUICK MODE: n ∈ {ns} (full mode: {N_FULL}), >= {repeats} repeats, fits slower than "
                     f"{QUICK_SLOW_CUT:g} s run once, configurations predicted to take > {QUICK_MAX_FIT:.0f} s per fit "
                     f"skipped (marked); peak memory not measured for fits slower than {QUICK_SLOW_CUT:g} s; news20 "
                     f"train split subsampled to {QUICK_NEWS20} rows")
    out = ["# Section 3: speed against scikit-learn", "",
           header_block("Fit-time ratio DP / scikit-learn", ctx, lines)]
    headers = ["DP estimator (solver)", "counterpart"] + labels
    rows = []
    for k in all_dp:
        fam = fam_of[k]
        cells = []
        for lab in labels:
            r = results[lab]["dp"].get(k)
            sk = results[lab]["sk"].get(fam, {})
            if r is None:
                cells.append("n/a")
            elif r.get("skipped"):
                cells.append(f"skipped in quick mode ({r['skipped']})")
            elif r.get("error"):
                cells.append("error")
            else:
                ratio = _ratio(r["time"], sk.get("time"))
                cells.append(f"{fmt(ratio, 2)}× (T={r['n_iter']})" if ratio is not None else "n/a")
        cp = next((results[lab]["sk"][fam]["name"] for lab in labels if fam in results[lab]["sk"]), "?")
        rows.append([k, cp] + cells)
    for fam in ("ridge", "lasso", "logistic-l2", "logistic-l1"):
        cells = []
        name = None
        for lab in labels:
            sk = results[lab]["sk"].get(fam)
            if sk:
                name = sk["name"]
            cells.append(f"{sk['time'] * 1e3:.1f} ms" if sk and sk.get("time") is not None else "n/a")
        if name:
            rows.append([f"(reference) sklearn {name} absolute time", "—"] + cells)
    out.append(md_table(headers, rows) + "\n")

    # memory
    mem_labels = [lab for lab in labels if any("mem" in r for r in results[lab]["dp"].values())]
    if mem_labels:
        out.append(header_block("Peak memory of one fit (tracemalloc)", ctx, [
            f"- datasets: {', '.join(mem_labels)}",
            "- metric: peak traced allocation during fit (numpy + Python; BLAS-internal buffers not traced), "
            "as a ratio to the scikit-learn counterpart's peak and to the size of X in memory"]))
        headers = ["DP estimator (solver)"] + [f"{lab}: {h}" for lab in mem_labels
                                               for h in ("peak MB", "÷ sklearn peak", "÷ size of X")]
        rows = []
        for k in all_dp:
            fam = fam_of[k]
            cells = []
            for lab in mem_labels:
                r = results[lab]["dp"].get(k, {})
                sk = results[lab]["sk"].get(fam, {})
                m = r.get("mem")
                xb = _x_bytes(results[lab])
                cells += [fmt(m / 2**20, 2) if m else "n/a", fmt(_ratio(m, sk.get("mem")), 2) + "×" if m else "n/a",
                          fmt(_ratio(m, xb), 2) + "×" if m and xb else "n/a"]
            rows.append([k] + cells)
        for fam in ("ridge", "lasso", "logistic-l2", "logistic-l1"):
            cells = []
            for lab in mem_labels:
                sk = results[lab]["sk"].get(fam, {})
                m = sk.get("mem")
                xb = _x_bytes(results[lab])
                cells += [fmt(m / 2**20, 2) if m else "n/a", "1×" if m else "n/a",
                          fmt(_ratio(m, xb), 2) + "×" if m and xb else "n/a"]
            if any(c != "n/a" for c in cells):
                rows.append([f"(reference) sklearn {_counterpart(fam)[0]}"] + cells)
        out.append(md_table(headers, rows) + "\n")

    # per-iteration
    it_labels = [lab for lab in all_labels if "matvec" in results[lab]]
    if it_labels:
        out.append(header_block("Per-iteration cost of iterative solvers", ctx, [
            f"- datasets: {', '.join(it_labels)}",
            f"- metric: marginal time per iteration, (t(max_iter={ITER_T[1]}) - t(max_iter={ITER_T[0]})) / "
            f"{ITER_T[1] - ITER_T[0]} (medians), **divided by the time of one X^T (X w)** on the same X "
            "(1 = one full gradient's worth of work per iteration)",
            "- solvers whose fit does not run exactly max_iter iterations are treated as non-iterative and omitted"]))
        headers = ["DP estimator (solver)"] + [f"{lab}: per-iter ÷ X^T(Xw)" for lab in it_labels]
        rows = []
        for k in all_dp:
            cells = []
            for lab in it_labels:
                r = results[lab]["dp"].get(k, {})
                pi = r.get("per_iter")
                cells.append(f"{fmt(pi / results[lab]['matvec'], 2)}×" if pi is not None else "—")
            if any(c != "—" for c in cells):
                rows.append([k] + cells)
        rows.append(["(reference) one X^T (X w)"] + [f"{results[lab]['matvec'] * 1e3:.2f} ms" for lab in it_labels])
        out.append(md_table(headers, rows) + "\n")
    return "\n".join(out)


def _x_bytes(res):
    return res.get("x_bytes")


def _plot(ctx, results, ns):
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except Exception:  # noqa: BLE001
        return None
    dense = [f"dense n={n}" for n in ns if f"dense n={n}" in results]
    if len(dense) < 2:
        return None
    keys = []
    for lab in dense:
        for k in results[lab]["dp"]:
            if k not in keys:
                keys.append(k)
    fig, ax = plt.subplots(figsize=(10.5, 4.8))
    colors = plt.get_cmap("tab20").colors
    for i, k in enumerate(keys):
        xs, ys = [], []
        for n, lab in zip(ns, dense):
            r = results[lab]["dp"].get(k, {})
            sk = results[lab]["sk"].get(r.get("family"), {})
            rt = _ratio(r.get("time"), sk.get("time"))
            if rt:
                xs.append(n)
                ys.append(rt)
        if xs:
            ax.plot(xs, ys, marker="os^vD<>pXh*"[i % 11], color=colors[i % len(colors)],
                    label=k.replace("DPLogisticRegression", "DPLogReg"))
    ax.axhline(1.0, color="k", lw=0.8)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("n (dense, p = 50)")
    ax.set_ylabel("fit time DP / scikit-learn")
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5))
    fig.tight_layout()
    fname = "speed_ratio.png"
    fig.savefig(ctx.results_dir / fname, dpi=110)
    plt.close(fig)
    return fname


# --------------------------------------------------------------------------- per-step cost (issue 11)
STEP_SOLVERS = (
    ("noisy_gd", "squared", "none"), ("noisy_gd", "logistic", "none"),
    ("mirror_descent", "squared", "l1"), ("mirror_descent", "squared", "l2"),
    ("frank_wolfe", "squared", "l1"), ("frank_wolfe_gaussian", "squared", "l2"),
    ("ight", "squared", "l0"),
)


def step_problem(X, y, loss_name, data_norm):
    """The normalized :class:`Problem` and its :class:`PublicProblem` an estimator would build."""
    from dp_sklearn._data import Problem, normalize_X
    from dp_sklearn._losses import LogisticLoss, SquaredLoss
    from dp_sklearn.solvers._base import PublicProblem

    Xt, x_norm, x_inf = normalize_X(X, data_norm, 2, True)
    loss = {"squared": SquaredLoss, "logistic": LogisticLoss}[loss_name]()
    yt = np.clip(y / 4.0, -1, 1) if loss.needs_target_bound else np.where(y > 0, 1.0, -1.0)
    if sp.issparse(Xt):
        row_norms = np.sqrt(np.asarray(Xt.multiply(Xt).sum(axis=1)).ravel())
    else:
        row_norms = np.linalg.norm(Xt, axis=1)
    l2_reg = 1e-3
    public = PublicProblem(Xt.shape[0], Xt.shape[1], x_norm, x_inf, loss, l2_reg)
    return Problem(Xt, yt, loss, x_norm, x_inf, row_norms, l2_reg), public


def step_constraint(name, public):
    from dp_sklearn._sets import L0Set, L1Ball, L2Ball, Unconstrained

    return {"none": Unconstrained(), "l1": L1Ball(1.0), "l2": L2Ball(1.0),
            "l0": L0Set(max(1, public.dim // 10), n_free=1)}[name]


def step_cost(solver, problem, public, constraint, t_pair=(3, 13), repeats=3, full_batch=True, batch_size=None):
    """Marginal seconds per step of ``run_<solver>``: (t(T2) - t(T1)) / (T2 - T1), min over repeats.

    ``full_batch``: noisy_gd with full batches (``batch_size=n``); else ``batch_size``
    (the expected batch of the default plan, see :func:`_default_batch`).
    """
    import importlib

    mod = importlib.import_module(f"dp_sklearn.solvers._{solver}")
    plan_f, run_f = getattr(mod, f"plan_{solver}"), getattr(mod, f"run_{solver}")
    kw = {} if solver == "frank_wolfe" else {"l2_reg": public.l2_reg}
    if solver == "noisy_gd":
        kw = {"l2_reg": public.l2_reg, "batch_size": public.n if full_batch else batch_size}
    times = []
    for T in t_pair:
        plan = plan_f(public, constraint, epsilon=1.0, delta=1e-6, max_iter=T, **kw)
        best = np.inf
        for _ in range(repeats):
            rng = np.random.default_rng(0)
            t0 = time.perf_counter()
            run_f(problem, plan, rng)
            best = min(best, time.perf_counter() - t0)
        times.append(best)
    return max(times[1] - times[0], 0.0) / (t_pair[1] - t_pair[0])


def step_table(datasets, solvers=STEP_SOLVERS, t_pair=(3, 13)):
    """Rows (data, solver, loss, set, ms/step, ratio to one X^T (X w)) on one BLAS thread."""
    from threadpoolctl import threadpool_limits

    rows = []
    with threadpool_limits(1):
        for label, X, y, data_norm in datasets:
            for solver, loss_name, cname in solvers:
                problem, public = step_problem(X, y, loss_name, data_norm)
                mv = _matvec_time(problem.X)
                c = step_cost(solver, problem, public, step_constraint(cname, public), t_pair)
                rows.append((label, solver, loss_name, cname, 1e3 * c, c / mv))
                print(f"{label:24s} {solver:22s} {loss_name:9s} {cname:5s} {1e3 * c:8.2f} ms/step "
                      f"{c / mv:6.2f}x X^T(Xw) ({1e3 * mv:.2f} ms)", flush=True)
            if problem.X.shape[1] <= 2000:
                from dp_sklearn._gram import GramGradient

                t0 = time.perf_counter()
                GramGradient(problem.X, problem.y)
                c = time.perf_counter() - t0
                rows.append((label, "gram", "squared", "-", 1e3 * c, c / mv))
                print(f"{label:24s} gram formation {1e3 * c:8.2f} ms = {c / mv:6.2f}x X^T(Xw)", flush=True)
    return rows


def step_datasets(n_dense=100_000, p_dense=100, sparse_shape=(20_000, 50_000), density=0.005):
    """Dense N(0, 1) n x p and random CSR at ``density`` (the issue's per-step configurations)."""
    rng = np.random.default_rng(0)
    Xd, yd = D.dense_regression(n_dense, p_dense, rng)
    Xs = sp.random(*sparse_shape, density=density, format="csr", random_state=1, dtype=np.float64)
    ys = np.asarray(Xs.sum(axis=1)).ravel() + rng.standard_normal(sparse_shape[0])
    return [(f"dense {n_dense}x{p_dense}", Xd, yd, float(np.sqrt(p_dense))),
            (f"csr {sparse_shape[0]}x{sparse_shape[1]}@{density}", Xs, ys, float(np.sqrt(density * sparse_shape[1])))]


_STEP_SET = {"noisy_gd": "none", "frank_wolfe": "l1", "ight": "l0"}


def _default_estimators(n):
    from sklearn.linear_model import Lasso, LogisticRegression, Ridge

    from dp_sklearn import DPLasso, DPLogisticRegression, DPRidge

    kw = {"epsilon": 1.0, "delta": 1.0 / n, "random_state": 0, "data_norm": float(np.sqrt(100))}
    return [
        ("DPRidge", "regression", lambda **o: DPRidge(bounds_y=(-4.0, 4.0), **kw, **o), lambda: Ridge(alpha=1.0)),
        ("DPLasso", "regression", lambda **o: DPLasso(bounds_y=(-4.0, 4.0), **kw, **o), lambda: Lasso(alpha=0.01)),
        ("DPLogisticRegression", "binary", lambda **o: DPLogisticRegression(**kw, **o),
         lambda: LogisticRegression(C=1.0, max_iter=1000)),
    ]


def _one_fit(make, X, y):
    with warnings.catch_warnings():
        setup_warnings()
        t0 = time.perf_counter()
        est = make().fit(X, y)
        return time.perf_counter() - t0, est


def fit_table(n=1_000_000, p=100, full_fit_cut=120.0, mem=True):
    """Default fits vs scikit-learn on dense N(0, 1) n x p, one BLAS thread.

    For each estimator: the scikit-learn time, the DP default T (``n_iter_`` of a fit
    with ``max_iter`` 1 vs the default plan), the fixed cost ``t(T=1)`` (validation,
    normalization, plan), the marginal cost per step of the solver's run on the same
    data (:func:`step_cost`), the
    whole default fit (measured when predicted under ``full_fit_cut`` seconds, else
    predicted as ``t(1) + (T - 1) step``) and the peak traced memory / X.nbytes.
    """
    from threadpoolctl import threadpool_limits

    rng = np.random.default_rng(0)
    X, y_reg = D.dense_regression(n, p, rng)
    y_bin = (y_reg > 0).astype(int)
    rows = []
    with threadpool_limits(1):
        mv = _matvec_time(X)
        for name, task, make_dp, make_sk in _default_estimators(n):
            y = y_reg if task == "regression" else y_bin
            _one_fit(make_sk, X, y)  # warm-up: a cold first fit is 2.7-4.3x slower (issue 22)
            t_sk = float(np.median([_one_fit(make_sk, X, y)[0] for _ in range(3)]))
            t1, e1 = _one_fit(lambda: make_dp(max_iter=1), X, y)
            loss_name = "squared" if task == "regression" else "logistic"
            problem, public = step_problem(X, y, loss_name, float(np.sqrt(p)))
            cname = _STEP_SET.get(e1.solver_, "l2")
            cons = step_constraint(cname, public)
            T = _default_T(make_dp(), X, y)
            batch = _default_batch(n, T)
            step = step_cost(e1.solver_, problem, public, cons, (2, 7), repeats=2, full_batch=False, batch_size=batch)
            if step < 0.2 * mv:  # an O(p^2) Gram-path or sampled step: resolve it over many steps
                step = step_cost(e1.solver_, problem, public, cons, (2, 102), repeats=2, full_batch=False,
                                 batch_size=batch)
            del problem
            pred = t1 + (T - 1) * step
            measured = pred <= full_fit_cut
            t_full = _one_fit(make_dp, X, y)[0] if measured else pred
            peak = _peak_mem(make_dp, X, y) / X.nbytes if mem else float("nan")
            row = dict(estimator=name, solver=e1.solver_, T=T, sk=t_sk,
                       fixed=t1, step=step, step_ratio=step / mv, fit=t_full, measured=measured,
                       ratio=t_full / t_sk, peak_over_X=peak)
            rows.append(row)
            print(json.dumps(row, default=float), flush=True)
    print(f"one X^T (X w): {1e3 * mv:.1f} ms; X.nbytes = {X.nbytes / 1e6:.0f} MB", flush=True)
    return rows


def _default_batch(n, T, epsilon=1.0):
    """Expected batch size of noisy_gd's default plan at (n, T) (None: full batches)."""
    from dp_sklearn.solvers._noisy_gd import default_sampling_rate

    q = default_sampling_rate(n, T, epsilon, 1.0 / n)
    return None if q == 1.0 else max(1, int(round(q * n)))


def _default_T(est, X, y):
    """T of ``est``'s default plan: a fit whose solver run is stubbed out (plans use public values only)."""
    from dp_sklearn.linear_model._base import _DPLinearBase

    captured = {}
    real_run = _DPLinearBase._run

    def fake_run(self, spec, problem, constraint, plan, kwargs, rng):
        captured["T"] = plan.n_iter if plan is not None else 1
        return np.zeros(problem.dim), captured["T"]

    _DPLinearBase._run = fake_run
    try:
        with warnings.catch_warnings():
            setup_warnings()
            est.set_params(max_iter=None).fit(X, y)
    finally:
        _DPLinearBase._run = real_run
    return captured.get("T", -1)


# --------------------------------------------------------------------------- default fits (issue 22)
#: the default-fit grid: n x p (dense N(0, 1) design) and news20
DEFAULT_NS, DEFAULT_PS = (1_000, 10_000, 100_000, 1_000_000), (20, 100)
QUICK_NS, QUICK_PS = (1_000, 10_000, 100_000), (20,)
#: a configuration's fits are repeated (interleaved) until each has this many timings ...
DEFAULT_REPEATS, QUICK_REPEATS = 5, 3
#: ... unless one round of them already took longer than this (seconds): then fewer rounds
ROUND_BUDGET = 60.0
#: an estimator whose DP fit took longer than this (seconds) is not run at the larger sizes ...
SKIP_AFTER = 5.0
#: ... except these (the issue's acceptance estimators), always run
NEVER_SKIPPED = ("DPRidge", "DPLasso", "DPLogisticRegression")
README_BEGIN, README_END = "<!-- speed-defaults:begin -->", "<!-- speed-defaults:end -->"


def default_estimators():
    """(name, task, make_dp(n), scikit-learn counterpart name, make_sk, diffprivlib model or None).

    Every public estimator with a ``fit(X, y)`` at its defaults; only ``random_state`` (for
    reproducibility) and ``delta`` (``min(1e-5, 1 / (10 n))``: the default 1e-5 is above
    1/n at n >= 1e5) are set.
    """
    from sklearn.linear_model import Lasso, LogisticRegression, Ridge, SGDClassifier, SGDRegressor

    import dp_sklearn as dps

    def dp(cls):
        return lambda n: getattr(dps, cls)(delta=min(1e-5, 0.1 / n), random_state=0)

    return [
        ("DPRidge", "regression", dp("DPRidge"), "Ridge()", lambda: Ridge(), "LinearRegression"),
        ("DPLasso", "regression", dp("DPLasso"), "Lasso(alpha=0.01)", lambda: Lasso(alpha=0.01), None),
        ("DPLogisticRegression", "binary", dp("DPLogisticRegression"), "LogisticRegression()",
         lambda: LogisticRegression(), "LogisticRegression"),
        ("DPSparseLinearRegression", "regression", dp("DPSparseLinearRegression"), "Lasso(alpha=0.01)",
         lambda: Lasso(alpha=0.01), None),
        ("DPSparseLogisticRegression", "binary", dp("DPSparseLogisticRegression"),
         "LogisticRegression(l1, liblinear)", lambda: LogisticRegression(l1_ratio=1.0, solver="liblinear"), None),
        ("DPOnlineRegressor", "regression", dp("DPOnlineRegressor"), "SGDRegressor()", lambda: SGDRegressor(), None),
        ("DPOnlineClassifier", "binary", dp("DPOnlineClassifier"), "SGDClassifier()", lambda: SGDClassifier(), None),
    ]


class _PlanCapture:
    """Records the plan of each batch fit (public: n_iter, sampling rate) to count passes over the data."""

    def __enter__(self):
        from dp_sklearn.linear_model._base import _DPLinearBase

        self.cls, self.real, self.plans = _DPLinearBase, _DPLinearBase._run, []
        capture = self

        def run(est, spec, problem, constraint, plan, kwargs, rng):
            capture.plans.append(plan)
            return capture.real(est, spec, problem, constraint, plan, kwargs, rng)

        _DPLinearBase._run = run
        return self

    def __exit__(self, *exc):
        self.cls._run = self.real

    def passes(self):
        """Passes over the data of the last fit's solver: ``plan.info["passes"]`` when the solver
        states it, else ``n_iter * sampling_rate`` (one per full-batch step)."""
        if not self.plans or self.plans[-1] is None:
            return None
        plan = self.plans[-1]
        if "passes" in plan.info:
            return float(plan.info["passes"])
        return float(plan.n_iter * plan.info.get("sampling_rate", 1.0))


class _DiffprivlibWorker:
    """A diffprivlib timing worker (``benchmarks/_dpl_worker.py``) in its own environment."""

    def __init__(self, python):
        import pathlib
        import subprocess

        worker = pathlib.Path(__file__).with_name("_dpl_worker.py")
        env = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "PATH": "/usr/bin:/bin"}
        self.proc = subprocess.Popen([python, str(worker)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                     env=env)
        self.version = json.loads(self.proc.stdout.readline())["version"]

    def ask(self, **cmd):
        self.proc.stdin.write(json.dumps(cmd) + "\n")
        self.proc.stdin.flush()
        return json.loads(self.proc.stdout.readline())

    def close(self):
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


def _start_diffprivlib(python):
    """The worker, or ``(None, note)`` when diffprivlib's environment is absent or broken."""
    import pathlib

    if not python or not pathlib.Path(python).exists():
        return None, f"diffprivlib skipped: no environment at {python!r} (create it with `python -m venv /tmp/dpl && " \
                     "/tmp/dpl/bin/pip install 'scikit-learn<1.6' diffprivlib threadpoolctl`)"
    try:
        w = _DiffprivlibWorker(python)
    except Exception as exc:  # noqa: BLE001
        return None, f"diffprivlib skipped: worker failed to start ({exc})"
    return w, f"diffprivlib {w.version} in {python} (its own environment, scikit-learn < 1.6), one BLAS thread"


def _save_for_worker(path, X, y_reg, y_bin):
    if sp.issparse(X):
        np.savez(path, data=X.data, indices=X.indices, indptr=X.indptr, shape=np.asarray(X.shape), y_reg=y_reg,
                 y_bin=y_bin)
    else:
        np.savez(path, X=X, y_reg=y_reg, y_bin=y_bin)


def _timed_fit(make, X, y):
    with warnings.catch_warnings():
        setup_warnings()
        warnings.simplefilter("ignore")
        est = make()
        t0 = time.perf_counter()
        est.fit(X, y)
        dt = time.perf_counter() - t0
    return dt, est


def _config_rows(label, X, y_reg, y_bin, ests, repeats, worker, tmpdir, dp_x_bound):
    """Interleaved timings of every estimator, its counterpart and diffprivlib's on one dataset.

    Round r fits, in turn, each DP estimator, its scikit-learn counterpart and the diffprivlib
    model (worker process); medians over the rounds. Each side's first fit on this data is a
    warm-up (not timed) when it is faster than ``ROUND_BUDGET / 10``.
    """
    n = X.shape[0]
    if worker is not None:
        path = f"{tmpdir}/data.npz"
        _save_for_worker(path, X, y_reg, y_bin)
        worker.ask(load=path)
    sides = []
    for name, task, make_dp, sk_name, make_sk, dpl in ests:
        y = y_reg if task == "regression" else y_bin
        sides.append((name, "dp", lambda m=make_dp: m(n), y))
        sides.append((name, "sk", make_sk, y))
        if worker is not None and dpl is not None:
            sides.append((name, "dpl", dpl, y))
    times = {(s[0], s[1]): [] for s in sides}
    info = {}
    dpl_kw = {"x_bound": dp_x_bound, "data_norm": float(np.sqrt(X.shape[1])) if not sp.issparse(X) else 1.0}

    def one(name, side, make, y):
        if side == "dpl":
            r = worker.ask(fit=make, epsilon=1.0, **dpl_kw)
            if "error" in r:
                info[(name, "dpl_error")] = r["error"]
                return None
            return r["time"]
        with _PlanCapture() as cap:
            try:
                dt, est = _timed_fit(make, X, y)
            except Exception as exc:  # noqa: BLE001 -- an estimator that cannot fit this data: a table note
                info[(name, side + "_error")] = f"{type(exc).__name__}: {exc}"[:200]
                return None
        if side == "dp":
            info[(name, "solver")] = getattr(est, "solver_", getattr(est, "solver", "?"))
            info[(name, "n_iter")] = int(np.max(getattr(est, "n_iter_", 1)))
            info[(name, "passes")] = cap.passes()
        return dt

    for name, side, make, y in sides:  # warm-up on this data (cold first fits are 2.7-4.3x slower)
        t = one(name, side, make, y)
        if t is not None and t < ROUND_BUDGET / 10:
            continue
        if t is not None:
            times[(name, side)].append(t)  # slow: its first fit counts as a repeat
    t_start = time.perf_counter()
    for r in range(repeats):
        for name, side, make, y in sides:
            if (name, side + "_error") in info:
                continue
            if len(times[(name, side)]) > r:
                continue
            t = one(name, side, make, y)
            if t is not None:
                times[(name, side)].append(t)
        if time.perf_counter() - t_start > 3 * ROUND_BUDGET:  # slow configuration: fewer rounds
            break
    rows = []
    for name, task, make_dp, sk_name, make_sk, dpl in ests:
        med = {s: (float(np.median(times[(name, s)])) if times.get((name, s)) else None) for s in ("dp", "sk", "dpl")}
        rows.append({"data": label, "estimator": name, "counterpart": sk_name, "dpl": dpl,
                     "solver": info.get((name, "solver")), "n_iter": info.get((name, "n_iter")),
                     "passes": info.get((name, "passes")), "dp_s": med["dp"], "sk_s": med["sk"], "dpl_s": med["dpl"],
                     "repeats": len(times[(name, "dp")]), "ratio_sk": _ratio(med["dp"], med["sk"]),
                     "ratio_dpl": _ratio(med["dp"], med["dpl"]),
                     "errors": {k[1]: v for k, v in info.items() if k[0] == name and k[1].endswith("_error")}})
        r = rows[-1]
        print(f"  {label:>16} {name:<27} {str(r['solver']):<14} T={r['n_iter']} passes={fmt(r['passes'])} "
              f"dp {fmt(r['dp_s'])} s sk {fmt(r['sk_s'])} s x{fmt(r['ratio_sk'])} dpl x{fmt(r['ratio_dpl'])}"
              f" {r['errors'] or ''}", flush=True)
    return rows


def _news20_rows(data_dir, quick, notes, ests, repeats, worker, tmp):
    """The news20 configuration (CSR), or no rows with a note when the file is absent."""
    if data_dir is None:
        notes.append("news20 skipped (no --data-dir)")
        return []
    ds, err = safe_call(D.load_news20, data_dir)
    if err:
        notes.append(f"news20 skipped ({err})")
        return []
    if quick:
        ds = D._subsample(ds, QUICK_NEWS20, None)
    X = ds.X_train
    return _config_rows(f"news20 {X.shape[0]} x {X.shape[1]} CSR", X, ds.y_train.astype(float), ds.y_train, ests,
                        repeats, worker, tmp, 1.0)


def _skipped_row(label, est, why):
    """A table row for an estimator not run at this size (its fit exceeded ``SKIP_AFTER`` at a smaller n)."""
    return {"data": label, "estimator": est[0], "counterpart": est[3], "dpl": est[5], "solver": None, "n_iter": None,
            "passes": None, "dp_s": None, "sk_s": None, "dpl_s": None, "repeats": 0, "ratio_sk": None,
            "ratio_dpl": None, "errors": {"skipped": f"not run: {why} (> {SKIP_AFTER:g} s)"}}


def _load_avg():
    try:
        with open("/proc/loadavg") as f:
            return " ".join(f.read().split()[:3])
    except OSError:
        return "n/a"


def default_fits(quick=False, data_dir=None, dpl_python="/tmp/dpl/bin/python", only=None, on_rows=None,
                 ns=None, ps=None, news20=True):
    """Default fit of every estimator vs scikit-learn (and diffprivlib), interleaved, one BLAS thread.

    Returns ``(rows, notes)``; see :func:`default_fits_markdown` for the table. ``on_rows(rows,
    notes)`` is called after each configuration (partial results survive an interrupted run).
    ``ns``, ``ps`` (sequences of int) restrict the grid and ``news20=False`` leaves news20 out
    (a subset run; ``None``: the full or quick grid).
    """
    import tempfile

    from threadpoolctl import threadpool_limits

    ests = [e for e in default_estimators() if only is None or e[0] in only]
    grid_ns, grid_ps = (QUICK_NS, QUICK_PS) if quick else (DEFAULT_NS, DEFAULT_PS)
    ns, ps = tuple(ns or grid_ns), tuple(ps or grid_ps)
    repeats = QUICK_REPEATS if quick else DEFAULT_REPEATS
    worker, note = _start_diffprivlib(dpl_python)
    notes = [note, f"load average at start: {_load_avg()} (2 cores shared with other jobs)"]
    rows = []
    t0 = time.perf_counter()
    try:
        with threadpool_limits(1), tempfile.TemporaryDirectory() as tmp:
            Xw, yw = D.dense_regression(2000, 20, np.random.default_rng(1))  # process warm-up (cold imports)
            _config_rows("warm-up", Xw, yw, (yw > 0).astype(int), ests, 1, worker, tmp, 4.0)
            slow = {p: {} for p in ps}
            # n ascending with every p at each n, news20 before the largest n: an interrupted run
            # still has every smaller configuration
            order = [(n, p) for n in ns[:-1] for p in ps] + [("news20", None)] * bool(news20) \
                + [(ns[-1], p) for p in ps]
            for n, p in order:
                if n == "news20":
                    rows += _news20_rows(data_dir, quick, notes, ests, repeats, worker, tmp)
                    if on_rows is not None:
                        on_rows(rows, notes + ["PARTIAL: news20 done"])
                    continue
                slow_p = slow[p]
                X, y_reg = D.dense_regression(n, p, np.random.default_rng(0))
                label = f"dense {n:.0e} x {p}".replace("e+0", "e")
                rows += _config_rows(label, X, y_reg, (y_reg > 0).astype(int),
                                     [e for e in ests if e[0] not in slow_p], repeats, worker, tmp, 4.0)
                rows += [_skipped_row(label, e, slow_p[e[0]]) for e in ests if e[0] in slow_p]
                slow_p.update({r["estimator"]: f"DP fit {r['dp_s']:.1f} s at {r['data']}" for r in rows
                               if r["data"] == label and (r["dp_s"] or 0) > SKIP_AFTER
                           and r["estimator"] not in NEVER_SKIPPED})
                if on_rows is not None:
                    on_rows(rows, notes + [f"PARTIAL: up to dense {n} x {p}"])
                del X, y_reg
                gc.collect()
    finally:
        if worker is not None:
            worker.close()
    notes.append(f"load average at end: {_load_avg()}; wall time {time.perf_counter() - t0:.0f} s")
    return rows, notes


def default_fits_markdown(rows, notes, command, quick, ns=None, ps=None):
    """The README table of :func:`default_fits` (generated, never typed); ``ns``, ``ps``: a subset run's grid."""
    grid_ns, grid_ps = (QUICK_NS, QUICK_PS) if quick else (DEFAULT_NS, DEFAULT_PS)
    ns, ps = ns or grid_ns, ps or grid_ps
    head = ["### Default fits against scikit-learn and diffprivlib (issue 22)", "",
            f"- command: `{command}`" + (" (QUICK MODE)" if quick else ""),
            f"- data: dense X ~ N(0, 1)^(n x p), n in {list(ns)}, p in {list(ps)}, y = X w + N(0, 0.25) "
            "(regression) or 1[y > 0] (classification); news20 class 1 vs rest (CSR, unit rows; regressions fit "
            "the 0/1 label)",
            "- DP fits: every parameter at its default except random_state=0 and delta = min(1e-5, 1/(10 n)); "
            "epsilon = 1. diffprivlib: epsilon = 1 with public bounds passed (bounds_X = +-4 per feature, "
            "bounds_y = (-4, 4); data_norm = sqrt(p))",
            "- timing: one BLAS thread; every side warmed up on the same data, then fitted in interleaved rounds "
            "(DP, scikit-learn, diffprivlib in turn); medians of the rounds (`reps`)",
            "- **ratio = DP fit time / counterpart fit time**; passes = passes of the solver over the data "
            "(full-batch steps, or steps x sampling rate; the solver's own count where it states one)"]
    head += [f"- {n}" for n in notes if n]
    table = md_table(["data", "estimator", "solver", "T", "passes", "DP s", "counterpart", "sklearn s",
                      "÷ sklearn", "÷ diffprivlib", "reps"],
                     [[r["data"], r["estimator"], r["solver"] or "n/a", r["n_iter"] if r["n_iter"] is not None else "n/a",
                       fmt(r["passes"], 3), fmt(r["dp_s"], 3), r["counterpart"], fmt(r["sk_s"], 3),
                       (f"{r['ratio_sk']:.2f}x" if r["ratio_sk"] is not None else
                        ("skipped" if "skipped" in r["errors"] else "error" if r["errors"] else "n/a")),
                       (f"{r['ratio_dpl']:.2f}x" if r["ratio_dpl"] is not None else
                        ("—" if r["dpl"] is None else "n/a")), r["repeats"]] for r in rows])
    errs = [f"- {r['data']} {r['estimator']}: {k} {v}" for r in rows for k, v in r["errors"].items()]
    return "\n".join(head + ["", table] + ([""] + errs if errs else [])) + "\n"


def write_readme_table(md, readme):
    """Replace the block between the README's speed-defaults markers with ``md``."""
    import pathlib

    path = pathlib.Path(readme)
    text = path.read_text()
    if README_BEGIN in text and README_END in text:
        pre, rest = text.split(README_BEGIN, 1)
        post = rest.split(README_END, 1)[1]
        text = pre + README_BEGIN + "\n" + md + README_END + post
    else:
        text = text.rstrip("\n") + "\n\n" + README_BEGIN + "\n" + md + README_END + "\n"
    path.write_text(text)


def main_defaults(argv):
    """``python -m benchmarks.speed defaults [--quick] [--data-dir D] [--dpl-python P] [--only A,B] [--no-readme]``."""
    import argparse
    import pathlib
    import shlex

    ap = argparse.ArgumentParser(prog="python -m benchmarks.speed defaults")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--data-dir", default="/work/shared/data")
    ap.add_argument("--dpl-python", default="/tmp/dpl/bin/python")
    ap.add_argument("--only", default=None, help="comma-separated estimator names")
    ap.add_argument("--no-readme", action="store_true", help="do not rewrite benchmarks/README.md")
    ap.add_argument("--ns", default=None, help="comma-separated n of the dense grid (a subset run)")
    ap.add_argument("--ps", default=None, help="comma-separated p of the dense grid (a subset run)")
    ap.add_argument("--no-news20", action="store_true", help="leave news20 out (a subset run)")
    ap.add_argument("--merge", action="store_true",
                    help="with --only: replace these estimators' rows in the full run's results "
                         "(benchmarks/results/speed_defaults.json) and regenerate its table and the README's")
    args = ap.parse_args(argv)
    only = set(args.only.split(",")) if args.only else None
    command = ("python -m benchmarks.speed defaults " + " ".join(shlex.quote(a) for a in argv)).strip()
    here = pathlib.Path(__file__).parent
    name = "speed_defaults_quick" if args.quick else "speed_defaults"
    if only is not None:
        name += "_only_" + "_".join(sorted(only))
    ns = [int(float(v)) for v in args.ns.split(",")] if args.ns else None
    ps = [int(v) for v in args.ps.split(",")] if args.ps else None
    subset = ns is not None or ps is not None or args.no_news20
    if subset:
        name += "_subset"

    def save(rows, notes):
        md = default_fits_markdown(rows, notes, command, args.quick, ns, ps)
        (here / "results" / f"{name}.md").write_text(md)
        (here / "results" / f"{name}.json").write_text(json.dumps({"rows": rows, "notes": notes}, indent=1,
                                                                  default=str))
        return md

    rows, notes = default_fits(args.quick, args.data_dir if pathlib.Path(args.data_dir).exists() else None,
                               args.dpl_python, only, on_rows=save, ns=ns, ps=ps, news20=not args.no_news20)
    md = save(rows, notes)
    if subset and args.merge:
        raise SystemExit("--merge takes the full grid (no --ns, --ps or --no-news20).")
    if only is not None and args.merge:
        md = _merge_into_full(here, rows, notes, only, command, args.quick)
    if not args.no_readme and not subset and (only is None or args.merge):
        write_readme_table(md, here / "README.md")
    print(md)


def _merge_into_full(here, rows, notes, only, command, quick):
    """Replace the rows of the estimators ``only`` in the full run's results with this run's; returns the table."""
    name = "speed_defaults_quick" if quick else "speed_defaults"
    path = here / "results" / f"{name}.json"
    full = json.loads(path.read_text())
    order = {}
    for r in full["rows"] + rows:
        order.setdefault(r["data"], len(order))
    merged = [r for r in full["rows"] if r["estimator"] not in only] + rows
    names = [e[0] for e in default_estimators()]
    merged.sort(key=lambda r: (order[r["data"]], names.index(r["estimator"]) if r["estimator"] in names else 99))
    merged_notes = full["notes"] + [f"rows of {', '.join(sorted(only))} re-measured by `{command}`: "
                                    + "; ".join(notes)]
    full_command = f"python -m benchmarks.speed defaults{' --quick' if quick else ''}"
    md = default_fits_markdown(merged, merged_notes, full_command, quick)
    path.write_text(json.dumps({"rows": merged, "notes": merged_notes}, indent=1, default=str))
    (here / "results" / f"{name}.md").write_text(md)
    return md


if __name__ == "__main__":
    import sys

    if sys.argv[1:2] == ["defaults"]:
        main_defaults(sys.argv[2:])
    if sys.argv[1:2] == ["steps"]:
        step_table(step_datasets())
    if sys.argv[1:2] == ["fits"]:
        fit_table(int(float(sys.argv[2])) if len(sys.argv) > 2 else 1_000_000)
