"""Exponential-mechanism quantiles (Smith 2011; Gillenwater, Joseph & Kulesza 2021) and private ranges."""

from __future__ import annotations

import math

import numpy as np
from dp_accounting import dp_event

from .._accounting import EpsilonDeltaDpEvent, zcdp_rho
from ._common import _RHO_MARGIN, _as_bounds, _check_epsilon
from .. import _noise


#: default ``dither`` of the log-uniform callers, in asinh units (about 5% of ``|x|`` above ``unit``)
TIE_DITHER = 0.05
#: public atoms of the scalers' quantiles: the integers -16 .. 16, where binary columns, integer
#: codes, counts and bands repeat (``exponential_quantiles``, ``atoms``)
INTEGER_ATOMS = np.arange(-16.0, 17.0)
#: base measure of each atom, in the mechanism's coordinate (asinh units: a quarter of the
#: measure of values spread over a factor ``e`` in ``|x|``); 0.25 against 1 chosen on the tuning
#: half of ``benchmarks/tabular`` (evidence in ``benchmarks/tabular/README.md``): the 33 atoms
#: then add about 8 units to the roughly 43 of the default search range, about 0.2 nats against
#: a continuous feature, and still outweigh a repeated value's dither (0.05) five times
ATOM_WEIGHT = 0.25


def exponential_quantiles(X, quantiles, epsilon, rng, *, lower, upper, unit=None, dither=0.0, atoms=None,
                          atom_weight=ATOM_WEIGHT):
    """Private quantiles of each column, one exponential mechanism per (quantile, column).

    For a column with values clipped to the public range ``[a, b]`` and sorted,
    ``a = z_0 <= z_1 <= ... <= z_n <= z_{n+1} = b``, every point of the interval
    ``I_i = [z_i, z_{i+1}]`` has ``i`` values below it, and the utility of a
    point is ``u_i = -|i - q n|``. The mechanism samples an interval with
    probability proportional to ``|I_i| exp(epsilon u_i / 2)`` and then a point
    uniformly inside it (Smith 2011 [1]_, Section 3; the independent
    exponential-mechanism quantiles of Gillenwater, Joseph & Kulesza 2021 [2]_,
    Section 3). Sampling is exact (``dp_sklearn._noise.exponential_mechanism``:
    Gumbel-max over the keys ``log|I_i| + epsilon u_i / 2 + G_i`` with Gumbel noise
    drawn from uniform integers and decided exactly; empty intervals have weight 0),
    and the point inside the interval is an exact uniform point rounded to the public
    grid ``2**(floor(log2 w) - 40)`` of the search range's width ``w`` in the
    mechanism's coordinate (``dp_sklearn._noise.uniform_point``), so the release is a
    function of integers (``docs/privacy.md``, Numeric model). The target rank ``q n``
    is rounded to a multiple of 2**-10 (public), which keeps the utilities exact in
    float64. O(n log n) per column, vectorized over columns.

    Parameters
    ----------
    X : array-like of shape (n_samples,) or (n_samples, n_features)
        Data; values outside ``[lower, upper]`` are clipped to it.
    quantiles : float or array-like of shape (n_quantiles,)
        Quantile levels in [0, 1].
    epsilon : float or array-like of shape (n_quantiles,)
        Privacy loss of *each* exponential mechanism, in nats (> 0); one value per
        quantile level gives the mechanisms of each level their own privacy loss (the
        values are dithered and sorted once for all levels).
    rng : numpy.random.Generator
        The fit's only source of randomness.
    lower, upper : float or array-like of shape (n_features,)
        Public search range per column (finite, ``lower < upper``).
    unit : float or None, default=None
        Base measure of the mechanism. ``None``: uniform on ``[lower, upper]``
        (interval weights ``|I_i|``, Smith 2011). A positive float ``u``:
        uniform in ``t = asinh(x / u)``, i.e. log-uniform in ``|x|`` above ``u``
        (interval weights ``|asinh(z_{i+1} / u) - asinh(z_i / u)|``). The
        utility, hence the privacy guarantee, is the same; a wide search range
        then costs ``log`` of the ratio of *log*-widths instead of widths.
    dither : float, default=0.0
        Width of a public uniform perturbation ``dither * (U - 1/2)``, U ~ U(0, 1)
        i.i.d. per value, added to every value in the mechanism's coordinate (``x``,
        or ``asinh(x / unit)``) before ranking. Repeated values (binary, integer or
        rounded data) form intervals of length 0, which the mechanism can never
        return, so a quantile that falls inside a repeated value is drawn from the
        gaps around it instead, possibly far away; dithered, each repeated value
        becomes an interval of length ``dither`` (callers with ``unit`` use
        ``TIE_DITHER`` = 0.05, about 5% of ``|x|``). Privacy is unchanged: the
        perturbation is drawn independently of the data, one value per record, so
        neighbouring datasets stay neighbours under every draw and the guarantee
        holds for each draw, hence for the mixture. One draw serves all the levels
        of a call: for each fixed draw the ``k`` mechanisms are exponential mechanisms
        on the same pair of neighbouring dithered datasets with independent Gumbel
        noise, so they compose as ``k`` separate releases do (basic or zCDP
        composition, :func:`quantile_epsilon`), for every draw, hence for the mixture
        (pure DP: the bound on the likelihood ratio holds draw by draw; zCDP: the
        Renyi divergence of mixtures over the same data-independent draw is at most
        the largest over draws, by its joint quasi-convexity: van Erven & Harremoes,
        "Renyi divergence and Kullback-Leibler divergence", IEEE Trans. Inf. Theory 2014).
    atoms : array-like of shape (n_atoms,) or None, default=None
        Public values added to the base measure as point masses of ``atom_weight`` each
        (in the mechanism's coordinate), where they lie inside ``[lower_j, upper_j]``. The
        utility of an atom ``a`` is that of a value that can be the quantile of the
        (undithered, clipped) column: ``-max(0, #{x < a} - q n, q n - #{x <= a})``, 0 when
        ``a`` is a ``q``-quantile. A quantile inside a repeated value that is an atom
        (0 and 1 of a binary column, an integer code) is then returned exactly, with the
        weight of ``atom_weight`` rather than the dither's ``dither``.
    atom_weight : float, default=ATOM_WEIGHT
        Base measure of each atom (> 0).

    Returns
    -------
    values : ndarray of shape (n_quantiles, n_features)
        One private quantile per level and column (shape (n_quantiles,) for 1-D ``X``).

    Raises
    ------
    ValueError
        If ``X`` is empty or not finite, a level is outside [0, 1], ``epsilon``
        is not a positive finite number (or one per level) or the bounds are invalid.

    Notes
    -----
    **Sensitivity.** Replacing one record removes one value and adds one, so the
    count of values below any point changes by at most 1 and ``|u_i - u'_i| <= 1``:
    the utility has replace-one sensitivity 1. Each mechanism is therefore
    ``epsilon``-DP (McSherry & Talwar 2007 [3]_) and, being ``epsilon``-bounded
    range, ``epsilon^2 / 8``-zCDP (Cesar & Rogers 2021 [4]_, Lemma 3.2). ``k``
    mechanisms compose to ``k epsilon``-DP or ``k epsilon^2 / 8``-zCDP
    (:func:`quantile_epsilon` picks the better). With ``atoms`` the base measure is the
    continuous one plus the public point masses; the exponential mechanism is
    ``epsilon``-DP for any base measure (McSherry & Talwar 2007, Theorem 6), and an atom's
    utility also has replace-one sensitivity 1 (one record moves ``#{x < a}`` and
    ``#{x <= a}`` by at most 1 each); with a dither, the atoms read the undithered values and
    the intervals the dithered ones, a pair of utilities that still moves by at most 1 on
    neighbours for every draw of the dither. The release is accurate when
    ``epsilon q n / 2`` exceeds ``log((upper - lower) / spread)``, the log of how
    much wider the public range is than the data: see ``docs/privacy.md``.
    """
    X = np.asarray(X, dtype=float)
    one_d = X.ndim == 1
    X = X[:, None] if one_d else X
    if X.ndim != 2 or X.shape[0] == 0 or not np.all(np.isfinite(X)):
        raise ValueError("X must be a non-empty, finite 1-D or 2-D array.")
    q = np.atleast_1d(np.asarray(quantiles, dtype=float))
    if q.ndim != 1 or not np.all((q >= 0) & (q <= 1)):
        raise ValueError(f"quantiles must be levels in [0, 1], got {quantiles!r}.")
    eps_of = _level_epsilons(epsilon, q.size)
    n, p = X.shape
    lo, hi = _as_bounds(lower, upper, p, "lower, upper")
    if not (np.isfinite(dither) and dither >= 0):
        raise ValueError(f"dither must be a finite number >= 0, got {dither!r}.")
    if unit is not None:
        unit = _check_epsilon(unit, "unit")
    if atoms is not None:
        a, below, upto, log_w = _atom_counts(np.clip(X, lo, hi), atoms, atom_weight, lo, hi)
    if unit is not None:  # t = asinh(x / unit): monotone, same ranks
        t_lo, t_hi = np.arcsinh(lo / unit), np.arcsinh(hi / unit)
    else:
        t_lo, t_hi = lo, hi
    edges = np.empty((n + 2, p))  # (n + 2, p): t_lo, the sorted values, t_hi
    edges[0], edges[-1] = t_lo, t_hi
    body = edges[1:-1]
    step = max(1, _PREP_ENTRIES // p)
    for start in range(0, n, step):  # row chunks: the same float operations (and uniforms) as whole-array passes
        rows = slice(start, min(start + step, n))
        T = np.clip(X[rows], lo, hi)
        if unit is not None:
            np.divide(T, unit, out=T)
            np.arcsinh(T, out=T)
        if dither > 0:
            U = rng.uniform(size=T.shape)  # the next rows of one (n, p) draw
            U -= 0.5
            U *= dither
            np.add(T, U, out=body[rows])
            np.clip(body[rows], t_lo, t_hi, out=body[rows])
        else:
            body[rows] = T
    body.sort(axis=0)
    ranks = np.arange(n + 1, dtype=float)[:, None]
    gamma = _noise.em_grid(t_hi - t_lo)  # public grid of the released point, per column
    hi_w, lo_w = edges[1:], edges[:-1]  # interval lengths, computed exactly by the sampler
    if atoms is not None:
        hi_w = np.vstack([hi_w, np.where(np.isfinite(log_w), atom_weight, 0.0)])
        lo_w = np.vstack([lo_w, np.zeros_like(log_w)])
    idx = np.empty((q.size, p), dtype=np.int64)
    for eps in dict.fromkeys(eps_of):  # one call per distinct epsilon, levels in order
        rows = [r for r in range(q.size) if eps_of[r] == eps]
        score = np.empty((hi_w.shape[0], len(rows) * p))
        for b, level in enumerate(q[rows]):  # one mechanism per (level, column), sampled in one call
            target = _target(level, n)
            block = score[:, b * p:(b + 1) * p]
            np.subtract(ranks, target, out=block[:n + 1])  # exact: integers minus a multiple of 2**-10
            np.abs(block[:n + 1], out=block[:n + 1])
            np.negative(block[:n + 1], out=block[:n + 1])
            if atoms is not None:
                block[n + 1:] = -np.maximum(0.0, np.maximum(below - target, target - upto))
        # the weights (hi_w, lo_w) are shared by the len(rows) blocks of columns (one log per interval)
        idx[rows] = _noise.exponential_mechanism(rng, score, 0.5 * eps, weight=(hi_w, lo_w)).reshape(len(rows), p)
    out = np.full((q.size, p), np.nan)
    kk, c = np.nonzero(idx <= n)  # an interval (else an atom, returned as it is)
    i = idx[kk, c]
    out[kk, c] = _noise.uniform_point(rng, edges[i, c], edges[i + 1, c], gamma[c])
    picked = np.where(idx > n, a[np.maximum(idx - (n + 1), 0)], np.nan) if atoms is not None else out * np.nan
    if unit is not None:
        out = unit * np.sinh(out)  # back to the units of X
    out = np.clip(out, lo, hi)  # the grid point can lie half a grid step outside the range
    out = np.where(np.isnan(picked), out, picked)  # an atom is returned exactly
    return out[:, 0] if one_d else out


#: entries per row chunk of the clip, transform and dither of :func:`exponential_quantiles` (in cache)
_PREP_ENTRIES = 2**15


def _level_epsilons(epsilon, count):
    """The privacy loss of each of ``count`` levels: one number, or one per level (each finite, > 0)."""
    if np.ndim(epsilon) == 0:
        return [_check_epsilon(epsilon)] * count
    eps = list(np.asarray(epsilon, dtype=object).ravel())
    if np.ndim(epsilon) != 1 or len(eps) != count:
        raise ValueError(f"epsilon must be a number or one per quantile level ({count}), got {epsilon!r}.")
    return [_check_epsilon(e.item() if isinstance(e, np.generic) else e) for e in eps]


def _target(level, n):
    """The rank ``level * n`` rounded to a multiple of 2**-10 (public): ``rank - target`` is then exact in float64."""
    return math.ldexp(round(math.ldexp(float(level) * n, 10)), -10)


def _atom_counts(Xc, atoms, weight, lo, hi):
    """Atoms, ``#{x < a}`` and ``#{x <= a}`` per (atom, column), log base measure (-inf outside the bounds)."""
    a = np.unique(np.asarray(atoms, dtype=float).ravel())
    if a.size == 0 or not np.all(np.isfinite(a)):
        raise ValueError(f"atoms must be a non-empty array of finite values, got {atoms!r}.")
    if not (np.isfinite(weight) and weight > 0):
        raise ValueError(f"atom_weight must be a finite number > 0, got {weight!r}.")
    Xs = np.sort(Xc, axis=0)
    below = np.stack([np.searchsorted(Xs[:, j], a, side="left") for j in range(Xs.shape[1])], axis=1)
    upto = np.stack([np.searchsorted(Xs[:, j], a, side="right") for j in range(Xs.shape[1])], axis=1)
    inside = (a[:, None] >= lo) & (a[:, None] <= hi)
    log_w = np.where(inside, np.log(weight), -np.inf)
    return a, below.astype(float), upto.astype(float), log_w


def quantile_epsilon(epsilon, delta, count):
    """Per-mechanism epsilon for ``count`` exponential mechanisms within (epsilon, delta).

    Parameters
    ----------
    epsilon : float
        Total privacy loss in nats (> 0).
    delta : float
        Total delta in [0, 1); 0 forces pure composition.
    count : int
        Number of exponential mechanisms (>= 1).

    Returns
    -------
    epsilon0 : float
        Privacy loss of each mechanism.
    event : dp_accounting.DpEvent
        ``EpsilonDeltaDpEvent(count * epsilon0, 0)`` (basic composition of pure
        mechanisms) or ``ZCDpEvent(count * epsilon0^2 / 8)`` (zCDP composition,
        Cesar & Rogers 2021, Bun & Steinke 2016 [5]_), whichever allows the
        larger ``epsilon0``.
    """
    eps = _check_epsilon(epsilon)
    pure = eps / count
    if delta > 0:
        rho = zcdp_rho(eps, float(delta)) * (1.0 - _RHO_MARGIN)
        conc = math.sqrt(8.0 * rho / count)
        if conc > pure:
            return conc, dp_event.ZCDpEvent(count * conc**2 / 8.0)
    return pure, EpsilonDeltaDpEvent(count * pure, 0.0)


#: Tukey's fences: a private range is the private quartiles widened by this many IQRs
FENCE = 1.5


def search_unit(search_range):
    """Public unit of the log-uniform search base measure: 1e-9 times the largest |bound|."""
    return 1e-9 * max(abs(float(search_range[0])), abs(float(search_range[1])))


def fenced_quantiles(X, levels, epsilon, rng, *, lower, upper, unit, fence=FENCE, atoms=None,
                     atom_weight=ATOM_WEIGHT):
    """Private quantiles at ``levels`` widened by ``fence`` times their spread, within the bounds.

    Post-processing of :func:`exponential_quantiles` (two levels per column, ties
    dithered by ``TIE_DITHER`` when ``unit`` is given):
    ``(q_lo - fence (q_hi - q_lo), q_hi + fence (q_hi - q_lo))`` clipped to
    ``[lower, upper]``. With the quartiles and ``fence=1.5`` these are Tukey's
    fences (about +-2.7 standard deviations for normal data). ``atoms``, ``atom_weight``:
    public point masses of the quantiles' base measure (see :func:`exponential_quantiles`).

    Returns
    -------
    lo, hi : ndarray of shape (n_features,)
    """
    q = np.sort(exponential_quantiles(X, levels, epsilon, rng, lower=lower, upper=upper, unit=unit,
                                      dither=0.0 if unit is None else TIE_DITHER, atoms=atoms,
                                      atom_weight=atom_weight), axis=0)
    spread = q[1] - q[0]
    return np.maximum(q[0] - fence * spread, lower), np.minimum(q[1] + fence * spread, upper)


def private_range(y, epsilon, rng, *, delta=0.0, search_range=(-1e6, 1e6), quantile_range=(0.25, 0.75),
                  fence=FENCE):
    """Private range ``[lo, hi]`` of a 1-D array: fenced exponential-mechanism quantiles.

    Meant for a target range (``bounds_y``) or a clipping range estimated from
    the data with a share of a fit's budget. Two private quantiles at
    ``quantile_range`` (:func:`exponential_quantiles`, each with half the
    budget, log-uniform base measure with unit :func:`search_unit`) are widened
    by ``fence`` times their distance (:func:`fenced_quantiles`).

    Parameters
    ----------
    y : array-like of shape (n_samples,)
        Values; clipped to ``search_range``.
    epsilon : float
        Privacy loss of the release in nats (> 0).
    rng : numpy.random.Generator
        The fit's only source of randomness.
    delta : float, default=0.0
        Delta of the release; with ``delta > 0`` the two mechanisms are
        composed by zCDP when that gives each a larger epsilon (never for two
        mechanisms at usual deltas, so pure DP in practice).
    search_range : tuple of float, default=(-1e6, 1e6)
        Public range known to contain the values (``low < high``).
    quantile_range : tuple of float, default=(0.25, 0.75)
        Quantile levels, ``0 <= q_lo < q_hi <= 1``. Inner levels need less
        budget: the mechanism lands near the data when ``epsilon q n / 4``
        exceeds about 3 (the log of the ratio of log-widths of the search range
        and of the data).
    fence : float, default=1.5
        Widening, in multiples of the distance between the two quantiles
        (0 returns the quantiles themselves).

    Returns
    -------
    lo, hi : float
        The private range, ``lo <= hi``.
    event : dp_accounting.DpEvent
        What was spent (see :func:`quantile_epsilon`).

    Raises
    ------
    ValueError
        If ``y`` is not 1-D, or ``epsilon``, ``fence`` or a range is invalid.

    Examples
    --------
    >>> import numpy as np
    >>> y = np.random.default_rng(0).uniform(25, 346, size=300)
    >>> ranges = [private_range(y, 0.5, np.random.default_rng(seed))[:2] for seed in range(20)]
    >>> sum(-200 < lo < 100 and 250 < hi < 600 for lo, hi in ranges) >= 15  # about 9 in 10 land there
    True
    """
    y = np.asarray(y, dtype=float)
    if y.ndim != 1:
        raise ValueError(f"y must be 1-D, got shape {y.shape}.")
    q_lo, q_hi = (float(v) for v in quantile_range)
    if not 0 <= q_lo < q_hi <= 1:
        raise ValueError(f"quantile_range must satisfy 0 <= q_lo < q_hi <= 1, got {quantile_range!r}.")
    if not (isinstance(fence, (int, float)) and 0 <= fence < np.inf):
        raise ValueError(f"fence must be a finite number >= 0, got {fence!r}.")
    low, high = (float(v) for v in search_range)
    if not (np.isfinite(low) and np.isfinite(high) and low < high):
        raise ValueError(f"search_range must be finite with low < high, got {search_range!r}.")
    eps0, event = quantile_epsilon(epsilon, delta, 2)
    lo, hi = fenced_quantiles(y[:, None], [q_lo, q_hi], eps0, rng, lower=low, upper=high,
                              unit=search_unit(search_range), fence=fence)
    return float(lo[0]), float(hi[0]), event
