"""Factories for issue 20's many-feature / integer-coded experiments (tuning half only; branch h-manyp)."""

import numpy as np

from dp_sklearn import DPStandardScaler, make_private_pipeline

from .run import DELTA, column_transformer, dp_model


def _pipe(schema, task, epsilon, delta, scaler=None, **model_kw):
    ct = column_transformer(schema, scaler if scaler is not None else DPStandardScaler())
    return make_private_pipeline(ct, dp_model(schema, task).set_params(**model_kw), epsilon=epsilon, delta=delta)


def dn_auto(schema, task, epsilon, delta=DELTA):
    """The model's data_norm="auto" (private median row norm, 10% of the model's epsilon)."""
    return _pipe(schema, task, epsilon, delta, data_norm="auto")


def dn_half(schema, task, epsilon, delta=DELTA):
    """The model's data_norm = sqrt(p) / 2 (public; diagnosis)."""
    p = len(schema.numeric) + sum(len(v) for v in schema.categorical.values())
    return _pipe(schema, task, epsilon, delta, data_norm=float(np.sqrt(p)) / 2)


from dp_sklearn.preprocessing._robust import robust_center_scale


class _Orc(DPStandardScaler):
    """Robust scaler with oracle (NON-private, diagnosis only) or candidate post-processing."""
    mode = "exact"

    def _release_robust(self, X, rng, plan, search):
        c = 3.0
        center, scale = robust_center_scale(X, plan.quantile_epsilon, rng, search, atoms=self._atoms,
                                            atom_weight=self._atom_weight)
        if self.mode == "exact":
            center, scale = robust_center_scale(X, None, rng, search)
        elif self.mode == "std_for_zero":
            scale = np.where(scale <= 1e-3, X.std(0), scale)
        elif self.mode == "one_for_zero":
            scale = np.where(scale <= 1e-3, 1.0, scale)
        elif self.mode == "stdall_mean":
            scale, center = X.std(0), X.mean(0)
        self.bounds_ = (center - c * scale, center + c * scale)
        self.mean_, self.scale_ = center, scale
        self.var_ = scale ** 2
        self.output_bound_ = np.full(X.shape[1], c)
        self.output_norm_ = float(np.linalg.norm(self.output_bound_))


def _orc(mode):
    cls = type("_Orc_" + mode, (_Orc,), {"mode": mode})

    def factory(schema, task, epsilon, delta=DELTA):
        return _pipe(schema, task, epsilon, delta, scaler=cls(strategy="robust"))
    return factory


o_exact, o_std_for_zero, o_one_for_zero, o_stdall_mean = (_orc(m) for m in
                                                           ("exact", "std_for_zero", "one_for_zero", "stdall_mean"))


def exact_std(schema, task, epsilon, delta=DELTA):
    """Oracle (NON-private): the scaler's per-feature statistics exact, the model at its 0.75 share."""
    from sklearn.pipeline import make_pipeline
    return make_pipeline(column_transformer(schema, DPStandardScaler(epsilon=np.inf)),
                         dp_model(schema, task).set_params(epsilon=0.75 * epsilon, delta=delta))


class _GlobalCentered(DPStandardScaler):
    """Global scale with the exact mean (NON-private oracle: does centering matter?)."""

    def _release_global(self, X, rng, plan, search):
        super()._release_global(X, rng, plan, search)
        self.mean_ = np.clip(X, *search).mean(axis=0)


def o_global_centered(schema, task, epsilon, delta=DELTA):
    return _pipe(schema, task, epsilon, delta, scaler=_GlobalCentered(strategy="global"))


def global_(schema, task, epsilon, delta=DELTA):
    return _pipe(schema, task, epsilon, delta, scaler=DPStandardScaler(strategy="global"))


class _LatticeFloor(DPStandardScaler):
    """Candidate: ``strategy="auto"``; in the robust release a zero MAD at an integer median gets scale 1."""

    def _release_robust(self, X, rng, plan, search):
        super()._release_robust(X, rng, plan, search)
        from dp_sklearn._private_stats import search_unit
        zero = (self.scale_ <= search_unit(search)) & (self.mean_ == np.round(self.mean_))
        c = float(self.output_bound_[0])
        self.scale_ = np.where(zero, 1.0, self.scale_)
        self.var_ = np.square(self.scale_)
        self.bounds_ = (np.maximum(self.mean_ - c * self.scale_, search[0]),
                        np.minimum(self.mean_ + c * self.scale_, search[1]))


def lattice_floor(schema, task, epsilon, delta=DELTA):
    return _pipe(schema, task, epsilon, delta, scaler=_LatticeFloor())


def clip4(schema, task, epsilon, delta=DELTA):
    """DPStandardScaler(output_clip=4)."""
    return _pipe(schema, task, epsilon, delta, scaler=DPStandardScaler(output_clip=4.0))


def clip5(schema, task, epsilon, delta=DELTA):
    """DPStandardScaler(output_clip=5)."""
    return _pipe(schema, task, epsilon, delta, scaler=DPStandardScaler(output_clip=5.0))


# ------------------------------------------------------------------ prototype: tight composition
from sklearn.base import BaseEstimator, clone  # noqa: E402

from dp_sklearn.composition import epsilon_of_event  # noqa: E402


class _Tight(BaseEstimator):
    """PROTOTYPE (measurement only): fit ``pipe`` (a PrivatePipeline) with every step's epsilon scaled by
    the largest c in [1, 2] (6 bisection steps) whose composed planned event (dry runs on public stand-in
    data; the ledger's accountant, ``epsilon_of_event``) is still within (epsilon, delta). The steps'
    events depend on public values only, so c does too."""

    def __init__(self, pipe=None):
        self.pipe = pipe

    def fit(self, X, y):
        base, delta = float(self.pipe.epsilon), float(self.pipe.delta)
        lo, hi = 1.0, 2.0
        for _ in range(6):
            mid = 0.5 * (lo + hi)
            trial = clone(self.pipe).set_params(epsilon=mid * base)
            trial._prepare()
            spent = epsilon_of_event(trial._plan(X, y, {}), delta)
            lo, hi = (mid, hi) if spent <= base else (lo, mid)
        self.pipe_ = clone(self.pipe).set_params(epsilon=lo * base).fit(X, y)
        self.tight_factor_ = lo
        self.spent_ = epsilon_of_event(self.pipe_.dp_event_, delta)
        self.classes_ = getattr(self.pipe_, "classes_", None)
        return self

    def predict(self, X):
        return self.pipe_.predict(X)

    def predict_proba(self, X):
        return self.pipe_.predict_proba(X)


def tight(schema, task, epsilon, delta=DELTA):
    """The default pipeline, every step's epsilon scaled up to the tight composition of the plan."""
    ct = column_transformer(schema, DPStandardScaler())
    return _Tight(make_private_pipeline(ct, dp_model(schema, task), epsilon=epsilon, delta=delta))


# ------------------------------------------------------------------ candidate: robust + refinement
from dp_sklearn import _noise  # noqa: E402
from dp_sklearn._private_stats import plan_statistics, search_unit  # noqa: E402
from dp_sklearn.preprocessing._global import clip_rows  # noqa: E402
from dp_sklearn.preprocessing._robust import ROBUST_REACH  # noqa: E402


def _refine(X, center, scale, reach, z_mean, z_dev, rng):
    """Gaussian means of the robust-scaled rows (l2-clipped to sqrt(p)) and of their absolute deviations."""
    n, p = X.shape
    B = np.sqrt(p)
    Z = np.clip((X - center) / scale, -reach, reach)
    mu = clip_rows(Z, B).mean(axis=0)
    mu = _noise.add_gaussian(rng, mu, z_mean * 2 * B / n, 2 * B / n)
    mu = np.clip(mu, -reach, reach)
    dev = clip_rows(np.abs(Z - mu), B).mean(axis=0)
    dev = _noise.add_gaussian(rng, dev, z_dev * np.sqrt(2) * B / n, np.sqrt(2) * B / n)
    floor = z_dev * np.sqrt(2) * B / n
    dev = np.clip(dev, floor, reach)
    return center + scale * mu, scale * dev * np.sqrt(np.pi / 2)


class _Refined(DPStandardScaler):
    """Candidate: ``strategy="robust"`` spends ``_qshare`` of its rho on the median/MAD quantiles and the rest on
    two Gaussian vectors that re-center and re-scale (``_refine``); integer zero-MAD columns get the lattice floor."""
    _qshare = 0.5
    _lattice = True

    def _robust_plan(self, n_features):
        if self.delta == 0:
            return super()._robust_plan(n_features)
        return plan_statistics(self.epsilon, self.delta, n_quantiles=2 * n_features, quantile_share=self._qshare,
                               mean_share=0.5)

    def _release_robust(self, X, rng, plan, search):
        c = ROBUST_REACH if self.output_clip is None else float(self.output_clip)
        center, scale = robust_center_scale(X, None if plan is None else plan.quantile_epsilon, rng, search,
                                            atoms=self._atoms, atom_weight=self._atom_weight)
        if self._lattice:
            zero = (scale <= search_unit(search)) & (center == np.round(center))
            scale = np.where(zero, 1.0, scale)
        if plan is not None and plan.mean_multiplier > 0:
            center, scale = _refine(np.clip(X, *search), center, scale, c, plan.mean_multiplier,
                                    plan.moment_multiplier, rng)
        self.bounds_ = (np.maximum(center - c * scale, search[0]), np.minimum(center + c * scale, search[1]))
        self.mean_, self.scale_ = center, scale
        self.var_ = np.square(scale)
        self.output_bound_ = np.full(X.shape[1], c)
        self.output_norm_ = float(np.linalg.norm(self.output_bound_))


def refined(schema, task, epsilon, delta=DELTA):
    return _pipe(schema, task, epsilon, delta, scaler=_Refined())


class _Refined70(_Refined):
    _qshare = 0.7


def refined70(schema, task, epsilon, delta=DELTA):
    return _pipe(schema, task, epsilon, delta, scaler=_Refined70())



def tight_composition(schema, task, epsilon, delta=DELTA):
    """The default pipeline with ``make_private_pipeline(..., composition="tight")``."""
    ct = column_transformer(schema, DPStandardScaler())
    return make_private_pipeline(ct, dp_model(schema, task), epsilon=epsilon, delta=delta, composition="tight")


def tight_refined(schema, task, epsilon, delta=DELTA):
    """``composition="tight"`` with the refined robust statistics (``_Refined``)."""
    ct = column_transformer(schema, _Refined())
    return make_private_pipeline(ct, dp_model(schema, task), epsilon=epsilon, delta=delta, composition="tight")


def tight_dn_half(schema, task, epsilon, delta=DELTA):
    """``composition="tight"`` and the model's ``data_norm = sqrt(p) / 2`` (p after one-hot encoding)."""
    p = len(schema.numeric) + sum(len(v) for v in schema.categorical.values())
    ct = column_transformer(schema, DPStandardScaler())
    return make_private_pipeline(ct, dp_model(schema, task).set_params(data_norm=float(np.sqrt(p)) / 2),
                                 epsilon=epsilon, delta=delta, composition="tight")
