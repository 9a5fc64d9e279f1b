"""Fully private pipeline rows of the utility section (issue 10, item 5).

For the bundled datasets whose benchmark split is standardized by a *non-private*
``StandardScaler`` (diabetes, breast_cancer), the utility section also fits, on the
same split but on the raw features,
``make_private_pipeline(DPStandardScaler(bounds=documented), model, epsilon=eps,
delta=1e-5)``: the column's epsilon is the total of the pipeline (25% for the scaler's
private means and variances, 75% for the model: ``dp_sklearn.pipeline.DEFAULT_MODEL_SHARE``).
The per-feature ranges are public: the ones documented with each dataset (breast_cancer's
DESCR "Summary Statistics"; diabetes: every column is documented to have standard
deviation 1/sqrt(442), so +-4 of it is a public clipping range). One row per estimator
family, with the estimator's default solver. These rows are the benchmark's default
story for these datasets; the standardized rows stay as a labelled comparison.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from .private_pipeline import documented_bounds_breast_cancer

__all__ = ["public_raw", "private_combos", "raw_view", "PipelineCombo"]

#: diabetes' documentation fixes every column's standard deviation at 1 / sqrt(442)
DIABETES_BOUND = 4.0 / np.sqrt(442)


def public_raw(name, X_train, X_test):
    """``extra`` entries of a bundled dataset: raw split and documented public ranges."""
    if name == "diabetes":
        bounds, note = (-DIABETES_BOUND, DIABETES_BOUND), "+-4 documented standard deviations (1/sqrt(442))"
    else:
        bounds, note = documented_bounds_breast_cancer(), "per-feature min/max printed in the dataset's DESCR"
    return {"raw": (X_train, X_test), "public_bounds": bounds, "public_bounds_note": note}


@dataclass
class PipelineCombo:
    """A fully private pipeline: DP scaler with public ranges, then the family's default model."""

    label: str
    cls: type
    kwargs: dict
    family: str
    bounds: object
    solver: str = "auto"
    raw: bool = True

    def make(self, *, epsilon, delta, random_state, data_norm=None, bounds_y=None, tol=None):
        from dp_sklearn.pipeline import make_private_pipeline
        from dp_sklearn.preprocessing import DPStandardScaler

        kw = dict(self.kwargs, random_state=random_state)
        if bounds_y is not None:
            kw["bounds_y"] = bounds_y
        return make_private_pipeline(DPStandardScaler(bounds=self.bounds, random_state=random_state),
                                     self.cls(**kw), epsilon=epsilon, delta=delta)


def private_combos(ds, combos):
    """One :class:`PipelineCombo` per estimator family of ``combos`` (none without raw data)."""
    if "raw" not in ds.extra:
        return []
    out, seen = [], set()
    for c in combos:
        if c.family in seen:
            continue
        seen.add(c.family)
        kw = {k: v for k, v in c.kwargs.items() if k != "solver"}
        args = ", ".join(f"{k}={v!r}" for k, v in kw.items())
        label = (f"fully private: DPStandardScaler(documented bounds) + {c.cls.__name__}({args})"
                 .replace("(, ", "("))
        out.append(PipelineCombo(label, c.cls, kw, "private-" + c.family, ds.extra["public_bounds"]))
    return out


def raw_view(ds):
    """``ds`` with its raw (unscaled) train and test features."""
    Xtr, Xte = ds.extra["raw"]
    return dataclasses.replace(ds, X_train=Xtr, X_test=Xte)
