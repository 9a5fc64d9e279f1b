"""make_private_column_transformer: a DataFrame's public schema -> private scalers + one-hot columns."""

import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone
from sklearn.compose import ColumnTransformer
from sklearn.preprocessing import OneHotEncoder

from dp_sklearn import DPLogisticRegression, PrivacyLedger
from dp_sklearn.compose import make_private_column_transformer
from dp_sklearn.composition import epsilon_of_event
from dp_sklearn.pipeline import make_private_pipeline
from dp_sklearn.preprocessing import DPMinMaxScaler, DPStandardScaler


def _frame(n=2000, seed=0):
    rng = np.random.default_rng(seed)
    region = rng.choice(["north", "south", "west"], size=n)
    return pd.DataFrame({
        "age": rng.integers(18, 90, size=n),
        "income": rng.lognormal(10.5, 0.6, size=n),
        "region": pd.Categorical(region, categories=["north", "south", "west", "east"]),
        "plan": rng.choice(["basic", "gold"], size=n).astype(object),
        "member": rng.uniform(size=n) < 0.3,
    })


def test_mixed_frame_structure():
    X = _frame()
    ct = make_private_column_transformer(X, categories={"plan": ["basic", "gold", "platinum"]},
                                         bounds={"age": (0, 120)})
    assert isinstance(ct, ColumnTransformer) and ct.sparse_threshold == 0.0
    steps = {name: (est, cols) for name, est, cols in ct.transformers}
    assert steps["scaled_bounded"][1] == ["age"] and steps["scaled"][1] == ["income"]
    assert steps["onehot"][1] == ["region", "plan", "member"]
    lo, hi = steps["scaled_bounded"][0].bounds
    assert lo.tolist() == [0.0] and hi.tolist() == [120.0] and steps["scaled"][0].bounds is None
    enc = steps["onehot"][0]
    assert isinstance(enc, OneHotEncoder) and enc.handle_unknown == "ignore"
    # pandas Categorical: its dtype's levels (incl. the unseen "east"); declared lists; bool
    assert enc.categories == [["north", "south", "west", "east"], ["basic", "gold", "platinum"], [False, True]]


def test_fit_transform_one_hot_is_public_and_scalers_private():
    X = _frame()
    ct = make_private_column_transformer(X, categories={"plan": ["basic", "gold"]}, bounds={"age": (0, 120)})
    ct.set_params(scaled_bounded__epsilon=0.5, scaled__epsilon=0.5, scaled__random_state=0,
                  scaled_bounded__random_state=0)
    Z = ct.fit_transform(X)
    assert Z.shape == (2000, 2 + 4 + 2 + 2) and isinstance(Z, np.ndarray)
    onehot = Z[:, 2:]
    assert set(np.unique(onehot)) <= {0.0, 1.0} and np.all(onehot[:, :4].sum(axis=1) == 1)
    assert np.all(onehot[:, 3] == 0)  # "east" never occurs: a column of zeros, no error
    assert np.all(np.abs(Z[:, :2]) <= 3.0)
    assert ct.named_transformers_["scaled_bounded"].strategy_ == "public_bounds"
    # an unknown level at transform time is encoded as zeros
    X2 = X.head(3).copy()
    X2["plan"] = ["basic", "diamond", "gold"]
    assert ct.transform(X2)[1, 6:8].tolist() == [0.0, 0.0]


def test_object_column_without_declared_levels_raises_naming_categories():
    X = _frame()
    with pytest.raises(ValueError, match=r"\['plan'\].*categories="):
        make_private_column_transformer(X)
    with pytest.raises(ValueError, match="categories"):
        make_private_column_transformer(X.assign(plan=X["plan"].astype("string")))


@pytest.mark.parametrize("bounds, match", [
    ({"age": (120, 0)}, r"bounds\['age'\]"),
    ({"age": (0, np.inf)}, r"bounds\['age'\]"),
    ({"age": 5}, r"bounds\['age'\]"),
    ({"age": ("0", "120")}, r"bounds\['age'\]"),
    ({"height": (0, 3)}, "bounds names a column"),
    ({"region": (0, 1)}, r"bounds\['region'\].*categorical"),
    ([(0, 120)], "bounds must be None or a dict"),
])
def test_bounds_validation_names_the_parameter(bounds, match):
    with pytest.raises(ValueError, match=match):
        make_private_column_transformer(_frame(), categories={"plan": ["basic", "gold"]}, bounds=bounds)


@pytest.mark.parametrize("categories, match", [
    ({"plan": []}, r"categories\['plan'\]"),
    ({"plan": ["a", "a"]}, r"categories\['plan'\]"),
    ({"plan": "basic"}, r"categories\['plan'\]"),
    ({"nope": ["a"]}, "categories names a column"),
])
def test_categories_validation(categories, match):
    with pytest.raises(ValueError, match=match):
        make_private_column_transformer(_frame(), categories=categories)


def test_not_a_frame():
    with pytest.raises(TypeError, match="DataFrame"):
        make_private_column_transformer(np.zeros((3, 2)))


def test_integer_codes_declared_as_categories_and_scaler_template():
    X = _frame().drop(columns=["plan"])
    ct = make_private_column_transformer(X, categories={"age": list(range(18, 90))},
                                         scaler=DPMinMaxScaler(epsilon=0.3))
    steps = {name: (est, cols) for name, est, cols in ct.transformers}
    assert "age" in steps["onehot"][1] and steps["scaled"][1] == ["income"]
    assert isinstance(steps["scaled"][0], DPMinMaxScaler) and steps["scaled"][0].epsilon == 0.3


def test_clone_and_get_params():
    ct = make_private_column_transformer(_frame(), categories={"plan": ["basic", "gold"]}, bounds={"age": (0, 120)})
    params = ct.get_params()
    assert params["scaled__epsilon"] == 1.0 and "onehot__categories" in params
    c = clone(ct)
    assert c.get_params()["scaled_bounded__bounds"][1].tolist() == [120.0]
    assert c.transformers[0][1] is not ct.transformers[0][1]


def test_schema_only_an_empty_frame_gives_the_same_transformer():
    X = _frame()
    a = make_private_column_transformer(X, categories={"plan": ["basic", "gold"]})
    b = make_private_column_transformer(X.iloc[:0], categories={"plan": ["basic", "gold"]})
    assert repr(a) == repr(b)


def test_in_a_private_pipeline_the_nested_scalers_share_the_total():
    X = _frame(4000)
    y = ((X["age"] > 50) ^ (X["region"] == "west")).astype(int).to_numpy()
    ct = make_private_column_transformer(X, categories={"plan": ["basic", "gold"]}, bounds={"age": (0, 120)})
    ct.set_params(scaled__random_state=0, scaled_bounded__random_state=1)  # a reproducible test
    pipe = make_private_pipeline(ct, DPLogisticRegression(random_state=0), epsilon=2.0, composition="basic").fit(X, y)
    ct = pipe[0]
    spent = pipe[-1].epsilon_ + sum(ct.named_transformers_[s].epsilon_ for s in ("scaled", "scaled_bounded"))
    assert spent == pytest.approx(2.0)
    assert pipe[-1].epsilon_ == pytest.approx(1.5)  # the documented 75% to the final model
    assert pipe.score(X, y) > 0.65  # majority 0.50; over 8 seeds 0.68 to 0.73 (an XOR target: no linear model reaches 1)


def test_make_private_pipeline_accounts_nested_scalers():
    X = _frame(1000)
    y = (X["age"] > 50).astype(int).to_numpy()
    led = PrivacyLedger(max_epsilon=1.0, delta=1e-5)
    ct = make_private_column_transformer(X, categories={"plan": ["basic", "gold"]})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pipe = make_private_pipeline(ct, DPLogisticRegression(), epsilon=1.0, ledger=led).fit(X, y)
    nested = pipe[0].named_transformers_["scaled"]
    # composition="tight" (the default): the steps' epsilons add up to more than 1, their composed event does not
    assert nested.epsilon_ + pipe[-1].epsilon_ > 1.0
    assert led.total_epsilon() <= 1.0 + 1e-9 and epsilon_of_event(pipe.dp_event_, 1e-5) <= 1.0 + 1e-9
