"""Private statistics: exponential-mechanism quantiles, bounded means and variances.

Every function here is a mechanism (or its calibration) under the replace-one
neighbouring relation of ``docs/privacy.md``: two datasets of the same public size
``n`` differ in one record. Each mechanism takes the one ``numpy.random.Generator``
of the fit and returns what it released together with, or calibrated by, a
``dp_accounting`` event.

References
----------
.. [1] A. Smith, "Privacy-preserving statistical estimation with optimal
   convergence rates", STOC 2011.
.. [2] J. Gillenwater, M. Joseph and A. Kulesza, "Differentially private
   quantiles", ICML 2021.
.. [3] F. McSherry and K. Talwar, "Mechanism design via differential privacy",
   FOCS 2007.
.. [4] M. Cesar and R. Rogers, "Bounding, concentrating, and truncating: unifying
   privacy loss composition for data analytics", ALT 2021.
.. [5] M. Bun and T. Steinke, "Concentrated differential privacy", TCC 2016.
"""

from ._common import make_generator
from ._moments import StatisticsPlan, plan_statistics, private_moments
from ._quantiles import (
    ATOM_WEIGHT,
    FENCE,
    INTEGER_ATOMS,
    TIE_DITHER,
    exponential_quantiles,
    fenced_quantiles,
    private_range,
    quantile_epsilon,
    search_unit,
)

__all__ = [
    "ATOM_WEIGHT",
    "FENCE",
    "INTEGER_ATOMS",
    "StatisticsPlan",
    "TIE_DITHER",
    "exponential_quantiles",
    "fenced_quantiles",
    "make_generator",
    "plan_statistics",
    "private_moments",
    "private_range",
    "quantile_epsilon",
    "search_unit",
]
