"""PrivatePipeline(composition="tight") (dp_sklearn/_tight_budget.py)."""

import numpy as np
import pytest

from dp_sklearn import DPLogisticRegression, PrivacyLedger, make_private_pipeline
from dp_sklearn._accounting import gaussian_epsilon, gaussian_noise_multiplier
from dp_sklearn.composition import epsilon_of_event
from dp_sklearn.preprocessing import DPStandardScaler

EPS, DELTA = 1.0, 1e-5
#: the search stops within this relative distance of the largest factor within the budget
RESOLUTION = 0.03


def _two_scalers(**kw):
    # two Gaussian steps with public bounds: each releases one analytic Gaussian (mean and second
    # moment compose exactly to the multiplier of its (epsilon_i, delta_i)); the final one gets 0.75
    return make_private_pipeline(DPStandardScaler(bounds=(-3, 3), random_state=0),
                                 DPStandardScaler(bounds=(-3, 3), random_state=1), epsilon=EPS, delta=DELTA, **kw)


SHARES = (0.25, 0.75)


def _closed_form_epsilon(factor):
    """Epsilon at DELTA of Gaussians of multipliers z(factor w_i EPS, DELTA / 4): one Gaussian of mu^2 = sum 1 / z_i^2
    (Dong, Roth & Su 2019, Corollary 3.3)."""
    mu2 = sum(gaussian_noise_multiplier(factor * w * EPS, DELTA / 4) ** -2 for w in SHARES)
    return gaussian_epsilon(np.sqrt(mu2), DELTA)


def test_factor_matches_the_closed_form_of_composed_gaussians():
    X = np.random.default_rng(0).normal(size=(500, 3))
    pipe = _two_scalers(composition="tight").fit(X)
    factor = pipe.budget_split_[0].epsilon / (SHARES[0] * EPS)
    assert factor > 1.15  # Gaussians at (0.25, 2.5e-6) and (0.75, 2.5e-6) spend less than (1, 1e-5) together
    assert pipe.budget_split_[1].epsilon == pytest.approx(factor * SHARES[1] * EPS, rel=1e-12)
    assert _closed_form_epsilon(factor) <= EPS + 1e-9  # the factor found is within the budget ...
    assert _closed_form_epsilon(factor * (1.0 + RESOLUTION)) > EPS  # ... and within 3% of the largest that is
    assert epsilon_of_event(pipe.dp_event_, DELTA) == pytest.approx(_closed_form_epsilon(factor), rel=1e-3)


def test_basic_is_unchanged_and_the_default_tight_spends_more_of_the_same_budget():
    X = np.random.default_rng(0).normal(size=(500, 3))
    basic = _two_scalers(composition="basic").fit(X)
    assert [b.epsilon for b in basic.budget_split_] == [0.25, 0.75]
    tight = _two_scalers().fit(X)  # the default
    spent = epsilon_of_event(basic.dp_event_, DELTA), epsilon_of_event(tight.dp_event_, DELTA)
    assert spent[0] < 0.9 < 0.98 < spent[1] <= EPS


def test_factor_depends_on_public_values_only_and_the_ledger_accepts_it():
    rng = np.random.default_rng(3)
    X1 = rng.normal(size=(800, 4))
    X2 = 1e4 * rng.lognormal(size=(800, 4))  # other values, same shape
    y1, y2 = (X1[:, 0] > 0).astype(int), (rng.random(800) > 0.9).astype(int)
    splits, led = [], PrivacyLedger(max_epsilon=2 * EPS, delta=DELTA)
    for X, y in ((X1, y1), (X2, y2)):
        pipe = make_private_pipeline(DPStandardScaler(random_state=0), DPLogisticRegression(random_state=0),
                                     epsilon=EPS, delta=DELTA, composition="tight", ledger=led).fit(X, y)
        splits.append(pipe.budget_split_)
    assert splits[0] == splits[1]
    assert splits[0][0].epsilon > 0.25 and splits[0][1].epsilon > 0.75
    assert len(led) == 2 and led.total_epsilon() <= 2 * EPS + 1e-9


def test_pure_steps_keep_the_basic_split():
    X = np.random.default_rng(0).normal(size=(500, 3))
    pipe = make_private_pipeline(DPStandardScaler(bounds=(-3, 3), random_state=0),
                                 DPStandardScaler(bounds=(-3, 3), random_state=1), epsilon=EPS, delta=0.0,
                                 composition="tight").fit(X)
    assert [b.epsilon for b in pipe.budget_split_] == [0.25, 0.75]  # Laplace steps: basic composition is tight


def test_bad_composition_is_refused_before_any_budget():
    led = PrivacyLedger(max_epsilon=EPS, delta=DELTA)
    pipe = _two_scalers(composition="zcdp").set_params(ledger=led)
    with pytest.raises(ValueError, match="composition"):
        pipe.fit(np.zeros((10, 2)))
    assert len(led) == 0
