"""Tests of the statistical privacy audit (dp_sklearn.audit)."""

import dp_accounting
import numpy as np
import pytest

from dp_sklearn.audit import (
    AuditResult,
    audit_epsilon,
    clopper_pearson_upper,
    glm_worst_case_pair,
)

EPS, DELTA = 1.0, 1e-5
SIGMA = dp_accounting.get_sigma_gaussian(epsilon=EPS, delta=DELTA)

# A counting query over labels in {0, 1}: replace-one sensitivity exactly 1.
D = (np.zeros((4, 1)), np.array([0.0, 1.0, 0.0, 0.0]))
D_PRIME = (np.zeros((4, 1)), np.array([0.0, 1.0, 0.0, 1.0]))


def gaussian_mechanism(sigma):
    def mechanism(X, y, rng):
        return np.array([y.sum() + sigma * rng.standard_normal()])

    return mechanism


def laplace_mechanism(scale):
    def mechanism(X, y, rng):
        return np.array([y.sum() + rng.laplace(scale=scale)])

    return mechanism


def vector_mechanism(X, y, rng):
    """3-dim output; only the first coordinate depends on the data."""
    return np.array([y.sum(), 0.0, 0.0]) + 0.5 * rng.standard_normal(3)


# ---------------------------------------------------------------------------
# Calibrated mechanisms pass, under-noised ones (negative controls) are caught
# ---------------------------------------------------------------------------


def test_calibrated_gaussian_passes_with_power():
    # Gaussian DP at (1, 1e-5) is hard to audit: even the best threshold test
    # certifies only ~0.3 from 5000 evaluation samples, hence n_samples=10000.
    res = audit_epsilon(
        gaussian_mechanism(SIGMA), D, D_PRIME, n_samples=10_000, delta=DELTA, random_state=0
    )
    assert 0.2 < res.epsilon_lower <= EPS


def test_undernoised_gaussian_is_caught():
    res = audit_epsilon(
        gaussian_mechanism(SIGMA / 8), D, D_PRIME, n_samples=5000, delta=DELTA, random_state=1
    )
    assert res.epsilon_lower > EPS


def test_calibrated_laplace_passes_with_power():
    res = audit_epsilon(laplace_mechanism(1.0 / EPS), D, D_PRIME, n_samples=5000, random_state=2)
    assert 0.5 < res.epsilon_lower <= EPS
    assert res.epsilon_lower <= res.epsilon_hat


def test_undernoised_laplace_is_caught():
    mech = laplace_mechanism(1.0 / (8 * EPS))
    res = audit_epsilon(mech, D, D_PRIME, n_samples=5000, random_state=3)
    assert res.epsilon_lower > EPS


def test_lower_bound_valid_over_many_seeds():
    # Laplace is tight (likelihood ratio exactly e^eps in its tails), so this
    # exercises the coverage of the bound: violations must be rare (<= 5%).
    mech = laplace_mechanism(1.0 / EPS)
    lows = [
        audit_epsilon(mech, D, D_PRIME, n_samples=500, random_state=s).epsilon_lower
        for s in range(40)
    ]
    assert np.mean(np.array(lows) > EPS) <= 0.05


def test_data_independent_mechanism_gives_zero():
    res = audit_epsilon(gaussian_mechanism(1.0), D, D, n_samples=2000, random_state=4)
    assert res.epsilon_lower < 0.1


def test_multidimensional_output_default_statistic():
    res = audit_epsilon(vector_mechanism, D, D_PRIME, n_samples=2000, random_state=5)
    assert res.epsilon_lower > 1.0
    assert res.direction == 1  # D' has the larger projection


def test_custom_statistic_and_direction():
    # Negated statistic: the test must flip to "small score => D'".
    res = audit_epsilon(
        laplace_mechanism(0.1), D, D_PRIME, n_samples=1000, statistic=lambda out: -out[:, 0],
        random_state=6,
    )
    assert res.epsilon_lower > 3.0
    assert res.direction == -1


# ---------------------------------------------------------------------------
# Clopper-Pearson
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("n", [1, 10, 2500])
@pytest.mark.parametrize("alpha", [0.025, 0.05, 0.2])
def test_clopper_pearson_zero_failures_closed_form(n, alpha):
    assert clopper_pearson_upper(0, n, alpha) == pytest.approx(1.0 - alpha ** (1.0 / n), rel=1e-10)


def test_clopper_pearson_edge_cases_and_vectorization():
    assert clopper_pearson_upper(10, 10, 0.05) == 1.0
    ub = clopper_pearson_upper(np.array([0, 5, 50, 100]), 100, 0.05)
    assert ub.shape == (4,)
    assert np.all(np.diff(ub) > 0) and np.all(ub >= np.array([0, 5, 50, 100]) / 100)
    # n = 1, k = 0: P(no event) = 1 - p >= alpha  <=>  p <= 1 - alpha.
    assert clopper_pearson_upper(0, 1, 0.05) == pytest.approx(0.95)


# ---------------------------------------------------------------------------
# Reproducibility, parallelism, verbosity, validation
# ---------------------------------------------------------------------------


def test_reproducible_and_independent_of_n_jobs():
    mech = gaussian_mechanism(1.0)
    a = audit_epsilon(mech, D, D_PRIME, n_samples=600, random_state=42)
    b = audit_epsilon(mech, D, D_PRIME, n_samples=600, random_state=42)
    c = audit_epsilon(mech, D, D_PRIME, n_samples=600, random_state=42, n_jobs=2)
    d = audit_epsilon(mech, D, D_PRIME, n_samples=600, random_state=43)
    assert isinstance(a, AuditResult)
    assert a == b == c
    assert a != d
    assert a.n_samples == 600 and a.confidence == 0.95
    assert a.fpr_upper >= a.fpr and a.fnr_upper >= a.fnr


def test_result_is_frozen():
    res = audit_epsilon(gaussian_mechanism(1.0), D, D_PRIME, n_samples=20, random_state=0)
    with pytest.raises(AttributeError):
        res.epsilon_lower = 10.0


def test_verbose_prints_progress(capsys):
    audit_epsilon(gaussian_mechanism(1.0), D, D_PRIME, n_samples=300, random_state=0, verbose=1)
    out = capsys.readouterr().out
    assert "audit: 600/600 samples" in out


@pytest.mark.parametrize(
    "kwargs, name",
    [
        ({"n_samples": 19}, "n_samples"),
        ({"n_samples": 100.0}, "n_samples"),
        ({"confidence": 0.0}, "confidence"),
        ({"confidence": 1.0}, "confidence"),
        ({"delta": -0.1}, "delta"),
        ({"delta": 1.0}, "delta"),
    ],
)
def test_parameter_validation(kwargs, name):
    with pytest.raises(ValueError, match=name):
        audit_epsilon(gaussian_mechanism(1.0), D, D_PRIME, **kwargs)


def test_bad_inputs():
    with pytest.raises(ValueError, match="D_prime"):
        audit_epsilon(gaussian_mechanism(1.0), D, D_PRIME[0], n_samples=20)
    with pytest.raises(ValueError, match="statistic"):
        audit_epsilon(
            gaussian_mechanism(1.0), D, D_PRIME, n_samples=20, statistic=lambda out: out[:2, 0]
        )


# ---------------------------------------------------------------------------
# Worst-case neighbouring pair
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["regression", "classification"])
def test_glm_worst_case_pair(kind):
    (X, y), (X2, y2) = glm_worst_case_pair(12, 3, kind=kind, data_norm=2.0)
    assert X.shape == X2.shape == (12, 3) and y.shape == y2.shape == (12,)
    differs = np.any(X != X2, axis=1) | (y != y2)
    assert differs.tolist() == [False] * 11 + [True]
    assert np.linalg.norm(X, axis=1).max() == pytest.approx(2.0)
    assert np.linalg.norm(X2, axis=1).max() == pytest.approx(2.0)
    np.testing.assert_array_equal(X[-1], -X2[-1])
    if kind == "classification":
        assert set(np.unique(y)) == {0, 1}
    a, b = glm_worst_case_pair(kind=kind), glm_worst_case_pair(kind=kind)
    np.testing.assert_array_equal(a[0][0], b[0][0])


def test_glm_worst_case_pair_validation():
    with pytest.raises(ValueError, match="kind"):
        glm_worst_case_pair(kind="survival")
    with pytest.raises(ValueError, match="data_norm"):
        glm_worst_case_pair(data_norm=0.0)


# ---------------------------------------------------------------------------
# Issue 19 item 11: outputs and arguments that used to give 0, NaN or an overflow
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("output, match", [
    (lambda rng: np.array([np.nan, rng.normal()]), "NaN or infinity"),
    (lambda rng: np.array([np.inf]), "NaN or infinity"),
    (lambda rng: np.array([]), "empty"),
    (lambda rng: rng.normal(size=int(rng.integers(1, 3))), "fixed shape"),
])
def test_mechanism_outputs_that_cannot_be_audited_raise(output, match):
    with pytest.raises(ValueError, match=match):
        audit_epsilon(lambda X, y, rng: output(rng), D, D_PRIME, n_samples=40, random_state=0)


def test_non_finite_statistic_raises():
    with pytest.raises(ValueError, match="statistic"):
        audit_epsilon(gaussian_mechanism(1.0), D, D_PRIME, n_samples=40,
                      statistic=lambda out: np.full(out.shape[0], np.nan))


@pytest.mark.parametrize("k, n, alpha, name", [
    (5, 3, 0.05, "k <= n"), (-1, 3, 0.05, "k <= n"), (0, 0, 0.05, "n >= 1"), (1.5, 3, 0.05, "k must"),
    (True, 3, 0.05, "k must"), (np.nan, 3, 0.05, "k must"), (1, 3, 0.0, "alpha"), (1, 3, 1.0, "alpha"),
    (1, 3, np.nan, "alpha"), ([0, 4], [3, 3], 0.05, "k <= n"),
])
def test_clopper_pearson_out_of_range_raises(k, n, alpha, name):
    with pytest.raises(ValueError, match=name):
        clopper_pearson_upper(k, n, alpha)


@pytest.mark.parametrize("kwargs, name", [
    ({"data_norm": np.inf}, "data_norm"), ({"data_norm": np.nan}, "data_norm"), ({"data_norm": True}, "data_norm"),
    ({"data_norm": 1e-320}, "data_norm"), ({"n": True}, "n must"), ({"n_features": 2.5}, "n_features"),
])
def test_glm_worst_case_pair_refuses_non_finite_and_non_integer_arguments(kwargs, name):
    with pytest.raises(ValueError, match=name):
        glm_worst_case_pair(**kwargs)
