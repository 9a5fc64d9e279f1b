"""Pieces shared by the gradient mechanisms, written once.

* :func:`default_clip_norm` -- the data-independent per-example clip norm;
* :func:`gaussian_steps_plan` -- the calibration of T adaptive Gaussian releases
  (tight: exact Gaussian composition; paper: the paper's multiplier, never below the
  tight one), with its ``dp_accounting`` event;
* :func:`gradient_steps_plan` -- the same for full or Poisson-sampled batches, with the
  data-independent large-n sampling rate :func:`default_sampling_rate`;
* :func:`clipped_sum_source` -- the Gram matrix of the squared loss when no record
  can be clipped (one pass, then O(dim^2) per step), built once per fit;
* :func:`noisy_clipped_gradient` -- one noisy clipped-gradient step (full batch or a
  Poisson sample), with :func:`noise_stream`, the noise of all steps drawn ahead;
* :func:`check_gaussian_delta` -- the ``delta > 0`` requirement of Gaussian noise.
"""

from __future__ import annotations

import math
import numbers

import numpy as np
from dp_accounting import dp_event

from .._accounting import composed_gaussian_noise_multiplier, gaussian_noise_multiplier, poisson_noise_multiplier
from .._gram import GramGradient, gram_applies
from ._base import SOLVERS
from .. import _noise

__all__ = ["CLIP_FRACTION", "default_clip_norm", "gaussian_steps_plan", "noisy_clipped_gradient", "noise_stream", "poisson_sample",
           "clipped_sum_source", "check_gaussian_delta", "default_sampling_rate", "sampling_rate",
           "gradient_steps_plan", "curvature_share", "SAMPLED_MULTIPLIER", "MIN_BATCH",
           "MAX_SAMPLED_RATE", "UNIFORMS_RATE", "MAX_GRAM_DIM", "check_gram_dim"]

#: default clip norm as a fraction of the public row bound x_norm
CLIP_FRACTION = 0.5

#: largest number of coefficients of a solver that forms a dense dim x dim matrix
#: (its noisy Gram matrix): 16384**2 float64 entries are 2 GiB, and the solver holds
#: a few such matrices
MAX_GRAM_DIM = 16384


def check_gram_dim(dim, solver):
    """Refuse, from the public dimension only, a dense ``dim x dim`` solver beyond :data:`MAX_GRAM_DIM`.

    Raises
    ------
    ValueError
        Naming ``solver`` and the dimension (before any budget is reserved).
    """
    if dim > MAX_GRAM_DIM:
        raise ValueError(f"solver={solver!r} forms a dense {dim} x {dim} matrix (n_features plus intercept, times "
                         f"the outputs), above its limit of {MAX_GRAM_DIM} coefficients: it would not fit in memory. "
                         "Use a gradient solver (e.g. solver='noisy_gd'), which never densifies X.")


def curvature_share(loss):
    """Public share f of the loss's curvature bound in effect near a fitted model.

    The loss's declaration ``typical_curvature_share``: 1 for the squared loss (its
    curvature is constant); for the logistic loss the bound sigma'(0) = 1/4 holds at zero
    margin only, and at the typical margin 3 of a fitted model
    (``dp_sklearn._losses.TYPICAL_MARGIN``, probability 0.95) the curvature is
    sigma'(3) / sigma'(0) = 0.18 of it; for the multinomial loss over K classes, the trace
    of its rank-(K - 1) Hessian at the same probability of the true class, relative to the
    bound 1/2: ``2 (1 - p^2 - (1 - p)^2 / (K - 1))``, 0.18 at K = 2 up to 0.185
    (:func:`dp_sklearn._losses._multinomial.typical_trace_share`).
    """
    return loss.typical_curvature_share


def default_clip_norm(public, constraint=None):
    """Data-independent clip norm ``CLIP_FRACTION * clip_scale * x_norm``.

    Per-example gradients are phi' x with ||x|| <= x_norm and |phi'| <= 1 (logistic;
    the squared loss's residual is in [-2, 2] when predictions stay in the target
    range). Clipping at half the worst case trades a little bias on large residuals
    for half the noise (Abadi et al. 2016 recommend clipping below the maximum norm);
    privacy holds for any clip norm. ``clip_scale`` is the loss's declaration (1, except
    the multinomial loss: see :class:`dp_sklearn._losses.MultinomialLoss`).
    """
    return CLIP_FRACTION * public.loss.clip_scale * public.x_norm


def gaussian_steps_plan(epsilon, delta, T, accounting="tight", paper_multiplier=None):
    """Noise multiplier and event of T adaptive Gaussian releases of equal sensitivity.

    Parameters
    ----------
    epsilon, delta : float
        Target; ``epsilon = inf`` gives multiplier 0 (no noise).
    T : int
        Number of releases.
    accounting : {"tight", "paper"}
        ``"tight"``: T Gaussian mechanisms with multiplier z compose exactly into one
        with multiplier z / sqrt(T) (Dong, Roth & Su 2019, Corollary 3.3), so
        ``z = sqrt(T) z_analytic(epsilon, delta)`` (Balle & Wang 2018). ``"paper"``:
        ``paper_multiplier()``, never below the tight multiplier (so it is private
        whatever the paper's constants).
    paper_multiplier : callable, default=None
        The paper's multiplier, relative to the same sensitivity.

    Returns
    -------
    z : float
        Multiplier per step, relative to the l2 sensitivity of a released step.
    event : dp_accounting.DpEvent
        ``SelfComposedDpEvent(GaussianDpEvent(z), T)``, or ``NonPrivateDpEvent`` when z = 0.
    epsilon : float
        The epsilon stated for the event (``inf`` when z = 0).
    """
    if epsilon == np.inf:
        return 0.0, dp_event.NonPrivateDpEvent(), float("inf")
    z = composed_gaussian_noise_multiplier(epsilon, delta, T)
    if accounting == "paper" and paper_multiplier is not None:
        z = max(paper_multiplier(), z)
    return z, dp_event.SelfComposedDpEvent(dp_event.GaussianDpEvent(z), int(T)), float(epsilon)


#: Poisson-sampled default at large n: target multiplier per sampled step (amplification
#: by sampling within 1% of lossless above it) and the smallest expected batch
SAMPLED_MULTIPLIER, MIN_BATCH = 2.5, 10_000
#: above this rate a sampled step (gather, then product) saves too little over a full pass
MAX_SAMPLED_RATE = 0.25


def default_sampling_rate(n, T, epsilon, delta, max_rate=MAX_SAMPLED_RATE):
    """Data-independent Poisson sampling rate q of the default (``batch_size=None``) plan.

    ``q = max(SAMPLED_MULTIPLIER / (2 z_full), MIN_BATCH / n)``, or 1 (full batches) when
    that exceeds ``max_rate`` (default ``MAX_SAMPLED_RATE``), with
    ``z_full = sqrt(T) z(epsilon, delta)`` the full-batch multiplier. Argument: the noise of a full-batch step
    on the mean gradient has standard deviation ``z_full 2C / n``; a Poisson-sampled step at
    rate q needs the multiplier z'(q) of ``poisson_noise_multiplier``, and its noise on the
    mean gradient, ``z' C / (q n)``, equals the full-batch one when ``z' = 2 q z_full``
    (lossless amplification), which the PLD accountant gives to within 1% for ``z' >= 2.5``
    (``benchmarks/results/speed_issue11.md``). The sampling adds gradient noise of variance
    at most ``C^2 / (q n)``; over the suffix average it costs at most ``eta C^2 / (3 q n)``
    in excess risk (the flat-direction argument of noisy GD's ``default_n_iter``), which
    ``q n >= MIN_BATCH`` keeps below 1e-4 in normalized loss units. Sampling starts at n =
    MIN_BATCH / max_rate (40,000 by default); the same T steps then touch about ``T q``
    passes of the data instead of T (10 passes at n = 10^6, T = 1000). Only public values
    enter. Used by the default plans of ``noisy_gd``, ``mirror_descent`` and
    ``frank_wolfe_gaussian``.
    """
    if not (0 < delta < 1) or not math.isfinite(epsilon):
        return 1.0
    z_full = math.sqrt(T) * gaussian_noise_multiplier(epsilon, delta)
    q = max(SAMPLED_MULTIPLIER / (2.0 * z_full), MIN_BATCH / n)
    return 1.0 if q > max_rate else float(q)


def sampling_rate(n, batch_size):
    """Poisson sampling rate of a user ``batch_size`` (``None`` and ``"full"``: 1, full batches)."""
    if batch_size is None or (isinstance(batch_size, str) and batch_size == "full"):
        return 1.0
    if not (isinstance(batch_size, numbers.Integral) and not isinstance(batch_size, bool) and 1 <= batch_size <= n):
        raise ValueError(f"batch_size must be None, 'full' or an int in [1, n_samples={n}], got {batch_size!r}.")
    return batch_size / n


def gradient_steps_plan(n, epsilon, delta, T, clip_norm, accounting="tight", batch_size=None,
                        paper_multiplier=None, sampled_paper_multiplier=None, max_rate=MAX_SAMPLED_RATE):
    """Sampling rate, noise and event of T releases of a clipped gradient sum (full or Poisson-sampled).

    The rate q is ``batch_size / n`` for an int ``batch_size``; with ``batch_size=None``
    and ``accounting="tight"`` it is :func:`default_sampling_rate` (public n, T, epsilon,
    delta, ``max_rate``), and 1 otherwise. Full batches (q = 1): :func:`gaussian_steps_plan`, any
    neighbouring relation, ``sigma = z 2C``. Poisson-sampled steps (q < 1): each record
    enters a step independently with probability q; the multiplier z' per unit of C is
    ``poisson_noise_multiplier(epsilon, delta, T, q)`` (PLD accountant, replace-one: a
    replaced record is sampled or not together with its replacement), ``sigma = z' C``,
    event ``SelfComposedDpEvent(PoissonSampledDpEvent(q, GaussianDpEvent(z')), T)``,
    valid only for an accountant built with ``NeighboringRelation.REPLACE_ONE``.
    ``accounting="paper"`` with q < 1 takes ``max(sampled_paper_multiplier(q), z')``
    and raises ``ValueError`` when the mechanism has no sampled paper calibration.

    Returns
    -------
    q : float
        Sampling rate (1: full batches).
    z : float
        Multiplier relative to the replace-one sensitivity 2C of a step.
    sigma : float
        Standard deviation of the noise added to the clipped gradient sum.
    event : dp_accounting.DpEvent
        The event of the T steps.
    relation : str
        The neighbouring relation under which ``event`` holds.
    """
    q = sampling_rate(n, batch_size)
    if batch_size is None and accounting == "tight":
        q = default_sampling_rate(n, T, float(epsilon), float(delta), max_rate)
    if q == 1.0 or epsilon == np.inf:
        z, event, _ = gaussian_steps_plan(epsilon, delta, T, accounting, paper_multiplier)
        return q, z, z * 2.0 * clip_norm, event, "any (multiplier relative to the replace-one sensitivity 2C)"
    if accounting == "paper" and sampled_paper_multiplier is None:
        raise ValueError("accounting='paper' is a full-batch calibration for this solver: use batch_size=None "
                         "or 'full'.")
    zp = poisson_noise_multiplier(float(epsilon), float(delta), T, float(q))
    if accounting == "paper":
        zp = max(sampled_paper_multiplier(q), zp)
    event = dp_event.SelfComposedDpEvent(dp_event.PoissonSampledDpEvent(q, dp_event.GaussianDpEvent(zp)), T)
    return q, 0.5 * zp, zp * clip_norm, event, "REPLACE_ONE"


def clipped_sum_source(problem, constraint, clip_norm, sampling_rate=1.0):
    """The fit's source of clipped gradient sums: the Gram matrix when exact, else ``None``.

    Returns a :class:`dp_sklearn._gram.GramGradient` (formed once, one pass over X)
    when the full-batch clipped sum provably equals ``G theta - X^T y`` for every
    feasible theta (:func:`dp_sklearn._gram.gram_applies`, a test on public values
    only: squared loss, bounded feasible set, ``clip_norm >= (M + 1) x_norm``, small
    dim); ``None`` otherwise, and for Poisson-sampled steps. Either way
    :func:`noisy_clipped_gradient` releases the same quantity.
    """
    if sampling_rate < 1.0 or not gram_applies(problem, constraint, clip_norm):
        return None
    return GramGradient(problem.X, problem.y)


#: at or above this rate a Poisson sample is drawn as n uniforms (n <= 4 q n: still O(q n))
UNIFORMS_RATE = 0.25


def poisson_sample(rng, n, q):
    """Sorted indices of a Poisson sample: each of n records enters independently with probability q.

    Below ``UNIFORMS_RATE`` the sample is drawn from its gaps: in a sequence of
    independent Bernoulli(q) trials the distances between consecutive successes (and
    from the start to the first one) are i.i.d. Geometric(q) on {1, 2, ...}, so the
    cumulative sums of Geometric(q) draws, minus one, kept while below n, are the
    indices of a Poisson sample, in increasing order, with exactly its distribution.
    That costs O(q n) draws per step at every rate (an n-uniform draw costs O(n);
    ``benchmarks/speed.py`` times both). At ``q >= UNIFORMS_RATE``, n uniforms
    ``< q`` (O(n) = O(q n) there). The law, not the implementation, is what the
    accounting uses: ``PoissonSampledDpEvent(q, .)``.
    """
    if q >= UNIFORMS_RATE:
        return np.flatnonzero(rng.random(n) < q)
    if n <= 0 or q <= 0:
        return np.zeros(0, dtype=np.int64)
    chunk = int(n * q + 6.0 * math.sqrt(n * q) + 16)  # one chunk covers n with probability > 1 - 1e-9
    parts, last = [], -1
    while True:
        pos = np.cumsum(rng.geometric(q, size=chunk)) + last
        if pos[-1] >= n:
            parts.append(pos[:np.searchsorted(pos, n)])
            break
        parts.append(pos)
        last = int(pos[-1])
    return parts[0] if len(parts) == 1 else np.concatenate(parts)


def _sampled_clipped_sum(problem, theta, clip_norm, idx, block_entries=2**18):
    """The clipped gradient sum over the rows ``idx``, gathered in chunks of about ``block_entries`` entries.

    The sum is additive over chunks, so this is the same quantity as one gather of all
    the sampled rows, with memory bounded by a chunk instead of q X. A design kept on a
    dask cluster (:class:`dp_sklearn._dask_design.DaskDesign`) sums the same rows
    blockwise on its workers (its ``sampled_gradient_sum``): the indices are drawn here,
    on the client, from the fit's Generator, so both paths consume it identically.
    """
    X = problem.X
    if hasattr(X, "sampled_gradient_sum"):
        return X.sampled_gradient_sum(problem.loss, theta, clip_norm, idx)
    per_row = X.nnz / max(X.shape[0], 1) if hasattr(X, "nnz") else X.shape[1]
    step = max(1, int(block_entries // max(per_row, 1)))
    g = np.zeros(theta.size)
    for s in range(0, idx.size, step):  # chunks of sampled rows, not single samples
        j = idx[s:s + step]
        g += problem.loss.clipped_gradient_sum(X[j], problem.y[j], theta, problem.row_norms[j], clip_norm)
    return g


def noise_stream(rng, sigma, clip_norm, dim, n_steps):
    """The Gaussian noise of ``n_steps`` calls of :func:`noisy_clipped_gradient` (``noise=``), drawn ahead.

    :func:`dp_sklearn._noise.gaussian_stream` with the step's release (scale ``sigma``,
    l2 sensitivity ``clip_norm`` as :func:`noisy_clipped_gradient` passes it, ``dim``
    entries): the same releases and accounting as ``n_steps`` separate draws.
    """
    return _noise.gaussian_stream(rng, sigma, clip_norm, dim, n_steps)


def noisy_clipped_gradient(problem, theta, clip_norm, sigma, rng, *, l2_reg=0.0, sampling_rate=1.0, gram=None,
                           noise=None):
    """(sum_i clip(grad l(theta; x_i, y_i), C) + N(0, sigma^2 I)) / (q n) + l2_reg theta.

    The clipped sum has l2 sensitivity 2C under replace-one neighbours. With
    ``sampling_rate = q < 1`` the sum runs over a Poisson sample (each record enters
    independently with probability q) and is divided by the public expected batch
    size q n, so the step stays a post-processing of the noisy sum. ``gram`` (from
    :func:`clipped_sum_source`, full batches only) computes the same clipped sum as
    ``G theta - X^T y`` in O(dim^2): it is only built when no record can be clipped.
    ``noise`` (:func:`noise_stream`, made once per fit) releases the sum as
    :func:`dp_sklearn._noise.add_gaussian` would, its noise drawn ahead for all steps.
    """
    if gram is not None and sampling_rate == 1.0:
        g = gram.gradient_sum(theta)
    else:
        X, y, row_norms = problem.X, problem.y, problem.row_norms
        if sampling_rate < 1.0:
            g = _sampled_clipped_sum(problem, theta, clip_norm, poisson_sample(rng, problem.n, sampling_rate))
        elif X.shape[0]:
            bounds = problem.clip_bounds(clip_norm) if hasattr(problem, "clip_bounds") else None
            g = problem.loss.clipped_gradient_sum(X, y, theta, row_norms, clip_norm, bounds=bounds)
        else:
            g = np.zeros(theta.size)
    if noise is not None:
        g = noise.add(g)
    elif sigma > 0:
        g = _noise.add_gaussian(rng, g, sigma, clip_norm)
    g /= sampling_rate * problem.n
    if l2_reg:
        g += l2_reg * theta
    return g


def check_gaussian_delta(epsilon, delta, name):
    """Raise a ValueError naming ``delta`` and the pure solvers if delta is not in (0, 1)."""
    if epsilon != np.inf and not (0 < delta < 1):
        pure = sorted(k for k, spec in SOLVERS.items() if spec.pure_dp)
        raise ValueError(
            f"delta must be in (0, 1) for solver={name!r} (Gaussian noise); got delta={delta!r}. "
            f"Solvers that accept delta=0: {pure}."
        )
