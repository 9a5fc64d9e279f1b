"""Section 1: privacy-utility curves on real data.

Every estimator x applicable solver (discovered from the registry) at each epsilon,
over several seeds, beside non-private scikit-learn and the trivial predictor.
"""

from __future__ import annotations

import csv
import json
import time
import warnings

import numpy as np
from joblib import Parallel, delayed

from . import datasets as D
from .common import (Timer, discover_combos, fmt, fmt_ms, header_block, md_table, safe_call,
                     setup_warnings, write_result)
from .private_rows import private_combos, raw_view

EPS_FULL = [0.1, 0.5, 1.0, 2.0, 5.0, 10.0]
EPS_QUICK = [0.1, 1.0, 10.0]
SEEDS_FULL = 10
SEEDS_QUICK = 3
DELTA = 1e-5

#: hyperparameters of the DP estimators that shape the objective: the estimators' own
#: defaults are used (public, data-independent, not tuned) and stated in every table
HYPER_KEYS = {"ridge": ("alpha",), "lasso": ("radius",), "logistic-l2": ("C",),
              "logistic-l1": ("radius",), "sparse-linear": ("n_nonzero_coefs",),
              "sparse-logistic": ("n_nonzero_coefs",)}

#: classification datasets whose positive rate is below this use ROC AUC as the primary metric
AUC_THRESHOLD = 0.15


def _metric_names(ds):
    if ds.task == "regression":
        return "R^2", "r2"
    rate = float(np.mean(ds.y_train))
    if min(rate, 1 - rate) < AUC_THRESHOLD:
        return "ROC AUC", "auc"
    return "accuracy", "accuracy"


def _evaluate(model, ds):
    from sklearn.metrics import accuracy_score, mean_squared_error, r2_score, roc_auc_score

    if ds.task == "regression":
        pred = model.predict(ds.X_test)
        return {"r2": float(r2_score(ds.y_test, pred)),
                "rmse": float(np.sqrt(mean_squared_error(ds.y_test, pred)))}
    pred = model.predict(ds.X_test)
    out = {"accuracy": float(accuracy_score(ds.y_test, pred))}
    try:
        score = model.decision_function(ds.X_test)
        score = np.asarray(score)
        if score.ndim > 1:
            score = score[:, -1]
        out["auc"] = float(roc_auc_score(ds.y_test, score)) if np.ptp(score) > 0 else 0.5
    except Exception:  # noqa: BLE001
        out["auc"] = float("nan")
    return out


def _dp_kwargs(combo, ds):
    kw = {"data_norm": ds.data_norm}
    if ds.task == "regression":
        kw["bounds_y"] = ds.bounds_y
    return kw


def _fit_eval(combo, ds, eps, seed):
    if getattr(combo, "raw", False):  # a fully private pipeline: fitted on the raw features
        ds = raw_view(ds)
    setup_warnings()
    with warnings.catch_warnings():
        setup_warnings()
        kw = _dp_kwargs(combo, ds)
        if eps == np.inf:
            kw["tol"] = 1e-6
        model = combo.make(epsilon=eps, delta=DELTA, random_state=seed, **kw)
        with Timer() as t:
            res, err = safe_call(model.fit, ds.X_train, ds.y_train)
        if err:
            return {"label": combo.label, "eps": eps, "seed": seed, "error": err}
        last = model[-1] if hasattr(model, "steps") else model
        out = {"label": combo.label, "eps": eps, "seed": seed, "fit_time": t.elapsed,
               "n_iter": int(getattr(last, "n_iter_", 1))}
        out.update(_evaluate(model, ds))
        return out


def _hyper_text(combos):
    seen, parts = set(), []
    for c in combos:
        if c.family in seen:
            continue
        seen.add(c.family)
        params = c.cls().get_params()
        vals = {k: params.get(k) for k in HYPER_KEYS.get(c.family, ())}
        if vals:
            parts.append(f"{c.family}: " + ", ".join(f"{k}={v!r}" for k, v in vals.items()))
    return "; ".join(parts) + " (estimator defaults)"


def _baselines(ds):
    """Non-private scikit-learn and the trivial predictor (fitted on the same train split)."""
    from sklearn.dummy import DummyClassifier, DummyRegressor
    from sklearn.linear_model import LassoCV, LogisticRegression, Ridge

    if ds.task == "regression":
        models = [("sklearn Ridge(alpha=1) [non-private]", Ridge(alpha=1.0)),
                  ("sklearn LassoCV(cv=5) [non-private]", LassoCV(cv=5, n_jobs=1, random_state=0)),
                  ("trivial: predict train mean", DummyRegressor(strategy="mean"))]
    else:
        models = [("sklearn LogisticRegression(C=1) [non-private]", LogisticRegression(C=1.0, max_iter=1000)),
                  ("sklearn LogisticRegression(l1_ratio=1, C=1, liblinear) [non-private]",
                   LogisticRegression(C=1.0, l1_ratio=1.0, solver="liblinear", max_iter=1000)),
                  ("trivial: majority class", DummyClassifier(strategy="most_frequent"))]
    out = []
    for label, m in models:
        with warnings.catch_warnings():
            setup_warnings()
            with Timer() as t:
                _, err = safe_call(m.fit, ds.X_train, ds.y_train)
        if err:
            out.append({"label": label, "error": err})
            continue
        r = {"label": label, "fit_time": t.elapsed}
        if label.startswith("trivial") and ds.task != "regression":
            r.update(_evaluate(m, ds))
            r["auc"] = 0.5
        else:
            r.update(_evaluate(m, ds))
        out.append(r)
    return out


def run_dataset(ctx, name, eps_grid, n_seeds):
    loaded, err = safe_call(D.load, name, ctx.data_dir, quick=ctx.quick)
    if err:
        ctx.note(f"utility: dataset '{name}' skipped ({err})")
        return None
    ds = loaded
    print(f"  [{name}] n={ds.n} p={ds.p} ({'sparse' if ds.sparse else 'dense'})", flush=True)
    combos, skipped = discover_combos(ds.task)
    metric_title, metric_key = _metric_names(ds)
    t0 = time.perf_counter()
    pcombos = private_combos(ds, combos)
    tasks = [(c, e, s) for c in combos + pcombos for e in eps_grid for s in range(n_seeds)]
    # eps = inf: the same objective, solved exactly (one per family; solver-independent)
    fam_rep = {}
    for c in combos:
        fam_rep.setdefault(c.family, c)
    inf_tasks = [(c, np.inf, 0) for c in fam_rep.values()]
    # largest / slowest first for better load balance
    results = Parallel(n_jobs=ctx.n_jobs)(delayed(_fit_eval)(c, ds, e, s) for c, e, s in inf_tasks + tasks[::-1])
    base = _baselines(ds)
    elapsed = time.perf_counter() - t0

    inf_by_family = {}
    for r in results[: len(inf_tasks)]:
        fam = next(c.family for c in combos if c.label == r["label"])
        inf_by_family[fam] = r
    by = {}
    errors = {}
    for r in results[len(inf_tasks):]:
        if "error" in r:
            errors.setdefault(r["label"], r["error"])
            continue
        by.setdefault((r["label"], r["eps"]), []).append(r)

    headers = ["estimator (solver)"] + [f"ε={e:g}" for e in eps_grid] + ["ε=∞ (same objective)", "n_iter_ at ε=1"]
    rows = []
    summary = {"dataset": ds.name, "key": name, "n": ds.n, "p": ds.p, "metric": metric_title,
               "eps": eps_grid, "seeds": n_seeds, "rows": {}, "private_rows": {}, "baselines": {}}
    for c in combos + pcombos:
        cells, means = [], []
        for e in eps_grid:
            vals = [r[metric_key] for r in by.get((c.label, e), [])]
            cells.append(fmt_ms(vals))
            means.append(float(np.nanmean(vals)) if vals else None)
        inf = inf_by_family.get(c.family, {})
        inf_cell = fmt(inf.get(metric_key)) if "error" not in inf else "error"
        it = [r["n_iter"] for r in by.get((c.label, 1.0), [])]
        label = c.label + (f" [error: {errors[c.label][:80]}]" if c.label in errors else "")
        if getattr(c, "raw", False):
            inf_cell = "n/a"
        rows.append([label] + cells + [inf_cell, str(it[0]) if it else "n/a"])
        summary["private_rows" if getattr(c, "raw", False) else "rows"][c.label] = {
            "means": means, "inf": inf.get(metric_key)}
    for b in base:
        val = fmt(b.get(metric_key)) if "error" not in b else f"error: {b['error'][:60]}"
        rows.append([b["label"]] + ["—"] * len(eps_grid) + [val, "—"])
        summary["baselines"][b["label"]] = b.get(metric_key)

    hyper = _hyper_text(combos)
    lines = ds.describe() + [
        f"- metric: **{metric_title}** on the test split (primary); mean ± std over {n_seeds} seeds "
        f"(random_state = 0..{n_seeds - 1}); the data split is fixed",
        f"- epsilon ∈ {eps_grid}, delta = {DELTA:g}, accounting='tight' (default)",
        f"- DP hyperparameters (public, not tuned): {hyper}; radius in normalized units "
        "(X / data_norm, y mapped to [-1, 1])",
        "- 'ε=∞ (same objective)' is the DP estimator's exact non-private fit (epsilon=inf): the bias "
        "of the constraint/penalty alone",
        f"- wall time of this dataset (all fits, {ctx.n_jobs} jobs): {elapsed:.1f} s",
    ]
    if pcombos:
        lines.append("- rows 'fully private': make_private_pipeline(DPStandardScaler(bounds=public), model, epsilon=ε) "
                     f"on the RAW features of the same split; ε is the pipeline's total (25% scaler, 75% model); "
                     f"public ranges: {ds.extra['public_bounds_note']}. These are the private results; the other DP "
                     "rows use the non-private StandardScaler above (labelled comparison)")
    if DELTA >= 1.0 / ds.n:
        lines.append(f"- NOTE: delta = {DELTA:g} >= 1/n = {1.0 / ds.n:.2g} here (the common delta of this benchmark); "
                     "dp_sklearn warns about such a delta (warning suppressed)")
    if ctx.quick:
        lines.append("- QUICK MODE: fewer epsilons and seeds, large datasets subsampled (see above)")
    if skipped:
        lines.append("- combinations skipped (ValueError on a probe fit): " + "; ".join(skipped))
    for lab, e in errors.items():
        lines.append(f"- ERROR in {lab}: {e}")
    text = header_block(f"Privacy-utility: {ds.name}", ctx, lines) + md_table(headers, rows) + "\n"
    png = _plot(ctx, name, ds, combos + pcombos, by, eps_grid, metric_key, metric_title, base, inf_by_family)
    if png:
        text += f"\n![{ds.name}]({png})\n"
    summary["elapsed"] = elapsed
    summary["text"] = text
    _append_raw(ctx, name, ds, results, base)
    print(f"  [{name}] done in {elapsed:.1f} s", flush=True)
    return summary


def _plot(ctx, name, ds, combos, by, eps_grid, metric_key, metric_title, base, inf_by_family):
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except Exception:  # noqa: BLE001
        return None
    fig, ax = plt.subplots(figsize=(10.5, 5.0))
    colors = plt.get_cmap("tab20").colors
    markers = "os^vD<>pXh*"
    for i, c in enumerate(combos):
        m, s, xs = [], [], []
        for e in eps_grid:
            vals = [r[metric_key] for r in by.get((c.label, e), [])]
            if vals:
                xs.append(e)
                m.append(np.mean(vals))
                s.append(np.std(vals))
        if xs:
            ax.errorbar(xs, m, yerr=s, marker=markers[i % len(markers)], color=colors[i % len(colors)], capsize=3,
                        label=c.label.replace("DPLogisticRegression", "DPLogReg"))
    styles = ["--", "-.", ":"]
    for i, b in enumerate(base):
        if b.get(metric_key) is not None and "error" not in b:
            ax.axhline(b[metric_key], color="k", ls=styles[i % 3], lw=1, label=b["label"])
    ax.set_xscale("log")
    ax.set_xlabel("epsilon (delta = 1e-5)")
    ax.set_ylabel(metric_title)
    ax.set_title(f"{ds.name}: n={ds.n}, p={ds.p}")
    if ds.task == "regression":
        lo = min([b.get(metric_key, 0) or 0 for b in base] + [-0.5])
        ax.set_ylim(max(lo, -1.0) - 0.05, 1.0)
    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5))
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fname = f"utility_{name}.png"
    ctx.results_dir.mkdir(parents=True, exist_ok=True)
    fig.savefig(ctx.results_dir / fname, dpi=110)
    plt.close(fig)
    return fname


def _append_raw(ctx, name, ds, results, base):
    path = ctx.results_dir / f"utility_raw_{name}.csv"
    new = True
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        if new:
            w.writerow(["dataset", "label", "epsilon", "seed", "accuracy", "auc", "r2", "rmse", "fit_time_s", "n_iter", "error"])
        for r in results + base:
            w.writerow([name, r.get("label"), r.get("eps", "non-private"), r.get("seed", ""), r.get("accuracy", ""),
                        r.get("auc", ""), r.get("r2", ""), r.get("rmse", ""), r.get("fit_time", ""),
                        r.get("n_iter", ""), r.get("error", "")])


def run(ctx, only_datasets=None):
    """Run the datasets (all, or ``only_datasets``); rebuild utility.md from every dataset's
    stored result, so ``--datasets`` updates some sections and keeps the others (each
    section states the command that produced it)."""
    eps_grid = EPS_QUICK if ctx.quick else EPS_FULL
    n_seeds = SEEDS_QUICK if ctx.quick else SEEDS_FULL
    names = [n for n in D.REAL_DATASETS if not only_datasets or n in only_datasets]
    skipped = []
    for name in names:
        s = run_dataset(ctx, name, eps_grid, n_seeds)
        if s is None:
            skipped.append(next((m for m in reversed(ctx.notes) if f"'{name}'" in m), name))
            continue
        (ctx.results_dir / f"utility_{name}.json").write_text(json.dumps(s, indent=1, default=float))
    summaries = []
    for name in D.REAL_DATASETS:
        path = ctx.results_dir / f"utility_{name}.json"
        if path.exists():
            try:
                summaries.append(json.loads(path.read_text()))
            except Exception:  # noqa: BLE001
                pass
    parts = ["# Section 1: privacy-utility curves on real data", ""]
    if not summaries:
        parts.append("No dataset was available (see the notes printed by the run).")
    for s in summaries:
        parts.append(s["text"])
    if skipped:
        parts.append("## Skipped in the latest run\n\n" + "\n".join(f"- {m}" for m in skipped)
                     + "\n\n(Sections above for these datasets, if any, come from an earlier command, "
                     "stated in each.)\n")
    write_result(ctx, "utility.md", "\n".join(parts))
    js = [{k: v for k, v in s.items() if k != "text"} for s in summaries]
    (ctx.results_dir / "utility.json").write_text(json.dumps(js, indent=1, default=float))
    return js
