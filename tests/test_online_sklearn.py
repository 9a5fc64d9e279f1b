"""scikit-learn's estimator checks on the partial_fit estimators (issue 13, item 2)."""

import warnings

from sklearn.utils.estimator_checks import parametrize_with_checks

from dp_sklearn import ClippingWarning, DPOnlineClassifier, DPOnlineRegressor
from weight_checks import sample_weight_failures


@parametrize_with_checks([DPOnlineRegressor(bounds_y=(-3.0, 3.0), random_state=0),
                          DPOnlineClassifier(random_state=0),
                          DPOnlineRegressor(bounds_y=(-3.0, 3.0), update="implicit", random_state=0)],
                         expected_failed_checks=sample_weight_failures)
def test_sklearn_compatible(estimator, check):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ClippingWarning)
        warnings.filterwarnings("ignore", message="delta=")
        check(estimator)
