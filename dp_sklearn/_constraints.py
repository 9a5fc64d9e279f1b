"""Parameter constraints shared by every dp_sklearn object (scikit-learn's ``_param_validation``).

scikit-learn's ``Interval(Real, ...)`` and ``Interval(Integral, ...)`` accept ``True`` and
``False`` (``bool`` is a subclass of ``int``), so ``DPRidge(epsilon=True)`` would fit at
epsilon = 1. :class:`Interval` refuses booleans (Python's and numpy's) with scikit-learn's
``InvalidParameterError``, which names the parameter, before any budget is reserved.
"""

from __future__ import annotations

import numpy as np
from sklearn.utils._param_validation import Interval as _SklearnInterval

__all__ = ["Interval"]


class Interval(_SklearnInterval):
    """``sklearn.utils._param_validation.Interval`` that a boolean never satisfies.

    Parameters
    ----------
    type : {numbers.Integral, numbers.Real, RealNotInt}
        As in scikit-learn.
    left, right : float or int or None
        As in scikit-learn.
    closed : {"left", "right", "both", "neither"}
        As in scikit-learn.
    """

    def is_satisfied_by(self, val):
        """Whether ``val`` is a number of the interval's type inside it, and not a bool."""
        return not isinstance(val, (bool, np.bool_)) and super().is_satisfied_by(val)

    def __str__(self):
        return f"{super().__str__()} (not a bool)"
