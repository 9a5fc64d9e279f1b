"""The noise layer: every noise draw that reaches a released value is made here.

Floating-point noise leaks. Adding ``loc + scale * log(u)``-style Laplace noise in float64
releases values whose low-order bits depend on the input: some outputs are reachable
from one input and not from its neighbour, so the guarantee fails outright (Mironov,
"On significance of the least significant bits for differential privacy", CCS 2012).
This module replaces every additive Gaussian and Laplace draw with an **exact** draw
from the discrete Gaussian or discrete Laplace distribution on a grid of public spacing
(Canonne, Kamath & Steinke, "The discrete Gaussian for differential privacy", NeurIPS
2020, Algorithms 1-3), made with integer arithmetic only, and rounds the released value
to the same grid, so that the float64 result is a function of one integer.

API (``rng`` is the fit's ``numpy.random.Generator``, from
:func:`dp_sklearn._release.make_rng`; ``scale`` is the standard deviation of the
Gaussian or the scale ``b`` of the Laplace, in the units of the value):

* :func:`add_gaussian` ``(rng, value, scale, sensitivity)`` and :func:`add_laplace`
  ``(rng, value, scale, sensitivity)``: the release ``value + noise``, exact on the grid
  (``sensitivity`` is the l2, resp. l1, sensitivity of ``value`` the event was planned
  with; the layer absorbs the grid's effect on it, see :func:`grid_scale`).
* :func:`gaussian` ``(rng, scale, size)`` and :func:`laplace` ``(rng, scale, size)``:
  noise alone, on the grid, for noise that enters an objective rather than a sum.
* :func:`gumbel` ``(rng, size)``, :func:`exponential` ``(rng, size)`` and
  :func:`norm_gamma` ``(rng, dim, scale)``: the exponential mechanism's Gumbel-max
  and the norm-Gamma of output/objective perturbation; these remain floating point
  (``docs/privacy.md``, Numeric model).

The grid of a scale is :func:`grid` (a power of two ``2**-GRID_BITS`` below the scale,
a public function of the scale only). Only ``Generator.integers`` is used by the
exact samplers: NumPy draws bounded integers exactly (rejection, no modulo bias).
"""

from __future__ import annotations

import math
import os
import threading
from collections import OrderedDict

import numpy as np

__all__ = ["GRID_BITS", "grid", "grid_scale", "snap", "gaussian", "laplace", "add_gaussian", "add_laplace",
           "gumbel", "exponential", "norm_gamma", "discrete_gaussian", "discrete_laplace", "CryptoGenerator"]

#: The grid of a scale ``s`` is ``2 ** (floor(log2 s) - GRID_BITS)``: the noise is a
#: discrete Gaussian / Laplace of scale between ``2**GRID_BITS`` and ``2**(GRID_BITS+1)``
#: grid steps, so the discretization moves a released value by at most ``2**-(GRID_BITS+1)``
#: of the noise scale. 20 keeps every exact-arithmetic quantity within int64.
GRID_BITS = 20

#: A relative margin added before rounding a scale up to the grid, covering the float
#: rounding of the products that compute it (safe direction).
_MARGIN = 2.0**-40

_I64 = np.int64


# ----------------------------------------------------------------------------- the grid
def grid(scale):
    """The public grid spacing of noise of scale ``scale``: ``2**(floor(log2 scale) - GRID_BITS)``.

    Parameters
    ----------
    scale : float
        The noise scale (> 0, finite).

    Returns
    -------
    gamma : float
        A power of two, in ``(scale * 2**-(GRID_BITS+1), scale * 2**-GRID_BITS]``.

    Raises
    ------
    ValueError
        If ``scale`` is not a finite number > 0.
    """
    scale = float(scale)
    if not (math.isfinite(scale) and scale > 0.0):
        raise ValueError(f"the noise scale must be a finite number > 0, got {scale!r}.")
    return math.ldexp(1.0, math.frexp(scale)[1] - 1 - GRID_BITS)


def grid_scale(scale, sensitivity=None, size=1, norm=2):
    """The noise scale in grid steps (an integer, rounded up), with the grid's effect absorbed.

    Rounding a value to the grid moves each coordinate by at most half a step, so two
    neighbouring values that differ by ``sensitivity`` (l2 for ``norm=2``, l1 for
    ``norm=1``) differ after rounding by at most ``sensitivity + gamma * sqrt(size)``
    (resp. ``+ gamma * size``). The scale is multiplied by that ratio and rounded up, so
    the noise multiplier relative to the rounded value's sensitivity is at least the
    planned one: the planned event stays valid.

    Parameters
    ----------
    scale : float
        The planned scale (standard deviation, or Laplace ``b``), > 0.
    sensitivity : float or None, default=None
        The planned sensitivity of the value; ``None`` when no value is rounded (noise alone).
    size : int, default=1
        The number of coordinates rounded together.
    norm : {1, 2, inf}, default=2
        The norm of ``sensitivity`` (``inf``: per coordinate, e.g. report-noisy-max).

    Returns
    -------
    gamma : float
        :func:`grid` of ``scale``.
    steps : int
        The scale in grid steps, ``>= scale / gamma`` (``>= 2**GRID_BITS``).
    """
    gamma = grid(scale)
    ratio = 1.0
    if sensitivity is not None:
        sensitivity = float(sensitivity)
        if not (math.isfinite(sensitivity) and sensitivity > 0.0):
            raise ValueError(f"sensitivity must be a finite number > 0, got {sensitivity!r}.")
        extra = gamma * {1: float(size), 2: math.sqrt(size)}.get(norm, 1.0)  # norm=inf: one coordinate
        ratio = 1.0 + extra / sensitivity
    steps = math.ceil(float(scale) / gamma * ratio * (1.0 + _MARGIN))
    return gamma, int(steps)


def snap(value, gamma):
    """``value`` rounded to the nearest multiple of the power of two ``gamma`` (exact in float64)."""
    return np.rint(np.asarray(value, dtype=np.float64) / gamma) * gamma


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

#: Relative error allowed, times (1 + x), for float64 ``exp(-x)`` of a float64 x = num / den
#: in :func:`_enclosure`: 2**-45 is 128 units in the last place (libm and NumPy's SIMD exp
#: are within 4; the float ratio adds at most 3 * 2**-53 * x). An assumption of the
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


def _enclosure(x):
    """Integer bounds lo <= 2**62 exp(-x) <= hi for a float64 array x >= 0 (see :data:`_EXP_MARGIN`)."""
    e = np.exp(-x)
    m = _EXP_MARGIN * (1.0 + x)
    lo = np.floor(e * (1.0 - m) * _W).astype(_I64)
    hi = np.minimum(np.ceil(e * (1.0 + m) * _W), 2.0**62 + 1).astype(_I64) + 1
    return lo, hi


def _bernoulli_exp(rng, num, den):
    """Bernoulli(exp(-num/den)) for an int64 array num >= 0 and an int den > 0, exact.

    A uniform u in [0, 1) is drawn lazily: its first 62 bits w decide the comparison
    u < exp(-x) whenever [w, w + 1) / 2**62 lies on one side of a float64 enclosure of
    exp(-x) (relative width :data:`_EXP_MARGIN`); otherwise (probability about 2**-44
    exp(-x)) :class:`_LazyUniform` decides it exactly with more bits. Bernoulli(exp(-x)) for
    rational x is what CKS 2020's Algorithm 1 provides; this is the same distribution in
    one word per draw.
    """
    num = np.asarray(num, dtype=_I64)
    lo, hi = _enclosure(num.astype(np.float64) / float(den))
    w = rng.integers(0, _W, size=num.shape, dtype=_I64)
    out = w < lo  # u < (w + 1) / 2**62 <= lo / 2**62 <= exp(-x)
    for i in np.flatnonzero((w >= lo) & (w < hi)):  # undecided: exact
        out.flat[i] = _LazyUniform(rng, w.flat[i], 62).below_exp(int(num.flat[i]), den)
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


def _geometric(rng, t, n):
    """n draws of G with P(G >= g) = exp(-g/t), by inversion of a lazily drawn uniform, exact.

    G = max{g : u < exp(-g/t)}: a float64 guess from the first 62 bits of u, kept when
    the enclosures of exp(-g/t) and exp(-(g+1)/t) (:func:`_enclosure`) show that u lies
    between them; otherwise (probability about 2**-44 x t) decided exactly by
    :func:`_geometric_exact`.
    """
    w = rng.integers(0, _W, size=n, dtype=_I64)
    g = np.floor(-t * np.log((w.astype(np.float64) + 0.5) / _W)).astype(_I64)
    lo_a, _ = _enclosure(g / t)
    _, hi_b = _enclosure((g + 1) / t)
    bad = np.flatnonzero(~((w < lo_a) & (w >= hi_b)))  # u < exp(-g/t) and u >= exp(-(g+1)/t)
    for i in bad:
        g[i] = _geometric_exact(_LazyUniform(rng, w[i], 62), t, g[i])
    return g


def discrete_laplace(rng, t, size):
    """Exact draws from the discrete Laplace P(k) proportional to exp(-|k| / t).

    A sign B and a magnitude G with P(G >= g) = exp(-g/t) (:func:`_geometric`); (B = 1,
    G = 0) is rejected so that 0 is not counted twice (the construction of CKS 2020,
    Algorithm 2, with the geometric drawn by exact inversion).

    Parameters
    ----------
    rng : numpy.random.Generator
    t : int
        The scale, an integer >= 1.
    size : int
        The number of draws.

    Returns
    -------
    k : ndarray of int64, shape (size,)
    """
    t = int(t)
    out = np.empty(size, dtype=_I64)
    filled = 0
    while filled < size:
        m = size - filled
        batch = m + m // (2 * t) + 16  # rejection probability (1 - exp(-1/t)) / 2
        g = _geometric(rng, t, batch)
        neg = rng.integers(0, 2, size=batch, dtype=_I64) == 1
        y = np.where(neg, -g, g)[~(neg & (g == 0))][:m]
        out[filled:filled + y.size] = y
        filled += y.size
    return out


#: |Y| below this keeps (|Y| - s)^2 within int64 in :func:`discrete_gaussian`.
_SAFE_ABS = 2**31


def discrete_gaussian(rng, s, size):
    """Exact draws from the discrete Gaussian P(k) proportional to exp(-k^2 / (2 s^2)) (CKS 2020, Algorithm 3).

    A discrete Laplace proposal of scale ``t = s`` accepted with probability
    ``exp(-(|Y| - s)^2 / (2 s^2))`` (the algorithm is exact for every t > 0; t = s keeps
    every quantity an integer). Vectorized over draws, a loop over rejection rounds.

    Parameters
    ----------
    rng : numpy.random.Generator
    s : int
        The scale parameter sigma, an integer >= 1 (at most 2**21 in this package).
    size : int
        The number of draws.

    Returns
    -------
    k : ndarray of int64, shape (size,)
    """
    s = int(s)
    den = 2 * s * s
    out = np.empty(size, dtype=_I64)
    filled = 0
    while filled < size:
        m = size - filled
        batch = (3 * m) // 2 + 16  # acceptance ~ 0.75 for t = s: usually one round
        y = discrete_laplace(rng, s, batch)
        a = np.abs(y)
        big = a >= _SAFE_ABS
        dev = np.where(big, 0, a - s)
        keep = _bernoulli_exp(rng, dev * dev, den)
        for i in np.flatnonzero(big):  # probability exp(-2**10) per draw: exact, in Python ints
            keep[i] = _bernoulli_exp_py(rng, (int(a[i]) - s) ** 2, den)
        y = y[keep][:m]
        out[filled:filled + y.size] = y
        filled += y.size
    return out


# --------------------------------------------------------------------------- buffering
#: Draws are made in blocks that double with use (from :data:`_BLOCK_MIN`) up to
#: :data:`_BLOCK_MAX`, and served in order; a block is kept per (Generator, sampler, scale
#: in grid steps), for at most :data:`_CACHE_SIZE` Generators (the cache holds a
#: reference to each, so an id is never reused while cached).
_BLOCK_MIN = 1024
_BLOCK_MAX = 2**16
_CACHE_SIZE = 8
_cache = OrderedDict()
_lock = threading.Lock()


def _draw(sampler, rng, steps, n):
    """``n`` draws of ``sampler(rng, steps, .)``, served from a per-Generator block.

    The i.i.d. draws of one block are used once each, in order: serving them later is
    the same distribution as drawing them now. Every call moves ``rng``'s state, so a
    served draw is visible to the release path (``dp_sklearn._release``).
    """
    key = (id(rng), sampler.__name__, int(steps))
    with _lock:
        entry = _cache.pop(key, None)
        if entry is None or entry[0] is not rng:
            entry = [rng, np.empty(0, dtype=_I64), 0]
        while len(_cache) >= _CACHE_SIZE:
            _cache.popitem(last=False)
        _cache[key] = entry
    buf = entry[1]
    if buf.size < n:
        block = max(n - buf.size, min(max(entry[2], _BLOCK_MIN), _BLOCK_MAX))
        buf = np.concatenate([buf, sampler(rng, steps, block)])
    else:
        rng.bit_generator.random_raw()
    entry[1], entry[2] = buf[n:], entry[2] + n
    return buf[:n]


# ------------------------------------------------------------------------------- the API
def _size(size):
    shape = () if size is None else tuple(np.atleast_1d(np.asarray(size, dtype=int)))
    return shape, int(np.prod(shape, dtype=np.int64))


def gaussian(rng, scale, size=None):
    """Gaussian noise of standard deviation >= ``scale``, exact on the grid of ``scale``.

    ``grid(scale) * K`` with K a discrete Gaussian of parameter ``ceil(scale / grid(scale))``
    grid steps. For noise that is not added to a released sum (e.g. the linear term of
    objective perturbation); a release ``value + noise`` uses :func:`add_gaussian`.

    Parameters
    ----------
    rng : numpy.random.Generator
    scale : float
        Standard deviation, > 0.
    size : int, tuple of int or None
        Output shape (None: a float).

    Returns
    -------
    noise : float or ndarray of float64
    """
    shape, n = _size(size)
    gamma, s = grid_scale(scale)
    out = _draw(discrete_gaussian, rng, s, n).astype(np.float64) * gamma
    return float(out[0]) if size is None else out.reshape(shape)


def laplace(rng, scale, size=None):
    """Laplace noise of scale >= ``scale``, exact on the grid of ``scale`` (see :func:`gaussian`)."""
    shape, n = _size(size)
    gamma, t = grid_scale(scale)
    out = _draw(discrete_laplace, rng, t, n).astype(np.float64) * gamma
    return float(out[0]) if size is None else out.reshape(shape)


def _add(sampler, norm, rng, value, scale, sensitivity):
    scalar = np.ndim(value) == 0
    value = np.asarray(value, dtype=np.float64)
    if float(scale) == 0.0:  # no noise (epsilon = inf): the value itself
        return float(value) if scalar else value.copy()
    gamma, steps = grid_scale(scale, sensitivity, max(value.size, 1), norm)
    k = _draw(sampler, rng, steps, value.size).reshape(value.shape)
    # Both terms are integer multiples of gamma; a correctly rounded sum depends on
    # their exact sum only: the float result is a function of one integer.
    out = snap(value, gamma) + k.astype(np.float64) * gamma
    return float(out) if scalar else out


def add_gaussian(rng, value, scale, sensitivity, norm=2):
    """The Gaussian release ``value + N(0, scale^2)``, exact on the grid (discrete Gaussian).

    ``value`` is rounded to the grid of ``scale`` (:func:`grid`), and integer discrete
    Gaussian noise of at least ``scale`` (inflated by the grid's effect on the l2
    ``sensitivity``, :func:`grid_scale`) is added in grid steps. The discrete Gaussian
    has the continuous one's Renyi divergences at every order (CKS 2020, Proposition 5
    and Theorem 14), see ``docs/privacy.md`` (Numeric model).

    Parameters
    ----------
    rng : numpy.random.Generator
    value : float or array-like
        The exact statistic.
    scale : float
        Planned standard deviation, > 0.
    sensitivity : float
        The sensitivity of ``value`` the event was planned with, > 0.
    norm : {2, 1, inf}, default=2
        The norm of ``sensitivity``.

    Returns
    -------
    release : float or ndarray of float64
        Same shape as ``value``; every entry a multiple of ``grid(scale)``.
    """
    return _add(discrete_gaussian, norm, rng, value, scale, sensitivity)


def add_laplace(rng, value, scale, sensitivity, norm=1):
    """The Laplace release ``value + Lap(scale)``, exact on the grid (discrete Laplace).

    As :func:`add_gaussian`, with the l1 ``sensitivity``: a discrete Laplace of scale
    ``t`` grid steps is ``(shift / t)``-DP for an integer shift (CKS 2020, Section 2).
    """
    return _add(discrete_laplace, norm, rng, value, scale, sensitivity)


# ------------------------------------------------------------- still floating point
def exponential(rng, size=None):
    """Standard exponential draws (floating point; the exponential mechanism's Gumbel as ``-log E``)."""
    return rng.standard_exponential(size=size)


def gumbel(rng, size=None):
    """Standard Gumbel draws (floating point; Gumbel-max selection, see ``docs/privacy.md``)."""
    return rng.gumbel(size=size)


def norm_gamma(rng, dim, scale):
    """b in R^dim with density proportional to exp(-||b||_2 / scale) (floating point).

    ||b||_2 ~ Gamma(shape=dim, scale=scale) with a uniform direction (Chaudhuri,
    Monteleoni & Sarwate, JMLR 2011, Section 3).
    """
    u = rng.standard_normal(dim)
    u /= np.linalg.norm(u)
    return rng.gamma(shape=dim, scale=scale) * u


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
