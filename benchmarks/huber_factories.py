"""Factories for the issue-21 Huber rows on the tabular suite (``benchmarks/tabular/run.py``).

Each is a fully private pipeline shaped as the suite's ``default_private`` (the private
``ColumnTransformer`` of DPStandardScaler on numeric columns and the public one-hot encoder on
categorical ones, the library's budget split), with the model swapped:

* ``huber_factory``: ``DPHuberRegressor()``, no target bound (all defaults);
* ``ridge_public_range_factory``: ``DPRidge(bounds_y=<range of the whole table>)``, the target
  range passed as if public (an oracle: the most favourable public range).

Command::

    python -m benchmarks.tabular.run --half tuning --epsilons 1 --no-default \
        --factory benchmarks.huber_factories:huber_factory \
        --factory benchmarks.huber_factories:ridge_public_range_factory
"""

from __future__ import annotations

from functools import lru_cache

from benchmarks.tabular import datasets as D
from benchmarks.tabular.run import DELTA, column_transformer


@lru_cache(maxsize=None)
def public_range(name):
    """The target range of the whole table (train and test), passed as if public."""
    _, y, _ = D.load(name)
    return float(min(y)), float(max(y))


def _pipeline(schema, model, epsilon, delta=DELTA):
    from dp_sklearn import DPStandardScaler, make_private_pipeline

    return make_private_pipeline(column_transformer(schema, DPStandardScaler()), model, epsilon=epsilon, delta=delta)


def huber_factory(schema, task, epsilon):
    from dp_sklearn import DPHuberRegressor

    return _pipeline(schema, DPHuberRegressor(), epsilon)


def ridge_public_range_factory(schema, task, epsilon):
    from dp_sklearn import DPRidge

    return _pipeline(schema, DPRidge(bounds_y=public_range(schema.name)), epsilon)
