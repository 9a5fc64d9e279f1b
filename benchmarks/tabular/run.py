"""Run the public tabular suite: private pipelines against their non-private references.

Per dataset, seed and epsilon (see ``benchmarks/tabular/README.md``):

* ``private``: the fully private pipeline built by a factory
  ``make_private(schema, task, epsilon) -> estimator`` (default:
  :func:`default_private`, what the library offers today);
* ``nonprivate_scaler``: the same DP model after a NON-private scaler (labelled
  comparison: ``StandardScaler`` on numeric + ``OneHotEncoder`` on categorical
  columns, fitted on the training split);
* ``sklearn``: scikit-learn's non-private model (``Ridge`` /
  ``LogisticRegression``) after the same preprocessing;
* ``trivial``: the mean / prior predictor (normalized scores use ROC AUC 0.5 and
  R^2 0 as its score, by definition);
* ``diffprivlib`` (optional, ``--diffprivlib-python``): diffprivlib's models run
  by another interpreter (diffprivlib needs scikit-learn < 1.6).

Score: ROC AUC for binary targets, macro one-vs-rest ROC AUC for multiclass
targets, R^2 for regression. The normalized score of a configuration on a
dataset is ``(mean score - trivial) / (mean sklearn score - trivial)``, means
over the seeds.

Python::

    from benchmarks.tabular.run import run
    records, summary, markdown = run(names=["diabetes"], epsilons=(1.0,), seeds=2)
    run(half="tuning", factories={"mine": my_factory})   # before/after in one run

Command line::

    python -m benchmarks.tabular.run --half checking --out benchmarks/tabular/results/checking
    python -m benchmarks.tabular.run --datasets diabetes,titanic --quick
    python -m benchmarks.tabular.run --half tuning --factory mypkg.mymod:make_private
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

from . import datasets as D

EPSILONS = (0.5, 1.0, 2.0, 5.0)
SEEDS = 10
DELTA = 1e-5
TEST_SIZE = 0.3
TRAIN_CAP = 10_000  # training rows above this are subsampled (fixed per seed); only diamonds
QUICK = dict(seeds=2, epsilons=(1.0, 5.0))
RESULTS = Path(__file__).resolve().parent / "results"
DPL_WORKER = Path(__file__).resolve().parent / "_diffprivlib_worker.py"


# ----------------------------------------------------------------------------- pipelines

def encoder(schema):
    """``OneHotEncoder`` with the schema's public category lists (fitting it reads nothing)."""
    from sklearn.preprocessing import OneHotEncoder

    return OneHotEncoder(categories=[list(v) for v in schema.categorical.values()],
                         handle_unknown="ignore", sparse_output=False)


def column_transformer(schema, numeric_step):
    """``numeric_step`` on the numeric columns, the public one-hot encoder on the categorical ones."""
    from sklearn.compose import ColumnTransformer

    parts = []
    if schema.numeric:
        parts.append(("num", numeric_step, list(schema.numeric)))
    if schema.categorical:
        parts.append(("cat", encoder(schema), list(schema.categorical)))
    return ColumnTransformer(parts)


def dp_model(schema, task):
    """The library's default DP model for the task (classes from the public schema)."""
    from dp_sklearn import DPLogisticRegression, DPRidge

    if task == "regression":
        return DPRidge()
    classes = (0, 1) if task == "binary" else list(schema.classes)
    return DPLogisticRegression(classes=classes)


def default_private(schema, task, epsilon, delta=DELTA):
    """(a) The fully private pipeline the library offers.

    ``make_private_pipeline(ColumnTransformer([("num", DPStandardScaler(), numeric),
    ("cat", OneHotEncoder(categories=<public lists>), categorical)]), model, epsilon)``
    with ``DPRidge`` (``bounds_y="auto"``) or ``DPLogisticRegression``; the pipeline finds
    the scaler nested in the column transformer and splits the total between it and the
    model (``budget_split``).
    """
    from dp_sklearn import DPStandardScaler, make_private_pipeline

    ct = column_transformer(schema, DPStandardScaler())
    return make_private_pipeline(ct, dp_model(schema, task), epsilon=epsilon, delta=delta)


def nonprivate_scaler(schema, task, epsilon, delta=DELTA):
    """(b) Labelled comparison, NOT private: the same DP model after ``StandardScaler``.

    A plain scikit-learn pipeline (``make_private_pipeline`` refuses a non-private scaler);
    the model alone spends ``epsilon``.
    """
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    model = dp_model(schema, task).set_params(epsilon=epsilon, delta=delta)
    return make_pipeline(column_transformer(schema, StandardScaler()), model)


def sklearn_model(schema, task):
    """(c) scikit-learn's non-private model after the same preprocessing as (b)."""
    from sklearn.linear_model import LogisticRegression, Ridge
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    model = Ridge(alpha=1.0) if task == "regression" else LogisticRegression(max_iter=2000)
    return make_pipeline(column_transformer(schema, StandardScaler()), model)


def trivial_model(task):
    """(d) The mean / prior predictor."""
    from sklearn.dummy import DummyClassifier, DummyRegressor

    return DummyRegressor() if task == "regression" else DummyClassifier(strategy="prior")


def load_factory(spec):
    """``"module:function"`` -> the function (a factory ``(schema, task, epsilon) -> estimator``)."""
    module, _, func = spec.partition(":")
    if not module or not func:
        raise ValueError(f"--factory expects 'module:function', got {spec!r}")
    return getattr(importlib.import_module(module), func)


# ----------------------------------------------------------------------------- one fit

TRIVIAL_SCORE = {"binary": 0.5, "multiclass": 0.5, "regression": 0.0}
WEAK_REFERENCE = 0.1  # reference minus trivial below this: marked †, normalized score is noisy


def split(X, y, task, seed, train_cap=TRAIN_CAP):
    """Seeded 70/30 split (stratified for classification); training rows capped at ``train_cap``."""
    from sklearn.model_selection import train_test_split

    strat = y if task != "regression" else None
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=TEST_SIZE, random_state=seed,
                                          stratify=strat)
    if train_cap and len(ytr) > train_cap:
        keep = np.sort(np.random.default_rng(seed).choice(len(ytr), train_cap, replace=False))
        Xtr, ytr = Xtr.iloc[keep], ytr[keep]
    return Xtr, Xte, ytr, yte


def score(est, X, y, task):
    """``(main score, accuracy or None)``: ROC AUC / macro OvR ROC AUC / R^2."""
    from sklearn.metrics import r2_score, roc_auc_score

    if task == "regression":
        return float(r2_score(y, est.predict(X))), None
    proba = np.asarray(est.predict_proba(X), dtype=float)
    classes = list(est.classes_)
    acc = float(np.mean(np.asarray(classes, dtype=object)[proba.argmax(axis=1)]
                        == np.asarray(y, dtype=object)))
    if not np.all(np.isfinite(proba)):
        return float("nan"), acc
    if task == "binary":
        return float(roc_auc_score(y, proba[:, classes.index(1)])), acc
    return float(roc_auc_score(y, proba, multi_class="ovr", average="macro", labels=classes)), acc


def minority_recall(est, X, y, task):
    """Recall of the test split's less frequent class at ``predict`` (its 0.5 threshold); None unless binary.

    The minority class is read from the test labels (a benchmark's evaluation, not a fit).
    """
    if task != "binary":
        return None
    from sklearn.metrics import recall_score

    labels, counts = np.unique(np.asarray(y, dtype=object), return_counts=True)
    minority = labels[np.argmin(counts)]
    pred = np.asarray(est.predict(X), dtype=object)
    return float(recall_score(np.asarray(y, dtype=object) == minority, pred == minority, zero_division=0.0))


def _seed_everything(est, seed):
    params = est.get_params(deep=True)
    est.set_params(**{k: seed for k in params if k.endswith("random_state")})
    return est


def _fit_score(est, Xtr, ytr, Xte, yte, task, seed):
    t0 = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            _seed_everything(est, seed).fit(Xtr, ytr)
            main, acc = score(est, Xte, yte, task)
            recall = minority_recall(est, Xte, yte, task)
            error = ""
        except Exception as exc:  # recorded, not raised: one failed fit must not stop the suite
            main, acc, recall, error = float("nan"), None, None, f"{type(exc).__name__}: {exc}"[:200]
    kinds = sorted({w.category.__name__ for w in caught})
    return dict(score=main, accuracy=acc, minority_recall=recall, seconds=time.perf_counter() - t0, error=error,
                n_warnings=len(caught), warnings=";".join(kinds))


def run_dataset_seed(name, X, y, seed, epsilons, factories, train_cap=TRAIN_CAP):
    """Every configuration on one dataset and seed; returns a list of records (dicts)."""
    schema = D.BY_NAME[name]
    task = schema.task
    Xtr, Xte, ytr, yte = split(X, y, task, seed, train_cap)
    base = dict(dataset=name, task=task, n_train=len(ytr), n_test=len(yte), seed=seed)
    out = []
    for config, est in (("sklearn", sklearn_model(schema, task)), ("trivial", trivial_model(task))):
        out.append({**base, "config": config, "epsilon": None,
                    **_fit_score(est, Xtr, ytr, Xte, yte, task, seed)})
    for eps in epsilons:
        configs = [(label, f(schema, task, eps)) for label, f in factories.items()]
        configs.append(("nonprivate_scaler", nonprivate_scaler(schema, task, eps)))
        for config, est in configs:
            out.append({**base, "config": config, "epsilon": eps,
                        **_fit_score(est, Xtr, ytr, Xte, yte, task, seed)})
    return out


# ----------------------------------------------------------------------------- diffprivlib

def run_diffprivlib(python, jobs, epsilons, train_cap=TRAIN_CAP):
    """Run diffprivlib in another interpreter on the same splits; returns records.

    The categorical columns are one-hot encoded here with the public lists; the
    worker fits diffprivlib's ``StandardScaler`` + ``LogisticRegression`` /
    ``LinearRegression`` with its defaults (see ``_diffprivlib_worker.py``).
    """
    records = []
    with tempfile.TemporaryDirectory() as tmp:
        specs = []
        for name, X, y, seed in jobs:
            schema = D.BY_NAME[name]
            Xtr, Xte, ytr, yte = split(X, y, schema.task, seed, train_cap)
            enc = column_transformer(schema, "passthrough").fit(Xtr.iloc[:1])
            path = os.path.join(tmp, f"{name}_{seed}.npz")
            labels = np.asarray(schema.classes if schema.task == "multiclass" else (0, 1))
            ymap = (lambda v: v) if schema.task != "multiclass" else (
                lambda v: np.searchsorted(labels.astype(str), np.asarray(v).astype(str)))
            np.savez(path, Xtr=enc.transform(Xtr).astype(float), Xte=enc.transform(Xte).astype(float),
                     ytr=ymap(ytr), yte=ymap(yte), n_num=len(schema.numeric))
            specs.append(dict(path=path, dataset=name, task=schema.task, seed=seed,
                              n_train=len(ytr), n_test=len(yte)))
        spec_file = os.path.join(tmp, "jobs.json")
        with open(spec_file, "w") as fh:
            json.dump(dict(jobs=specs, epsilons=list(epsilons), delta=DELTA), fh)
        proc = subprocess.run([python, str(DPL_WORKER), spec_file], capture_output=True, text=True,
                              env={**os.environ, "PYTHONPATH": ""}, check=False)
        if proc.returncode != 0:
            print(f"note: diffprivlib worker failed ({proc.stderr.strip()[-300:]}); skipped",
                  file=sys.stderr)
            return []
        for line in proc.stdout.splitlines():
            if line.startswith("{"):
                records.append(json.loads(line))
    return records


# ----------------------------------------------------------------------------- summary

def summarize(records):
    """Per (dataset, config, epsilon): mean / min score and the normalized score."""
    import pandas as pd

    df = pd.DataFrame(records)
    ref = df[df.config == "sklearn"].groupby("dataset").score.mean()
    private = df[df.epsilon.notna()]
    g = private.groupby(["dataset", "task", "config", "epsilon"])
    summ = g.agg(mean=("score", "mean"), min=("score", "min"), n_fits=("score", "size"),
                 n_failed=("score", lambda s: int(s.isna().sum())),
                 seconds=("seconds", "mean"),
                 minority_recall=("minority_recall", lambda s: float(np.nanmean(s.astype(float)))
                                  if s.notna().any() else float("nan"))).reset_index()
    summ["sklearn"] = summ.dataset.map(ref)
    triv = summ.task.map(TRIVIAL_SCORE)
    summ["normalized"] = (summ["mean"] - triv) / (summ["sklearn"] - triv)
    summ["n_train"] = summ.dataset.map(df.groupby("dataset").n_train.first())
    return summ


def _f(x, d=3):
    if x is None or not np.isfinite(x):
        return "n/a"
    return f"{x:.1e}" if abs(x) >= 1000 else f"{x:.{d}f}"


def markdown(records, summ, command, order, epsilons, notes=()):
    """The results as markdown: mean normalized score per epsilon, then per-dataset rows."""
    import pandas as pd

    from benchmarks.common import md_table

    configs = [c for c in dict.fromkeys(r["config"] for r in records)
               if c not in ("sklearn", "trivial", "nonprivate_scaler")] + ["nonprivate_scaler"]
    label = {"nonprivate_scaler": "non-private scaler + same DP model (comparison, NOT private)",
             "diffprivlib": "diffprivlib defaults (bounds read from the data: NOT private)"}
    lines = [f"Command: `{command}`", ""]
    versions = _versions()
    lines += [f"Versions: {versions}. Seeds: {summ.n_fits.max()} per cell; "
              f"delta = {DELTA:g}; train cap {TRAIN_CAP:,} rows.", ""]
    lines += [f"- {n}" for n in notes] + ([""] if notes else [])
    headers = ["configuration"] + [f"eps={e:g}" for e in epsilons]
    weak = summ[summ.sklearn - summ.task.map(TRIVIAL_SCORE) < WEAK_REFERENCE].dataset.unique()
    comp = summ[summ.config == "nonprivate_scaler"].set_index(["dataset", "epsilon"]).normalized
    rows = []
    for c in configs:
        s = summ[summ.config == c]
        at = [s[s.epsilon == e] for e in epsilons]
        name = label.get(c, c)
        rows.append([f"{name}: mean"] + [_f(x.normalized.mean()) for x in at])
        rows.append([f"{name}: median"] + [_f(x.normalized.median()) for x in at])
        rows.append([f"{name}: mean without †"] + [_f(x[~x.dataset.isin(weak)].normalized.mean())
                                                     for x in at])
        if c in ("nonprivate_scaler", "diffprivlib"):
            continue
        rows.append([f"{name}: mean minus comparison's"] + [
            _f(x.normalized.mean() - comp.xs(e, level="epsilon").mean()) for x, e in zip(at, epsilons)])
        rows.append([f"{name}: datasets n >= 2,000 below 0.7 x comparison"] + [
            str(sum(r.normalized < 0.7 * comp.get((r.dataset, e), np.nan)
                    for r in x.itertuples() if D.BY_NAME[r.dataset].large))
            for x, e in zip(at, epsilons)])
    lines += ["Normalized score over the datasets (1 = scikit-learn's non-private model, 0 = trivial "
              "predictor). † marks datasets whose reference is within "
              f"{WEAK_REFERENCE} of the trivial score (the normalization divides by that small gap):",
              "", md_table(["statistic"] + headers[1:], rows), ""]
    reg = summ[summ.task == "regression"]
    if len(reg):
        worst = [[label.get(c, c)] + [_f(reg[(reg.config == c) & (reg.epsilon == e)]["min"].min())
                                      for e in epsilons] for c in configs]
        lines += ["Worst single fit (lowest test R^2 over regression datasets and seeds):", "",
                  md_table(headers, worst), ""]
    ordered = ([c for c in configs if c not in ("nonprivate_scaler", "diffprivlib")]
               + ["nonprivate_scaler"] + [c for c in configs if c == "diffprivlib"])
    factories = [c for c in ordered if c not in ("nonprivate_scaler", "diffprivlib")]
    short = {c: f"a{i + 1}" if i else "a" for i, c in enumerate(factories)}
    short.update(nonprivate_scaler="b", diffprivlib="f")
    configs = ordered
    legend = ", ".join(f"{short[c]} = {label.get(c, c)}" for c in configs)
    cells = " / ".join(short[c] for c in configs)
    lines += [f"Per dataset: normalized score, cells `{cells}` ({legend}); "
              "`ref` is scikit-learn's mean test score (ROC AUC, macro OvR ROC AUC or R^2).", ""]
    headers = ["dataset", "task", "n_train", "ref"] + [f"eps={e:g}" for e in epsilons]
    rows = []
    idx = summ.set_index(["dataset", "config", "epsilon"])
    for name in order:
        s = summ[summ.dataset == name]
        if not len(s):
            continue
        row = [name + (" †" if name in weak else ""), s.task.iloc[0], f"{int(s.n_train.iloc[0]):,}",
               _f(s.sklearn.iloc[0])]
        for e in epsilons:
            row.append(" / ".join(_f(idx.normalized.get((name, c, e), np.nan), 2) for c in configs))
        rows.append(row)
    lines += [md_table(headers, rows), ""]
    failed = pd.DataFrame(records)
    failed = failed[failed.error.astype(bool)]
    if len(failed):
        lines += [f"Failed fits: {len(failed)} (first: {failed.iloc[0].dataset}, "
                  f"{failed.iloc[0].config}: {failed.iloc[0].error})", ""]
    return "\n".join(lines)


def _versions():
    import sklearn

    import dp_sklearn

    return (f"dp_sklearn {dp_sklearn.__version__}, scikit-learn {sklearn.__version__}, "
            f"numpy {np.__version__}")


# ----------------------------------------------------------------------------- driver

def resolve_names(half="checking", names=None):
    """Dataset names for ``half`` (``tuning``, ``checking`` or ``all``) or the explicit ``names``."""
    if names:
        unknown = [n for n in names if n not in D.BY_NAME]
        if unknown:
            raise ValueError(f"unknown datasets {unknown}; choose from {sorted(D.BY_NAME)}")
        return list(names)
    halves = {"tuning": D.TUNING, "checking": D.CHECKING, "all": D.TUNING + D.CHECKING}
    if half not in halves:
        raise ValueError(f"half must be one of {sorted(halves)}, got {half!r}")
    return list(halves[half])


def run(names=None, half="checking", epsilons=EPSILONS, seeds=SEEDS, factories=None, n_jobs=2,
        train_cap=TRAIN_CAP, diffprivlib_python=None, out=None, command=None, verbose=True):
    """Run the suite; returns ``(records, summary, markdown)``.

    Parameters
    ----------
    names : list of str or None
        Datasets to run; ``None`` runs ``half``.
    half : {"checking", "tuning", "all"}
    epsilons : sequence of float
        Total epsilon of one fit of each private pipeline.
    seeds : int
        Seeds ``0 .. seeds-1`` (each a different split and DP noise).
    factories : dict of label -> callable or None
        Fully private pipelines ``f(schema, task, epsilon) -> estimator``, each a
        column of the results; ``None`` is ``{"private": default_private}``. The
        first one is the headline "private" configuration.
    n_jobs : int
        joblib workers (at most 2 on the shared machine).
    diffprivlib_python : str or None
        Interpreter with diffprivlib installed; ``None`` skips it.
    out : str or Path or None
        Prefix for ``<out>.md``, ``<out>.csv`` (every fit) and ``<out>.json`` (summary).
    """
    import pandas as pd
    from joblib import Parallel, delayed

    names = resolve_names(half, names)
    factories = dict(factories or {"private": default_private})
    ok, notes = D.available(names)
    for note in notes:
        print("note:", note, file=sys.stderr)
    if not ok:
        return [], None, "No dataset available:\n" + "\n".join(f"- {n}" for n in notes)
    data = {}
    for name in ok:
        X, y, _ = D.load(name)
        data[name] = (X, y)
    jobs = [(name, *data[name], seed) for name in ok for seed in range(seeds)]
    t0 = time.perf_counter()
    results = Parallel(n_jobs=min(n_jobs, 2), verbose=5 if verbose else 0)(
        delayed(run_dataset_seed)(name, X, y, seed, tuple(epsilons), factories, train_cap)
        for name, X, y, seed in jobs)
    records = [r for batch in results for r in batch]
    if diffprivlib_python:
        dpl = run_diffprivlib(diffprivlib_python, jobs, epsilons, train_cap)
        records += dpl
        if not dpl:
            notes.append("diffprivlib: worker produced no results (see stderr)")
    elapsed = time.perf_counter() - t0
    notes = list(notes) + [f"wall time {elapsed / 60:.1f} min on n_jobs={min(n_jobs, 2)}"]
    summ = summarize(records)
    cmd = command or "benchmarks.tabular.run.run(...)"
    md = markdown(records, summ, cmd, ok, tuple(epsilons), notes)
    if out:
        out = Path(out)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.with_suffix(".md").write_text(md + "\n")
        pd.DataFrame(records).to_csv(out.with_suffix(".csv"), index=False)
        summ.to_json(out.with_suffix(".json"), orient="records", indent=1)
    return records, summ, md


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m benchmarks.tabular.run",
                                     description=__doc__.split("\n")[0])
    parser.add_argument("--half", default="checking", choices=["tuning", "checking", "all"])
    parser.add_argument("--datasets", default=None, help="comma-separated names (overrides --half)")
    parser.add_argument("--epsilons", default=None, help="comma-separated, default 0.5,1,2,5")
    parser.add_argument("--seeds", type=int, default=None, help="number of seeds (default 10)")
    parser.add_argument("--quick", action="store_true", help="2 seeds, epsilon 1 and 5")
    parser.add_argument("--factory", action="append", default=[],
                        help="module:function, a factory (schema, task, epsilon) -> estimator; "
                             "repeatable; each adds a column after the default pipeline")
    parser.add_argument("--no-default", action="store_true", help="omit the default pipeline (a)")
    parser.add_argument("--diffprivlib-python", default=None,
                        help="python of a venv with diffprivlib (e.g. /tmp/dpl/bin/python)")
    parser.add_argument("--n-jobs", type=int, default=2)
    parser.add_argument("--train-cap", type=int, default=TRAIN_CAP)
    parser.add_argument("--out", default=None, help="output prefix: writes .md, .csv, .json")
    args = parser.parse_args(argv)
    epsilons = (tuple(float(e) for e in args.epsilons.split(",")) if args.epsilons
                else QUICK["epsilons"] if args.quick else EPSILONS)
    seeds = args.seeds or (QUICK["seeds"] if args.quick else SEEDS)
    factories = {} if args.no_default else {"private": default_private}
    for spec in args.factory:
        factories[spec.rpartition(":")[2]] = load_factory(spec)
    if not factories:
        parser.error("no private pipeline to run (--no-default without --factory)")
    names = args.datasets.split(",") if args.datasets else None
    command = "python -m benchmarks.tabular.run " + " ".join(argv if argv is not None else sys.argv[1:])
    _, _, md = run(names=names, half=args.half, epsilons=epsilons, seeds=seeds, factories=factories,
                   n_jobs=args.n_jobs, train_cap=args.train_cap,
                   diffprivlib_python=args.diffprivlib_python, out=args.out, command=command.strip())
    print(md)


if __name__ == "__main__":
    main()
