"""The shape of the code: layers without cycles, computed from the import graph of every
module, and mechanisms that do not import each other. (No gate on line counts: a module is
split when it holds two concepts, which no count measures.)"""

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
