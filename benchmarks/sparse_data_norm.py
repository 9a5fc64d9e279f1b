"""Default data_norm for sparse input (issue 20, item 5): sqrt(n_features) vs 1 vs "auto".

    PYTHONPATH=$PWD python -m benchmarks.sparse_data_norm [--seeds 2] [--data-dir DIR] [--datasets NAME ...]

DPLogisticRegression(epsilon) on the sparse sets of the shared data directory, as loaded
by benchmarks/datasets.py, and on the same rows hashed into 2**18 columns (a fixed public
random column map, as a HashingVectorizer would: same row norms, p = 262,144), and on a
text corpus that ships in packages (the docstrings of scikit-learn and SciPy: which library
a docstring is from) through ``HashingVectorizer(n_features=2**18)``. Test ROC AUC and
accuracy, mean over seeds. Tuning half: rcv1, reuters; checking half: news20, adult,
docstrings. Never run by the tests.
"""

from __future__ import annotations

import argparse
import warnings

import numpy as np
import scipy.sparse as sp

from benchmarks.datasets import DatasetMissing, default_data_dir, load
from sklearn.metrics import roc_auc_score

from dp_sklearn.linear_model import DPLogisticRegression

HALVES = {"tuning": ("rcv1", "reuters"), "checking": ("news20", "adult", "docstrings")}


def _docstrings(package):
    """Docstrings (> 200 characters) of the public callables of an installed package."""
    import importlib
    import inspect
    import pkgutil

    pkg = importlib.import_module(package)
    out = {}
    for info in pkgutil.walk_packages(pkg.__path__, package + "."):
        if any(part.startswith("_") or part in ("tests", "testing") for part in info.name.split(".")[1:]):
            continue
        try:
            with warnings.catch_warnings():  # deprecation notices of some submodules
                warnings.simplefilter("ignore")
                mod = importlib.import_module(info.name)
        except Exception:  # optional dependencies of a submodule
            continue
        for name, obj in vars(mod).items():
            doc = inspect.getdoc(obj) if callable(obj) and not name.startswith("_") else None
            if doc and len(doc) > 200 and getattr(obj, "__module__", "").startswith(package):
                out[f"{obj.__module__}.{name}"] = doc
    return [out[k] for k in sorted(out)]


def load_docstrings(seed=0):
    """A text corpus that ships in packages: which library (scikit-learn 1, SciPy 0) a docstring is from.

    ``HashingVectorizer(n_features=2**18)`` (l2-normalized rows, scikit-learn's defaults),
    70/30 split; the corpus depends on the installed versions (printed by ``main``).
    """
    from sklearn.feature_extraction.text import HashingVectorizer
    from sklearn.model_selection import train_test_split

    a, b = _docstrings("sklearn"), _docstrings("scipy")
    X = HashingVectorizer(n_features=2**18).transform(a + b)
    y = np.r_[np.ones(len(a), dtype=int), np.zeros(len(b), dtype=int)]
    return train_test_split(X, y, test_size=0.3, random_state=seed, stratify=y)


def hashed(X, n_columns=2**18, seed=0):
    """Rows of X with their columns sent to ``n_columns`` by a fixed random map (signs too)."""
    rng = np.random.default_rng(seed)
    cols = rng.integers(0, n_columns, size=X.shape[1])
    sign = rng.choice([-1.0, 1.0], size=X.shape[1])
    M = sp.csr_matrix((sign, (np.arange(X.shape[1]), cols)), shape=(X.shape[1], n_columns))
    return sp.csr_matrix(X @ M)


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=2)
    ap.add_argument("--eps", type=float, nargs="+", default=[1.0, 5.0])
    ap.add_argument("--data-dir", default=default_data_dir())
    ap.add_argument("--datasets", nargs="+", default=None, help="a subset of the datasets of HALVES")
    args = ap.parse_args(argv)
    import scipy
    import sklearn

    print(f"scikit-learn {sklearn.__version__}, SciPy {scipy.__version__}; ROC AUC (accuracy), mean of {args.seeds} seeds\n")
    print("| half | dataset | p | epsilon | data_norm=sqrt(p) | data_norm=1 | data_norm='auto' |\n|---|---|---|---|---|---|---|")
    for half, names in HALVES.items():
        for name in names:
            if args.datasets is not None and name not in args.datasets:
                continue
            if name == "docstrings":
                Xtr0, Xte0, ytr, yte = load_docstrings()
                variants = [(Xtr0, Xte0, "docstrings HashingVectorizer")]
            else:
                try:
                    ds = load(name, args.data_dir, quick=True)
                except DatasetMissing as exc:
                    print(f"| {half} | {name} | skipped: {exc} |")
                    continue
                ytr, yte = ds.y_train, ds.y_test
                variants = [(ds.X_train, ds.X_test, name), (hashed(ds.X_train), hashed(ds.X_test), f"{name} hashed")]
            for Xtr, Xte, label in variants:
                Xtr, Xte = sp.csr_matrix(Xtr), sp.csr_matrix(Xte)
                for eps in args.eps:
                    cells = []
                    for dn in (float(np.sqrt(Xtr.shape[1])), 1.0, "auto"):
                        acc = []
                        for s in range(args.seeds):
                            with warnings.catch_warnings():
                                warnings.simplefilter("ignore")
                                m = DPLogisticRegression(epsilon=eps, data_norm=dn, random_state=s).fit(Xtr, ytr)
                            acc.append((roc_auc_score(yte, m.decision_function(Xte)), m.score(Xte, yte)))
                        auc, accuracy = np.mean(acc, axis=0)
                        cells.append(f"{auc:.3f} ({accuracy:.3f})")
                    print(f"| {half} | {label} | {Xtr.shape[1]} | {eps:g} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
