"""The shape of the code: layers without cycles, computed from the import graph of every
module, mechanisms that do not import each other, and test files that mirror the modules.
(No gate on line counts: a module is split when it holds two concepts, which no count
measures.)"""

import ast
from pathlib import Path

import pytest

import dp_sklearn

PACKAGE = Path(dp_sklearn.__file__).resolve().parent  # the package under test (a checkout or the installed wheel)
#: the only mechanism allowed to use another one: two-stage runs objective perturbation
ALLOWED_MECHANISM_IMPORTS = {("_two_stage", "_objective_perturbation")}


def _modules():
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = path
    return out


MODULES = _modules()


def _imports(name, path):
    """dp_sklearn modules imported by ``name`` (relative imports resolved)."""
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            submodules = [f"{target}.{a.name}" for a in node.names if f"{target}.{a.name}" in MODULES]
            # "from . import _budget" imports the submodule, not the package's __init__
            candidates = submodules or [target] + [f"{target}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Import):
            candidates = [a.name for a in node.names]
        else:
            continue
        for c in candidates:
            while c and c not in MODULES and "." in c:
                c = c.rsplit(".", 1)[0]
            if c in MODULES and c != name:
                found.add(c)
    return found


GRAPH = {name: _imports(name, path) for name, path in MODULES.items()}


def test_no_import_cycles_between_modules():
    # Package __init__ files only re-export; the layering is between the modules themselves.
    graph = {k: {v for v in vs if MODULES[v].name != "__init__.py"}
             for k, vs in GRAPH.items() if MODULES[k].name != "__init__.py"}
    state, cycles = {}, []

    def visit(u, stack):
        state[u] = "open"
        stack.append(u)
        for v in sorted(graph.get(u, ())):
            if state.get(v) == "open":
                cycles.append(stack[stack.index(v):] + [v])
            elif v not in state:
                visit(v, stack)
        stack.pop()
        state[u] = "done"

    for u in sorted(graph):
        if u not in state:
            visit(u, [])
    assert not cycles, cycles


#: layer of each subpackage (a module's first component below dp_sklearn); top-level modules
#: (accounting, data, ledger, composition, audit, private statistics, ...) are layer 0
LAYERS = {"solvers": 1, "linear_model": 2, "preprocessing": 2, "model_selection": 3, "pipeline": 4,
          "_private_pipeline": 4, "compose": 4, "demo": 6}


#: modules whose layer is not their subpackage's: the estimator catalog reads the public
#: namespace (every estimator, for the generated user-guide table)
MODULE_LAYERS = {"dp_sklearn.linear_model._catalog": 6}


def _layer(module):
    if module in MODULE_LAYERS:
        return MODULE_LAYERS[module]
    parts = module.split(".")
    if len(parts) == 1:  # the package's __init__: the public namespace re-exports everything
        return 5
    return LAYERS.get(parts[1], 0)


def test_layers_computed_from_the_import_graph():
    """Every import of every module goes to its own layer or a lower one."""
    bad = [(m, v) for m, imported in GRAPH.items() for v in imported if _layer(v) > _layer(m)]
    assert not bad, bad


def test_layer_check_covers_every_module_and_can_fail():
    assert set(GRAPH) == set(MODULES) and len(MODULES) > 40
    assert _layer("dp_sklearn.ledger") < _layer("dp_sklearn.solvers._noisy_gd") < _layer("dp_sklearn.linear_model._base")
    assert _layer("dp_sklearn.linear_model._base") < _layer("dp_sklearn.model_selection._base")


def test_mechanisms_do_not_import_each_other():
    mechanisms = {n for n in MODULES if n.startswith("dp_sklearn.solvers._") and
                  n.rsplit(".", 1)[1] not in ("_base", "_common")}
    bad = []
    for m in mechanisms:
        for v in GRAPH[m] & mechanisms:
            pair = (m.rsplit(".", 1)[1], v.rsplit(".", 1)[1])
            if pair not in ALLOWED_MECHANISM_IMPORTS:
                bad.append(pair)
    assert not bad, bad


# ---------------------------------------------------------------------------- tests mirror the modules
TESTS = Path(__file__).resolve().parent
BENCHMARKS = TESTS.parent / "benchmarks"
#: test files that test no single module (as scikit-learn's sklearn/tests/ holds test_common.py
#: and test_docstrings.py next to the per-module files)
CROSS_CUTTING = {
    "test_architecture.py",  # the import graph of every module, and this layout
    "test_docs.py",  # README and docs pages against the code, numpydoc on every public object
}


def _mirror_names(directory):
    """The names a test file may mirror in one directory of the package: every module and
    subpackage without its leading underscore (``linear_model/_ridge.py`` -> ``ridge``,
    ``_private_stats/`` -> ``private_stats``), and a family of modules by its shared first word
    (``_dask_design.py``, ``_dask_fit.py``, ``_dask_predict.py`` -> ``dask``)."""
    names = set()
    stems = []
    for path in directory.rglob("*"):
        if "__pycache__" in path.parts or not (path.suffix == ".py" or (path / "__init__.py").exists()):
            continue
        for part in path.relative_to(directory).with_suffix("").parts:
            if part != "__init__":
                names.add(part.lstrip("_"))
                stems.append(part.lstrip("_"))
    words = [s.split("_")[0] for s in stems if "_" in s]
    names |= {w for w in set(words) if words.count(w) >= 2}
    return names


def _unmirrored(test_files, names, benchmarks=None):
    """Test files named after no module: test_<name>.py needs <name> among ``names``;
    test_benchmarks_<name>.py needs benchmarks/<name>.py or benchmarks/<name>/."""
    bad = []
    for f in test_files:
        stem = f[len("test_"):-len(".py")]
        if f in CROSS_CUTTING or stem in names:
            continue
        if benchmarks is not None and stem.startswith("benchmarks_"):
            target = benchmarks / stem[len("benchmarks_"):]
            if target.with_suffix(".py").exists() or target.is_dir():
                continue
        bad.append(f)
    return bad


def test_every_test_file_mirrors_a_module():
    """tests/test_<name>.py tests dp_sklearn/.../_<name>.py (or the package <name>/); the solvers'
    tests/solvers/test_<name>.py tests dp_sklearn/solvers/_<name>.py. A contributor finds the tests
    of what they change by its name; a cross-cutting file is in CROSS_CUTTING with its reason."""
    top = sorted(p.name for p in TESTS.glob("test_*.py"))
    solver_tests = sorted(p.name for p in (TESTS / "solvers").glob("test_*.py"))
    assert _unmirrored(top, _mirror_names(PACKAGE), BENCHMARKS) == []
    assert _unmirrored(solver_tests, _mirror_names(PACKAGE / "solvers")) == []


def test_mirror_check_can_fail():
    names = _mirror_names(PACKAGE)
    assert {"ridge", "private_stats", "quantiles", "dask", "ledger", "linear_model"} <= names
    assert _unmirrored(["test_ridge.py", "test_estimators.py", "test_issue8_reproducers.py", "test_docs.py"],
                       names) == ["test_estimators.py", "test_issue8_reproducers.py"]
    assert _unmirrored(["test_benchmarks_tabular.py", "test_benchmarks_nothing.py"], names,
                       BENCHMARKS) == ["test_benchmarks_nothing.py"]
    assert _unmirrored(["test_ssp.py", "test_sampled_plans.py"], _mirror_names(PACKAGE / "solvers")) == [
        "test_sampled_plans.py"]
