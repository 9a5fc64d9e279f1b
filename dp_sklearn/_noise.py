"""The noise layer: every noise draw that reaches a released value is made here.

Floating-point noise leaks. Adding ``loc + scale * log(u)``-style Laplace noise in float64
releases values whose low-order bits depend on the input: some outputs are reachable
from one input and not from its neighbour, so the guarantee fails outright (Mironov,
"On significance of the least significant bits for differential privacy", CCS 2012).
This module replaces every additive Gaussian and Laplace draw with an **exact** draw
from the discrete Gaussian or discrete Laplace distribution on a grid of public spacing
(Canonne, Kamath & Steinke, "The discrete Gaussian for differential privacy", NeurIPS
2020, Algorithm 3), and rounds the released value to the same grid, so that the float64
result is a function of one integer. Every random decision compares a uniform drawn
lazily as integers with exp(-x) for a rational x: in float64 when an enclosure of exp(-x)
decides it, otherwise exactly (:class:`_LazyUniform`, Python's ``decimal``).

API (``rng`` is the fit's ``numpy.random.Generator``, from
:func:`dp_sklearn._release.make_rng`; ``scale`` is the standard deviation of the
Gaussian or the scale ``b`` of the Laplace, in the units of the value):

* :func:`add_gaussian` ``(rng, value, scale, sensitivity)`` and :func:`add_laplace`
  ``(rng, value, scale, sensitivity)``: the release ``value + noise``, exact on the grid
  (``sensitivity`` is the l2, resp. l1, sensitivity of ``value`` the event was planned
  with; the layer absorbs the grid's effect on it, see :func:`grid_scale`).
* :func:`gaussian_stream` ``(rng, scale, sensitivity, size, count)``: ``count`` releases
  of :func:`add_gaussian`, the noise of many drawn in one sampler call (iterative solvers).
* :func:`gaussian` ``(rng, scale, size)`` and :func:`laplace` ``(rng, scale, size)``:
  noise alone, on the grid, for noise that enters an objective rather than a sum.
* :func:`exponential_mechanism` ``(rng, score, scale, weight=None, k=1, starts=None)``:
  the exact exponential mechanism (index i with probability proportional to
  ``w_i exp(scale * score_i)``; Gumbel-max with Gumbel noise that is an exact function of
  uniform integers, :func:`dp_sklearn._discrete.gumbel_top`), :func:`em_stream` for
  iterative selections, and :func:`uniform_point` / :func:`em_grid`: an exact uniform
  point of an interval rounded to a public grid (the quantiles' released point).
* :func:`norm_gamma` ``(rng, dim, scale)``: the norm-Gamma of output/objective
  perturbation, from uniform integers, every coordinate within a relative :data:`NG_REL`
  of an exact draw; :func:`add_norm_gamma` with :func:`norm_gamma_snapping`: its snapped
  release (public box and grid), exactly epsilon-DP (``docs/privacy.md``, Numeric model);
  :func:`gumbel` and :func:`exponential` (float) are kept for callers outside the
  mechanisms and are no longer used by any release.

The grid of a scale is :func:`grid` (a power of two ``2**-GRID_BITS`` below the scale,
a public function of the scale only). Only ``Generator.integers`` is used by the
exact samplers: NumPy draws bounded integers exactly (rejection, no modulo bias); the
exponential mechanism's 62-bit words are read from a 64-bit bit generator's raw words
where that gives ``integers``' own values (:func:`_words`).
"""

from __future__ import annotations

import functools
import math
import sys
import threading

import numpy as np

from . import _discrete
from ._discrete import CryptoGenerator, discrete_gaussian, discrete_laplace, _bits
from ._discrete import gumbel_top as _gumbel_top, uniform_on_grid as _uniform_on_grid

__all__ = ["GRID_BITS", "grid", "grid_scale", "snap", "gaussian", "laplace", "add_gaussian", "add_laplace",
           "gaussian_stream", "EM_GRID_BITS", "exponential_mechanism", "em_grid", "uniform_point", "em_stream",
           "gumbel", "exponential", "norm_gamma", "norm_gamma_snapping", "add_norm_gamma", "NG_REL", "discrete_gaussian", "discrete_laplace", "CryptoGenerator"]

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


_grid_scale_cached = functools.lru_cache(maxsize=1024)(grid_scale)


def snap(value, gamma):
    """``value`` rounded to the nearest multiple of the power of two ``gamma`` (exact in float64)."""
    return np.rint(np.asarray(value, dtype=np.float64) / gamma) * gamma


# --------------------------------------------------------------------------- buffering
#: Draws are made in blocks that double with use (from :data:`_BLOCK_MIN`) up to
#: :data:`_BLOCK_MAX`, and served in order; blocks are kept per Generator and per
#: (sampler, scale in grid steps). The cache holds a reference to each Generator (so its
#: id is never reused while cached) and drops a Generator's blocks once nothing else
#: refers to it: what a Generator draws depends on its own calls only, never on other fits.
_BLOCK_MIN = 1024
_BLOCK_MAX = 2**16
_cache = {}
_lock = threading.Lock()


def _entry(rng, key):
    slot = _cache.get(id(rng))
    if slot is not None and slot[0] is rng and key in slot[1]:
        return slot[1][key]
    with _lock:
        slot = _cache.get(id(rng))
        if slot is None or slot[0] is not rng:
            for k in [k for k, v in _cache.items() if sys.getrefcount(v[0]) <= 2]:  # only the cache refers to it
                del _cache[k]
            slot = _cache[id(rng)] = (rng, {})
        return slot[1].setdefault(key, [np.empty(0, dtype=_I64), 0])


def _draw(sampler, rng, steps, n):
    """``n`` draws of ``sampler(rng, steps, .)``, served from the Generator's block.

    The i.i.d. draws of one block are used once each, in order: serving them later is
    the same distribution as drawing them now. Every call moves ``rng``'s state, so a
    served draw is visible to the release path (``dp_sklearn._release``).
    """
    entry = _entry(rng, (sampler.__name__, int(steps)))
    buf = entry[0]
    if buf.size < n:
        block = max(n - buf.size, min(max(entry[1], _BLOCK_MIN), _BLOCK_MAX))
        buf = np.concatenate([buf, sampler(rng, steps, block)])
    else:
        rng.bit_generator.random_raw()
    entry[0], entry[1] = buf[n:], entry[1] + n
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
    gamma, steps = _grid_scale_cached(float(scale), float(sensitivity), max(value.size, 1), norm)
    k = _draw(sampler, rng, steps, value.size).reshape(value.shape)
    # snap(value) / gamma and k are integers; their correctly rounded float sum depends on
    # their exact sum only, and * gamma (a power of two) is exact: the release is a
    # function of one integer.
    out = (np.rint(value / gamma) + k) * gamma
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


class _Stream:
    """``count`` releases ``value_t + noise_t`` of one planned shape, the noise drawn ahead (see :func:`gaussian_stream`)."""

    def __init__(self, sampler, norm, rng, scale, sensitivity, size, count):
        self._rng, self._sampler, self._size = rng, sampler, max(int(size), 1)
        self._left = max(int(count), 1)
        self._block, self._i = np.empty((0, self._size)), 0
        self._none = float(scale) == 0.0  # no noise (epsilon = inf): the value itself
        if not self._none:
            self.gamma, self.steps = _grid_scale_cached(float(scale), float(sensitivity), self._size, norm)
            self._inv_gamma = 1.0 / self.gamma
            self._refill()

    def _refill(self):
        rows = min(self._left, max(_STREAM_CHUNK // self._size, 1))
        self._left = max(self._left - rows, 1)  # more releases than planned: further blocks
        # integers below 2**53 in float64: exact (drawn as float64, no conversion)
        k = np.asarray(self._sampler(self._rng, self.steps, rows * self._size, dtype=np.float64), dtype=np.float64)
        self._block, self._i = k.reshape(rows, self._size), 0

    def add(self, value):
        """The next release ``value + noise`` (same shape as the planned ``size`` entries).

        Equal to :func:`add_gaussian` (resp. :func:`add_laplace`) with this stream's
        arguments, as a function of the value and one fresh i.i.d. integer noise vector:
        ``(rint(value / gamma) + k) * gamma``.
        """
        if self._none:
            return np.array(value, dtype=np.float64)
        if self._i == self._block.shape[0]:
            self._refill()
        k = self._block[self._i]
        self._i += 1
        out = np.multiply(value, self._inv_gamma, dtype=np.float64)  # value / gamma: exact (a power of two)
        np.rint(out, out=out)
        out += k if out.shape == k.shape else k.reshape(out.shape)
        out *= self.gamma
        return out


#: Noise entries a stream draws at once (int64 then float64: 512 KiB each); a fit's T x p
#: draws are made in one sampler call when they fit, in blocks of this size otherwise.
_STREAM_CHUNK = 2**16


def gaussian_stream(rng, scale, sensitivity, size, count, norm=2):
    """``count`` Gaussian releases of ``size`` entries each, their noise drawn ahead in blocks.

    For iterative mechanisms (noisy gradient steps): ``stream.add(value)`` is the release
    :func:`add_gaussian` ``(rng, value, scale, sensitivity, norm)`` would make, with the
    discrete Gaussian noise of up to :data:`_STREAM_CHUNK` entries drawn in one sampler
    call (when the stream is made, then whenever a block is used up). The noise is
    independent of the data, so drawing it before the values exist changes nothing in
    the distribution of the releases; the accounting is that of ``count`` calls of
    :func:`add_gaussian`. Reproducible for an integer seed (the draws depend on ``rng``
    and the arguments only); the order in which ``rng`` is used differs from ``count``
    separate calls.

    Parameters
    ----------
    rng : numpy.random.Generator
    scale : float
        Planned standard deviation, >= 0 (0: ``add`` returns the value, no noise).
    sensitivity : float
        The sensitivity of each value the event was planned with, > 0.
    size : int
        Entries per release.
    count : int
        Planned number of releases (more are served, from further blocks).
    norm : {2, 1, inf}, default=2
        The norm of ``sensitivity``.

    Returns
    -------
    stream
        With ``add(value) -> ndarray of float64`` (``value`` of ``size`` entries) and the
        grid ``gamma``.
    """
    return _Stream(discrete_gaussian, norm, rng, scale, sensitivity, size, count)


# -------------------------------------------------------------- exponential mechanism
#: The grid of a point released inside an interval of the exponential mechanism (quantiles)
#: is ``2 ** (floor(log2 width) - EM_GRID_BITS)`` for the public search range's ``width``.
EM_GRID_BITS = 40


def exponential_mechanism(rng, score, scale, weight=None, k=1, starts=None):
    """Exact exponential mechanism: index i with probability proportional to ``w_i exp(scale * score_i)``.

    Gumbel-max with Gumbel noise that is an exact function of lazily drawn uniform
    integers, decided in float64 when a certified enclosure decides it and exactly
    (:mod:`decimal`) otherwise: :func:`dp_sklearn._discrete.gumbel_top`, where the
    parameters are described. ``score``, ``scale`` and ``weight`` are read as the exact
    rationals their float64 values are; the caller's privacy claim is about those numbers
    (sensitivity of ``score`` times ``scale`` at most ``epsilon / 2``).
    """
    return _gumbel_top(rng, score, scale, weight=weight, k=k, starts=starts)


def em_grid(width):
    """The public grid of a point released in a search range of width ``width`` (:data:`EM_GRID_BITS`)."""
    width = np.asarray(width, dtype=np.float64)
    return np.ldexp(1.0, np.frexp(width)[1] - 1 - EM_GRID_BITS)


def uniform_point(rng, left, right, gamma):
    """A uniform point of each ``[left_i, right_i]``, exact, rounded to the grid ``gamma`` (a power of two).

    Returns ``k_i * gamma`` with k_i an integer (:func:`dp_sklearn._discrete.uniform_on_grid`):
    the release is a function of the integer, never of the float64 bits of ``left`` or
    ``right``; it is post-processing of the continuous exponential mechanism's point.
    """
    return _uniform_on_grid(rng, left, right, gamma).astype(np.float64) * gamma


#: ``-G(2**-62) = ln(62 ln 2) = 3.7606...``, rounded up: every finite Gumbel bound of a word exceeds ``-_G_FLOOR``
_G_FLOOR = 3.77

def _words(rng, shape):
    """``rng.integers(0, 2**62, size=shape, dtype=int64)``: uniform 62-bit words, the Gumbel-max uniforms.

    :func:`dp_sklearn._discrete._words62`: the same integers and generator state, read from the
    raw 64-bit words where NumPy's bounded integers use one word per value.
    """
    return _discrete._words62(rng, shape)


class _EMStream:
    """``count`` exponential mechanisms over ``size`` candidates, their Gumbel bounds drawn ahead in blocks.

    Two ways to consume a block (not to be mixed within one block): :meth:`argmax`, one
    selection per call, or :meth:`next_block` and :meth:`settle`, a loop that picks the
    winners of a whole block from the float upper bounds and then has them certified (and,
    where the bounds do not decide, decided exactly) in one vectorized pass.
    """

    def __init__(self, rng, size, count):
        self._rng, self._size, self._left = rng, int(size), max(int(count), 1)
        self._i, self._rows = 0, 0

    def _refill(self):
        rows = min(self._left, max(_STREAM_CHUNK // self._size, 1))
        self._left = max(self._left - rows, 1)
        self._w = _words(self._rng, (rows, self._size))
        self._hi = _discrete._gumbel_at(self._w, 1)
        self._gmax = None  # per row, on first use
        self._i, self._rows = 0, rows

    def _row_g(self):
        """53 + a bound on the finite |Gumbel bounds| of each row of the block (the margins' constant part).

        A finite upper bound is at least ``G(2**-62) > -_G_FLOOR``, so ``max(row max, _G_FLOOR)``
        bounds its magnitude (one reduction); a row holding ``+inf`` (U's last cell) takes
        the largest finite magnitude instead.
        """
        if self._gmax is None:
            g = np.maximum(self._hi.max(axis=1), _G_FLOOR)
            for r in np.flatnonzero(~np.isfinite(g)):
                a = np.abs(self._hi[r])
                g[r] = max(float(a[np.isfinite(a)].max(initial=0.0)), _G_FLOOR)
            g += 53.0
            self._gmax = g
        return self._gmax

    def argmax(self, score, scale=1.0):
        """Index i with probability proportional to ``exp(scale * score_i)`` (``score`` of ``size`` entries, finite).

        The same mechanism as :func:`exponential_mechanism` (same float enclosure and exact
        slow path) with this step's row of pre-drawn uniforms. ``scale=1.0``: ``score`` are
        the logits themselves (one vector operation fewer).
        """
        i = self._i
        if i == self._rows:
            self._refill()
            i = 0
        self._i = i + 1
        if scale == 1.0:
            up = score + self._hi[i]
        else:
            scale = float(scale)
            up = np.multiply(score, scale)
            up += self._hi[i]
        j = int(up.argmax())
        K, g = _discrete._KEY_MARGIN, float(self._row_g()[i])  # g = 53 + max |G| of the step
        cs_j = float(score[j]) * scale
        lo = cs_j + _discrete._gumbel_lo_word(int(self._w[i, j])) - K * (abs(cs_j) + g)
        up[j] = -np.inf
        x = float(up[up.argmax()])  # the largest other (argmax: cheaper than max on short vectors)
        # every other key is at most up_t + K (|scale score_t| + g) <= up_t + K (|up_t| + 2 g) (|G| <= g),
        # nondecreasing in up_t: its largest value is at the largest up_t
        if lo > x + K * (abs(x) + 2.0 * g):
            return j
        return self._exact(i, up, j, lo, g, lambda t: float(score[t]), scale)

    def _exact(self, i, up, j, lo, g, score_of, scale):
        """The slow path of row ``i``: the candidates the float bounds cannot rule out, decided exactly."""
        K = _discrete._KEY_MARGIN
        up[j] = np.inf  # the winner stays in the pool
        pool = np.flatnonzero(up + K * (np.abs(np.maximum(up, -1e300)) + 2.0 * g) >= lo)
        return int(_discrete._top_exact(self._rng, pool, self._w[i, pool],
                                        lambda t: (None, float(scale), score_of(t)), 1)[0])

    def next_block(self):
        """Draw the next block: the float64 upper bounds ``hi`` of its Gumbel noise, shape ``(rows, size)``.

        Row r is the noise of the r-th next selection (``rows <= count`` selections in
        all blocks). The caller picks, for each row, a candidate (normally the argmax of
        ``logits_r + hi_r``; any choice is checked) and hands the choices to :meth:`settle`.
        ``hi`` is the stream's own array: read it, do not modify it.
        """
        self._refill()
        self._i = self._rows  # consumed by settle, not by argmax
        return self._hi

    def settle(self, logits, chosen, start=0):
        """Certify the choices of the block's rows ``start:`` against the exact mechanism.

        ``logits[r]`` (shape ``(rows, size)``, finite float64, read as exact numbers) are the
        logits of row r's mechanism: its exact winner is ``argmax_i logits[r, i] + G_ri``, the
        index drawn with probability proportional to ``exp(logits[r, i])``. Row by row, as
        :meth:`argmax` does for one selection (same enclosure, same exact slow path, same
        draws of further bits, in the order of the rows), but with the float bounds of all
        rows computed in one pass: ``chosen[r]`` stands when the float argmax of
        ``logits[r] + hi[r]`` is ``chosen[r]`` and its lower bound beats every other upper bound.

        Parameters
        ----------
        logits : ndarray of shape (rows, size)
        chosen : ndarray of int of shape (rows,)
        start : int, default=0
            First row to certify (the rows before it are settled).

        Returns
        -------
        None or (r, k)
            ``None`` when every row from ``start`` on selects ``chosen[r]`` exactly; else the
            first row ``r`` whose exact winner ``k`` is not ``chosen[r]`` (the rows after it
            are not settled: their logits depend on the choice at ``r``).
        """
        L = np.asarray(logits, dtype=np.float64)[start:]
        chosen = np.asarray(chosen)[start:]
        if L.shape[0] == 0:
            return None
        K = _discrete._KEY_MARGIN
        rows = np.arange(L.shape[0])
        g = self._row_g()[start:]
        w = self._w[start:]
        up = L + self._hi[start:]
        j = up.argmax(axis=1)
        cs = L[rows, j]
        lo = cs + _discrete._gumbel_at(w[rows, j], 0)
        lo -= K * (np.abs(cs) + g)
        up[rows, j] = -np.inf
        x = up.max(axis=1)
        with np.errstate(invalid="ignore"):  # x = -inf (one candidate): -inf + inf, no certificate
            certified = lo > x + K * (np.abs(x) + 2.0 * g)
        for r in np.flatnonzero(~(certified & (j == chosen))):
            k = int(j[r]) if certified[r] else self._exact(start + r, up[r], int(j[r]), float(lo[r]), float(g[r]),
                                                            lambda t, r=r: float(L[r, t]), 1.0)
            if k != int(chosen[r]):
                return start + int(r), k
        return None


def em_stream(rng, size, count):
    """``count`` exponential mechanisms over ``size`` candidates (iterative selection, e.g. Frank-Wolfe).

    ``stream.argmax(score, scale)`` returns index i with probability proportional to
    ``exp(scale * score_i)``, exactly (as :func:`exponential_mechanism`); the uniforms of
    up to :data:`_STREAM_CHUNK` candidates are drawn, and their float Gumbel bounds
    computed, in one call. The uniforms are independent of the data, so drawing them
    ahead changes nothing in the distribution of the selections. A loop can also take a
    whole block of bounds (``stream.next_block()``), choose its winners, and have them
    certified exactly afterwards (``stream.settle(logits, chosen)``), see :class:`_EMStream`.
    """
    return _EMStream(rng, size, count)


# ------------------------------------------------------------- still floating point
def exponential(rng, size=None):
    """Standard exponential draws (floating point; no release uses them: see :func:`exponential_mechanism`)."""
    return rng.standard_exponential(size=size)


def gumbel(rng, size=None):
    """Standard Gumbel draws (floating point; no release uses them: see :func:`exponential_mechanism`)."""
    return rng.gumbel(size=size)


# ------------------------------------------------- norm-Gamma: coupled sampler and snapping
#: Relative error bound of every coordinate of :func:`norm_gamma` against the exact draw it
#: is coupled with (``docs/privacy.md``, Numeric model: the first-order sum of the float
#: steps' errors is below 2^-43.38 under the stated libm model; 2^-42 keeps a margin).
NG_REL = 2.0**-42

#: The snapping of :func:`add_norm_gamma` may cost at most ``epsilon * 2**-NG_LOSS_BITS``
#: (the public grid is coarsened until it does).
NG_LOSS_BITS = 10

_MANT = 2**52
_LN2 = math.log(2.0)
#: below 2^-30 the series sin x = x (1 - x^2/6 ...), -log1p(-w) = w (1 + w/2 + ...) are used
#: (relative truncation error below 2^-58): the tiny values keep their exponent apart
_SMALL = 30


def _half_uniform(rng, n):
    """W uniform on (0, 1/2] as ``(x, k)``: W = 2^-k X, X uniform on (1/4, 1/2] (k >= 0 an integer array).

    k is geometric (P(k = j) = 2^-(j+1)) from the leading zeros of 52-bit words and X's first
    52 bits are ``x = (2^52 + m) 2^-54`` (exact in float64), so the exact uniform of the
    coupling lies in ``[x 2^-k, (x + 2^-54) 2^-k]``: x is within a relative 2^-52 of it,
    however small W is.
    """
    k = np.zeros(n, dtype=_I64)
    todo = np.arange(n)
    while todo.size:
        w = rng.integers(0, _MANT, size=todo.size, dtype=_I64)
        bitlen = np.frexp(w.astype(np.float64))[1]  # exact: w < 2^53; 0 for w = 0
        k[todo] += 52 - bitlen
        todo = todo[w == 0]  # 52 more leading zeros: draw on
    m = rng.integers(0, _MANT, size=n, dtype=_I64)
    x = (m + _MANT).astype(np.float64) * 2.0**-54  # exact
    return x, k


def _exp_parts(rng, n):
    """Standard exponentials E = -ln U as ``(mant, shift)``: E = mant 2^-shift, mant within a relative 2^-44.9 of exact."""
    x, k = _half_uniform(rng, n)
    upper = _bits(rng, n)  # U = 1 - W (True) or U = W
    mant = np.empty(n)
    shift = np.zeros(n, dtype=_I64)
    low = ~upper
    mant[low] = k[low] * _LN2 - np.log(x[low])  # -ln(2^-k x) = k ln 2 - ln x, both terms > 0
    small = upper & (k >= _SMALL)
    mid = upper & ~small
    mant[mid] = -np.log1p(-np.ldexp(x[mid], -k[mid]))  # k < 30: no underflow
    w = np.ldexp(x[small], -k[small])  # may underflow to 0: only the second-order term uses it
    mant[small] = x[small] * (1.0 + 0.5 * w)  # -ln(1 - W) = W (1 + W/2 + ...)
    shift[small] = k[small]
    return mant, shift


def _sin_parts(rng, n):
    """sin(pi W) for W uniform on (0, 1/2] (the law of |cos Theta|) as ``(mant, shift)``."""
    x, k = _half_uniform(rng, n)
    small = k >= _SMALL
    mant = np.where(small, math.pi * x, np.sin(math.pi * np.ldexp(x, -np.minimum(k, _SMALL))))
    return mant, np.where(small, k, 0)


def norm_gamma(rng, dim, scale):
    """b in R^dim with density proportional to exp(-||b||_2 / scale), from uniform integers only.

    ``b = scale * sqrt(Q) * g`` with ``g ~ N(0, I_dim)`` and an independent
    ``Q ~ chi^2_(dim+1)``: the norm-Gamma is this Gaussian scale mixture (its density is
    ``int N(b; 0, v s^2 I) chi^2_(d+1)(v) dv``, proportional to ``exp(-||b|| / s)``, a
    Bessel-K identity; for d = 1 it is ``Laplace = sqrt(2E) N``). Each ``g_i`` is
    ``sign * sqrt(2 E) sin(pi W)`` (Box-Muller with ``|cos Theta|`` drawn as ``sin(pi W)``,
    W uniform on (0, 1/2]) and ``Q`` is ``2 (E_1 + ... + E_m)`` plus one ``g^2`` when d + 1
    is odd, with exponentials ``E = -ln U``. Every uniform is drawn from integers with a
    relative precision of 2^-52 however small it is (:func:`_half_uniform`), so every
    coordinate is within a relative :data:`NG_REL` (plus an absolute 2^-1074) of the exact
    draw made from the same uniforms (``docs/privacy.md``, Numeric model). Releases use
    :func:`add_norm_gamma`, which makes this error harmless.

    Parameters
    ----------
    rng : numpy.random.Generator
    dim : int
        Dimension (>= 1).
    scale : float
        ``s`` > 0: ||b|| ~ Gamma(shape=dim, scale=s) (Chaudhuri, Monteleoni & Sarwate,
        JMLR 2011, Section 3).

    Returns
    -------
    b : ndarray of shape (dim,)
    """
    dim = int(dim)
    m = (dim + 1) // 2
    ge, gs = _exp_parts(rng, dim)  # the Gaussian coordinates
    sm, ss = _sin_parts(rng, dim)
    qe, qs = _exp_parts(rng, m + (dim + 1) % 2)  # Q: m exponentials (and one more g^2 if d + 1 is odd)
    terms_m = 2.0 * qe
    terms_s = qs.copy()
    if (dim + 1) % 2:
        tm, ts = _sin_parts(rng, 1)
        terms_m[-1] = terms_m[-1] * tm[0] * tm[0]
        terms_s[-1] = terms_s[-1] + 2 * ts[0]
    top = int(terms_s.min())
    q_mant = math.fsum(np.ldexp(terms_m, top - terms_s).tolist())  # correctly rounded; 2^-1074 underflows only
    p = top + gs  # Q E_i = q_mant ge_i 2^-p
    root = np.sqrt(np.ldexp(2.0 * q_mant * ge, -(p % 2)))  # 2 Q E_i = root^2 2^-(2 (p // 2))
    sign = np.where(_bits(rng, dim), -1.0, 1.0)
    return np.ldexp(sign * float(scale) * root * sm, -(p // 2) - ss)


class NormGammaSnapping(tuple):
    """The public parameters of :func:`add_norm_gamma` (see :func:`norm_gamma_snapping`)."""

    __slots__ = ()
    _fields = ("scale", "grid", "bound", "eta", "loss", "dim", "epsilon")

    def __new__(cls, *values):
        return tuple.__new__(cls, values)

    scale = property(lambda self: self[0], doc="the norm-Gamma scale s actually drawn")
    grid = property(lambda self: self[1], doc="the output grid Lambda (a power of two)")
    bound = property(lambda self: self[2], doc="the box half-width B (a multiple of Lambda)")
    eta = property(lambda self: self[3], doc="the coupling's largest coordinate error on the box")
    loss = property(lambda self: self[4], doc="ln kappa: what the snapping may cost, in nats")
    dim = property(lambda self: self[5], doc="the dimension d")
    epsilon = property(lambda self: self[6], doc="the planned epsilon: sensitivity / scale + loss <= epsilon")


def _ng_eta(bound, u):
    """Largest error ``|fl(t_i + b~_i) - (t_i + b_i)|`` where it matters (``|t_i| <= B``, ``|t_i + b_i| <= B + u``).

    ``|b_i| <= 2B + u`` there, so the coupling's error is at most ``NG_REL (2B + u)`` (plus the
    absolute 2^-1074 of an underflow) and the float sum adds ``2^-53 |t_i + b~_i|``.
    """
    return (NG_REL * (2.0 * bound + u) + 2.0**-52 * (bound + u)) * (1.0 + 2.0**-20) + 2.0**-1060


def _ng_loss(dim, u, eta, s0):
    """ln kappa = d ln((u + 2 eta) / (u - 2 eta)) + 2 eta sqrt(d) / s0, rounded up."""
    return (dim * math.log1p(4.0 * eta / (u - 2.0 * eta)) + 2.0 * eta * math.sqrt(dim) / s0) * (1.0 + _MARGIN)


def norm_gamma_snapping(epsilon, sensitivity, dim, bound):
    """The public grid, box and scale of a snapped norm-Gamma release that is ``epsilon``-DP.

    :func:`add_norm_gamma` releases ``clip(rint((clip(value, -B, B) + b~) / Lambda), -K, K) * Lambda``
    (K = B / Lambda) for the float draw ``b~`` of :func:`norm_gamma`. Its privacy is
    ``Delta / s + ln kappa`` with ``ln kappa = d ln((Lambda + 2 eta) / (Lambda - 2 eta)) + 2 eta sqrt(d) / s``
    (``eta`` of :func:`_ng_eta` bounds the float error where it can move the release; proof in
    ``docs/privacy.md``, Numeric model). The grid starts at :func:`grid` of ``sensitivity / epsilon``
    and doubles until ``ln kappa <= epsilon 2^-NG_LOSS_BITS`` (or, if no grid up to ``4 B``
    reaches it, the grid of the smallest ``ln kappa``, at most ``epsilon / 4``); the scale
    is then ``Delta / (epsilon - ln kappa)``.

    Parameters
    ----------
    epsilon : float
        The planned privacy (nats), > 0 and finite.
    sensitivity : float
        l2 sensitivity ``Delta`` of the value, > 0.
    dim : int
        Dimension d of the value.
    bound : float
        Public half-width of the output box (> 0): the value is clipped to ``[-B, B]^d``
        first (non-expansive: the sensitivity is unchanged) and so is the release.

    Returns
    -------
    NormGammaSnapping
        ``(scale, grid, bound, eta, loss, dim, epsilon)``: ``bound`` is ``B`` rounded up to the grid.

    Raises
    ------
    ValueError
        If an argument is not a finite positive number, or if no grid keeps the
        snapping's cost below ``epsilon / 4`` (``B / s`` near ``2^40 / sqrt(d)``, or
        epsilon below about ``2^-37 d``).
    """
    epsilon, sensitivity, bound, dim = float(epsilon), float(sensitivity), float(bound), int(dim)
    for name, v in (("epsilon", epsilon), ("sensitivity", sensitivity), ("bound", bound)):
        if not (math.isfinite(v) and v > 0.0):
            raise ValueError(f"{name} must be a finite number > 0, got {v!r}.")
    if not 2.0**-1000 < bound < 2.0**1000:
        raise ValueError(f"bound must be within 2^-1000 and 2^1000, got {bound!r}.")
    s0 = sensitivity / epsilon
    u, best = grid(s0), None
    while u <= 4.0 * bound or best is None:
        box = math.ceil(bound / u) * u
        eta = _ng_eta(box, u)
        if box / u <= 2.0**50 and 2.0 * eta < u:
            loss = _ng_loss(dim, u, eta, s0)
            if best is None or loss < best[0]:
                best = (loss, u, box, eta)
            if loss <= epsilon * 2.0**-NG_LOSS_BITS:
                break
        u *= 2.0
    loss, u, box, eta = best
    if loss > epsilon / 4.0:  # the coupling's 2 eta shift alone costs too much: B / s near 2^40 / sqrt(d)
        raise ValueError(f"epsilon={epsilon!r} is too small for a snapped norm-Gamma release of dimension {dim} "
                         f"in a box of half-width {bound!r} (sensitivity {sensitivity!r}).")
    scale = sensitivity / (epsilon - loss) * (1.0 + _MARGIN)
    return NormGammaSnapping(scale, u, box, eta, loss, dim, epsilon)


def add_norm_gamma(rng, value, snapping):
    """The snapped norm-Gamma release of ``value``: pure ``epsilon``-DP for the planned ``epsilon``.

    Mironov's snapping (CCS 2012, Section 5) carried to the l2 norm-Gamma: the value is
    clipped to the public box ``[-B, B]^d`` (non-expansive), the noise :func:`norm_gamma`
    (coupled with an exact draw, every coordinate within a relative :data:`NG_REL`) is
    added, and the sum is rounded to the grid ``Lambda`` and clipped to the box. The
    release is a grid point; the float errors move the sum by at most ``eta`` wherever
    that can change the grid point, which the accounting of :func:`norm_gamma_snapping`
    pays for (``docs/privacy.md``, Numeric model).

    Parameters
    ----------
    rng : numpy.random.Generator
    value : array-like of shape (d,)
        The exact statistic (finite).
    snapping : NormGammaSnapping
        From :func:`norm_gamma_snapping` with the value's planned sensitivity, d and bound.

    Returns
    -------
    release : ndarray of float64, shape (d,)
        Multiples of ``snapping.grid`` within ``[-snapping.bound, snapping.bound]``.
    """
    value = np.asarray(value, dtype=np.float64)
    if value.size != snapping.dim:
        raise ValueError(f"value has {value.size} entries, the snapping was planned for {snapping.dim}.")
    u, box = snapping.grid, snapping.bound
    K = box / u  # an integer below 2^50
    y = np.clip(value, -box, box) + norm_gamma(rng, snapping.dim, snapping.scale).reshape(value.shape)
    return np.clip(np.rint(y / u), -K, K) * u  # / u and * u exact (a power of two); |integers| <= K < 2^50
