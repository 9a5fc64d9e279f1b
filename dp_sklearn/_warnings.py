"""The warning category of clipping, kept importable; fits never emit it.

See ``docs/privacy.md``, "What the analyst sees versus what is released".
"""

from __future__ import annotations

__all__ = ["ClippingWarning"]


class ClippingWarning(UserWarning):
    """Category reserved for clipping; no dp_sklearn fit emits it (``docs/privacy.md``).

    Whether any record exceeded a public bound is one deterministic bit of the data: an
    analyst who knows every record but one can set the bound just above the known ones
    and read the last record's membership off such a warning. So ``fit``,
    ``fit_transform``, ``partial_fit`` and the private search emit no warning that depends
    on the data, this one included, by default or otherwise. To learn whether a bound is
    too small, ask for the *private* diagnostic ``report_clipping=True`` of the linear
    estimators: a noisy fraction of the clipped records, paid from the fit's budget and
    released as ``clipped_fraction_``.

    The class stays public so that existing code that filters it
    (``warnings.simplefilter("ignore", ClippingWarning)``) keeps working.

    See Also
    --------
    dp_sklearn.DPRidge : its ``report_clipping`` parameter and ``clipped_fraction_`` attribute.

    Examples
    --------
    >>> import warnings
    >>> import numpy as np
    >>> from dp_sklearn import DPRidge
    >>> X, y = np.array([[3.0, 0.0], [0.0, 0.5], [0.5, 0.5]]), np.array([1.0, 2.0, 3.0])
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     model = DPRidge(data_norm=1.0, bounds_y=(0, 4), report_clipping=True, random_state=0).fit(X, y)
    >>> caught
    []
    >>> sorted(model.clipped_fraction_)
    ['bounds_y', 'data_norm']
    """
