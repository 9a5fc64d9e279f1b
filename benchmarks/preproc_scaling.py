"""Private per-feature scaling on mixed units: DPStandardScaler's strategies on real tables (issue 20).

Each dataset is a raw table as it ships (numeric columns in their own units, pandas
Categorical columns one-hot encoded with their public levels by
``dp_sklearn.compose.make_private_column_transformer``), split 70/30 per seed. The model is
the default ``DPLogisticRegression`` (binary, ROC AUC) or ``DPRidge`` (R^2) with
``bounds_y`` the target's range over the whole table (a stand-in for a public range, the same
for every row, so that the comparison isolates the scaler). Rows: ``DPStandardScaler(strategy=s)``
for s in per_feature / robust / global / auto, inside ``make_private_pipeline`` with the
scaler's share (25%) of the total epsilon set explicitly on the nested scaler, and the same DP
model after a non-private ``StandardScaler`` (labelled comparison). Normalized score =
(DP - trivial) / (scikit-learn non-private - trivial), mean over seeds.

Datasets: the local list below (scikit-learn's diabetes, ISLP's data files, NYC flights from
``$DP_SKLEARN_DATA`` subsampled), without the datasets of the public suite's checking half
(``benchmarks/tabular``, branch ``suite``: breast_cancer, credit, caravan). The suite's own
runner takes the factories at the end of this module (``--factory
benchmarks.preproc_scaling:suite_robust``, ...), for its tuning half.

Run from the repository root::

    OMP_NUM_THREADS=1 python -m benchmarks.preproc_scaling [--seeds 10] [--eps 0.5,1,2,5]
    OMP_NUM_THREADS=1 python -m benchmarks.preproc_scaling --reproducers --seeds 20

Results: ``benchmarks/results/preproc_scaling.md``.
"""

from __future__ import annotations

import argparse
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

RESULTS = Path(__file__).resolve().parent / "results" / "preproc_scaling.md"
STRATEGIES = ("per_feature", "robust", "global", "auto")
SCALER_SHARE = 0.25  # DEFAULT_MODEL_SHARE = 0.75 of make_private_pipeline


def _islp(name, target, drop=(), binary_positive=None):
    from ISLP import load_data

    df = load_data(name).dropna()
    y = df[target]
    X = df.drop(columns=[target, *drop], errors="ignore")
    if binary_positive is not None:
        return X, (y.astype(str) == binary_positive).astype(int).to_numpy(), "binary"
    return X, y.to_numpy(dtype=float), "regression"


def _sk(name):
    from sklearn import datasets

    if name == "diabetes":
        X, y = datasets.load_diabetes(return_X_y=True, as_frame=True, scaled=False)
        return X, y.to_numpy(dtype=float), "regression"
    X, y = datasets.load_breast_cancer(return_X_y=True, as_frame=True)
    return X, y.to_numpy(), "binary"


def _flights(n):
    import os

    path = Path(os.environ.get("DP_SKLEARN_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))
    path = path / "nycflights13" / "flights_regression.npz"
    if not path.exists():
        return None
    z = np.load(path, allow_pickle=False)
    idx = np.random.default_rng(0).choice(z["X"].shape[0], size=n, replace=False)
    X = pd.DataFrame(np.asarray(z["X"][idx], dtype=float), columns=[f"f{j}" for j in range(z["X"].shape[1])])
    return X, np.asarray(z["y"][idx], dtype=float), "regression"


LOCAL = {
    "diabetes": lambda: _sk("diabetes"),
    "Default": lambda: _islp("Default", "default", binary_positive="Yes"),
    "College": lambda: _islp("College", "Private", binary_positive="Yes"),
    "Carseats": lambda: _islp("Carseats", "Sales"),
    "Hitters": lambda: _islp("Hitters", "Salary"),
    "Auto": lambda: _islp("Auto", "mpg", drop=("name",)),
    "Wage": lambda: _islp("Wage", "wage", drop=("logwage",)),
    "Bikeshare": lambda: _islp("Bikeshare", "bikers", drop=("casual", "registered")),
    "Boston": lambda: _islp("Boston", "medv"),
    "flights_3000": lambda: _flights(3000),
}


def _run_one(name, X, y, task, eps, seed, strategies):
    from sklearn.linear_model import LogisticRegression, Ridge
    from sklearn.metrics import r2_score, roc_auc_score
    from sklearn.model_selection import train_test_split
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    from dp_sklearn import DPLogisticRegression, DPRidge
    from dp_sklearn.compose import make_private_column_transformer
    from dp_sklearn.pipeline import make_private_pipeline

    strat = y if task == "binary" else None
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, random_state=seed, stratify=strat)
    score = (lambda m: roc_auc_score(yte, m.predict_proba(Xte)[:, 1])) if task == "binary" else (
        lambda m: r2_score(yte, m.predict(Xte)))
    bounds_y = (float(y.min()), float(y.max()))
    model = (DPLogisticRegression(random_state=seed) if task == "binary"
             else DPRidge(bounds_y=bounds_y, random_state=seed))
    out = {}
    for s in strategies:
        ct = make_private_column_transformer(X)
        nested = {f"{step}__{k}": v for step, est, _ in ct.transformers if hasattr(est, "strategy")
                  for k, v in dict(strategy=s, random_state=seed).items()}
        ct.set_params(**nested)
        dp_steps = [step for step, est, _ in ct.transformers if hasattr(est, "strategy")]
        pipe = make_private_pipeline(ct, model, epsilon=(1 - SCALER_SHARE) * eps)
        pipe.set_params(**{f"columntransformer__{st}__epsilon": SCALER_SHARE * eps / len(dp_steps)
                           for st in dp_steps})
        pipe.set_params(**{f"columntransformer__{st}__delta": 1e-5 / 4 / len(dp_steps) for st in dp_steps})
        pipe.fit(Xtr, ytr)
        out[s] = score(pipe)
        if s == "auto":
            out["auto_choice"] = "/".join(sorted({pipe[0].named_transformers_[st].strategy_ for st in dp_steps}))
    ref = ct.set_params(**{f"{st}": StandardScaler() for st in dp_steps})
    out["StandardScaler (not DP)"] = score(make_pipeline(ref, model.set_params(epsilon=eps)).fit(Xtr, ytr))
    sk = LogisticRegression(max_iter=2000) if task == "binary" else Ridge(alpha=1.0)
    out["non-private"] = score(make_pipeline(make_private_column_transformer(X).set_params(
        **{st: StandardScaler() for st in dp_steps}), sk).fit(Xtr, ytr))
    out["trivial"] = 0.5 if task == "binary" else r2_score(yte, np.full(yte.shape, ytr.mean()))
    return out


def _markdown(df):
    cols = [str(c) for c in df.columns]
    fmt = lambda v: f"{v:.3f}" if isinstance(v, float) else str(v)
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(fmt(v) for v in row) + " |" for row in df.itertuples(index=False)]
    return "\n".join(lines)


def reproducers(seeds=20):
    """Issue 20's two cases: raw diabetes (DPRidge, bounds_y=(25, 346)) and raw breast_cancer
    (DPLogisticRegression, accuracy), ``make_private_pipeline(DPStandardScaler(), model, epsilon)``,
    bounds=None, 70/30 splits (seed s), one line per epsilon: median R^2 / mean accuracy and the
    strategies the default chose."""
    from sklearn.datasets import load_breast_cancer, load_diabetes
    from sklearn.metrics import r2_score
    from sklearn.model_selection import train_test_split

    from dp_sklearn import DPLogisticRegression, DPRidge
    from dp_sklearn.pipeline import make_private_pipeline
    from dp_sklearn.preprocessing import DPStandardScaler

    cases = [("diabetes", load_diabetes(return_X_y=True, scaled=False), (1.0, 5.0)),
             ("breast_cancer", load_breast_cancer(return_X_y=True), (1.0, 10.0))]
    lines = []
    for name, (X, y), eps_list in cases:
        for eps in eps_list:
            scores, chosen = [], set()
            for s in range(seeds):
                Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, random_state=s)
                model = (DPRidge(bounds_y=(25, 346), random_state=s) if name == "diabetes"
                         else DPLogisticRegression(random_state=s))
                pipe = make_private_pipeline(DPStandardScaler(random_state=s), model, epsilon=eps).fit(Xtr, ytr)
                chosen.add(getattr(pipe[0], "strategy_", "?"))
                scores.append(r2_score(yte, pipe.predict(Xte)) if name == "diabetes" else pipe.score(Xte, yte))
            stat = (f"median R^2 {np.median(scores):.3f} (min {np.min(scores):.3f})" if name == "diabetes"
                    else f"mean accuracy {np.mean(scores):.3f} (min {np.min(scores):.3f})")
            lines.append(f"{name} epsilon {eps:g}: {stat}, strategy {'/'.join(sorted(chosen))}, {seeds} seeds")
            print(lines[-1], flush=True)
    return lines


def margin_evidence(csv_path):
    """Markdown: robust minus per-feature score per tuning-half cell, against the per-feature criterion.

    ``csv_path`` is the ``.csv`` of a suite run with the ``suite_per_feature`` and ``suite_robust``
    factories. ``ratio`` is ``epsilon_q q n / 4`` over ``FEASIBLE_RANKS`` for the per-feature
    plan of the nested scaler (25% of epsilon, delta / 4); ``PER_FEATURE_MARGIN`` is the ratio
    above which ``strategy="auto"`` runs per-feature ranges.
    """
    from benchmarks.tabular import datasets as TD

    from dp_sklearn.preprocessing import DPStandardScaler
    from dp_sklearn.preprocessing._global import FEASIBLE_RANKS

    df = pd.read_csv(csv_path)
    means = df.groupby(["dataset", "config", "epsilon"])["score"].mean().unstack("config")
    rows = []
    for (name, eps), r in means.iterrows():
        p = len(TD.BY_NAME[name].numeric)
        if p == 0:
            continue
        n = int(df[df.dataset == name].n_train.iloc[0])
        sc = DPStandardScaler(epsilon=SCALER_SHARE * eps, delta=1e-5 / 4)
        ratio = sc._per_feature_plan(p, None).quantile_epsilon * sc._levels(n, p)[0] * n / 4 / FEASIBLE_RANKS
        rows.append({"dataset": name, "epsilon": eps, "n_train": n, "p_numeric": p, "ratio": ratio,
                     "per_feature": r["suite_per_feature"], "robust": r["suite_robust"],
                     "robust - per_feature": r["suite_robust"] - r["suite_per_feature"]})
    out = pd.DataFrame(rows).sort_values("ratio")
    bins = pd.cut(out["ratio"], [0, 1, 2, 2.999, 3.001], labels=["< 1", "1-2", "2-3", "3 (level < 0.25)"])
    summary = out.groupby(bins, observed=True)["robust - per_feature"].agg(["count", "mean", "median"]).reset_index()
    return _markdown(out) + "\n\nMean of robust - per_feature by ratio:\n\n" + _markdown(summary)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reproducers", action="store_true",
                    help="only issue 20's raw diabetes / breast_cancer cases (printed, not written)")
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--eps", default="0.5,1,2,5")
    ap.add_argument("--datasets", default=",".join(LOCAL))
    args = ap.parse_args(argv)
    warnings.filterwarnings("ignore")
    if args.reproducers:
        reproducers(args.seeds)
        return
    eps_list = [float(e) for e in args.eps.split(",")]
    rows, t0 = [], time.time()
    for name in args.datasets.split(","):
        data = LOCAL[name]()
        if data is None:
            print(f"{name}: data file absent, skipped")
            continue
        X, y, task = data
        for eps in eps_list:
            res = [_run_one(name, X, y, task, eps, s, STRATEGIES) for s in range(args.seeds)]
            row = {"dataset": name, "n": X.shape[0], "p": X.shape[1], "epsilon": eps,
                   "auto chose": res[0]["auto_choice"]}
            for key in (*STRATEGIES, "StandardScaler (not DP)"):
                vals = np.array([(r[key] - r["trivial"]) / (r["non-private"] - r["trivial"]) for r in res])
                row[key] = float(np.mean(vals))
            rows.append(row)
            print(row, f"{time.time() - t0:.0f}s", flush=True)
    df = pd.DataFrame(rows)
    summary = df.groupby("epsilon")[[*STRATEGIES, "StandardScaler (not DP)"]].mean()
    text = ["# DPStandardScaler strategies on raw tables (normalized score, mean over seeds)", "",
            f"Command: `OMP_NUM_THREADS=1 python -m benchmarks.preproc_scaling --seeds {args.seeds} "
            f"--eps {args.eps}`", "", _markdown(df), "",
            "Mean over datasets:", "", _markdown(summary.reset_index()), ""]
    RESULTS.write_text("\n".join(text))
    print("\n".join(text[-4:]))


if __name__ == "__main__":
    main()


# ----------------------------------------------------------------------------- suite factories
# ``python -m benchmarks.tabular.run --half tuning --factory benchmarks.preproc_scaling:suite_robust ...``
# (the suite of branch ``suite``): the default pipeline with the scaler's strategy forced, and
# the pipeline built by ``make_private_column_transformer`` from the schema (with its public bounds).


def _suite_pipeline(schema, task, epsilon, scaler_step, delta=1e-5):
    """``make_private_pipeline(ct, model)``, the nested scalers' budget set by hand when needed."""
    from benchmarks.tabular.run import dp_model

    from dp_sklearn import budget_split, make_private_pipeline
    from dp_sklearn.pipeline import DEFAULT_MODEL_SHARE

    pipe = make_private_pipeline(scaler_step, dp_model(schema, task), epsilon=epsilon, delta=delta)
    nested = [name for name, est, _ in scaler_step.transformers if hasattr(est, "epsilon")]
    if not nested or len(budget_split(pipe)) > 1:
        return pipe  # no nested DP step, or make_private_pipeline budgets nested steps itself
    pipe = make_private_pipeline(scaler_step, dp_model(schema, task), epsilon=DEFAULT_MODEL_SHARE * epsilon,
                                 delta=delta / 2)
    share = (1.0 - DEFAULT_MODEL_SHARE) * epsilon / len(nested)
    for name in nested:
        pipe.set_params(**{f"columntransformer__{name}__epsilon": share,
                           f"columntransformer__{name}__delta": delta / 4 / len(nested)})
    return pipe


def _with_strategy(strategy):
    def factory(schema, task, epsilon):
        from benchmarks.tabular.run import column_transformer

        from dp_sklearn.preprocessing import DPStandardScaler

        return _suite_pipeline(schema, task, epsilon, column_transformer(schema, DPStandardScaler(strategy=strategy)))
    factory.__name__ = f"suite_{strategy}"
    return factory


suite_per_feature, suite_robust, suite_global, suite_auto = (_with_strategy(s) for s in STRATEGIES)


def schema_frame(schema):
    """An empty DataFrame with the schema's columns and dtypes (numeric float, categorical with its levels)."""
    cols = {c: pd.Series([], dtype=float) for c in schema.numeric}
    cols.update({c: pd.Series(pd.Categorical([], categories=list(v))) for c, v in schema.categorical.items()})
    return pd.DataFrame(cols)


def suite_column_transformer(schema, task, epsilon):
    """``make_private_column_transformer(<schema frame>, bounds=schema.bounds)`` + the default model."""
    from dp_sklearn.compose import make_private_column_transformer

    bounds = dict(schema.bounds)
    if "*" in bounds:  # the suite's "every numeric column" (digits' pixel range)
        bounds = {c: bounds["*"] for c in schema.numeric}
    ct = make_private_column_transformer(schema_frame(schema), bounds=bounds or None)
    return _suite_pipeline(schema, task, epsilon, ct)
