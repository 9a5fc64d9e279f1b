"""Factories for issue 20's small-n experiments (tuning half only): the scaler's budget in the global regime."""

import numpy as np

from dp_sklearn import DPStandardScaler, make_private_pipeline

from .run import DELTA, column_transformer, dp_model


def _variant(global_noise):
    """The default pipeline with the scaler's ``_global_noise`` (Laplace nats the default split buys)."""
    cls = type(f"Scaler_{global_noise}", (DPStandardScaler,), {"_global_noise": global_noise})

    def factory(schema, task, epsilon, delta=DELTA):
        ct = column_transformer(schema, cls())
        return make_private_pipeline(ct, dp_model(schema, task), epsilon=epsilon, delta=delta)
    return factory


fixed_share = _variant(1e-12)  # the former split: the scaler always keeps its 0.25 of epsilon
noise025 = _variant(0.25)
noise050 = _variant(0.5)
noise100 = _variant(1.0)
noise030 = _variant(0.3)


# ----------------------------------------------------------------------------------------------
# Evaluated and not added: a per-feature order of magnitude in place of the global scale.

class MagnitudeScaler(DPStandardScaler):
    """Benchmark prototype (not in the library): where ``"auto"`` runs the global scale, divide
    each feature by its private geometric mean ``|x_j|`` instead (no centering, each feature
    clipped to ``output_clip``).

    The mean of ``log |x_j|`` clipped to ``[log unit, log top]`` (width ``w``) for all ``p``
    features has replace-one l1 sensitivity ``p w / n``; Laplace noise of scale
    ``p w / (n epsilon)`` is the global scale's own event, ``LaplaceDpEvent(1 / epsilon)``.
    The scaler keeps the fixed split's 0.25 (``_global_noise`` tiny).
    """

    _global_noise = 1e-12

    def _release_global(self, X, rng, plan, search):
        from dp_sklearn import _noise
        from dp_sklearn._private_stats import search_unit

        n, p = X.shape
        lo, hi = np.log(search_unit(search)), np.log(max(abs(search[0]), abs(search[1])))
        with np.errstate(divide="ignore"):
            mu = np.clip(np.log(np.abs(np.clip(X, *search))), lo, hi).mean(axis=0)
        if plan is not None:
            w = hi - lo
            mu = np.clip(_noise.add_laplace(rng, mu, p * w / (n * plan.quantile_epsilon), p * w / n), lo, hi)
        scale = np.exp(mu)
        c = np.inf if self.output_clip is None else float(self.output_clip)
        self.bounds_ = (np.full(p, float(search[0])), np.full(p, float(search[1])))
        self.mean_, self.scale_, self.var_ = np.zeros(p), scale, np.square(scale)
        self.output_bound_ = np.minimum(max(-search[0], search[1]) / scale, c)
        self.output_norm_ = float(np.linalg.norm(self.output_bound_))

    def transform(self, X, copy=None):
        X = self._check_transform_input(X)
        Z = (np.clip(X, *self.bounds_) - self.mean_) / self.scale_
        return np.clip(Z, -self.output_bound_, self.output_bound_)


def magnitude(schema, task, epsilon, delta=DELTA):
    ct = column_transformer(schema, MagnitudeScaler())
    return make_private_pipeline(ct, dp_model(schema, task), epsilon=epsilon, delta=delta)


def _oracle(cls, strategy):
    """Diagnostic, NOT private: the scaler's statistics exact (epsilon=inf), the model private."""
    def factory(schema, task, epsilon, delta=DELTA):
        from sklearn.pipeline import make_pipeline
        model = dp_model(schema, task).set_params(epsilon=epsilon, delta=delta)
        return make_pipeline(column_transformer(schema, cls(epsilon=np.inf, strategy=strategy)), model)
    return factory


oracle_global = _oracle(DPStandardScaler, "global")
oracle_magnitude = _oracle(MagnitudeScaler, "global")
oracle_robust = _oracle(DPStandardScaler, "robust")
