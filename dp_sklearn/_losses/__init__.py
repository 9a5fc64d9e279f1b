"""Per-example GLM losses l(theta; x, y) = phi(<x, theta>, y), one module each (see ``docs/privacy.md``).

Each loss module registers its class with :func:`dp_sklearn._losses._base.register_loss`
and declares its properties (:data:`PROPERTIES`); adding a loss is adding one module to
this package. Coefficients are a flat vector ``theta`` of size ``n_features * n_outputs``
(``n_outputs = 1`` for the squared and logistic losses, ``K`` for the multinomial loss,
stored feature-major: ``theta.reshape(n_features, K)``).
"""

import importlib
import pkgutil

from ._base import LOSSES, PROPERTIES, GLMLoss, check_attrs, register_loss
from ._logistic import LogisticLoss
from ._multinomial import MultinomialLoss
from ._squared import SquaredLoss

for _info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
    if _info.name != "_base":
        importlib.import_module(f"{__name__}.{_info.name}")

__all__ = ["GLMLoss", "LOSSES", "PROPERTIES", "check_attrs", "register_loss", "SquaredLoss", "LogisticLoss",
           "MultinomialLoss"]
