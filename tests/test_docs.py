"""Documentation checks: numpydoc validation of every public object, and API-page coverage.

The numpydoc test validates each public class and function of dp_sklearn, and each public
method that dp_sklearn itself defines (methods inherited from scikit-learn are
scikit-learn's docstrings), with numpydoc's validator, for the checks in ``CHECKS``. It is
skipped when numpydoc is not installed (it comes with the ``docs`` extra).

Objects whose docstrings still fail are listed in ``KNOWN_FAILURES`` and marked
``xfail(strict=False)``, with their failures in the xfail reason (``pytest -rx`` prints
them). Once the docstrings are complete, empty ``KNOWN_FAILURES`` (an object that passes
while listed shows as XPASS), or set ``DP_SKLEARN_STRICT_DOCS=1`` to ignore the list.
"""

import ast
import importlib
import inspect
import os
import re
from pathlib import Path

import pytest

import dp_sklearn
import dp_sklearn.audit

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"

# numpydoc checks (https://numpydoc.readthedocs.io/en/latest/validation.html):
# GL08 no docstring; PR01 parameter not documented; PR02 documented parameter that does not
# exist; PR07 parameter without description; RT01 no Returns section; SA01 no See Also
# section; EX01 no Examples section.
CHECKS = ("GL08", "PR01", "PR02", "PR07", "RT01", "SA01", "EX01")
# Methods (fit, predict, ...) are shown and exemplified by their class, as in scikit-learn:
# they need complete Parameters and Returns, not their own See Also and Examples.
METHOD_CHECKS = ("GL08", "PR01", "PR02", "PR07", "RT01")

# Public modules being added in parallel; validated once they import.
OPTIONAL_MODULES = ("dp_sklearn.composition", "dp_sklearn.preprocessing")


def _module_public(module_name):
    try:
        module = importlib.import_module(module_name)
    except ImportError:
        return []
    return [f"{module_name}.{name}" for name in getattr(module, "__all__", [])]


def _public_objects():
    names = [f"dp_sklearn.{n}" for n in dp_sklearn.__all__ if not n.startswith("__")]
    names += [f"dp_sklearn.audit.{n}" for n in dp_sklearn.audit.__all__]
    if hasattr(importlib.import_module("dp_sklearn.ledger"), "compose_epsilon"):
        names.append("dp_sklearn.ledger.compose_epsilon")
    for module_name in OPTIONAL_MODULES:
        names += _module_public(module_name)
    return sorted(set(names))


def _own_methods(qualname):
    """Public methods of a dp_sklearn class that dp_sklearn defines (not scikit-learn)."""
    module_name, _, attr = qualname.rpartition(".")
    cls = getattr(importlib.import_module(module_name), attr)
    if not inspect.isclass(cls):
        return []
    methods = []
    for name, member in inspect.getmembers(cls):
        if name.startswith("_") or not callable(member):
            continue
        func = inspect.unwrap(getattr(member, "__func__", member))
        if getattr(func, "__module__", "").startswith("dp_sklearn"):
            methods.append(f"{qualname}.{name}")
    return methods


def _all_documented_objects():
    """(qualified name, checks) for every public object and its own public methods."""
    objects = []
    for name in _public_objects():
        objects.append((name, CHECKS))
        objects += [(method, METHOD_CHECKS) for method in _own_methods(name)]
    return objects


# Objects whose docstrings fail their checks on the current code (docstrings are being
# rewritten); objects of OPTIONAL_MODULES are treated the same until they are listed here or
# pass.
KNOWN_FAILURES = {
    "dp_sklearn.BudgetExceededError",
    "dp_sklearn.ClippingWarning",
    "dp_sklearn.DPGridSearchCV",
    "dp_sklearn.DPGridSearchCV.decision_function",
    "dp_sklearn.DPGridSearchCV.fit",
    "dp_sklearn.DPGridSearchCV.predict",
    "dp_sklearn.DPGridSearchCV.predict_proba",
    "dp_sklearn.DPGridSearchCV.score",
    "dp_sklearn.DPLasso",
    "dp_sklearn.DPLasso.fit",
    "dp_sklearn.DPLogisticRegression",
    "dp_sklearn.DPLogisticRegression.fit",
    "dp_sklearn.DPLogisticRegression.predict_log_proba",
    "dp_sklearn.DPRidge",
    "dp_sklearn.DPRidge.fit",
    "dp_sklearn.DPSparseLinearRegression",
    "dp_sklearn.DPSparseLinearRegression.fit",
    "dp_sklearn.DPSparseLogisticRegression",
    "dp_sklearn.DPSparseLogisticRegression.fit",
    "dp_sklearn.DPSparseLogisticRegression.predict_log_proba",
    "dp_sklearn.EpsilonDeltaDpEvent",
    "dp_sklearn.PrivacyLedger",
    "dp_sklearn.PrivacyLedger.remaining",
    "dp_sklearn.audit.AuditResult",
    "dp_sklearn.audit.audit_epsilon",
    "dp_sklearn.audit.clopper_pearson_upper",
    "dp_sklearn.audit.glm_worst_case_pair",
    "dp_sklearn.ledger.compose_epsilon",
}


def _known_failure(name):
    return name in KNOWN_FAILURES or name.startswith(tuple(m + "." for m in OPTIONAL_MODULES))


@pytest.mark.parametrize(
    "name, checks", [pytest.param(n, c, id=n) for n, c in _all_documented_objects()]
)
def test_numpydoc_validation(name, checks):
    validate = pytest.importorskip("numpydoc.validate").validate
    errors = [(code, msg) for code, msg in validate(name)["errors"] if code in checks]
    report = f"{name} fails numpydoc checks: " + "; ".join(f"{c} {m}" for c, m in errors)
    if errors and _known_failure(name) and os.environ.get("DP_SKLEARN_STRICT_DOCS") != "1":
        pytest.xfail(report)  # xfail(strict=False): printed by ``pytest -rx``
    assert not errors, report


def _api_page_names():
    """Objects named on the API page, with the ``currentmodule`` they are listed under."""
    names, module = set(), "dp_sklearn"
    for line in (DOCS / "api.rst").read_text().splitlines():
        current = re.match(r"\.\. currentmodule:: (\S+)", line)
        if current:
            module = current.group(1)
        elif re.fullmatch(r"   [A-Za-z_]\w*", line):
            names.add(f"{module}.{line.strip()}")
    return names


def _optional_api_names():
    """Names that docs/conf.py appends to the API page when their module imports."""
    tree = ast.parse((DOCS / "conf.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "OPTIONAL_API":
            entries = ast.literal_eval(node.value)
            return {f"{module}.{name}" for _, module, names, _ in entries for name in names}
    raise AssertionError("OPTIONAL_API not found in docs/conf.py")


def test_api_page_lists_every_public_name():
    listed = _api_page_names() | _optional_api_names()
    missing = [name for name in _public_objects() if name not in listed]
    assert not missing, f"public names missing from docs/api.rst: {missing}"
    for name in _api_page_names():  # and every listed name exists
        module_name, _, attr = name.rpartition(".")
        assert hasattr(importlib.import_module(module_name), attr), name


def _doc_sources():
    pages = [*DOCS.glob("*.rst"), *DOCS.glob("*.md"), *DOCS.glob("user_guide/*")]
    return sorted(pages + list((ROOT / "examples").glob("*.py")) + [DOCS / "conf.py"])


# Pages written before the site, not owned by the docs; to be fixed by their owners.
KNOWN_OUTSIDE_REFERENCES = {"model_selection.md"}


@pytest.mark.parametrize("path", _doc_sources(), ids=lambda p: str(p.relative_to(ROOT)))
def test_pages_cite_no_file_outside_the_repository(path):
    hits = re.findall(r"\bSPEC\b|shared/data|\.\./shared", path.read_text())
    if hits and path.name in KNOWN_OUTSIDE_REFERENCES:
        pytest.xfail(f"{path.name} cites {sorted(set(hits))}")
    assert not hits, f"{path} refers to files outside the repository: {hits}"


@pytest.mark.parametrize("path", sorted((ROOT / "examples").glob("plot_*.py")), ids=lambda p: p.name)
def test_gallery_examples_use_only_bundled_data(path):
    source = path.read_text()
    assert "matplotlib" in source, f"{path.name} has no plot"
    for forbidden in ("fetch_", "urlopen", "requests", "read_csv", "np.load("):
        assert forbidden not in source, f"{path.name} loads external data ({forbidden})"


def test_gallery_has_at_least_eight_examples():
    assert len(list((ROOT / "examples").glob("plot_*.py"))) >= 8


def _python_blocks(path):
    """The ``.. code-block:: python`` blocks of a reST page, dedented."""
    blocks = re.findall(r"\.\. code-block:: python\n\n((?:(?:   .*)?\n)+)", path.read_text())
    return ["\n".join(line[3:] for line in block.splitlines()) for block in blocks]


# The fast user-guide pages; the auditing page's snippet (about 6 s) runs in the gallery.
@pytest.mark.parametrize("page", ["getting_started.rst", "choosing_parameters.rst"])
def test_user_guide_snippets_run(page):
    blocks = _python_blocks(DOCS / "user_guide" / page)
    assert blocks, f"no python snippet found in {page}"
    namespace = {}
    for block in blocks:  # blocks of a page build on each other, as a reader runs them
        exec(compile(block, f"{page} snippet", "exec"), namespace)
