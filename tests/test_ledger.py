"""PrivacyLedger: one shared store through clone, pickle, Pipeline, GridSearchCV and joblib workers."""

import dataclasses
import math
import pickle

import numpy as np
import pytest
from dp_accounting import dp_event
from dp_accounting.pld import PLDAccountant
from dp_accounting.rdp import RdpAccountant
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV, cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer

from dp_sklearn import DPLogisticRegression, DPRidge, EpsilonDeltaDpEvent
from dp_sklearn.ledger import (
    BudgetExceededError,
    PrivacyLedger,
    compose_epsilon,
    event_from_json,
    event_to_json,
    flatten_events,
)
from dp_sklearn.solvers import _base as solvers_base

DELTA = 1e-5


@pytest.fixture
def ledger(tmp_path):
    return PrivacyLedger(delta=DELTA, path=tmp_path / "ledger.jsonl")


def _gaussian_mu2(ev):
    """sum of count / z^2 over the Gaussian leaves of a (self-)composed Gaussian event."""
    if isinstance(ev, dp_event.GaussianDpEvent):
        return 1.0 / ev.noise_multiplier**2
    if isinstance(ev, dp_event.SelfComposedDpEvent):
        return ev.count * _gaussian_mu2(ev.event)
    if isinstance(ev, dp_event.ComposedDpEvent):
        return sum(_gaussian_mu2(e) for e in ev.events)
    raise AssertionError(f"not a Gaussian event: {ev}")


def test_gridsearch_records_every_fit_across_processes(cancer, ledger):
    X, _, y, _ = cancer
    est = DPLogisticRegression(solver="noisy_gd", epsilon=1.0, delta=1e-6, ledger=ledger, random_state=0)
    grid = {"data_norm": [1.0, 3.0, 5.5], "fit_intercept": [True, False]}  # 6 candidates
    gs = GridSearchCV(est, grid, cv=5, n_jobs=2).fit(X, y)
    recs = ledger.records
    assert len(ledger) == 31 == 6 * 5 + 1
    assert {r.label for r in recs} == {"DPLogisticRegression"}
    assert {(r.epsilon, r.delta) for r in recs} == {(1.0, 1e-6)}
    assert len({r.pid for r in recs}) >= 2  # loky workers and the parent wrote to one store
    assert recs[-1].event == gs.best_estimator_.dp_event_  # the refit, recorded last
    assert ledger.pending == []

    total = ledger.total_epsilon()
    # Direct composition with dp_accounting, as compose_epsilon does it: the 31 Gaussian
    # releases compose exactly into one Gaussian with 1/z^2 = sum_i T_i / z_i^2
    # (Dong, Roth & Su 2019), then the PLD accountant for that Gaussian.
    z_eff = 1.0 / math.sqrt(sum(_gaussian_mu2(ev) for ev in ledger.events))
    direct = PLDAccountant().compose(dp_event.GaussianDpEvent(z_eff)).get_epsilon(DELTA)
    assert total == pytest.approx(direct, abs=1e-6)
    # Event by event, the accountants give valid but looser bounds; adding epsilons is far worse.
    rdp = RdpAccountant()
    for ev in ledger.events:
        rdp.compose(ev)
    assert total <= rdp.get_epsilon(DELTA)
    assert total < 0.25 * sum(r.epsilon for r in recs)
    assert 5.5 < total < 7.0
    assert ledger.spent() == (total, DELTA)


def test_gridsearch_total_matches_event_by_event_pld(cancer, ledger):
    X, _, y, _ = cancer
    est = DPLogisticRegression(solver="output_perturbation", epsilon=0.5, delta=1e-6, ledger=ledger,
                               random_state=0)
    GridSearchCV(est, {"C": [0.1, 1.0]}, cv=3, n_jobs=2).fit(X, y)
    assert len(ledger) == 7
    acc = PLDAccountant()
    for ev in ledger.events:
        acc.compose(ev)
    eps_pld = acc.get_epsilon(DELTA)
    total = ledger.total_epsilon()
    assert total <= eps_pld + 1e-9
    assert total == pytest.approx(eps_pld, abs=5e-3)  # PLD discretization is the only gap


def test_clone_and_pipeline_keep_the_connection(cancer, ledger):
    X, _, y, _ = cancer
    est = DPLogisticRegression(solver="noisy_gd", ledger=ledger, random_state=0)
    c = clone(est)
    assert c.ledger is ledger
    c.fit(X, y)
    pipe = clone(make_pipeline(FunctionTransformer(), est))
    pipe.fit(X, y)
    assert len(ledger) == 2
    assert ledger.events == [c.dp_event_, pipe[-1].dp_event_]


def test_cross_val_score_records_five(cancer, ledger):
    X, _, y, _ = cancer
    est = DPLogisticRegression(solver="noisy_gd", epsilon=0.5, delta=1e-6, ledger=ledger, random_state=0)
    scores = cross_val_score(est, X, y, cv=5, n_jobs=2)
    assert scores.shape == (5,)
    assert len(ledger) == 5
    z_eff = 1.0 / math.sqrt(sum(_gaussian_mu2(ev) for ev in ledger.events))
    assert ledger.total_epsilon() == pytest.approx(
        PLDAccountant().compose(dp_event.GaussianDpEvent(z_eff)).get_epsilon(DELTA), abs=1e-6)


def test_pickle_round_trip_keeps_the_store(cancer, ledger):
    X, _, y, _ = cancer
    ledger.record(dp_event.GaussianDpEvent(3.0), 1.6, DELTA, label="manual")
    copy = pickle.loads(pickle.dumps(ledger))
    assert copy is not ledger and copy == ledger and copy.path == ledger.path
    assert len(copy) == 1
    est = pickle.loads(pickle.dumps(DPLogisticRegression(solver="noisy_gd", ledger=ledger, random_state=0)))
    est.fit(X, y)
    assert len(ledger) == 2 and ledger.events[1] == est.dp_event_
    copy.reset()
    assert len(ledger) == 0 and ledger.total_epsilon() == 0.0


@pytest.mark.parametrize("event", [
    dp_event.GaussianDpEvent(2.5),
    dp_event.SelfComposedDpEvent(dp_event.GaussianDpEvent(7.0), 17),
    dp_event.ZCDpEvent(0.05),
    dp_event.LaplaceDpEvent(3.0),
    dp_event.NonPrivateDpEvent(),
    EpsilonDeltaDpEvent(0.7, 1e-7),
    dp_event.ComposedDpEvent([EpsilonDeltaDpEvent(0.5, 1e-7), dp_event.GaussianDpEvent(4.0)]),
    dp_event.RepeatAndSelectDpEvent(
        dp_event.ComposedDpEvent([dp_event.GaussianDpEvent(3.0), dp_event.GaussianDpEvent(5.0)]), 12.0, 1.0),
])
def test_events_round_trip(event, ledger):
    assert event_from_json(event_to_json(event)) == event
    ledger.record(event, label="x")
    assert ledger.events == [event]
    assert type(pickle.loads(pickle.dumps(event))) is type(event)


def test_cap_raises_before_the_mechanism_runs(cancer, tmp_path, monkeypatch):
    X, _, y, _ = cancer
    calls = []
    spec = solvers_base.SOLVERS["noisy_gd"]

    def spy(*args, **kwargs):
        calls.append(1)
        return spec.func(*args, **kwargs)

    monkeypatch.setitem(solvers_base.SOLVERS, "noisy_gd", dataclasses.replace(spec, func=spy))
    ledger = PrivacyLedger(max_epsilon=1.5, delta=DELTA, path=tmp_path / "capped.jsonl")
    est = DPLogisticRegression(solver="noisy_gd", epsilon=1.0, delta=1e-6, ledger=ledger, random_state=0)
    est.fit(X, y)
    assert len(calls) == 1 and len(ledger) == 1
    spent = ledger.total_epsilon()
    assert 0.8 < spent < 1.0  # one Gaussian fit at (1, 1e-6), stated at delta = 1e-5
    before = open(ledger.path).read()
    fresh = clone(est)
    with pytest.raises(BudgetExceededError, match="max_epsilon=1.5"):
        fresh.fit(X, y)
    assert len(calls) == 1  # the mechanism never ran
    assert not hasattr(fresh, "dp_event_") and not hasattr(fresh, "coef_")
    assert open(ledger.path).read() == before  # nothing written, no reservation left
    assert ledger.total_epsilon() == spent and ledger.pending == []
    assert not isinstance(BudgetExceededError("x"), Exception)  # stops sklearn searches (issue 8 item 6)
    # A smaller release still fits under the cap.
    clone(est).set_params(epsilon=0.2).fit(X, y)
    assert len(ledger) == 2 and ledger.total_epsilon() <= 1.5


def test_non_private_fit_is_refused_under_a_cap(cancer, tmp_path):
    X, _, y, _ = cancer
    ledger = PrivacyLedger(max_epsilon=100.0, path=tmp_path / "l.jsonl")
    with pytest.raises(BudgetExceededError):
        DPLogisticRegression(epsilon=np.inf, ledger=ledger).fit(X, y)
    assert len(ledger) == 0
    free = PrivacyLedger(path=tmp_path / "free.jsonl")
    DPLogisticRegression(epsilon=np.inf, ledger=free).fit(X, y)
    assert free.events == [dp_event.NonPrivateDpEvent()] and free.total_epsilon() == math.inf


def test_reservations_serialize_concurrent_checks(tmp_path):
    ledger = PrivacyLedger(max_epsilon=1.5, delta=DELTA, path=tmp_path / "r.jsonl")
    other = pickle.loads(pickle.dumps(ledger))  # e.g. a worker process's handle
    assert ledger.check(1.0, 1e-6) == pytest.approx(compose_epsilon([EpsilonDeltaDpEvent(1.0, 1e-6)], DELTA))
    with pytest.raises(BudgetExceededError, match="1 reserved"):
        other.check(1.0, 1e-6)  # the first reservation counts although nothing is recorded yet
    assert ledger.pending == [(None, 1.0, 1e-6)]
    ledger.record(dp_event.GaussianDpEvent(4.5), 1.0, 1e-6, label="a")  # consumes the reservation
    assert ledger.pending == [] and len(other) == 1
    assert other.cancel_pending() == 0
    ledger.check(0.1, 1e-7)
    assert other.cancel_pending(all_handles=True) == 1 and ledger.pending == []


def test_compose_epsilon_mixed_events():
    gauss = dp_event.GaussianDpEvent(3.0)
    zcdp = dp_event.ZCDpEvent(0.02)
    generic = EpsilonDeltaDpEvent(0.5, 1e-7)
    # RDP-only with a generic event: finite, and no worse than basic composition of the parts.
    eps_z = compose_epsilon([zcdp], DELTA / 2)
    mixed = compose_epsilon([gauss, zcdp, generic], DELTA)
    assert math.isfinite(mixed)
    assert mixed <= compose_epsilon([gauss], DELTA / 4) + eps_z + 0.5
    assert mixed >= compose_epsilon([gauss, zcdp], DELTA)
    # Only RDP-supported events: exactly the RDP accountant.
    rdp = RdpAccountant().compose(dp_event.ComposedDpEvent([gauss, zcdp])).get_epsilon(DELTA)
    assert compose_epsilon([gauss, zcdp], DELTA) == pytest.approx(rdp, rel=1e-12)
    # Self-composed generic events go through the PLD.
    sc = compose_epsilon([dp_event.SelfComposedDpEvent(generic, 4)], DELTA)
    assert sc == pytest.approx(compose_epsilon([generic] * 4, DELTA), abs=1e-9)
    assert sc < 2.0
    # Generic deltas above the target: no finite epsilon.
    assert compose_epsilon([EpsilonDeltaDpEvent(1.0, 1e-5)] * 2, DELTA) == math.inf
    assert compose_epsilon([dp_event.NoOpDpEvent()], DELTA) == 0.0
    assert flatten_events([dp_event.ComposedDpEvent([gauss, dp_event.NoOpDpEvent(), zcdp])]) == [gauss, zcdp]


def test_repr_summary_and_validation(ledger, tmp_path):
    ledger.record(dp_event.GaussianDpEvent(4.0), 1.0, 1e-6, label="DPRidge")
    assert repr(ledger) == f"PrivacyLedger(path={ledger.path!r}, n_events=1, delta=1e-05)"
    text = ledger.summary()
    assert "DPRidge: 1 x" in text and "composed total: epsilon=0.926" in text
    tmp = PrivacyLedger(max_epsilon=2.0)
    assert tmp.path.endswith(".jsonl") and len(tmp) == 0 and "max_epsilon=2" in repr(tmp)
    assert tmp.remaining() == 2.0
    tmp.delete()
    with pytest.raises(ValueError, match="max_epsilon"):
        PrivacyLedger(max_epsilon=-1)
    with pytest.raises(ValueError, match="delta"):
        PrivacyLedger(delta=1.0)
    with pytest.raises(TypeError):
        ledger.record("not an event")
    with pytest.raises(ValueError, match="epsilon"):
        ledger.check(0.0, 1e-6)


def test_regression_fit_records_its_whole_event(diabetes, ledger):
    X, _, y, _ = diabetes
    m = DPRidge(bounds_y=(0, 400), ledger=ledger, random_state=0).fit(X, y)
    assert ledger.events == [m.dp_event_]


def test_poisson_sampled_events_compose_under_replace_one():
    """Mini-batch noisy GD is calibrated under replace-one; the ledger must not use add/remove."""
    from dp_accounting import dp_event
    from dp_accounting.pld import PLDAccountant

    from dp_sklearn.solvers._noisy_gd import poisson_noise_multiplier

    zp = poisson_noise_multiplier(1.0, 1e-5, 20, 0.1)
    ev = dp_event.SelfComposedDpEvent(dp_event.PoissonSampledDpEvent(0.1, dp_event.GaussianDpEvent(zp)), 20)
    eps = compose_epsilon([ev], 1e-5)
    assert eps == pytest.approx(1.0, abs=0.01)
    add_remove = PLDAccountant().compose(ev).get_epsilon(1e-5)
    assert add_remove < 0.9 * eps  # the add/remove accountant would understate it
    assert compose_epsilon([ev, ev], 1e-5) > eps
    assert compose_epsilon([ev, dp_event.ZCDpEvent(0.01)], 1e-5) > eps
