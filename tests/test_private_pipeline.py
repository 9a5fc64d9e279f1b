"""One budget for a whole pipeline: the split, the ledger, and the issue-10 acceptance (cheap version)."""

import warnings

import numpy as np
from dp_accounting import dp_event
import pytest
from sklearn.datasets import load_breast_cancer
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer

from benchmarks.private_pipeline import documented_bounds_breast_cancer
from dp_sklearn import (
    ClippingWarning,
    DPLogisticRegression,
    DPRidge,
    PrivacyLedger,
    budget_split,
    make_private_pipeline,
)
from dp_sklearn.pipeline import StepBudget
from dp_sklearn.preprocessing import DPMinMaxScaler, DPStandardScaler

X_BC, Y_BC = load_breast_cancer(return_X_y=True)
PUBLIC_BOUNDS = documented_bounds_breast_cancer()


def _quiet():
    warnings.simplefilter("ignore", ClippingWarning)
    warnings.filterwarnings("ignore", message=".*delta=.*")


def test_default_split_gives_the_model_three_quarters():
    pipe = make_private_pipeline(DPStandardScaler(), DPMinMaxScaler(), DPLogisticRegression(),
                                 epsilon=2.0, delta=1e-5)
    split = budget_split(pipe)
    assert [s.name for s in split] == ["dpstandardscaler", "dpminmaxscaler", "dplogisticregression"]
    assert [s.epsilon for s in split] == pytest.approx([0.25, 0.25, 1.5])
    assert [s.delta for s in split] == pytest.approx([1e-5 / 6] * 3)
    assert sum(s.epsilon for s in split) == pytest.approx(2.0)


def test_non_dp_final_step_and_single_step():
    ft = FunctionTransformer()
    pipe = make_private_pipeline(DPStandardScaler(), DPMinMaxScaler(), ft, epsilon=1.0)
    assert [s.epsilon for s in budget_split(pipe)] == [0.5, 0.5]
    pipe = make_private_pipeline(ft, DPLogisticRegression(), epsilon=0.3, delta=1e-6)
    assert budget_split(pipe) == [StepBudget("dplogisticregression", 0.3, 5e-7)]


def test_split_override_by_list_and_by_name():
    steps = (DPStandardScaler(), DPLogisticRegression())
    by_list = make_private_pipeline(*steps, epsilon=1.0, split=[1, 3])
    by_name = make_private_pipeline(*steps, epsilon=1.0, split={"dplogisticregression": 0.6,
                                                                "dpstandardscaler": 0.2})
    assert [s.epsilon for s in budget_split(by_list)] == pytest.approx([0.25, 0.75])
    assert [s.epsilon for s in budget_split(by_name)] == pytest.approx([0.25, 0.75])


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"split": [1.0]}, "one weight per DP step"),
        ({"split": [1.0, -1.0]}, "finite numbers > 0"),
        ({"split": {"dpstandardscaler": 1.0}}, "every DP step"),
        ({"epsilon": 0.0}, "epsilon"),
        ({"epsilon": np.inf}, "epsilon"),
        ({"delta": 1.0}, "delta"),
    ],
)
def test_bad_split_and_budget(kwargs, match):
    with pytest.raises(ValueError, match=match):
        make_private_pipeline(DPStandardScaler(), DPLogisticRegression(), **kwargs)


def test_no_dp_step_and_non_pipeline():
    with pytest.raises(ValueError, match="at least one DP step"):
        make_private_pipeline(FunctionTransformer())
    with pytest.raises(TypeError, match="Pipeline"):
        budget_split(DPLogisticRegression())


def test_steps_are_cloned():
    sc = DPStandardScaler(epsilon=9.0)
    make_private_pipeline(sc, DPLogisticRegression(), epsilon=1.0)
    assert sc.epsilon == 9.0


@pytest.mark.parametrize("bounds", [PUBLIC_BOUNDS, None], ids=["public-bounds", "private-bounds"])
def test_ledger_at_the_total_accepts_the_whole_fit(bounds):
    _quiet()
    led = PrivacyLedger(max_epsilon=1.0, delta=1e-5)
    try:
        pipe = make_private_pipeline(DPStandardScaler(bounds=bounds, random_state=0),
                                     DPLogisticRegression(random_state=0), epsilon=1.0, delta=1e-5, ledger=led)
        pipe.fit(X_BC, Y_BC)
        assert len(led) == 1 and led.pending == []  # one composed release, reserved and recorded once
        assert led.total_epsilon() <= 1.0
        assert [r.label for r in led.records] == ["PrivatePipeline(dpstandardscaler, dplogisticregression)"]
        assert led.events == [pipe.dp_event_]
    finally:
        led.delete()


def test_regression_pipeline_under_one_ledger():
    _quiet()
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 4))
    y = X @ np.array([1.0, -1.0, 0.5, 0.0]) + 0.1 * rng.normal(size=300)
    led = PrivacyLedger(max_epsilon=2.0, delta=1e-5)
    try:
        pipe = make_private_pipeline(DPStandardScaler(bounds=(-4, 4), random_state=0),
                                     DPRidge(bounds_y=(-5, 5), random_state=0), epsilon=2.0, delta=1e-5, ledger=led)
        pipe.fit(X, y)
        assert led.total_epsilon() <= 2.0
    finally:
        led.delete()


def _acceptance_accuracy(bounds, seeds):
    _quiet()
    accs, totals = [], []
    for seed in seeds:
        Xtr, Xte, ytr, yte = train_test_split(X_BC, Y_BC, test_size=0.3, random_state=seed)
        led = PrivacyLedger(max_epsilon=1.0, delta=1e-5)
        pipe = make_pipeline(
            DPStandardScaler(epsilon=0.25, delta=1e-6, bounds=bounds, ledger=led, random_state=seed),
            DPLogisticRegression(epsilon=0.75, delta=1e-6, ledger=led, random_state=seed),
        ).fit(Xtr, ytr)
        accs.append(pipe.score(Xte, yte))
        totals.append(led.total_epsilon())
        led.delete()
    return float(np.mean(accs)), max(totals)


def test_issue10_breast_cancer_with_public_bounds():
    # Cheap version of benchmarks/private_pipeline.py (20 seeds: 0.834); with the documented
    # public bounds, not the trivial predictor (0.63) that raw features give.
    acc, total = _acceptance_accuracy(PUBLIC_BOUNDS, range(5))
    assert total <= 1.0
    assert acc >= 0.78


def test_issue10_breast_cancer_acceptance_as_stated():
    # bounds=None at n=398, epsilon 0.25: per-feature ranges are out of reach, so
    # strategy="auto" runs the global scale (benchmarks/private_pipeline.py, 20 seeds;
    # per-feature ranges gave 0.632, the trivial predictor). 10 seeds: one seed's 171 test
    # rows vary by about 0.03.
    acc, total = _acceptance_accuracy(None, range(10))
    assert total <= 1.0
    assert acc >= 0.85


def test_benchmark_private_rows_fit_raw_features_with_the_total_budget():
    """The utility benchmark's fully private rows: raw features, one total epsilon, useful accuracy."""
    from benchmarks.datasets import load_breast_cancer_ds
    from benchmarks.private_rows import private_combos, raw_view
    from benchmarks.utility import _evaluate

    _quiet()
    ds = load_breast_cancer_ds()
    raw = raw_view(ds)
    assert np.abs(raw.X_train).max() > 100  # raw features (area), not the standardized view
    combo = next(c for c in private_combos(ds, _families(ds)) if c.family == "private-logistic-l2")
    scores = []
    for seed in range(3):
        pipe = combo.make(epsilon=1.0, delta=1e-5, random_state=seed).fit(raw.X_train, raw.y_train)
        assert sum(s.epsilon for s in budget_split(pipe)) == pytest.approx(1.0)
        scores.append(_evaluate(pipe, raw)["accuracy"])
    # seeds 0-11: mean 0.882 with float noise, 0.870 with the exact layer (sd 0.045 per seed);
    # seeds 0-2 alone measured 0.932 before, 0.885 after. Trivial: 0.648.
    assert np.mean(scores) >= 0.80


def _families(ds):
    from benchmarks.common import discover_combos

    return discover_combos(ds.task, probe=False)[0]


def test_minmax_default_box_is_centered_and_serves_the_model():
    """DPMinMaxScaler's default (-1, 1): diabetes behind it keeps a useful R^2 ((0, 1) loses most of it)."""
    from sklearn.datasets import load_diabetes
    from sklearn.metrics import r2_score

    _quiet()
    X, y = load_diabetes(return_X_y=True)
    bound = 4.0 / np.sqrt(442)  # documented: every column has standard deviation 1 / sqrt(442)
    scores = {}
    for box in [None, (0, 1)]:
        r2 = []
        for seed in range(6):
            Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, random_state=seed)
            kw = {} if box is None else {"feature_range": box}
            pipe = make_private_pipeline(DPMinMaxScaler(bounds=(-bound, bound), random_state=seed, **kw),
                                         DPRidge(bounds_y=(25, 346), random_state=seed), epsilon=2.0)
            r2.append(r2_score(yte, pipe.fit(Xtr, ytr).predict(Xte)))
        scores[box] = np.median(r2)
    assert DPMinMaxScaler().feature_range == (-1, 1)
    assert scores[None] >= 0.2 and scores[(0, 1)] < scores[None] - 0.1, scores  # measured 0.260 and 0.127


def test_preprocessing_share_follows_the_columns_each_step_reads():
    """A scaler of one publicly bounded column does not take half of the preprocessing budget
    from the scaler of eight others: the default split weighs the explicit column lists."""
    from sklearn.compose import ColumnTransformer

    from dp_sklearn import DPRidge, DPStandardScaler, budget_split, make_private_pipeline

    ct = ColumnTransformer([("one", DPStandardScaler(bounds=(0, 100)), [0]),
                            ("eight", DPStandardScaler(), list(range(1, 9))),
                            ("rest", DPStandardScaler(), slice(9, 10))])  # a slice counts as 1
    split = {b.name: b.epsilon for b in budget_split(make_private_pipeline(ct, DPRidge(), epsilon=2.0))}
    assert split["dpridge"] == pytest.approx(1.5)
    assert split["columntransformer__one"] == pytest.approx(0.5 / 10)
    assert split["columntransformer__eight"] == pytest.approx(0.5 * 8 / 10)
    assert split["columntransformer__rest"] == pytest.approx(0.5 / 10)
    assert sum(split.values()) == pytest.approx(2.0)


def test_default_split_gives_the_model_what_a_global_scale_does_not_need():
    """With the default split, a scaler that runs the global scale (few rows) keeps only the
    epsilon at which its one Laplace release has noise GLOBAL_NOISE nats; the model gets the rest.
    The split reads n and p (public) at fit; budget_split of an unfitted pipeline is the fixed one."""
    from sklearn.compose import ColumnTransformer

    from dp_sklearn.preprocessing._global import global_epsilon

    rng = np.random.default_rng(0)
    n, p = 300, 7
    X = rng.normal(size=(n, p)) * np.array([1, 10, 100, 1000, 1, 1, 1])
    y = (X[:, 0] > 0).astype(int)
    need = global_epsilon(n, p, (-1e6, 1e6))  # 0.241 < 0.25
    model = DPLogisticRegression(classes=[0, 1], random_state=0)
    for eps in (1.0, 2.0):
        pipe = make_private_pipeline(DPStandardScaler(), model, epsilon=eps, composition="basic")
        assert [b.epsilon for b in budget_split(pipe)] == pytest.approx([0.25 * eps, 0.75 * eps])
        pipe.fit(X, y)
        assert pipe[0].strategy_ == "global"
        assert [b.epsilon for b in pipe.budget_split_] == pytest.approx([need, eps - need])
        assert pipe[0].epsilon_ == pytest.approx(need) and pipe[-1].epsilon_ == pytest.approx(eps - need)
        assert pipe[0].dp_event_ == dp_event.LaplaceDpEvent(1.0 / need)
    # at epsilon 0.5 the default 0.125 is below the need: unchanged
    pipe = make_private_pipeline(DPStandardScaler(), model, epsilon=0.5, composition="basic").fit(X, y)
    assert [b.epsilon for b in pipe.budget_split_] == pytest.approx([0.125, 0.375])
    # many rows: per-feature statistics, which keep their share
    big = np.resize(X, (5000, p))
    pipe = make_private_pipeline(DPStandardScaler(), model, epsilon=1.0, composition="basic").fit(big, np.resize(y, 5000))
    assert pipe[0].strategy_ != "global"
    assert [b.epsilon for b in pipe.budget_split_] == pytest.approx([0.25, 0.75])
    # public bounds, an explicit split, or a strategy other than auto/global: unchanged
    for scaler, split in ((DPStandardScaler(bounds=(-1e4, 1e4)), None), (DPStandardScaler(), [1, 3]),
                          (DPStandardScaler(strategy="robust"), None)):
        pipe = make_private_pipeline(scaler, model, epsilon=1.0, split=split, composition="basic").fit(X, y)
        assert [b.epsilon for b in pipe.budget_split_] == pytest.approx([0.25, 0.75])
    # inside a ColumnTransformer: p is the length of the explicit column list
    ct = ColumnTransformer([("num", DPStandardScaler(), [0, 1, 2, 3])], remainder="drop")
    pipe = make_private_pipeline(ct, model, epsilon=1.0, composition="basic").fit(X, y)
    need4 = global_epsilon(n, 4, (-1e6, 1e6))
    assert [b.epsilon for b in pipe.budget_split_] == pytest.approx([need4, 1.0 - need4])
    # a selector resolved only against X (a slice): the column count is unknown, the split fixed
    ct = ColumnTransformer([("num", DPStandardScaler(), slice(0, 4))], remainder="drop")
    pipe = make_private_pipeline(ct, model, epsilon=1.0, composition="basic").fit(X, y)
    assert [b.epsilon for b in pipe.budget_split_] == pytest.approx([0.25, 0.75])
