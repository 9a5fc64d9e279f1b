"""Feasible sets and projections (dp_sklearn/_sets.py)."""

import numpy as np
import pytest

from dp_sklearn._sets import l1_threshold, project_l1_ball


# ------------------------------------------------------------------------------
# Speed work (issue 11) changes no released value: same seed -> same coefficients.
#
# * the in-place clipped gradient sum equals the plain formula (every loss, dense / CSR);
# * the old per-step loops (reference copies below) and the new ones agree to 1e-10;
# * the Gram path (squared loss, clip norm that can never bind) releases the same
#   coefficients as the data path, and is never taken when clipping could bind.


def _duchi_projection(v, radius):
    """The sort-based l1-ball projection before the speed work (Duchi et al. 2008, Fig. 1)."""
    a = np.abs(v)
    if a.sum() <= radius:
        return v.copy()
    u = np.sort(a)[::-1]
    css = np.cumsum(u)
    rho = np.nonzero(u * np.arange(1, u.size + 1) > css - radius)[0][-1]
    return np.sign(v) * np.maximum(a - (css[rho] - radius) / (rho + 1.0), 0.0)


def test_l1_projection_matches_the_sort_based_one():
    rng = np.random.default_rng(0)
    for trial in range(500):
        d = int(rng.integers(1, 300))
        v = rng.standard_normal(d) * rng.exponential()
        if trial % 3 == 0:
            v[rng.random(d) < 0.5] = 0.0  # ties at zero
        if trial % 5 == 0:
            v = np.round(v, 1)  # ties among the entries
        r = float(rng.exponential())
        np.testing.assert_allclose(project_l1_ball(v, r), _duchi_projection(v, r), rtol=0, atol=1e-12)
    v = rng.standard_normal(5000)
    a = np.abs(v)
    # the sort-based finish after max_rounds gives the same threshold
    assert l1_threshold(a, 3.0, max_rounds=0) == pytest.approx(l1_threshold(a, 3.0), rel=1e-12)
    assert np.maximum(a - l1_threshold(a, 3.0), 0.0).sum() == pytest.approx(3.0, rel=1e-12)
