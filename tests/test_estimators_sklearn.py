"""scikit-learn's estimator checks on every estimator x registered solver (no blanket xfail).

The list is generated from the solver registry: a new mechanism is checked on every
estimator it serves without editing this file.
"""

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

#: estimator configurations (the l0 models with a sparsity the checks' tiny data allow)
PROTOTYPES = [
    DPRidge(random_state=0),
    DPLasso(random_state=0),
    DPLogisticRegression(random_state=0),
    DPLogisticRegression(penalty="l1", random_state=0),
    DPSparseLinearRegression(n_nonzero_coefs=2, random_state=0),
    DPSparseLogisticRegression(n_nonzero_coefs=2, random_state=0),
]


def _all_configurations():
    out = []
    for proto in PROTOTYPES:
        for solver in proto._allowed_solvers():
            out.append(type(proto)(**{**proto.get_params(), "solver": solver}))
    return out


ESTIMATORS = _all_configurations()


def test_every_registered_solver_is_checked():
    from dp_sklearn.solvers import SOLVERS

    assert {est.solver for est in ESTIMATORS} == set(SOLVERS)


@parametrize_with_checks(ESTIMATORS)
def test_sklearn_compatible(estimator, check):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ClippingWarning)
        warnings.filterwarnings("ignore", message="bounds_y was not set")
        warnings.filterwarnings("ignore", message="delta=")
        check(estimator)


# ---------------------------------------------------------------------------- docstrings

PUBLIC = ["DPRidge", "DPLasso", "DPLogisticRegression", "DPSparseLinearRegression", "DPSparseLogisticRegression"]
#: numpydoc checks every public estimator must pass: documented object, every parameter
#: documented, no unknown parameter, a Returns section where something is returned
NUMPYDOC_CHECKS = {"GL08", "PR01", "PR02", "RT01", "PR07", "RT03"}


@pytest.mark.parametrize("name", PUBLIC)
@pytest.mark.parametrize("member", ["", ".fit", ".predict", ".predict_proba"])
def test_numpydoc_validation(name, member):
    validate = pytest.importorskip("numpydoc.validate").validate
    import dp_sklearn

    if member and not hasattr(getattr(dp_sklearn, name), member[1:]):
        pytest.skip("no such method")
    if member == ".predict" and "Logistic" in name:
        pytest.skip("inherited from scikit-learn")
    errors = [(code, msg) for code, msg in validate(f"dp_sklearn.{name}{member}")["errors"] if code in NUMPYDOC_CHECKS]
    assert errors == []


@pytest.mark.parametrize("name", PUBLIC)
def test_docstrings_are_literal_and_examples_run(name):
    import doctest

    import dp_sklearn

    cls = getattr(dp_sklearn, name)
    doc = cls.__doc__
    assert "{" not in doc.split("Parameters")[0] and "SPEC" not in doc and "{{" not in cls.fit.__doc__
    tests = doctest.DocTestFinder(recurse=False).find(cls, name, globs={})
    assert tests and tests[0].examples
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for t in tests:
            runner.run(t)
    assert runner.failures == 0
