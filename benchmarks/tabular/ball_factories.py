"""Factories for the squared-loss ball experiment (tuning half only).

Each wraps the default pipeline with a ``DPRidge`` whose fit runs under one rule for
the default ball of :func:`dp_sklearn._sets.bounded_domain`: radius
``scale * dim**power / x_norm`` (the module's constants are set for the fit only).
"""

import dp_sklearn._sets as _sets
from dp_sklearn import DPLogisticRegression, DPRidge, DPStandardScaler, make_private_pipeline

from .run import DELTA, column_transformer


class _BallRidge(DPRidge):
    _scale = 2.0
    _power = 0.0

    def fit(self, X, y, *args, **kwargs):
        old = _sets.SQUARED_BALL_SCALE, _sets._BALL_DIM_POWER
        _sets.SQUARED_BALL_SCALE, _sets._BALL_DIM_POWER = self._scale, self._power
        try:
            return super().fit(X, y, *args, **kwargs)
        finally:
            _sets.SQUARED_BALL_SCALE, _sets._BALL_DIM_POWER = old


def _make(scale, power):
    cls = type(f"Ball_{scale}_{power}", (_BallRidge,), {"_scale": scale, "_power": power})

    def factory(schema, task, epsilon, delta=DELTA):
        if task == "regression":
            model = cls()
        else:
            model = DPLogisticRegression(classes=(0, 1) if task == "binary" else list(schema.classes))
        ct = column_transformer(schema, DPStandardScaler())
        return make_private_pipeline(ct, model, epsilon=epsilon, delta=delta)
    return factory


s2 = _make(2.0, 0.0)      # main's rule
s4 = _make(4.0, 0.0)
s8 = _make(8.0, 0.0)
d1 = _make(1.0, 0.5)      # sqrt(dim) / x_norm
d2 = _make(2.0, 0.5)      # 2 sqrt(dim) / x_norm
none = _make(1e6, 0.0)    # reference: no effective ball
