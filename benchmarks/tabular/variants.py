"""Factories for choosing defaults on the tuning half (``--factory benchmarks.tabular.variants:NAME``).

Each builds the suite's default private pipeline (:func:`benchmarks.tabular.run.default_private`)
with one default changed, so variants run side by side in one run of the harness.

* ``share50`` ... ``share90``: the model's share of epsilon in the pipeline split
  (``make_private_pipeline(split=...)``; the library's ``DEFAULT_MODEL_SHARE``); the scaler
  gets the rest.
"""

from __future__ import annotations

from .run import DELTA, column_transformer, dp_model


def _with_share(share):
    def factory(schema, task, epsilon, delta=DELTA):
        from dp_sklearn import DPStandardScaler, make_private_pipeline

        if not schema.numeric:  # no private scaler: the model spends everything
            split = None
        else:
            split = [1.0 - share, share]
        ct = column_transformer(schema, DPStandardScaler())
        return make_private_pipeline(ct, dp_model(schema, task), epsilon=epsilon, delta=delta, split=split)

    factory.__name__ = f"share{int(round(100 * share))}"
    return factory


share50, share65, share85, share90 = (_with_share(s) for s in (0.5, 0.65, 0.85, 0.9))


def _ridge_with(**constants):
    """The default pipeline whose DPRidge plans ``bounds_y="auto"`` with ``_auto`` constants changed.

    The constants are swapped in for the duration of ``fit`` only (the harness fits one
    configuration at a time per process), so the default column of the same run is unaffected.
    """
    from dp_sklearn import DPRidge
    from dp_sklearn.linear_model import _auto

    class _Ridge(DPRidge):
        def fit(self, X, y, *args, **kwargs):
            saved = {k: getattr(_auto, k) for k in constants}
            try:
                for k, v in constants.items():
                    setattr(_auto, k, v)
                return super().fit(X, y, *args, **kwargs)
            finally:
                for k, v in saved.items():
                    setattr(_auto, k, v)

    _Ridge.__name__ = _Ridge.__qualname__ = "DPRidge"

    def factory(schema, task, epsilon, delta=DELTA):
        from dp_sklearn import DPStandardScaler, make_private_pipeline

        model = _Ridge() if task == "regression" else dp_model(schema, task)
        ct = column_transformer(schema, DPStandardScaler())
        return make_private_pipeline(ct, model, epsilon=epsilon, delta=delta)

    return factory


#: bounds_y="auto" may take up to 60% / 70% of the model's epsilon (default 50%) before
#: falling back to the next poorer mode
ycap60 = _ridge_with(BOUNDS_Y_SHARE=(0.1, 0.6))
ycap60.__name__ = "ycap60"
ycap70 = _ridge_with(BOUNDS_Y_SHARE=(0.1, 0.7))
ycap70.__name__ = "ycap70"


def _model_only(clip=None, step_k=False):
    """NOT private (model choice only): a multiclass DP model variant behind the non-private scaler.

    Same preprocessing as the suite's comparison (b), so that the model's defaults are compared
    without the private scaler's noise; binary and regression tasks get the default model.
    ``clip(K)``: the clip norm in normalized units (``x_norm = sqrt(2)`` with the intercept);
    ``step_k``: the multinomial step size from the curvature at theta = 0, ``||x||^2 / K`` (the
    Hessian of the softmax loss there is ``(I/K - 11^T/K^2) (x) x x^T``), instead of the
    global bound ``||x||^2 / 2``.
    """
    from dp_sklearn import DPLogisticRegression
    from dp_sklearn._losses._multinomial import MultinomialLoss

    class _Logistic(DPLogisticRegression):
        def fit(self, X, y, *args, **kwargs):
            if not step_k:
                return super().fit(X, y, *args, **kwargs)
            MultinomialLoss.step_curvature = property(lambda self: 1.0 / self.n_outputs)
            try:
                return super().fit(X, y, *args, **kwargs)
            finally:
                del MultinomialLoss.step_curvature

    _Logistic.__name__ = _Logistic.__qualname__ = "DPLogisticRegression"

    def factory(schema, task, epsilon, delta=DELTA):
        from sklearn.pipeline import make_pipeline
        from sklearn.preprocessing import StandardScaler

        model = dp_model(schema, task)
        if task == "multiclass":
            model = _Logistic(**model.get_params())
            if clip is not None:
                model.set_params(clip_norm=clip(len(schema.classes)))
        model.set_params(epsilon=epsilon, delta=delta)
        return make_pipeline(column_transformer(schema, StandardScaler()), model)

    return factory


_X_NORM = 2.0 ** 0.5  # public normalized row bound with the intercept column (data_norm_ord=2)


def _named(f, name):
    f.__name__ = name
    return f


#: clip norm = the softmax gradient norm at theta = 0 of a row at x_norm, sqrt(1 - 1/K) x_norm
mo_clip_init = _named(_model_only(clip=lambda K: (1.0 - 1.0 / K) ** 0.5 * _X_NORM), "mo_clip_init")
#: clip norm at a quarter of x_norm (half the default)
mo_clip_quarter = _named(_model_only(clip=lambda K: 0.25 * _X_NORM), "mo_clip_quarter")
#: step size 1 / (||x||^2 / K)
mo_step_k = _named(_model_only(step_k=True), "mo_step_k")
mo_step_k_clip_init = _named(_model_only(clip=lambda K: (1.0 - 1.0 / K) ** 0.5 * _X_NORM, step_k=True),
                             "mo_step_k_clip_init")


def _curvature_share(f):
    """NOT private (model choice only): the classifiers behind the non-private scaler, with the
    logistic and multinomial curvature share ``f`` of ``default_n_iter`` set to ``f``."""
    from dp_sklearn import DPLogisticRegression
    from dp_sklearn._losses._logistic import LogisticLoss
    from dp_sklearn._losses._multinomial import MultinomialLoss

    class _Logistic(DPLogisticRegression):
        def fit(self, X, y, *args, **kwargs):
            saved = [(c, c.__dict__["typical_curvature_share"]) for c in (LogisticLoss, MultinomialLoss)]
            try:
                for c, _ in saved:
                    c.typical_curvature_share = f
                return super().fit(X, y, *args, **kwargs)
            finally:
                for c, v in saved:
                    c.typical_curvature_share = v

    _Logistic.__name__ = _Logistic.__qualname__ = "DPLogisticRegression"

    def factory(schema, task, epsilon, delta=DELTA):
        from sklearn.pipeline import make_pipeline
        from sklearn.preprocessing import StandardScaler

        model = dp_model(schema, task)
        if task != "regression":
            model = _Logistic(**model.get_params())
        model.set_params(epsilon=epsilon, delta=delta)
        return make_pipeline(column_transformer(schema, StandardScaler()), model)

    factory.__name__ = f"mo_f{int(round(100 * f)):03d}"
    return factory


mo_f009, mo_f036, mo_f100 = (_curvature_share(f) for f in (0.09, 0.36, 1.0))

share60 = _with_share(0.6)
share80 = _with_share(0.8)
#: clip norm 0.5 sqrt(2 / K) x_norm: the default's 0.5 at K = 2, shrinking as the softmax
#: gradient spreads over K class blocks
mo_clip_k = _named(_model_only(clip=lambda K: 0.5 * (2.0 / K) ** 0.5 * _X_NORM), "mo_clip_k")
#: clip norm at an eighth of x_norm
mo_clip_eighth = _named(_model_only(clip=lambda K: 0.125 * _X_NORM), "mo_clip_eighth")
share75 = _with_share(0.75)
