"""Private solvers (mechanisms). Each takes a normalized :class:`~dp_sklearn._data.Problem`,
a feasible set, the privacy target and a ``numpy.random.Generator``, and returns a
:class:`~dp_sklearn.solvers._base.SolverResult` (coefficients and the dp_accounting event)."""

from ._base import SOLVERS, SolverResult, get_solver
from . import _frank_wolfe, _noisy_gd, _objective_perturbation, _output_perturbation  # noqa: F401  (register)
from . import _frank_wolfe_gaussian, _ight, _mirror_descent, _two_stage  # noqa: F401  (register)

__all__ = ["SOLVERS", "SolverResult", "get_solver"]
