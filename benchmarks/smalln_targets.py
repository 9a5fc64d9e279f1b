"""Small ``epsilon * n`` plans of the private target statistics: the tuning grid of two defaults.

``SHRUNK_MAD_SHARE`` (the largest share of epsilon the ``"mad"`` plan of the y statistics may take
before the fit falls back to predicting the private median) and ``SHRINK_RHO`` (the shrinkage of
the predictions toward the released center, ``shrink_factor``), both in
``dp_sklearn/linear_model/_auto.py``, used by ``DPRidge(bounds_y="auto")`` (and the other
least-squares regressors) and ``DPHuberRegressor(huber_threshold="auto")``.

Each factory is a fully private pipeline shaped as the suite's ``default_private`` (DPStandardScaler
on the numeric columns, the public one-hot encoder, the library's budget split) whose model runs
with the module constants set to the variant's values during its ``fit`` (one fit at a time per
process, as the suite runs them). ``*_old``: the plan before this change (cap 0.5, no shrinkage).
``*_c<cap>_r<rho_0>`` and ``*_c<cap>_k<rho_0>`` set ``SHRINK_RHO`` = rho_0 in ``shrink_factor``'s
current form (``rho = n epsilon_model``; default 90): the ``_r`` grid was first run on the
candidate form ``rho = n epsilon_model / sqrt(n_coef)`` (``results/tuning_smalln_y_<cap>.*``,
commit 796a435), the ``_k`` grid on the current one (``results/tuning_smalln_y_k_<cap>.*``).

Commands (tuning half only; the small-n cells are the tuning sets subsampled with
``--train-cap``, the regime of checking's credit, n = 280, that no tuning set has at full size)::

    F="--factory benchmarks.smalln_targets:huber_old --factory ...:huber_c08_r0 ..."
    python -m benchmarks.tabular.run --datasets slid,computers,wage,diamonds --train-cap 380 \\
        --epsilons 1,2 --seeds 6 --n-jobs 1 --no-default $F --out benchmarks/tabular/results/tuning_smalln_y_380
"""

from __future__ import annotations

from benchmarks.huber_factories import _check_task, _pipeline


def _variant(base_name, **constants):
    def factory(schema, task, epsilon):
        import dp_sklearn
        import dp_sklearn.linear_model._auto as A
        import dp_sklearn.linear_model._huber as H

        mods = {k: H if k == "Y_SHARE" else A for k in constants}
        base = getattr(dp_sklearn, base_name)

        class Variant(base):
            def fit(self, X, y, sample_weight=None):
                old = {k: getattr(mods[k], k) for k in constants}
                for k, v in constants.items():
                    setattr(mods[k], k, v)
                try:
                    return super().fit(X, y, sample_weight=sample_weight)
                finally:
                    for k, v in old.items():
                        setattr(mods[k], k, v)

        Variant.__name__ = Variant.__qualname__ = base_name
        _check_task(task)
        return _pipeline(schema, Variant(), epsilon)
    factory.__name__ = f"{base_name}_{'_'.join(f'{k}={v}' for k, v in constants.items())}"
    return factory


def huber(cap, rho):
    return _variant("DPHuberRegressor", Y_SHARE=(0.1, cap), SHRINK_RHO=rho)


def ridge(cap, rho):
    return _variant("DPRidge", SHRUNK_MAD_SHARE=cap, SHRINK_RHO=rho)


huber_old, ridge_old = huber(0.5, 0.0), ridge(0.5, 0.0)          # before: cap 0.5, no shrinkage
huber_c08_r0, ridge_c08_r0 = huber(0.8, 0.0), ridge(0.8, 0.0)
huber_c08_r10, ridge_c08_r10 = huber(0.8, 10.0), ridge(0.8, 10.0)  # the defaults
huber_c08_r20, ridge_c08_r20 = huber(0.8, 20.0), ridge(0.8, 20.0)
huber_c07_r10, ridge_c07_r10 = huber(0.7, 10.0), ridge(0.7, 10.0)
huber_c09_r10, ridge_c09_r10 = huber(0.9, 10.0), ridge(0.9, 10.0)

# the shrinkage's scale without the number of features (rho = n epsilon_model): rho_0 in n epsilon units
huber_c08_k60, ridge_c08_k60 = huber(0.8, 60.0), ridge(0.8, 60.0)
huber_c08_k90, ridge_c08_k90 = huber(0.8, 90.0), ridge(0.8, 90.0)
huber_c08_k120, ridge_c08_k120 = huber(0.8, 120.0), ridge(0.8, 120.0)
huber_c08_k0, ridge_c08_k0 = huber(0.8, 0.0), ridge(0.8, 0.0)
