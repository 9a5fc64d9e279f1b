"""diffprivlib on the suite's splits, in a separate interpreter (it needs scikit-learn < 1.6).

Usage: ``<venv python> _diffprivlib_worker.py jobs.json``; ``benchmarks/tabular/run.py``
writes ``jobs.json`` and one ``.npz`` per split (numeric columns first, then the
public one-hot columns) and reads one JSON record per fit from stdout.

Configuration, as a new user would write it: diffprivlib's ``StandardScaler`` on
the numeric columns (a quarter of epsilon) and ``LogisticRegression`` /
``LinearRegression`` with the rest, every other argument at its default. Without
``bounds`` / ``data_norm`` diffprivlib reads them from the data and warns
(``PrivacyLeakWarning``): these fits are NOT private; the warnings are counted.
This file imports nothing from dp_sklearn.
"""

import json
import sys
import time
import warnings

import numpy as np


def fit_one(job, eps):
    from diffprivlib.models import LinearRegression, LogisticRegression, StandardScaler
    from sklearn.compose import ColumnTransformer
    from sklearn.metrics import r2_score, roc_auc_score
    from sklearn.pipeline import make_pipeline

    d = np.load(job["path"])
    n_num, p = int(d["n_num"]), d["Xtr"].shape[1]
    task = job["task"]
    scaler = StandardScaler(epsilon=0.25 * eps, random_state=job["seed"])
    parts = [("num", scaler, list(range(n_num)))] if n_num else []
    if p > n_num:
        parts.append(("cat", "passthrough", list(range(n_num, p))))
    model_eps = 0.75 * eps if n_num else eps
    model = (LinearRegression(epsilon=model_eps, random_state=job["seed"]) if task == "regression"
             else LogisticRegression(epsilon=model_eps, random_state=job["seed"]))
    est = make_pipeline(ColumnTransformer(parts), model)
    t0 = time.perf_counter()
    acc = None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            est.fit(d["Xtr"], d["ytr"])
            if task == "regression":
                main = float(r2_score(d["yte"], est.predict(d["Xte"])))
            else:
                proba = est.predict_proba(d["Xte"])
                classes = list(est.classes_)
                acc = float(np.mean(np.asarray(classes)[proba.argmax(axis=1)] == d["yte"]))
                if not np.all(np.isfinite(proba)):
                    main = float("nan")
                elif task == "binary":
                    main = float(roc_auc_score(d["yte"], proba[:, classes.index(1)]))
                else:
                    main = float(roc_auc_score(d["yte"], proba, multi_class="ovr", average="macro",
                                               labels=classes))
            error = ""
        except Exception as exc:  # recorded, not raised
            main, error = float("nan"), f"{type(exc).__name__}: {exc}"[:200]
    kinds = sorted({w.category.__name__ for w in caught})
    return dict(dataset=job["dataset"], task=task, n_train=job["n_train"], n_test=job["n_test"],
                seed=job["seed"], config="diffprivlib", epsilon=eps, score=main, accuracy=acc,
                seconds=time.perf_counter() - t0, error=error, n_warnings=len(caught),
                warnings=";".join(kinds))


def main(spec_file):
    import diffprivlib

    with open(spec_file) as fh:
        spec = json.load(fh)
    print(f"# diffprivlib {diffprivlib.__version__}", flush=True)
    for job in spec["jobs"]:
        for eps in spec["epsilons"]:
            print(json.dumps(fit_one(job, eps)), flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
