"""verbose (issue 11 item 4): step t of T and elapsed time only, never a data-dependent number."""

import re

import numpy as np
import pytest

from dp_sklearn import DPLasso, DPLogisticRegression, DPRidge, DPSparseLinearRegression
from dp_sklearn._progress import MAX_STEP_LINES, progress, steps
from dp_sklearn.model_selection import DPGridSearchCV

TIMING = re.compile(r"elapsed [0-9.]+ s")


def _data(seed, task):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(200, 5)) * (1 + seed)
    y = X @ rng.normal(size=5) + rng.normal(size=200)
    return X, ((y > 0).astype(int) if task == "binary" else y)


def _output(capsys, make, task, seed):
    capsys.readouterr()
    make().fit(*_data(seed, task))
    return TIMING.sub("elapsed <t> s", capsys.readouterr().out)


ESTIMATORS = [
    (lambda **k: DPLogisticRegression(max_iter=37, random_state=0, **k), "binary"),
    (lambda **k: DPRidge(bounds_y=(-5, 5), random_state=0, **k), "regression"),
    (lambda **k: DPLasso(bounds_y=(-5, 5), random_state=0, **k), "regression"),
    (lambda **k: DPSparseLinearRegression(n_nonzero_coefs=2, bounds_y=(-5, 5), random_state=0, **k), "regression"),
]


@pytest.mark.parametrize("make, task", ESTIMATORS)
def test_verbose_output_depends_on_public_sizes_only(capsys, make, task):
    first = _output(capsys, lambda: make(verbose=1), task, seed=0)
    second = _output(capsys, lambda: make(verbose=1), task, seed=1)  # other data, same shapes
    assert first == second
    lines = first.splitlines()
    assert 2 <= len(lines) <= 4
    assert lines[-1].endswith("fit done, elapsed <t> s")
    assert _output(capsys, lambda: make(verbose=0), task, seed=0) == ""


def test_verbose_prints_the_last_step_of_a_public_T(capsys):
    out = _output(capsys, lambda: DPLogisticRegression(max_iter=37, verbose=2, random_state=0), "binary", 0)
    assert "step 37 of 37" in out and "noisy_newton, 37 steps" in out
    assert len(re.findall(r"step \d+ of 37", out)) == MAX_STEP_LINES


def test_steps_is_silent_outside_a_verbose_fit(capsys):
    assert list(steps(5)) == list(range(5))
    with progress("x", 0):
        assert list(steps(3)) == [0, 1, 2]
    assert capsys.readouterr().out == ""
    with progress("x", 1):  # level 1: phases only, no step lines
        assert len(list(steps(1000))) == 1000
    assert capsys.readouterr().out == ""
    with progress("x", 2):
        assert len(list(steps(1000))) == 1000
    assert len(capsys.readouterr().out.splitlines()) == MAX_STEP_LINES


@pytest.mark.parametrize("make, task", ESTIMATORS)
def test_verbose_levels_differ_as_in_scikit_learn(capsys, make, task):
    """verbose=1 prints the phases; verbose=2 adds the step lines of the iterative solvers."""
    one = _output(capsys, lambda: make(verbose=1), task, seed=0).splitlines()
    two = _output(capsys, lambda: make(verbose=2), task, seed=0).splitlines()
    assert not any(re.search(r"step \d+ of \d+", line) for line in one)
    assert [line for line in two if not re.search(r"\] step \d+ of \d+,", line)] == one
    assert len(two) > len(one)


def test_verbose_search_output_depends_on_public_sizes_only(capsys):
    def run(seed):
        capsys.readouterr()
        DPGridSearchCV(DPLogisticRegression(max_iter=20), {"C": [0.1, 1.0, 10.0]}, epsilon=2.0, delta=1e-5,
                       selection="exhaustive", random_state=0, verbose=1).fit(*_data(seed, "binary"))
        return TIMING.sub("elapsed <t> s", capsys.readouterr().out)

    first, second = run(0), run(1)
    assert first == second
    assert "run 3 of 3" in first and len(first.splitlines()) <= MAX_STEP_LINES + 2


@pytest.mark.parametrize("selection", ["repeat_and_select", "exhaustive"])
def test_inner_fits_of_a_search_print_nothing(capsys, selection):
    # the number of internal fits of repeat-and-select is secret (docs/model_selection.md)
    X, y = _data(0, "binary")
    DPGridSearchCV(DPLogisticRegression(max_iter=20, verbose=1), {"C": [0.1, 1.0, 10.0]}, epsilon=2.0,
                   delta=1e-5, selection=selection, random_state=0).fit(X, y)
    assert capsys.readouterr().out == ""


def test_online_verbose_prints_public_positions_only(capsys):
    from dp_sklearn import DPOnlineRegressor

    outputs = []
    for seed in (0, 1):
        rng = np.random.default_rng(seed)
        X, y = rng.normal(size=(300, 3)) * (seed + 1), rng.normal(size=300) * 10 ** seed
        reg = DPOnlineRegressor(bounds_y=(-5, 5), horizon=600, random_state=seed, verbose=1)
        reg.partial_fit(X, y)
        reg.partial_fit(X, y)
        outputs.append(re.sub(r"elapsed [0-9.]+ s", "elapsed T s", capsys.readouterr().out))
    assert outputs[0] == outputs[1]
    assert "records 301 to 600 of the stream" in outputs[0]
    assert 0 < outputs[0].count("\n") <= 2 * (MAX_STEP_LINES + 1)
