"""DPStandardScaler: standardization with private statistics."""

from __future__ import annotations

from numbers import Real

import numpy as np
from sklearn.utils._param_validation import StrOptions

from .._constraints import Interval
from .._private_stats import (
    ATOM_WEIGHT,
    FENCE,
    INTEGER_ATOMS,
    fenced_quantiles,
    StatisticsPlan,
    plan_statistics,
    private_moments,
    search_unit,
)
from ._robust import ROBUST_REACH, prefer_per_feature, robust_center_scale, robust_feasible
from ._base import MEAN_SHARE, _DPTransformerBase, _exact_bounds, _std_noise_level
from ._global import GLOBAL_NOISE, auto_quantile_level, clip_rows, global_epsilon, global_event, global_scale
from ._centered import CENTERED_CLIP, CENTERED_FIRST_NOISE, CENTERED_Z, centered_center, centered_epsilon, centered_plan, centered_scale


class DPStandardScaler(_DPTransformerBase):
    """Standardize features with a private mean and variance.

    Each feature is clipped to a range -- the public ``bounds`` or, when ``bounds=None``, a
    private range found by exponential-mechanism quantiles within the public ``search_range``
    -- and its mean and variance are released with calibrated noise. ``transform`` maps ``x``
    to ``(clip(x, bounds_) - mean_) / scale_`` clipped to ``[-output_clip, output_clip]``, so
    every transformed row has a public bound (``output_bound_``, ``output_norm_``) that the
    next step can use. See ``docs/privacy.md`` for the neighbouring relation and what is public.

    Parameters
    ----------
    epsilon : float, default=1.0
        Privacy loss of the fit in nats (> 0); ``numpy.inf`` computes the
        statistics exactly (non-private, for comparisons).
    delta : float, default=1e-5
        In [0, 1). ``0`` gives pure DP (Laplace noise, basic composition).
    bounds : tuple (lower, upper) or None, default=None
        Public range of each feature, each a scalar or an array of shape
        (n_features,), in the units of X. ``None`` spends ``bounds_share`` of
        the budget on a private range per feature, or (see ``strategy``) all
        of it on one global scale.
    strategy : {"auto", "per_feature", "robust", "global", "centered"}, default="auto"
        Used when ``bounds=None``. ``"per_feature"``: private ranges (``2 n_features``
        quantiles at ``quantile_range``, ``bounds_share`` of the budget), then private means
        and variances per feature. ``"robust"``: the whole budget on ``2 n_features``
        quantiles at the median level, the private median ``m_j`` and median absolute
        deviation of each feature; ``mean_ = m_j``, ``scale_ = 1.4826 MAD_j`` (a normal's
        standard deviation), clipping range ``m_j +- output_clip scale_`` (3 scales when
        ``output_clip=None``), no moments. ``"global"``: no centering, every feature divided
        by one common scale, the private geometric mean of the row norms over ``0.5
        sqrt(n_features)`` (one Laplace mechanism, pure DP), rows clipped to the l2 norm
        ``output_clip sqrt(n_features)``: the feature scales relative to each other are
        those of X; inside ``make_private_pipeline`` with the default split it keeps only the
        epsilon at which that release has Laplace noise ``GLOBAL_NOISE = 0.3`` nats
        (``_pipeline_epsilon``), the model the rest. ``"centered"`` (``delta > 0`` only; with
        ``delta=0`` a ValueError): ``"global"`` after one private centering vector
        (``dp_sklearn.preprocessing._centered``): a first global row-norm release sets the
        row clip ``C = CENTERED_CLIP`` times it, the mean of the rows clipped to l2 norm ``C``
        is released by the Gaussian mechanism (standard deviation ``z 2 C / n`` per
        coordinate, in the units of X) and shrunk towards 0 coordinate-wise (positive-part
        James-Stein), and the common scale is released again on the centered rows; ``mean_``
        is the shrunk mean; the three epsilons (two Laplace, one Gaussian at ``delta``) add up
        to at most ``epsilon``, in the proportions of their targets (``CENTERED_FIRST_NOISE``
        and ``GLOBAL_NOISE`` nats, ``z = CENTERED_Z``) and never beyond them; inside
        ``make_private_pipeline`` with the default split it keeps at most its allotment.
        ``"centered"`` is opt-in: ``"auto"`` never picks it. It splits the scaler's
        ``epsilon`` over three releases where ``"global"`` spends it on one, and spends
        ``delta``, so its common scale is noisier than ``"global"``'s; it may
        help on mixed-unit data (features whose mean is large against their spread: years,
        prices) at small ``n_samples``, where ``"auto"`` falls back to ``"global"``. On the
        tuning half of ``benchmarks/tabular`` it did not beat ``"global"`` beyond seed noise
        and on some sets scored below it (``benchmarks/tabular/results/tuning_centered.md``,
        ``checking_centered.md``; evidence row in ``benchmarks/tabular/README.md``).
        ``"auto"``: ``"per_feature"`` when the
        public criterion ``epsilon_q q n_samples / 4 > 6`` holds (``epsilon_q`` its per-quantile budget, ``q`` the lower
        quantile level; twice the ranks the quantiles need, ``PER_FEATURE_MARGIN``), else
        ``"robust"`` when ``epsilon_q 0.5 n_samples / 4 > 3`` holds for its median level
        and its own ``epsilon_q`` (about four times fewer rows than ``"per_feature"``
        needs), else ``"global"``; it never picks ``"centered"``. The choice depends on public values only;
        ``strategy_`` says which ran. Costs and measurements: ``docs/privacy.md``.
    search_range : tuple (low, high), default=(-1e6, 1e6)
        Public range searched when ``bounds=None``; it must contain the data.
        The search is log-uniform in ``|x|`` above ``1e-9 max(|low|, |high|)``
        (base measure of ``dp_sklearn._private_stats.exponential_quantiles``, ``unit``), so its
        width costs little; the quantile mechanism still needs roughly ``epsilon_q q n_samples
        / 4 > 3``, with ``epsilon_q`` the per-quantile budget (``bounds_share`` of it over ``2
        n_features`` quantiles, zCDP composition): below that, pass public ``bounds``.
    quantile_range : "auto" or tuple (q_lo, q_hi), default="auto"
        Quantile levels of the private range when ``bounds=None``; the range
        is ``(q_lo - 1.5 d, q_hi + 1.5 d)`` with ``d = q_hi - q_lo`` (Tukey's
        fences for the quartiles), within ``search_range``. ``"auto"``: ``(q, 1 - q)``
        with ``q`` the most extreme level the quantiles' budget can locate, from 0.25
        (the quartiles, at small n) down to 0.01 as ``epsilon n`` grows
        (``dp_sklearn.preprocessing._global.auto_quantile_level``; public values only), so
        heavy-tailed features are not winsorized at a few interquartile ranges when the
        data can afford a wider range. ``quantile_range_`` holds the levels used.
    bounds_share : float, default=0.5
        Share of the budget spent on the private range when ``bounds=None``
        (of epsilon for ``delta=0``, of the zCDP parameter otherwise); the
        ``2 n_features`` quantiles share it equally.
    output_clip : float or None, default=3.0
        Bound on the absolute value of every transformed feature.
    random_state : None, int, SeedSequence, Generator or RandomState, default=None
        Source of the noise; ``None`` draws fresh OS entropy. A fixed seed makes the released
        statistics reproducible by anyone who has it: do not publish a model fitted with one.
    ledger : dp_sklearn.PrivacyLedger or None, default=None
        Reserves the fit's exact event before the data is used and records it after.

    Attributes
    ----------
    mean_ : ndarray of shape (n_features,)
        Private mean of the clipped features.
    var_ : ndarray of shape (n_features,)
        Private variance of the clipped features.
    scale_ : ndarray of shape (n_features,)
        ``max(sqrt(var_), floor)``: the floor, ``(upper - lower)`` times the
        smaller of ``1 / (2 output_clip)`` (if set) and the noise level of the released
        standard deviation (a function of n, n_features and the budget only),
        keeps a feature whose noisy variance came out near 0 from saturating.
    bounds_ : tuple of ndarray of shape (n_features,)
        The clipping range: ``bounds`` or its private estimate.
    output_bound_ : ndarray of shape (n_features,)
        Public bound on ``|transform(X)[:, j]|`` for any input.
    output_norm_ : float
        ``||output_bound_||_2``: bound on the l2 norm of a transformed row.
    dp_event_ : dp_accounting.DpEvent
        Everything the fit released, one ``ComposedDpEvent``.
    epsilon_, delta_ : float
        The guarantee of the fit (the ledger composes ``dp_event_`` within it).
    n_features_in_ : int
        Number of features seen during ``fit``.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Defined only when X has string feature names.
    n_samples_seen_ : int
        Number of samples (public).
    strategy_ : str
        ``"public_bounds"``, ``"per_feature"``, ``"robust"``, ``"global"`` or ``"centered"``
        (public).
    quantile_range_ : tuple of float or None
        The quantile levels of the private range (``strategy_="per_feature"``), else None.

    See Also
    --------
    DPMinMaxScaler : private min-max scaling.
    dp_sklearn.make_private_pipeline : one budget for a whole pipeline.

    Notes
    -----
    Mechanisms: the range by ``exponential_quantiles`` (Smith 2011; Gillenwater, Joseph &
    Kulesza 2021), the moments by ``private_moments`` (Gaussian or Laplace mechanism;
    per-feature sensitivity of the mean ``(upper - lower) / n``). The calibration is
    ``plan_statistics`` (all in ``dp_sklearn._private_stats``). Every quantile's base measure
    (log-uniform above the search range's ``unit``) also has public point masses at the
    integers -16 to 16 (``INTEGER_ATOMS``, ``ATOM_WEIGHT`` each; McSherry & Talwar 2007: the
    exponential mechanism is private for any base measure), so the quantiles and medians of
    binary columns, integer codes and counts are found exactly from few rows.

    Budget: with public ``bounds`` the mean gets 80% and the second moment 20% of ``1 / z^2``
    (one analytic Gaussian overall); with ``bounds=None`` the ``2 n_features`` quantiles get
    ``bounds_share`` of the zCDP parameter first. The released range and moments are adaptively
    composed. ``strategy_="robust"`` (``dp_sklearn.preprocessing._robust``): the median and then
    the median of ``|x_j - m_j|`` (the released median is a public input of the second
    mechanism), ``2 n_features`` exponential mechanisms sharing the whole zCDP budget
    (Dwork & Lei 2009 for private robust statistics).

    Accuracy: per feature, the mean's noise is about ``z sqrt(n_features) (upper - lower) /
    (0.9 n)``, ``z`` the Gaussian multiplier of (epsilon, delta): small against the standard
    deviation only when ``n`` is large against ``z sqrt(n_features)`` times the bounds' width
    over the standard deviation. Give bounds as tight as public knowledge allows;
    ``bounds=None`` needs more data again (about ``epsilon_q n / 16 > 3`` per quartile).

    A DP model after this scaler: the models' default ``data_norm=sqrt(n_features)``
    (``output_norm_ / output_clip``) suits the output, and ``sqrt(n_features) / 2`` does as well
    or better; ``data_norm=output_norm_`` (no row clipped) adds three times the noise and does
    worse (measured in ``benchmarks/private_pipeline.py``: breast_cancer 0.83 vs 0.66 mean
    accuracy).

    References
    ----------
    .. [1] A. Smith, "Privacy-preserving statistical estimation with optimal convergence rates", STOC 2011.
    .. [2] J. Gillenwater, M. Joseph and A. Kulesza, "Differentially private quantiles", ICML 2021.
    .. [3] C. Dwork, F. McSherry, K. Nissim and A. Smith, "Calibrating noise to sensitivity in
       private data analysis", TCC 2006.
    .. [4] C. Dwork and J. Lei, "Differential privacy and robust statistics", STOC 2009.
    .. [5] F. McSherry and K. Talwar, "Mechanism design via differential privacy", FOCS 2007.

    Examples
    --------
    >>> import numpy as np
    >>> from dp_sklearn.preprocessing import DPStandardScaler
    >>> X = np.random.default_rng(0).normal(5.0, 2.0, size=(5000, 2))
    >>> sc = DPStandardScaler(epsilon=1.0, bounds=(-5, 15), random_state=0).fit(X)
    >>> bool(np.all(np.abs(sc.mean_ - 5.0) < 0.2))  # the data's mean is 5, the noise's sd about 0.03
    True
    >>> float(np.round(sc.output_norm_, 2))
    4.24
    """

    #: public point masses of every private quantile's base measure (``exponential_quantiles``)
    _atoms = INTEGER_ATOMS
    _atom_weight = ATOM_WEIGHT
    #: Laplace scale in nats of the global scale's log that a pipeline's default split buys
    _global_noise = GLOBAL_NOISE
    #: targets of ``strategy="centered"`` (``dp_sklearn.preprocessing._centered``)
    _centered_z, _centered_clip, _centered_first_noise = CENTERED_Z, CENTERED_CLIP, CENTERED_FIRST_NOISE

    _parameter_constraints: dict = {
        **_DPTransformerBase._parameter_constraints,
        "bounds_share": [Interval(Real, 0, 1, closed="neither")],
        "output_clip": [Interval(Real, 0, None, closed="neither"), None],
        "strategy": [StrOptions({"auto", "per_feature", "robust", "global", "centered"})],
        "quantile_range": ["array-like", StrOptions({"auto"})],
    }

    def __init__(self, *, epsilon=1.0, delta=1e-5, bounds=None, strategy="auto", search_range=(-1e6, 1e6),
                 quantile_range="auto", bounds_share=0.5, output_clip=3.0, random_state=None,
                 ledger=None):
        self.epsilon = epsilon
        self.delta = delta
        self.bounds = bounds
        self.strategy = strategy
        self.search_range = search_range
        self.quantile_range = quantile_range
        self.bounds_share = bounds_share
        self.output_clip = output_clip
        self.random_state = random_state
        self.ledger = ledger

    def _per_feature_plan(self, n_features, bounds):
        n_q = 0 if bounds is not None else 2 * n_features
        return plan_statistics(self.epsilon, self.delta, n_quantiles=n_q, quantile_share=self.bounds_share,
                               mean_share=MEAN_SHARE)

    def _levels(self, n_samples=None, n_features=None):
        """The quantile levels; ``"auto"`` from public values (the quartiles when n is not given)."""
        if not (isinstance(self.quantile_range, str) and self.quantile_range == "auto"):
            return super()._levels()
        if n_samples is None:
            return 0.25, 0.75
        eps_q = self._per_feature_plan(n_features, None).quantile_epsilon if np.isfinite(self.epsilon) else np.inf
        q = auto_quantile_level(eps_q, n_samples)
        return q, 1.0 - q

    def _robust_plan(self, n_features):
        return plan_statistics(self.epsilon, self.delta, n_quantiles=2 * n_features, quantile_share=1.0,
                               moments=False)

    def _resolve_strategy(self, n_samples, n_features, bounds):
        """``"public_bounds"``, ``"per_feature"``, ``"robust"`` or ``"global"`` from public values only."""
        if bounds is not None:
            return "public_bounds"
        if self.strategy == "centered" and float(self.delta) == 0.0:
            raise ValueError("strategy='centered' needs delta > 0 (its centering is a Gaussian release); use "
                             "strategy='global' for pure DP.")
        if self.strategy != "auto" or not np.isfinite(self.epsilon):
            return "per_feature" if self.strategy == "auto" else self.strategy
        eps_q = self._per_feature_plan(n_features, None).quantile_epsilon
        level = self._levels(n_samples, n_features)[0]
        if prefer_per_feature(eps_q, level, n_samples):
            return "per_feature"
        return "robust" if robust_feasible(self._robust_plan(n_features).quantile_epsilon, n_samples) else "global"

    def _pipeline_epsilon(self, epsilon, delta, n_samples, n_features):
        """What of a pipeline's default allotment ``epsilon`` this scaler needs (public values only).

        A private pipeline with the default split (``dp_sklearn.make_private_pipeline``) asks each
        DP preprocessing step before the fit. When ``strategy="auto"`` or ``"global"`` with
        ``bounds=None`` would run the global scale at ``epsilon`` (one Laplace release), the
        scaler keeps ``min(epsilon, global_epsilon(n_samples, n_features, search_range))``: the
        budget at which the released log scale has Laplace noise ``GLOBAL_NOISE`` nats; the rest
        goes to the model. Less budget cannot turn the global choice into another one (the
        criteria of ``"auto"`` grow with epsilon). With ``strategy="centered"`` (never chosen by
        ``"auto"``) it keeps ``min(epsilon, centered_epsilon(...))``
        (``dp_sklearn.preprocessing._centered``: the cost of its targets at ``delta``); below the
        targets its three releases share ``epsilon`` in the targets' proportions. Otherwise it
        keeps ``epsilon``.
        """
        epsilon = float(epsilon)
        if self.bounds is not None or self.strategy not in ("auto", "global", "centered") or not np.isfinite(epsilon):
            return epsilon
        probe = self._probe(epsilon, delta)
        strategy = probe._resolve_strategy(int(n_samples), int(n_features), None)
        if strategy == "centered":
            need = centered_epsilon(int(n_samples), int(n_features), self._search(), delta, self._centered_z,
                                    self._centered_first_noise)
            return min(epsilon, need)
        if strategy != "global":
            return epsilon
        return min(epsilon, global_epsilon(n_samples, n_features, self._search(), self._global_noise))

    def _probe(self, epsilon, delta):
        probe = type(self).__new__(type(self))
        probe.__dict__.update(self.__dict__)
        probe.epsilon, probe.delta = epsilon, delta
        return probe

    def _plan(self, n_features, bounds, n_samples):
        strategy = self._resolve_strategy(n_samples, n_features, bounds)
        if strategy == "global":
            eps0, event = global_event(self.epsilon, self.delta)
            return StatisticsPlan(eps0, 0.0, 0.0, "global", event)
        if strategy == "robust":
            return self._robust_plan(n_features)
        if strategy == "centered":
            return centered_plan(self.epsilon, self.delta, n_samples, n_features, self._search(), self._centered_z,
                                 self._centered_first_noise)
        return self._per_feature_plan(n_features, bounds)

    def _release(self, X, rng, bounds, plan):
        levels, search = self._levels(*X.shape), self._search()
        self.strategy_ = self._resolve_strategy(*X.shape, bounds)
        self.quantile_range_ = levels if self.strategy_ == "per_feature" else None
        if self.strategy_ == "global":
            return self._release_global(X, rng, plan, search)
        if self.strategy_ == "robust":
            return self._release_robust(X, rng, plan, search)
        if self.strategy_ == "centered":
            return self._release_centered(X, rng, plan, search)
        if bounds is None:
            if plan is None:
                lo, hi = _exact_bounds(X, levels, search, FENCE)
            else:
                lo, hi = fenced_quantiles(X, levels, plan.quantile_epsilon, rng, lower=search[0], upper=search[1],
                                          unit=search_unit(search), atoms=self._atoms,
                                          atom_weight=self._atom_weight)
            hi = np.where(hi > lo, hi, lo + 1e-12 * np.maximum(1.0, np.abs(lo)))
            bounds = (lo, hi)
        lo, hi = bounds
        if plan is None:
            Xc = np.clip(X, lo, hi)
            mean, var = Xc.mean(axis=0), Xc.var(axis=0)
        else:
            mean, var = private_moments(X, rng, lower=lo, upper=hi, mean_multiplier=plan.mean_multiplier,
                                        moment_multiplier=plan.moment_multiplier, noise=plan.noise)
        c = np.inf if self.output_clip is None else float(self.output_clip)
        level = _std_noise_level(plan, *X.shape)
        floor = (hi - lo) * (min(1.0 / (2.0 * c), level) if np.isfinite(c) else level)
        self.bounds_ = (lo, hi)
        self.mean_, self.var_ = mean, var
        self.scale_ = np.maximum(np.sqrt(var), floor)
        self.output_bound_ = np.minimum(np.maximum(hi - mean, mean - lo) / self.scale_, c)
        self.output_norm_ = float(np.linalg.norm(self.output_bound_))

    def _release_robust(self, X, rng, plan, search):
        """Private median and MAD per feature, no moments (``strategy="robust"``)."""
        c = ROBUST_REACH if self.output_clip is None else float(self.output_clip)
        center, scale = robust_center_scale(X, None if plan is None else plan.quantile_epsilon, rng, search,
                                            atoms=self._atoms, atom_weight=self._atom_weight)
        self.bounds_ = (np.maximum(center - c * scale, search[0]), np.minimum(center + c * scale, search[1]))
        self.mean_, self.scale_ = center, scale
        self.var_ = np.square(scale)
        self.output_bound_ = np.full(X.shape[1], c)
        self.output_norm_ = float(np.linalg.norm(self.output_bound_))

    def _release_global(self, X, rng, plan, search):
        """One private scale for every feature, no centering (``strategy="global"``)."""
        p = X.shape[1]
        scale = global_scale(X, np.inf if plan is None else plan.quantile_epsilon, rng, search)
        c = np.inf if self.output_clip is None else float(self.output_clip)
        self.bounds_ = (np.full(p, search[0]), np.full(p, search[1]))
        self.mean_, self.scale_ = np.zeros(p), np.full(p, scale)
        self.var_ = np.square(self.scale_)
        # Rows, not features, are clipped: output_clip sqrt(p) is output_clip times the
        # norm of a standardized row; each feature is bounded by the same number.
        self.output_norm_ = float(min(c * np.sqrt(p), np.sqrt(p) * max(-search[0], search[1]) / scale))
        self.output_bound_ = np.full(p, self.output_norm_)

    def _release_centered(self, X, rng, plan, search):
        """The global scale after one private centering vector (``strategy="centered"``)."""
        p = X.shape[1]
        center, _, _ = centered_center(X, plan, rng, search, self._centered_clip)
        scale = centered_scale(X, center, plan, rng, search)
        c = np.inf if self.output_clip is None else float(self.output_clip)
        reach = max(-search[0], search[1]) + (float(np.max(np.abs(center))) if p else 0.0)
        self.bounds_ = (np.full(p, search[0]), np.full(p, search[1]))
        self.mean_, self.scale_ = center, np.full(p, scale)
        self.var_ = np.square(self.scale_)
        self.output_norm_ = float(min(c * np.sqrt(p), np.sqrt(p) * reach / scale))
        self.output_bound_ = np.full(p, self.output_norm_)

    def transform(self, X, copy=None):
        """Standardize X with the private statistics and clip to the public box.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Data to transform.
        copy : None
            Ignored (a new array is always returned).

        Returns
        -------
        X_new : ndarray of shape (n_samples, n_features)
            ``|X_new[:, j]| <= output_bound_[j]`` (``strategy_="global"``: rows
            clipped to the l2 norm ``output_norm_`` instead, directions kept).
        """
        X = self._check_transform_input(X)
        Z = (np.clip(X, *self.bounds_) - self.mean_) / self.scale_
        if self.strategy_ in ("global", "centered"):
            return clip_rows(Z, self.output_norm_)
        return np.clip(Z, -self.output_bound_, self.output_bound_)

    def inverse_transform(self, X, copy=None):
        """Map standardized values back to the units of X (no clipping undone).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Standardized data.
        copy : None
            Ignored.

        Returns
        -------
        X_original : ndarray of shape (n_samples, n_features)
        """
        X = self._check_transform_input(X)
        return X * self.scale_ + self.mean_
