"""What every solver (mechanism) returns, and the registry of solvers."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from dp_accounting import dp_event

__all__ = ["SolverResult", "register", "get_solver", "SOLVERS", "norm_gamma_noise", "gaussian_steps_event"]


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
        Data-independent number of iterations (SPEC P4).
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
class SolverSpec:
    name: str
    func: object
    pure_dp: bool  # accepts delta == 0
    constraints: tuple  # names of feasible sets it supports
    losses: tuple  # loss names it supports


SOLVERS: dict[str, SolverSpec] = {}


def register(name, *, pure_dp, constraints, losses=("squared", "logistic", "multinomial")):
    def deco(func):
        SOLVERS[name] = SolverSpec(name, func, pure_dp, tuple(constraints), tuple(losses))
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


def norm_gamma_noise(rng, dim, scale):
    """Sample b in R^dim with density proportional to exp(-||b||_2 / scale).

    ||b||_2 ~ Gamma(shape=dim, scale=scale) with a uniform direction (Chaudhuri,
    Monteleoni & Sarwate, JMLR 2011, Section 3; digest of Thakurta 2013, Section 1).
    Adding it to a query of l2 sensitivity ``Delta`` with ``scale = Delta / epsilon``
    is epsilon-DP.
    """
    u = rng.standard_normal(dim)
    u /= np.linalg.norm(u)
    return rng.gamma(shape=dim, scale=scale) * u


def gaussian_steps_event(z, T, epsilon):
    """Event and epsilon of T Gaussian releases with multiplier ``z`` (``z == 0``: non-private)."""
    if z > 0:
        return dp_event.SelfComposedDpEvent(dp_event.GaussianDpEvent(z), int(T)), float(epsilon)
    return dp_event.NonPrivateDpEvent(), float("inf")
