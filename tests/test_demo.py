"""The main job runs end to end and reports the numbers it promises."""

import numpy as np

from dp_sklearn import demo


def test_demo_reports_tables_and_plot(tmp_path, capsys):
    png = tmp_path / "demo.png"
    assert demo.main(["--seeds", "2", "--plot", str(png)]) == 0
    captured = capsys.readouterr()
    out, err = captured.out, captured.err
    assert "sklearn Ridge (non-private)" in out and "0.392" in out
    assert "trivial (majority class)" in out and "0.632" in out
    assert "DPLogisticRegression solver='auto' (default)" in out and "DPRidge solver='auto' (default)" in out
    assert "(any epsilon)" not in out and "after a NON-private StandardScaler" in out and "(epsilon=1 only)" in out
    assert "privacy cost of the whole search: 10 private fits" in out and "NOT private" in out
    assert f"plot written to {png}" in out  # the absolute path
    assert png.stat().st_size > 10_000
    assert "\r" not in err  # not a terminal (captured): plain progress lines, no carriage returns


def test_demo_configs_cover_every_registered_solver():
    labels = [label for label, _ in demo._configs("regression")] + [l for l, _ in demo._configs("classification")]
    for solver in ["noisy_gd", "output_perturbation", "objective_perturbation", "frank_wolfe"]:
        assert any(solver in label for label in labels)
    rows = demo._evaluate("classification", demo._split(*__import__("sklearn.datasets").datasets.load_breast_cancer(
        return_X_y=True)), 2, (1.0,), lambda: None)
    accs = [r[1.0].mean() for r in rows if r.get(1.0) is not None]
    assert len(accs) >= 5 and max(accs) > 0.85 and np.all(np.asarray(accs) > 0.3)
