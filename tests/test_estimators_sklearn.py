"""scikit-learn's estimator checks on every estimator and configuration (no blanket xfail)."""

import warnings

import pytest
from sklearn.utils.estimator_checks import parametrize_with_checks

from dp_sklearn import (
    ClippingWarning,
    DPLasso,
    DPLogisticRegression,
    DPRidge,
    DPSparseLinearRegression,
    DPSparseLogisticRegression,
)

ESTIMATORS = [
    DPRidge(random_state=0),
    DPRidge(solver="output_perturbation", random_state=0),
    DPRidge(solver="objective_perturbation", random_state=0),
    DPLasso(random_state=0),
    DPLasso(solver="noisy_gd", random_state=0),
    DPLogisticRegression(random_state=0),
    DPLogisticRegression(solver="output_perturbation", random_state=0),
    DPLogisticRegression(solver="objective_perturbation", random_state=0),
    DPLogisticRegression(penalty="l1", random_state=0),
    DPRidge(solver="mirror_descent", random_state=0),
    DPRidge(solver="frank_wolfe_gaussian", random_state=0),
    DPLasso(solver="mirror_descent", random_state=0),
    DPLogisticRegression(solver="frank_wolfe_gaussian", random_state=0),
    DPSparseLinearRegression(n_nonzero_coefs=2, random_state=0),
    DPSparseLinearRegression(n_nonzero_coefs=2, solver="two_stage", random_state=0),
    DPSparseLogisticRegression(n_nonzero_coefs=2, random_state=0),
]


@parametrize_with_checks(ESTIMATORS)
def test_sklearn_compatible(estimator, check):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ClippingWarning)
        warnings.filterwarnings("ignore", message="bounds_y was not set")
        warnings.filterwarnings("ignore", message="delta=")
        check(estimator)
