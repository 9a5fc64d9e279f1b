"""Exponential-mechanism quantiles on repeated values (binary, integer, rounded data): the public dither.

Without it a quantile that falls inside a repeated value is drawn from the gaps around it
(intervals of length 0 have no base measure); with it, each repeated value is an interval of
length ``dither`` in the mechanism's coordinate. The dither is drawn independently of the
data, one value per record, so the guarantee is unchanged (audited below, with a negative
control).
"""

import numpy as np
import pytest

from dp_sklearn._private_stats import INTEGER_ATOMS, TIE_DITHER, exponential_quantiles
from dp_sklearn._private_stats import _quantiles as quantiles_module
from dp_sklearn.audit import audit_epsilon
from dp_sklearn.preprocessing import DPStandardScaler

UNIT = 1e-3
SEARCH = (-1e6, 1e6)


def test_dithered_mechanism_is_the_calibrated_mechanism_on_dithered_values():
    # Same generator stream: first the per-record dither, then the closed-form mechanism
    # (tests/test_private_stats.py) on the dithered values with no further dither.
    X = np.repeat(np.array([[0.0, 3.0], [1.0, 3.0], [2.0, 7.0]]), 50, axis=0)
    levels = [0.1, 0.5, 0.9]
    out = exponential_quantiles(X, levels, 0.7, np.random.default_rng(5), lower=SEARCH[0], upper=SEARCH[1],
                                unit=UNIT, dither=TIE_DITHER)
    rng = np.random.default_rng(5)
    T = np.arcsinh(X / UNIT) + TIE_DITHER * (rng.uniform(size=X.shape) - 0.5)
    ref = exponential_quantiles(UNIT * np.sinh(T), levels, 0.7, rng, lower=SEARCH[0], upper=SEARCH[1], unit=UNIT)
    np.testing.assert_allclose(out, ref, rtol=1e-9, atol=1e-12)


def test_quantiles_of_binary_data_land_on_the_repeated_values():
    # 30% ones, 70% zeros: the private lower quartile is 0. Undithered, the 0-atom has no base
    # measure and the lower quartile is drawn from the gaps around it (anywhere in [-1e6, 0) or (0, 1)).
    n, m = 1000, 400  # m independent columns = m independent draws
    X = np.zeros((n, m))
    X[: int(0.3 * n)] = 1.0
    kw = dict(lower=SEARCH[0], upper=SEARCH[1], unit=UNIT)
    q_d = exponential_quantiles(X, 0.25, 0.1, np.random.default_rng(0), dither=TIE_DITHER, **kw)[0]
    q_0 = exponential_quantiles(X, 0.25, 0.1, np.random.default_rng(0), **kw)[0]
    on_atom = lambda v: np.mean(np.abs(v) <= UNIT * np.sinh(TIE_DITHER))  # noqa: E731
    assert on_atom(q_d) >= 0.95
    assert on_atom(q_0) <= 0.05  # the failure the dither removes


@pytest.mark.parametrize("dither, keeps", [(TIE_DITHER, True), (0.0, False)])
def test_standard_scaler_keeps_binary_features(monkeypatch, dither, keeps):
    # Binary columns with 30-70% ones: the private range straddles 0 and 1 and stays narrow,
    # so each standardized column is its binary column again. Undithered (the control), the
    # lower quartile of some columns lands far out in [-1e6, 0), the range is that wide and
    # the moments' noise (proportional to its width) drowns the column.
    monkeypatch.setattr(quantiles_module, "TIE_DITHER", dither)
    monkeypatch.setattr(DPStandardScaler, "_atoms", None)  # the dither alone (atoms: below)
    rng = np.random.default_rng(1)
    X = (rng.uniform(size=(20_000, 8)) < np.linspace(0.3, 0.7, 8)).astype(float)
    sc = DPStandardScaler(epsilon=1.0, delta=1e-6, random_state=0).fit(X)
    assert sc.strategy_ == "per_feature"
    Z = sc.transform(X)
    corr = np.array([np.corrcoef(Z[:, j], X[:, j])[0, 1] for j in range(X.shape[1])])
    lo, hi = sc.bounds_
    kept = (hi - lo < 10.0) & (lo <= 0.0) & (hi > 0.0) & (corr > 0.99)
    assert kept.all() == keeps


def _median(eps_used):
    def mechanism(X, y, rng):
        return exponential_quantiles(X[:, 0], [0.5], eps_used, rng, lower=0.0, upper=1.0, unit=0.1,
                                     dither=TIE_DITHER)
    return mechanism


def _pair(a, b):
    return tuple((np.asarray(v, dtype=float)[:, None], np.zeros(len(v))) for v in (a, b))


# Replace-one pairs: distinct values (0.8 -> 0.1 moves the median interval), and repeated
# values (a 1 becomes a 0; the median stays on the 1s but two ranks closer to the gap).
DISTINCT = _pair([0.2, 0.4, 0.6, 0.8], [0.2, 0.4, 0.6, 0.1])
TIES = _pair([0.0] * 2 + [1.0] * 7, [0.0] * 3 + [1.0] * 6)


@pytest.mark.parametrize("pair, used, lower_bound", [
    (DISTINCT, 1.0, (0.1, 1.0)),   # calibrated: a positive bound, within the claim
    (DISTINCT, 8.0, (1.0, None)),  # negative control: 8 times the claimed epsilon is caught
    (TIES, 1.0, (None, 1.0)),
    (TIES, 8.0, (1.0, None)),
])
def test_dithered_quantile_audit_with_negative_control(pair, used, lower_bound):
    res = audit_epsilon(_median(used), *pair, n_samples=4000, random_state=0)
    lo, hi = lower_bound
    assert lo is None or res.epsilon_lower > lo
    assert hi is None or res.epsilon_lower <= hi


# ---------------------------------------------------------------------------
# Public atoms: point masses of the base measure at the integers (issue 20)
# ---------------------------------------------------------------------------

def _atom_closed_form(values, atoms, weight, q, eps, lower, upper):
    """P(each interval), P(each atom): |I_i| exp(-eps |i - q n| / 2) and w exp(eps u(a) / 2)."""
    v = np.sort(values)
    n = v.size
    edges = np.concatenate([[lower], v, [upper]])
    w_int = np.diff(edges) * np.exp(-0.5 * eps * np.abs(np.arange(n + 1) - q * n))
    below = np.searchsorted(v, atoms, side="left")
    upto = np.searchsorted(v, atoms, side="right")
    u = -np.maximum(0.0, np.maximum(below - q * n, q * n - upto))
    w_atom = weight * np.exp(0.5 * eps * u)
    total = w_int.sum() + w_atom.sum()
    return edges, w_int / total, w_atom / total


def test_atom_mechanism_matches_closed_form():
    # 0 0 0 1 1 in [-2, 3], atoms 0, 1, 2 of weight 0.5: the median is the atom 0 (utility 0)
    # with the closed-form probability; the intervals keep theirs; 40000 independent columns.
    values, atoms, weight, eps, m = np.array([0.0, 0.0, 0.0, 1.0, 1.0]), np.array([0.0, 1.0, 2.0]), 0.5, 1.0, 40_000
    out = exponential_quantiles(np.tile(values[:, None], (1, m)), 0.5, eps, np.random.default_rng(3), lower=-2.0,
                                upper=3.0, atoms=atoms, atom_weight=weight)[0]
    edges, p_int, p_atom = _atom_closed_form(values, atoms, weight, 0.5, eps, -2.0, 3.0)
    freq_atom = np.array([np.mean(out == a) for a in atoms])
    rest = out[~np.isin(out, atoms)]
    freq_int = np.array([np.mean((rest > lo) & (rest < hi)) * rest.size / m
                         for lo, hi in zip(edges[:-1], edges[1:])])
    for freq, prob in ((freq_atom, p_atom), (freq_int, p_int)):
        se = np.sqrt(prob * (1 - prob) / m)
        assert np.all(np.abs(freq - prob) <= 5 * se + 1e-12)
    assert p_atom[0] > 0.15  # the atom carries real mass (without atoms: none)


def test_atoms_outside_the_bounds_have_no_mass_and_bad_atoms_raise():
    X = np.zeros((50, 2000))
    out = exponential_quantiles(X, 0.5, 0.5, np.random.default_rng(0), lower=1.0, upper=5.0, atoms=[0.0, 10.0])
    assert np.all((out >= 1.0) & (out <= 5.0))
    for bad in ([np.nan], []):
        with pytest.raises(ValueError, match="atoms"):
            exponential_quantiles(X[:, :2], 0.5, 0.5, np.random.default_rng(0), lower=0, upper=1, atoms=bad)
    with pytest.raises(ValueError, match="atom_weight"):
        exponential_quantiles(X[:, :2], 0.5, 0.5, np.random.default_rng(0), lower=0, upper=1, atoms=[0.0],
                              atom_weight=0.0)


def test_atoms_find_the_median_of_imbalanced_binary_columns_at_a_small_budget():
    # 10% ones, n = 1000, epsilon 0.03 per median (a robust scaler's share at small n): with the
    # integer atoms the median is 0 exactly in most columns; with the dither alone (control) it
    # lands far outside the data (|m| > 100) in a quarter of them.
    X = np.zeros((1000, 400))
    X[:100] = 1.0
    # Pooled over three seeds (1200 columns): one seed's rate of |m| > 100 with atoms ranges 0.02-0.055.
    kw = dict(lower=SEARCH[0], upper=SEARCH[1], unit=UNIT, dither=TIE_DITHER)
    with_atoms = np.concatenate([exponential_quantiles(X, 0.5, 0.03, np.random.default_rng(seed),
                                                       atoms=INTEGER_ATOMS, **kw)[0] for seed in range(3)])
    dither_only = np.concatenate([exponential_quantiles(X, 0.5, 0.03, np.random.default_rng(seed), **kw)[0]
                                  for seed in range(3)])
    assert np.mean(with_atoms == 0.0) > 0.8 and np.mean(np.abs(with_atoms) > 100) < 0.05
    assert np.mean(np.abs(dither_only) > 100) > 0.15


def _median_atoms(eps_used):
    def mechanism(X, y, rng):
        return exponential_quantiles(X[:, 0], [0.5], eps_used, rng, lower=0.0, upper=1.0, unit=0.1,
                                     dither=TIE_DITHER, atoms=[0.0, 1.0], atom_weight=1.0)
    return mechanism


# The median moves between the atoms 1 and 0 (five 1s and four 0s, then four and five): each
# atom's utility moves by 1/2 across the pair, the most an atom can show at this size.
SWAP = _pair([0.0] * 4 + [1.0] * 5, [0.0] * 5 + [1.0] * 4)


@pytest.mark.parametrize("pair, used, lower_bound", [
    (TIES, 1.0, (0.1, 1.0)),   # calibrated: a positive bound within the claim
    (SWAP, 1.0, (None, 1.0)),
    (SWAP, 8.0, (1.0, None)),  # negative control: 8 times the claimed epsilon is caught
    (DISTINCT, 8.0, (1.0, None)),
])
def test_atom_quantile_audit_with_negative_control(pair, used, lower_bound):
    res = audit_epsilon(_median_atoms(used), *pair, n_samples=4000, random_state=0)
    lo, hi = lower_bound
    assert lo is None or res.epsilon_lower > lo
    assert hi is None or res.epsilon_lower <= hi


# ---------------------------------------------------------------------------
# One epsilon per level: one dither and one sort shared by the levels (issue 22)
# ---------------------------------------------------------------------------

def test_per_level_epsilon_matches_each_levels_closed_form():
    # Levels 0.5 at epsilon 0.4 and 0.5 at epsilon 3 in one call: each column of the output
    # has the closed-form law |I_i| exp(-eps_level |i - q n| / 2) of its own epsilon.
    values = np.arange(1.0, 21.0)  # n = 20 distinct values, search range [0, 21]: 21 intervals
    n, eps = values.size, (0.4, 3.0)
    edges = np.concatenate([[0.0], values, [21.0]])
    seeds = 3000
    out = np.array([exponential_quantiles(values, [0.5, 0.5], list(eps), np.random.default_rng(s), lower=0.0,
                                          upper=21.0) for s in range(seeds)])
    for col, e in enumerate(eps):
        w = np.diff(edges) * np.exp(-0.5 * e * np.abs(np.arange(n + 1) - 0.5 * n))
        prob = w / w.sum()
        freq = np.bincount(np.clip(np.searchsorted(edges, out[:, col], side="right") - 1, 0, n), minlength=n + 1) / seeds
        sd = np.sqrt(prob * (1 - prob) / seeds)
        assert np.all(np.abs(freq - prob) <= 4.5 * sd + 1e-3), (e, freq, prob)
    # the two laws differ: P(the middle interval) is about 0.1 at epsilon 0.4 and 0.64 at epsilon 3
    mid = np.mean((out >= 10.0) & (out <= 11.0), axis=0)
    assert mid[0] < 0.2 < 0.5 < mid[1]


def test_per_level_epsilon_one_value_equals_scalar_and_bad_lengths_raise():
    y = np.random.default_rng(3).normal(size=200)
    kw = dict(lower=SEARCH[0], upper=SEARCH[1], unit=UNIT, dither=TIE_DITHER)
    a = exponential_quantiles(y, [0.25, 0.75], 0.8, np.random.default_rng(1), **kw)
    b = exponential_quantiles(y, [0.25, 0.75], [0.8, 0.8], np.random.default_rng(1), **kw)
    np.testing.assert_array_equal(a, b)
    for bad in ([0.8], [0.8, 0.8, 0.8], [0.8, -1.0], [[0.8, 0.8]]):
        with pytest.raises(ValueError, match="epsilon"):
            exponential_quantiles(y, [0.25, 0.75], bad, np.random.default_rng(1), **kw)


@pytest.mark.parametrize("kw", [dict(), dict(unit=UNIT, dither=TIE_DITHER), dict(unit=UNIT, dither=TIE_DITHER, atoms=INTEGER_ATOMS)])
def test_row_chunks_of_the_dither_do_not_change_the_release(kw, monkeypatch):
    """Issue 22: clip, transform and dither in row chunks (``_PREP_ENTRIES``) are the whole-array
    passes: the same release and the same generator state for any chunk size."""
    X = np.round(np.random.default_rng(2).normal(size=(999, 3)) * 3, 1)
    out = {}
    for chunk in (2**15, 7, 64):
        monkeypatch.setattr(quantiles_module, "_PREP_ENTRIES", chunk)
        rng = np.random.default_rng(3)
        out[chunk] = (exponential_quantiles(X, [0.1, 0.5, 0.9], [0.4, 0.8, 0.4], rng, lower=-50, upper=50, **kw),
                      str(rng.bit_generator.state))
    for chunk in (7, 64):
        np.testing.assert_array_equal(out[chunk][0], out[2**15][0])
        assert out[chunk][1] == out[2**15][1]
