"""Glue shared by the DP estimators: validation, bounds, solver dispatch, back-transform."""

from __future__ import annotations

import numbers
import warnings

import numpy as np
import scipy.sparse as sp
from dp_accounting import dp_event
from sklearn.base import BaseEstimator
from sklearn.utils.validation import _num_samples, validate_data

from .._data import Problem, normalize_X
from .._exact import minimize
from .._sets import L2Ball, Unconstrained
from ..solvers import SOLVERS, get_solver


def _make_rng(random_state):
    """One numpy Generator per fit (SPEC P6): None draws fresh OS entropy."""
    if random_state is None or isinstance(random_state, (numbers.Integral, np.integer)):
        return np.random.default_rng(random_state)
    if isinstance(random_state, np.random.Generator):
        return random_state
    if isinstance(random_state, np.random.RandomState):
        return np.random.default_rng(random_state.randint(np.iinfo(np.int32).max))
    raise ValueError(f"random_state must be None, an int, a numpy Generator or RandomState, got {random_state!r}.")


def _check_positive(name, value, *, allow_inf=False, allow_zero=False, allow_none=False):
    if value is None and allow_none:
        return
    ok = isinstance(value, numbers.Real) and not isinstance(value, bool) and not np.isnan(value)
    if ok:
        ok = (value >= 0 if allow_zero else value > 0) and (allow_inf or np.isfinite(value))
    if not ok:
        rng = ">= 0" if allow_zero else "> 0"
        fin = "" if allow_inf else " and finite"
        raise ValueError(f"{name} must be a real number {rng}{fin}, got {value!r}.")


class _DPLinearBase(BaseEstimator):
    """Shared fit logic. Subclasses define ``_loss``, ``_constraint``, ``_l2_reg`` and ``_solvers``."""

    _default_data_norm_doc = "sqrt(n_features)"

    # ------------------------------------------------------------------ validation
    def _validate_privacy_params(self, n_samples):
        _check_positive("epsilon", self.epsilon, allow_inf=True)
        delta = self.delta
        if not (isinstance(delta, numbers.Real) and not isinstance(delta, bool) and 0 <= delta < 1):
            raise ValueError(f"delta must be a probability in [0, 1), got {delta!r}.")
        solver = self._resolved_solver()
        allowed = self._allowed_solvers()
        if solver not in allowed:
            raise ValueError(f"solver must be one of {allowed} for {self._describe()}, got {solver!r}.")
        spec = get_solver(solver)
        if delta == 0 and not spec.pure_dp and self.epsilon != np.inf:
            pure = [s for s in allowed if SOLVERS[s].pure_dp]
            raise ValueError(
                f"delta=0 (pure DP) is not supported by solver={solver!r}; use delta > 0 or one of the "
                f"solvers that accept delta=0: {pure}."
            )
        if delta > 0 and delta >= 1.0 / n_samples:
            warnings.warn(
                f"delta={delta:g} >= 1/n_samples={1.0 / n_samples:.3g}: such a delta allows releasing a "
                "record outright; choose delta much smaller than 1/n_samples.",
                UserWarning,
                stacklevel=3,
            )
        _check_positive("data_norm", self.data_norm, allow_none=True)
        if getattr(self, "data_norm_ord", 2) not in (2, np.inf):
            raise ValueError(f"data_norm_ord must be 2 or numpy.inf, got {self.data_norm_ord!r}.")
        if self.max_iter is not None and not (
            isinstance(self.max_iter, numbers.Integral) and not isinstance(self.max_iter, bool) and self.max_iter >= 1
        ):
            raise ValueError(f"max_iter must be None or an int >= 1, got {self.max_iter!r}.")
        _check_positive("tol", self.tol)
        if self.accounting not in ("tight", "paper"):
            raise ValueError(f"accounting must be 'tight' or 'paper', got {self.accounting!r}.")
        _check_positive("clip_norm", self.clip_norm, allow_none=True)
        batch_size = getattr(self, "batch_size", None)
        if batch_size is not None:
            if not (isinstance(batch_size, numbers.Integral) and not isinstance(batch_size, bool)
                    and 1 <= batch_size <= n_samples):
                raise ValueError(f"batch_size must be None or an int in [1, n_samples={n_samples}], got {batch_size!r}.")
            if solver != "noisy_gd":
                raise ValueError(f"batch_size is used only by solver='noisy_gd', got solver={solver!r}.")
        ledger = getattr(self, "ledger", None)
        if ledger is not None:
            # Raises before any mechanism touches the data if the requested budget
            # would exceed the ledger's cap.
            ledger.check(float(self.epsilon), float(self.delta), label=type(self).__name__)
        return solver

    def _resolved_solver(self):
        return self.solver

    # Subclasses say which feasible set and loss family they fit; the solvers that
    # support both come from the registry, so a new mechanism needs no estimator change.
    _loss_names: tuple = ("squared",)

    def _constraint_name(self):
        return "none"

    def _describe(self):
        return type(self).__name__

    def _allowed_solvers(self):
        cname = self._constraint_name()
        out = []
        for name, spec in SOLVERS.items():
            fits_set = cname in spec.constraints or (cname == "none" and "l2" in spec.constraints)
            if fits_set and all(loss in spec.losses for loss in self._loss_names):
                out.append(name)
        return out

    def _validate_X_y(self, X, y, **kwargs):
        if y is None:
            raise ValueError(f"{type(self).__name__} requires y to be passed, but the target y is None.")
        n_x, n_y = _num_samples(X), _num_samples(y)
        if n_x != n_y:
            raise ValueError(f"X and y have inconsistent numbers of samples: X has {n_x}, y has {n_y}.")
        return validate_data(self, X, y, accept_sparse="csr", dtype=np.float64, **kwargs)

    def _data_norm_value(self, n_features):
        if self.data_norm is not None:
            return float(self.data_norm)
        ord_ = getattr(self, "data_norm_ord", 2)
        return float(np.sqrt(n_features)) if ord_ == 2 else 3.0

    # ------------------------------------------------------------------ fitting
    def _make_problem(self, X, y_internal, loss, l2_reg):
        """Clip and normalize X with the public bound; return the Problem and data_norm."""
        B = self._data_norm_value(X.shape[1])
        Xt, x_norm, x_inf = normalize_X(X, B, getattr(self, "data_norm_ord", 2), self.fit_intercept)
        row_norms = (np.sqrt(np.asarray(Xt.multiply(Xt).sum(axis=1)).ravel()) if sp.issparse(Xt)
                     else np.linalg.norm(Xt, axis=1))
        return Problem(Xt, y_internal, loss, x_norm, x_inf, row_norms, l2_reg), B

    def _solve(self, X, y_internal, loss, constraint, l2_reg, solver, rng, budget_share=1.0, prior_events=(),
               **solver_kwargs):
        """Normalize X, run the solver (or the exact minimizer at epsilon=inf), set the DP attributes.

        ``prior_events`` are releases this fit made before the solver (e.g. the private
        centering of y, which spent ``1 - budget_share`` of epsilon); they are composed
        into ``dp_event_`` and the whole event is recorded in the ledger.
        """
        problem, B = self._make_problem(X, y_internal, loss, l2_reg)
        Xt, x_norm = problem.X, problem.x_norm
        if isinstance(constraint, Unconstrained) and "none" not in get_solver(solver).constraints:
            # An l2-ball solver on a penalized objective: the ball of radius 1 / x_norm keeps
            # every in-bound prediction inside the target range (public, data-independent).
            constraint = L2Ball(1.0 / x_norm)
        ledger = getattr(self, "ledger", None)
        if self.epsilon == np.inf:
            theta = minimize(problem, constraint, l2_reg=l2_reg, tol=self.tol)
            self.dp_event_ = dp_event.NonPrivateDpEvent()
            self.epsilon_, self.delta_ = float("inf"), float(self.delta)
            self.n_iter_ = 1
        else:
            res = get_solver(solver).func(
                problem, constraint, epsilon=budget_share * float(self.epsilon), delta=float(self.delta), rng=rng,
                max_iter=self.max_iter, tol=self.tol, l2_reg=l2_reg, clip_norm=self.clip_norm,
                accounting=self.accounting, batch_size=getattr(self, "batch_size", None), **solver_kwargs,
            )
            theta = res.coef
            if loss.name == "squared" and isinstance(constraint, Unconstrained):
                # Post-processing: predictions for in-bound x stay within bounds_y.
                theta = L2Ball(1.0 / x_norm).project(theta)
            self.dp_event_ = dp_event.ComposedDpEvent([*prior_events, res.event]) if prior_events else res.event
            self.epsilon_ = float(self.epsilon) if prior_events else res.epsilon
            self.delta_ = res.delta
            self.n_iter_ = res.n_iter
        self.solver_ = solver
        if ledger is not None:
            ledger.record(self.dp_event_, self.epsilon_, self.delta_, label=type(self).__name__)
        K = loss.n_outputs
        Theta = theta.reshape(Xt.shape[1], K)
        p = X.shape[1]
        coef = Theta[:p] / B
        intercept = Theta[p] if self.fit_intercept else np.zeros(K)
        return coef, intercept
