"""Shared hyperparameter constraints and docstring sections of the online estimators."""

from __future__ import annotations

from numbers import Integral, Real

import numpy as np
from sklearn.utils._param_validation import Options, StrOptions

from .._constraints import Interval
from ..ledger import PrivacyLedger
from ._base import DATA_NORM_RANGE, MAX_FINITE_EPSILON, PRIVACY_CONSTRAINTS

_CONSTRAINTS = {
    "epsilon": [Interval(Real, 0, MAX_FINITE_EPSILON, closed="right"), Options(Real, {np.inf})],
    "delta": [Interval(Real, 0, 1, closed="neither")],
    "alpha": [Interval(Real, 0, np.inf, closed="neither"), StrOptions({"auto"})],
    "radius": [Interval(Real, 0, np.inf, closed="neither")],
    "data_norm": [Interval(Real, 1.0 / DATA_NORM_RANGE, DATA_NORM_RANGE, closed="both"), None],
    "fit_intercept": ["boolean"],
    "clip_norm": [Interval(Real, 0, np.inf, closed="neither"), None],
    "batch_size": [Interval(Integral, 1, None, closed="left")],
    "update": [StrOptions({"gradient", "implicit"})],
    "horizon": [Interval(Integral, 1, None, closed="left"), None],
    "average": ["boolean"],
    "max_sample_weight": PRIVACY_CONSTRAINTS["max_sample_weight"],
    "ledger": [PrivacyLedger, None],
    "random_state": ["random_state", np.random.Generator],
    "verbose": ["verbose"],
}

_PARAMS_DOC = """
    epsilon : float, default=1.0
        Privacy loss in nats of the whole stream (every call up to any length), in
        (0, 1e100] or ``numpy.inf`` (the same online algorithm without noise).
    delta : float, default=1e-5
        In (0, 1); Gaussian noise needs delta > 0.
    alpha : float or "auto", default="auto"
        Strength Psi of the l2 penalty ``(alpha / 2) ||theta||^2`` in normalized units:
        the strong convexity the privacy proof rests on (noise scales as 1 / alpha).
        ``"auto"``: ``(2 K / n^2)^(1/3)`` with ``K = phi''_max x_norm^2 z^2 Delta_g^2``,
        which balances the ridge bias against the noise's loss at ``||theta*|| = 1``
        (``1 / n`` at epsilon = inf); n is ``horizon`` if set, else the size of the call
        that starts the stream (all of X in ``fit``). Fixed for the whole stream and
        released as ``alpha_``.
    radius : float, default=10.0
        Radius of the l2-ball feasible set, in normalized units (rows scaled to norm 1).
    data_norm : float or None, default=None
        Public bound on the l2 norm of a row of X, in its units; rows beyond it are
        clipped. ``None``: sqrt(n_features). Never derived from the data.
    fit_intercept : bool, default=True
        Fit an intercept (a constant feature counted in the row bound).
    clip_norm : float or None, default=None
        Per-example gradient clip norm in normalized units; ``None``: the row bound.
    batch_size : int, default=1
        Records per step (1: one record per step, as in the dissertation).
    update : {"gradient", "implicit"}, default="gradient"
        ``"gradient"``: projected gradient steps (PGIGA, Algorithm 5.3);
        ``"implicit"``: implicit (proximal) steps (PIGD, Algorithm 5.2), one record per
        step (``batch_size=1``), stable for any smoothness.
    horizon : int or None, default=None
        Public cap on the number of records the stream may contain; ``partial_fit``
        beyond it raises a ``ValueError``. The privacy guarantee does not depend on it
        (each record enters one release); it bounds what a stream may consume.
    average : bool, default=False
        Release the average of each call's iterates (exactly POffL, Algorithm 5.4)
        rather than the last iterate. The average's sensitivity is larger by a factor
        of about ln(n / s0) (docs/user_guide/online.md), so the last iterate is the
        default.
    max_sample_weight : float, default=1.0
        Public bound (> 0) on the ``sample_weight`` of ``fit`` and ``partial_fit``: a
        record's loss is scaled by its weight, so the stream's plan uses this bound
        (weights outside [0, ``max_sample_weight``] are refused before any budget is
        reserved); fixed for the whole stream.
    ledger : PrivacyLedger or None, default=None
        Ledger that records the stream's event once, when a stream starts (``fit`` or
        the first ``partial_fit``).
    random_state : None, int, numpy Generator or RandomState, default=None
        ``None``: fresh OS entropy for every call. An int gives each call the generator
        ``SeedSequence(random_state, spawn_key=(n_samples_seen_,))``; no generator is
        ever stored on the estimator (docs/privacy.md, P6).
    verbose : int, default=0
        Progress lines on standard output, as scikit-learn's ``verbose``: 0 silent;
        1 the stream positions of each call; 2 or more also its step t of T. Elapsed
        time and public values only, at most a few lines per call.
"""

_ATTRS_DOC = """
    dp_event_ : dp_accounting.DpEvent
        The whole stream's event: ``GaussianDpEvent(z)`` (``NonPrivateDpEvent`` at
        epsilon = inf), whatever the number of calls.
    epsilon_, delta_ : float
        The guarantee of the whole stream.
    alpha_ : float
        The penalty strength of the stream (public: a function of public values).
    n_samples_seen_ : int
        Records consumed by the stream (public, like n).
    n_features_in_ : int
        Number of features seen during fit.
"""
