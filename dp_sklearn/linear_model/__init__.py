from ._logistic import DPLogisticRegression
from ._ridge import DPLasso, DPRidge

__all__ = ["DPLasso", "DPRidge", "DPLogisticRegression"]
