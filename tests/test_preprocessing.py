"""DPStandardScaler and DPMinMaxScaler: API, accounting, ledger protocol, public output bounds."""

import warnings

import numpy as np
import pytest
from dp_accounting import dp_event
from scipy.stats import norm
from sklearn.utils.estimator_checks import check_estimator

from dp_sklearn import BudgetExceededError, PrivacyLedger
from dp_sklearn.ledger import compose_epsilon
from dp_sklearn.preprocessing import DPMinMaxScaler, DPStandardScaler

RNG = np.random.default_rng(0)
X = RNG.normal([10.0, -3.0, 0.5], [4.0, 1.0, 0.1], size=(4000, 3))
BOUNDS = ([-10.0, -8.0, 0.0], [30.0, 2.0, 1.0])


@pytest.fixture
def ledger():
    led = PrivacyLedger(max_epsilon=2.0, delta=1e-5)
    yield led
    led.delete()


@pytest.mark.parametrize(
    "est", [DPStandardScaler(random_state=0, bounds=(-10, 10)), DPStandardScaler(random_state=0),
            DPMinMaxScaler(random_state=0)], ids=["standard-bounds", "standard-None", "minmax"])
def test_scikit_learn_checks(est):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results = check_estimator(est, on_fail=None)
    failed = [(r["check_name"], str(r["exception"])) for r in results if r["status"] == "failed"]
    assert failed == []


def test_standard_scaler_utility_with_public_bounds():
    sc = DPStandardScaler(epsilon=1.0, bounds=BOUNDS, random_state=1).fit(X)
    assert np.allclose(sc.mean_, [10.0, -3.0, 0.5], atol=[0.3, 0.1, 0.01])
    assert np.allclose(sc.scale_, [4.0, 1.0, 0.1], rtol=0.15)
    Z = sc.transform(X)
    assert np.allclose(Z.mean(axis=0), 0, atol=0.1) and np.allclose(Z.std(axis=0), 1, atol=0.15)


def test_standard_scaler_private_bounds_with_enough_data():
    # bounds=None: the exponential-mechanism range is accurate when n is large enough.
    Xl = np.random.default_rng(2).normal(5.0, 2.0, size=(50_000, 2))
    sc = DPStandardScaler(epsilon=1.0, search_range=(-1e4, 1e4), quantile_range=(0.25, 0.75),
                          random_state=3).fit(Xl)
    lo, hi = sc.bounds_
    fence = 2 * (0.6745 + 1.5 * 2 * 0.6745)  # Tukey's fences of N(5, 2^2): 5 -+ 5.396
    assert np.allclose(lo, 5 - fence, atol=0.3) and np.allclose(hi, 5 + fence, atol=0.3)
    assert np.allclose(sc.mean_, 5.0, atol=0.1)
    # quantile_range="auto" (default): the most extreme levels the budget locates at this n,
    # fenced the same way: 5 -+ 2 (z + 3 z), z the normal quantile of the upper level.
    sc = DPStandardScaler(epsilon=1.0, search_range=(-1e4, 1e4), random_state=3).fit(Xl)
    q = sc.quantile_range_[0]
    assert 0.01 <= q < 0.05
    z = norm.ppf(1.0 - q)
    np.testing.assert_allclose(sc.bounds_[0], 5 - 8 * z, atol=0.1 * 8 * z)
    np.testing.assert_allclose(sc.bounds_[1], 5 + 8 * z, atol=0.1 * 8 * z)
    np.testing.assert_allclose(np.sqrt(sc.var_), 2.0, rtol=0.05)  # the range clips almost nothing


def test_epsilon_inf_is_exact():
    sc = DPStandardScaler(epsilon=np.inf, bounds=BOUNDS, output_clip=None).fit(X)
    Xc = np.clip(X, *BOUNDS)
    assert np.allclose(sc.mean_, Xc.mean(axis=0)) and np.allclose(sc.var_, Xc.var(axis=0))
    assert isinstance(sc.dp_event_, dp_event.NonPrivateDpEvent)
    mm = DPMinMaxScaler(epsilon=np.inf, quantile_range=(0.0, 1.0)).fit(X)
    assert np.allclose(mm.data_min_, X.min(axis=0)) and np.allclose(mm.data_max_, X.max(axis=0))


@pytest.mark.parametrize("bounds", [BOUNDS, None])
@pytest.mark.parametrize("delta", [1e-6, 0.0])
def test_event_composes_within_epsilon(bounds, delta):
    sc = DPStandardScaler(epsilon=0.5, delta=delta, bounds=bounds, random_state=0).fit(X)
    assert (sc.epsilon_, sc.delta_) == (0.5, delta)
    at = delta if delta > 0 else 1e-12  # Laplace PLD is finite only for delta > 0
    assert compose_epsilon([sc.dp_event_], at) <= 0.5 * (1 + 1e-3)
    n_leaves = 2 if bounds is not None else 3
    assert len(sc.dp_event_.events) == n_leaves


def test_minmax_event_and_output_range():
    mm = DPMinMaxScaler((-1, 1), epsilon=5.0, delta=1e-6, bounds=BOUNDS, random_state=0).fit(X)
    assert compose_epsilon([mm.dp_event_], 1e-6) <= 5.0
    Z = mm.transform(X * 100)
    assert Z.min() >= -1 and Z.max() <= 1
    assert np.allclose(mm.output_bound_, 1.0) and mm.output_norm_ == pytest.approx(np.sqrt(3))
    # the private range is near the 1% / 99% quantiles with this much data
    assert np.allclose(mm.data_min_, np.quantile(X, 0.01, axis=0), atol=[0.5, 0.15, 0.02])
    inner = mm.transform(X[:10])
    assert np.allclose(mm.inverse_transform(inner), np.clip(X[:10], mm.data_min_, mm.data_max_))


@pytest.mark.parametrize("output_clip", [3.0, None])
def test_noise_dominated_variance_gives_finite_scale(output_clip):
    # n=20, p=3 at epsilon 0.05: the released variance is pure noise (often 0); the floor keeps
    # every scale positive and every output finite.
    sc = DPStandardScaler(epsilon=0.05, bounds=BOUNDS, output_clip=output_clip, random_state=0).fit(X[:20])
    assert np.all(sc.scale_ > 0) and np.all(np.isfinite(sc.transform(X)))


def test_output_bound_holds_for_any_input():
    sc = DPStandardScaler(epsilon=0.3, bounds=BOUNDS, random_state=4).fit(X)
    wild = np.random.default_rng(5).standard_cauchy((500, 3)) * 1e6
    Z = sc.transform(wild)
    assert np.all(np.abs(Z) <= sc.output_bound_ + 1e-12)
    assert np.all(np.linalg.norm(Z, axis=1) <= sc.output_norm_ + 1e-9)
    assert np.all(sc.output_bound_ <= 3.0)


def test_fitted_attributes_are_mechanism_outputs_or_public():
    sc = DPStandardScaler(epsilon=1.0, bounds=BOUNDS, random_state=0).fit(X)
    fitted = {k for k in vars(sc) if k.endswith("_") and not k.startswith("_")}
    assert fitted == {"mean_", "var_", "scale_", "bounds_", "output_bound_", "output_norm_", "dp_event_",
                      "epsilon_", "delta_", "n_features_in_", "n_samples_seen_", "strategy_", "quantile_range_"}
    assert not any(isinstance(v, np.random.Generator) for v in vars(sc).values())


def test_ledger_reserves_exact_event_and_records(ledger, monkeypatch):
    seen = []
    orig = PrivacyLedger.reserve

    def spy(self, epsilon, delta, *, event=None, label=None):
        seen.append(event)
        return orig(self, epsilon, delta, event=event, label=label)

    monkeypatch.setattr(PrivacyLedger, "reserve", spy)
    sc = DPStandardScaler(epsilon=0.5, delta=1e-6, bounds=BOUNDS, ledger=ledger, random_state=0).fit(X)
    assert seen == [sc.dp_event_]
    assert ledger.events == [sc.dp_event_] and ledger.pending == []


def test_budget_exceeded_releases_nothing(ledger):
    DPStandardScaler(epsilon=1.5, bounds=BOUNDS, ledger=ledger, random_state=0).fit(X)
    sc = DPStandardScaler(epsilon=1.5, bounds=BOUNDS, ledger=ledger, random_state=0)
    with pytest.raises(BudgetExceededError):
        sc.fit(X)
    assert not hasattr(sc, "mean_") and len(ledger) == 1 and ledger.pending == []


def test_reservation_released_if_fit_fails_before_noise(ledger, monkeypatch):
    def boom(self, X, rng, bounds, plan):
        raise RuntimeError("fails before any noise draw")

    monkeypatch.setattr(DPStandardScaler, "_release", boom)
    with pytest.raises(RuntimeError):
        DPStandardScaler(bounds=BOUNDS, ledger=ledger).fit(X)
    assert ledger.pending == [] and len(ledger) == 0


def test_invalid_parameters_reserve_nothing(ledger):
    with pytest.raises(ValueError, match="bounds"):
        DPStandardScaler(bounds=([0, 0], [1, 1]), ledger=ledger).fit(X)
    assert ledger.pending == [] and len(ledger) == 0


@pytest.mark.parametrize("cls", [DPStandardScaler, DPMinMaxScaler])
def test_bounds_whose_variance_overflows_are_refused(cls, ledger):
    # Issue 19 item 11: bounds=(-1e300, 1e300) released an infinite var_ and inverse_transform gave NaN.
    with pytest.raises(ValueError, match="upper - lower <= 1e\\+150"):
        cls(bounds=(-1e300, 1e300), ledger=ledger).fit(X)
    assert ledger.pending == [] and len(ledger) == 0
    sc = cls(bounds=(-1e149, 1e149), random_state=0).fit(X)  # the widest accepted range stays finite
    Z = sc.transform(X)
    assert np.isfinite(Z).all() and np.isfinite(sc.inverse_transform(Z)).all()
    assert all(np.isfinite(v).all() for k, v in vars(sc).items() if k.endswith("_") and isinstance(v, np.ndarray))


@pytest.mark.parametrize(
    "est, match",
    [
        (DPStandardScaler(bounds=(1.0, 0.0)), "bounds"),
        (DPStandardScaler(bounds=(0.0,)), "bounds"),
        (DPStandardScaler(search_range=(5, 5)), "search_range"),
        (DPStandardScaler(quantile_range=(0.9, 0.1)), "quantile_range"),
        (DPStandardScaler(epsilon=0), "epsilon"),
        (DPStandardScaler(delta=1.0), "delta"),
        (DPStandardScaler(bounds_share=1.0), "bounds_share"),
        (DPMinMaxScaler(feature_range=(1, 0)), "feature_range"),
        (DPMinMaxScaler(random_state="x"), "random_state"),
    ],
)
def test_bad_parameters_name_the_parameter(est, match):
    with pytest.raises(ValueError, match=match):
        est.fit(X)


def test_feature_names_and_pandas_output():
    pd = pytest.importorskip("pandas")
    df = pd.DataFrame(X, columns=["a", "b", "c"])
    sc = DPStandardScaler(bounds=BOUNDS, random_state=0).set_output(transform="pandas").fit(df)
    out = sc.transform(df)
    assert list(out.columns) == ["a", "b", "c"]
    assert list(sc.get_feature_names_out()) == ["a", "b", "c"]
    assert list(sc.feature_names_in_) == ["a", "b", "c"]


def test_inverse_transform_round_trip_inside_box():
    sc = DPStandardScaler(bounds=BOUNDS, output_clip=None, random_state=0).fit(X)
    assert np.allclose(sc.inverse_transform(sc.transform(X[:50])), np.clip(X[:50], *BOUNDS))


def test_docstring_examples():
    import doctest

    import dp_sklearn._private_stats._quantiles as quantiles
    import dp_sklearn.pipeline as pipeline
    import dp_sklearn.preprocessing._minmax as minmax
    import dp_sklearn.preprocessing._scalers as scalers

    for module in (scalers, minmax, quantiles, pipeline):
        result = doctest.testmod(module)
        assert result.failed == 0 and result.attempted > 0
