"""DPStandardScaler(quantile_range="auto"): public quantile levels that widen the private range with n."""

import numpy as np
import pytest

from dp_sklearn.preprocessing import DPStandardScaler
from dp_sklearn.preprocessing._global import (AUTO_LEVEL_MARGIN, AUTO_LEVELS, FEASIBLE_RANKS,
                                               auto_quantile_level, per_feature_feasible)


@pytest.mark.parametrize("eps_q, n, expected", [
    (0.05, 1_000, 0.25),                          # small n: the quartiles
    (0.05, 20_000, 3 * 4 * 3 / (0.05 * 20_000)),  # 0.036: the closed form
    (0.05, 10**7, 0.01),                          # large n: the floor
    (np.inf, 100, 0.01),                          # non-private fit
])
def test_auto_level_closed_form(eps_q, n, expected):
    assert auto_quantile_level(eps_q, n) == pytest.approx(expected)
    assert AUTO_LEVEL_MARGIN * 4 * FEASIBLE_RANKS == 36.0 and AUTO_LEVELS == (0.01, 0.25)


def test_auto_levels_are_feasible_whenever_they_leave_the_quartiles():
    for n in np.geomspace(100, 1e7, 40):
        q = auto_quantile_level(0.02, n)
        assert q == 0.25 or per_feature_feasible(0.02, q, n)


def test_auto_levels_depend_on_public_values_only():
    rng = np.random.default_rng(0)
    a = DPStandardScaler(epsilon=1.0, random_state=0).fit(rng.normal(size=(30_000, 3)))
    b = DPStandardScaler(epsilon=1.0, random_state=1).fit(rng.exponential(50.0, size=(30_000, 3)))
    assert a.quantile_range_ == b.quantile_range_ and a.quantile_range_[0] < 0.25


def test_auto_levels_keep_a_heavy_tail_that_the_quartile_fences_winsorize():
    # A delay-like feature: most values near 0, a long right tail. With the quartiles' fences
    # the range ends near 30 and every large value is clipped to it; with "auto" levels at
    # n = 100,000 (levels 0.01, 0.99) the range covers the tail and the scaled feature stays
    # nearly linear in it.
    rng = np.random.default_rng(3)
    x = np.where(rng.uniform(size=100_000) < 0.8, rng.normal(0, 5, 100_000), rng.exponential(60.0, 100_000))
    X = np.column_stack([x, rng.normal(size=x.size)])
    corr = {}
    for qr in ["auto", (0.25, 0.75)]:
        sc = DPStandardScaler(epsilon=1.0, delta=1e-6, quantile_range=qr, random_state=0).fit(X)
        corr[str(qr)] = np.corrcoef(sc.transform(X)[:, 0], x)[0, 1]
    assert corr["auto"] > 0.92 and corr["(0.25, 0.75)"] < 0.75  # measured 0.94 (output_clip=3 binds) and 0.70
