"""DPGridSearchCV (dp_sklearn.model_selection): accounted private hyperparameter selection (Papernot &
Steinke, ICLR 2022), and the attacks on it with their hardening (issue 8: 0b, 0c, 0e, 2, 12; issue 10: 4)."""

import math
import re
import warnings

import numpy as np
import pytest
from dp_accounting import dp_event
from dp_accounting import dp_event as E
from dp_accounting.pld import PLDAccountant, privacy_loss_distribution
from dp_accounting.rdp import RdpAccountant
from dp_accounting.rdp.rdp_privacy_accountant import _gamma_truncated_negative_binomial
from scipy.stats import loguniform
from sklearn.base import BaseEstimator, TransformerMixin, clone
from sklearn.compose import ColumnTransformer
from sklearn.model_selection import ParameterGrid
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer, OneHotEncoder, StandardScaler

from dp_sklearn import ClippingWarning, DPLogisticRegression, DPRidge
from dp_sklearn._accounting import gaussian_noise_multiplier
from dp_sklearn.audit import audit_epsilon
from dp_sklearn.composition import UnsupportedCompositionError
from dp_sklearn.ledger import BudgetExceededError, PrivacyLedger, compose_epsilon
from dp_sklearn.model_selection import DPGridSearchCV, sample_repetitions

EPS, DELTA = 2.0, 1e-5
# 6 candidates that differ in quality: data_norm=30 clips nothing but drowns the signal in noise.
GRID = {"data_norm": [1.0, 5.5, 30.0], "solver": ["noisy_gd", "output_perturbation"]}


def _search(**kw):
    kw.setdefault("random_state", 0)
    return DPGridSearchCV(DPLogisticRegression(), kw.pop("grid", GRID), epsilon=kw.pop("epsilon", EPS),
                          delta=DELTA, **kw)


def test_selection_is_close_to_the_best_fixed_candidate(cancer):
    Xtr, Xte, ytr, yte = cancer
    seeds = range(10)
    fixed = {
        tuple(sorted(p.items())): np.mean([
            DPLogisticRegression(epsilon=EPS, delta=DELTA, random_state=s, **p).fit(Xtr, ytr).score(Xte, yte)
            for s in seeds])
        for p in ParameterGrid(GRID)
    }
    best_fixed = max(fixed.values())
    assert best_fixed == pytest.approx(0.93, abs=0.02)
    assert min(fixed.values()) < 0.7  # the grid has bad candidates to avoid
    searches = [_search(random_state=s).fit(Xtr, ytr) for s in seeds]
    acc = np.mean([s.score(Xte, yte) for s in searches])
    gap = best_fixed - acc
    print(f"best fixed candidate at epsilon=2: {best_fixed:.4f}; DPGridSearchCV at epsilon=2 in total: "
          f"{acc:.4f}; gap {gap:.4f}")
    # seeds 0-9: gap 0.043 with float noise, 0.057 with the exact layer; seeds 10-39: search
    # accuracy 0.888 +- 0.007 before, 0.892 +- 0.007 after (the same within noise)
    assert gap <= 0.065
    assert sum(s.best_params_["data_norm"] == 30.0 for s in searches) <= 2  # no longer a bad candidate with longer default runs
    for s in searches:
        assert s.epsilon_ <= EPS


@pytest.mark.parametrize("shape", [0.0, 1.0, 2.0, np.inf])
def test_repeat_and_select_accounting(cancer, shape):
    Xtr, _, ytr, _ = cancer
    s = _search(shape=shape, n_iter=12).fit(Xtr, ytr)
    ev = s.dp_event_
    assert isinstance(ev, dp_event.RepeatAndSelectDpEvent)
    assert (ev.mean, ev.shape) == (12.0, shape)
    # Each run: the fit and the noisy score.
    fit_ev, score_ev = ev.event.events
    assert score_ev == dp_event.GaussianDpEvent(gaussian_noise_multiplier(0.4 * s.candidate_epsilon_, DELTA))
    eps_rdp = RdpAccountant().compose(ev).get_epsilon(DELTA)
    assert eps_rdp == pytest.approx(s.epsilon_, rel=1e-12)
    assert eps_rdp <= EPS
    assert eps_rdp >= 0.995 * EPS  # calibrated tightly (bisection to 0.1 %)
    # The score's noise: z * (1 - 0) / n_val for accuracy.
    assert s.score_noise_std_ == pytest.approx(score_ev.noise_multiplier / s.n_val_)
    assert (s.n_train_, s.n_val_) == (279, 119)
    # Without the selection, one run at this budget would cost less than the total.
    one = RdpAccountant().compose(ev.event).get_epsilon(DELTA)
    assert one < EPS


def test_exhaustive_and_refit_accounting(cancer):
    Xtr, Xte, ytr, yte = cancer
    s = _search(selection="exhaustive").fit(Xtr, ytr)
    assert isinstance(s.dp_event_, dp_event.ComposedDpEvent) and len(s.dp_event_.events) == 6
    acc = PLDAccountant()
    acc.compose(s.dp_event_)
    assert s.epsilon_ <= EPS and acc.get_epsilon(DELTA) <= EPS + 1e-3
    assert len(s.cv_results_["params"]) == 6
    assert sorted(s.cv_results_["rank_test_score"]) == list(range(1, 7))
    assert s.best_score_ == s.cv_results_["mean_test_score"].max()
    assert s.cv_results_["params"][s.best_index_] == s.best_params_
    # Refit on all the data with half of the budget: selection and refit together meet (epsilon, delta).
    r = _search(refit=0.5).fit(Xtr, ytr)
    sel, refit = r.dp_event_.events
    assert isinstance(sel, dp_event.RepeatAndSelectDpEvent)
    # The refit event is planned before selection: it dominates every candidate's refit (the
    # selected one's event equals it only when that candidate is the dominating one).
    assert r.best_estimator_.epsilon == EPS / 2
    assert compose_epsilon([r.best_estimator_.dp_event_], DELTA / 2) <= compose_epsilon([refit], DELTA / 2) + 1e-9
    assert RdpAccountant().compose(r.dp_event_).get_epsilon(DELTA) <= EPS
    assert r.score(Xte, yte) > 0.8


def test_generic_events_need_exhaustive(cancer):
    Xtr, _, ytr, _ = cancer
    grid = {"C": [0.1, 1.0], "solver": ["objective_perturbation"]}  # accounted as a generic (epsilon, delta) event
    with pytest.raises(ValueError, match="exhaustive"):
        DPGridSearchCV(DPLogisticRegression(), grid, epsilon=EPS, delta=DELTA, random_state=0).fit(Xtr, ytr)
    s = DPGridSearchCV(DPLogisticRegression(), grid, epsilon=EPS, delta=DELTA, selection="exhaustive",
                       random_state=0).fit(Xtr, ytr)
    assert s.epsilon_ <= EPS and s.fit_delta_ == DELTA / 4


def test_only_the_selected_run_is_released(cancer):
    Xtr, _, ytr, _ = cancer
    s = _search().fit(Xtr, ytr)
    res = s.cv_results_
    assert len(res["params"]) == 1 and res["params"][0] == s.best_params_
    assert res["mean_test_score"][0] == s.best_score_
    assert s.best_index_ == list(ParameterGrid(GRID)).index(s.best_params_)
    assert not [a for a in vars(s) if "repetition" in a or a in ("K_", "n_runs_")]
    model = s.best_estimator_
    assert model.epsilon == pytest.approx(s.fit_epsilon_) and model.ledger is None
    assert s.predict(Xtr).shape == (Xtr.shape[0],) and s.predict_proba(Xtr).shape == (Xtr.shape[0], 2)
    assert list(s.classes_) == [0, 1]
    # Reproducible with a seed.
    t = _search().fit(Xtr, ytr)
    assert (t.best_params_, t.best_score_) == (s.best_params_, s.best_score_)
    np.testing.assert_array_equal(t.best_estimator_.coef_, model.coef_)


def test_ledger_integration(cancer, tmp_path):
    Xtr, _, ytr, _ = cancer
    ledger = PrivacyLedger(delta=DELTA, path=tmp_path / "l.jsonl")
    s = _search(ledger=ledger).fit(Xtr, ytr)
    assert ledger.events == [s.dp_event_]  # one record; the internal runs do not record
    assert ledger.total_epsilon() == pytest.approx(s.epsilon_, rel=1e-12)
    # A ledger carried by the estimator is used the same way.
    inner = PrivacyLedger(delta=DELTA, path=tmp_path / "inner.jsonl")
    DPGridSearchCV(DPLogisticRegression(ledger=inner), GRID, epsilon=1.0, delta=DELTA,
                   random_state=0).fit(Xtr, ytr)
    assert len(inner) == 1 and inner.total_epsilon() <= 1.0
    # Under a cap that the search would exceed: refused before the data is used.
    capped = PrivacyLedger(max_epsilon=1.0, delta=DELTA, path=tmp_path / "c.jsonl")
    fresh = clone(_search(ledger=capped))
    with pytest.raises(BudgetExceededError):
        fresh.fit(Xtr, ytr)
    assert len(capped) == 0 and capped.pending == [] and not hasattr(fresh, "best_params_")
    _search(ledger=capped, epsilon=1.0).fit(Xtr, ytr)
    assert len(capped) == 1 and capped.total_epsilon() <= 1.0


def test_param_distributions(cancer):
    Xtr, Xte, ytr, yte = cancer
    dists = {"data_norm": loguniform(1.0, 10.0), "solver": ["noisy_gd", "output_perturbation"]}
    s = DPGridSearchCV(DPLogisticRegression(), param_distributions=dists, epsilon=EPS, delta=DELTA,
                       random_state=0).fit(Xtr, ytr)
    assert 1.0 <= s.best_params_["data_norm"] <= 10.0 and s.best_index_ == -1
    assert s.dp_event_.mean == 10.0 and s.epsilon_ <= EPS
    assert s.score(Xte, yte) > 0.8
    e = DPGridSearchCV(DPLogisticRegression(), param_distributions=dists, epsilon=EPS, delta=DELTA,
                       selection="exhaustive", n_iter=4, random_state=0).fit(Xtr, ytr)
    assert len(e.cv_results_["params"]) == 4 and e.epsilon_ <= EPS


def test_regression_scores_are_clipped_squared_errors(diabetes):
    Xtr, Xte, ytr, yte = diabetes
    est = DPRidge(bounds_y=(0, 400), solver="noisy_gd")
    s = DPGridSearchCV(est, {"alpha": [0.1, 1.0, 10.0]}, epsilon=EPS, delta=DELTA, random_state=0).fit(Xtr, ytr)
    # Per-record terms -min((y - y_hat)^2, 400^2): sensitivity 400^2 / n_val.
    z = s.dp_event_.event.events[1].noise_multiplier
    assert s.score_noise_std_ == pytest.approx(z * 400.0**2 / s.n_val_)
    assert s.epsilon_ <= EPS
    assert s.scorer_ == "neg_mean_squared_error"
    with pytest.raises(ValueError, match="bounds_y"):
        DPGridSearchCV(DPRidge(), {"alpha": [1.0]}, epsilon=EPS, delta=DELTA).fit(Xtr, ytr)


def test_sampler_matches_the_accounted_distribution():
    rng = np.random.default_rng(0)
    for shape in [0.0, 0.5, 1.0, 2.0, np.inf]:
        k = np.array([sample_repetitions(rng, 10.0, shape) for _ in range(20000)])
        assert k.mean() == pytest.approx(10.0, rel=0.03)
        assert k.min() >= (0 if shape == np.inf else 1)
    gamma = _gamma_truncated_negative_binomial(1.0, 10.0)
    k = np.array([sample_repetitions(rng, 10.0, 1.0) for _ in range(20000)])
    assert np.mean(k == 1) == pytest.approx(gamma, abs=0.01)  # geometric: P(K = 1) = gamma


def test_data_dependent_events_are_caught(cancer):
    Xtr, _, ytr, _ = cancer

    class Leaky(DPLogisticRegression):
        def fit(self, X, y):
            super().fit(X, y)
            if np.abs(X).max() > 3.0:  # the synthetic calibration data never is
                self.dp_event_ = dp_event.GaussianDpEvent(0.5)
            return self

    with pytest.raises(RuntimeError, match="depends on the data"):
        DPGridSearchCV(Leaky(solver="noisy_gd"), {"C": [1.0]}, epsilon=EPS, delta=DELTA,
                       random_state=0).fit(Xtr, ytr)


@pytest.mark.parametrize("kw, match", [
    ({"epsilon": 0.0}, "epsilon"),
    ({"epsilon": math.inf}, "epsilon"),
    ({"cv": 5}, "k-fold"),
    ({"selection": "best"}, "selection"),
    ({"score_fraction": 1.0}, "score_fraction"),
    ({"refit": 1.5}, "refit"),
    ({"grid": {"epsilon": [1.0, 2.0]}}, "sets"),
    ({"scoring": "roc_auc"}, "per-record"),
    ({"n_iter": 0.5}, "n_iter"),
    ({"shape": -1.0}, "shape"),
    ({"ledger": "x.jsonl"}, "ledger"),
    ({"random_state": -1}, "random_state"),
    ({"cv": 0.0}, "cv"),
    ({"refit": "yes"}, "refit"),
    ({"grid": {"random_state": [0, 1]}}, "sets"),
])
def test_invalid_parameters(cancer, kw, match):
    Xtr, _, ytr, _ = cancer
    with pytest.raises(ValueError, match=match):
        _search(**kw).fit(Xtr, ytr)


def test_both_or_neither_grid(cancer):
    Xtr, _, ytr, _ = cancer
    with pytest.raises(ValueError, match="exactly one"):
        DPGridSearchCV(DPLogisticRegression(), epsilon=EPS, delta=DELTA).fit(Xtr, ytr)
    with pytest.raises(ValueError, match="exactly one"):
        DPGridSearchCV(DPLogisticRegression(), GRID, GRID, epsilon=EPS, delta=DELTA).fit(Xtr, ytr)


def test_pipeline_and_tags(cancer):
    from sklearn.base import is_classifier, is_regressor
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import FunctionTransformer

    Xtr, Xte, ytr, yte = cancer
    pipe = make_pipeline(FunctionTransformer(), DPLogisticRegression(solver="noisy_gd"))
    s = DPGridSearchCV(pipe, {"dplogisticregression__data_norm": [1.0, 5.5]}, epsilon=EPS, delta=DELTA,
                       random_state=0).fit(Xtr, ytr)
    assert s.best_estimator_[-1].epsilon == pytest.approx(s.fit_epsilon_)
    assert s.epsilon_ <= EPS and s.score(Xte, yte) > 0.8
    assert is_classifier(s) and is_regressor(DPGridSearchCV(DPRidge(), {}, epsilon=1.0, delta=1e-5))


@pytest.mark.parametrize("shape", [0.0, 0.5, 1.0, 2.0, 5.0])
@pytest.mark.parametrize("mean", [1.5, 10.0, 200.0])
def test_own_gamma_inversion_matches_the_accountant(shape, mean):
    from dp_sklearn.model_selection._repeat_select import tnb_gamma

    ours, theirs = tnb_gamma(shape, mean), _gamma_truncated_negative_binomial(shape, mean)
    # Ours is the upper end of the bracket: the sampled mean is at most the accounted one.
    assert ours >= theirs
    assert ours == pytest.approx(theirs, rel=1e-8)


def test_only_public_dp_accounting_api():
    import pathlib

    import dp_sklearn.model_selection as ms

    src = "\n".join(p.read_text() for p in pathlib.Path(ms.__file__).parent.glob("*.py"))
    for private in ("._rdp", "._orders", "_gamma_truncated_negative_binomial", "rdp_privacy_accountant"):
        assert private not in src
    # The public RDP curve used by the search (dp-accounting >= 0.6 exposes RdpAccountant.rdp / .orders).
    acc = RdpAccountant().compose(dp_event.GaussianDpEvent(2.0))
    np.testing.assert_allclose(acc.rdp, acc.orders / (2 * 2.0**2))


# ------------------------------------------------------------------------ issue 19 item 11
@pytest.mark.parametrize("fmt", ["coo", "dia", "bsr", "csc", "lil"])
def test_every_sparse_format_is_accepted_like_csr(fmt):
    import scipy.sparse as sp

    rng = np.random.default_rng(0)
    X = rng.normal(size=(120, 3))
    X[rng.random(X.shape) < 0.5] = 0.0
    y = (X[:, 0] + X[:, 1] > 0).astype(int)

    def fit(Xf):
        return DPGridSearchCV(DPLogisticRegression(), {"C": [0.1, 1.0]}, epsilon=1.0, delta=1e-5,
                              random_state=0).fit(Xf, y)

    ref = fit(sp.csr_matrix(X))
    got = fit(sp.csr_matrix(X).asformat(fmt))
    assert got.best_params_ == ref.best_params_
    np.testing.assert_allclose(got.best_estimator_.coef_, ref.best_estimator_.coef_, rtol=1e-10)


def test_delta_defaults_like_the_estimators():
    search = DPGridSearchCV(DPLogisticRegression(), {"C": [1.0]}, epsilon=1.0)
    assert search.delta == DPLogisticRegression().delta == 1e-5
    with pytest.raises(TypeError, match="epsilon"):
        DPGridSearchCV(DPLogisticRegression(), {"C": [1.0]})  # the total budget stays explicit


def test_warnings_of_the_private_runs_are_withheld(cancer):
    # Whether an internal fit warns can depend on the data (issue 19 item 10): none leaves the search.
    import warnings

    X, _, y, _ = cancer
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        DPGridSearchCV(DPLogisticRegression(data_norm=0.01), {"C": [1.0]}, epsilon=1.0, delta=1e-6,
                       random_state=0).fit(X, y)
    assert caught == []


# ------------------------------------------------------------------------------
# Issue 8 acceptance: every numbered reproducer, as written in the issue, end to end.
#
# Standardized diabetes ``X, y`` and ``led = PrivacyLedger(...)``, through the public API
# only. Each test asserts the fixed behaviour; the detailed unit tests and the statistical
# audits at the issue's strength live next to the code they cover (named per test).


BOUNDS = (25, 346)


def _fit_quietly(est, X, y):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ClippingWarning)
        return est.fit(X, y)


def test_search_exposes_no_seed_of_its_own_noise(diabetes_full):
    X, y = diabetes_full
    s = _fit_quietly(DPGridSearchCV(DPRidge(bounds_y=BOUNDS), {"alpha": [0.1, 1.0]}, epsilon=1.0, delta=1e-6), X, y)
    model = s.best_estimator_
    assert model.random_state is None
    assert not any("random_state" in k or "seed" in k for k in s.cv_results_)
    # The attack: re-running the refit with what the model carries does not reproduce it.
    again = _fit_quietly(clone(model), X, y)
    assert not np.array_equal(again.coef_, model.coef_)
    assert "key to its own noise" in " ".join(DPGridSearchCV.__doc__.split())


def test_poisson_candidates_in_repeat_and_select(diabetes_full):
    X, y = diabetes_full
    est = DPLogisticRegression(solver="noisy_gd", batch_size=50, max_iter=5)
    with pytest.raises(ValueError, match="replace-one"):
        DPGridSearchCV(est, {"C": [0.1, 1.0]}, epsilon=1.0, delta=1e-6, random_state=0).fit(X, y > 140)
    nested = E.RepeatAndSelectDpEvent(E.SelfComposedDpEvent(E.PoissonSampledDpEvent(0.1, E.GaussianDpEvent(3.0)), 5),
                                      1.0, 1.0)
    with pytest.raises(UnsupportedCompositionError, match="replace-one"):
        compose_epsilon([nested], 1e-5)
    # Nested Poisson events at sampling rate 1: a Gaussian of sensitivity 2 (closed form).
    z, T = 8.0, 4
    nested_q1 = E.ComposedDpEvent([E.SelfComposedDpEvent(E.PoissonSampledDpEvent(1.0, E.GaussianDpEvent(z)), T)])
    closed = privacy_loss_distribution.from_gaussian_mechanism(z / (2 * math.sqrt(T)), value_discretization_interval=1e-4)
    assert compose_epsilon([nested_q1], 1e-5) == pytest.approx(closed.get_epsilon_for_delta(1e-5), rel=2e-3)


# ------------------------------------------------------------------------------
# Attacks and hardening of DPGridSearchCV (issue 8: 0b, 0c, 0e, 2, 12; issue 10: 4).


EPS_ATTACK, DELTA_ATTACK = 2.0, 1e-6


GRID_C = {"C": [0.1, 1.0]}


_NOISE_SOURCES = (np.random.Generator, np.random.RandomState, np.random.SeedSequence, np.random.BitGenerator)


def _reachable(obj, seen=None):
    """Every object reachable from ``obj`` through attributes, dicts, sequences and object arrays."""
    seen = set() if seen is None else seen
    if id(obj) in seen:
        return
    seen.add(id(obj))
    yield obj
    if isinstance(obj, dict):
        children = list(obj.keys()) + list(obj.values())
    elif isinstance(obj, (list, tuple, set, frozenset)):
        children = list(obj)
    elif isinstance(obj, np.ndarray):
        children = list(obj.ravel()) if obj.dtype == object else []
    elif hasattr(obj, "__dict__") and not isinstance(obj, type):
        children = list(vars(obj).values())
    else:
        children = []
    for child in children:
        yield from _reachable(child, seen)


def _small_problem():
    rng = np.random.default_rng(1)
    X = rng.standard_normal((200, 4))
    y = (X @ np.array([1.0, -1.0, 0.5, 0.0]) + 0.3 * rng.standard_normal(200) > 0).astype(int)
    return X, y


def _categorical_problem(n=500):
    rng = np.random.default_rng(0)
    cats = [["a", "b", "c"], ["x", "y"], ["u", "v", "w", "z"]]
    Xc = np.column_stack([rng.choice(c, n) for c in cats]).astype(object)
    logit = 3.0 * (Xc[:, 0] == "a") - 3.0 * (Xc[:, 1] == "y") + 2.0 * (Xc[:, 2] == "z")
    y = (rng.random(n) < 1 / (1 + np.exp(-logit))).astype(int)
    return Xc, y, cats


class _ToyDPCenter(TransformerMixin, BaseEstimator):
    """A DP step for the tests: subtracts a Gaussian-noised mean of rows clipped to l2 norm 1."""

    def __init__(self, epsilon=1.0, delta=1e-6, random_state=None):
        self.epsilon, self.delta, self.random_state = epsilon, delta, random_state

    def fit(self, X, y=None):
        X = np.asarray(X, dtype=float)
        norms = np.maximum(np.linalg.norm(X, axis=1, keepdims=True), 1.0)
        z = gaussian_noise_multiplier(self.epsilon, self.delta)
        rng = self.random_state if isinstance(self.random_state, np.random.Generator) else np.random.default_rng(
            self.random_state)
        self.mean_ = (X / norms).mean(axis=0) + rng.normal(0.0, z * 2.0 / X.shape[0], X.shape[1])
        self.dp_event_ = dp_event.GaussianDpEvent(z)
        return self

    def transform(self, X):
        return np.asarray(X, dtype=float) - self.mean_


def _rare_label_pair(n, n_classes):
    """Replace-one pair: label r = n_classes - 1 on record 0 in D, on records 0 and 1 in D' (same label set)."""
    X = np.random.default_rng(0).standard_normal((n, 2)) / 2
    y = np.r_[n_classes - 1, np.arange(1, n) % (n_classes - 1)]
    y_prime = y.copy()
    y_prime[1] = n_classes - 1
    return (X, y), (X, y_prime)


def _rare_label_search(cv, n_classes):
    """Mechanism: one search; output (raised, r in classes_)."""
    def mechanism(X, y, rng):
        s = DPGridSearchCV(DPLogisticRegression(solver="objective_perturbation"), {"C": [1.0]}, epsilon=1.0,
                           delta=DELTA_ATTACK, cv=cv, selection="exhaustive", random_state=rng)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                s.fit(X, y)
        except ValueError:
            return np.array([1.0, 0.0])
        return np.array([0.0, float(n_classes - 1 in s.best_estimator_.classes_)])
    return mechanism


def _rare_label_event(out):
    """2 when the search raised, 1 when r is missing from classes_, 0 otherwise."""
    return out[:, 0] + 1.0 - out[:, 1]


def _old_label_set(spec, y):
    """Before issue 19: inner fits took their classes from the training part."""
    spec.fixed = {}
    return np.unique(y)


def _old_split(X, y, n_val, rng):
    """Before issue 19: the split raised when the training part had a single class."""
    perm = rng.permutation(y.shape[0])
    idx_val, idx_tr = np.sort(perm[:n_val]), np.sort(perm[n_val:])
    if np.unique(y[idx_tr]).size < 2:
        raise ValueError("The training part of the split has a single class; use a larger cv training share.")
    return X[idx_tr], y[idx_tr], X[idx_val], y[idx_val]


def _reinject_rare_label_leak(monkeypatch):
    from dp_sklearn.model_selection._base import _BaseDPSearch

    monkeypatch.setattr(_BaseDPSearch, "_label_set", staticmethod(_old_label_set))
    monkeypatch.setattr(_BaseDPSearch, "_split", staticmethod(_old_split))


@pytest.mark.parametrize("refit", [True, 0.5])
def test_fitted_search_exposes_no_noise_source(refit):
    X, y = _small_problem()
    est = make_pipeline(FunctionTransformer(), DPLogisticRegression(solver="noisy_gd"))
    s = DPGridSearchCV(est, {"dplogisticregression__C": [0.1, 1.0]}, epsilon=EPS_ATTACK, delta=DELTA_ATTACK, refit=refit,
                       n_iter=2).fit(X, y)
    objs = list(_reachable(s))
    assert not [o for o in objs if isinstance(o, _NOISE_SOURCES)]
    # Every random_state of the released model is what the user gave (None); no large int (a drawn seed).
    params = s.best_estimator_.get_params(deep=True)
    assert all(params[k] is None for k in params if k.endswith("random_state"))
    ints = {int(o) for o in objs if isinstance(o, (int, np.integer)) and not isinstance(o, bool)}
    assert max(ints) < 2**16
    # The attack: re-run the refit with whatever is exposed; it never reproduces the released coefficients.
    model = s.best_estimator_
    for seed in [None, *sorted(ints)[:20]]:
        again = clone(model).set_params(dplogisticregression__random_state=seed).fit(X, y)
        assert not np.array_equal(again[-1].coef_, model[-1].coef_)


def test_int_random_state_stays_reproducible():
    X, y = _small_problem()
    a = DPGridSearchCV(DPLogisticRegression(), GRID_C, epsilon=EPS_ATTACK, delta=DELTA_ATTACK, random_state=3).fit(X, y)
    b = DPGridSearchCV(DPLogisticRegression(), GRID_C, epsilon=EPS_ATTACK, delta=DELTA_ATTACK, random_state=3).fit(X, y)
    np.testing.assert_array_equal(a.best_estimator_.coef_, b.best_estimator_.coef_)
    assert a.best_estimator_.random_state is None
    assert "key to its own noise" in " ".join(DPGridSearchCV.__doc__.split())


def test_random_state_instances_give_at_least_128_bits():
    from dp_sklearn.model_selection._base import seed_sequence

    rs = np.random.RandomState(0)
    expected = np.random.RandomState(0).randint(0, 2**32, size=8, dtype=np.uint64)
    ss = seed_sequence(rs)
    assert [int(w) for w in ss.entropy] == [int(w) for w in expected]  # 8 x 32 = 256 bits drawn from it
    gen_ss = seed_sequence(np.random.default_rng(5))
    assert len(gen_ss.entropy) * 32 >= 128
    # The search with a RandomState is reproducible from the RandomState's own seed, not from one 31-bit draw.
    X, y = _small_problem()
    a = DPGridSearchCV(DPLogisticRegression(), GRID_C, epsilon=EPS_ATTACK, delta=DELTA_ATTACK,
                       random_state=np.random.RandomState(7)).fit(X, y)
    b = DPGridSearchCV(DPLogisticRegression(), GRID_C, epsilon=EPS_ATTACK, delta=DELTA_ATTACK,
                       random_state=np.random.RandomState(7)).fit(X, y)
    np.testing.assert_array_equal(a.best_estimator_.coef_, b.best_estimator_.coef_)
    reduced = np.random.RandomState(7).randint(np.iinfo(np.int32).max)
    c = DPGridSearchCV(DPLogisticRegression(), GRID_C, epsilon=EPS_ATTACK, delta=DELTA_ATTACK, random_state=reduced).fit(X, y)
    assert not np.array_equal(a.best_estimator_.coef_, c.best_estimator_.coef_)


def test_batch_size_candidates_are_refused_by_repeat_and_select_only():
    X, y = _small_problem()
    est = DPLogisticRegression(solver="noisy_gd", batch_size=50, max_iter=20)
    with pytest.raises(ValueError, match="replace-one"):
        DPGridSearchCV(est, GRID_C, epsilon=EPS_ATTACK, delta=DELTA_ATTACK, random_state=0).fit(X, y)
    # Nested anywhere: a grid that mixes full-batch and mini-batch candidates is refused too.
    mixed = {"batch_size": [None, 50], "max_iter": [20]}
    with pytest.raises(ValueError, match="batch_size"):
        DPGridSearchCV(DPLogisticRegression(solver="noisy_gd"), mixed, epsilon=EPS_ATTACK, delta=DELTA_ATTACK,
                       random_state=0).fit(X, y)
    s = DPGridSearchCV(est.set_params(max_iter=5), {"C": [1.0]}, epsilon=EPS_ATTACK, delta=DELTA_ATTACK, selection="exhaustive",
                       random_state=0).fit(X, y)
    leaves = [ev for run in s.dp_event_.events for ev in run.events]
    assert any(isinstance(ev, dp_event.SelfComposedDpEvent)
               and isinstance(ev.event, dp_event.PoissonSampledDpEvent) for ev in leaves)
    # Accounted by the ledger's composition (replace-one for the sampled events).
    assert s.epsilon_ == pytest.approx(compose_epsilon([s.dp_event_], DELTA_ATTACK), rel=1e-12)
    assert s.epsilon_ <= EPS_ATTACK


@pytest.mark.filterwarnings("ignore:invalid value encountered in cast:RuntimeWarning")
@pytest.mark.parametrize("case", ["nan", "inf", "one_class", "lengths", "nan_y"])
def test_invalid_data_leaves_no_reservation(tmp_path, case):
    X, y = _small_problem()
    X, y = X.copy(), y.astype(float)
    if case == "nan":
        X[3, 1] = np.nan
    elif case == "inf":
        X[0, 0] = np.inf
    elif case == "one_class":
        y[:] = 1
    elif case == "lengths":
        y = y[:-1]
    else:
        y[5] = np.nan
    led = PrivacyLedger(max_epsilon=2.5, delta=1e-5, path=tmp_path / "l.jsonl")
    with pytest.raises(ValueError):
        DPGridSearchCV(DPLogisticRegression(), GRID_C, epsilon=EPS_ATTACK, delta=DELTA_ATTACK, ledger=led).fit(X, y)
    assert led.pending == [] and len(led) == 0


def test_failure_after_check_releases_the_reservation(tmp_path, monkeypatch):
    from dp_sklearn.model_selection import _search as search_module

    X, y = _small_problem()
    led = PrivacyLedger(max_epsilon=2.5, delta=1e-5, path=tmp_path / "l.jsonl")

    def broken(*args, **kwargs):
        raise RuntimeError("before the first noise draw")

    monkeypatch.setattr(search_module, "sample_repetitions", broken)
    with pytest.raises(RuntimeError, match="first noise draw"):
        DPGridSearchCV(DPLogisticRegression(), GRID_C, epsilon=EPS_ATTACK, delta=DELTA_ATTACK, ledger=led).fit(X, y)
    assert led.pending == [] and len(led) == 0
    monkeypatch.undo()
    DPGridSearchCV(DPLogisticRegression(), GRID_C, epsilon=EPS_ATTACK, delta=DELTA_ATTACK, ledger=led).fit(X, y)
    assert len(led) == 1 and led.pending == []


def test_warnings_do_not_count_the_hidden_runs():
    X, y = _small_problem()
    X = 10.0 * X  # every row exceeds data_norm=1: each internal fit clips
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        DPGridSearchCV(DPLogisticRegression(data_norm=1.0), GRID_C, epsilon=EPS_ATTACK, delta=DELTA_ATTACK, n_iter=20,
                       random_state=0).fit(X, y)
    clipping = [w for w in caught if issubclass(w.category, ClippingWarning)]
    assert clipping == []  # issue 19 item 10: clipping is never reported
    for w in caught:
        assert not re.search(r"\d", str(w.message)), str(w.message)
    categories = [w.category for w in caught]
    assert len(categories) == len(set(categories))


def test_verbose_prints_only_public_numbers(capsys):
    X, y = _small_problem()
    rng = np.random.default_rng(9)
    other_X, other_y = rng.standard_normal(X.shape) * 5.0, rng.integers(0, 2, size=y.shape[0])
    outputs = []
    for data in [(X, y), (other_X, other_y)]:
        DPGridSearchCV(DPLogisticRegression(), GRID_C, epsilon=EPS_ATTACK, delta=DELTA_ATTACK, verbose=1, random_state=0).fit(*data)
        outputs.append(capsys.readouterr().out)
    assert outputs[0] and outputs[0] == outputs[1]  # a function of the hyperparameters and n only


def test_public_category_encoder_pipeline():
    Xc, y, cats = _categorical_problem()
    pipe = make_pipeline(OneHotEncoder(categories=cats), DPLogisticRegression(solver="noisy_gd"))
    s = DPGridSearchCV(pipe, {"dplogisticregression__C": [0.1, 1.0]}, epsilon=EPS_ATTACK, delta=DELTA_ATTACK,
                       random_state=0).fit(Xc, y)
    assert s.epsilon_ <= EPS_ATTACK
    majority = max(np.mean(y), 1 - np.mean(y))
    assert s.score(Xc, y) > majority + 0.05
    # With a ColumnTransformer over a DataFrame: categorical and numeric columns side by side.
    pd = pytest.importorskip("pandas")
    df = pd.DataFrame({"c0": Xc[:, 0], "num": np.random.default_rng(1).standard_normal(len(y)), "c2": Xc[:, 2]})
    ct = ColumnTransformer([("oh", OneHotEncoder(categories=[cats[0], cats[2]]), ["c0", "c2"])],
                           remainder="passthrough")
    t = DPGridSearchCV(make_pipeline(ct, DPLogisticRegression(solver="noisy_gd")),
                       {"dplogisticregression__C": [1.0]}, epsilon=EPS_ATTACK, delta=DELTA_ATTACK, random_state=0).fit(df, y)
    assert t.epsilon_ <= EPS_ATTACK and t.predict(df).shape == y.shape


@pytest.mark.parametrize("step, match", [(StandardScaler(), "standardscaler"),
                                         (OneHotEncoder(), "onehotencoder"),
                                         (OneHotEncoder(categories=[["a", "b", "c"]] * 3, max_categories=2),
                                          "onehotencoder")])
def test_non_private_fitted_steps_are_refused(tmp_path, step, match):
    Xc, y, _ = _categorical_problem(60)
    led = PrivacyLedger(max_epsilon=5.0, delta=1e-5, path=tmp_path / "l.jsonl")
    with pytest.raises(ValueError, match=f"'{match}'.*without privacy"):
        DPGridSearchCV(make_pipeline(step, DPLogisticRegression()), {"dplogisticregression__C": [1.0]},
                       epsilon=EPS_ATTACK, delta=DELTA_ATTACK, ledger=led).fit(Xc, y)
    assert led.pending == []


def test_several_dp_steps_split_the_budget_by_configured_epsilon():
    X, y = _small_problem()
    pipe = make_pipeline(_ToyDPCenter(epsilon=1.0, delta=1e-7), DPLogisticRegression(epsilon=3.0, delta=1e-7))
    s = DPGridSearchCV(pipe, {"dplogisticregression__C": [0.1, 1.0]}, epsilon=EPS_ATTACK, delta=DELTA_ATTACK,
                       random_state=0).fit(X, y)
    center, model = s.best_estimator_[0], s.best_estimator_[-1]
    assert center.epsilon == pytest.approx(0.25 * s.fit_epsilon_)
    assert model.epsilon == pytest.approx(0.75 * s.fit_epsilon_)
    assert center.delta == pytest.approx(0.5 * s.fit_delta_)
    run = s.dp_event_.event
    assert run.events[0] == dp_event.ComposedDpEvent([center.dp_event_, model.dp_event_])
    assert s.epsilon_ <= EPS_ATTACK and center.random_state is None and model.random_state is None
    bad = make_pipeline(_ToyDPCenter(epsilon=np.inf), DPLogisticRegression())
    with pytest.raises(ValueError, match="_toydpcenter__epsilon must be a finite number"):
        DPGridSearchCV(bad, {"dplogisticregression__C": [1.0]}, epsilon=EPS_ATTACK, delta=DELTA_ATTACK).fit(X, y)


def test_regressor_pipeline_with_public_steps(diabetes):
    Xtr, _, ytr, _ = diabetes
    pipe = make_pipeline(FunctionTransformer(), DPRidge(bounds_y=(0, 400), solver="noisy_gd"))
    s = DPGridSearchCV(pipe, {"dpridge__alpha": [0.1, 1.0]}, epsilon=EPS_ATTACK, delta=DELTA_ATTACK, random_state=0).fit(Xtr, ytr)
    assert s.epsilon_ <= EPS_ATTACK


@pytest.mark.parametrize("n_classes", [2, 3])
def test_every_inner_fit_gets_the_full_label_set(n_classes, monkeypatch):
    # Issue 19 item 1 at cv=0.1: old main raised "training part has a single class" (2 classes)
    # or released a model whose classes_ lacked r (3 classes) when every r-record fell in the
    # validation part (seeds 0-29 include such splits).
    (X, y), _ = _rare_label_pair(200, n_classes)
    for seed in range(30):
        s = DPGridSearchCV(DPLogisticRegression(solver="objective_perturbation"), {"C": [1.0]}, epsilon=1.0,
                           delta=DELTA_ATTACK, cv=0.1, selection="exhaustive", random_state=seed).fit(X, y)
        np.testing.assert_array_equal(s.classes_, np.arange(n_classes))
        assert s.best_estimator_.coef_.shape[0] == (1 if n_classes == 2 else n_classes)
        assert np.all(np.isfinite(s.best_estimator_.coef_))
    # Pipelines: the label set goes to the final step.
    pipe = make_pipeline(FunctionTransformer(), DPLogisticRegression(solver="objective_perturbation"))
    s = DPGridSearchCV(pipe, {"dplogisticregression__C": [1.0]}, epsilon=1.0, delta=DELTA_ATTACK, cv=0.1,
                       selection="exhaustive", random_state=0).fit(X, y)
    np.testing.assert_array_equal(s.classes_, np.arange(n_classes))
    # The old path, re-injected, shows the event on these seeds.
    _reinject_rare_label_leak(monkeypatch)
    out = np.array([_rare_label_search(0.1, n_classes)(X, y, seed) for seed in range(30)])
    assert _rare_label_event(out).max() >= 1


def test_label_set_validation_before_any_budget(tmp_path):
    X, y = _small_problem()
    led = PrivacyLedger(path=str(tmp_path / "l.jsonl"), max_epsilon=10.0)
    with pytest.raises(ValueError, match=r"labels \[1\] that are not in classes=\[0, 2\]"):
        DPGridSearchCV(DPLogisticRegression(classes=[0, 2]), GRID_C, epsilon=EPS_ATTACK, delta=DELTA_ATTACK, ledger=led).fit(X, y)
    with pytest.raises(ValueError, match="search sets"):
        DPGridSearchCV(DPLogisticRegression(), {"classes": [[0, 1]]}, epsilon=EPS_ATTACK, delta=DELTA_ATTACK, ledger=led).fit(X, y)
    assert led.pending == [] and len(led) == 0
    # A public label set wider than y's labels is kept.
    s = DPGridSearchCV(DPLogisticRegression(classes=[0, 1, 2]), GRID_C, epsilon=EPS_ATTACK, delta=DELTA_ATTACK,
                       random_state=0).fit(X, y)
    np.testing.assert_array_equal(s.classes_, [0, 1, 2])


def test_unknown_category_is_refused_before_any_budget(tmp_path):
    # Otherwise the inner fit (training part) or the validation score raised, depending on the split.
    Xc, y, cats = _categorical_problem(200)
    Xc[5, 1] = "q"
    led = PrivacyLedger(path=str(tmp_path / "l.jsonl"), max_epsilon=10.0)
    pipe = make_pipeline(OneHotEncoder(categories=cats), DPLogisticRegression(solver="output_perturbation"))
    with pytest.raises(ValueError, match=r"Column 1 of X holds values \['q'\] outside the public categories"):
        DPGridSearchCV(pipe, {"dplogisticregression__C": [1.0]}, epsilon=EPS_ATTACK, delta=DELTA_ATTACK, ledger=led).fit(Xc, y)
    assert led.pending == [] and len(led) == 0
    # handle_unknown="ignore" accepts it (the encoder maps it to zeros wherever it falls).
    pipe.set_params(onehotencoder__handle_unknown="ignore")
    DPGridSearchCV(pipe, {"dplogisticregression__C": [1.0]}, epsilon=EPS_ATTACK, delta=DELTA_ATTACK, random_state=0).fit(Xc, y)


def test_audit_rare_label_small_validation_part(monkeypatch):
    # n = 10, cv = 0.1: a validation part of one row, so every r-record of D' can never all be
    # in it while D's one is with probability 0.1 (the exact bound is infinite). 500 + 500 searches.
    D, D_prime = _rare_label_pair(10, 2)
    mech = _rare_label_search(0.1, 2)
    res = audit_epsilon(mech, D, D_prime, n_samples=500, statistic=_rare_label_event, random_state=0)
    assert res.epsilon_lower <= 1.0, res
    _reinject_rare_label_leak(monkeypatch)
    bad = audit_epsilon(mech, D, D_prime, n_samples=500, statistic=_rare_label_event, random_state=0)
    assert bad.epsilon_lower > 1.0, bad


@pytest.mark.slow
@pytest.mark.parametrize("n_classes", [2, 3])
def test_audit_rare_label_at_the_issue_strength(n_classes, monkeypatch):
    # Issue 19 item 1 at its trial count (1500 + 1500 searches), 2 and 3 classes, on the n = 10
    # pair of the fast test (a validation part of one row). On the issue's n = 1000 pair the
    # control has little power at this count: P(event) is 0.1 on D and 0.0099 on D', and with
    # random_state=0 the re-injected old path gives 0.906 (cv=0.1) and 0.923 (cv=0.3), below 1,
    # while the fixed search gives 0 (benchmarks/issue19_audits.py, --only search).
    D, D_prime = _rare_label_pair(10, n_classes)
    mech = _rare_label_search(0.1, n_classes)
    res = audit_epsilon(mech, D, D_prime, n_samples=1500, statistic=_rare_label_event, random_state=0)
    assert res.epsilon_lower <= 1.0, res
    _reinject_rare_label_leak(monkeypatch)
    bad = audit_epsilon(mech, D, D_prime, n_samples=1500, statistic=_rare_label_event, random_state=0)
    assert bad.epsilon_lower > 1.0, bad


# ------------------------------------------------------------------------------
# Issue 11: one copy of X per fit (blockwise normalization), the large-n sampled default of noisy_gd.


RNG = np.random.default_rng(0)


def test_batch_size_full_forces_full_batches_and_the_search_uses_it():
    from dp_sklearn import DPGridSearchCV

    X = RNG.normal(size=(60_000, 3))
    y = (X[:, 0] > 0).astype(int)
    full = DPLogisticRegression(solver="noisy_gd", max_iter=20, random_state=0, data_norm=3.0,
                                batch_size="full").fit(X, y)
    same = DPLogisticRegression(solver="noisy_gd", max_iter=20, random_state=0, data_norm=3.0,
                                batch_size=60_000).fit(X, y)
    assert "PoissonSampled" not in repr(full.dp_event_) and full.dp_event_ == same.dp_event_
    assert np.array_equal(full.coef_, same.coef_)
    # Repeat-and-select is accounted for full-batch runs: candidates left at batch_size=None
    # fit full batches there (at this n the default plan would be Poisson-sampled and refused).
    search = DPGridSearchCV(DPLogisticRegression(solver="noisy_gd", max_iter=5, data_norm=3.0), {"C": [0.1, 1.0]},
                            epsilon=2.0,
                            delta=1e-6, random_state=0).fit(X, y)
    assert "PoissonSampled" not in repr(search.dp_event_)
    assert search.best_estimator_.batch_size == "full"
    with pytest.raises(ValueError, match="subsampled"):
        DPGridSearchCV(DPLogisticRegression(max_iter=5, data_norm=3.0), {"batch_size": [1000]}, epsilon=2.0,
                       delta=1e-6, random_state=0).fit(X, y)
