"""What every solver (mechanism) declares, plans and returns, and the registry of solvers.

A mechanism is split in two (privacy by construction):

* ``plan(public, constraint, *, epsilon, delta, <its hyperparameters>) -> Plan`` sees only
  public values (:class:`PublicProblem`: n, dim, the public bounds ``x_norm`` and
  ``x_inf``, the loss and its l2 strength -- never X or y) and fixes everything the
  privacy proof depends on: the ``dp_accounting`` event, the noise scales, every step
  size, iteration count and clip norm.
* ``run(problem, constraint, plan, rng) -> coef`` touches the data and draws the noise.

The estimators' fit template calls ``plan`` first, reserves the exact planned event in
the ledger, and only then runs the mechanism; ``SolverSpec.func`` (plan then run) is
the one-call form for direct use.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field

import numpy as np
from dp_accounting import dp_event

from .._losses import LOSSES, PROPERTIES, check_attrs

__all__ = ["Plan", "PublicProblem", "SolverResult", "SolverSpec", "register", "get_solver", "SOLVERS"]


@dataclass(frozen=True)
class PublicProblem:
    """The public shape of a normalized problem: what a mechanism's plan may see.

    Attributes
    ----------
    n : int
        Number of samples (public under replace-one neighbours).
    dim : int
        Number of coefficients (columns of the normalized design times outputs).
    x_norm, x_inf : float
        Public bounds on the l2 and l_inf norms of a normalized row.
    loss : loss object from :mod:`dp_sklearn._losses`
    l2_reg : float, default=0.0
        Mean-scale l2 strength of the objective.
    """

    n: int
    dim: int
    x_norm: float
    x_inf: float
    loss: object
    l2_reg: float = 0.0


@dataclass
class SolverResult:
    """Output of a private solver.

    Attributes
    ----------
    coef : ndarray of shape (dim,)
        Released coefficients (normalized units).
    event : dp_accounting.DpEvent
        What was released, for composition.
    epsilon, delta : float
        The (epsilon, delta) the release spends.
    n_iter : int
        Data-independent number of iterations.
    noise_scale : float
        Public calibration summary (standard deviation per unit sensitivity, or the
        exponential-mechanism parameter), a function of hyperparameters only.
    info : dict
        Other public, data-independent calibration constants.
    """

    coef: np.ndarray
    event: dp_event.DpEvent
    epsilon: float
    delta: float
    n_iter: int = 1
    noise_scale: float = 0.0
    info: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Plan:
    """Everything a mechanism fixes before it sees the data (all public).

    Attributes
    ----------
    event : dp_accounting.DpEvent
        The release the run will make.
    epsilon, delta : float
        The guarantee stated for it.
    n_iter : int
        Data-independent iteration count.
    noise_scale : float
        Calibration summary (see :class:`SolverResult`).
    constraint : object
        The feasible set the run uses (possibly a bounded replacement of the input).
    info : dict
        Step sizes, clip norms, noise standard deviations and other public constants.
    """

    event: dp_event.DpEvent
    epsilon: float
    delta: float
    n_iter: int
    noise_scale: float
    constraint: object
    info: dict = field(default_factory=dict)

    def result(self, coef):
        """The :class:`SolverResult` of a run of this plan that released ``coef``."""
        return SolverResult(coef, self.event, self.epsilon, self.delta, self.n_iter, self.noise_scale,
                            dict(self.info))


@dataclass(frozen=True)
class SolverSpec:
    """A registered mechanism and what it declares.

    Attributes
    ----------
    name : str
    func : callable
        ``func(problem, constraint, *, epsilon, delta, rng, plan=None, **params)``: plan
        (unless ``plan`` is given) and run in one call; returns a :class:`SolverResult`.
    plan : callable
        ``plan(public, constraint, *, epsilon, delta, **params) -> Plan``.
    pure_dp : bool
        Whether it accepts ``delta = 0``.
    constraints : tuple of str
        Names of the feasible sets it supports (``"none"``: an explicit l2 penalty).
    losses : tuple of str or None
        Names of the losses it is restricted to (None: every loss with the required properties).
    requires : tuple of str
        The loss properties its algorithm and privacy proof need
        (:data:`dp_sklearn._losses.PROPERTIES`, checked with
        :func:`dp_sklearn._losses.check_attrs`).
    params : tuple of str
        The estimator hyperparameters it takes, read from ``plan``'s signature.
    max_dim : int or None, default=None
        Largest number of coefficients it accepts (None: any); its plan raises a
        ``ValueError`` beyond it.
    """

    name: str
    func: object
    plan: object
    pure_dp: bool
    constraints: tuple
    losses: tuple
    params: tuple
    max_dim: int | None = None
    requires: tuple = ()

    def serves_loss(self, loss_name):
        """Whether the loss registered as ``loss_name`` has every required property (and is allowed)."""
        if self.losses is not None and loss_name not in self.losses:
            return False
        return set(self.requires) <= LOSSES[loss_name].properties()

    def supports(self, constraint_name, loss_names):
        """Whether the mechanism serves this feasible set (or penalty) and one of the estimator's losses.

        An estimator whose loss is chosen at fit (binary or multinomial logistic) offers the
        solver if it serves one of them; :meth:`check_loss` refuses the other at fit.
        """
        fits_set = constraint_name in self.constraints or (constraint_name == "none" and "l2" in self.constraints)
        return fits_set and any(self.serves_loss(loss) for loss in loss_names)

    def check_loss(self, loss):
        """Raise a ValueError naming the solver if it cannot serve ``loss`` (before any reservation)."""
        if self.losses is not None and loss.name not in self.losses:
            raise ValueError(f"solver={self.name!r} supports the losses {list(self.losses)}, got the {loss.name} loss.")
        check_attrs(loss, self.requires, self.name)


SOLVERS: dict[str, SolverSpec] = {}

_NOT_PARAMS = ("public", "problem", "constraint", "epsilon", "delta")


def register(name, *, plan, pure_dp, constraints, losses=None, requires=(), max_dim=None):
    """Register ``func`` as the mechanism ``name`` with its ``plan`` and declarations (see :class:`SolverSpec`).

    ``requires`` lists the loss properties the mechanism needs; ``losses`` optionally
    restricts it to named losses. Every list of solvers (estimators' ``solver``
    validation, their allowed solvers) reads :data:`SOLVERS` when it is used, so a
    solver registered after import is offered and accepted alike.

    Raises
    ------
    ValueError
        If ``requires`` names an unknown property.
    """
    params = tuple(p for p in inspect.signature(plan).parameters if p not in _NOT_PARAMS)
    unknown = set(requires) - set(PROPERTIES)
    if unknown:
        raise ValueError(f"requires must be among {sorted(PROPERTIES)}, got {sorted(unknown)}.")

    def deco(func):
        SOLVERS[name] = SolverSpec(name, func, plan, pure_dp, tuple(constraints),
                                   None if losses is None else tuple(losses), params, max_dim, tuple(requires))
        return func

    return deco


def get_solver(name):
    """Return the :class:`SolverSpec` registered as ``name``.

    Raises
    ------
    ValueError
        If ``name`` is not a registered solver.
    """
    try:
        return SOLVERS[name]
    except (KeyError, TypeError):
        raise ValueError(f"solver must be one of {sorted(SOLVERS)}, got {name!r}.") from None
