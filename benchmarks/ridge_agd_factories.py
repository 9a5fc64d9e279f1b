"""Factories for issue 22's DPRidge solver A/B (tuning half only): noisy_agd where noisy_newton does not apply."""

from dp_sklearn import DPRidge, DPStandardScaler, make_private_pipeline

from .tabular.run import DELTA, column_transformer, default_private


class _AgdRidge(DPRidge):
    """DPRidge whose ``solver="auto"`` takes noisy_agd wherever noisy_newton does not apply."""

    def _resolved_solver(self, n_samples=None):
        if self.solver == "auto" and not self._few_pass_default(n_samples):
            return "noisy_agd"
        return super()._resolved_solver(n_samples)


def _tuned(kappa=None, cap=None, average_from=None):
    """noisy_agd with T = min(cap, default_n_iter(n, epsilon, delta, kappa)) (the same public values).

    ``average_from``: the share of the steps before the released average starts (set in the plan;
    ``None``: the solver's own, ``dp_sklearn.solvers._noisy_agd.average_from``).
    """
    class _Tuned(_AgdRidge):
        def _run(self, spec, problem, constraint, plan, kwargs, rng):
            if average_from is None or spec.name != "noisy_agd":
                return super()._run(spec, problem, constraint, plan, kwargs, rng)
            if plan is not None:
                plan.info["average_from"] = average_from
            return super()._run(spec, problem, constraint, plan, kwargs, rng)

        def _plan(self, spec, public, constraint):
            if spec.name == "noisy_agd" and self.max_iter is None:
                from dp_sklearn.solvers._noisy_agd import default_n_iter

                T = default_n_iter(public.n, self._solver_epsilon(), float(self.delta), kappa)
                self.max_iter = T if cap is None else min(cap, T)
                try:
                    return super()._plan(spec, public, constraint)
                finally:
                    self.max_iter = None
            return super()._plan(spec, public, constraint)

    def factory(schema, task, epsilon, delta=DELTA):
        if task != "regression":
            return default_private(schema, task, epsilon, delta)
        ct = column_transformer(schema, DPStandardScaler())
        return make_private_pipeline(ct, _Tuned(), epsilon=epsilon, delta=delta)
    return factory


# the first runs averaged the last tenth of the iterates (AVERAGE_FROM, the logistic loss's value)
agd = _tuned(average_from=0.9)
agd_t30 = _tuned(cap=30, average_from=0.9)
agd_k10 = _tuned(kappa=10.0, average_from=0.9)
agd_k20 = _tuned(kappa=20.0, average_from=0.9)
agd_k25 = _tuned(kappa=2.5, average_from=0.9)
agd_t20 = _tuned(cap=20, average_from=0.9)
agd_a05 = _tuned(average_from=0.5)
agd_t30_a05 = _tuned(cap=30, average_from=0.5)
agd_k25_a05 = _tuned(kappa=2.5, average_from=0.5)
