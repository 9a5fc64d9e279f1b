"""Losses declare their properties; solvers declare and check what they require (issue 21, item 1).

Each declaration is checked against the loss's own numbers (a declared Lipschitz or
curvature constant that the derivative exceeds fails here), the registry is the one
source of every solver list, and nothing outside a loss's own module branches on its name.
"""

import dataclasses
import re
from pathlib import Path

import numpy as np
import pytest

from dp_sklearn import DPLogisticRegression, DPRidge, PrivacyLedger
from dp_sklearn._losses import LOSSES, PROPERTIES, LogisticLoss, MultinomialLoss, SquaredLoss, check_attrs
from dp_sklearn.solvers import SOLVERS, PublicProblem
from dp_sklearn.solvers._base import SolverSpec
from dp_sklearn.solvers._ssp import plan_ssp
from dp_sklearn._sets import Unconstrained

PACKAGE = Path(__file__).resolve().parents[1] / "dp_sklearn"

LOSS_NAMES = sorted(LOSSES)


def _instance(name):
    return MultinomialLoss(3) if name == "multinomial" else LOSSES[name]()


def _targets(loss, n, rng):
    if loss.n_outputs > 1:
        return np.eye(loss.n_outputs)[rng.integers(0, loss.n_outputs, n)]
    if loss.needs_target_bound:  # the normalized target range the loss declares (default [-1, 1])
        return rng.uniform(*getattr(loss, "target_range", (-1.0, 1.0)), n)
    return rng.choice([-1.0, 1.0], n)


def _margins(loss, n, bound, rng):
    z = rng.uniform(-bound, bound, (n, loss.n_outputs))
    return z if loss.n_outputs > 1 else z[:, 0]


@pytest.mark.parametrize("name", LOSS_NAMES)
def test_declared_constants_bound_the_loss(name):
    """lipschitz / derivative_bound, curvature, value_at_zero and max_value hold on random points."""
    loss, rng = _instance(name), np.random.default_rng(0)
    assert set(loss.properties()) <= set(PROPERTIES)
    M = 3.0
    z, y = _margins(loss, 20000, M, rng), _targets(loss, 20000, rng)
    d = loss.dphi(z, y)
    norms = np.abs(d) if d.ndim == 1 else np.linalg.norm(d, axis=1)
    assert norms.max() <= loss.derivative_bound(M) * (1 + 1e-12)
    assert np.abs(d).max() <= loss.derivative_linf_bound(M) * (1 + 1e-12)
    if loss.lipschitz is not None:
        far = loss.dphi(_margins(loss, 2000, 1e3, rng), _targets(loss, 2000, rng))
        assert np.abs(far).max() <= loss.lipschitz * (1 + 1e-12)
    # curvature: phi'' along random directions never exceeds the declared bound
    v = _margins(loss, 20000, 1.0, rng)
    hv = loss.d2phi_times(z, y, v)
    quad = np.sum(hv * v, axis=-1) if hv.ndim > 1 else hv * v
    vv = np.sum(v * v, axis=-1) if v.ndim > 1 else v * v
    assert np.max(quad / vv) <= loss.curvature * (1 + 1e-12)
    if "value_at_zero" in loss.properties():
        assert np.mean(loss.phi(np.zeros_like(z), y)) <= loss.value_at_zero + 1e-12
    if "bounded_value" in loss.properties():
        assert loss.phi(z, y).max() <= loss.max_value(M)


def test_declared_properties_of_the_shipped_losses():
    assert SquaredLoss.properties() >= {"gram_path", "smooth", "bounded_value"}
    assert SquaredLoss().needs_target_bound and SquaredLoss().needs_bounded_domain
    assert "bounded_derivative" not in SquaredLoss.properties()
    assert {"bounded_derivative", "bounded_value", "single_output"} <= LogisticLoss.properties()
    assert not LogisticLoss().needs_target_bound and "gram_path" not in LogisticLoss.properties()
    assert "single_output" not in MultinomialLoss.properties()
    assert MultinomialLoss(4).value_at_zero == pytest.approx(np.log(4))


def test_check_attrs_names_the_solver_and_the_missing_property():
    with pytest.raises(ValueError, match=r"solver='ssp' requires a loss that is gram_path .*logistic loss is not"):
        check_attrs(LogisticLoss(), ("gram_path",), "ssp")
    public = PublicProblem(100, 3, 1.5, 1.0, LogisticLoss(), 0.01)
    with pytest.raises(ValueError, match="gram_path"):  # the plan checks it too, for direct use
        plan_ssp(public, Unconstrained(), epsilon=1.0, delta=1e-5)
    check_attrs(SquaredLoss(), ("gram_path", "smooth"), "ssp")  # no error


@pytest.mark.parametrize("name", sorted(SOLVERS))
def test_every_solver_declares_requirements_that_its_losses_meet(name):
    spec = SOLVERS[name]
    assert set(spec.requires) <= set(PROPERTIES)
    for loss in LOSS_NAMES:
        if spec.serves_loss(loss):
            spec.check_loss(_instance(loss))  # no error for a loss it serves
        else:
            with pytest.raises(ValueError, match=f"solver='{name}'"):
                spec.check_loss(_instance(loss))


def test_no_branch_on_a_loss_name_outside_its_class():
    """A comparison with a loss's name (as in the issue's git grep) appears only in the loss's own module."""
    names = "|".join(LOSSES)
    pattern = re.compile(rf"""(name\s*(==|!=)\s*["']({names})["'])|(name\s+(not\s+)?in\s*\(\s*["']({names})["'])""")
    found = []
    for path in PACKAGE.rglob("*.py"):
        if path.parent.name == "_losses":
            continue
        for i, line in enumerate(path.read_text().splitlines(), 1):
            if pattern.search(line):
                found.append(f"{path.relative_to(PACKAGE)}:{i}: {line.strip()}")
    assert not found, found


@pytest.fixture
def late_solver():
    """A solver registered after import (a copy of noisy_gd under a new name); removed afterwards."""
    spec = dataclasses.replace(SOLVERS["noisy_gd"], name="late_gd")
    SOLVERS["late_gd"] = spec
    yield spec
    del SOLVERS["late_gd"]


def test_solver_registered_after_import_is_offered_and_accepted(late_solver):
    """One source for the solver list: validation and the allowed list both read the registry at fit."""
    X = np.random.default_rng(0).standard_normal((200, 3))
    y = X @ [1.0, -1.0, 0.5]
    est = DPRidge(solver="late_gd", bounds_y=(-4, 4), random_state=0)
    assert "late_gd" in est._allowed_solvers()
    est.fit(X, y)
    assert est.solver_ == "late_gd" and np.all(np.isfinite(est.coef_))
    with pytest.raises(ValueError, match="solver"):
        DPRidge(solver="never_registered").fit(X, y)


def test_solver_that_cannot_serve_the_loss_is_refused_before_reservation():
    """A requirement a registered solver declares is checked on the fit's loss, before any reservation."""
    spec = dataclasses.replace(SOLVERS["noisy_gd"], name="gram_only", requires=("gram_path",))
    SOLVERS["gram_only"] = spec
    try:
        ledger = PrivacyLedger(max_epsilon=10.0)
        X = np.random.default_rng(0).standard_normal((100, 2))
        y = (X[:, 0] > 0).astype(int)
        assert "gram_only" not in DPLogisticRegression()._allowed_solvers()
        with pytest.raises(ValueError, match="solver"):
            DPLogisticRegression(solver="gram_only", ledger=ledger).fit(X, y)
        assert ledger.records == [] and ledger.pending == []
        ledger.delete()
    finally:
        del SOLVERS["gram_only"]


def test_l1_logistic_refuses_a_C_it_would_ignore():
    """penalty="l1" is an l1-ball constraint: a non-default C is refused, never silently ignored."""
    X = np.random.default_rng(0).standard_normal((100, 2))
    y = (X[:, 0] > 0).astype(int)
    ledger = PrivacyLedger(max_epsilon=10.0)
    with pytest.raises(ValueError, match=r"C=0.5 has no effect with penalty='l1'.*radius"):
        DPLogisticRegression(penalty="l1", C=0.5, ledger=ledger, random_state=0).fit(X, y)
    assert ledger.records == [] and ledger.pending == []
    ledger.delete()
    DPLogisticRegression(penalty="l1", random_state=0).fit(X, y)  # the default C is accepted
    DPLogisticRegression(penalty="l2", C=0.5, random_state=0).fit(X, y)


def test_solver_spec_is_a_declaration():
    fields = {f.name for f in dataclasses.fields(SolverSpec)}
    assert {"requires", "losses", "constraints", "pure_dp"} <= fields


@pytest.mark.parametrize("k", [2, 3, 4, 10])
def test_multinomial_curvature_share_is_the_hessian_trace_at_a_typical_fit(k):
    """f_K = trace of (diag(p) - p p^T) / (1/2) at p_true = sigma(3), the rest shared equally;
    at K = 2 it equals the logistic loss's share sigma'(3) / sigma'(0)."""
    p_true = 1.0 / (1.0 + np.exp(-3.0))
    p = np.full(k, (1.0 - p_true) / (k - 1))
    p[0] = p_true
    trace = np.trace(np.diag(p) - np.outer(p, p))
    loss = MultinomialLoss(k)
    assert loss.typical_curvature_share == pytest.approx(trace / loss.curvature, rel=1e-12)
    if k == 2:
        assert loss.typical_curvature_share == pytest.approx(LogisticLoss.typical_curvature_share, rel=1e-12)
    assert 0.18 < loss.typical_curvature_share < 0.186


def test_default_clip_norm_reads_the_loss_declaration():
    """Multinomial fits clip at a quarter of x_norm by default, the logistic and squared losses at half;
    a weighted loss keeps its base's declaration."""
    from dp_sklearn._losses._weighted import WeightedLoss
    from dp_sklearn.solvers._common import CLIP_FRACTION, default_clip_norm

    for loss, expected in ((LogisticLoss(), 0.5), (SquaredLoss(), 0.5), (MultinomialLoss(4), 0.25),
                           (WeightedLoss(MultinomialLoss(3), 2.0), 0.25)):
        public = PublicProblem(100, 8, 2.0, 1.0, loss, 0.0)
        assert default_clip_norm(public) == pytest.approx(expected * 2.0, rel=1e-12)
    assert CLIP_FRACTION == 0.5


def test_logistic_derivative_is_the_expit_form_to_rounding():
    """phi'(z, y) = -y / (1 + exp(y z)) equals -y expit(-y z) (scipy) to a few ulp, also where exp
    overflows, and the in-place form gives the same values bit for bit."""
    from scipy.special import expit

    rng = np.random.default_rng(0)
    z = np.r_[rng.normal(0, 20, 2000), -800.0, 800.0, 0.0, -40.0, 40.0]
    y = np.r_[rng.choice([-1.0, 1.0], 2000), 1.0, 1.0, -1.0, 1.0, -1.0]
    loss = LogisticLoss()
    ref = -y * expit(-y * z)
    d = loss.dphi(z, y)
    np.testing.assert_allclose(d, ref, rtol=1e-15, atol=0)
    np.testing.assert_array_equal(loss.dphi_inplace(z.copy(), y), d)
    assert d[2000] == -1.0 and d[2001] == 0.0 and d[2002] == 0.5
