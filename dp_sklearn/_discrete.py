"""Exact samplers of the noise layer (:mod:`dp_sklearn._noise`), integers in, integers out.

The discrete Laplace and discrete Gaussian of Canonne, Kamath & Steinke ("The discrete
Gaussian for differential privacy", NeurIPS 2020), vectorized over draws with a loop over
rejection rounds only, and :class:`CryptoGenerator` (``random_state=None``). Every random
decision compares a uniform drawn lazily as integers with exp(-x) for a rational x: in
float64 when an enclosure of exp(-x) decides it, otherwise exactly (:class:`_LazyUniform`).
Nothing here is floating-point noise; :mod:`dp_sklearn._noise` is the API.
"""

from __future__ import annotations

import math
import os
import sys

import numpy as np

__all__ = ["discrete_gaussian", "discrete_laplace", "gumbel_top", "uniform_on_grid", "CryptoGenerator"]

_I64 = np.int64


# ------------------------------------------------------------- exact Bernoulli / uniform
def _uniform_py(rng, n):
    """A uniform integer in [0, n) for a Python int n of any size (exact rejection)."""
    bits = max(int(n - 1).bit_length(), 1)
    words = (bits + 61) // 62
    while True:
        v = 0
        for w in rng.integers(0, 2**62, size=words, dtype=_I64):
            v = (v << 62) | int(w)
        v >>= words * 62 - bits
        if v < n:
            return v


def _bernoulli_exp_py(rng, num, den):
    """Bernoulli(exp(-num/den)) for Python ints of any size (CKS 2020, Algorithm 1), scalar."""
    while num > den:  # exp(-x) = exp(-1) exp(-(x - 1)); each factor stops the loop when it fails
        if not _bernoulli_exp_py(rng, 1, 1):
            return False
        num -= den
    k = 1  # x = num / den in [0, 1]: K <- 1; while Bernoulli(x / K): K <- K + 1; K odd
    while _uniform_py(rng, den * k) < num:
        k += 1
    return k % 2 == 1


_W = 2**62

#: Bit generators whose ``random_raw`` is the 64-bit word ``Generator.integers`` consumes
#: (not MT19937, whose raw output has 32 bits); tests/test_discrete.py checks the identities.
_RAW64 = (np.random.PCG64, np.random.PCG64DXSM, np.random.Philox, np.random.SFC64)


def _raw_ok(rng):
    return type(rng) is np.random.Generator and type(rng.bit_generator) in _RAW64 and sys.byteorder == "little"


def _words62(rng, shape):
    """``rng.integers(0, 2**62, size=shape, dtype=int64)``: the same values and generator state.

    For a power-of-two range NumPy's bounded integers (Lemire's multiply-shift, Lemire, "Fast
    random integer generation in an interval", ACM TOMACS 2019) keep the top bits of one 64-bit
    word per value and never reject (the threshold ``(2**64 - 2**62) mod 2**62`` is 0), so with
    a plain ``Generator`` of a bit generator in :data:`_RAW64` this is ``random_raw(shape) >> 2``,
    without the per-draw bounded-integer call. Any other generator (``CryptoGenerator``,
    MT19937) draws through ``integers``; tests/test_discrete.py checks values and state.
    """
    if not _raw_ok(rng):
        return rng.integers(0, _W, size=shape, dtype=_I64)
    w = rng.bit_generator.random_raw(shape)
    w >>= np.uint64(2)
    return w.view(_I64)


def _words32(rng, n):
    """``rng.integers(0, 2**32, size=n)`` as uint32 (int64 for other generators): the same values and state.

    NumPy serves a 32-bit range from ``next_uint32``, the low then the high half of a 64-bit
    word, with a half-word buffered in the bit generator's state between calls
    (``has_uint32``); the words between are ``random_raw`` read as pairs of uint32.
    """
    if not _raw_ok(rng) or n < 3:
        return rng.integers(0, 2**32, size=n, dtype=_I64)
    out = np.empty(n, dtype=np.uint32)
    i = 0
    if rng.bit_generator.state["has_uint32"]:
        out[0] = rng.integers(0, 2**32)  # the buffered half
        i = 1
    k = (n - i) // 2
    out[i:i + 2 * k] = rng.bit_generator.random_raw(k).view(np.uint32)  # little-endian: low half first
    if i + 2 * k < n:
        out[n - 1] = rng.integers(0, 2**32)  # a new word: its low half here, its high half buffered
    return out


#: Relative error allowed, times (1 + x), for float64 ``exp(-x)`` of a float64 x = num / den
#: in :func:`_lower_scaled_exp` and :func:`_geometric`: 2**-45 is 128 units in the last place
#: (libm and NumPy's SIMD exp are within 4; the float ratio adds at most 3 * 2**-53 * x). An assumption of the
#: numeric model (``docs/privacy.md``): a draw is decided in floating point only when
#: this enclosure decides it; otherwise exactly (:class:`_LazyUniform`).
_EXP_MARGIN = 2.0**-45


class _LazyUniform:
    """A uniform u in [0, 1) known by its first ``bits`` bits ``w``, extended on demand.

    :meth:`below_exp` decides u < exp(-num/den) exactly, comparing against exp(-num/den)
    computed with :mod:`decimal` (correctly rounded) at increasing precision and drawing
    62 more bits of u whenever the comparison is undecided. The bits persist, so several
    comparisons see the same u.
    """

    def __init__(self, rng, w, bits):
        self.rng, self.w, self.bits = rng, int(w), int(bits)

    def below_exp(self, num, den):
        import decimal
        from fractions import Fraction

        digits = 40
        while True:
            with decimal.localcontext() as ctx:
                ctx.prec = digits + 10
                e = Fraction((-(decimal.Decimal(int(num)) / decimal.Decimal(int(den)))).exp())
            tol = e * Fraction(1, 10**digits) + Fraction(1, 10 ** (digits + 5))  # rounding of x and of exp
            if Fraction(self.w + 1, 2**self.bits) <= e - tol:
                return True
            if Fraction(self.w, 2**self.bits) >= e + tol:
                return False
            self.w = (self.w << 62) | int(self.rng.integers(0, _W))
            self.bits += 62
            digits += 20


def _lower_scaled_exp(nx, e, scale, factor=1.0, out=None):
    """floor(fl(e * fl(nx c + scale (1 - factor M)))) with ``c = factor M scale``, M = :data:`_EXP_MARGIN`.

    ``nx = -x`` (float64, x >= 0) and ``e = fl(exp(nx))``: a lower bound of ``scale exp(-x) (1 - m)``,
    ``m = factor M (1 + x)``, for a power of two ``scale`` (2**62 for a 62-bit word, 2**32 for a
    32-bit one: the same bound scaled exactly). It is integer valued, so comparing an integer w
    (or its float64 rounding, monotone) with it is exact in the safe direction: ``fl(w) < lo``
    implies ``w + 1 <= lo``.
    """
    c = factor * _EXP_MARGIN * scale
    f = np.multiply(nx, c, out=out)
    f += scale - c  # scale (1 - m)
    f *= e
    return np.floor(f, out=f)


def _bernoulli_exp(rng, num, den):
    """Bernoulli(exp(-num/den)) for an int64 array num >= 0 and an int den > 0, exact.

    A uniform u in [0, 1) is drawn lazily: its first 32 bits w decide the comparison
    u < exp(-x) whenever [w, w + 1) / 2**32 lies on one side of a float64 enclosure of
    exp(-x) (relative width :data:`_EXP_MARGIN`); otherwise (probability about 2**-31
    exp(-x)) :class:`_LazyUniform` decides it exactly with more bits. Bernoulli(exp(-x)) for
    rational x is what CKS 2020's Algorithm 1 provides; this is the same distribution in
    one 32-bit word per draw (almost always).
    """
    num = np.asarray(num, dtype=_I64)
    return _bernoulli_exp_float(rng, num.astype(np.float64) / float(den), lambda i: (int(num.flat[i]), den))


def _bernoulli_exp_float(rng, x, exact):
    """Bernoulli(exp(-x_i)) for x_i = num_i / den_i, given x as float64 (relative error at most
    ``3 * 2**-53``, the numeric model of :data:`_EXP_MARGIN`) and ``exact(i)`` -> (num_i, den_i)
    as Python ints for the undecided entries (see :func:`_bernoulli_exp`). ``x`` is overwritten.
    """
    return _bernoulli_exp_neg(rng, np.negative(x, out=x), exact)


def _bernoulli_exp_neg(rng, nx, exact):
    """:func:`_bernoulli_exp_float` given ``nx = -x`` (overwritten): one ``exp`` and one bound per entry.

    With ``lo = floor(2**32 exp(-x) (1 - m))`` (:func:`_lower_scaled_exp`, ``m = _EXP_MARGIN
    (1 + x)``) and the 32-bit word w of u, ``d = w - lo`` is exact in float64 (integers below
    2**33). ``u < exp(-x)`` when ``d <= -1`` (``(w + 1) / 2**32 <= exp(-x) (1 - m)``). The entry
    is left to the exact path when ``-1 < d < 3 + 2.0001 c`` (``c = 2**32 _EXP_MARGIN``): the
    upper bound ``hi = ceil(2**32 exp(-x) (1 + m))`` of the enclosure is below ``lo + 3 + 2.0001 c``
    (``hi - lo <= 2 + 2 c (1 + x) e**-x`` plus roundings far below 1, and ``(1 + x) e**-x <= 1``),
    so an entry decided ``u >= exp(-x)`` has ``w >= hi``. The same decisions as comparing the
    62-bit scaled enclosure with ``2**30 w`` (the bounds scale exactly by powers of two).
    """
    w = _words32(rng, nx.size).reshape(nx.shape)  # the first 32 bits of u; more on demand
    e = np.exp(nx)
    d = _lower_scaled_exp(nx, e, 2.0**32, out=nx)
    np.subtract(w, d, out=d)  # exact: integers below 2**33
    out = np.less_equal(d, -1.0)  # w + 1 <= lo: u < exp(-x)
    undecided = np.greater(d, -1.0)
    undecided &= np.less(d, 3.0 + 2.0001 * _EXP_MARGIN * 2.0**32)  # u >= exp(-x) not shown
    for i in np.flatnonzero(undecided):  # probability about 2**-31 exp(-x): exact
        out.flat[i] = _LazyUniform(rng, w.flat[i], 32).below_exp(*exact(i))
    return out


def _geometric_exact(u, t, guess):
    """G = max{g >= 0 : u < exp(-g/t)} for a :class:`_LazyUniform` u (exponential then binary search)."""
    lo = max(int(guess), 0)
    if not u.below_exp(lo, t):
        hi, lo = lo, 0  # c(0) is true: u < 1
    else:
        step = 1
        hi = lo + step
        while u.below_exp(hi, t):
            lo, step = hi, 2 * step
            hi = lo + step
    while hi - lo > 1:  # invariant: c(lo) true, c(hi) false
        mid = (lo + hi) // 2
        if u.below_exp(mid, t):
            lo = mid
        else:
            hi = mid
    return lo


#: The upper bound of exp(-(g+1)/t) in :func:`_geometric` is exp(-g/t) times exp(-1/t): two
#: more roundings and the error of the scalar exp, covered by this factor on the margin.
_NEXT_FACTOR = 4.0


def _upper_next(nx, e, t, out=None):
    """An upper bound of ``2**62 exp(-(g+1)/t)`` from ``nx = -g/t`` and ``e = fl(exp(nx))``, float64.

    ``fl(e * fl(x a + b))`` with ``a = 2**62 q c``, ``b = 2**62 q (1 + c (1 + 1/t))``, ``q =
    fl(exp(-1/t))``, ``c = _NEXT_FACTOR * _EXP_MARGIN``: ``2**62 exp(-(g+1)/t) (1 + c (1 + x +
    1/t))`` up to the errors of ``e`` and ``q`` (each within ``2**-45 (1 + x)``) and four roundings,
    which the factor 4 covers. No ceiling is needed: ``fl(w) > hi`` implies ``w > hi`` for a float
    ``hi`` (round-to-nearest is monotone).
    """
    c, q = _NEXT_FACTOR * _EXP_MARGIN * _W, math.exp(-1.0 / t)  # libm's exp: the same model
    hi = np.multiply(nx, -c * q, out=out)
    hi += (_W + c + c / t) * q
    hi *= e
    return hi


def _geometric(rng, t, n):
    """n draws of G with P(G >= g) = exp(-g/t), by inversion of a lazily drawn uniform, exact.

    G = max{g : u < exp(-g/t)}: a float64 guess from the first 62 bits w of u, kept when
    bounds of exp(-g/t) and exp(-(g+1)/t) (:func:`_lower_scaled_exp`, the enclosure of
    :data:`_EXP_MARGIN`) show that u lies between them; otherwise (probability about
    2**-42 x t) decided exactly by :func:`_geometric_exact`. One ``exp`` per draw:
    exp(-(g+1)/t) is bounded above by ``e q`` with ``e = fl(exp(-g/t))``, ``q =
    fl(exp(-1/t))``, with the margin :data:`_NEXT_FACTOR` ``* _EXP_MARGIN (1 + g/t)``
    (``e`` and ``q`` are each within ``2**-45 (1 + x)`` of their values and the two
    products round twice more: ``4 * 2**-45`` covers it). Which draws take the exact path
    does not change the result (nor the random words drawn: the exact path draws more
    bits only where u's 62-bit cell meets exp(-g/t), where no enclosure decides).
    Returned as integer-valued float64, exact below 2**53 (G >= 2**53 has probability
    exp(-2**53 / t), below exp(-2**31) for the scales of this package).
    """
    w = _words62(rng, n)
    wf = w.astype(np.float64)
    g = wf + 0.5
    g *= 2.0**-62  # in (0, 1]: log <= 0, g >= 0 (-0.0 at u's last cell: equal to 0 everywhere below)
    np.log(g, out=g)
    g *= -float(t)
    np.floor(g, out=g)
    nx = g / -float(t)  # -g/t, exactly the negative of g/t
    e = np.exp(nx)
    lo_a = _lower_scaled_exp(nx, e, float(_W))  # u < exp(-g/t) when w + 1 <= lo_a
    ok = np.less(wf, lo_a)
    hi_b = _upper_next(nx, e, t, out=lo_a)
    ok &= np.greater(wf, hi_b)  # u >= w / 2**62 > exp(-(g+1)/t)
    for i in np.flatnonzero(~ok):
        g[i] = _geometric_exact(_LazyUniform(rng, w[i], 62), t, g[i])
    return g


def _bits(rng, n):
    """n independent fair bits (bool), 62 from each drawn word (bit j of a word is draw 62 i + j)."""
    words = np.asarray(_words62(rng, -(-n // 62)), dtype="<i8")  # little-endian bytes (no copy on x86)
    return np.unpackbits(words.view(np.uint8), bitorder="little").reshape(-1, 64)[:, :62].ravel()[:n].view(bool)


def _signed(rng, mag):
    """Attach independent uniform signs to magnitudes (a float64 array of integers, overwritten).

    The sign is written into the float's sign bit; ``+ 0.0`` turns -0.0 into 0.0.
    """
    neg = _bits(rng, mag.size).astype(np.uint64)
    neg <<= np.uint64(63)
    bits = mag.view(np.uint64)
    bits ^= neg
    mag += 0.0
    return mag


def _halve_zeros(rng, g, keep):
    """Reject each zero of ``g`` with probability 1/2 (in ``keep``): |Y| of a discrete Laplace."""
    zeros = np.flatnonzero(g == 0.0)
    if zeros.size:
        keep[zeros] &= _bits(rng, zeros.size)
    return keep


def _as(k, dtype):
    """Integer-valued float64 ``k`` as ``dtype`` (int64 by default; float64 as it is)."""
    return k if np.dtype(dtype) == np.float64 else k.astype(dtype)


def discrete_laplace(rng, t, size, dtype=np.int64):
    """Exact draws from the discrete Laplace P(k) proportional to exp(-|k| / t).

    A magnitude G with P(G >= g) = exp(-g/t) (:func:`_geometric`), a zero kept with
    probability 1/2 (so that 0 is not counted twice), then a uniform sign: the
    construction of CKS 2020, Algorithm 2 (sign B and magnitude G, (B = 1, G = 0)
    rejected), with the sign drawn for the accepted magnitudes only and the geometric
    drawn by exact inversion.

    Parameters
    ----------
    rng : numpy.random.Generator
    t : int
        The scale, an integer >= 1.
    size : int
        The number of draws.
    dtype : {numpy.int64, numpy.float64}, default=numpy.int64
        float64: the same integers as float64 (exact below 2**53), without a conversion.

    Returns
    -------
    k : ndarray of shape (size,)
    """
    t = int(t)

    def propose(m):
        g = _geometric(rng, t, m + m // t + 4 * math.isqrt(m // t) + 16)  # P(G = 0) / 2 ~ 1 / (2t) rejected
        return np.compress(_halve_zeros(rng, g, np.ones(g.size, dtype=bool)), g)

    return _as(_signed(rng, _fill(size, propose)), dtype)


def _fill(size, propose):
    """``size`` accepted draws, ``propose(m)`` returning the accepted ones of a batch sized for m.

    The accepted draws of a batch are i.i.d. in their order, so the first ones are kept.
    """
    y = propose(size)
    if y.size >= size:  # almost always: no copy
        return y[:size]
    out = np.empty(size, dtype=np.float64)
    out[:y.size] = y
    filled = y.size
    while filled < size:
        y = propose(size - filled)[: size - filled]
        out[filled:filled + y.size] = y
        filled += y.size
    return out


#: Proposals per output of :func:`discrete_gaussian` (t = s): the acceptance rate tends
#: to exp(-1/2) sqrt(pi/2) ~ 0.760 for large s; the batch adds four standard deviations.
_DG_RATE = 1.0 / 0.76


def discrete_gaussian(rng, s, size, dtype=np.int64):
    """Exact draws from the discrete Gaussian P(k) proportional to exp(-k^2 / (2 s^2)) (CKS 2020, Algorithm 3).

    A discrete Laplace proposal Y of scale ``t = s`` accepted with probability
    ``exp(-(|Y| - s)^2 / (2 s^2))`` (the algorithm is exact for every t > 0; t = s keeps
    every quantity an integer). The acceptance depends on |Y| only, so the magnitudes
    |Y| (:func:`_geometric`, a zero kept with probability 1/2) are proposed, accepted
    and only then given uniform signs: the same distribution with fewer draws. Batch
    rejection: candidates for all missing outputs at once, a new batch only for the
    outputs still missing (usually none).

    Parameters
    ----------
    rng : numpy.random.Generator
    s : int
        The scale parameter sigma, an integer >= 1 (at most 2**21 in this package).
    size : int
        The number of draws.
    dtype : {numpy.int64, numpy.float64}, default=numpy.int64
        float64: the same integers as float64 (exact below 2**53), without a conversion.

    Returns
    -------
    k : ndarray of shape (size,)
    """
    s = int(s)
    den = 2 * s * s

    def propose(m):
        g = _geometric(rng, s, int(m * _DG_RATE) + 4 * math.isqrt(m) + 16)
        nx = g - s  # exact: integers below 2**53
        nx /= s
        nx *= nx
        nx *= -0.5  # -(|Y| - s)^2 / (2 s^2), relative error at most 3 * 2**-53
        keep = _bernoulli_exp_neg(rng, nx, lambda i: ((int(g[i]) - s) ** 2, den))
        return np.compress(_halve_zeros(rng, g, keep), g)

    return _as(_signed(rng, _fill(size, propose)), dtype)


# ------------------------------------------------------------ cryptographic integers
class CryptoGenerator(np.random.Generator):
    """A ``numpy.random.Generator`` whose ``integers`` come from ``os.urandom``.

    The exact samplers of this module draw only ``integers``, so with
    ``random_state=None`` (:func:`dp_sklearn._release.make_rng`) every bit of the
    additive noise comes from the operating system's cryptographic source. The other
    methods (floats: Gumbel, norm-Gamma, Poisson subsampling, tie dithers) use the
    wrapped bit generator, seeded with 256 bits of the same source. Every ``integers``
    call also advances the bit generator by one word, so that a draw is visible in its
    state (the release path counts a moved state as a release).
    """

    def integers(self, low, high=None, size=None, dtype=np.int64, endpoint=False):
        """Uniform integers in ``[low, high)`` from ``os.urandom`` (exact rejection, no modulo bias)."""
        if high is None:
            low, high = 0, low
        lo = np.asarray(low, dtype=object if np.ndim(low) == 0 and abs(int(low)) > 2**62 else np.int64)
        hi = np.asarray(high, dtype=object if np.ndim(high) == 0 and abs(int(high)) > 2**62 else np.int64)
        if lo.dtype == object or hi.dtype == object or np.dtype(dtype) not in (np.dtype(np.int64), np.dtype(int)):
            return super().integers(low, high, size=size, dtype=dtype, endpoint=endpoint)
        if lo.ndim == 0 and hi.ndim == 0:  # one range: a power of two is a plain bit field
            width = int(hi) - int(lo) + (1 if endpoint else 0)
            if width > 0 and width & (width - 1) == 0:
                self.bit_generator.random_raw()  # a draw moves the state (see the class docstring)
                shape = () if size is None else tuple(np.atleast_1d(size))
                n, bits = int(np.prod(shape, dtype=np.int64)), width.bit_length() - 1
                word = (np.uint32, 32) if bits <= 32 else (np.uint64, 64)  # the top ``bits`` bits of a
                w = np.frombuffer(os.urandom(word[1] // 8 * n), dtype=word[0]) >> word[0](word[1] - bits) \
                    if bits else np.zeros(n, dtype=np.uint64)  # uniform word: exactly uniform
                res = w.astype(np.int64).reshape(shape)
                if int(lo):
                    res += np.int64(lo)
                return res if shape else np.int64(res)
        span = hi - lo + (1 if endpoint else 0)
        shape = np.broadcast_shapes(span.shape, () if size is None else tuple(np.atleast_1d(size)))
        span = np.broadcast_to(span, shape).astype(np.uint64).ravel()
        if np.any(span == 0):
            raise ValueError("high <= low")
        self.bit_generator.random_raw()  # a draw moves the state (see the class docstring)
        out = np.empty(span.size, dtype=np.uint64)
        todo = np.arange(span.size)
        while todo.size:
            w = np.frombuffer(os.urandom(8 * todo.size), dtype=np.uint64) >> np.uint64(1)  # 63 bits
            m = span[todo]
            limit = (np.uint64(2**63) // m) * m  # accept below a multiple of m: exactly uniform
            ok = w < limit
            out[todo[ok]] = w[ok] % m[ok]
            todo = todo[~ok]
        res = out.astype(np.int64).reshape(shape) + np.broadcast_to(lo, shape)
        return res.astype(np.int64) if size is not None or shape else np.int64(res)

    def __reduce__(self):
        return (CryptoGenerator, (self.bit_generator,))


# ------------------------------------------------- exponential mechanism (exact Gumbel-max)
#: Relative margin of the float64 enclosure of a Gumbel-max key (:func:`gumbel_top`): the key's
#: float parts (a log-weight, a scaled score, a Gumbel bound) are each within 2**-44 of their
#: magnitude plus 2**-44 under the numeric model of :data:`_EXP_MARGIN` (``log``/``log1p``
#: within 128 units in the last place, correctly rounded +, -, *); 2**-40 leaves a factor 16.
_KEY_MARGIN = 2.0**-40


def _gumbel_at(w, plus):
    """Float64 ``G(u) = -ln(-ln u)`` at ``u = (w + plus) / 2**62`` (``plus`` 0 or 1), w an int64 array.

    ``e = -ln u`` is ``-log(u)`` with u rounded to float64 (relative error ``2**-53``: an
    absolute error ``2**-53`` of e, at most ``2**-44`` relative for ``u <= 1 - 2**-9``, where
    ``e >= 2**-9``), and ``-log1p(-v)`` with ``v = 1 - u`` (an exact integer times ``2**-62``,
    rounded) above: e to within about ``2**-44`` relative, so ``G`` to within ``2**-44`` plus
    the rounding of the last ``log``. ``G(0) = -inf``, ``G(1) = +inf``.
    """
    k = w + 1 if plus else w
    e = k * 2.0**-62  # k (<= 2**62) rounded to float64, times a power of two (a new, contiguous array)
    with np.errstate(divide="ignore"):  # U = 0 or 1 (probability 2**-62 each): log(0), the infinite ends
        np.log(e, out=e)
        np.negative(e, out=e)
        near = np.flatnonzero(k > _W - 2**53)  # u > 1 - 2**-9
        if near.size:  # U = 1: -log1p(0) = -0, and G = -log(-0) = +inf below
            e.reshape(-1)[near] = -np.log1p((k.reshape(-1)[near] - _W).astype(np.float64) * 2.0**-62)
        np.log(e, out=e)  # U = 0: e = +inf, and G = -inf
        np.negative(e, out=e)
    return e


def _gumbel_lo_word(k):
    """:func:`_gumbel_at` ``(w, 0)`` of one word ``k`` (a Python int), with Python's ``math`` (the same libm operations)."""
    if k == 0:
        return -math.inf
    e = -math.log(k * 2.0**-62) if k <= _W - 2**53 else -math.log1p((k - _W) * 2.0**-62)
    return -math.log(e)


def _gumbel_lo(w):
    """:func:`_gumbel_at` ``(w, 0)`` for a few words, with Python's ``math`` (the same libm operations)."""
    out = np.empty(w.shape)
    for i, k in enumerate(w.flat):
        out.flat[i] = _gumbel_lo_word(int(k))
    return out


def _log_weight(weight):
    """``(float log-weight, exact weight of candidate i)`` for ``weight`` None, an array, or ``(hi, lo)``."""
    if weight is None:
        return None, lambda i: None
    if isinstance(weight, tuple):
        hi, lo = (np.asarray(a, dtype=np.float64) for a in weight)
        d = hi - lo  # rounded: relative error 2**-53, absolute 2**-53 after log
        lw = np.full(d.shape, -np.inf)
        np.log(d, out=lw, where=d > 0)
        return lw, lambda i: (float(hi[i]), float(lo[i]))
    w = np.asarray(weight, dtype=np.float64)
    lw = np.full(w.shape, -np.inf)
    np.log(w, out=lw, where=w > 0)
    return lw, lambda i: (float(w[i]), 0.0)


def gumbel_top(rng, score, scale, weight=None, k=1, starts=None):
    """Exact exponential mechanism: the top ``k`` of ``ln w_i + scale * score_i + G_i``, G_i i.i.d. Gumbel.

    With ``k = 1``, index ``i`` is returned with probability exactly proportional to
    ``w_i exp(scale * score_i)`` (Gumbel-max), where ``score``, ``scale`` and the weights are
    the float64 numbers given, read as exact rationals. With ``k > 1``, the set of the ``k``
    largest keys: the one-shot top-k of Durfee & Rogers (NeurIPS 2019), distributed as ``k``
    draws without replacement. Each Gumbel ``G_i = -ln(-ln U_i)`` is an exact function of a
    uniform ``U_i`` drawn lazily as integers: its first 62 bits give float64 bounds of every
    key (with the relative margin :data:`_KEY_MARGIN`), and the top ``k`` is returned when
    those bounds decide it (every selected key's lower bound above every other key's upper
    bound). Otherwise (for k = 1, when the two largest keys are within three margins plus
    the widths of their uniforms' cells: about ``3 * 2**-40 (53 + |their keys' parts|) +
    m * 2**-56``, since the log-gap of the two largest keys is below ``x`` with probability
    at most ``e**x - 1`` whatever the scores; ``docs/privacy.md``) the candidates the bounds cannot rule out are
    decided exactly: more bits of their ``U_i`` and the keys computed with :mod:`decimal`
    at increasing precision (:func:`_top_exact`). The float path does a fixed amount of
    work per candidate (one 62-bit word, a few logarithms).

    Parameters
    ----------
    rng : numpy.random.Generator
    score : ndarray of shape (m,) or (m, p)
        Candidate scores (utilities); ``p`` independent mechanisms over axis 0.
    scale : float
        The factor of the scores, > 0 (``epsilon / (2 sensitivity)`` for the exponential mechanism).
    weight : None, ndarray or tuple (hi, lo) of ndarrays, same shape as ``score``
        Base-measure weights ``w_i >= 0`` (``None``: 1), or ``w_i = hi_i - lo_i`` computed
        exactly (interval lengths). Candidates of weight 0 are never returned. For a 2-D
        ``score`` of shape ``(m, p)`` and ``k = 1`` the weights may have shape ``(m, p0)`` with
        ``p`` a multiple of ``p0``: column ``j`` then has the weights of column ``j % p0``
        (several mechanisms over the same intervals, their logarithms computed once).
    k : int, default=1
        Number of candidates returned per mechanism (``<= m``, at most the number of
        candidates of positive weight).
    starts : ndarray of int or None, default=None
        For a 1-D ``score`` and ``k = 1``: independent mechanisms over the segments
        ``score[starts[j]:starts[j + 1]]`` (increasing, ``starts[0] = 0``, none empty).

    Returns
    -------
    idx : ndarray of int64
        ``k = 1``: shape ``()`` (1-D score), ``(p,)`` (2-D) or ``(len(starts),)`` (flat
        indices); ``k > 1``: shape ``(k,)`` or ``(k, p)``, the selected indices in no
        particular order.
    """
    score = np.asarray(score, dtype=np.float64)
    if score.ndim == 2 and k == 1:
        return _argmax_columns(rng, score, scale, weight)
    if score.ndim == 2:
        m, p = score.shape
        if weight is not None:
            weight = tuple(np.asarray(a, dtype=np.float64).T.ravel() for a in weight) if isinstance(weight, tuple) \
                else np.asarray(weight, dtype=np.float64).T.ravel()
        flat = score.T.ravel()
        if k == 1:
            return gumbel_top(rng, flat, scale, weight, 1, np.arange(p) * m) - np.arange(p) * m
        return np.stack([gumbel_top(rng, score[:, j], scale, None if weight is None else
                                    (tuple(a[j * m:(j + 1) * m] for a in weight) if isinstance(weight, tuple)
                                     else weight[j * m:(j + 1) * m]), k) for j in range(p)], axis=1)
    single = starts is None
    starts = np.zeros(1, dtype=np.intp) if single else np.asarray(starts, dtype=np.intp)
    m = score.size
    sizes = np.diff(np.append(starts, m))
    seg = np.repeat(np.arange(starts.size), sizes)
    lw, exact_w = _log_weight(weight)
    cs = float(scale) * score
    L = cs if lw is None else cs + lw
    fin_L = np.isfinite(L)
    w = rng.integers(0, _W, size=m, dtype=_I64)
    g_hi = _gumbel_at(w, 1)
    up = L + g_hi
    up[~fin_L] = -np.inf  # weight 0: never returned (and no NaN from -inf + inf)
    # each candidate's margin: _KEY_MARGIN times (53 + the magnitudes of its key's float parts;
    # 53 covers |G| <= 44 of the lower bound and the constant error terms)
    size = np.abs(cs) if lw is None else np.abs(cs) + np.abs(np.where(fin_L, lw, 0.0))
    size += np.where(np.isfinite(g_hi), np.abs(g_hi), 0.0)
    size += 53.0
    size *= _KEY_MARGIN
    upm = up + size  # upper bounds of the keys (-inf for weight 0)
    if k == 1:
        top = np.maximum.reduceat(up, starts)
        hit = np.flatnonzero(up == top[seg])
        sel = hit[np.unique(seg[hit], return_index=True)[1]][None, :]  # the first maximum of each segment
    else:
        if not single:
            raise ValueError("k > 1 is for one mechanism (starts=None).")
        sel = np.argpartition(-up, k - 1)[:k][:, None]
    ws = w[sel]
    lo_sel = L[sel] + (_gumbel_lo(ws) if ws.size <= 16 else _gumbel_at(ws, 0)) - size[sel]  # G(w / 2**62) <= G(U)
    rest = upm.copy()
    rest[sel] = -np.inf
    ok = np.min(lo_sel, axis=0) > np.maximum.reduceat(rest, starts)
    ok &= np.all(fin_L[sel], axis=0)
    for j in np.flatnonzero(~ok):
        cut = np.min(lo_sel[:, j])
        a, b = starts[j], starts[j] + sizes[j]
        pool = a + np.flatnonzero(fin_L[a:b] & (upm[a:b] >= cut))
        pool = np.union1d(pool, sel[:, j][fin_L[sel[:, j]]])
        sel[:, j] = _top_exact(rng, pool, w[pool], lambda i: (exact_w(i), float(scale), float(score[i])), k)
    if k > 1:
        return sel[:, 0]
    return sel[0, 0] if single else sel[0]


#: In :func:`_argmax_columns`, every candidate's margin ``_KEY_MARGIN (53 + |c u| + |ln w| + |G|)`` is
#: at most ``_KEY_MARGIN (|key| + _MARGIN_CONST)``: ``|c u| + |ln w| <= |c u + ln w| + 2 |ln w|``,
#: ``|ln w| <= 745`` for a positive float64 w, ``|G| <= 44`` for a finite bound, so
#: ``53 + 1490 + 2 * 44 = 1631 <= 1700``.
_MARGIN_CONST = 1700.0


#: up to this many columns, :func:`_column_reduce` reduces each column on its own (NumPy's
#: reduction over axis 0 of a C-ordered array with few columns is buffered and many times slower)
_FEW_COLUMNS = 8


def _column_reduce(a, func):
    """``func(a, axis=0)`` for a 2-D ``a`` (``np.max`` or ``np.argmax``): the same values, by column when few."""
    if a.shape[1] > _FEW_COLUMNS:
        return func(a, axis=0)
    return np.array([func(a[:, j]) for j in range(a.shape[1])])


#: keys per row chunk of :func:`_argmax_columns`: the chunk's temporaries (a few arrays of this many
#: float64) stay in cache, so the Gumbel bounds cost arithmetic rather than memory traffic
_CHUNK_KEYS = 2**15


def _chunk_logits(score, scale, weight, rows, cols=None):
    """``scale * score + ln w`` of ``score[rows]`` (or of the entries ``(rows, cols)``): the float
    operations of :func:`_log_weight` and of the sums in :func:`_argmax_columns`, entry by entry.

    ``weight``: None, an ndarray or a tuple ``(hi, lo)`` of shape (m, p0), p0 dividing p (column
    ``j`` has the weights of column ``j % p0``).
    """
    L = scale * (score[rows] if cols is None else score[rows, cols])
    if weight is None:
        return L
    if isinstance(weight, tuple):
        d = weight[0][rows] - weight[1][rows] if cols is None else \
            weight[0][rows, cols % weight[0].shape[1]] - weight[1][rows, cols % weight[1].shape[1]]
    else:
        d = weight[rows] if cols is None else weight[rows, cols % weight.shape[1]]
    lw = np.log(d)  # the same log of every positive weight, unmasked (the caller ignores divide/invalid)
    np.fmax(lw, -np.inf, out=lw)  # -inf for a weight <= 0 (log gives -inf or NaN), as _log_weight
    if cols is None and lw.shape[1] == 1 < L.shape[1] <= _FEW_COLUMNS:  # one weight column, a few mechanisms:
        for j in range(L.shape[1]):  # column by column (a broadcast over 2 columns is a slow short loop)
            L[:, j] += lw[:, 0]
    elif cols is None and 1 < lw.shape[1] != L.shape[1]:  # weights shared by the p / p0 blocks of columns
        L.reshape(L.shape[0], L.shape[1] // lw.shape[1], lw.shape[1])[...] += lw[:, None, :]
    else:
        L += lw  # -inf for weight 0
    return L


def _argmax_columns(rng, score, scale, weight):
    """:func:`gumbel_top` with ``k = 1`` for a 2-D ``score``: one mechanism per column.

    The same enclosure with the margins bounded by :data:`_MARGIN_CONST`: the bound
    ``up_t + _KEY_MARGIN (|up_t| + _MARGIN_CONST)`` of a key is nondecreasing in ``up_t``,
    so the largest other upper bound is that of the largest other ``up_t``.

    The same uniforms (one ``(m, p)`` draw), the same float operations per key and the
    same reductions as one pass over the whole array, made over row chunks of about
    :data:`_CHUNK_KEYS` keys: each chunk's upper bounds are reduced to its per-column
    maximum (first index on ties) and the maximum of its other keys, and the running
    maxima are merged exactly (a maximum of floats does not round). Every chunk does the
    same work whatever the data; the column of a rare undecided mechanism is recomputed
    for the exact slow path.
    """
    m, p = score.shape
    scale = float(scale)
    if weight is not None:
        weight = tuple(np.asarray(a, dtype=np.float64) for a in weight) if isinstance(weight, tuple) \
            else np.asarray(weight, dtype=np.float64)
    p0 = p if weight is None else (weight[0] if isinstance(weight, tuple) else weight).shape[1]

    def exact_w(ij):  # the weight of candidate (i, j), read exactly
        if weight is None:
            return None
        if isinstance(weight, tuple):
            return float(weight[0][ij[0], ij[1] % p0]), float(weight[1][ij[0], ij[1] % p0])
        return float(weight[ij[0], ij[1] % p0]), 0.0

    w = _words62(rng, (m, p))
    cols = np.arange(p)
    best = np.full(p, -np.inf)  # the running maximum of each column, its row, the largest other key
    sel = np.zeros(p, dtype=np.intp)
    other = np.full(p, -np.inf)
    step = max(1, _CHUNK_KEYS // max(p, 1))
    with np.errstate(divide="ignore", invalid="ignore"):  # log of a weight 0: -inf, as _log_weight's
        for a in range(0, m, step):
            rows = slice(a, min(a + step, m))
            up = _gumbel_at(w[rows], 1)
            up += _chunk_logits(score, scale, weight, rows)
            np.fmax(up, -np.inf, out=up)  # -inf + inf (weight 0, U's last cell): -inf, never returned
            i = _column_reduce(up, np.argmax)
            top = up[i, cols]
            up[i, cols] = -np.inf
            rest = _column_reduce(up, np.max)
            better = top > best  # strict: the first maximum of the column, as np.argmax
            np.maximum(other, rest, out=other)
            np.maximum(other, np.where(better, best, top), out=other)
            np.copyto(best, top, where=better)
            np.copyto(sel, i + a, where=better)
        ws, L_sel = w[sel, cols], _chunk_logits(score, scale, weight, sel, cols)
        lo_sel = L_sel + (_gumbel_lo(ws) if p <= 16 else _gumbel_at(ws, 0))
        lo_sel -= _KEY_MARGIN * (np.abs(L_sel) + _MARGIN_CONST)
        x = other
        thr = x + _KEY_MARGIN * (np.abs(np.maximum(x, -1e300)) + _MARGIN_CONST)  # -inf: one candidate of weight > 0
        ok = lo_sel > thr
        for j in np.flatnonzero(~ok):  # rare (see gumbel_top): this column's keys again, then exactly
            Lj = _chunk_logits(score, scale, weight, np.arange(m), np.full(m, j))
            col = _gumbel_at(w[:, j], 1)
            col += Lj
            np.fmax(col, -np.inf, out=col)
            col[sel[j]] = np.inf
            bound = col + _KEY_MARGIN * (np.abs(np.maximum(col, -1e300)) + _MARGIN_CONST)
            pool = np.flatnonzero(np.isfinite(Lj) & (bound >= lo_sel[j]))
            sel[j] = _top_exact(rng, pool, w[pool, j], lambda i, j=j: (exact_w((i, j)), scale, float(score[i, j])),
                                1)[0]
    return sel


def _key_bounds(u_w, bits, logit, size, digits):
    """Decimal bounds of ``logit + G(U)`` for U in ``[u_w, u_w + 1) / 2**bits`` (``logit`` a Decimal,
    ``size`` the sum of the magnitudes of its parts)."""
    import decimal

    D = decimal.Decimal
    out = []
    for plus in (0, 1):
        num = u_w + plus
        if num == 0:
            out.append(D("-Infinity"))
            continue
        if num == 2**bits:
            out.append(D("Infinity"))
            continue
        e = -(D(num) / D(2**bits)).ln()  # relative error <= 10**-(digits+8): see _top_exact
        g = -e.ln()
        key = logit + g
        tol = (size + abs(logit) + abs(g) + 1) * D(10) ** -digits
        out.append(key - tol if plus == 0 else key + tol)
    return out


def _top_exact(rng, pool, w, exact_of, k):
    """The top ``k`` keys among ``pool`` decided exactly (the slow path of :func:`gumbel_top`).

    Candidate ``i``'s key is ``ln(hi - lo) + scale * score + G(U_i)`` (``exact_of(i)`` ->
    ``((hi, lo) or None, scale, score)``, floats read exactly), ``U_i`` known by its first
    ``bits`` bits. Every quantity is computed with :mod:`decimal` at precision
    ``digits + 0.302 bits + 12``, so that ``-ln U`` (at least ``2**-bits`` unless U's bits
    are all ones) has relative error below ``10**-(digits + 8)`` and each key bound
    (:func:`_key_bounds`) errs by less than its tolerance ``10**-digits (1 + |parts|)``. A
    candidate is in when fewer than ``k`` others can exceed it, out when ``k`` others
    surely do; the undecided ones draw 62 more bits, and ``digits`` grows by 20, until the
    top ``k`` is decided (ties have probability 0).
    """
    import decimal

    D = decimal.Decimal
    pool = [int(i) for i in pool]
    state = {i: [int(v), 62] for i, v in zip(pool, w)}
    digits = 30
    while True:
        bits = max(b for _, b in state.values())
        with decimal.localcontext() as ctx:
            ctx.prec = digits + math.ceil(0.302 * bits) + 12
            bounds = {}
            for i in pool:
                wt, sc, s = exact_of(i)
                logit = D(sc) * D(s)
                size = abs(logit)
                if wt is not None:
                    lw = (D(wt[0]) - D(wt[1])).ln()
                    logit, size = logit + lw, size + abs(lw)
                bounds[i] = _key_bounds(state[i][0], state[i][1], logit, size, digits)
        inside, undecided = [], []
        for i in pool:
            above = sum(1 for j in pool if j != i and bounds[j][1] > bounds[i][0])  # others that may beat i
            surely = sum(1 for j in pool if j != i and bounds[j][0] > bounds[i][1])  # others that surely beat i
            if above < k:
                inside.append(i)
            elif surely < k:
                undecided.append(i)
        if len(inside) == k:
            return np.array(inside, dtype=_I64)
        if not undecided:  # cannot happen with valid bounds; refine everything rather than loop
            undecided = [i for i in pool if i not in inside]
        for i in undecided:
            s = state[i]
            s[0] = (s[0] << 62) | int(rng.integers(0, _W))
            s[1] += 62
        digits += 20


def uniform_on_grid(rng, left, right, gamma):
    """Exactly uniform points of ``[left_i, right_i]`` rounded to the grid ``gamma Z``: the integers k_i.

    ``k = floor(A + (B - A) U)`` with ``A = left / gamma + 1/2``, ``B = right / gamma + 1/2``
    (``left``, ``right``, ``gamma`` read as exact dyadic rationals) and U uniform on [0, 1),
    known by its first 124 bits ``w`` (two 62-bit words per point, drawn for all points in
    one call): k is returned when ``[A + (B - A) w / 2**124, A + (B - A) (w + 1) / 2**124)``
    holds no integer, which fails with probability at most ``(B - A) 2**-124`` (below
    ``2**-80`` on the grids of :func:`dp_sklearn._noise.em_grid`); otherwise more bits of U
    are drawn until it does. The comparisons are exact (Python integers). The release
    ``k gamma`` is a function of the integer k: the float64 bits of the exact point are
    never released. The randomness drawn is fixed (two words per point) unless that rare
    case occurs.

    Parameters
    ----------
    rng : numpy.random.Generator
    left, right : ndarray of float64, shape (p,)
        ``left < right``.
    gamma : float or ndarray of float64, shape (p,)
        Powers of two.

    Returns
    -------
    k : ndarray of int64, shape (p,)
    """
    left, right = np.atleast_1d(np.asarray(left, dtype=np.float64)), np.atleast_1d(np.asarray(right, dtype=np.float64))
    gam = np.broadcast_to(np.asarray(gamma, dtype=np.float64), left.shape)
    words = rng.integers(0, _W, size=(left.size, 2), dtype=_I64)
    out = np.empty(left.size, dtype=_I64)
    for i in range(left.size):
        (nl, dl), (nr, dr), (ng, dg) = (float(v).as_integer_ratio() for v in (left[i], right[i], gam[i]))
        den = max(dl, dr, 2 * dg)  # powers of two: the lcm; A = a / g, B = b / g
        g = ng * (den // dg)
        a, b = nl * (den // dl) + g // 2, nr * (den // dr) + g // 2
        w, bits = (int(words[i, 0]) << 62) | int(words[i, 1]), 124
        while True:  # X = (a + (b - a) U) / g; U in [w, w + 1) / 2**bits
            q = g << bits
            lo = (a << bits) + (b - a) * w
            hi = lo + (b - a)
            if lo // q == (hi - 1) // q:
                out[i] = lo // q
                break
            w, bits = (w << 62) | int(rng.integers(0, _W)), bits + 62
    return out
