"""Tests of the noise layer (dp_sklearn/_noise.py): exact samplers, the grid, the Mironov attack."""

import ast
import math
import pathlib

import numpy as np
import pytest

from dp_sklearn import _discrete, _noise
from dp_sklearn._release import make_rng
from dp_sklearn.audit import audit_epsilon

PACKAGE = pathlib.Path(_noise.__file__).parent


# ------------------------------------------------------------------ calibration
def _chi2_ok(counts, probs, n):
    """Pearson chi-square over the cells with expected count >= 20, against a loose bound."""
    exp = n * np.asarray(probs)
    keep = exp >= 20
    stat = float(np.sum((counts[keep] - exp[keep]) ** 2 / exp[keep]))
    dof = int(keep.sum())
    return stat < dof + 6 * math.sqrt(2 * dof), (stat, dof)


@pytest.mark.parametrize("t", [1, 3, 7])
@pytest.mark.parametrize("margin", [_discrete._EXP_MARGIN, 0.05])  # 0.05: many draws take the exact slow path
def test_discrete_laplace_pmf(t, margin, monkeypatch):
    monkeypatch.setattr(_discrete, "_EXP_MARGIN", margin)
    n = 200_000 if margin < 0.01 else 20_000
    k = _discrete.discrete_laplace(np.random.default_rng(1), t, n)
    support = np.arange(-12 * t, 12 * t + 1)
    pmf = np.exp(-np.abs(support) / t) * math.tanh(1 / (2 * t))
    counts = np.array([(k == v).sum() for v in support])
    ok, info = _chi2_ok(counts, pmf, n)
    assert ok, info
    assert abs(k.mean()) < 5 * math.sqrt(2) * t / math.sqrt(n)


@pytest.mark.parametrize("s", [1, 2, 5])
def test_discrete_gaussian_pmf(s):
    n = 200_000
    k = _discrete.discrete_gaussian(np.random.default_rng(2), s, n)
    support = np.arange(-10 * s, 10 * s + 1)
    w = np.exp(-support.astype(float) ** 2 / (2 * s * s))
    counts = np.array([(k == v).sum() for v in support])
    ok, info = _chi2_ok(counts, w / w.sum(), n)
    assert ok, info


def test_discrete_gaussian_large_scale_moments():
    s = 2**20 + 12345
    k = _discrete.discrete_gaussian(np.random.default_rng(3), s, 100_000)
    assert abs(k.std() / s - 1.0) < 0.01
    assert abs(k.mean() / s) < 0.01


@pytest.mark.parametrize("margin", [_discrete._EXP_MARGIN, 0.3])  # 0.3: most draws take the exact slow path
def test_bernoulli_exp_matches_closed_form(margin, monkeypatch):
    monkeypatch.setattr(_discrete, "_EXP_MARGIN", margin)
    rng = np.random.default_rng(4)
    n = 20_000 if margin > 0.1 else 100_000
    for num, den in [(0, 5), (3, 7), (7, 7), (38, 7), (1, 1)]:
        b = _discrete._bernoulli_exp(rng, np.full(n, num), den)
        p = math.exp(-num / den)
        assert abs(b.mean() - p) < 5 * math.sqrt(p * (1 - p) / n) + 1e-9, (num, den)
    for num, den in [(0, 3), (5, 3), (1, 1)]:
        p = math.exp(-num / den)
        b = np.mean([_discrete._bernoulli_exp_py(rng, num, den) for _ in range(20_000)])
        assert abs(b - p) < 5 * math.sqrt(p * (1 - p) / 20_000) + 1e-9


def test_gaussian_release_is_on_the_grid_and_calibrated():
    rng = np.random.default_rng(5)
    value = np.array([0.1, -3.3, 1e-9, 7.0])
    out = np.array([_noise.add_gaussian(rng, value, 0.5, 1.0) for _ in range(4000)])
    gamma = _noise.grid(0.5)
    assert gamma == 2.0**-21
    assert np.all(out / gamma == np.rint(out / gamma))
    np.testing.assert_allclose(out.std(axis=0), 0.5, rtol=0.05)
    np.testing.assert_allclose(out.mean(axis=0), value, atol=0.05)


def test_grid_scale_rounds_up_and_absorbs_the_grid():
    gamma, s = _noise.grid_scale(1.0)
    assert gamma == 2.0**-20 and s == 2**20 + 1  # the margin rounds up past an exact value
    gamma, s2 = _noise.grid_scale(1.0, sensitivity=0.001, size=100, norm=2)
    # noise multiplier against the rounded value's sensitivity (0.001 + 10 gamma) is kept
    assert s2 * gamma / (0.001 + 10 * gamma) >= 1.0 / 0.001
    gamma, s1 = _noise.grid_scale(1.0, sensitivity=0.001, size=100, norm=1)
    assert s1 * gamma / (0.001 + 100 * gamma) >= 1.0 / 0.001
    with pytest.raises(ValueError, match="noise scale"):
        _noise.grid(0.0)
    with pytest.raises(ValueError, match="sensitivity"):
        _noise.grid_scale(1.0, sensitivity=-1.0)


def test_zero_scale_is_the_value_and_int_seed_reproducible():
    assert _noise.add_laplace(np.random.default_rng(0), 0.3, 0.0, 1.0) == 0.3
    a = _noise.add_gaussian(make_rng(11), np.ones(5), 0.2, 1.0)
    b = _noise.add_gaussian(make_rng(11), np.ones(5), 0.2, 1.0)
    np.testing.assert_array_equal(a, b)


def test_crypto_generator_for_none():
    rng = make_rng(None)
    assert isinstance(rng, _discrete.CryptoGenerator)
    state = rng.bit_generator.state
    draws = rng.integers(0, 7, size=70_000)
    assert rng.bit_generator.state != state  # a draw is visible to the release path
    counts = np.bincount(draws, minlength=7)
    ok, info = _chi2_ok(counts, np.full(7, 1 / 7), draws.size)
    assert ok, info
    assert set(np.unique(rng.integers(0, np.array([2, 3]), size=(500, 2))[:, 1])) == {0, 1, 2}
    assert not isinstance(make_rng(0), _discrete.CryptoGenerator)


# ------------------------------------------------------------- Mironov's attack
_U = 2.0**-53


def _numpy_laplace(loc, scale, u):
    """NumPy's Generator.laplace from its uniform double u (numpy/random/src/distributions)."""
    if u >= 0.5:
        return loc - scale * math.log(2.0 - u - u)
    return loc + scale * math.log(u + u)


def _first_at_least(f, lo, hi, y):
    """Smallest k in [lo, hi] with f(k) >= y for a non-decreasing f (hi + 1 if none)."""
    while lo <= hi:
        mid = (lo + hi) // 2
        if f(mid) >= y:
            hi = mid - 1
        else:
            lo = mid + 1
    return lo


def _reachable_float_laplace(y, loc, scale):
    """Whether NumPy's float Laplace sampler centred at ``loc`` can output exactly ``y``."""
    for lo, hi in [(1, 2**52 - 1), (2**52, 2**53 - 1)]:  # u < 1/2 and u >= 1/2: both increasing in u
        f = lambda k: _numpy_laplace(loc, scale, k * _U)  # noqa: E731
        k = _first_at_least(f, lo, hi, y)
        if k <= hi and f(k) == y:
            return True
    return False


D = (np.array([[0.0], [0.0]]), np.zeros(2))
D_PRIME = (np.array([[0.0], [1.0]]), np.zeros(2))  # the sums differ by 1 (sensitivity 1)
SCALE = 1.0  # epsilon = 1


def _old(X, y, rng):
    return X.sum(axis=0) + rng.laplace(scale=SCALE, size=1)  # the float path before the layer


def _new(X, y, rng):
    return _noise.add_laplace(rng, X.sum(axis=0), SCALE, 1.0)


def _mironov(reachable):
    """Score 1 for an output that the mechanism cannot produce on D (so the input was D')."""
    loc = float(D[0].sum())
    return lambda out: np.array([0.0 if reachable(float(v), loc) else 1.0 for v in out[:, 0]])


def test_numpy_laplace_model_is_exact():
    u = np.random.default_rng(9).random(2000)
    got = np.random.default_rng(9).laplace(0.25, 1.5, size=2000)
    assert np.array_equal(got, [_numpy_laplace(0.25, 1.5, v) for v in u if v > 0.0])


def test_mironov_attack_breaks_float_laplace_and_finds_nothing_on_the_grid():
    old = audit_epsilon(_old, D, D_PRIME, n_samples=400, random_state=0,
                        statistic=_mironov(lambda y, loc: _reachable_float_laplace(y, loc, SCALE)))
    assert old.epsilon_lower > 1.0 / SCALE  # the float sampler violates its epsilon = 1
    gamma = _noise.grid(SCALE)
    on_grid = lambda y, loc: (y - _noise.snap(loc, gamma)) / gamma == np.rint(y / gamma)  # noqa: E731
    new = audit_epsilon(_new, D, D_PRIME, n_samples=400, random_state=0, statistic=_mironov(on_grid))
    assert new.epsilon_lower == 0.0


def test_audit_new_laplace_with_negative_control():
    ok = audit_epsilon(_new, D, D_PRIME, n_samples=2000, random_state=1)
    assert ok.epsilon_lower <= 1.0
    loud = audit_epsilon(lambda X, y, rng: _noise.add_laplace(rng, X.sum(axis=0), 0.1, 1.0), D, D_PRIME,
                         n_samples=2000, random_state=1)
    assert loud.epsilon_lower > 1.0  # a tenth of the noise is caught: the audit can fail


# ------------------------------------- the exponential mechanism: float Gumbel versus exact
def _numpy_gumbel(u):
    """NumPy's Generator.gumbel from its uniform double u (numpy/random/src/distributions: U = 1 - u, U < 1)."""
    return -math.log(-math.log(1.0 - u))


def test_numpy_gumbel_model_is_exact():
    u = np.random.default_rng(9).random(2000)
    got = np.random.default_rng(9).gumbel(size=2000)
    assert np.array_equal(got, [_numpy_gumbel(v) for v in u])


def test_float_gumbel_max_has_a_truncated_support_and_the_exact_one_does_not():
    # Mironov's argument for the exponential mechanism: NumPy's Gumbel lies in
    # [G(2**-53), G(1 - 2**-53)] (u on the 2**-53 grid, u < 1), so float Gumbel-max can never
    # select a candidate whose logit trails by more than their difference (about 40.3). With
    # epsilon = 1 (logit = score / 2) and a trailing score of 81 on D, 80 on D' (sensitivity 1),
    # the trailing candidate is impossible on D and possible on D': an infinite privacy loss.
    g_max, g_min = _numpy_gumbel(2.0**-53), _numpy_gumbel(1.0 - 2.0**-53)  # u = 0 is rejected
    gap = g_max - g_min
    assert 40.0 < gap < 40.5
    assert 81 / 2 > gap and 80 / 2 < gap
    # the exact mechanism decides any gap: all ones in the trailing candidate's uniform win at 60
    class AllOnes(np.random.Generator):
        def integers(self, low, high=None, size=None, dtype=np.int64, endpoint=False):
            return np.array([2**61, 2**62 - 1], dtype=np.int64) if size is not None else np.int64(2**62 - 1)

    assert _noise.exponential_mechanism(AllOnes(np.random.PCG64(0)), np.array([120.0, 0.0]), 0.5) == 1


@pytest.mark.parametrize("margin", [_discrete._KEY_MARGIN, 0.1])  # 0.1: most steps take the exact slow path
def test_em_stream_matches_the_exponential_mechanism(margin, monkeypatch):
    monkeypatch.setattr(_discrete, "_KEY_MARGIN", margin)
    logits = np.array([0.0, 1.0, -1.0, 2.0, 0.5, -0.5])
    p = np.exp(logits) / np.exp(logits).sum()
    n = 20_000 if margin < 0.01 else 1500
    stream = _noise.em_stream(np.random.default_rng(21), logits.size, n)
    counts = np.bincount([stream.argmax(logits / 2, 2.0) if t % 2 else stream.argmax(logits) for t in range(n)],
                         minlength=logits.size)
    ok, info = _chi2_ok(counts, p, n)
    assert ok, info
    assert not _chi2_ok(counts, np.exp(logits / 2) / np.exp(logits / 2).sum(), n)[0]  # negative control


@pytest.mark.parametrize("bit_generator", [np.random.PCG64, np.random.PCG64DXSM, np.random.SFC64, np.random.Philox,
                                           np.random.MT19937])
def test_em_words_are_the_integers_draw(bit_generator):
    """The Gumbel-max words read from raw 64-bit words are ``integers(0, 2**62)``'s values, and leave the
    generator in the same state (MT19937, 32-bit raw words, goes through ``integers``)."""
    a, b = np.random.Generator(bit_generator(5)), np.random.Generator(bit_generator(5))
    w = _noise._words(a, (30, 7))
    assert w.dtype == np.int64 and w.shape == (30, 7)
    assert np.array_equal(w, b.integers(0, 2**62, size=(30, 7), dtype=np.int64))
    assert a.integers(0, 2**40) == b.integers(0, 2**40) and a.random() == b.random()
    assert w.min() >= 0 and w.max() < 2**62 and len(np.unique(w)) == w.size


@pytest.mark.parametrize("margin", [_discrete._KEY_MARGIN, 0.1])  # 0.1: most rows take the exact slow path
def test_em_stream_settle_matches_the_exponential_mechanism(margin, monkeypatch):
    """A block of selections chosen by a caller and certified by ``settle``: wrong choices (here
    every row proposes candidate 0) are replaced by the exact winner, row by row, as a loop that
    resumes after each correction would; the settled choices have the softmax law."""
    monkeypatch.setattr(_discrete, "_KEY_MARGIN", margin)
    monkeypatch.setattr(_noise, "_STREAM_CHUNK", 600)  # blocks of 100 rows
    logits = np.array([0.0, 1.0, -1.0, 2.0, 0.5, -0.5])
    p = np.exp(logits) / np.exp(logits).sum()
    n = 20_000 if margin < 0.01 else 1500
    stream = _noise.em_stream(np.random.default_rng(22), logits.size, n)
    chosen, done = [], 0
    while done < n:
        hi = stream.next_block()
        L = np.broadcast_to(logits, hi.shape)
        pick = np.where(np.arange(hi.shape[0]) % 2 == 0, (L + hi).argmax(axis=1), 0)  # half the rows: a guess
        start = 0
        while (res := stream.settle(L, pick, start)) is not None:
            pick[res[0]] = res[1]
            start = res[0] + 1
        chosen.extend(pick.tolist())
        done += hi.shape[0]
    counts = np.bincount(chosen, minlength=logits.size)
    ok, info = _chi2_ok(counts, p, n)
    assert ok, info
    assert not _chi2_ok(counts, np.exp(logits / 2) / np.exp(logits / 2).sum(), n)[0]  # negative control


def _em(scale):
    def mechanism(X, y, rng):  # utilities (sum, 0): sensitivity 1 between D and D'
        return np.array([float(_noise.exponential_mechanism(rng, np.array([X.sum(), 0.0]), scale))])
    return mechanism


def test_audit_exponential_mechanism_with_negative_control():
    ok = audit_epsilon(_em(0.5), D, D_PRIME, n_samples=4000, random_state=2)  # epsilon = 1
    assert ok.epsilon_lower <= 1.0
    loud = audit_epsilon(_em(5.0), D, D_PRIME, n_samples=4000, random_state=2)  # ten times the epsilon
    assert loud.epsilon_lower > 1.0


def test_quantile_release_is_on_the_public_grid():
    from dp_sklearn._private_stats import exponential_quantiles
    X = np.random.default_rng(3).uniform(0.2, 0.7, size=(200, 3))
    out = exponential_quantiles(X, [0.25, 0.5], 1.0, np.random.default_rng(4), lower=0.0, upper=1.0)
    gamma = float(_noise.em_grid(1.0))
    assert gamma == 2.0**-40
    assert np.array_equal(out / gamma, np.rint(out / gamma))


# ---------------------------------------- the norm-Gamma: coupled sampler and snapping
from scipy import stats  # noqa: E402


@pytest.mark.parametrize("dim", [pytest.param(1, marks=pytest.mark.slow), pytest.param(2, marks=pytest.mark.slow),
                                 pytest.param(3, marks=pytest.mark.slow), 6])
def test_norm_gamma_radius_and_direction(dim):
    rng = np.random.default_rng(30 + dim)
    b = np.array([_noise.norm_gamma(rng, dim, 2.5) for _ in range(20_000)])
    r = np.linalg.norm(b, axis=1)
    assert stats.kstest(r, stats.gamma(dim, scale=2.5).cdf).pvalue > 1e-3  # ||b|| ~ Gamma(d, s)
    assert not stats.kstest(r, stats.gamma(dim, scale=2.5 * 1.05).cdf).pvalue > 1e-3  # the test can fail
    u = b / r[:, None]
    if dim == 1:
        assert abs(np.mean(u[:, 0] > 0) - 0.5) < 5 * 0.5 / math.sqrt(r.size)
    else:  # the first coordinate of a uniform direction: (u_1 + 1) / 2 ~ Beta((d-1)/2, (d-1)/2)
        beta = stats.beta((dim - 1) / 2, (dim - 1) / 2)
        for j in range(dim):
            assert stats.kstest((u[:, j] + 1) / 2, beta.cdf).pvalue > 1e-3, j


class _IntegersOnly(np.random.Generator):
    """A Generator that fails on every draw other than ``integers``."""

    def __getattribute__(self, name):
        if name in FLOAT_NOISE | {"random", "uniform", "choice", "standard_t"}:
            raise AssertionError(f"float draw {name}")
        return super().__getattribute__(name)


def test_norm_gamma_draws_only_integers():
    b = _noise.norm_gamma(_IntegersOnly(np.random.PCG64(0)), 5, 1.0)
    assert b.shape == (5,) and np.all(np.isfinite(b))


def _reference_norm_gamma(rng, dim, scale, mp):
    """The exact construction of :func:`_noise.norm_gamma` in 60-digit arithmetic, from the same integers.

    The uniforms' unknown low bits are set to the middle of their cells (any point is an
    exact draw of the coupling); returns the exact b and the width of the cells' effect.
    """
    def half_uniform(n):
        x, k = _noise._half_uniform(rng, n)
        return [mp.ldexp(mp.mpf(float(x[i])) + mp.mpf(2) ** -55, -int(k[i])) for i in range(n)]

    def exps(n):
        w = half_uniform(n)
        upper = _discrete._bits(rng, n)
        return [-mp.log(1 - w[i]) if upper[i] else -mp.log(w[i]) for i in range(n)]

    def sins(n):
        return [mp.sin(mp.pi * w) for w in half_uniform(n)]

    m = (dim + 1) // 2
    ge, sg = exps(dim), sins(dim)
    qe = exps(m + (dim + 1) % 2)
    terms = [2 * e for e in qe]
    if (dim + 1) % 2:
        terms[-1] = terms[-1] * sins(1)[0] ** 2
    q = mp.fsum(terms)
    sign = _discrete._bits(rng, dim)
    return [(-1 if sign[i] else 1) * scale * mp.sqrt(2 * q * ge[i]) * sg[i] for i in range(dim)]


@pytest.mark.parametrize("dim", [1, 2, 5])
def test_norm_gamma_is_within_its_relative_bound_of_the_exact_draw(dim, monkeypatch):
    import mpmath
    mpmath.mp.dps = 60
    worst = 0.0
    for seed in range(60):
        got = _noise.norm_gamma(np.random.default_rng(seed), dim, 0.75)
        ref = _reference_norm_gamma(np.random.default_rng(seed), dim, 0.75, mpmath.mp)
        for g, e in zip(got, ref):
            worst = max(worst, float(abs(mpmath.mpf(float(g)) - e) / abs(e)))
    # the cells of the uniforms (relative 2^-52) and the float steps: far inside NG_REL = 2^-42
    assert worst < _noise.NG_REL / 8, worst
    assert worst > 0.0  # a float computation, not the exact one


def test_norm_gamma_tiny_uniforms_keep_their_relative_precision():
    # all-zero words: k = 52 + ... leading zeros, W about 2^-200: the series branches, no underflow
    class Zeros(np.random.Generator):
        calls = 0

        def integers(self, low, high=None, size=None, dtype=np.int64, endpoint=False):
            Zeros.calls += 1
            return np.zeros(size, dtype=dtype) if Zeros.calls <= 4 else super().integers(low, high, size, dtype)

    mant, shift = _noise._exp_parts(Zeros(np.random.PCG64(1)), 3)
    assert np.all(shift >= 104) or np.all(mant > 0.0)
    assert np.all(np.isfinite(mant)) and np.all(mant > 0.0)


def test_snapping_plan_closed_form():
    eps, sens, dim, bound = 0.5, 0.003, 7, 2.3
    snap = _noise.norm_gamma_snapping(eps, sens, dim, bound)
    u, B, eta = snap.grid, snap.bound, snap.eta
    assert math.frexp(u)[0] == 0.5 and B / u == math.ceil(bound / u) and B >= bound  # public power-of-two grid
    assert u >= _noise.grid(sens / eps)
    # eta = (2^-42 (2B + u) + 2^-52 (B + u)) (1 + 2^-20) + 2^-1060 (docs/privacy.md, Numeric model)
    assert eta == pytest.approx((2.0**-42 * (2 * B + u) + 2.0**-52 * (B + u)) * (1 + 2.0**-20), rel=1e-12)
    loss = dim * math.log((u + 2 * eta) / (u - 2 * eta)) + 2 * eta * math.sqrt(dim) / (sens / eps)
    assert snap.loss == pytest.approx(loss, rel=1e-9) and snap.loss >= loss
    assert snap.loss <= eps * 2.0**-10
    assert snap.scale == pytest.approx(sens / (eps - snap.loss), rel=1e-11)
    assert sens / snap.scale + snap.loss <= eps  # the planned epsilon holds
    assert u < _noise.norm_gamma_snapping(eps, sens, dim, 2.0**12 * bound).grid  # a wider box, a coarser grid
    wide = _noise.norm_gamma_snapping(eps, sens, dim, 2.0**20 * bound)  # 2 eta sqrt(d) / s alone exceeds eps 2^-10
    assert eps * 2.0**-10 < wide.loss <= eps / 4 and wide.scale == pytest.approx(sens / (eps - wide.loss))
    with pytest.raises(ValueError, match="bound"):
        _noise.norm_gamma_snapping(eps, sens, dim, 0.0)
    with pytest.raises(ValueError, match="too small"):
        _noise.norm_gamma_snapping(eps, sens, dim, 2.0**30 * bound)


def test_snapped_release_on_grid_within_box():
    snap = _noise.norm_gamma_snapping(1.0, 0.5, 3, 1.0)
    rng = np.random.default_rng(40)
    value = np.array([0.2, -0.9, 5.0])  # the last is clipped to the box first
    out = np.array([_noise.add_norm_gamma(rng, value, snap) for _ in range(3000)])
    assert np.array_equal(out / snap.grid, np.rint(out / snap.grid))
    assert np.abs(out).max() == snap.bound == 1.0  # clipped: the box's faces are reached
    inner = _noise.norm_gamma_snapping(1.0, 0.01, 3, 1.0)
    small = np.array([_noise.add_norm_gamma(rng, value, inner) for _ in range(3000)])
    assert np.allclose(np.median(small, axis=0), [0.2, -0.9, 1.0], atol=0.01)
    with pytest.raises(ValueError, match="planned for 3"):
        _noise.add_norm_gamma(rng, np.zeros(2), snap)


# Mironov's attack on the norm-Gamma (d = 1): the float path releases theta + b in float64. On D
# (theta = 0) an output in (0, 1/2) is b itself, whose low bits are free; on D' (theta = 1) it is
# 1 + b for b in (-1, -1/2], exact (Sterbenz), so a multiple of 2^-53. An output in (0, 1/2) that
# is not a multiple of 2^-53 is impossible on D'.
def _old_norm_gamma(X, y, rng):
    u = rng.standard_normal(1)
    u /= np.linalg.norm(u)
    return X.sum(axis=0) + rng.gamma(shape=1, scale=SCALE) * u  # the float path before the snapping


_SNAP = _noise.norm_gamma_snapping(1.0, 1.0, 1, 4.0)


def _new_norm_gamma(X, y, rng):
    return _noise.add_norm_gamma(rng, X.sum(axis=0), _SNAP)


def _low_bits(out):
    y = out[:, 0]
    return ((y > 0) & (y < 0.5) & (y / 2.0**-53 != np.rint(y / 2.0**-53))).astype(float)


def test_mironov_attack_breaks_float_norm_gamma_and_finds_nothing_snapped():
    old = audit_epsilon(_old_norm_gamma, D, D_PRIME, n_samples=2000, random_state=0, statistic=_low_bits)
    assert old.epsilon_lower > 1.0  # the float norm-Gamma violates its epsilon = 1
    new = audit_epsilon(_new_norm_gamma, D, D_PRIME, n_samples=2000, random_state=0, statistic=_low_bits)
    assert new.epsilon_lower == 0.0
    # the snapped outputs are grid points reachable from both: the reachability statistic finds nothing
    reach = lambda out: (np.abs(out[:, 0]) > _SNAP.bound).astype(float)  # noqa: E731
    assert audit_epsilon(_new_norm_gamma, D, D_PRIME, n_samples=400, random_state=1, statistic=reach).epsilon_lower == 0.0


def test_audit_snapped_norm_gamma_with_negative_control():
    ok = audit_epsilon(_new_norm_gamma, D, D_PRIME, n_samples=3000, random_state=3)
    assert ok.epsilon_lower <= 1.0
    loud_snap = _noise.norm_gamma_snapping(10.0, 1.0, 1, 4.0)  # a tenth of the noise
    loud = audit_epsilon(lambda X, y, rng: _noise.add_norm_gamma(rng, X.sum(axis=0), loud_snap), D, D_PRIME,
                         n_samples=3000, random_state=3)
    assert loud.epsilon_lower > 1.0


# ---------------------------------------------- every release draws from the layer
FLOAT_NOISE = {"normal", "laplace", "gamma", "gumbel", "standard_normal", "standard_gamma", "exponential",
               "standard_exponential"}

#: (file, method): draws that reach no release.
ALLOWED = {
    # public synthetic data of the search's plan (a dry run on data of the same schema, never released)
    ("model_selection/_estimator.py", "standard_normal"),
}


def _direct_draws(root=PACKAGE):
    found = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        if rel == "_noise.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(), filename=rel)):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in FLOAT_NOISE:
                owner = node.func.value
                if isinstance(owner, ast.Name) and owner.id == "_noise":
                    continue
                if (rel, node.func.attr) not in ALLOWED:
                    found.append(f"{rel}:{node.lineno} .{node.func.attr}(")
    return found


def test_no_float_noise_outside_the_layer():
    assert _direct_draws() == []


def test_scan_can_fail(tmp_path):
    (tmp_path / "_mech.py").write_text("def f(x, rng):\n    return x + rng.laplace(scale=1.0)\n")
    (tmp_path / "_noise.py").write_text("def g(rng):\n    return rng.normal()\n")
    assert _direct_draws(tmp_path) == ["_mech.py:2 .laplace("]


def test_every_registered_solver_is_scanned():
    import inspect

    from dp_sklearn.solvers._base import SOLVERS
    assert SOLVERS
    for name, spec in SOLVERS.items():
        for func in (spec.func, spec.plan):  # the mechanism and its plan
            path = pathlib.Path(inspect.getsourcefile(func)).resolve()
            assert PACKAGE.resolve() in path.parents, name


def test_blocks_depend_on_their_own_generator_only():
    alone = _noise.gaussian(np.random.default_rng(5), 1.0, 4)
    g = np.random.default_rng(5)
    first = _noise.gaussian(g, 1.0, 2)
    for k in range(20):  # other generators drawing in between (and then dropped)
        _noise.add_laplace(np.random.default_rng(k), np.zeros(3), 1.0, 1.0)
    np.testing.assert_array_equal(np.r_[first, _noise.gaussian(g, 1.0, 2)], alone)


# ------------------------------------------------------- streams (noise drawn ahead)
def test_gaussian_stream_equals_separate_releases_in_distribution(monkeypatch):
    value, scale, sens = np.array([0.3, -1.7, 5e-7]), 0.25, 1.0
    n = 20_000
    stream = _noise.gaussian_stream(np.random.default_rng(71), scale, sens, value.size, n)
    a = np.array([stream.add(value) for _ in range(n)])
    rng = np.random.default_rng(72)
    b = np.array([_noise.add_gaussian(rng, value, scale, sens) for _ in range(n)])
    gamma = _noise.grid(scale)
    assert stream.gamma == gamma and stream.steps == _noise.grid_scale(scale, sens, value.size)[1]
    ka, kb = (a - _noise.snap(value, gamma)) / gamma, (b - _noise.snap(value, gamma)) / gamma
    assert np.all(ka == np.rint(ka)) and np.all(kb == np.rint(kb))  # value on the grid + integer noise
    np.testing.assert_allclose(a.std(axis=0), scale, rtol=0.03)
    edges = np.linspace(-4, 4, 33) * stream.steps
    ca, cb = np.histogram(ka.ravel(), edges)[0], np.histogram(kb.ravel(), edges)[0]
    keep = ca + cb >= 40
    stat, dof = float(np.sum((ca[keep] - cb[keep]) ** 2 / (ca[keep] + cb[keep]))), int(keep.sum()) - 1
    assert stat < dof + 6 * math.sqrt(2 * dof), stat
    assert abs(np.corrcoef(ka[:-1, 0], ka[1:, 0])[0, 1]) < 5 / math.sqrt(n)  # steps independent


def test_gaussian_stream_noise_is_the_samplers_integers():
    """The stream draws float64 integers (no int64 round trip): the same values as the int64 sampler."""
    size, scale, sens = 62061, 0.7, 1.0
    stream = _noise.gaussian_stream(np.random.default_rng(72), scale, sens, size, 1)
    k = stream.add(np.zeros(size)) / stream.gamma
    gamma, steps = _noise.grid_scale(scale, sens, size)
    assert gamma == stream.gamma
    np.testing.assert_array_equal(k, _discrete.discrete_gaussian(np.random.default_rng(72), steps, size))
    assert not np.any(np.signbit(k) & (k == 0))  # no -0.0 in a release


def test_gaussian_stream_blocks_reproducible_and_beyond_count(monkeypatch):
    monkeypatch.setattr(_noise, "_STREAM_CHUNK", 7)  # 2 releases of 3 entries per block
    def run(seed, count, calls):
        s = _noise.gaussian_stream(np.random.default_rng(seed), 1.0, 1.0, 3, count)
        return np.array([s.add(np.zeros(3)) for _ in range(calls)])
    a, b = run(5, 5, 8), run(5, 5, 8)  # 3 blocks as planned, then further ones
    np.testing.assert_array_equal(a, b)
    assert len({tuple(r) for r in a}) == 8  # every release has fresh noise
    assert not np.array_equal(run(6, 5, 8), a)
    rng = np.random.default_rng(5)
    state = rng.bit_generator.state
    zero = _noise.gaussian_stream(rng, 0.0, 1.0, 3, 4)  # epsilon = inf: the value, no draw
    np.testing.assert_array_equal(zero.add(np.arange(3.0)), np.arange(3.0))
    assert rng.bit_generator.state == state
