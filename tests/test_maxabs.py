"""DPMaxAbsScaler and nonzero_quantiles: calibration, audit with a negative control, sparse in and out."""

import numpy as np
import pytest
import scipy.sparse as sp
from dp_accounting import dp_event

from dp_sklearn import EpsilonDeltaDpEvent, PrivacyLedger
from dp_sklearn.audit import audit_epsilon
from dp_sklearn.preprocessing import DPMaxAbsScaler
from dp_sklearn.preprocessing._maxabs import nonzero_quantiles

UNIT, UPPER = 0.1, 1.0
A = np.array([0.2, 0.4, 0.6, 0.8])  # nonzero values of the even columns
B = np.array([0.3, 0.9])            # of the odd columns


def _closed_form(values, q, eps):
    """P(interval i) proportional to its asinh length times exp(-eps |i - q m| / 2), m = nnz."""
    edges = np.concatenate([[0.0], np.sort(values), [UPPER]])
    t = np.arcsinh(edges / UNIT)
    w = np.diff(t) * np.exp(-0.5 * eps * np.abs(np.arange(values.size + 1) - q * values.size))
    return edges, w / w.sum()


@pytest.mark.parametrize("q", [0.5, 0.75])
def test_nonzero_quantiles_match_the_closed_form_per_column(q):
    # 20,000 columns alternating two patterns with 4 and 2 nonzeros (rows 6-9 stay zero): the
    # segmented Gumbel-max must give each column its own distribution.
    eps, m = 2.0, 20_000
    dense = np.zeros((10, m))
    dense[:4, 0::2] = A[:, None]
    dense[[1, 4], 1::2] = B[:, None]
    out = nonzero_quantiles(sp.csc_matrix(dense), q, eps, np.random.default_rng(0), upper=UPPER, unit=UNIT, dither=0.0)
    for values, cols in ((A, out[0::2]), (B, out[1::2])):
        edges, probs = _closed_form(values, q, eps)
        freq = np.histogram(cols, bins=edges)[0] / cols.size
        se = np.sqrt(probs * (1 - probs) / cols.size)
        assert np.all(np.abs(freq - probs) < 5 * se)


def test_nonzero_quantiles_exact_and_empty_columns():
    X = sp.csc_matrix(np.array([[0.0, 0.0], [3.0, 0.0], [-1.0, 0.0], [2.0, 0.0]]))
    exact = nonzero_quantiles(X, 0.5, None, None, upper=10.0, unit=1e-3)
    assert exact[0] == pytest.approx(2.0) and exact[1] == 0.0
    priv = nonzero_quantiles(X, 0.5, 1.0, np.random.default_rng(0), upper=10.0, unit=1e-3)
    assert np.all((priv >= 0) & (priv <= 10.0))


# Replace-one pair: the record with 0.8 becomes an all-zero record (one nonzero fewer).
D = (A[:, None], np.zeros(4))
D_PRIME = (np.array([0.2, 0.4, 0.6, 0.0])[:, None], np.zeros(4))


def _mechanism(eps_used):
    return lambda X, y, rng: nonzero_quantiles(sp.csc_matrix(X), 0.5, eps_used, rng, upper=UPPER, unit=UNIT)


def test_nonzero_quantiles_audit_calibrated_passes():
    res = audit_epsilon(_mechanism(1.0), D, D_PRIME, n_samples=4000, random_state=0)
    assert res.epsilon_lower <= 1.0


def test_nonzero_quantiles_audit_negative_control_is_caught():
    res = audit_epsilon(_mechanism(8.0), D, D_PRIME, n_samples=4000, random_state=1)
    assert res.epsilon_lower > 1.0


def _sparse_counts(n=4000, p=6, seed=0):
    X = sp.random(n, p, density=0.2, format="csr", random_state=seed)
    return sp.csr_matrix(X @ sp.diags([1.0, 10.0, 100.0, 1e3, 1.0, 1.0]))


def test_row_norm_sparse_in_sparse_out_and_event():
    X = _sparse_counts()
    led = PrivacyLedger(max_epsilon=1.0, delta=1e-5)
    sc = DPMaxAbsScaler(epsilon=1.0, ledger=led, random_state=0).fit(X)
    assert sc.dp_event_ == EpsilonDeltaDpEvent(1.0, 0.0) and led.total_epsilon() == pytest.approx(1.0, rel=1e-4)
    norms = sp.linalg.norm(X, axis=1)
    assert sc.scale_[0] == pytest.approx(np.quantile(norms, sc.quantile_), rel=0.1)
    Z = sc.transform(X)
    assert sp.issparse(Z) and Z.nnz == X.nnz and sc.output_norm_ == 1.0
    assert np.all(sp.linalg.norm(Z, axis=1) <= 1.0 + 1e-12)
    assert np.allclose(Z.toarray(), sc.transform(X.toarray()))
    # coo and csc input give the same result
    assert np.allclose(sc.transform(X.tocoo()).toarray(), Z.toarray())


def test_per_feature_scales_each_unit_and_event():
    X = _sparse_counts()
    sc = DPMaxAbsScaler(epsilon=2.0, strategy="per_feature", random_state=0).fit(X)
    ex = DPMaxAbsScaler(epsilon=np.inf, strategy="per_feature").fit(X)
    assert sc.quantile_ == 0.75 and sc.scale_ == pytest.approx(ex.scale_, rel=0.15)
    assert ex.scale_[:4] / ex.scale_[0] == pytest.approx([1.0, 10.0, 100.0, 1e3], rel=0.1)
    (ev,) = sc.dp_event_.events
    assert isinstance(ev, dp_event.ZCDpEvent)
    assert 6 * sc._quantile_eps(6) ** 2 / 8 == pytest.approx(ev.rho, rel=1e-9)
    Z = sc.transform(X)
    assert sp.issparse(Z) and abs(Z).max() <= 1.0


@pytest.mark.parametrize("params, match", [
    ({"strategy": "global"}, "strategy"), ({"quantile": 1.0}, "quantile"), ({"search_range": (1, 0)}, "search_range")])
def test_bad_parameters_raise_before_any_charge(params, match):
    led = PrivacyLedger(max_epsilon=1.0, delta=1e-5)
    with pytest.raises(ValueError, match=match):
        DPMaxAbsScaler(epsilon=1.0, ledger=led, **params).fit(_sparse_counts())
    assert led.total_epsilon() == 0.0


@pytest.mark.parametrize("strategy", ["row_norm", "per_feature"])
def test_scikit_learn_checks(strategy):
    import warnings

    from sklearn.utils.estimator_checks import check_estimator

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results = check_estimator(DPMaxAbsScaler(strategy=strategy, random_state=0), on_fail=None)
    failed = [(r["check_name"], str(r["exception"])[:200]) for r in results if r["status"] == "failed"]
    assert failed == []
