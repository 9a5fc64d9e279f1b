"""DPMaxAbsScaler: scaling without centering from private quantiles; sparse input stays sparse."""

from __future__ import annotations

import math
from numbers import Real

import numpy as np
import scipy.sparse as sp
from sklearn.utils._param_validation import Interval, StrOptions

from .. import _noise
from .._data import _canonical_csr
from .._private_stats import FENCE, TIE_DITHER, exponential_quantiles, plan_statistics, quantile_epsilon, search_unit
from ._base import _DPTransformerBase
from ._global import AUTO_LEVELS, auto_quantile_level

__all__ = ["DPMaxAbsScaler", "nonzero_quantiles"]


def nonzero_quantiles(Xc, level, epsilon, rng, *, upper, unit, dither=TIE_DITHER):
    """Private quantile of the nonzero ``|x_j|`` of each column of a CSC matrix (exponential mechanism).

    Column ``j`` holds ``m_j`` nonzero values, clipped to ``[0, upper]``, mapped to
    ``t = asinh(|x| / unit)`` (log-uniform base measure above ``unit``), dithered by the public
    ``dither`` and sorted: ``0 = t_0 <= t_1 <= ... <= t_m <= t_{m+1} = asinh(upper / unit)``. The
    interval ``[t_i, t_{i+1}]`` has utility ``-|i - level m_j|`` and is drawn with probability
    proportional to its length times ``exp(epsilon u / 2)`` (the exact Gumbel-max of
    ``dp_sklearn._noise.exponential_mechanism`` over all columns at once, ``O(nnz log nnz)``), then
    an exact uniform point inside it rounded to the public grid of ``dp_sklearn._noise.em_grid``
    (the level rounded to a multiple of 2**-20, so that the scores are exact in float64). Zeros are not values of the mechanism,
    so a column is never densified.

    Parameters
    ----------
    Xc : scipy.sparse.csc_matrix of shape (n_samples, n_features)
        Canonical (no duplicates, no explicit zeros).
    level : float
        Quantile level in [0, 1].
    epsilon : float or None
        Privacy loss of each column's mechanism (``None``: the exact quantile, non-private).
    rng : numpy.random.Generator or None
        The fit's generator.
    upper : float
        Public upper end of the search range of ``|x|``.
    unit : float
        Public unit of the base measure (> 0).
    dither : float, default=TIE_DITHER
        Public uniform dither in asinh units (see ``exponential_quantiles``).

    Returns
    -------
    values : ndarray of shape (n_features,)
        In ``[0, upper]``; a column without nonzero value gets a draw from the whole range.

    Notes
    -----
    **Sensitivity.** ``i - level m_j = (1 - level) A(t) - level B(t)``, with ``A`` and ``B`` the
    numbers of nonzero values below and above ``t``. Replacing one record removes at most one
    nonzero value and adds at most one: removing a value below ``t`` and adding one above moves
    the utility by ``(1 - level) + level = 1``, two on the same side by 0, and a replacement
    involving a zero by at most ``max(level, 1 - level)``. The sensitivity is 1, so each
    column's mechanism is ``epsilon``-DP (McSherry & Talwar 2007) and ``epsilon^2 / 8``-zCDP
    (Cesar & Rogers 2021, Lemma 3.2).
    """
    n, p = Xc.shape
    counts = np.diff(Xc.indptr)
    cols = np.repeat(np.arange(p), counts)
    t_hi = float(np.arcsinh(upper / unit))
    T = np.arcsinh(np.minimum(np.abs(Xc.data), upper) / unit)
    if epsilon is None:
        out = np.zeros(p)
        if T.size:
            order = np.lexsort((T, cols))
            pos = Xc.indptr[:-1] + np.floor(level * np.maximum(counts - 1, 0)).astype(int)
            has = counts > 0
            out[has] = unit * np.sinh(T[order][pos[has]])
        return out
    if dither > 0:
        T = np.clip(T + dither * (rng.uniform(size=T.shape) - 0.5), 0.0, t_hi)
    T = T[np.lexsort((T, cols))]
    # Intervals: column j owns counts[j] + 1 of them, starting at start[j] = indptr[j] + j.
    start = Xc.indptr[:-1] + np.arange(p)
    size = counts + 1
    total = int(size.sum())
    rank_in_col = np.arange(total) - np.repeat(start, size)
    nz_pos = np.arange(T.size) + np.repeat(np.arange(p), counts)  # position of each value's left interval
    left, right = np.zeros(total), np.full(total, t_hi)
    left[nz_pos + 1] = T
    right[nz_pos] = T
    # the level rounded to a multiple of 2**-20 (public): level * m_j and rank - level * m_j are then exact
    # in float64 (m_j < 2**33), and the sensitivity argument below holds for any level in [0, 1]
    target = math.ldexp(round(math.ldexp(float(level), 20)), -20) * counts.astype(float)
    score = -np.abs(rank_in_col - np.repeat(target, size))
    first = _noise.exponential_mechanism(rng, score, 0.5 * float(epsilon), weight=(right, left), starts=start)
    t = _noise.uniform_point(rng, left[first], right[first], float(_noise.em_grid(t_hi)))
    return np.clip(unit * np.sinh(t), 0.0, upper)


class DPMaxAbsScaler(_DPTransformerBase):
    """Scale features without centering from private quantiles; sparse input stays sparse.

    Like scikit-learn's ``MaxAbsScaler`` the data is only divided (never shifted), so a CSR
    matrix keeps its zeros and is never densified. The divisor is private:

    * ``strategy="row_norm"`` (default): one common scale, a private quantile of the rows' l2
      norms (one exponential mechanism, the whole budget); rows are then clipped to l2 norm 1.
      For features in one unit: counts, TF-IDF, hashed text, 0/1 indicators.
    * ``strategy="per_feature"``: feature ``j`` is divided by ``1 + FENCE`` = 2.5 times a private
      quantile of its *nonzero* ``|x_j|`` (``nonzero_quantiles``, ``n_features`` mechanisms
      composed in zCDP; with the upper quartile, the analogue of Tukey's fence) and clipped to
      [-1, 1]. For features in different units; a feature with few nonzero
      values gets a scale drawn from the wide public search range, so keep this for matrices
      whose columns are not rare.

    Parameters
    ----------
    epsilon : float, default=1.0
        Privacy loss of the fit in nats (> 0); ``numpy.inf`` uses exact quantiles (non-private).
    delta : float, default=1e-5
        In [0, 1). ``"per_feature"`` composes its mechanisms in zCDP when ``delta > 0`` (basic
        composition for ``delta=0``); ``"row_norm"`` is pure ``epsilon``-DP.
    strategy : {"row_norm", "per_feature"}, default="row_norm"
        See above.
    quantile : "auto" or float in (0, 1), default="auto"
        Level of the private quantile. ``"auto"``: for ``"row_norm"``, ``1 - q`` with
        ``q = dp_sklearn.preprocessing._global.auto_quantile_level(epsilon_q, n_samples)``, the
        most extreme upper level the budget ``epsilon_q`` locates among ``n_samples`` rows (0.75
        at small ``epsilon n``, up to 0.99); for ``"per_feature"``, 0.75 (the number of nonzero
        values of a column is private, so the level cannot grow with it). Public values only.
    search_range : tuple (low, high), default=(-1e6, 1e6)
        Public range of the features: ``|x| <= max(|low|, |high|)`` is searched on a log scale
        above ``search_unit(search_range) = 1e-9 max(|low|, |high|)`` (row norms up to
        ``sqrt(n_features)`` times that).
    random_state : None, int, SeedSequence, Generator or RandomState, default=None
        Source of the noise (see :class:`~dp_sklearn.DPStandardScaler`).
    ledger : dp_sklearn.PrivacyLedger or None, default=None
        Reserves the fit's exact event before the data is used and records it after.

    Attributes
    ----------
    scale_ : ndarray of shape (n_features,)
        The private divisor of each feature (one value repeated for ``"row_norm"``).
    max_abs_ : ndarray of shape (n_features,)
        Same as ``scale_`` (scikit-learn's name).
    output_bound_ : ndarray of shape (n_features,)
        Ones: ``|transform(X)[:, j]| <= 1``.
    output_norm_ : float
        Public bound on a transformed row's l2 norm: 1.0 (``"row_norm"``) or
        ``sqrt(n_features)`` (``"per_feature"``).
    quantile_ : float
        The level used.
    dp_event_ : dp_accounting.DpEvent
        Everything the fit released.
    epsilon_, delta_ : float
        The guarantee of the fit.
    n_features_in_ : int
        Number of features seen during ``fit``.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Defined only when X has string feature names.
    n_samples_seen_ : int
        Number of samples (public).

    See Also
    --------
    dp_sklearn.DPStandardScaler : private standardization of dense features in different units.
    sklearn.preprocessing.Normalizer : rows to unit norm, row by row (no statistic, no budget).

    Notes
    -----
    ``fit`` and ``transform`` accept dense arrays and any scipy.sparse format (transformed to
    CSR; sparse in, sparse out). ``"row_norm"``: the exponential mechanism (Smith 2011) on the
    ``n`` row norms, clipped to ``[0, sqrt(n_features) max(|low|, |high|)]``, rank utility of
    sensitivity 1, log-uniform base measure: ``epsilon``-DP. A DP model after it should be
    given ``data_norm=output_norm_`` (1.0): no row is clipped again.

    References
    ----------
    .. [1] A. Smith, "Privacy-preserving statistical estimation with optimal convergence rates", STOC 2011.
    .. [2] F. McSherry and K. Talwar, "Mechanism design via differential privacy", FOCS 2007.

    Examples
    --------
    >>> import numpy as np
    >>> import scipy.sparse as sp
    >>> from dp_sklearn.preprocessing import DPMaxAbsScaler
    >>> X = sp.random(2000, 50, density=0.05, format="csr", random_state=0) * 10.0
    >>> sc = DPMaxAbsScaler(epsilon=1.0, random_state=0).fit(X)
    >>> Z = sc.transform(X)
    >>> sp.issparse(Z), bool(np.all(sp.linalg.norm(Z, axis=1) <= 1.0 + 1e-12))
    (True, True)
    """

    _accept_sparse = ("csr", "csc", "coo")

    _parameter_constraints: dict = {
        "epsilon": _DPTransformerBase._parameter_constraints["epsilon"],
        "delta": _DPTransformerBase._parameter_constraints["delta"],
        "strategy": [StrOptions({"row_norm", "per_feature"})],
        "quantile": [Interval(Real, 0, 1, closed="neither"), StrOptions({"auto"})],
        "search_range": _DPTransformerBase._parameter_constraints["search_range"],
        "random_state": _DPTransformerBase._parameter_constraints["random_state"],
        "ledger": _DPTransformerBase._parameter_constraints["ledger"],
    }

    def __init__(self, *, epsilon=1.0, delta=1e-5, strategy="row_norm", quantile="auto", search_range=(-1e6, 1e6),
                 random_state=None, ledger=None):
        self.epsilon = epsilon
        self.delta = delta
        self.strategy = strategy
        self.quantile = quantile
        self.search_range = search_range
        self.random_state = random_state
        self.ledger = ledger

    def _public_bounds(self, n_features):
        return None

    def _levels(self, n_samples=None, n_features=None):
        """The quantile level (checked; ``"auto"`` from public values only)."""
        if not isinstance(self.quantile, str):
            return float(self.quantile)
        if n_samples is None or self.strategy == "per_feature":
            return 1.0 - AUTO_LEVELS[1]
        eps_q = self._quantile_eps(n_features) if np.isfinite(self.epsilon) else np.inf
        return 1.0 - auto_quantile_level(eps_q, n_samples)

    def _quantile_eps(self, n_features):
        return self._plan(n_features, None, None).quantile_epsilon

    def _plan(self, n_features, bounds, n_samples):
        if self.strategy == "row_norm":
            eps0, event = quantile_epsilon(self.epsilon, self.delta, 1)
            return _Plan(eps0, event)
        plan = plan_statistics(self.epsilon, self.delta, n_quantiles=n_features, quantile_share=1.0, moments=False)
        return _Plan(plan.quantile_epsilon, plan.event)

    def _release(self, X, rng, bounds, plan):
        n, p = X.shape
        level, search = self._levels(n, p), self._search()
        top = max(abs(search[0]), abs(search[1]))
        unit = search_unit(search)
        eps = None if plan is None else plan.quantile_epsilon
        if self.strategy == "row_norm":
            norms = sp.linalg.norm(_canonical_csr(X), axis=1) if sp.issparse(X) else np.linalg.norm(X, axis=1)
            norms = np.minimum(norms, np.sqrt(p) * top)
            if eps is None:
                s = float(np.quantile(norms, level))
            else:
                s = float(exponential_quantiles(norms, [level], eps, rng, lower=0.0, upper=np.sqrt(p) * top,
                                                unit=unit, dither=TIE_DITHER)[0])
            self.scale_ = np.full(p, max(s, unit))
            self.output_norm_ = 1.0
        else:
            Xc = (_canonical_csr(X) if sp.issparse(X) else sp.csr_matrix(X)).tocsc()
            q = nonzero_quantiles(Xc, level, eps, rng, upper=top, unit=unit)
            self.scale_ = np.maximum((1.0 + FENCE) * q, unit)
            self.output_norm_ = float(np.sqrt(p))
        self.max_abs_ = self.scale_
        self.quantile_ = level
        self.output_bound_ = np.ones(p)

    def transform(self, X, copy=None):
        """Divide by the private scales and clip to the public bound.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Data to transform.
        copy : None
            Ignored (a new array or matrix is always returned).

        Returns
        -------
        X_new : {ndarray, scipy.sparse.csr_matrix} of shape (n_samples, n_features)
            Sparse when X is. ``"row_norm"``: rows of l2 norm at most 1 (directions kept);
            ``"per_feature"``: entries in [-1, 1].
        """
        X = self._check_transform_input(X)
        if sp.issparse(X):
            Z = _canonical_csr(X) @ sp.diags(1.0 / self.scale_)
            Z = sp.csr_matrix(Z)
            if self.strategy == "row_norm":
                norms = sp.linalg.norm(Z, axis=1)
                Z = sp.csr_matrix(sp.diags(1.0 / np.maximum(norms, 1.0)) @ Z)
            else:
                np.clip(Z.data, -1.0, 1.0, out=Z.data)
            return Z
        Z = X / self.scale_
        if self.strategy == "row_norm":
            return Z / np.maximum(np.linalg.norm(Z, axis=1), 1.0)[:, None]
        return np.clip(Z, -1.0, 1.0)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags


class _Plan:
    """The calibration of a DPMaxAbsScaler fit: per-mechanism epsilon and the composed event."""

    __slots__ = ("quantile_epsilon", "event")

    def __init__(self, quantile_epsilon, event):
        self.quantile_epsilon = quantile_epsilon
        self.event = event
