"""Dataset loaders for the benchmarks.

Real datasets are read from the shared data directory (never copied into the repo);
see ``/work/shared/data/README.md`` for provenance. Every loader returns a
:class:`Dataset` with a train/test split, the preprocessing applied, and the public
bounds (``data_norm``, ``bounds_y``) the DP estimators use, each with a one-line
justification that ends up in the result tables.

Preprocessing rules (privacy of the *training* data):

* Per-record transforms (``log1p`` of counts, scaling each row to unit l2 norm) are
  data-independent and cost no privacy.
* ``StandardScaler`` fitted on the training split is *not* private; where it is
  used the tables say so ("StandardScaler fitted on train (not DP)").
* ``data_norm`` and ``bounds_y`` are public: they come from the dataset's schema or
  a stated public range, never from the training rows.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from .private_rows import public_raw

REPO_ROOT = Path(__file__).resolve().parent.parent


def default_data_dir():
    """``$DP_SKLEARN_DATA`` if set, else ``../shared/data`` relative to the repo root."""
    env = os.environ.get("DP_SKLEARN_DATA")
    if env:
        return Path(env)
    return (REPO_ROOT / ".." / "shared" / "data").resolve()


def display_path(path):
    """``path`` relative to the repository root when possible (committed results name no absolute paths)."""
    try:
        return os.path.relpath(Path(path).resolve(), REPO_ROOT)
    except ValueError:
        return str(path)


class DatasetMissing(Exception):
    """A data file is absent: the caller skips the dataset with a printed note."""


@dataclass
class Dataset:
    name: str
    task: str  # "binary" or "regression"
    X_train: object
    y_train: np.ndarray
    X_test: object
    y_test: np.ndarray
    data_norm: float
    data_norm_note: str
    preprocessing: str
    bounds_y: tuple | None = None
    bounds_y_note: str = ""
    split_note: str = ""
    subsample_note: str = ""
    source: str = ""
    extra: dict = field(default_factory=dict)

    @property
    def n(self):
        return self.X_train.shape[0]

    @property
    def p(self):
        return self.X_train.shape[1]

    @property
    def sparse(self):
        return sp.issparse(self.X_train)

    def describe(self):
        """Lines stating the dataset, its size and every data-handling choice."""
        kind = "sparse CSR" if self.sparse else "dense"
        lines = [
            f"- dataset: **{self.name}** ({self.source}); task: {self.task}; {kind}",
            f"- n_train = {self.n}, n_test = {self.X_test.shape[0]}, p = {self.p}",
            f"- split: {self.split_note}",
            f"- preprocessing: {self.preprocessing}",
            f"- data_norm = {self.data_norm:g} ({self.data_norm_note})",
        ]
        if self.bounds_y is not None:
            lines.append(f"- bounds_y = {tuple(float(b) for b in self.bounds_y)} ({self.bounds_y_note})")
        if self.subsample_note:
            lines.append(f"- subsampling: {self.subsample_note}")
        return lines


def _require(path):
    path = Path(path)
    if not path.exists():
        raise DatasetMissing(f"{path} not found")
    return path


def _svmlight(path, n_features=None):
    from sklearn.datasets import load_svmlight_file

    X, y = load_svmlight_file(str(_require(path)), n_features=n_features)
    return _int32(X.tocsr()), y


def _int32(X):
    """CSR with 32-bit indices (liblinear refuses 64-bit ones)."""
    X.indices = X.indices.astype(np.int32)
    X.indptr = X.indptr.astype(np.int32)
    return X


def _binary01(y):
    """Map {-1, +1} (or {0, 1}) labels to {0, 1} ints."""
    return (np.asarray(y) > 0).astype(int)


def _split(n, test_size, seed):
    rng = np.random.default_rng(seed)
    perm = rng.permutation(n)
    n_test = int(round(test_size * n))
    return np.sort(perm[n_test:]), np.sort(perm[:n_test])


def _standardize(X_train, X_test):
    from sklearn.preprocessing import StandardScaler

    sc = StandardScaler().fit(X_train)
    return sc.transform(X_train), sc.transform(X_test)


def _subsample(ds, max_train, max_test, seed=0):
    """Deterministic row subsample (first a fixed permutation), recorded on the dataset."""
    notes = []
    rng = np.random.default_rng(seed)
    if max_train is not None and ds.X_train.shape[0] > max_train:
        idx = np.sort(rng.choice(ds.X_train.shape[0], max_train, replace=False))
        notes.append(f"train subsampled {ds.X_train.shape[0]} -> {max_train} rows")
        ds.X_train, ds.y_train = ds.X_train[idx], ds.y_train[idx]
    if max_test is not None and ds.X_test.shape[0] > max_test:
        idx = np.sort(rng.choice(ds.X_test.shape[0], max_test, replace=False))
        notes.append(f"test subsampled {ds.X_test.shape[0]} -> {max_test} rows")
        ds.X_test, ds.y_test = ds.X_test[idx], ds.y_test[idx]
    if notes:
        ds.subsample_note = "; ".join(notes) + " (uniform, seed 0)"
    return ds


# ---------------------------------------------------------------------------- loaders
def load_adult(data_dir):
    d = Path(data_dir) / "adult_a9a"
    Xtr, ytr = _svmlight(d / "adult.trn.bz2", n_features=123)
    Xte, yte = _svmlight(d / "adult.tst.bz2", n_features=123)
    return Dataset(
        "adult (a9a)", "binary", Xtr, _binary01(ytr), Xte, _binary01(yte),
        data_norm=float(np.sqrt(14)),
        data_norm_note="public schema: 14 categorical attributes one-hot encoded, so at most 14 ones per row",
        preprocessing="none (binary one-hot features as distributed; kept sparse CSR, 14 of 123 entries "
                      "nonzero per row: the same fits as dense input up to floating-point rounding, "
                      "about 4x faster)",
        split_note="official a9a train / a9a.t test", source="LIBSVM a9a via tick-datasets",
    )


def load_ijcnn1(data_dir):
    d = Path(data_dir) / "ijcnn1"
    Xtr, ytr = _svmlight(d / "ijcnn1.trn.bz2", n_features=22)
    Xte, yte = _svmlight(d / "ijcnn1.tst.bz2", n_features=22)
    return Dataset(
        "ijcnn1", "binary", Xtr.toarray(), _binary01(ytr), Xte.toarray(), _binary01(yte),
        data_norm=float(np.sqrt(22)),
        data_norm_note="public: LIBSVM scaling puts every feature in [-1, 1], so ||x||_2 <= sqrt(22)",
        preprocessing="none (LIBSVM-scaled features as distributed)",
        split_note="official train (tr + val) / test (ijcnn1.t)", source="LIBSVM ijcnn1 via tick-datasets",
    )


def load_reuters(data_dir):
    d = Path(data_dir) / "reuters21578_moneyfx"
    Xtr, ytr = _svmlight(d / "reuters.trn.bz2", n_features=8315)
    Xte, yte = _svmlight(d / "reuters.tst.bz2", n_features=8315)
    return Dataset(
        "reuters money-fx", "binary", Xtr, _binary01(ytr), Xte, _binary01(yte),
        data_norm=1.0, data_norm_note="rows are unit-l2 TF-IDF as distributed",
        preprocessing="none", split_note="official train / test",
        source="Reuters-21578 via tick-datasets",
    )


def load_rcv1_subset(data_dir):
    d = Path(data_dir) / "rcv1_subset_vw"
    Xtr, ytr = _svmlight(d / "rcv1_vw_train.svm.bz2", n_features=47236)
    Xte, yte = _svmlight(d / "rcv1_vw_test.svm.bz2", n_features=47236)
    return Dataset(
        "RCV1 subset", "binary", Xtr, _binary01(ytr), Xte, _binary01(yte),
        data_norm=1.0, data_norm_note="rows are unit-l2 log-TF-IDF as distributed",
        preprocessing="none", split_note="VW rcv1_small train / rcv1_small_test",
        source="RCV1 (VW subset)",
    )


def load_news20(data_dir, positive_class=1, split_seed=0):
    path = _require(Path(data_dir) / "news20_multiclass" / "news20.npz")
    z = np.load(path)
    X = sp.csr_matrix((z["data"], z["indices"], z["indptr"]), shape=tuple(z["shape"]))
    y = (np.asarray(z["y"]).astype(int) == positive_class).astype(int)
    # Per-record (data-independent) transform: log1p of counts, then unit l2 rows.
    X = X.astype(np.float64)
    X.data = np.log1p(X.data)
    from sklearn.preprocessing import normalize

    X = _int32(normalize(X, norm="l2", axis=1).tocsr())
    tr, te = _split(X.shape[0], 0.2, split_seed)
    return Dataset(
        f"news20 (class {positive_class} vs rest)", "binary", X[tr], y[tr], X[te], y[te],
        data_norm=1.0, data_norm_note="each row scaled to unit l2 norm (per-record transform)",
        preprocessing="log1p(term count), then each row scaled to unit l2 norm (per-record, no privacy cost)",
        split_note=f"random 80/20 split, seed {split_seed}",
        source="LIBSVM news20 multiclass via jolars/rdatasets",
    )


def load_permeability(data_dir, split_seed=0):
    path = _require(Path(data_dir) / "permeability_qsar" / "permeability_qsar.npz")
    z = np.load(path, allow_pickle=False)  # numeric arrays only: never unpickle a data file
    X, y = np.asarray(z["X"], dtype=np.float64), np.asarray(z["y"], dtype=np.float64)
    tr, te = _split(X.shape[0], 0.25, split_seed)
    return Dataset(
        "permeability QSAR", "regression", X[tr], y[tr], X[te], y[te],
        data_norm=float(np.sqrt(X.shape[1])),
        data_norm_note="public: 0/1 fingerprint bits, so ||x||_2 <= sqrt(p)",
        preprocessing="none (0/1 fingerprint bits)",
        bounds_y=(0.0, 60.0), bounds_y_note="stated public range of permeability",
        split_note=f"random 75/25 split, seed {split_seed}", source="modeldata::permeability_qsar",
    )


def load_flights(data_dir, split_seed=0):
    path = _require(Path(data_dir) / "nycflights13" / "flights_regression.npz")
    z = np.load(path, allow_pickle=False)  # numeric arrays only: never unpickle a data file
    X, y = np.asarray(z["X"], dtype=np.float64), np.asarray(z["y"], dtype=np.float64)
    tr, te = _split(X.shape[0], 0.2, split_seed)
    Xtr, Xte = _standardize(X[tr], X[te])
    return Dataset(
        "NYC flights 2013 (arr_delay)", "regression", Xtr, y[tr], Xte, y[te],
        data_norm=float(np.sqrt(X.shape[1])),
        data_norm_note="default sqrt(p) for standardized features; longer rows are clipped",
        preprocessing="StandardScaler fitted on the training split (NOT private; stated)",
        bounds_y=(-60.0, 180.0),
        bounds_y_note="stated public range of arrival delay in minutes; targets outside are clipped in training only",
        split_note=f"random 80/20 split, seed {split_seed}", source="nycflights13",
    )


def load_diabetes_ds(data_dir=None, split_seed=0):
    from sklearn.datasets import load_diabetes

    X, y = load_diabetes(return_X_y=True)
    tr, te = _split(X.shape[0], 0.25, split_seed)
    Xtr, Xte = _standardize(X[tr], X[te])
    return Dataset(
        "diabetes (sklearn)", "regression", Xtr, y[tr], Xte, y[te],
        data_norm=float(np.sqrt(X.shape[1])),
        data_norm_note="default sqrt(p) for standardized features; longer rows are clipped",
        preprocessing="StandardScaler fitted on the training split (NOT private; stated)",
        bounds_y=(0.0, 400.0), bounds_y_note="stated public range of the disease-progression score",
        split_note=f"random 75/25 split, seed {split_seed}", source="sklearn.datasets.load_diabetes",
        extra=public_raw("diabetes", X[tr], X[te]),
    )


def load_breast_cancer_ds(data_dir=None, split_seed=0):
    from sklearn.datasets import load_breast_cancer

    X, y = load_breast_cancer(return_X_y=True)
    tr, te = _split(X.shape[0], 0.25, split_seed)
    Xtr, Xte = _standardize(X[tr], X[te])
    return Dataset(
        "breast_cancer (sklearn)", "binary", Xtr, y[tr], Xte, y[te],
        data_norm=float(np.sqrt(X.shape[1])),
        data_norm_note="default sqrt(p) for standardized features; longer rows are clipped",
        preprocessing="StandardScaler fitted on the training split (NOT private; stated)",
        split_note=f"random 75/25 split, seed {split_seed}", source="sklearn.datasets.load_breast_cancer",
        extra=public_raw("breast_cancer", X[tr], X[te]),
    )


#: name -> (loader, quick-mode (max_train, max_test) or None)
REAL_DATASETS = {
    "adult": (load_adult, (8000, 8000)),
    "ijcnn1": (load_ijcnn1, (10000, 10000)),
    "reuters": (load_reuters, (3000, None)),
    "rcv1": (load_rcv1_subset, None),
    "news20": (load_news20, (2500, None)),
    "permeability": (load_permeability, None),
    "flights": (load_flights, (10000, 10000)),
    "diabetes": (load_diabetes_ds, None),
    "breast_cancer": (load_breast_cancer_ds, None),
}


def load(name, data_dir, quick=False):
    loader, quick_sizes = REAL_DATASETS[name]
    ds = loader(data_dir)
    if quick and quick_sizes is not None:
        ds = _subsample(ds, *quick_sizes)
    return ds


# ---------------------------------------------------------------------------- synthetic
def wang_gu_synthetic(n, d, s_star, task, rng):
    """Wang & Gu (IJCAI 2019), Section 6, synthetic sparse linear / logistic data.

    theta* has s* nonzeros drawn from U(-1, 1) at random positions; X has i.i.d.
    U(-2, 2) entries and each row is rescaled so that ||x_i||_2 <= 2 s* (rows
    longer than 2 s* are scaled down to 2 s*; shorter rows are left alone). Linear:
    y = X theta* + xi with xi ~ N(0, 0.1). Logistic: y_i = 1 with probability
    1 / (1 + exp(<x_i, theta*>)) (the paper's sign convention), else 0.
    """
    theta = np.zeros(d)
    supp = rng.choice(d, s_star, replace=False)
    theta[supp] = rng.uniform(-1, 1, size=s_star)
    X = rng.uniform(-2, 2, size=(n, d))
    norms = np.linalg.norm(X, axis=1)
    bound = 2.0 * s_star
    X *= np.minimum(1.0, bound / norms)[:, None]
    z = X @ theta
    if task == "linear":
        y = z + rng.normal(0.0, np.sqrt(0.1), size=n)
    else:
        p1 = 1.0 / (1.0 + np.exp(z))
        y = (rng.uniform(size=n) < p1).astype(int)
    return X, y, theta


def ttz_synthetic(n, p, rng, theta_star=None, noise=0.1):
    """TTZ setting: ||x||_inf <= 1, theta* in the unit l1 ball, |y| <= 1.

    x ~ U(-1, 1)^p; theta* = (0.5, -0.3, 0.2, 0, ..., 0) (||theta*||_1 = 1, on the
    boundary of the radius-1 ball; fixed across n); y = clip(<x, theta*> + N(0, noise^2), -1, 1).
    """
    if theta_star is None:
        theta_star = np.zeros(p)
        k = min(3, p)
        theta_star[:k] = np.array([0.5, -0.3, 0.2])[:k]
    X = rng.uniform(-1, 1, size=(n, p))
    y = np.clip(X @ theta_star + rng.normal(0, noise, size=n), -1, 1)
    return X, y, theta_star


def dense_regression(n, p, rng):
    """Standardized Gaussian design with a dense linear signal (speed benchmarks)."""
    X = rng.standard_normal((n, p))
    w = rng.standard_normal(p) / np.sqrt(p)
    y = X @ w + 0.5 * rng.standard_normal(n)
    return X, y
