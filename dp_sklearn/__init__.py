"""dp_sklearn: differentially private linear models for scikit-learn."""

from ._accounting import EpsilonDeltaDpEvent
from ._data import ClippingWarning
from .linear_model import DPLasso, DPLogisticRegression, DPRidge

__version__ = "0.1.0"

__all__ = ["DPLasso", "DPRidge", "DPLogisticRegression", "ClippingWarning", "EpsilonDeltaDpEvent", "__version__"]
