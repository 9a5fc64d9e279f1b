"""Statistical privacy audit: an empirical lower bound on epsilon.

A threshold test on the outputs of a mechanism run many times on two neighbouring datasets
bounds epsilon from below with a stated confidence (see :func:`audit_epsilon` and its
references). A calibrated mechanism must yield ``epsilon_lower <= epsilon``; an
under-noised one is caught when ``epsilon_lower > epsilon``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from joblib import Parallel, delayed
from scipy.stats import beta

from ._audit_checks import check_binomial, check_dataset, check_int, check_outputs, check_scores, stack_outputs
from ._data import check_bound

__all__ = [
    "AuditResult",
    "audit_epsilon",
    "clopper_pearson_upper",
    "glm_worst_case_pair",
]

# Samples per joblib task. Fixed (independent of ``n_jobs``) so that the
# spawned seeds, hence the result, do not depend on the degree of parallelism.
_CHUNK_SIZE = 250
# Candidate thresholds: these quantiles of the pooled fit-half scores. A coarse
# grid keeps the selection from overfitting noise in the tails of the fit half.
_QUANTILES = np.linspace(0.0, 1.0, 51)


@dataclass(frozen=True)
class AuditResult:
    """Outcome of :func:`audit_epsilon` (the parameters are its frozen attributes).

    Parameters
    ----------
    epsilon_lower : float
        Lower bound on epsilon valid with probability ``confidence``.
    epsilon_hat : float
        Point estimate from the raw evaluation error rates (zero counts read as 1/2).
    threshold : float
        Threshold on the statistic selected on the fit half.
    fpr, fnr : float
        Observed error rates on the evaluation half (positive = "the output came from ``D'``").
    fpr_upper, fnr_upper : float
        One-sided Clopper-Pearson upper bounds on the two rates.
    n_samples : int
        Number of mechanism outputs drawn on each of ``D`` and ``D'``.
    confidence : float
        Joint confidence level of the two upper bounds (and of ``epsilon_lower``).
    direction : int
        ``+1``: the test guesses ``D'`` when ``statistic > threshold``; ``-1``: when ``<=``.

    See Also
    --------
    audit_epsilon : computes it.

    Examples
    --------
    >>> from dp_sklearn.audit import AuditResult
    >>> AuditResult(0.5, 0.7, 0.1, 0.2, 0.3, 0.25, 0.35, 1000, 0.95).epsilon_lower
    0.5
    """

    epsilon_lower: float
    epsilon_hat: float
    threshold: float
    fpr: float
    fnr: float
    fpr_upper: float
    fnr_upper: float
    n_samples: int
    confidence: float
    direction: int = 1


def clopper_pearson_upper(k, n, alpha):
    """One-sided Clopper-Pearson upper confidence bound on a binomial rate.

    Parameters
    ----------
    k : int or array-like of int
        Number of observed events (``0 <= k <= n``).
    n : int or array-like of int
        Number of trials (``>= 1``).
    alpha : float
        Error probability in (0, 1); the bound holds with probability ``>= 1 - alpha``.

    Returns
    -------
    upper : float or ndarray
        ``Beta(1 - alpha; k + 1, n - k)``; 1 when ``k == n``, ``1 - alpha ** (1 / n)`` when ``k == 0``.

    Raises
    ------
    ValueError
        If ``k`` or ``n`` is not a whole number, ``n < 1``, ``k`` not in [0, n], or ``alpha`` not in (0, 1).

    See Also
    --------
    audit_epsilon : uses it on the audit's two error rates.

    References
    ----------
    .. [1] C. J. Clopper and E. S. Pearson, Biometrika 26(4), 1934.

    Examples
    --------
    >>> from dp_sklearn.audit import clopper_pearson_upper
    >>> round(float(clopper_pearson_upper(0, 100, 0.05)), 4)  # 1 - 0.05 ** (1 / 100)
    0.0295
    """
    k, n = check_binomial(k, n, alpha)
    with np.errstate(invalid="ignore", divide="ignore"):
        upper = beta.ppf(1.0 - alpha, k + 1.0, n - k)
    upper = np.where(k >= n, 1.0, upper)
    return upper[()] if upper.ndim == 0 else upper


def _epsilon_from_rates(fpr, fnr, delta):
    """``max(log((1-delta-fpr)/fnr), log((1-delta-fnr)/fpr), 0)``, vectorized."""
    fpr, fnr = np.asarray(fpr, dtype=float), np.asarray(fnr, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        a = np.log(np.maximum(1.0 - delta - fpr, 0.0) / fnr)
        b = np.log(np.maximum(1.0 - delta - fnr, 0.0) / fpr)
    return np.maximum(np.nan_to_num(np.maximum(a, b), nan=0.0), 0.0)


def _error_counts(s0, s1, thresholds):
    """False positives / negatives of all tests ``score > t => D'`` and their
    complements ``score <= t => D'``; returns arrays of shape (2, n_thresholds)."""
    above0 = s0.size - np.searchsorted(np.sort(s0), thresholds, side="right")
    below1 = np.searchsorted(np.sort(s1), thresholds, side="right")
    fp = np.stack([above0, s0.size - above0])
    fn = np.stack([below1, s1.size - below1])
    return fp, fn


def _run_chunk(mechanism, X, y, rng, size):
    return stack_outputs([np.ravel(np.asarray(mechanism(X, y, rng), dtype=float)) for _ in range(size)])


def audit_epsilon(
    mechanism,
    D,
    D_prime,
    *,
    n_samples=2000,
    statistic=None,
    delta=0.0,
    confidence=0.95,
    random_state=None,
    n_jobs=None,
    verbose=0,
):
    """Empirical lower bound on the epsilon of a randomized mechanism.

    The mechanism is run ``n_samples`` times on each of ``D`` and ``D_prime``. The first
    half of each sample chooses the statistic (by default) and the threshold test; the
    second half, untouched by those choices, gives the error counts behind the bound.

    Parameters
    ----------
    mechanism : callable
        ``mechanism(X, y, rng) -> ndarray`` of any (fixed) shape, flattened to
        ``(d,)``; ``rng`` is a :class:`numpy.random.Generator` that must be
        the mechanism's only source of randomness.
    D, D_prime : tuple (X, y)
        Neighbouring datasets (replace-one: they differ in one record), with
        ``X`` of shape (n, n_features) and ``y`` of shape (n,).
    n_samples : int, default=2000
        Number of outputs drawn on each dataset (at least 20).
    statistic : callable or None, default=None
        Maps an (m, d) array of outputs to a score of shape (m,). If None, the
        outputs are projected onto the difference of the mean outputs on
        ``D_prime`` and ``D`` estimated on the fit half.
    delta : float, default=0.0
        The delta of the (epsilon, delta) guarantee being audited, in [0, 1).
    confidence : float, default=0.95
        Confidence level of the lower bound, in (0, 1). The error
        ``1 - confidence`` is split equally between the upper bounds on the
        false positive and false negative rates (Bonferroni).
    random_state : None, int, SeedSequence or Generator, default=None
        Seed for :func:`numpy.random.default_rng`; every chunk of mechanism
        runs gets its own spawned child generator, so the result is
        reproducible and independent of ``n_jobs``.
    n_jobs : int or None, default=None
        Number of joblib workers running chunks of samples; None: sequential (unless
        inside a :func:`joblib.parallel_config` context).
    verbose : int, default=0
        If positive, print progress.

    Returns
    -------
    result : AuditResult
        Lower bound ``epsilon_lower``, point estimate ``epsilon_hat``, the
        selected test and its error rates.

    Raises
    ------
    ValueError
        If ``n_samples < 20``, ``confidence`` is not in (0, 1), ``delta`` is not in [0, 1),
        ``D``/``D_prime`` are not (X, y) pairs, the mechanism returns an empty, non-finite
        or varying-size output, or ``statistic`` a wrong shape or non-finite scores.

    See Also
    --------
    glm_worst_case_pair : a neighbouring pair for linear-model mechanisms.
    clopper_pearson_upper : the confidence bound on each error rate.

    Notes
    -----
    For a test with false positive rate ``FPR`` and false negative rate
    ``FNR`` (positive meaning "``D'``"), (epsilon, delta)-DP implies
    ``epsilon >= log((1 - delta - FPR) / FNR)`` and
    ``epsilon >= log((1 - delta - FNR) / FPR)`` [1]_ [2]_. The returned lower
    bound plugs in the Clopper-Pearson upper bounds [3]_ on both rates. The
    threshold and its side (``statistic > t`` or ``statistic <= t`` meaning
    ``D'``) are chosen on the fit half, among the 2%-quantiles of the pooled
    fit scores, to maximize the epsilon estimate computed there with the same
    Clopper-Pearson bounds (not the raw estimate, which picks tail thresholds).

    References
    ----------
    .. [1] M. Jagielski, J. Ullman and A. Oprea, "Auditing differentially private machine
       learning: how private is private SGD?", NeurIPS 2020.
    .. [2] M. Nasr, S. Song, A. Thakurta, N. Papernot and N. Carlini, "Adversary instantiation:
       lower bounds for differentially private machine learning", IEEE S&P 2021.
    .. [3] C. J. Clopper and E. S. Pearson, Biometrika 26(4), 1934.

    Examples
    --------
    A Laplace mechanism calibrated to epsilon = 1 passes; its negative control,
    with a tenth of the noise, is caught:

    >>> from dp_sklearn.audit import audit_epsilon, glm_worst_case_pair
    >>> D, D_prime = glm_worst_case_pair()  # the rows differ by 2 in l1 norm
    >>> def laplace(b):
    ...     return lambda X, y, rng: X.sum(axis=0) + rng.laplace(scale=b, size=2)
    >>> [bool(audit_epsilon(laplace(b), D, D_prime, n_samples=1000, random_state=0)
    ...       .epsilon_lower > 1.0) for b in (2.0, 0.2)]
    [False, True]
    """
    if not callable(mechanism):
        raise ValueError("mechanism must be callable.")
    is_int = isinstance(n_samples, (int, np.integer)) and not isinstance(n_samples, bool)
    if not is_int or n_samples < 20:
        raise ValueError(f"n_samples must be an integer >= 20, got {n_samples!r}.")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence!r}.")
    if not 0.0 <= delta < 1.0:
        raise ValueError(f"delta must be in [0, 1), got {delta!r}.")
    if statistic is not None and not callable(statistic):
        raise ValueError("statistic must be a callable or None.")
    datasets = (check_dataset(D, "D"), check_dataset(D_prime, "D_prime"))
    n_samples = int(n_samples)

    # --- sampling: fixed-size chunks, each with its own spawned generator ---
    sizes = [min(_CHUNK_SIZE, n_samples - s) for s in range(0, n_samples, _CHUNK_SIZE)]
    rngs = np.random.default_rng(random_state).spawn(2 * len(sizes))
    tasks = [(side, size) for side in (0, 1) for size in sizes]
    parallel = Parallel(n_jobs=n_jobs, return_as="generator")
    chunks, done = [], 0
    for out in parallel(
        delayed(_run_chunk)(mechanism, *datasets[side], rng, size)
        for (side, size), rng in zip(tasks, rngs)
    ):
        chunks.append(out)
        done += out.shape[0]
        if verbose > 0:
            print(f"audit: {done}/{2 * n_samples} samples", flush=True)
    m = len(sizes)
    outputs = [np.concatenate(chunks[:m]), np.concatenate(chunks[m:])]
    check_outputs(outputs)

    # --- split into fit / evaluation halves and compute scores ---
    half = n_samples // 2
    fit = [o[:half] for o in outputs]
    ev = [o[half:] for o in outputs]
    if statistic is None:
        w = fit[1].mean(axis=0) - fit[0].mean(axis=0)
        statistic = lambda out: out @ w  # noqa: E731
    scores = []
    for o in (*fit, *ev):
        scores.append(check_scores(statistic(o), o.shape[0]))
    f0, f1, e0, e1 = scores

    # --- threshold selection on the fit half (both sides, pessimistic estimate) ---
    alpha = (1.0 - confidence) / 2.0
    thresholds = np.unique(np.quantile(np.concatenate([f0, f1]), _QUANTILES))
    fp, fn = _error_counts(f0, f1, thresholds)
    eps_fit = _epsilon_from_rates(
        clopper_pearson_upper(fp, f0.size, alpha),
        clopper_pearson_upper(fn, f1.size, alpha),
        delta,
    )
    side, idx = np.unravel_index(np.argmax(eps_fit), eps_fit.shape)
    threshold = float(thresholds[idx])

    # --- evaluation half: counts, Clopper-Pearson bounds, epsilon bounds ---
    fp, fn = _error_counts(e0, e1, np.array([threshold]))
    fp, fn = int(fp[side, 0]), int(fn[side, 0])
    n0, n1 = e0.size, e1.size
    fpr_upper = float(clopper_pearson_upper(fp, n0, alpha))
    fnr_upper = float(clopper_pearson_upper(fn, n1, alpha))
    eps_lower = float(_epsilon_from_rates(fpr_upper, fnr_upper, delta))
    eps_hat = float(_epsilon_from_rates(max(fp, 0.5) / n0, max(fn, 0.5) / n1, delta))
    return AuditResult(
        epsilon_lower=eps_lower,
        epsilon_hat=eps_hat,
        threshold=threshold,
        fpr=fp / n0,
        fnr=fn / n1,
        fpr_upper=fpr_upper,
        fnr_upper=fnr_upper,
        n_samples=n_samples,
        confidence=float(confidence),
        direction=1 if side == 0 else -1,
    )


def glm_worst_case_pair(
    n=10, n_features=2, *, kind="regression", data_norm=1.0, random_state=0
):
    """A worst-case-style replace-one neighbouring pair for GLM mechanisms.

    Both datasets share ``n - 1`` records with small features (uniform in
    ``[-0.01, 0.01] * data_norm / sqrt(n_features)``) and targets/labels. The
    last record is ``x = data_norm * e_1`` in ``D`` and ``-data_norm * e_1`` in
    ``D'``, with ``y = 1`` in both: on the boundary of ``||x||_2 <= data_norm``,
    it pulls a linear model in opposite directions.

    Parameters
    ----------
    n : int, default=10
        Number of records in each dataset (at least 3).
    n_features : int, default=2
        Number of features (at least 1).
    kind : {"regression", "classification"}, default="regression"
        For ``"regression"`` the shared targets are uniform in [-0.01, 0.01];
        for ``"classification"`` the shared labels alternate 0, 1, ... so that
        both classes occur, and the differing record has label 1.
    data_norm : float, default=1.0
        Bound on the l2 norm of every row of ``X``.
    random_state : int, Generator or None, default=0
        Seed for the shared records.

    Returns
    -------
    (X, y), (X_prime, y_prime) : tuple of tuple of ndarray
        ``X`` and ``X_prime`` of shape (n, n_features), ``y`` and ``y_prime``
        of shape (n,) (float for regression, int for classification); they
        differ only in the last row.

    Raises
    ------
    ValueError
        If ``kind`` is unknown, ``n`` or ``n_features`` is not an int (bools refused),
        ``n < 3``, ``n_features < 1``, or ``data_norm`` is not finite and positive.

    See Also
    --------
    audit_epsilon : audits a mechanism on such a pair.

    Examples
    --------
    >>> from dp_sklearn.audit import glm_worst_case_pair
    >>> (X, y), (X_prime, y_prime) = glm_worst_case_pair(n=10, n_features=2)
    >>> X.shape, X[-1].tolist(), X_prime[-1].tolist()
    ((10, 2), [1.0, 0.0], [-1.0, 0.0])
    """
    if kind not in ("regression", "classification"):
        raise ValueError(f"kind must be 'regression' or 'classification', got {kind!r}.")
    check_int(n, "n", 3), check_int(n_features, "n_features", 1)
    data_norm = check_bound(data_norm, "data_norm")
    rng = np.random.default_rng(random_state)
    scale = 0.01 * data_norm / math.sqrt(n_features)
    X = np.zeros((n, n_features))
    X[:-1] = rng.uniform(-scale, scale, size=(n - 1, n_features))
    if kind == "regression":
        y = np.ones(n)
        y[:-1] = rng.uniform(-0.01, 0.01, size=n - 1)
    else:
        y = np.ones(n, dtype=int)
        y[:-1] = np.arange(n - 1) % 2
    X_prime, y_prime = X.copy(), y.copy()
    X[-1, 0], X_prime[-1, 0] = data_norm, -data_norm
    return (X, y), (X_prime, y_prime)
