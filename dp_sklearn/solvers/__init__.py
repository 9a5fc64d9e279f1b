"""Private solvers (mechanisms), one module each, found and registered on import.

Each mechanism module registers itself with :func:`dp_sklearn.solvers._base.register`
(its plan, its run, what it supports and the hyperparameters it takes); every list of
solvers -- the estimators' ``solver`` constraint, their allowed solvers, the
scikit-learn check parametrization -- is read from :data:`SOLVERS`. Adding a mechanism
is adding one module to this package.
"""

import importlib
import pkgutil

from ._base import SOLVERS, Plan, PublicProblem, SolverResult, get_solver

#: modules of this package that are shared pieces, not mechanisms
_SHARED = {"_base", "_common"}

for _info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
    if _info.name.startswith("_") and _info.name not in _SHARED:
        importlib.import_module(f"{__name__}.{_info.name}")

__all__ = ["SOLVERS", "Plan", "PublicProblem", "SolverResult", "get_solver"]
