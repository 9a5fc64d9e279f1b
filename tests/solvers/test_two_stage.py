"""Two-stage sparse regression (selection by the exponential mechanism, then objective perturbation on
the support): selection calibration, paper accounting, audit with negative control, utility, epsilon = inf."""

import math
import warnings

import numpy as np
import pytest
from dp_accounting import dp_event

from dp_sklearn import ClippingWarning, DPSparseLinearRegression
from dp_sklearn._accounting import EpsilonDeltaDpEvent, zcdp_rho
from dp_sklearn.audit import audit_epsilon, glm_worst_case_pair
from dp_sklearn.composition import epsilon_of_event
from dp_sklearn.solvers import _two_stage
from dp_sklearn.solvers._ight import L0Set
from dp_sklearn.solvers._two_stage import two_stage

from solver_helpers import DELTA, EPS, make_problem, sparse_regression


def test_two_stage_selection_calibration():
    X, y, _, _ = sparse_regression(n=200, p=30, seed=2)
    prob = make_problem(X, y / 5, data_norm=3 * math.sqrt(30))
    eps, delta = 2.0, 1e-5
    eps1 = _two_stage.SELECTION_SHARE * eps
    rho1 = zcdp_rho(eps1, delta / 2)
    # zCDP closed form (Bun & Steinke 2016): the RDP conversion is at least as tight.
    assert rho1 + 2 * math.sqrt(rho1 * math.log(2 / delta)) >= eps1
    for s in (10, 2):
        res = two_stage(prob, L0Set(s), epsilon=eps, delta=delta, rng=np.random.default_rng(0))
        paper = two_stage(prob, L0Set(s), epsilon=eps, delta=delta, rng=np.random.default_rng(0),
                          accounting="paper")
        # paper: s pure eps0-exponential mechanisms, basic composition.
        assert paper.noise_scale == pytest.approx(eps1 / s)
        assert paper.event.events[0] == dp_event.SelfComposedDpEvent(EpsilonDeltaDpEvent(eps1 / s, 0.0), s)
        # tight: s exponential mechanisms with parameter eps0 are s eps0^2 / 8-zCDP (bounded
        # range), unless basic composition is better (few selections).
        assert res.noise_scale == pytest.approx(max(math.sqrt(8 * rho1 / s), eps1 / s))
        assert res.noise_scale >= paper.noise_scale
        if s == 10:
            assert res.info["selection_rho"] == rho1
            assert res.event.events[0] == EpsilonDeltaDpEvent(eps1, delta / 2)
        else:
            assert res.info["selection_rho"] is None
        assert res.info["selection_sensitivity"] == 2 * prob.x_inf
        for r in (res, paper):
            assert epsilon_of_event(r.event, delta) <= eps * (1 + 1e-3)
            assert np.count_nonzero(r.coef) <= s
    pure = two_stage(prob, L0Set(4), epsilon=eps, delta=0.0, rng=np.random.default_rng(0))
    assert pure.delta == 0.0 and pure.noise_scale == pytest.approx(eps1 / 4)


@pytest.mark.parametrize("s", [1, 3, 6])
def test_two_stage_tight_selection_at_least_paper(problem, s):
    tight = two_stage(problem, L0Set(s), epsilon=2.0, delta=1e-5, rng=np.random.default_rng(0))
    paper = two_stage(problem, L0Set(s), epsilon=2.0, delta=1e-5, rng=np.random.default_rng(0), accounting="paper")
    assert tight.noise_scale >= paper.noise_scale  # eps0 of the exponential mechanism: larger = less noise
    for res in (tight, paper):
        assert epsilon_of_event(res.event, 1e-5) <= 2.0 * (1 + 1e-3)


def _selection_pair():
    """Replace-one pair under |x_j| <= 1 whose score gap u_1 - u_2 moves by the full 2 Delta."""
    (X, y), _ = glm_worst_case_pair(10, 2)
    X[:-1], y[:-1], y[-1] = 0.5, 0.5, 1.0
    X_prime = X.copy()
    X[-1], X_prime[-1] = [1.0, -1.0], [-1.0, 1.0]
    return (X, y), (X_prime, y.copy())


def _two_stage_mechanism(X, y, rng):
    prob = make_problem(X, y, ord_=np.inf)
    return two_stage(prob, L0Set(1), epsilon=EPS, delta=DELTA, rng=rng, tol=1e-6).coef


def _selected_first(out):
    return (out[:, 0] != 0).astype(float)


def test_two_stage_audit_calibrated_passes():
    D, D_prime = _selection_pair()
    for stat in (_selected_first, None):
        res = audit_epsilon(_two_stage_mechanism, D, D_prime, n_samples=2000, delta=DELTA, random_state=0,
                            statistic=stat)
        assert res.epsilon_lower <= EPS


def test_two_stage_audit_catches_undernoised_selection(monkeypatch):
    # Gumbel noise scaled down 16x (rho x 256). On a symmetric two-candidate pair the
    # selection realizes eps0 / 2 of its eps0 budget, hence 16x rather than 8x.
    real = _two_stage.zcdp_rho
    monkeypatch.setattr(_two_stage, "zcdp_rho", lambda e, d: 256 * real(e, d))
    D, D_prime = _selection_pair()
    res = audit_epsilon(_two_stage_mechanism, D, D_prime, n_samples=2000, delta=DELTA, random_state=0,
                        statistic=_selected_first)
    assert res.epsilon_lower > EPS


def test_two_stage_utility_and_epsilon_inf():
    X, y, theta, support = sparse_regression(n=3000, p=50, s=3, seed=4)
    kw = dict(data_norm=3.0, data_norm_ord=np.inf, bounds_y=(-4, 4), solver="two_stage", random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ClippingWarning)
        m = DPSparseLinearRegression(3, epsilon=5.0, **kw).fit(X, y)
        m_inf = DPSparseLinearRegression(3, epsilon=np.inf, **kw).fit(X, y)
    assert set(np.flatnonzero(m.coef_)) == set(support)
    assert set(np.flatnonzero(m_inf.coef_)) == set(support)
    assert np.linalg.norm(m_inf.coef_ - theta) < 0.05
    assert m.score(X, y) > 0.2
