"""Input and output checks of :mod:`dp_sklearn.audit` (issue 19: values that used to give 0 or NaN)."""

from __future__ import annotations

import numbers

import numpy as np

__all__ = ["check_binomial", "check_dataset", "check_int", "check_outputs", "check_scores", "stack_outputs"]


def check_binomial(k, n, alpha):
    """``k``, ``n`` as float arrays of whole numbers with ``1 <= n``, ``0 <= k <= n``; ``alpha`` in (0, 1)."""
    if isinstance(alpha, (bool, np.bool_)) or not isinstance(alpha, numbers.Real) or not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must be a real number in (0, 1), got {alpha!r}.")
    out, given = [], (k, n)
    for name, v in (("k", k), ("n", n)):
        a = np.asarray(v)
        if a.dtype.kind not in "iuf" or not np.all(np.isfinite(a)) or not np.all(a == np.floor(a)):
            raise ValueError(f"{name} must hold whole numbers (ints, not bools), got {v!r}.")
        out.append(a.astype(float))
    k, n = out
    if not (np.all(n >= 1) and np.all(k >= 0) and np.all(k <= n)):
        raise ValueError(f"clopper_pearson_upper needs n >= 1 and 0 <= k <= n, got k={given[0]!r}, n={given[1]!r}.")
    return k, n


def check_outputs(outputs):
    """The mechanism's outputs on D and D': one non-empty width, all finite, else ValueError."""
    if outputs[0].shape[1] != outputs[1].shape[1]:
        raise ValueError(f"mechanism must return outputs of one fixed shape, got {outputs[0].shape[1]} values on D "
                         f"and {outputs[1].shape[1]} on D_prime.")
    if outputs[0].shape[1] == 0:
        raise ValueError("mechanism returned an empty array: there is nothing to audit.")
    for name, o in zip(("D", "D_prime"), outputs):
        if not np.isfinite(o).all():
            raise ValueError(f"mechanism returned NaN or infinity on {name}: a release must be finite to be audited.")


def check_dataset(D, name):
    """``D`` as a tuple (X, y), else ValueError naming ``name``."""
    if not isinstance(D, (tuple, list)) or len(D) != 2:
        raise ValueError(f"{name} must be an (X, y) tuple, got {type(D).__name__}.")
    return tuple(D)


def check_int(value, name, low):
    """An int (not a bool) of at least ``low``, else ValueError naming ``name``."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral) or value < low:
        raise ValueError(f"{name} must be an int >= {low}, got {value!r}.")
    return int(value)


def stack_outputs(outputs):
    """The outputs of one chunk of runs as an (m, d) array; ValueError if their sizes differ."""
    if len({o.shape for o in outputs}) > 1:
        sizes = sorted({o.size for o in outputs})
        raise ValueError(f"mechanism must return outputs of one fixed shape, got sizes {sizes}.")
    return np.stack(outputs)


def check_scores(scores, m):
    """The statistic's scores as a finite float array of shape (m,), else ValueError."""
    s = np.asarray(scores, dtype=float)
    if s.shape != (m,):
        raise ValueError(f"statistic must return an array of shape ({m},), got {s.shape}.")
    if not np.isfinite(s).all():
        raise ValueError("statistic returned NaN or infinity.")
    return s
