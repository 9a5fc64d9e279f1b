"""Private validation scores: noisy means of bounded per-record terms.

A mean of n_val per-record terms clipped to a public range [low, high] has l2
sensitivity (high - low) / n_val under replace-one (one term changes by at most
high - low), so a Gaussian mechanism with noise multiplier z adds noise of
standard deviation z (high - low) / n_val (see ``docs/privacy.md``).
"""

from __future__ import annotations

import numpy as np
from .. import _noise

__all__ = ["SCORERS", "resolve_scorer", "noisy_score"]


def _acc_terms(y_true, y_pred):
    return (np.asarray(y_true) == np.asarray(y_pred)).astype(float)


def _neg_se_terms(y_true, y_pred):
    return -(np.asarray(y_true, dtype=float) - np.asarray(y_pred, dtype=float)) ** 2


def _neg_ae_terms(y_true, y_pred):
    return -np.abs(np.asarray(y_true, dtype=float) - np.asarray(y_pred, dtype=float))


SCORERS = {
    "accuracy": _acc_terms,
    "neg_mean_squared_error": _neg_se_terms,
    "neg_mean_absolute_error": _neg_ae_terms,
}


def resolve_scorer(scoring, score_bounds, is_classifier, bounds_y):
    """Per-record scoring function and its public range.

    Parameters
    ----------
    scoring : str, callable or None
        As ``DPGridSearchCV(scoring=...)``.
    score_bounds : tuple (low, high) or None
        Public range of the per-record terms.
    is_classifier : bool
    bounds_y : tuple (low, high) or None
        ``bounds_y`` of the final estimator (for the regression scores).

    Returns
    -------
    func : callable
        ``func(y_true, y_pred) -> ndarray of shape (n_val,)``.
    low, high : float

    Raises
    ------
    ValueError
        Naming ``scoring`` or ``score_bounds``.
    """
    if scoring is None:
        scoring = "accuracy" if is_classifier else "neg_mean_squared_error"
    if callable(scoring):
        func = scoring
        if score_bounds is None:
            raise ValueError("A callable scoring needs score_bounds=(low, high) for its per-record terms.")
    elif scoring in SCORERS:
        func = SCORERS[scoring]
    else:
        raise ValueError(
            f"scoring must be one of {sorted(SCORERS)} or a callable returning per-record terms, got "
            f"{scoring!r}: a private score must be a mean of bounded per-record terms."
        )
    if score_bounds is not None:
        try:
            lo, hi = (float(v) for v in score_bounds)
        except (TypeError, ValueError):
            raise ValueError(f"score_bounds must be a pair (low, high), got {score_bounds!r}.") from None
    elif scoring == "accuracy":
        lo, hi = 0.0, 1.0
    else:
        if bounds_y is None:
            raise ValueError(
                f"scoring={scoring!r} needs a public bound on the per-record error: pass score_bounds, or set "
                "bounds_y on the estimator."
            )
        width = float(bounds_y[1]) - float(bounds_y[0])
        lo, hi = (-(width**2), 0.0) if scoring == "neg_mean_squared_error" else (-width, 0.0)
    if not (np.isfinite(lo) and np.isfinite(hi) and lo < hi):
        raise ValueError(f"score_bounds must be finite with low < high, got {(lo, hi)!r}.")
    return func, lo, hi


def noisy_score(func, low, high, y_true, y_pred, noise_std, rng):
    """Mean of the clipped per-record terms plus N(0, noise_std^2) noise (NaN terms count as ``low``).

    Raises
    ------
    ValueError
        If ``func`` does not return one term per validation row.
    """
    terms = np.asarray(func(y_true, y_pred), dtype=float)
    if terms.shape != (len(y_true),):
        raise ValueError(f"scoring must return one term per validation row, got shape {terms.shape}.")
    # a non-finite term (a callable scoring's NaN) counts as ``low``: every term stays in [low, high]
    terms = np.nan_to_num(terms, nan=low, posinf=high, neginf=low)
    return _noise.add_gaussian(rng, float(np.clip(terms, low, high).mean()), noise_std, (high - low) / len(y_true))
