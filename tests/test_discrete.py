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


#: sha256 (first 16 hex digits) of discrete_gaussian then discrete_laplace (int64 bytes) and the
#: next 62-bit word, drawn by the sampler before the vectorization work (commit 74969f0): the
#: faster sampler draws the same integers and returns the same values for the same generator.
_PINNED = [(7, 2**20 + 3, 62061, "e545533f73e6b404", 3360293326256617956),
           (8, 1500000, 1001, "db086297b7e4efde", 3701196130540081893),
           (9, 3, 5000, "71dfc9b727cb6149", 2586466340796013926)]


@pytest.mark.parametrize("seed,s,n,digest,next_word", _PINNED)
def test_sampler_output_pinned_to_the_previous_implementation(seed, s, n, digest, next_word):
    import hashlib

    rng = np.random.default_rng(seed)
    a = _discrete.discrete_gaussian(rng, s, n)
    b = _discrete.discrete_laplace(rng, s, n)
    assert a.dtype == b.dtype == np.int64
    assert hashlib.sha256(a.tobytes() + b.tobytes()).hexdigest()[:16] == digest
    assert int(rng.integers(0, 2**62)) == next_word
    # the float64 output is the same integers
    rng = np.random.default_rng(seed)
    f = _discrete.discrete_gaussian(rng, s, n, dtype=np.float64)
    assert f.dtype == np.float64 and np.array_equal(f, a)
    assert not np.any(np.signbit(f) & (f == 0))  # no -0.0


class _Plain(np.random.Generator):
    """A Generator subclass: the samplers take the ``integers`` path instead of ``random_raw``."""


@pytest.mark.parametrize("bitgen", _discrete._RAW64)
def test_raw_words_are_the_integers_numpy_draws(bitgen):
    for n in (0, 1, 2, 3, 4, 5, 1001, 62061):
        for odd_first in (False, True):
            a, b = np.random.Generator(bitgen(n)), _Plain(bitgen(n))
            if odd_first:  # a half-word buffered in the state (has_uint32)
                assert a.integers(0, 2**32) == b.integers(0, 2**32)
            assert np.array_equal(_discrete._words62(a, n), b.integers(0, 2**62, size=n, dtype=np.int64))
            w32 = _discrete._words32(a, n)
            assert w32.dtype in (np.uint32, np.int64)
            assert np.array_equal(w32.astype(np.int64), b.integers(0, 2**32, size=n, dtype=np.int64))
            # the same state for what follows: a 32-bit draw (buffer) and a 64-bit one
            assert a.integers(0, 2**32, size=3).tolist() == b.integers(0, 2**32, size=3).tolist()
            assert a.integers(0, 2**62) == b.integers(0, 2**62)
    assert not _discrete._raw_ok(np.random.Generator(np.random.MT19937(0)))  # 32-bit raw output
    assert not _discrete._raw_ok(_Plain(np.random.PCG64(0)))


@pytest.mark.parametrize("s", [3, 2**20 + 12345])
def test_sampler_same_values_through_integers_and_raw_words(s):
    a, b = np.random.default_rng(5), _Plain(np.random.PCG64(5))
    for n in (1, 7, 20_001):
        np.testing.assert_array_equal(_discrete.discrete_gaussian(a, s, n), _discrete.discrete_gaussian(b, s, n))
        np.testing.assert_array_equal(_discrete.discrete_laplace(a, s, n), _discrete.discrete_laplace(b, s, n))
    assert a.integers(0, 2**62) == b.integers(0, 2**62)


def _exact_scaled_exp(num, den, scale_bits=62):
    import decimal

    with decimal.localcontext() as ctx:
        ctx.prec = 60
        return (-(decimal.Decimal(num) / decimal.Decimal(den))).exp() * decimal.Decimal(2) ** scale_bits


@pytest.mark.parametrize("t", [1, 7, 2**20 + 3, 2**21 - 1])
def test_geometric_float_bounds_enclose_exp(t, monkeypatch):
    """``_lower_scaled_exp`` <= 2**62 exp(-g/t) and ``_upper_next`` >= 2**62 exp(-(g+1)/t), checked in decimal."""
    import decimal

    rng = np.random.default_rng(t)
    g = np.r_[0.0, 1.0, np.floor(rng.exponential(t, 3000)), np.floor(rng.uniform(0, 43 * t, 1000))]
    nx = g / -float(t)
    e = np.exp(nx)
    lo = _discrete._lower_scaled_exp(nx, e, 2.0**62)
    hi = _discrete._upper_next(nx, e, t)
    for gi, l, h in zip(g.tolist(), lo.tolist(), hi.tolist()):
        assert decimal.Decimal(l) <= _exact_scaled_exp(int(gi), t), gi
        assert decimal.Decimal(h) >= _exact_scaled_exp(int(gi) + 1, t), gi
    # the check can fail: without the margin the product's bound falls below the exact value
    monkeypatch.setattr(_discrete, "_NEXT_FACTOR", 0.0)
    hi0 = _discrete._upper_next(nx, e, t)
    assert any(decimal.Decimal(h) < _exact_scaled_exp(int(gi) + 1, t) for gi, h in zip(g.tolist(), hi0.tolist()))


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


# --------------------------------------------------- the exponential mechanism (gumbel_top)
EM_SCORE = np.array([0.0, -1.0, -2.0, -3.0, -0.5, 1.0])
EM_WEIGHT = np.array([1.0, 2.0, 0.5, 3.0, 0.0, 0.25])  # candidate 4 has weight 0: never returned
EM_SCALE = 0.7


def _em_probs():
    p = EM_WEIGHT * np.exp(EM_SCALE * EM_SCORE)
    return p / p.sum()


@pytest.mark.parametrize("form", ["weights", "intervals", "segments"])
def test_gumbel_top_matches_the_exponential_mechanism(form):
    n = 60_000
    rng = np.random.default_rng(11)
    S = np.tile(EM_SCORE[:, None], (1, n))
    if form == "weights":
        idx = _discrete.gumbel_top(rng, S, EM_SCALE, weight=np.tile(EM_WEIGHT[:, None], (1, n)))
    elif form == "intervals":  # w = hi - lo, read exactly (0.1 + w is rounded: the sampler must not use it)
        lo = np.full(S.shape, 0.1)
        idx = _discrete.gumbel_top(rng, S, EM_SCALE, weight=(lo + EM_WEIGHT[:, None], lo))
    else:
        m = EM_SCORE.size
        idx = _discrete.gumbel_top(rng, np.tile(EM_SCORE, n), EM_SCALE, weight=np.tile(EM_WEIGHT, n),
                                   starts=np.arange(n) * m) - np.arange(n) * m
    counts = np.bincount(idx, minlength=EM_SCORE.size)
    assert counts[4] == 0
    stat, dof, bound = _chi2(counts, n * _em_probs())
    assert stat < bound, (stat, dof)
    # negative control: the law of twice the scale is rejected
    p2 = EM_WEIGHT * np.exp(2 * EM_SCALE * EM_SCORE)
    assert _chi2(counts, n * p2 / p2.sum())[0] > 10 * bound


@pytest.mark.slow
def test_gumbel_top_exact_slow_path_matches_the_exponential_mechanism(monkeypatch):
    # a margin of 0.1 leaves most draws to the decimal slow path (_top_exact): same law
    monkeypatch.setattr(_discrete, "_KEY_MARGIN", 0.1)
    calls = []
    real = _discrete._top_exact
    monkeypatch.setattr(_discrete, "_top_exact", lambda *a: calls.append(1) or real(*a))
    n = 1500
    idx = _discrete.gumbel_top(np.random.default_rng(12), np.tile(EM_SCORE[:, None], (1, n)), EM_SCALE,
                               weight=np.tile(EM_WEIGHT[:, None], (1, n)))
    assert len(calls) > n / 2
    stat, dof, bound = _chi2(np.bincount(idx, minlength=EM_SCORE.size), n * _em_probs())
    assert stat < bound, (stat, dof)


@pytest.mark.parametrize("margin", [_discrete._KEY_MARGIN, pytest.param(0.1, marks=pytest.mark.slow)])
def test_gumbel_top_k_is_sampling_without_replacement(margin, monkeypatch):
    monkeypatch.setattr(_discrete, "_KEY_MARGIN", margin)
    p = _em_probs()
    pairs = [(i, j) for i in range(6) for j in range(i + 1, 6)]
    closed = np.array([p[i] * p[j] / (1 - p[i]) + p[j] * p[i] / (1 - p[j]) for i, j in pairs])
    n = 8000 if margin < 0.01 else 1500
    rng = np.random.default_rng(13)
    got = np.sort(_discrete.gumbel_top(rng, np.tile(EM_SCORE[:, None], (1, n)), EM_SCALE,
                                       weight=np.tile(EM_WEIGHT[:, None], (1, n)), k=2), axis=0)
    code = got[0] * 6 + got[1]
    counts = np.array([np.sum(code == i * 6 + j) for i, j in pairs])
    assert counts.sum() == n and all(counts[t] == 0 for t, pair in enumerate(pairs) if 4 in pair)
    stat, dof, bound = _chi2(counts, n * closed)
    assert stat < bound, (stat, dof)


def test_gumbel_top_fast_path_work_is_independent_of_the_scores():
    # neighbouring score vectors: the same words are drawn (one per candidate), the certified
    # selection uses no more, so the generator ends in the same state
    a, b = np.random.default_rng(14), np.random.default_rng(14)
    s = np.linspace(-3.0, 3.0, 50)
    _discrete.gumbel_top(a, s, 0.5)
    _discrete.gumbel_top(b, s + np.eye(50)[7], 0.5)
    assert a.bit_generator.state == b.bit_generator.state


def test_gumbel_top_decides_extreme_uniforms_exactly():
    # candidate 1's uniform is all ones for 5 words (G above 300): it wins against a logit gap of
    # 60, which the float Gumbel (at most about 37) can never overcome
    class Stub(np.random.Generator):
        def __init__(self):
            super().__init__(np.random.PCG64(0))
            self.calls = 0

        def integers(self, low, high=None, size=None, dtype=np.int64, endpoint=False):
            self.calls += 1
            if size is not None:
                return np.array([2**61, 2**62 - 1], dtype=np.int64)
            return np.int64(2**62 - 1)

    stub = Stub()
    assert _discrete.gumbel_top(stub, np.array([60.0, 0.0]), 1.0) == 1
    assert stub.calls > 1  # decided by the slow path, with more bits
    assert -math.log(-math.log1p(-2.0**-53)) < 37.0


def test_uniform_on_grid_matches_the_rounded_uniform():
    rng = np.random.default_rng(15)
    n = 40_000
    k = _discrete.uniform_on_grid(rng, np.full(n, 0.3), np.full(n, 1.7), 0.5)
    # cells [k - 1/2, k + 1/2) * 0.5 met by [0.3, 1.7]: 1 (0.45), 2 (0.5), 3 (0.45), of length 1.4
    counts = np.bincount(k, minlength=4)
    assert counts[0] == 0 and counts.sum() == n
    stat, dof, bound = _chi2(counts[1:], n * np.array([0.45, 0.5, 0.45]) / 1.4)
    assert stat < bound, (stat, dof)
    tiny = _discrete.uniform_on_grid(rng, np.array([1e-300, -2.0**-60]), np.array([3e-300, 2.0**-60]), 2.0**-40)
    assert np.array_equal(tiny, [0, 0])


def test_uniform_on_grid_draws_a_fixed_amount_of_randomness():
    # two words per point whatever the interval (a rejection loop on the interval's length would
    # leak it through the generator's state and the running time)
    a, b = np.random.default_rng(16), np.random.default_rng(16)
    _discrete.uniform_on_grid(a, np.array([0.3, 1e-300, -5.0]), np.array([1.7, 3e-300, 7.0]), 2.0**-40)
    _discrete.uniform_on_grid(b, np.array([0.1, 0.2, 0.25]), np.array([0.10000001, 0.9, 0.5]), 2.0**-40)
    assert a.bit_generator.state == b.bit_generator.state


def test_gumbel_bounds_scalar_and_vector_agree():
    w = np.concatenate([[0, 1, 2**61 - 1, 2**61, 2**62 - 1], np.random.default_rng(17).integers(0, 2**62, 200)])
    # libm and NumPy may differ by an ulp or so: both lie within the margin's model (128 ulp)
    np.testing.assert_allclose(_discrete._gumbel_lo(w), _discrete._gumbel_at(w, 0), rtol=2.0**-45, atol=2.0**-45)
    assert _discrete._gumbel_at(w[:5], 1)[-1] == np.inf and _discrete._gumbel_at(w[:5], 0)[0] == -np.inf
    import warnings
    with warnings.catch_warnings():  # the infinite ends (U = 0, U = 1) raise no floating-point warning
        warnings.simplefilter("error")
        hi, lo = _discrete._gumbel_at(w, 1), _discrete._gumbel_at(w, 0)
    assert np.isfinite(np.delete(hi, 4)).all() and np.isfinite(lo[1:]).all()  # w[4] = 2**62 - 1, w[0] = 0
    assert hi[0] == lo[1] and hi[2] == lo[3]  # the same u: (w + 1) / 2**62 = w' / 2**62


# ------------------------------------------------------------------------------------------
# Issue 22: the chunked exact EM (_argmax_columns) releases what the one-pass version released.


def _reference_gumbel_at(w, plus):
    """:func:`_discrete._gumbel_at` before issue 22 (one pass per operation, copied as it was)."""
    W = 2**62
    if plus:
        k = w + 1
        kc = np.minimum(k, W - 1)
    else:
        k = w
        kc = np.maximum(k, 1)
    e = kc * 2.0**-62
    np.log(e, out=e)
    np.negative(e, out=e)
    near = np.flatnonzero(kc > W - 2**53)
    if near.size:
        e.reshape(-1)[near] = -np.log1p((kc.reshape(-1)[near] - W).astype(np.float64) * 2.0**-62)
    np.log(e, out=e)
    np.negative(e, out=e)
    np.copyto(e, np.inf if plus else -np.inf, where=k == (W if plus else 0))
    return e


def _reference_argmax_columns(rng, score, scale, weight):
    """:func:`_discrete._argmax_columns` before issue 22: whole-array passes (copied as it was)."""
    D = _discrete
    m, p = score.shape
    lw, exact_w = D._log_weight(weight)
    L = float(scale) * score
    if lw is not None and lw.shape[1] != p:
        p0, weight_of = lw.shape[1], exact_w
        L.reshape(m, p // p0, p0)[...] += lw[:, None, :]

        def exact_w(ij):
            return weight_of((ij[0], ij[1] % p0))
    elif lw is not None:
        L += lw
    w = rng.integers(0, 2**62, size=(m, p), dtype=np.int64)
    up = _reference_gumbel_at(w, 1)
    up += L
    np.fmax(up, -np.inf, out=up)
    cols = np.arange(p)
    sel = D._column_reduce(up, np.argmax)
    ws, L_sel = w[sel, cols], L[sel, cols]
    lo_sel = L_sel + (D._gumbel_lo(ws) if p <= 16 else _reference_gumbel_at(ws, 0))
    lo_sel -= D._KEY_MARGIN * (np.abs(L_sel) + D._MARGIN_CONST)
    up[sel, cols] = -np.inf
    x = D._column_reduce(up, np.max)
    thr = x + D._KEY_MARGIN * (np.abs(np.maximum(x, -1e300)) + D._MARGIN_CONST)
    ok = lo_sel > thr
    for j in np.flatnonzero(~ok):
        col = up[:, j]
        col[sel[j]] = np.inf
        bound = col + D._KEY_MARGIN * (np.abs(np.maximum(col, -1e300)) + D._MARGIN_CONST)
        pool = np.flatnonzero(np.isfinite(L[:, j]) & (bound >= lo_sel[j]))
        sel[j] = D._top_exact(rng, pool, w[pool, j], lambda i, j=j: (exact_w((i, j)), float(scale),
                                                                     float(score[i, j])), 1)[0]
    return sel


@pytest.mark.parametrize("bit_generator", [np.random.PCG64, np.random.PCG64DXSM, np.random.SFC64, np.random.Philox,
                                           np.random.MT19937])
def test_words62_are_the_integers_and_leave_the_same_state(bit_generator):
    a, b = np.random.Generator(bit_generator(7)), np.random.Generator(bit_generator(7))
    for shape in [(5,), (1000, 3), (0, 2), (1,)]:
        x, y = a.integers(0, 2**62, size=shape, dtype=np.int64), _discrete._words62(b, shape)
        assert x.dtype == y.dtype and np.array_equal(x, y)
    assert str(a.bit_generator.state) == str(b.bit_generator.state)
    crypto = _discrete.CryptoGenerator(np.random.PCG64(0))  # draws through its own integers
    assert _discrete._words62(crypto, (3, 2)).shape == (3, 2)


def test_gumbel_at_equals_the_one_pass_version():
    edges = [0, 1, 2, 2**53, 2**62 - 2**53 - 1, 2**62 - 2**53, 2**62 - 2**53 + 1, 2**62 - 2, 2**62 - 1]
    w = np.concatenate([edges, np.random.default_rng(18).integers(0, 2**62, 5000)]).astype(np.int64)
    for plus in (0, 1):
        for arr in (w, w.reshape(-1, 1)[:4000].reshape(1000, 4), w[::3]):
            np.testing.assert_array_equal(_discrete._gumbel_at(arr, plus), _reference_gumbel_at(arr, plus))


def _weights(form, m, p, rng):
    if form == "none":
        return None
    if form == "array":
        return np.where(rng.random((m, p)) < 0.2, 0.0, rng.exponential(size=(m, p)))
    z = np.sort(np.round(rng.normal(size=(m + 1, 1)), 1), axis=0)  # ties: intervals of length 0
    return (z[1:], z[:-1]) if form == "shared" else (np.tile(z[1:], (1, p)), np.tile(z[:-1], (1, p)))


@pytest.mark.parametrize("p, form, margin", [(p, form, None) for p in (1, 2, 3, 9, 20)
                                             for form in ("none", "array", "shared", "intervals")]
                         + [(p, form, 0.05) for p in (1, 3) for form in ("none", "array", "shared", "intervals")])
def test_argmax_columns_equals_the_one_pass_version(p, form, margin, monkeypatch):
    """The same index per column and the same generator state after, over many chunks (with a
    ragged last one), with weights of 0 and, at a margin of 0.05, the exact slow path."""
    calls = []
    if margin is not None:  # every column undecided by the floats: the decimal slow path
        monkeypatch.setattr(_discrete, "_KEY_MARGIN", margin)
        real = _discrete._top_exact
        monkeypatch.setattr(_discrete, "_top_exact", lambda *a: calls.append(1) or real(*a))
    monkeypatch.setattr(_discrete, "_CHUNK_KEYS", 64)
    m = 50 if margin else 1001
    for seed in range(3):
        data = np.random.default_rng(100 + seed)
        score = -np.abs(np.arange(m, dtype=float)[:, None] - data.uniform(0, m, size=p)).round()
        weight = _weights(form, m, p, data)
        scale = 0.3 if margin else 0.05
        a, b = np.random.default_rng(seed), np.random.default_rng(seed)
        got = _discrete._argmax_columns(a, score, scale, weight)
        ref = _reference_argmax_columns(b, score, scale, weight)
        np.testing.assert_array_equal(got, ref)
        assert str(a.bit_generator.state) == str(b.bit_generator.state)
    assert (len(calls) >= 3 * p) if margin else not calls


def test_argmax_columns_column_with_one_candidate():
    """A column whose other candidates all have weight 0 (the largest other key is -inf)."""
    score = np.zeros((300, 2))
    weight = np.zeros((300, 2))
    weight[123, 0] = weight[7, 1] = 1.0
    a, b = np.random.default_rng(1), np.random.default_rng(1)
    np.testing.assert_array_equal(_discrete._argmax_columns(a, score, 1.0, weight), [123, 7])
    np.testing.assert_array_equal(_reference_argmax_columns(b, score, 1.0, weight), [123, 7])
    assert str(a.bit_generator.state) == str(b.bit_generator.state)
