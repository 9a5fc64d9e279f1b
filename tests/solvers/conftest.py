import math

import numpy as np
import pytest

from dp_sklearn._data import Problem, normalize_X
from dp_sklearn._losses import SquaredLoss


@pytest.fixture(scope="module")
def problem():
    """A small public-shape regression problem for the paper-versus-tight accounting tests."""
    rng = np.random.default_rng(0)
    X, y = rng.standard_normal((60, 6)), rng.uniform(-1, 1, 60)
    Xt, x_norm, x_inf = normalize_X(X, 2 * math.sqrt(6), 2, False)
    return Problem(Xt, y, SquaredLoss(), x_norm, x_inf, np.linalg.norm(Xt, axis=1), 0.0)
