"""Accuracy of the few-pass solver against noisy_gd, where solver="auto" picks it and where it does not.

For each dataset and epsilon in {0.5, 1, 2, 5}: held-out score (R^2 or ROC AUC) of
``DPRidge`` / ``DPLogisticRegression`` with ``solver="noisy_gd"`` and ``solver="noisy_newton"``
(mean and standard error over seeds), the passes of each, and which one ``solver="auto"`` takes
(``dp_sklearn.solvers._noisy_newton.newton_applies``: public values only). Datasets: the bundled
diabetes and breast_cancer, adult and ijcnn1 from the data directory (skipped when absent), and
dense synthetic data. delta = min(1e-5, 1 / (10 n)); data_norm as each dataset documents.

Usage: ``python -m benchmarks.few_pass_accuracy [--data-dir D] [--seeds 3]``; writes
``benchmarks/results/few_pass_accuracy.md``.

``--highdim-tune``: noisy_agd's ``KAPPA`` and ``AVERAGE_FROM`` on the tuning half of the sparse sets
(rcv1, reuters; ``benchmarks/sparse_data_norm.py``'s halves), paired with noisy_gd; writes
``benchmarks/results/few_pass_highdim_tuning.md``.

``--highdim-time``: wall time of the default binary fit on news20 at each epsilon against
scikit-learn's ``LogisticRegression()`` (warmed up, interleaved, median of 7; one BLAS thread).

``--highdim``: the sparse inputs with more than ``MAX_DIM`` columns (news20 class 1 vs rest, the
RCV1 subset, reuters money-fx; ``data_norm=1``, unit rows), binary ``DPLogisticRegression`` with
``solver="noisy_gd"`` (its default T) against ``solver="noisy_agd"`` at its default T and at T = 30: held-out
ROC AUC and accuracy, mean over seeds, and the paired difference (same seed) with its standard
error; writes ``benchmarks/results/few_pass_highdim.md``.
"""

from __future__ import annotations

import argparse
import pathlib
import warnings

import numpy as np

from . import datasets as D
from .common import md_table, safe_call

EPSILONS = (0.5, 1.0, 2.0, 5.0)


def _synthetic(n, p, task, seed=5, n_test=5000):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n + n_test, p))
    w = rng.standard_normal(p) / np.sqrt(p)
    y = X @ w + 0.5 * rng.standard_normal(n + n_test)
    if task == "binary":
        y = (y > 0).astype(int)
    return D.Dataset(f"synthetic {task} {n} x {p}", task, X[:n], y[:n], X[n:], y[n:], float(np.sqrt(p)),
                     "sqrt(p)", "none")


def _datasets(data_dir):
    out = [D.load_diabetes_ds(), D.load_breast_cancer_ds()]
    notes = []
    for loader in (D.load_adult, D.load_ijcnn1):
        ds, err = safe_call(loader, data_dir)
        if err:
            notes.append(f"{loader.__name__} skipped ({err})")
        else:
            out.append(ds)
    for n, p in ((10_000, 20), (100_000, 20), (10_000, 100)):
        out += [_synthetic(n, p, "regression"), _synthetic(n, p, "binary")]
    return out, notes


def _fit(ds, solver, eps, seed):
    from dp_sklearn import DPLogisticRegression, DPRidge

    n = ds.X_train.shape[0]
    kw = dict(epsilon=eps, delta=min(1e-5, 0.1 / n), random_state=seed, data_norm=ds.data_norm, solver=solver)
    if ds.task == "binary":
        m = DPLogisticRegression(**kw)
    else:
        m = DPRidge(bounds_y=ds.bounds_y if ds.bounds_y else "auto", **kw)
    m.fit(ds.X_train, ds.y_train)
    if ds.task == "binary":  # ROC AUC: accuracy is uninformative on imbalanced labels (ijcnn1: 9.5% positive)
        from sklearn.metrics import roc_auc_score

        return roc_auc_score(ds.y_test, m.decision_function(ds.X_test)), m
    return m.score(ds.X_test, ds.y_test), m


def _auto_choice(ds, eps):
    from dp_sklearn import DPLogisticRegression, DPRidge

    n, p = ds.X_train.shape
    est = (DPLogisticRegression if ds.task == "binary" else DPRidge)(epsilon=eps, delta=min(1e-5, 0.1 / n),
                                                                    data_norm=ds.data_norm)
    est.n_features_in_ = p  # public: the choice reads n, p, the label set, epsilon, delta only
    est._n_targets = n  # what fit records before the choice (the share of bounds_y="auto")
    if ds.task == "binary":
        est.classes_ = np.unique(ds.y_train)
    return est._resolved_solver(n)


def run(data_dir, seeds):
    datasets, notes = _datasets(data_dir)
    rows = []
    for ds in datasets:
        for eps in EPSILONS:
            cells = {}
            for solver in ("noisy_gd", "noisy_newton"):
                scores, T = [], None
                for s in range(seeds):
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        sc, m = _fit(ds, solver, eps, s)
                    scores.append(sc)
                    T = m.n_iter_
                cells[solver] = (float(np.mean(scores)), float(np.std(scores) / np.sqrt(seeds)), T)
            auto = _auto_choice(ds, eps)
            gd, nn = cells["noisy_gd"], cells["noisy_newton"]
            rows.append([ds.name, ds.X_train.shape[0], ds.X_train.shape[1], eps, "R^2" if ds.task == "regression"
                         else "ROC AUC", f"{gd[0]:.4f} ± {gd[1]:.4f} (T={gd[2]})", f"{nn[0]:.4f} ± {nn[1]:.4f}",
                         f"{nn[0] - gd[0]:+.4f}", f"**{auto}**"])
            print(" | ".join(str(c) for c in rows[-1]), flush=True)
    return rows, notes


HIGHDIM_T = (None, 30)  # None: the default T (dp_sklearn.solvers._noisy_agd.default_n_iter)


def _highdim_datasets(data_dir):
    out, notes = [], []
    for loader in (D.load_news20, D.load_rcv1_subset, D.load_reuters):
        ds, err = safe_call(loader, data_dir)
        if err:
            notes.append(f"{loader.__name__} skipped ({err})")
        else:
            out.append(ds)
    return out, notes


def _fit_binary(ds, solver, eps, seed, max_iter=None):
    from sklearn.metrics import roc_auc_score

    from dp_sklearn import DPLogisticRegression

    n = ds.X_train.shape[0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = DPLogisticRegression(epsilon=eps, delta=min(1e-5, 0.1 / n), random_state=seed, data_norm=ds.data_norm,
                                 solver=solver, max_iter=max_iter).fit(ds.X_train, ds.y_train)
    return roc_auc_score(ds.y_test, m.decision_function(ds.X_test)), m.score(ds.X_test, ds.y_test), m.n_iter_


def run_highdim(data_dir, seeds):
    datasets, notes = _highdim_datasets(data_dir)
    rows = []
    for ds in datasets:
        for eps in EPSILONS:
            base = [_fit_binary(ds, "noisy_gd", eps, s) for s in range(seeds)]
            auc0, acc0 = np.array([b[0] for b in base]), np.array([b[1] for b in base])
            cells = [f"{auc0.mean():.4f} / {acc0.mean():.4f} (T={base[0][2]})"]
            for T in HIGHDIM_T:
                res = [_fit_binary(ds, "noisy_agd", eps, s, T) for s in range(seeds)]
                auc, acc = np.array([r[0] for r in res]), np.array([r[1] for r in res])
                if T is None:
                    cells.append(f"T={res[0][2]}")
                d, da = auc - auc0, acc - acc0
                cells.append(f"{auc.mean():.4f} / {acc.mean():.4f}; {d.mean():+.4f} ± {d.std(ddof=1) / np.sqrt(seeds):.4f}"
                             f" / {da.mean():+.4f} ± {da.std(ddof=1) / np.sqrt(seeds):.4f}")
            rows.append([ds.name, ds.X_train.shape[0], ds.X_train.shape[1], eps, *cells])
            print(" | ".join(str(c) for c in rows[-1]), flush=True)
    return rows, notes


KAPPAS, AVERAGES = (3.0, 5.0, 8.0), (0.5, 0.9)


def run_tuning(data_dir, seeds):
    """noisy_agd at the default T of each KAPPA and each AVERAGE_FROM, paired with noisy_gd, on rcv1 and reuters."""
    import dp_sklearn.solvers._noisy_agd as agd

    rows, saved = [], agd.AVERAGE_FROM
    for ds in (D.load_rcv1_subset(data_dir), D.load_reuters(data_dir)):
        n = ds.X_train.shape[0]
        for eps in EPSILONS:
            gd = np.array([_fit_binary(ds, "noisy_gd", eps, s)[:2] for s in range(seeds)])
            cells = [f"{gd[:, 0].mean():.4f} / {gd[:, 1].mean():.4f}"]
            for k in KAPPAS:
                for a in AVERAGES:
                    agd.AVERAGE_FROM = a
                    T = agd.default_n_iter(n, eps, min(1e-5, 0.1 / n), kappa=k)
                    d = np.array([_fit_binary(ds, "noisy_agd", eps, s, T)[:2] for s in range(seeds)]) - gd
                    se = d.std(axis=0, ddof=1) / np.sqrt(seeds)
                    cells.append(f"T={T}: {d[:, 0].mean():+.4f} ± {se[0]:.4f} / {d[:, 1].mean():+.4f} ± {se[1]:.4f}")
            agd.AVERAGE_FROM = saved
            rows.append([ds.name, n, eps, *cells])
            print(" | ".join(str(c) for c in rows[-1]), flush=True)
    return rows


def main_tuning(args):
    rows = run_tuning(args.data_dir, args.seeds)
    text = "\n".join([
        "# noisy_agd's KAPPA and AVERAGE_FROM, tuning half of the sparse sets (issue 22)", "",
        f"- command: `python -m benchmarks.few_pass_accuracy --highdim-tune --seeds {args.seeds}`",
        "- binary DPLogisticRegression, data_norm = 1, delta = min(1e-5, 1/(10 n)); T = ceil(KAPPA (n / z)^(1/3)) "
        "within [20, 100]; the average released from step AVERAGE_FROM T. Cells: noisy_gd's held-out ROC AUC / "
        "accuracy (mean over seeds), then noisy_agd minus noisy_gd (same seed), mean ± standard error, ROC AUC / "
        "accuracy", "",
        md_table(["data", "n", "epsilon", "noisy_gd", *[f"KAPPA={k}, AVERAGE_FROM={a}" for k in KAPPAS
                                                        for a in AVERAGES]], rows), ""])
    out = pathlib.Path(__file__).parent / "results" / "few_pass_highdim_tuning.md"
    out.write_text(text)
    print(text)


def main_highdim(args):
    rows, notes = run_highdim(args.data_dir, args.seeds)
    text = "\n".join([
        "# Few-pass solver accuracy above MAX_DIM columns: noisy_agd vs noisy_gd (issue 22)", "",
        f"- command: `python -m benchmarks.few_pass_accuracy --highdim --seeds {args.seeds}`",
        "- binary DPLogisticRegression, data_norm = 1 (unit rows), delta = min(1e-5, 1/(10 n)), other parameters at "
        "their defaults; cells: held-out ROC AUC / accuracy (mean over seeds); for noisy_agd also the paired "
        "difference to noisy_gd (same seed), mean ± standard error, ROC AUC / accuracy",
        *[f"- {n}" for n in notes], "",
        md_table(["data", "n", "p", "epsilon", "noisy_gd (default T)", "noisy_agd default T", "noisy_agd (default T)",
                  "noisy_agd T=30"], rows),
        ""])
    out = pathlib.Path(__file__).parent / "results" / "few_pass_highdim.md"
    out.write_text(text)
    print(text)


def main_time(args, repeats=7):
    """Wall time of the default binary DPLogisticRegression fit on news20 against scikit-learn's, interleaved."""
    import time

    from sklearn.linear_model import LogisticRegression

    from dp_sklearn import DPLogisticRegression

    ds = D.load_news20(args.data_dir)
    X, y = ds.X_train, ds.y_train
    fits = {"LogisticRegression()": lambda: LogisticRegression().fit(X, y)}
    for eps in EPSILONS:
        fits[f"DPLogisticRegression(epsilon={eps})"] = (
            lambda eps=eps: DPLogisticRegression(epsilon=eps, delta=1e-5, data_norm=1.0, random_state=0).fit(X, y))
    times, passes = {k: [] for k in fits}, {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for f in fits.values():  # warm up
            f()
        for _ in range(repeats):
            for k, f in fits.items():
                t = time.perf_counter()
                m = f()
                times[k].append(time.perf_counter() - t)
                passes[k] = f"{m.solver_} T={m.n_iter_}" if hasattr(m, "solver_") else "lbfgs"
    base = np.median(times["LogisticRegression()"])
    for k in fits:
        print(f"{k} | {passes[k]} | {np.median(times[k]):.3f} s | {np.median(times[k]) / base:.2f}x", flush=True)


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m benchmarks.few_pass_accuracy")
    ap.add_argument("--data-dir", default="/work/shared/data")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--highdim", action="store_true", help="sparse inputs above MAX_DIM columns: noisy_agd")
    ap.add_argument("--highdim-tune", action="store_true", help="noisy_agd's constants on rcv1 and reuters")
    ap.add_argument("--highdim-time", action="store_true", help="news20 default fit time against scikit-learn")
    args = ap.parse_args(argv)
    if args.highdim_time:
        return main_time(args)
    if args.highdim_tune:
        return main_tuning(args)
    if args.highdim:
        return main_highdim(args)
    rows, notes = run(args.data_dir, args.seeds)
    text = "\n".join([
        "# Few-pass solver accuracy: noisy_newton vs noisy_gd (issue 22)", "",
        f"- command: `python -m benchmarks.few_pass_accuracy --seeds {args.seeds}`",
        "- held-out score, mean ± standard error over seeds; delta = min(1e-5, 1/(10 n)); other parameters at "
        "their defaults; `auto` = the solver that `solver=\"auto\"` takes (public rule `newton_applies`)",
        *[f"- {n}" for n in notes], "",
        md_table(["data", "n", "p", "epsilon", "metric", "noisy_gd", "noisy_newton (T+1 passes)", "newton - gd",
                  "auto"], rows), ""])
    out = pathlib.Path(__file__).parent / "results" / "few_pass_accuracy.md"
    out.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
