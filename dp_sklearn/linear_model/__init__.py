from ._elastic_net import DPElasticNet
from ._huber import DPHuberRegressor
from ._linear import DPLinearRegression
from ._logistic import DPLogisticRegression
from ._poisson import DPPoissonRegressor
from ._quantile import DPQuantileRegressor
from ._online import DPOnlineClassifier, DPOnlineRegressor
from ._ridge import DPLasso, DPRidge
from ._svm import DPLinearSVC
from ._sparse import DPSparseLinearRegression, DPSparseLogisticRegression

__all__ = ["DPLinearRegression", "DPElasticNet", "DPHuberRegressor", "DPQuantileRegressor", "DPPoissonRegressor", "DPLasso", "DPRidge", "DPLogisticRegression", "DPLinearSVC", "DPSparseLinearRegression", "DPSparseLogisticRegression",
           "DPOnlineRegressor", "DPOnlineClassifier"]
