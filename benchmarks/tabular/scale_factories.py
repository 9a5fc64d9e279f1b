"""Factories for the scaler experiments of issue 20 (tuning half only)."""

from dp_sklearn import DPStandardScaler, make_private_pipeline

from .run import DELTA, column_transformer, dp_model


def _make(strategy=None, split=None, **kw):
    def factory(schema, task, epsilon, delta=DELTA):
        sc = DPStandardScaler(**({"strategy": strategy} if strategy else {}), **kw)
        ct = column_transformer(schema, sc)
        return make_private_pipeline(ct, dp_model(schema, task), epsilon=epsilon, delta=delta, split=split)
    return factory


robust = _make("robust")
global_ = _make("global")
per_feature = _make("per_feature")
robust_half = _make("robust", split=[1, 1])


class _NoAtoms(DPStandardScaler):
    _atoms = None


def no_atoms(schema, task, epsilon, delta=DELTA):
    """The scaler before issue 20's integer atoms (the A/B baseline)."""
    ct = column_transformer(schema, _NoAtoms())
    return make_private_pipeline(ct, dp_model(schema, task), epsilon=epsilon, delta=delta)


class _LightAtoms(DPStandardScaler):
    _atom_weight = 0.25


def atoms_w025(schema, task, epsilon, delta=DELTA):
    """The scaler with integer atoms of weight 0.25 (instead of ATOM_WEIGHT)."""
    ct = column_transformer(schema, _LightAtoms())
    return make_private_pipeline(ct, dp_model(schema, task), epsilon=epsilon, delta=delta)
