"""One path for every private fit (issue 19 items 4-7): reserve once, record by id, never charge a failure.

Each failing fit runs against a ledger that already holds a release, and must leave the
store byte-identical; each pipeline shape must record exactly the composition of what it
released, within its stated total.
"""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from dp_accounting import dp_event
from sklearn.base import clone
from sklearn.compose import ColumnTransformer
from sklearn.model_selection import GridSearchCV, cross_val_score
from sklearn.pipeline import FeatureUnion, Pipeline, make_pipeline
from sklearn.preprocessing import FunctionTransformer, OneHotEncoder, StandardScaler

from dp_sklearn import (
    BudgetExceededError,
    DPGridSearchCV,
    DPLasso,
    DPLogisticRegression,
    DPOnlineRegressor,
    DPRidge,
    DPSparseLogisticRegression,
    PrivacyLedger,
    budget_split,
    make_private_pipeline,
)
from dp_sklearn.composition import compose_epsilon
from dp_sklearn.linear_model import _base as linear_base
from dp_sklearn.linear_model._base import _DPLinearBase, _make_rng
from dp_sklearn.preprocessing import DPMinMaxScaler, DPStandardScaler

RNG = np.random.default_rng(0)
X = RNG.normal(size=(300, 4))
Y = X @ np.array([1.0, -1.0, 0.5, 0.0]) + 0.1 * RNG.normal(size=300)
YC = (Y > 0).astype(int)


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


@pytest.fixture
def led(tmp_path):
    """A ledger with one release already recorded (so "unchanged" is a non-trivial claim)."""
    ledger = PrivacyLedger(max_epsilon=20.0, path=tmp_path / "ledger.jsonl")
    DPRidge(bounds_y=(-5, 5), epsilon=0.5, ledger=ledger, random_state=0).fit(X, Y)
    return ledger


def _bytes(ledger):
    with open(ledger.path, "rb") as fh:
        return fh.read()


def _leaf_events(est):
    """Events of every fitted DP step of ``est`` (a local traversal, independent of dp_sklearn's)."""
    out = []
    if hasattr(est, "dp_event_") and not isinstance(est, Pipeline):
        return [est.dp_event_]
    if isinstance(est, Pipeline):
        for _, step in est.steps:
            out += _leaf_events(step)
    elif isinstance(est, ColumnTransformer):
        for _, step, _ in est.transformers_:
            out += _leaf_events(step)
    elif isinstance(est, FeatureUnion):
        for _, step in est.transformer_list:
            out += _leaf_events(step)
    return out


def _scaler():
    return DPStandardScaler(bounds=(-4, 4), random_state=0)


def _ridge(**kw):
    return DPRidge(bounds_y=(-5, 5), random_state=0, **kw)


def _pipe(model, ledger, first=None):
    return make_private_pipeline(first if first is not None else _scaler(), model, epsilon=1.0, ledger=ledger)


# --------------------------------------------------------------------------- the failing-fit battery
def _ohe_frame(value):
    import pandas as pd

    frame = pd.DataFrame({"c": ["x", "y"] * 150, "n": X[:, 0]})
    frame.loc[7, "c"] = value
    return frame


def _wide_csr():
    """CSR 200 x 1e6 with one entry per row (built directly: sp.random is slow at this width)."""
    rows = np.arange(200)
    return sp.csr_matrix((np.ones(200), (rows, rows * 4999)), shape=(200, 10**6))


def _ohe_pipe(ledger):
    # the scaler fits (and used to record) before the encoder meets the unknown value
    ct = ColumnTransformer([("num", DPStandardScaler(bounds=(-4, 4), ledger=ledger), ["n"]),
                            ("cat", OneHotEncoder(categories=[["x", "y"]]), ["c"])])
    return make_private_pipeline(ct, _ridge(), epsilon=1.0, ledger=ledger)


BATTERY = {
    # issue 19 item 6's example: the scaler used to be recorded, then bounds_y raised
    "pipeline_reversed_bounds_y": lambda led: _pipe(DPRidge(bounds_y=(8, -8)), led).fit(X, Y),
    "pipeline_nan_y": lambda led: _pipe(_ridge(), led).fit(X, np.where(np.arange(300) == 3, np.nan, Y)),
    "pipeline_inf_y": lambda led: _pipe(_ridge(), led).fit(X, np.where(np.arange(300) == 3, np.inf, Y)),
    "pipeline_one_class": lambda led: _pipe(DPLogisticRegression(), led).fit(X, np.zeros(300, dtype=int)),
    "pipeline_continuous_y_classifier": lambda led: _pipe(DPLogisticRegression(), led).fit(X, Y),
    "pipeline_unknown_solver": lambda led: _pipe(_ridge(solver="nope"), led).fit(X, Y),
    "pipeline_delta0_gaussian_solver": lambda led: make_private_pipeline(
        _scaler(), _ridge(solver="noisy_gd"), epsilon=1.0, delta=0.0, ledger=led).fit(X, Y),
    # the scaler used to record in its ledger, then the model's own capped ledger refused
    "pipeline_model_cap": lambda led: make_private_pipeline(
        DPStandardScaler(bounds=(-4, 4), ledger=led), _ridge(ledger=PrivacyLedger(max_epsilon=0.01, path=led.path)),
    ).fit(X, Y),
    "pipeline_unknown_category": lambda led: _ohe_pipe(led).fit(_ohe_frame("z"), Y),
    "pipeline_nested_bad_leaf": lambda led: make_private_pipeline(
        ColumnTransformer([("a", DPStandardScaler(bounds=(-4, 4), ledger=led), [0, 1]),
                           ("b", DPMinMaxScaler(bounds=(3, -3)), [2, 3])]), _ridge(), ledger=led).fit(X, Y),
    "ridge_ssp_csr_1e6_features": lambda led: DPRidge(solver="ssp", bounds_y=(-1, 1), ledger=led).fit(
        _wide_csr(), np.zeros(200)),
    "search_unknown_category": lambda led: DPGridSearchCV(
        make_pipeline(ColumnTransformer([("cat", OneHotEncoder(categories=[["x", "y"]]), ["c"]),
                                         ("num", "passthrough", ["n"])]), _ridge()),
        {"dpridge__alpha": [0.1, 1.0]}, epsilon=1.0, delta=1e-5, ledger=led, random_state=0).fit(
            _ohe_frame("z"), Y),
    "estimator_nan_y": lambda led: _ridge(ledger=led).fit(X, np.where(np.arange(300) == 3, np.nan, Y)),
    "scaler_bad_bounds": lambda led: DPStandardScaler(bounds=(4, -4), ledger=led).fit(X),
}


@pytest.mark.parametrize("case", sorted(BATTERY))
def test_a_failing_fit_leaves_the_ledger_byte_identical(case, led):
    before = _bytes(led)
    with pytest.raises((ValueError, BudgetExceededError)):
        BATTERY[case](led)
    assert _bytes(led) == before
    assert led.pending == []


def test_a_refused_cross_val_score_fold_charges_nothing(tmp_path):
    """Item 6: folds are whole releases; the refused one leaves no partial (scaler-only) record."""
    probe = _pipe(_ridge(), None).fit(X[:200], Y[:200])  # a fold's training part: 200 rows
    two, three = (compose_epsilon([probe.dp_event_] * k, 1e-5) for k in (2, 3))
    ledger = PrivacyLedger(max_epsilon=(two + three) / 2, path=tmp_path / "cv.jsonl")
    with pytest.raises(BudgetExceededError):
        cross_val_score(_pipe(_ridge(), ledger), X, Y, cv=3)
    assert len(ledger) == 2 and ledger.pending == []
    assert all(r.event == probe.dp_event_ for r in ledger.records)


# --------------------------------------------------------------------------- ledger identity (item 7)
def test_a_fit_failing_after_its_draw_keeps_its_charge(tmp_path, monkeypatch):
    """Item 7: the failed fit's reservation is recorded, never consumed by the next fit."""
    ledger = PrivacyLedger(max_epsilon=10.0, path=tmp_path / "l.jsonl")
    real_run = _DPLinearBase._run

    def draw_then_fail(self, spec, problem, constraint, plan, kwargs, rng):
        rng.normal()
        raise RuntimeError("mechanism failed after drawing")

    monkeypatch.setattr(_DPLinearBase, "_run", draw_then_fail)
    with pytest.raises(RuntimeError, match="after drawing"):
        _ridge(ledger=ledger).fit(X, Y)
    monkeypatch.setattr(_DPLinearBase, "_run", real_run)
    est = _ridge(ledger=ledger).fit(X, Y)
    assert ledger.pending == []
    assert len(ledger) == 2 and ledger.events == [est.dp_event_, est.dp_event_]


def test_a_fit_failing_before_any_draw_is_released(tmp_path, monkeypatch):
    ledger = PrivacyLedger(max_epsilon=10.0, path=tmp_path / "l.jsonl")

    def fail(*args, **kwargs):
        raise RuntimeError("failed before drawing")

    monkeypatch.setattr(linear_base, "normalize_X", fail)
    with pytest.raises(RuntimeError):
        _ridge(ledger=ledger).fit(X, Y)
    assert len(ledger) == 0 and ledger.pending == []


def test_reservations_pair_by_identity(tmp_path):
    ledger = PrivacyLedger(max_epsilon=10.0, path=tmp_path / "l.jsonl")
    a = ledger.reserve(1.0, 0.0, event=dp_event.LaplaceDpEvent(1.0), label="a")
    b = ledger.reserve(2.0, 0.0, event=dp_event.LaplaceDpEvent(0.5), label="b")
    ledger.record(dp_event.LaplaceDpEvent(0.5), 2.0, 0.0, label="b", reservation=b)
    assert ledger.pending == [("a", 1.0, 0.0)]
    assert ledger.release(a) and not ledger.release(a)
    assert ledger.pending == [] and [r.label for r in ledger.records] == ["b"]
    with pytest.raises(TypeError, match="reservation"):
        ledger.record(dp_event.LaplaceDpEvent(1.0), reservation=3)


def test_online_ledger_attached_mid_stream_is_refused(tmp_path):
    ledger = PrivacyLedger(max_epsilon=10.0, path=tmp_path / "l.jsonl")
    reg = DPOnlineRegressor(bounds_y=(-5, 5), horizon=300, random_state=0).partial_fit(X[:100], Y[:100])
    reg.set_params(ledger=ledger)
    with pytest.raises(ValueError, match="ledger"):
        reg.partial_fit(X[100:200], Y[100:200])
    assert len(ledger) == 0
    reg = DPOnlineRegressor(bounds_y=(-5, 5), horizon=300, ledger=ledger, random_state=0)
    for start in range(0, 300, 100):
        reg.partial_fit(X[start:start + 100], Y[start:start + 100])
    assert ledger.events == [reg.dp_event_]


# --------------------------------------------------------------------------- pipeline shapes (items 4, 5)
SHAPES = {
    "column_transformer": lambda: make_private_pipeline(
        ColumnTransformer([("num", _scaler(), [0, 1, 2]), ("rest", "passthrough", [3])]), _ridge()),
    "nested_column_transformer": lambda: make_private_pipeline(
        ColumnTransformer([("inner", make_pipeline(_scaler(), FunctionTransformer()), [0, 1]),
                           ("mm", DPMinMaxScaler(bounds=(-4, 4)), [2, 3])]), _ridge()),
    "feature_union": lambda: make_private_pipeline(
        FeatureUnion([("a", _scaler()), ("b", DPMinMaxScaler(bounds=(-4, 4)))]), _ridge()),
    "pipeline_in_pipeline": lambda: make_private_pipeline(make_pipeline(_scaler(), FunctionTransformer()), _ridge()),
}


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_every_release_of_a_pipeline_is_recorded_once_within_the_total(shape, tmp_path):
    ledger = PrivacyLedger(max_epsilon=1.0, path=tmp_path / "l.jsonl")
    pipe = SHAPES[shape]().set_params(ledger=ledger).fit(X, Y)
    released = _leaf_events(pipe)
    assert len(released) == len(budget_split(pipe)) >= 2  # every DP step at any depth has a share
    assert sum(b.epsilon for b in budget_split(pipe)) == pytest.approx(1.0)
    assert len(ledger) == 1 and ledger.pending == []
    # The store folds equal events before composing (linear reading), so its PLD is discretized
    # in another order than compose_epsilon's: both are pessimistic bounds, equal to 1e-5.
    assert ledger.total_epsilon() == pytest.approx(compose_epsilon(released, 1e-5), rel=1e-5)
    assert ledger.total_epsilon() <= 1.0


def test_nested_budget_split_names_full_paths():
    pipe = SHAPES["nested_column_transformer"]()
    assert [b.name for b in budget_split(pipe)] == ["columntransformer__inner__dpstandardscaler",
                                                    "columntransformer__mm", "dpridge"]
    by_path = make_private_pipeline(FeatureUnion([("a", _scaler()), ("b", DPMinMaxScaler())]), _ridge(),
                                    split={"featureunion__a": 1, "b": 1, "dpridge": 2})
    assert [b.epsilon for b in budget_split(by_path)] == pytest.approx([0.25, 0.25, 0.5])


@pytest.mark.parametrize("step", [StandardScaler(), OneHotEncoder(),
                                  ColumnTransformer([("s", StandardScaler(), [0])], remainder="passthrough")])
def test_non_private_learners_are_refused_by_name(step):
    with pytest.raises(ValueError, match="learns from the data without privacy"):
        make_private_pipeline(step, _ridge())


@pytest.mark.parametrize("split", [5, "abc", True])
def test_split_of_the_wrong_type_is_named(split):
    with pytest.raises(ValueError, match="split"):
        make_private_pipeline(_scaler(), _ridge(), split=split)


def test_a_leaf_with_another_ledger_is_refused(led, tmp_path):
    other = PrivacyLedger(max_epsilon=5.0, path=tmp_path / "other.jsonl")
    before = _bytes(led)
    with pytest.raises(ValueError, match="one ledger"):
        make_private_pipeline(DPStandardScaler(bounds=(-4, 4), ledger=other), _ridge(), ledger=led).fit(X, Y)
    assert _bytes(led) == before and len(other) == 0


def test_dp_search_over_a_private_pipeline_records_one_release(tmp_path):
    ledger = PrivacyLedger(max_epsilon=2.0, path=tmp_path / "l.jsonl")
    pipe = make_private_pipeline(_scaler(), DPLogisticRegression(random_state=0))
    search = DPGridSearchCV(pipe, {"dplogisticregression__C": [0.1, 1.0]}, epsilon=2.0, delta=1e-5,
                            selection="exhaustive", ledger=ledger, random_state=0).fit(X, YC)
    assert ledger.events == [search.dp_event_] and ledger.pending == []
    assert ledger.total_epsilon() <= 2.0 + 1e-9
    with pytest.raises(ValueError, match="sets"):
        DPGridSearchCV(pipe, {"dpstandardscaler__epsilon": [0.1]}, epsilon=2.0, delta=1e-5).fit(X, YC)


def test_private_pipeline_clones_and_sets_params_like_an_estimator():
    pipe = make_private_pipeline(_scaler(), _ridge(), epsilon=2.0, composition="basic")
    twin = clone(pipe)
    assert type(twin) is type(pipe) and twin.get_params()["epsilon"] == 2.0
    twin.set_params(epsilon=1.0, dpridge__alpha=3.0)
    assert twin.get_params()["dpridge__alpha"] == 3.0 and pipe.get_params()["dpridge__alpha"] != 3.0
    twin.fit(X, Y)
    assert [b.epsilon for b in twin.budget_split_] == pytest.approx([0.25, 0.75])
    gs = GridSearchCV(pipe, {"dpridge__alpha": [0.1, 1.0]}, cv=2).fit(X, Y)
    assert gs.best_estimator_.dp_event_ is not None


def test_private_pipeline_passes_check_estimator_as_a_pipeline_does():
    """scikit-learn's checks, except the two every Pipeline fails (it fits its steps in place)."""
    from sklearn.utils.estimator_checks import check_estimator

    pipe = make_private_pipeline(_scaler(), DPRidge(bounds_y=(-3, 3), random_state=0))
    inherent = {name: "a Pipeline fits its steps in place" for name in
                ("check_estimators_overwrite_params", "check_dont_overwrite_parameters")}
    results = check_estimator(pipe, on_fail=None, expected_failed_checks=inherent)
    assert [r["check_name"] for r in results if r["status"] == "failed"] == []


def test_a_private_pipeline_nested_in_another_is_one_share(tmp_path):
    ledger = PrivacyLedger(max_epsilon=1.0, path=tmp_path / "l.jsonl")
    inner = make_private_pipeline(_scaler(), DPMinMaxScaler(bounds=(-3, 3)))
    pipe = make_private_pipeline(inner, _ridge(), ledger=ledger)
    assert [b.name for b in budget_split(pipe)] == ["privatepipeline", "dpridge"]
    pipe.fit(X, Y)
    released = _leaf_events(pipe)
    assert len(released) == 3 and len(ledger) == 1
    # The store folds equal events before composing (linear reading), so its PLD is discretized
    # in another order than compose_epsilon's: both are pessimistic bounds, equal to 1e-5.
    assert ledger.total_epsilon() == pytest.approx(compose_epsilon(released, 1e-5), rel=1e-5)
    assert ledger.total_epsilon() <= 1.0


def test_a_parallel_column_transformer_is_accounted(tmp_path):
    """n_jobs=2: the steps still report to the pipeline's release (they fit in the calling thread)."""
    ledger = PrivacyLedger(max_epsilon=1.0, path=tmp_path / "l.jsonl")
    ct = ColumnTransformer([("a", _scaler(), [0, 1]), ("b", DPMinMaxScaler(bounds=(-4, 4)), [2, 3])], n_jobs=2)
    pipe = make_private_pipeline(ct, _ridge(), ledger=ledger).fit(X, Y)
    released = _leaf_events(pipe)
    assert len(released) == 3 and len(ledger) == 1
    assert ledger.total_epsilon() == pytest.approx(compose_epsilon(released, 1e-5), rel=1e-9)


# ------------------------------------------------------------------------------
# Validation first, then the ledger reservation (issue 8 items 0e, 2, 4, 7, 9, 10, 11; issue 9.1).


def _ledger(tmp_path, name="led.jsonl", cap=2.5):
    return PrivacyLedger(max_epsilon=cap, delta=1e-5, path=tmp_path / name)


REPRODUCERS = {
    "bounds_y reversed": lambda led: (DPRidge(bounds_y=(400, 0), delta=1e-6, ledger=led), "regression"),
    "one class": lambda led: (DPLogisticRegression(delta=1e-6, ledger=led), "one_class"),
    "classes mismatch": lambda led: (DPLogisticRegression(delta=1e-6, classes=[5, 6], ledger=led), "binary"),
    "sparse one class": lambda led: (DPSparseLogisticRegression(3, delta=1e-6, ledger=led), "one_class"),
    "three classes, binary model": lambda led: (DPSparseLogisticRegression(3, delta=1e-6, ledger=led), "three"),
    "batch_size on frank_wolfe": lambda led: (DPLasso(batch_size=10, delta=1e-6, bounds_y=(25, 346), ledger=led),
                                              "regression"),
    "NaN in X": lambda led: (DPRidge(delta=1e-6, bounds_y=(25, 346), ledger=led), "nan"),
}


@pytest.mark.usefixtures("_no_clipping_warnings")
@pytest.mark.parametrize("case", sorted(REPRODUCERS))
def test_failed_validation_reserves_nothing(case, diabetes_full, tmp_path):
    """Issue 8 item 2: a fit that raises in validation leaves the ledger untouched."""
    X, y = diabetes_full
    led = _ledger(tmp_path)
    est, kind = REPRODUCERS[case](led)
    yk = {"regression": y, "one_class": np.zeros_like(y), "binary": (y > 140).astype(int),
          "three": np.digitize(y, [100, 200]), "nan": y}[kind]
    Xk = X.copy()
    if kind == "nan":
        Xk[0, 0] = np.nan
    before = led.remaining()
    with pytest.raises(ValueError):
        est.fit(Xk, yk)
    assert led.pending == [] or len(led.pending) == 0
    assert led.remaining() == before
    DPRidge(bounds_y=(25, 346), delta=1e-6, ledger=led, random_state=0).fit(X, y)  # later fits are accepted
    assert len(led) == 1


@pytest.mark.usefixtures("_no_clipping_warnings")
def test_reserved_event_is_the_recorded_event(diabetes_full, tmp_path):
    X, y = diabetes_full
    led = _ledger(tmp_path)
    seen = []
    real = led.reserve

    def spy(epsilon, delta, *, event=None, label=None):
        seen.append(event)
        return real(epsilon, delta, event=event, label=label)

    led.reserve = spy
    est = DPLasso(bounds_y=(25, 346), ledger=led, random_state=0).fit(X, y)
    assert seen == [est.dp_event_]


@pytest.mark.usefixtures("_no_clipping_warnings")
def test_random_state_reduced_to_256_bits():
    """Issue 8 item 0e: a RandomState yields 256 bits of entropy (one rule for every fit), not a 31-bit seed."""
    rng = _make_rng(np.random.RandomState(0))
    entropy = rng.bit_generator.seed_seq.entropy
    assert len(entropy) == 8 and all(0 <= int(v) < 2**32 for v in entropy)  # 8 x 32 = 256 bits
    assert max(int(v) for v in entropy) >= 2**31 or len(set(entropy)) == 8
    same = _make_rng(np.random.RandomState(0)).random()
    assert same == _make_rng(np.random.RandomState(0)).random()  # reproducible from the RandomState
    # ints and None keep numpy's own mapping (seeded numbers do not change)
    assert _make_rng(7).random() == np.random.default_rng(7).random()


# ------------------------------------------------------------------------------
# Issue 8 acceptance: every numbered reproducer, as written in the issue, end to end.
#
# Standardized diabetes ``X, y`` and ``led = PrivacyLedger(...)``, through the public API
# only. Each test asserts the fixed behaviour; the detailed unit tests and the statistical
# audits at the strength live next to the code they cover (named per test).


BOUNDS = (25, 346)


@pytest.fixture
def capped_led(tmp_path):
    return PrivacyLedger(max_epsilon=2.5, delta=1e-5, path=tmp_path / "capped_led.jsonl")


def test_random_state_instance_is_not_reduced_to_31_bits(diabetes_full):
    X, y = diabetes_full
    a = DPRidge(bounds_y=BOUNDS, random_state=np.random.RandomState(0)).fit(X, y)
    b = DPRidge(bounds_y=BOUNDS, random_state=np.random.RandomState(0)).fit(X, y)
    np.testing.assert_array_equal(a.coef_, b.coef_)
    seed31 = np.random.RandomState(0).randint(np.iinfo(np.int32).max)  # the old reduction
    c = DPRidge(bounds_y=BOUNDS, random_state=int(seed31)).fit(X, y)
    assert not np.array_equal(a.coef_, c.coef_)


def test_failed_fits_release_their_reservation(diabetes_full, capped_led):
    X, y = diabetes_full
    failing = [(DPRidge(bounds_y=(400, 0), delta=1e-6, ledger=capped_led), y),
               (DPLogisticRegression(delta=1e-6, ledger=capped_led), np.ones_like(y)),
               (DPLogisticRegression(delta=1e-6, ledger=capped_led, classes=[0, 1]), np.digitize(y, [100, 200]))]
    for est, target in failing:
        with pytest.raises(ValueError):
            est.fit(X, target)
    X_nan = X.copy()
    X_nan[0, 0] = np.nan
    with pytest.raises(ValueError):
        DPGridSearchCV(DPRidge(bounds_y=BOUNDS), {"alpha": [1.0]}, epsilon=1.0, delta=1e-6, ledger=capped_led).fit(X_nan, y)
    assert capped_led.pending == [] and capped_led.remaining() == 2.5
    DPRidge(bounds_y=BOUNDS, delta=1e-6, ledger=capped_led, random_state=0).fit(X, y)  # later fits are accepted
    assert len(capped_led) == 1
