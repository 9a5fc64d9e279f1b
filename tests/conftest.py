import re
import warnings

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer, load_diabetes
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler

from dp_sklearn import ClippingWarning


@pytest.fixture(autouse=True)
def _quiet_clipping():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ClippingWarning)
        yield


def _split(X, y):
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, random_state=0)
    sc = StandardScaler().fit(Xtr)
    return sc.transform(Xtr), sc.transform(Xte), ytr, yte


@pytest.fixture(scope="session")
def diabetes():
    return _split(*load_diabetes(return_X_y=True))


@pytest.fixture(scope="session")
def cancer():
    return _split(*load_breast_cancer(return_X_y=True))


# ---------------------------------------------------------------------------
# Test tiers. `python -m pytest -m "not slow"` is the fast tier (a few minutes on 2 cores);
# the README's command and `.ci/run` run both tiers, every audit at full strength. A test is
# slow when it carries `@pytest.mark.slow`, or when its function name says it runs a privacy
# audit or a distribution test (thousands of fits): the rule follows a test wherever it moves.
# ---------------------------------------------------------------------------
_SLOW_NAME = re.compile(r"audit(?!ed_test_file)|negative_control|goodness_of_fit|undernoised|"
                        r"calibrated_passes|caught|catches")


def pytest_collection_modifyitems(config, items):
    for item in items:
        name = getattr(item, "originalname", None) or item.name.split("[")[0]
        if _SLOW_NAME.search(name) or name in _SLOW_TESTS:
            item.add_marker(pytest.mark.slow)


#: Other tests measured at several seconds each (python -m pytest --durations=60).
_SLOW_TESTS = {
    "test_localization_has_smaller_excess_risk_than_exponential_sampling",
    "test_noisy_gd_minibatch_tight_at_most_paper",
}
