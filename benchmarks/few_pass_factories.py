"""Tabular-suite factories for the few-pass default of issue 22 (``--factory benchmarks.few_pass_factories:<fn>``).

``newton_logistic``: the default private pipeline of :func:`benchmarks.tabular.run.default_private`
with ``DPLogisticRegression(solver="noisy_newton")`` (regression tasks keep ``DPRidge()``), to
compare next to the default in one run of ``python -m benchmarks.tabular.run``.
"""

from __future__ import annotations

from .tabular.run import DELTA, column_transformer, dp_model


def newton_logistic(schema, task, epsilon, delta=DELTA):
    """The default pipeline with the classifier's solver set to ``"noisy_newton"``."""
    from dp_sklearn import DPStandardScaler, make_private_pipeline

    model = dp_model(schema, task)
    if task != "regression":
        model.set_params(solver="noisy_newton")
    return make_private_pipeline(column_transformer(schema, DPStandardScaler()), model, epsilon=epsilon, delta=delta)


def _newton_T(T):
    def factory(schema, task, epsilon, delta=DELTA):
        pipe = newton_logistic(schema, task, epsilon, delta)
        if task != "regression":
            pipe.steps[-1][1].set_params(max_iter=T)
        return pipe
    factory.__name__ = f"newton_T{T}"
    return factory


newton_T13, newton_T50, newton_T100 = _newton_T(13), _newton_T(50), _newton_T(100)


def gd_logistic(schema, task, epsilon, delta=DELTA):
    """The default pipeline with the classifier's solver set to ``"noisy_gd"`` (the former default)."""
    from dp_sklearn import DPStandardScaler, make_private_pipeline

    model = dp_model(schema, task)
    if task != "regression":
        model.set_params(solver="noisy_gd")
    return make_private_pipeline(column_transformer(schema, DPStandardScaler()), model, epsilon=epsilon, delta=delta)
