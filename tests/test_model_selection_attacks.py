"""Attacks and hardening of DPGridSearchCV (issue 8: 0b, 0c, 0e, 2, 12; issue 10: 4)."""

import re
import warnings

import numpy as np
import pytest
from dp_accounting import dp_event
from sklearn.base import BaseEstimator, TransformerMixin, clone
from sklearn.compose import ColumnTransformer
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer, OneHotEncoder, StandardScaler

from dp_sklearn import ClippingWarning, DPLogisticRegression, DPRidge
from dp_sklearn._accounting import gaussian_noise_multiplier
from dp_sklearn.ledger import PrivacyLedger, compose_epsilon
from dp_sklearn.audit import audit_epsilon
from dp_sklearn.model_selection import DPGridSearchCV

EPS, DELTA = 2.0, 1e-6
GRID = {"C": [0.1, 1.0]}
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


# ---------------------------------------------------------------------------------- 0b: no key to the noise
@pytest.mark.parametrize("refit", [True, 0.5])
def test_fitted_search_exposes_no_noise_source(refit):
    X, y = _small_problem()
    est = make_pipeline(FunctionTransformer(), DPLogisticRegression(solver="noisy_gd"))
    s = DPGridSearchCV(est, {"dplogisticregression__C": [0.1, 1.0]}, epsilon=EPS, delta=DELTA, refit=refit,
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
    a = DPGridSearchCV(DPLogisticRegression(), GRID, epsilon=EPS, delta=DELTA, random_state=3).fit(X, y)
    b = DPGridSearchCV(DPLogisticRegression(), GRID, epsilon=EPS, delta=DELTA, random_state=3).fit(X, y)
    np.testing.assert_array_equal(a.best_estimator_.coef_, b.best_estimator_.coef_)
    assert a.best_estimator_.random_state is None
    assert "key to its own noise" in " ".join(DPGridSearchCV.__doc__.split())


# ---------------------------------------------------------------------------------- 0e: no 31-bit seeds
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
    a = DPGridSearchCV(DPLogisticRegression(), GRID, epsilon=EPS, delta=DELTA,
                       random_state=np.random.RandomState(7)).fit(X, y)
    b = DPGridSearchCV(DPLogisticRegression(), GRID, epsilon=EPS, delta=DELTA,
                       random_state=np.random.RandomState(7)).fit(X, y)
    np.testing.assert_array_equal(a.best_estimator_.coef_, b.best_estimator_.coef_)
    reduced = np.random.RandomState(7).randint(np.iinfo(np.int32).max)
    c = DPGridSearchCV(DPLogisticRegression(), GRID, epsilon=EPS, delta=DELTA, random_state=reduced).fit(X, y)
    assert not np.array_equal(a.best_estimator_.coef_, c.best_estimator_.coef_)


# ---------------------------------------------------------------------------------- 0c: subsampled candidates
def test_batch_size_candidates_are_refused_by_repeat_and_select_only():
    X, y = _small_problem()
    est = DPLogisticRegression(solver="noisy_gd", batch_size=50, max_iter=20)
    with pytest.raises(ValueError, match="replace-one"):
        DPGridSearchCV(est, GRID, epsilon=EPS, delta=DELTA, random_state=0).fit(X, y)
    # Nested anywhere: a grid that mixes full-batch and mini-batch candidates is refused too.
    mixed = {"batch_size": [None, 50], "max_iter": [20]}
    with pytest.raises(ValueError, match="batch_size"):
        DPGridSearchCV(DPLogisticRegression(solver="noisy_gd"), mixed, epsilon=EPS, delta=DELTA,
                       random_state=0).fit(X, y)
    s = DPGridSearchCV(est.set_params(max_iter=5), {"C": [1.0]}, epsilon=EPS, delta=DELTA, selection="exhaustive",
                       random_state=0).fit(X, y)
    leaves = [ev for run in s.dp_event_.events for ev in run.events]
    assert any(isinstance(ev, dp_event.SelfComposedDpEvent)
               and isinstance(ev.event, dp_event.PoissonSampledDpEvent) for ev in leaves)
    # Accounted by the ledger's composition (replace-one for the sampled events).
    assert s.epsilon_ == pytest.approx(compose_epsilon([s.dp_event_], DELTA), rel=1e-12)
    assert s.epsilon_ <= EPS


# ---------------------------------------------------------------------------------- 2: no stale reservation
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
        DPGridSearchCV(DPLogisticRegression(), GRID, epsilon=EPS, delta=DELTA, ledger=led).fit(X, y)
    assert led.pending == [] and len(led) == 0


def test_failure_after_check_releases_the_reservation(tmp_path, monkeypatch):
    from dp_sklearn.model_selection import _search as search_module

    X, y = _small_problem()
    led = PrivacyLedger(max_epsilon=2.5, delta=1e-5, path=tmp_path / "l.jsonl")

    def broken(*args, **kwargs):
        raise RuntimeError("before the first noise draw")

    monkeypatch.setattr(search_module, "sample_repetitions", broken)
    with pytest.raises(RuntimeError, match="first noise draw"):
        DPGridSearchCV(DPLogisticRegression(), GRID, epsilon=EPS, delta=DELTA, ledger=led).fit(X, y)
    assert led.pending == [] and len(led) == 0
    monkeypatch.undo()
    DPGridSearchCV(DPLogisticRegression(), GRID, epsilon=EPS, delta=DELTA, ledger=led).fit(X, y)
    assert len(led) == 1 and led.pending == []


# ---------------------------------------------------------------------------------- 12 and verbose
def test_warnings_do_not_count_the_hidden_runs():
    X, y = _small_problem()
    X = 10.0 * X  # every row exceeds data_norm=1: each internal fit clips
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        DPGridSearchCV(DPLogisticRegression(data_norm=1.0), GRID, epsilon=EPS, delta=DELTA, n_iter=20,
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
        DPGridSearchCV(DPLogisticRegression(), GRID, epsilon=EPS, delta=DELTA, verbose=1, random_state=0).fit(*data)
        outputs.append(capsys.readouterr().out)
    assert outputs[0] and outputs[0] == outputs[1]  # a function of the hyperparameters and n only


# ---------------------------------------------------------------------------------- issue 10.4: pipelines
def _categorical_problem(n=500):
    rng = np.random.default_rng(0)
    cats = [["a", "b", "c"], ["x", "y"], ["u", "v", "w", "z"]]
    Xc = np.column_stack([rng.choice(c, n) for c in cats]).astype(object)
    logit = 3.0 * (Xc[:, 0] == "a") - 3.0 * (Xc[:, 1] == "y") + 2.0 * (Xc[:, 2] == "z")
    y = (rng.random(n) < 1 / (1 + np.exp(-logit))).astype(int)
    return Xc, y, cats


def test_public_category_encoder_pipeline():
    Xc, y, cats = _categorical_problem()
    pipe = make_pipeline(OneHotEncoder(categories=cats), DPLogisticRegression(solver="noisy_gd"))
    s = DPGridSearchCV(pipe, {"dplogisticregression__C": [0.1, 1.0]}, epsilon=EPS, delta=DELTA,
                       random_state=0).fit(Xc, y)
    assert s.epsilon_ <= EPS
    majority = max(np.mean(y), 1 - np.mean(y))
    assert s.score(Xc, y) > majority + 0.05
    # With a ColumnTransformer over a DataFrame: categorical and numeric columns side by side.
    pd = pytest.importorskip("pandas")
    df = pd.DataFrame({"c0": Xc[:, 0], "num": np.random.default_rng(1).standard_normal(len(y)), "c2": Xc[:, 2]})
    ct = ColumnTransformer([("oh", OneHotEncoder(categories=[cats[0], cats[2]]), ["c0", "c2"])],
                           remainder="passthrough")
    t = DPGridSearchCV(make_pipeline(ct, DPLogisticRegression(solver="noisy_gd")),
                       {"dplogisticregression__C": [1.0]}, epsilon=EPS, delta=DELTA, random_state=0).fit(df, y)
    assert t.epsilon_ <= EPS and t.predict(df).shape == y.shape


@pytest.mark.parametrize("step, match", [(StandardScaler(), "standardscaler"),
                                         (OneHotEncoder(), "onehotencoder"),
                                         (OneHotEncoder(categories=[["a", "b", "c"]] * 3, max_categories=2),
                                          "onehotencoder")])
def test_non_private_fitted_steps_are_refused(tmp_path, step, match):
    Xc, y, _ = _categorical_problem(60)
    led = PrivacyLedger(max_epsilon=5.0, delta=1e-5, path=tmp_path / "l.jsonl")
    with pytest.raises(ValueError, match=f"'{match}'.*without privacy"):
        DPGridSearchCV(make_pipeline(step, DPLogisticRegression()), {"dplogisticregression__C": [1.0]},
                       epsilon=EPS, delta=DELTA, ledger=led).fit(Xc, y)
    assert led.pending == []


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


def test_several_dp_steps_split_the_budget_by_configured_epsilon():
    X, y = _small_problem()
    pipe = make_pipeline(_ToyDPCenter(epsilon=1.0, delta=1e-7), DPLogisticRegression(epsilon=3.0, delta=1e-7))
    s = DPGridSearchCV(pipe, {"dplogisticregression__C": [0.1, 1.0]}, epsilon=EPS, delta=DELTA,
                       random_state=0).fit(X, y)
    center, model = s.best_estimator_[0], s.best_estimator_[-1]
    assert center.epsilon == pytest.approx(0.25 * s.fit_epsilon_)
    assert model.epsilon == pytest.approx(0.75 * s.fit_epsilon_)
    assert center.delta == pytest.approx(0.5 * s.fit_delta_)
    run = s.dp_event_.event
    assert run.events[0] == dp_event.ComposedDpEvent([center.dp_event_, model.dp_event_])
    assert s.epsilon_ <= EPS and center.random_state is None and model.random_state is None
    bad = make_pipeline(_ToyDPCenter(epsilon=np.inf), DPLogisticRegression())
    with pytest.raises(ValueError, match="_toydpcenter__epsilon must be a finite number"):
        DPGridSearchCV(bad, {"dplogisticregression__C": [1.0]}, epsilon=EPS, delta=DELTA).fit(X, y)


def test_regressor_pipeline_with_public_steps(diabetes):
    Xtr, _, ytr, _ = diabetes
    pipe = make_pipeline(FunctionTransformer(), DPRidge(bounds_y=(0, 400), solver="noisy_gd"))
    s = DPGridSearchCV(pipe, {"dpridge__alpha": [0.1, 1.0]}, epsilon=EPS, delta=DELTA, random_state=0).fit(Xtr, ytr)
    assert s.epsilon_ <= EPS


# ---------------------------------------------------------------------------------- issue 19.1: rare labels
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
                           delta=DELTA, cv=cv, selection="exhaustive", random_state=rng)
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


@pytest.mark.parametrize("n_classes", [2, 3])
def test_every_inner_fit_gets_the_full_label_set(n_classes, monkeypatch):
    # Issue 19 item 1 at cv=0.1: old main raised "training part has a single class" (2 classes)
    # or released a model whose classes_ lacked r (3 classes) when every r-record fell in the
    # validation part (seeds 0-29 include such splits).
    (X, y), _ = _rare_label_pair(200, n_classes)
    for seed in range(30):
        s = DPGridSearchCV(DPLogisticRegression(solver="objective_perturbation"), {"C": [1.0]}, epsilon=1.0,
                           delta=DELTA, cv=0.1, selection="exhaustive", random_state=seed).fit(X, y)
        np.testing.assert_array_equal(s.classes_, np.arange(n_classes))
        assert s.best_estimator_.coef_.shape[0] == (1 if n_classes == 2 else n_classes)
        assert np.all(np.isfinite(s.best_estimator_.coef_))
    # Pipelines: the label set goes to the final step.
    pipe = make_pipeline(FunctionTransformer(), DPLogisticRegression(solver="objective_perturbation"))
    s = DPGridSearchCV(pipe, {"dplogisticregression__C": [1.0]}, epsilon=1.0, delta=DELTA, cv=0.1,
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
        DPGridSearchCV(DPLogisticRegression(classes=[0, 2]), GRID, epsilon=EPS, delta=DELTA, ledger=led).fit(X, y)
    with pytest.raises(ValueError, match="search sets"):
        DPGridSearchCV(DPLogisticRegression(), {"classes": [[0, 1]]}, epsilon=EPS, delta=DELTA, ledger=led).fit(X, y)
    assert led.pending == [] and len(led) == 0
    # A public label set wider than y's labels is kept.
    s = DPGridSearchCV(DPLogisticRegression(classes=[0, 1, 2]), GRID, epsilon=EPS, delta=DELTA,
                       random_state=0).fit(X, y)
    np.testing.assert_array_equal(s.classes_, [0, 1, 2])


def test_unknown_category_is_refused_before_any_budget(tmp_path):
    # Otherwise the inner fit (training part) or the validation score raised, depending on the split.
    Xc, y, cats = _categorical_problem(200)
    Xc[5, 1] = "q"
    led = PrivacyLedger(path=str(tmp_path / "l.jsonl"), max_epsilon=10.0)
    pipe = make_pipeline(OneHotEncoder(categories=cats), DPLogisticRegression(solver="output_perturbation"))
    with pytest.raises(ValueError, match=r"Column 1 of X holds values \['q'\] outside the public categories"):
        DPGridSearchCV(pipe, {"dplogisticregression__C": [1.0]}, epsilon=EPS, delta=DELTA, ledger=led).fit(Xc, y)
    assert led.pending == [] and len(led) == 0
    # handle_unknown="ignore" accepts it (the encoder maps it to zeros wherever it falls).
    pipe.set_params(onehotencoder__handle_unknown="ignore")
    DPGridSearchCV(pipe, {"dplogisticregression__C": [1.0]}, epsilon=EPS, delta=DELTA, random_state=0).fit(Xc, y)


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
