"""The ledger store format (dp_sklearn._event_json): bounded work per line, torn last lines.

Issue 19, item 8. Work bounds are asserted as counts of PLD operations, not wall times
(the wall times are in ``benchmarks/`` and the issue's report).
"""

import base64
import json
import math
import os
import pickle
import re

import pytest
from dp_accounting import dp_event
from dp_accounting import dp_event as E
from dp_accounting.pld import privacy_loss_distribution as pld_lib

from dp_sklearn import EpsilonDeltaDpEvent
from dp_sklearn._accounting import leaf_pld, pld_epsilon
from dp_sklearn._event_json import _MAX_LINE, _MAX_NODES, dump_line, encode_event
from dp_sklearn.composition import _PLD_MAX_COUNT, _PLD_MAX_LEAVES, compose_epsilon
from dp_sklearn.ledger import PrivacyLedger

DELTA = 1e-5


def _line(event, kind="event", rid="r0", reservation=None):
    entry = {"kind": kind, "id": rid, "label": "x", "epsilon": None, "delta": None, "event": event,
             "time": 1.0, "pid": 1}
    if kind == "event":
        entry["reservation"] = reservation
    return json.dumps(entry)


def _store(tmp_path, *lines, newline=True):
    path = tmp_path / "store.jsonl"
    path.write_text("\n".join(lines) + ("\n" if newline else ""))
    return path


@pytest.fixture
def pld_work(monkeypatch):
    """Counts the PLD operations a read does; fails fast on a self-composition above the bound."""
    calls = {"self_compose": [], "compose": 0, "leaves": 0}
    real_self, real_compose, real_laplace = (pld_lib.PrivacyLossDistribution.self_compose,
                                             pld_lib.PrivacyLossDistribution.compose, pld_lib.from_laplace_mechanism)

    def self_compose(pld, count, *args, **kwargs):
        calls["self_compose"].append(count)
        assert count <= _PLD_MAX_COUNT, f"unbounded work: a PLD self-composed {count} times"
        return real_self(pld, count, *args, **kwargs)

    def compose(pld, other, *args, **kwargs):
        calls["compose"] += 1
        assert calls["compose"] <= 200, "unbounded work: more than 200 PLD compositions"
        return real_compose(pld, other, *args, **kwargs)

    def laplace(*args, **kwargs):
        calls["leaves"] += 1
        assert calls["leaves"] <= 2 * _PLD_MAX_LEAVES, "unbounded work: too many Laplace PLDs built"
        return real_laplace(*args, **kwargs)

    leaf_pld.cache_clear()
    monkeypatch.setattr(pld_lib.PrivacyLossDistribution, "self_compose", self_compose)
    monkeypatch.setattr(pld_lib.PrivacyLossDistribution, "compose", compose)
    monkeypatch.setattr(pld_lib, "from_laplace_mechanism", laplace)
    yield calls
    leaf_pld.cache_clear()


def _laplace(b, count=None):
    ev = {"type": "laplace", "noise_multiplier": b}
    return ev if count is None else {"type": "self_composed", "event": ev, "count": count}


@pytest.mark.parametrize("event, expected", [
    (_laplace(1e8, 2**30), 2**30 / 1e8),  # the line: over 60 s before
    (_laplace(1e16, 2**53), 2**53 / 1e16),
    ({"type": "self_composed", "count": 2**30, "event": {"type": "epsilon_delta", "epsilon": 1e-8, "delta": 0.0}},
     2**30 * 1e-8),
])
def test_huge_counts_compose_in_bounded_work_never_smaller(event, expected, tmp_path, pld_work):
    path = _store(tmp_path, _line(event))
    total = PrivacyLedger(path=path, delta=DELTA).total_epsilon()
    # composed by basic composition (the closed form of wide leaves): an upper bound, never smaller
    assert total == pytest.approx(expected, rel=1e-12)
    assert pld_work["self_compose"] == []


def test_an_event_with_many_distinct_leaves_is_bounded(tmp_path, pld_work):
    leaves = [_laplace(1000.0 + i) for i in range(1000)]  # 1000 distinct Laplace leaves in one line
    path = _store(tmp_path, _line({"type": "composed", "events": leaves}))
    total = PrivacyLedger(path=path, delta=DELTA).total_epsilon()
    assert total == pytest.approx(sum(1 / (1000.0 + i) for i in range(1000)), rel=1e-12)  # basic composition
    assert pld_work["leaves"] == 0
    # at the bound, the leaves go through the PLD (one Laplace PLD each)
    few = [dp_event.LaplaceDpEvent(10.0 + i) for i in range(_PLD_MAX_LEAVES)]
    assert compose_epsilon([dp_event.ComposedDpEvent(few)], DELTA) < sum(1 / ev.noise_multiplier for ev in few)
    assert pld_work["leaves"] == _PLD_MAX_LEAVES


def test_reading_many_equal_events_is_linear(tmp_path, pld_work):
    n = 5_000
    path = _store(tmp_path, *[_line(_laplace(100.0), rid=f"r{i}") for i in range(n)])
    led = PrivacyLedger(path=path, delta=DELTA)
    total = led.total_epsilon()
    # one Laplace PLD, self-composed n times (dp_accounting's FFT power), not n - 1 compositions
    assert pld_work["self_compose"] == [n] and pld_work["compose"] == 0 and pld_work["leaves"] == 1
    direct = pld_lib.from_laplace_mechanism(100.0, value_discretization_interval=1e-3).self_compose(n)
    assert total == pytest.approx(direct.get_epsilon_for_delta(DELTA), rel=1e-9)
    assert len(led) == n and total < 0.1 * n / 100.0  # far below basic composition


def test_distinct_events_fold_by_a_tree(pld_work):
    events = [dp_event.LaplaceDpEvent(10.0 + (i % 16)) for i in range(64)]
    eps = compose_epsilon(events, DELTA)
    # 16 distinct events, each self-composed 4 times, then 15 compositions (not 63)
    assert sorted(pld_work["self_compose"]) == [4] * 16 and pld_work["compose"] == 15
    assert eps < sum(1 / ev.noise_multiplier for ev in events)


def test_wide_generic_events_use_basic_composition():
    wide = EpsilonDeltaDpEvent(60.0, 1e-7)  # epsilon above 50: basic composition
    assert compose_epsilon([wide], 1e-5) == pytest.approx(60.0)
    assert compose_epsilon([wide, dp_event.GaussianDpEvent(4.0)], 1e-5) == pytest.approx(
        60.0 + compose_epsilon([dp_event.GaussianDpEvent(4.0)], 1e-5 - 1e-7), rel=1e-9)
    assert compose_epsilon([wide] * 101, 1e-5) == math.inf  # its deltas exhaust the target


def test_pld_epsilon_beyond_700_nats_does_not_overflow():
    pld = leaf_pld("laplace", 1.0, 2000)  # epsilon near 888: e^x overflowed
    assert pld_epsilon(pld, DELTA) == pytest.approx(pld.get_epsilon_for_delta(DELTA), rel=1e-9)


@pytest.mark.parametrize("what", ["depth", "nodes", "multiplicity", "line"])
def test_structurally_hostile_lines_are_refused(what, tmp_path):
    if what == "depth":
        ev = _laplace(1.0)
        for _ in range(40):
            ev = {"type": "composed", "events": [ev]}
    elif what == "nodes":
        ev = {"type": "composed", "events": [{"type": "no_op"}] * (_MAX_NODES + 1)}
    elif what == "multiplicity":  # each count is allowed, their product is not
        ev = {"type": "self_composed", "count": 2**30,
              "event": {"type": "self_composed", "count": 2**30, "event": _laplace(1.0)}}
    else:
        ev = {"type": "composed", "events": [{"type": "no_op"}] * (_MAX_LINE // 16)}
    path = _store(tmp_path, _line(_laplace(5.0), rid="ok"), _line(ev))
    with pytest.raises(ValueError, match=rf"{path}', line 2: "):
        PrivacyLedger(path=path, delta=DELTA).total_epsilon()
    with pytest.raises(ValueError):
        dump_line(json.loads(_line(ev)))  # never written either


# ---------------------------------------------------------------------------
# A torn last line (a writer that stopped mid-write)
# ---------------------------------------------------------------------------
def _reserve_then_tear(tmp_path, torn_kind):
    path = tmp_path / "torn.jsonl"
    led = PrivacyLedger(max_epsilon=10.0, delta=DELTA, path=path)
    event = dp_event.GaussianDpEvent(2.0)
    led.check(1.0, 1e-6, event=event, label="fit")
    rid = json.loads(path.read_text().splitlines()[-1])["id"]
    if torn_kind == "event":
        line = dump_line({"kind": "event", "id": "e1", "reservation": rid, "label": "fit", "epsilon": 1.0,
                          "delta": 1e-6, "event": encode_event(event), "time": 2.0, "pid": 7})
    elif torn_kind == "release":
        line = dump_line({"kind": "release", "id": rid, "time": 2.0, "pid": 7})
    else:
        line = dump_line({"kind": "reserve", "id": "r2", "label": "fit", "epsilon": 1.0, "delta": 1e-6,
                          "event": encode_event(event), "time": 2.0, "pid": 7})
    with open(path, "ab") as fh:
        fh.write(line[: len(line) * 2 // 3])  # cut mid-line, after the reservation field
    return path, event


def test_torn_event_line_records_the_reserved_event(tmp_path):
    path, event = _reserve_then_tear(tmp_path, "event")
    reader = PrivacyLedger(delta=DELTA, path=path)  # a new process reading the store
    assert reader.total_epsilon() == pytest.approx(compose_epsilon([event], DELTA), rel=1e-12)
    assert reader.pending == [] and [r.event for r in reader.records] == [event]
    assert path.read_bytes().endswith(b"\n")  # repaired under the exclusive lock: one complete line
    assert len(path.read_text().splitlines()) == 2


@pytest.mark.parametrize("kind", ["reserve", "release"])
def test_torn_reserve_or_release_is_dropped_without_under_counting(kind, tmp_path):
    path, event = _reserve_then_tear(tmp_path, kind)
    led = PrivacyLedger(max_epsilon=10.0, delta=DELTA, path=path)
    assert led.total_epsilon() == 0.0
    assert len(led.pending) == 1  # a torn release keeps its reservation counted
    led.check(1.0, 1e-6, event=event)  # checks go on; the torn bytes are cut first
    lines = path.read_text().splitlines()
    assert len(lines) == 2 and all(json.loads(x)["kind"] == "reserve" for x in lines)


@pytest.mark.parametrize("cut", ["unreserved", "early"])
def test_torn_line_that_could_hide_a_release_fails_closed(cut, tmp_path):
    good = _line(_laplace(10.0), rid="a")
    event_line = dump_line({"kind": "event", "id": "b", "reservation": None, "label": None, "epsilon": None,
                            "delta": None, "event": encode_event(dp_event.LaplaceDpEvent(1.0)), "time": 1.0,
                            "pid": 1}).decode()
    torn = event_line[:60] if cut == "unreserved" else event_line[:12]
    path = _store(tmp_path, good, torn, newline=False)
    size = os.path.getsize(path)
    for read in (lambda: PrivacyLedger(path=path, delta=DELTA).total_epsilon(),
                 lambda: PrivacyLedger(max_epsilon=5.0, path=path, delta=DELTA).check(0.1, 0.0)):
        with pytest.raises(ValueError, match=r"line 2: an incomplete last line"):
            read()
    assert os.path.getsize(path) == size  # nothing repaired, nothing appended


def test_complete_last_line_without_newline_counts(tmp_path):
    path = _store(tmp_path, _line(_laplace(10.0), rid="a"), _line(_laplace(5.0), rid="b"), newline=False)
    led = PrivacyLedger(path=path, delta=0.0)
    assert led.total_epsilon() == pytest.approx(0.3)
    led.record(dp_event.LaplaceDpEvent(10.0))
    assert led.total_epsilon() == pytest.approx(0.4) and len(path.read_text().splitlines()) == 3
    assert PrivacyLedger(path=path, delta=0.0).total_epsilon() == pytest.approx(0.4)


# ------------------------------------------------------------------------------
# Issue 8 acceptance: every numbered reproducer, as written in the issue, end to end.
#
# Standardized diabetes ``X, y`` and ``led = PrivacyLedger(...)``, through the public API
# only. Each test asserts the fixed behaviour; the detailed unit tests and the statistical
# audits at the strength live next to the code they cover (named per test).


def test_hostile_ledger_line_is_refused_and_never_runs(tmp_path):
    marker = tmp_path / "pwned"

    class Boom:
        def __reduce__(self):
            import os
            return (os.system, (f"touch {marker}",))

    path = tmp_path / "hostile.jsonl"
    good = PrivacyLedger(path=path)
    good.record(E.GaussianDpEvent(3.0), 1.0, 1e-6)
    entry = json.loads(path.read_text())
    entry["event"] = {"__pickle__": base64.b64encode(pickle.dumps(Boom())).decode("ascii")}
    with open(path, "a") as fh:
        fh.write(json.dumps(entry) + "\n")
    with pytest.raises(ValueError, match=re.escape(str(path)) + r".*line 2"):
        PrivacyLedger(path=path).total_epsilon()
    assert not marker.exists()
