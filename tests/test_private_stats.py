"""Private statistics: calibration against closed forms, audits with negative controls, utility."""

import math

import numpy as np
import pytest
from dp_accounting import dp_event
from dp_accounting.gaussian_mechanism import get_epsilon_gaussian

from dp_sklearn import EpsilonDeltaDpEvent
from dp_sklearn._accounting import gaussian_noise_multiplier, zcdp_rho
from dp_sklearn._private_stats import (
    exponential_quantiles,
    make_generator,
    plan_statistics,
    private_moments,
    private_range,
    quantile_epsilon,
)
from dp_sklearn.audit import audit_epsilon
from dp_sklearn.ledger import compose_epsilon

# ---------------------------------------------------------------------------
# Exponential-mechanism quantiles
# ---------------------------------------------------------------------------
VALUES = np.array([0.2, 0.4, 0.6, 0.8])


def _interval_probabilities(values, q, eps, lower, upper):
    """Closed form: P(interval i) proportional to |I_i| exp(-eps |i - q n| / 2)."""
    edges = np.concatenate([[lower], np.sort(values), [upper]])
    w = np.diff(edges) * np.exp(-0.5 * eps * np.abs(np.arange(values.size + 1) - q * values.size))
    return edges, w / w.sum()


@pytest.mark.parametrize("q", [0.5, 0.25])
def test_quantile_output_distribution_matches_closed_form(q):
    # 20000 independent draws at once: one column per draw (the mechanism is per column).
    eps, m = 2.0, 20_000
    X = np.tile(VALUES[:, None], (1, m))
    out = exponential_quantiles(X, q, eps, np.random.default_rng(0), lower=0.0, upper=1.0)[0]
    edges, probs = _interval_probabilities(VALUES, q, eps, 0.0, 1.0)
    freq = np.histogram(out, bins=edges)[0] / m
    se = np.sqrt(probs * (1 - probs) / m)
    assert np.all(np.abs(freq - probs) < 5 * se)
    # uniform within an interval: the mean inside the middle interval [0.4, 0.6] is 0.5
    inside = out[(out > 0.4) & (out < 0.6)]
    assert abs(inside.mean() - 0.5) < 0.005


def test_quantile_ties_and_clipping():
    # All values equal (zero-length intervals) and values outside the range are clipped.
    X = np.array([5.0, 5.0, 5.0, 50.0])
    out = exponential_quantiles(X, [0.0, 0.5, 1.0], 1.0, np.random.default_rng(1), lower=0.0, upper=10.0)
    assert out.shape == (3,) and np.all((out >= 0) & (out <= 10))


def test_quantile_utility_median_of_normal():
    x = np.random.default_rng(2).standard_normal((10_000, 3))
    out = exponential_quantiles(x, [0.1, 0.5, 0.9], 1.0, np.random.default_rng(3), lower=-100, upper=100)
    assert np.allclose(out, np.array([[-1.2816], [0.0], [1.2816]]), atol=0.1)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"quantiles": 1.5}, "quantiles"),
        ({"epsilon": 0.0}, "epsilon"),
        ({"epsilon": np.inf}, "epsilon"),
        ({"lower": 1.0, "upper": 0.0}, "lower < upper"),
        ({"lower": [0.0, 0.0], "upper": 1.0}, "lower, upper"),
    ],
)
def test_quantile_bad_input(kwargs, match):
    args = {"quantiles": 0.5, "epsilon": 1.0, "lower": 0.0, "upper": 1.0, **kwargs}
    with pytest.raises(ValueError, match=match):
        exponential_quantiles(VALUES, args.pop("quantiles"), args.pop("epsilon"), np.random.default_rng(0),
                              **args)


def _median_mechanism(eps_used):
    def mechanism(X, y, rng):
        return exponential_quantiles(X[:, 0], [0.5], eps_used, rng, lower=0.0, upper=1.0)
    return mechanism


# Replace-one pair: 0.8 replaced by 0.1 moves the median interval from [0.4, 0.6] to [0.2, 0.4].
D_Q = (VALUES[:, None], np.zeros(4))
D_Q_PRIME = (np.array([0.2, 0.4, 0.6, 0.1])[:, None], np.zeros(4))


def test_quantile_audit_calibrated_passes():
    res = audit_epsilon(_median_mechanism(1.0), D_Q, D_Q_PRIME, n_samples=4000, random_state=0)
    assert 0.1 < res.epsilon_lower <= 1.0


def test_quantile_audit_negative_control_is_caught():
    # The same mechanism run at 8 times the claimed epsilon (noise scaled down).
    res = audit_epsilon(_median_mechanism(8.0), D_Q, D_Q_PRIME, n_samples=4000, random_state=1)
    assert res.epsilon_lower > 1.0


# ---------------------------------------------------------------------------
# Composition of quantiles and the statistics plan
# ---------------------------------------------------------------------------
def test_quantile_epsilon_pure_and_zcdp_closed_forms():
    eps0, ev = quantile_epsilon(1.0, 0.0, 4)
    assert eps0 == 0.25 and ev == EpsilonDeltaDpEvent(1.0, 0.0)
    eps0, ev = quantile_epsilon(1.0, 1e-6, 60)
    rho = zcdp_rho(1.0, 1e-6)
    assert isinstance(ev, dp_event.ZCDpEvent)
    assert eps0 == pytest.approx(math.sqrt(8 * rho / 60), rel=1e-8)  # Cesar & Rogers: eps0^2 / 8 each
    assert compose_epsilon([ev], 1e-6) <= 1.0
    assert compose_epsilon([ev], 1e-6) == pytest.approx(1.0, rel=1e-3)
    # two mechanisms: pure composition is better at this delta
    eps0, ev = quantile_epsilon(0.5, 1e-6, 2)
    assert eps0 == 0.25 and isinstance(ev, EpsilonDeltaDpEvent)


def test_plan_gaussian_only_is_one_analytic_gaussian():
    eps, delta = 0.7, 1e-6
    plan = plan_statistics(eps, delta, mean_share=0.8)
    z = gaussian_noise_multiplier(eps, delta)
    assert 1 / plan.mean_multiplier**2 + 1 / plan.moment_multiplier**2 == pytest.approx(1 / z**2, rel=1e-12)
    assert plan.mean_multiplier == pytest.approx(z / math.sqrt(0.8))
    assert get_epsilon_gaussian(z, delta) == pytest.approx(eps, rel=1e-6)
    assert compose_epsilon([plan.event], delta) == pytest.approx(eps, rel=1e-6)


def test_plan_with_quantiles_is_zcdp_with_the_target_rho():
    eps, delta = 0.25, 1e-6
    plan = plan_statistics(eps, delta, n_quantiles=60, quantile_share=0.5)
    rho = zcdp_rho(eps, delta)
    total = 60 * plan.quantile_epsilon**2 / 8 + 0.5 / plan.mean_multiplier**2 + 0.5 / plan.moment_multiplier**2
    assert total == pytest.approx(rho, rel=1e-8) and total <= rho
    assert compose_epsilon([plan.event], delta) <= eps


def test_plan_pure_is_basic_composition():
    plan = plan_statistics(1.0, 0.0, n_quantiles=10, quantile_share=0.4, mean_share=0.5)
    assert plan.noise == "laplace"
    assert plan.quantile_epsilon == pytest.approx(0.04)
    assert 1 / plan.mean_multiplier + 1 / plan.moment_multiplier == pytest.approx(0.6)
    # The ledger's PLD of a Laplace event is infinite at delta=0 exactly; at a tiny delta it
    # reproduces basic composition.
    assert compose_epsilon([plan.event], 1e-12) <= 1.0 + 1e-3


# ---------------------------------------------------------------------------
# Bounded moments
# ---------------------------------------------------------------------------
def _moment_draws(noise, m=3000, z=0.5):
    X = np.random.default_rng(0).uniform(0, 1, size=(50, 4))
    rng = np.random.default_rng(1)
    out = np.array([private_moments(X, rng, lower=0.0, upper=2.0, mean_multiplier=z, moment_multiplier=z,
                                    noise=noise)[0] for _ in range(m)])
    return X, out


@pytest.mark.parametrize("noise, sd_factor", [("gaussian", 1.0), ("laplace", math.sqrt(2.0))])
def test_moments_noise_matches_sensitivity(noise, sd_factor):
    # Mean in units of X: sensitivity width / n per feature; l2 over p=4 features (Gaussian:
    # sqrt(p) width / n per coordinate), l1 (Laplace: scale p width / n, sd sqrt(2) times that).
    X, out = _moment_draws(noise)
    n, p, width, z = 50, 4, 2.0, 0.5
    sens = (math.sqrt(p) if noise == "gaussian" else p) * width / n
    assert np.allclose(out.std(axis=0), sd_factor * z * sens, rtol=0.06)
    assert np.allclose(out.mean(axis=0), np.clip(X, 0, 2).mean(axis=0), atol=0.02)


def test_moments_utility():
    X = np.random.default_rng(4).normal(3.0, 2.0, size=(20_000, 3))
    plan = plan_statistics(1.0, 1e-6)
    mean, var = private_moments(X, np.random.default_rng(5), lower=-7, upper=13,
                                mean_multiplier=plan.mean_multiplier, moment_multiplier=plan.moment_multiplier)
    assert np.allclose(mean, 3.0, atol=0.05) and np.allclose(np.sqrt(var), 2.0, atol=0.1)


# Worst case: the differing record sits at opposite corners of the box.
_BASE = np.full((10, 2), 0.5)
D_M = (np.vstack([_BASE[:-1], [0.0, 0.0]]), np.zeros(10))
D_M_PRIME = (np.vstack([_BASE[:-1], [1.0, 1.0]]), np.zeros(10))


def _moments_mechanism(eps, delta, scale_down=1.0):
    plan = plan_statistics(eps, delta)

    def mechanism(X, y, rng):
        mean, _ = private_moments(X, rng, lower=0.0, upper=1.0, noise=plan.noise,
                                  mean_multiplier=plan.mean_multiplier / scale_down,
                                  moment_multiplier=plan.moment_multiplier / scale_down)
        return mean
    return mechanism


@pytest.mark.parametrize("delta", [0.0, 1e-5])
def test_moments_audit_calibrated_passes(delta):
    res = audit_epsilon(_moments_mechanism(1.0, delta), D_M, D_M_PRIME, n_samples=4000, delta=delta,
                        random_state=2)
    assert res.epsilon_lower <= 1.0


@pytest.mark.parametrize("delta", [0.0, 1e-5])
def test_moments_audit_negative_control_is_caught(delta):
    res = audit_epsilon(_moments_mechanism(1.0, delta, scale_down=8.0), D_M, D_M_PRIME, n_samples=4000,
                        delta=delta, random_state=3)
    assert res.epsilon_lower > 1.0


# ---------------------------------------------------------------------------
# private_range and the generator
# ---------------------------------------------------------------------------
def test_private_range_utility_and_event():
    y = np.random.default_rng(6).uniform(25, 346, size=5000)
    lo, hi, event = private_range(y, 1.0, np.random.default_rng(7), search_range=(-1e6, 1e6))
    assert lo < hi
    q25, q75 = 25 + 0.25 * 321, 25 + 0.75 * 321  # Tukey's fences of U(25, 346)
    assert abs(lo - (q25 - 1.5 * (q75 - q25))) < 15 and abs(hi - (q75 + 1.5 * (q75 - q25))) < 15
    assert event == EpsilonDeltaDpEvent(1.0, 0.0)
    lo, hi, _ = private_range(y, 1.0, np.random.default_rng(7), fence=0.0, quantile_range=(0.05, 0.95))
    assert abs(lo - (25 + 0.05 * 321)) < 10 and abs(hi - (25 + 0.95 * 321)) < 10


def test_private_range_small_n_wide_search():
    # The log-uniform base measure finds the diabetes-like target range at n=300, epsilon=0.5,
    # in a +-1e6 search range (the uniform base measure almost never does).
    y = np.random.default_rng(8).uniform(25, 346, size=300)
    ranges = np.array([private_range(y, 0.5, np.random.default_rng(s))[:2] for s in range(50)])
    sane = (ranges[:, 0] > -300) & (ranges[:, 0] < 150) & (ranges[:, 1] > 250) & (ranges[:, 1] < 700)
    assert sane.mean() >= 0.9


def test_quantile_log_uniform_base_measure_closed_form():
    eps, m, u = 2.0, 20_000, 0.1
    X = np.tile(VALUES[:, None], (1, m))
    out = exponential_quantiles(X, 0.5, eps, np.random.default_rng(9), lower=0.0, upper=1.0, unit=u)[0]
    edges = np.concatenate([[0.0], VALUES, [1.0]])
    w = np.diff(np.arcsinh(edges / u)) * np.exp(-0.5 * eps * np.abs(np.arange(5) - 2))
    probs = w / w.sum()
    freq = np.histogram(out, bins=edges)[0] / m
    assert np.all(np.abs(freq - probs) < 5 * np.sqrt(probs * (1 - probs) / m))


def test_private_range_bad_input():
    with pytest.raises(ValueError, match="quantile_range"):
        private_range(np.ones(5), 1.0, np.random.default_rng(0), quantile_range=(0.9, 0.1))
    with pytest.raises(ValueError, match="1-D"):
        private_range(np.ones((5, 2)), 1.0, np.random.default_rng(0))


def test_make_generator():
    assert make_generator(3).random() == np.random.default_rng(3).random()
    g = np.random.default_rng(0)
    assert make_generator(g) is g
    a = make_generator(np.random.RandomState(0)).random()
    assert a == make_generator(np.random.RandomState(0)).random()
    with pytest.raises(ValueError, match="random_state"):
        make_generator("seed")
