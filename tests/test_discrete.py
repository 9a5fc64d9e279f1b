"""Calibration of the batched exact samplers (dp_sklearn/_discrete.py) against closed forms and the previous sampler."""

import math

import numpy as np
import pytest

from dp_sklearn import _discrete


def _pmf(s, support):
    w = np.exp(-support.astype(float) ** 2 / (2.0 * s * s))
    return w / w.sum()


def _chi2(counts, expected):
    """Pearson statistic over the cells with expected count >= 20, its dof, and the loose bound used here."""
    keep = expected >= 20
    stat = float(np.sum((counts[keep] - expected[keep]) ** 2 / expected[keep]))
    dof = int(keep.sum())
    return stat, dof, dof + 6 * math.sqrt(2 * dof)


def _two_sample(a, b, edges):
    """Two-sample chi-square (equal sizes) on the cells of ``edges`` with >= 40 draws in all."""
    ca, cb = np.histogram(a, edges)[0], np.histogram(b, edges)[0]
    keep = ca + cb >= 40
    stat = float(np.sum((ca[keep] - cb[keep]) ** 2 / (ca[keep] + cb[keep])))
    dof = int(keep.sum()) - 1
    return stat, dof + 6 * math.sqrt(2 * dof)


def _previous_discrete_gaussian(rng, s, size):
    """The sampler before the batching work: a signed discrete Laplace proposal ((B = 1, G = 0)
    rejected), accepted with the int64 Bernoulli(exp(-(|Y| - s)^2 / (2 s^2))) of
    :func:`_discrete._bernoulli_exp` (CKS 2020, Algorithms 2-3, one sign per proposal)."""
    out = np.empty(0, dtype=np.int64)
    while out.size < size:
        g = _discrete._geometric(rng, s, 2 * size).astype(np.int64)
        neg = rng.integers(0, 2, size=g.size) == 1
        y = np.where(neg, -g, g)[~(neg & (g == 0))]
        a = np.abs(y)
        keep = _discrete._bernoulli_exp(rng, (a - s) ** 2, 2 * s * s)
        out = np.r_[out, y[keep]]
    return out[:size]


@pytest.mark.parametrize("s", [1, 2, 5, 30])
def test_batched_discrete_gaussian_pmf(s):
    n = 200_000
    k = _discrete.discrete_gaussian(np.random.default_rng(20 + s), s, n)
    assert k.dtype == np.int64 and k.shape == (n,)
    support = np.arange(-10 * s, 11 * s)
    counts = np.array([(k == v).sum() for v in support])
    stat, dof, bound = _chi2(counts, n * _pmf(s, support))
    assert stat < bound, (stat, dof)
    assert np.all(np.abs(k) <= 10 * s)  # P(|K| > 10 s) < 1e-21


def test_batched_discrete_gaussian_moments_and_tail_at_package_scale():
    """s ~ 2**20 (the package's noise scales in grid steps): the discrete Gaussian's variance is s^2
    and its tails the normal ones to within exp(-2 pi^2 s^2) and O(1/s) (Poisson summation)."""
    s, n = 2**20 + 12345, 1_000_000
    k = _discrete.discrete_gaussian(np.random.default_rng(31), s, n).astype(np.float64) / s
    assert abs(k.mean()) < 5 / math.sqrt(n)
    assert abs(k.var() - 1.0) < 5 * math.sqrt(2.0 / n)
    for c in (1.0, 2.0, 3.0):
        p = math.erfc(c / math.sqrt(2.0))
        assert abs(np.mean(np.abs(k) > c) - p) < 5 * math.sqrt(p * (1 - p) / n) + 1e-5, c
    assert abs(np.mean(k**4) - 3.0) < 0.05  # kurtosis of the normal (sd of the estimate ~ 0.01)


@pytest.mark.parametrize("margin", [0.05])  # most proposals take the exact (decimal) path
def test_batched_discrete_gaussian_exact_path(margin, monkeypatch):
    monkeypatch.setattr(_discrete, "_EXP_MARGIN", margin)
    n, s = 20_000, 3
    k = _discrete.discrete_gaussian(np.random.default_rng(32), s, n)
    support = np.arange(-10 * s, 11 * s)
    stat, dof, bound = _chi2(np.array([(k == v).sum() for v in support]), n * _pmf(s, support))
    assert stat < bound, (stat, dof)


@pytest.mark.parametrize("s", [3, 2**20 + 12345])
def test_batched_sampler_equals_previous_in_distribution(s):
    n = 100_000
    new = _discrete.discrete_gaussian(np.random.default_rng(41), s, n)
    old = _previous_discrete_gaussian(np.random.default_rng(42), s, n)
    edges = np.arange(-12 * s, 12 * s + 2) - 0.5 if s < 100 else np.linspace(-5, 5, 81) * s
    stat, bound = _two_sample(new, old, edges)
    assert stat < bound, stat
    # the comparison can fail: a scale 10% (or one unit) larger is caught
    wrong = _previous_discrete_gaussian(np.random.default_rng(43), s + max(1, s // 10), n)
    stat, bound = _two_sample(new, wrong, edges)
    assert stat > bound, stat


def test_batched_discrete_laplace_matches_closed_form():
    t, n = 4, 200_000
    k = _discrete.discrete_laplace(np.random.default_rng(51), t, n)
    support = np.arange(-12 * t, 12 * t + 1)
    pmf = np.exp(-np.abs(support) / t) * math.tanh(1 / (2 * t))
    stat, dof, bound = _chi2(np.array([(k == v).sum() for v in support]), n * pmf)
    assert stat < bound, (stat, dof)
    q = math.exp(-1 / t)
    assert abs(k.var() / (2 * q / (1 - q) ** 2) - 1) < 0.02  # variance 2q / (1 - q)^2


def test_bits_are_fair_and_independent():
    b = _discrete._bits(np.random.default_rng(61), 620_001)
    assert b.dtype == bool and b.shape == (620_001,)
    n = b.size
    assert abs(b.mean() - 0.5) < 5 * 0.5 / math.sqrt(n)
    pairs = 2 * b[:-1:2].astype(int) + b[1::2]  # consecutive bits: the four pairs equally likely
    counts = np.bincount(pairs, minlength=4)
    stat, dof, bound = _chi2(counts, np.full(4, pairs.size / 4))
    assert stat < bound, (stat, dof)
    within = b[: 62 * 10_000].reshape(-1, 62)  # each of the 62 bit positions of a word is fair
    assert np.all(np.abs(within.mean(axis=0) - 0.5) < 5 * 0.5 / math.sqrt(10_000))


def test_sampler_is_reproducible_for_a_seed():
    a = _discrete.discrete_gaussian(np.random.default_rng(7), 2**20 + 3, 1000)
    b = _discrete.discrete_gaussian(np.random.default_rng(7), 2**20 + 3, 1000)
    np.testing.assert_array_equal(a, b)
    c = _discrete.discrete_gaussian(np.random.default_rng(8), 2**20 + 3, 1000)
    assert not np.array_equal(a, c)


class _ZeroBits(np.random.Generator):
    """A generator whose every integer is 0: the lazily drawn uniform is exactly u = 0."""

    def __init__(self):
        super().__init__(np.random.PCG64(0))

    def integers(self, low, high=None, size=None, dtype=np.int64, endpoint=False):
        return np.zeros(size, dtype=np.int64) if size is not None else np.int64(0)


def test_bernoulli_exp_float_exact_when_exp_underflows():
    """exp(-x) underflows to 0 in float64 for x > ~745, but is positive: u = 0 satisfies u < exp(-x).

    The upper bound of the enclosure must stay >= 1 (a ceiling of a positive number), so that
    the first word w = 0 is left to the exact comparison instead of being decided False.
    """
    x = np.array([800.0, 1000.0])
    calls = []

    def exact(i):
        calls.append(i)
        return ([800, 1000][i], 1)

    out = _discrete._bernoulli_exp_float(_ZeroBits(), x, exact)
    assert calls == [0, 1]
    assert out.tolist() == [True, True]
