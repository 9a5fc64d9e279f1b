"""``report_clipping=True``: a private fraction of the records clipped to each public bound.

Whether records exceed a public bound is a function of the data, so dp_sklearn never
warns about it (``docs/privacy.md``, "What the analyst sees"). A user who wants to know
whether a bound is too small asks for this diagnostic instead: for each public bound
of the fit (``data_norm``; for regressors also ``bounds_y``) the number of records
beyond it, released with Laplace noise and divided by the public n. This is the noisy
clipped count of adaptive clipping (Andrew, Thakkar, McMahan & Ramaswamy, "Differentially
private learning with adaptive clipping", NeurIPS 2021, Algorithm 1): replacing one record
changes each count by at most 1, so the vector of k counts has l1 sensitivity k, and
Laplace noise of scale ``k / epsilon_c`` per count is ``epsilon_c``-DP (Dwork, McSherry,
Nissim & Smith, TCC 2006).

The diagnostic spends ``CLIPPING_SHARE`` (5%) of the fit's epsilon, a public constant
fixed before the data is used, like the shares of the ``"auto"`` estimates
(:mod:`dp_sklearn.linear_model._auto`); its ``LaplaceDpEvent`` is composed into the
fit's ``dp_event_`` and checked by the ledger with the rest of the fit. At
``epsilon = inf`` the exact fractions are released (a non-private fit).
"""

from __future__ import annotations

import numpy as np
from dp_accounting import dp_event
from . import _noise

__all__ = ["CLIPPING_SHARE", "clipping_event", "private_clipped_fraction"]

#: share of the fit's epsilon spent on the clipped fractions when ``report_clipping=True``
CLIPPING_SHARE = 0.05


def clipping_event(epsilon):
    """The event of the diagnostic at the fit's total ``epsilon`` (public).

    Parameters
    ----------
    epsilon : float
        The fit's total epsilon; the diagnostic gets ``CLIPPING_SHARE * epsilon``.

    Returns
    -------
    event : dp_accounting.LaplaceDpEvent or None
        ``LaplaceDpEvent(1 / (CLIPPING_SHARE * epsilon))`` (the noise scale over the l1
        sensitivity), ``None`` at ``epsilon = inf``.
    """
    if epsilon == np.inf:
        return None
    return dp_event.LaplaceDpEvent(1.0 / (CLIPPING_SHARE * float(epsilon)))


def private_clipped_fraction(counts, n_samples, epsilon, rng):
    """Release the clipped fractions: ``(count + Laplace(k / (CLIPPING_SHARE epsilon))) / n``.

    Parameters
    ----------
    counts : dict of str to int
        For each public bound (by parameter name), the number of records beyond it.
    n_samples : int
        Number of records (public).
    epsilon : float
        The fit's total epsilon; ``inf`` releases the exact fractions.
    rng : numpy.random.Generator
        The fit's generator.

    Returns
    -------
    fractions : dict of str to float
        Same keys as ``counts``; each noisy fraction clipped to [0, 1] (post-processing).
    """
    names = list(counts)
    c = np.array([counts[name] for name in names], dtype=np.float64)
    if epsilon != np.inf:
        c = _noise.add_laplace(rng, c, len(names) / (CLIPPING_SHARE * float(epsilon)), len(names))
    return {name: float(np.clip(v / n_samples, 0.0, 1.0)) for name, v in zip(names, c)}
