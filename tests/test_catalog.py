"""The generated "which estimator for which task" table (dp_sklearn/linear_model/_catalog.py)."""

import dataclasses
import inspect
from pathlib import Path

from sklearn.base import ClassifierMixin, RegressorMixin

import dp_sklearn
from dp_sklearn.linear_model._catalog import estimator_rows, estimator_table_markdown
from dp_sklearn.solvers import SOLVERS

DOCS = Path(__file__).resolve().parents[1] / "docs"

#: public predictors that are not one model (a search, a pipeline)
NOT_MODELS = {"DPGridSearchCV", "PrivatePipeline"}


def _public_predictors():
    return {name for name in dp_sklearn.__all__
            if inspect.isclass(getattr(dp_sklearn, name)) and name not in NOT_MODELS
            and issubclass(getattr(dp_sklearn, name), (RegressorMixin, ClassifierMixin))}


def test_table_lists_every_public_estimator_and_its_solvers():
    rows = {r["estimator"]: r for r in estimator_rows()}
    assert set(rows) == _public_predictors()
    table = estimator_table_markdown()
    for name, row in rows.items():
        est = getattr(dp_sklearn, name)()
        if hasattr(est, "_allowed_solvers"):
            assert row["solvers"] == est._allowed_solvers() and row["default"] in row["solvers"]
        assert f"`{name}`" in table and all(f"`{s}`" in table for s in row["solvers"])


def test_table_follows_the_registry():
    """A solver registered later appears in the table of every estimator it serves."""
    SOLVERS["late_ridge"] = dataclasses.replace(SOLVERS["noisy_gd"], name="late_ridge", constraints=("none",))
    try:
        rows = {r["estimator"]: r for r in estimator_rows()}
        assert "late_ridge" in rows["DPRidge"]["solvers"] and "late_ridge" in rows["DPHuberRegressor"]["solvers"]
        assert "late_ridge" not in rows["DPLasso"]["solvers"]
    finally:
        del SOLVERS["late_ridge"]


def test_target_bound_column_comes_from_the_loss():
    rows = {r["estimator"]: r for r in estimator_rows()}
    assert rows["DPHuberRegressor"]["target_bound"] == "none needed"
    assert rows["DPRidge"]["target_bound"] == "bounds_y"


def test_user_guide_includes_the_generated_table():
    page = (DOCS / "user_guide" / "estimators.md").read_text()
    assert "../_generated/estimators_table.md" in page
    assert "estimators" in (DOCS / "user_guide" / "index.rst").read_text()
    assert "estimator_table_markdown" in (DOCS / "conf.py").read_text()
