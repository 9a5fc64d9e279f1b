"""dp_sklearn: differentially private linear models for scikit-learn."""

from ._accounting import EpsilonDeltaDpEvent
from ._version import get_version as _get_version
from ._data import ClippingWarning
from .ledger import BudgetExceededError, PrivacyLedger
from .linear_model import (
    DPElasticNet,
    DPHuberRegressor,
    DPLasso,
    DPLinearRegression,
    DPLinearSVC,
    DPLogisticRegression,
    DPOnlineClassifier,
    DPOnlineRegressor,
    DPPoissonRegressor,
    DPQuantileRegressor,
    DPRidge,
    DPSparseLinearRegression,
    DPSparseLogisticRegression,
)
from .model_selection import DPGridSearchCV
from .pipeline import PrivatePipeline, budget_split, make_private_pipeline
from .preprocessing import DPMinMaxScaler, DPStandardScaler

__version__ = _get_version()

__all__ = [
    "DPLinearRegression",
    "DPHuberRegressor",
    "DPQuantileRegressor",
    "DPPoissonRegressor",
    "DPElasticNet",
    "DPLasso",
    "DPRidge",
    "DPLogisticRegression",
    "DPLinearSVC",
    "DPSparseLinearRegression",
    "DPSparseLogisticRegression",
    "DPOnlineRegressor",
    "DPOnlineClassifier",
    "DPGridSearchCV",
    "DPStandardScaler",
    "DPMinMaxScaler",
    "make_private_pipeline",
    "PrivatePipeline",
    "budget_split",
    "PrivacyLedger",
    "BudgetExceededError",
    "ClippingWarning",
    "EpsilonDeltaDpEvent",
    "__version__",
]
