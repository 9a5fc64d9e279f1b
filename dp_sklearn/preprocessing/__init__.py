"""Private preprocessing: scalers fitted on differentially private statistics."""

from ._scalers import DPMinMaxScaler, DPStandardScaler

__all__ = ["DPMinMaxScaler", "DPStandardScaler"]
