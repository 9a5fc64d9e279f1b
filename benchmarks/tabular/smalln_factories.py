"""Factories for issue 20's small-n experiments (tuning half only): the scaler's budget in the global regime."""

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
