"""Private preprocessing: scalers fitted on differentially private statistics."""

from ._maxabs import DPMaxAbsScaler
from ._minmax import DPMinMaxScaler
from ._scalers import DPStandardScaler

__all__ = ["DPMaxAbsScaler", "DPMinMaxScaler", "DPStandardScaler"]
