"""Factories for the issue-21 Huber rows on the tabular suite (``benchmarks/tabular/run.py``).

Each is a fully private pipeline shaped as the suite's ``default_private`` (the private
``ColumnTransformer`` of DPStandardScaler on numeric columns and the public one-hot encoder on
categorical ones, the library's budget split), with the model swapped:

* ``huber_factory``: ``DPHuberRegressor()``, no target bound (all defaults);
* ``ridge_public_range_factory``: ``DPRidge(bounds_y=<range of the whole table>)``, the target
  range passed as if public (an oracle: the most favourable public range).

Command::

    python -m benchmarks.tabular.run --datasets diabetes,slid,computers,wage,diamonds --epsilons 1 --no-default \
        --factory benchmarks.huber_factories:huber_factory \
        --factory benchmarks.huber_factories:ridge_public_range_factory

(``--datasets diabetes,slid,computers,wage,diamonds`` for the tuning half's regression sets,
``credit,medexp,males,star,cps`` for the checking half's; ``--half`` would include the
classification sets.) The Huber section of ``benchmarks/results/family_issue21.md`` is then
generated from the two runs' ``--out`` prefixes::

    python -m benchmarks.huber_factories --run "tuning=<prefix>=<command>" --run "checking=<prefix>=<command>"

The tuning grid of the README's evidence rows is :func:`variant` (``huber_t3_c4`` and the others).
"""

from __future__ import annotations

from functools import lru_cache

from benchmarks.tabular import datasets as D
from benchmarks.tabular.run import DELTA, column_transformer


@lru_cache(maxsize=None)
def public_range(name):
    """The target range of the whole table (train and test), passed as if public."""
    _, y, _ = D.load(name)
    return float(min(y)), float(max(y))


def _pipeline(schema, model, epsilon, delta=DELTA):
    from dp_sklearn import DPStandardScaler, make_private_pipeline

    return make_private_pipeline(column_transformer(schema, DPStandardScaler()), model, epsilon=epsilon, delta=delta)


def _check_task(task):
    if task != "regression":
        raise ValueError(f"the Huber rows are for regression sets (pass --datasets), got a {task} set")


def huber_factory(schema, task, epsilon):
    from dp_sklearn import DPHuberRegressor

    _check_task(task)
    return _pipeline(schema, DPHuberRegressor(), epsilon)


def ridge_public_range_factory(schema, task, epsilon):
    from dp_sklearn import DPRidge

    _check_task(task)
    return _pipeline(schema, DPRidge(bounds_y=public_range(schema.name)), epsilon)


# ----------------------------------------------------------------------------- tuning grid

def variant(**constants):
    """``DPHuberRegressor`` with module constants of ``dp_sklearn.linear_model._huber`` (``AUTO_THRESHOLD``,
    ``PREDICT_COVER``, ``Y_SHARE``) set to ``constants`` while it plans and fits (one fit at a time per
    process, as the suite runs them), then restored: the tuning grid of the README's evidence rows."""
    import dp_sklearn.linear_model._huber as H

    class Variant(H.DPHuberRegressor):
        def _with(self, func, *args):
            old = {k: getattr(H, k) for k in constants}
            for k, v in constants.items():
                setattr(H, k, v)
            try:
                return func(*args)
            finally:
                for k, v in old.items():
                    setattr(H, k, v)

        def _encode_targets(self, y):
            return self._with(super()._encode_targets, y)

        def _auto_share(self, name):
            return self._with(super()._auto_share, name)

        def _draw_auto(self, X, y, rng):
            return self._with(super()._draw_auto, X, y, rng)

        def _transform_targets(self, y, rng):
            return self._with(super()._transform_targets, y, rng)

        def _set_coef(self, coef, intercept, target_map):
            return self._with(super()._set_coef, coef, intercept, target_map)

    Variant.__name__ = Variant.__qualname__ = "DPHuberRegressor"

    def factory(schema, task, epsilon):
        _check_task(task)
        return _pipeline(schema, Variant(), epsilon)
    return factory


#: the grid: threshold (units of the private scale) x prediction cover (scales either side)
huber_t135_c2 = variant(AUTO_THRESHOLD=1.35, PREDICT_COVER=2.0)
huber_t135_c4 = variant(AUTO_THRESHOLD=1.35, PREDICT_COVER=4.0)
huber_t135_cinf = variant(AUTO_THRESHOLD=1.35, PREDICT_COVER=float("inf"))
huber_t2_c2 = variant(AUTO_THRESHOLD=2.0, PREDICT_COVER=2.0)
huber_t3_c2 = variant(AUTO_THRESHOLD=3.0, PREDICT_COVER=2.0)
huber_t3_c3 = variant(AUTO_THRESHOLD=3.0, PREDICT_COVER=3.0)
huber_t3_c4 = variant(AUTO_THRESHOLD=3.0, PREDICT_COVER=4.0)
huber_t4_c4 = variant(AUTO_THRESHOLD=4.0, PREDICT_COVER=4.0)
huber_t5_c3 = variant(AUTO_THRESHOLD=5.0, PREDICT_COVER=3.0)


# ----------------------------------------------------------------------------- report

SECTION = "## DPHuberRegressor (no target bound) vs DPRidge(bounds_y=range)"


def report(runs, commands):
    """The Huber section of ``benchmarks/results/family_issue21.md`` from suite runs (``<out>.csv``)."""
    import numpy as np
    import pandas as pd

    lines = [SECTION, "",
             "Generated by `python -m benchmarks.huber_factories` from the suite runs below (this tree's "
             "`benchmarks/tabular/run.py`; fully private pipelines, DPStandardScaler + public one-hot, the "
             "library's budget split). `huber` is `DPHuberRegressor()` with no target bound; `ridge_range` is "
             "`DPRidge(bounds_y=<range of the whole table>)`, an oracle public range. Defaults chosen on the "
             "tuning half (`benchmarks/tabular/README.md`, \"Evidence for defaults\"); the checking half was "
             "run once, after.", ""]
    for (half, prefix), command in zip(runs, commands):
        df = pd.read_csv(f"{prefix}.csv")
        ref = df[df.config == "sklearn"].groupby("dataset").score.mean()
        priv = df[df.config.isin(["huber_factory", "ridge_public_range_factory"])]
        mean = priv.groupby(["dataset", "config", "epsilon"]).score.mean()
        worst = priv.groupby(["dataset", "config", "epsilon"]).score.min()
        eps = sorted(priv.epsilon.unique())
        seeds = priv.seed.nunique()
        lines += [f"### {half} half", "", f"    {command}", "",
                  f"Normalized test R^2 at epsilon 1 (1 = scikit-learn Ridge, 0 = mean predictor; mean of {seeds} "
                  "seeds) and the worst test R^2 of any seed, huber / ridge_range:", ""]
        head = ["dataset", "n_train", "ref R^2", "huber", "ridge_range", "huber - ridge"] + [
            f"worst eps={e:g}" for e in eps]
        lines += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        gaps = []
        for name in dict.fromkeys(priv.dataset):
            h, r = (mean[(name, c, 1.0)] / ref[name] for c in ("huber_factory", "ridge_public_range_factory"))
            gaps.append(h - r)
            cells = [f"{worst[(name, 'huber_factory', e)]:.3f} / {worst[(name, 'ridge_public_range_factory', e)]:.3f}"
                     for e in eps]
            n = int(df[df.dataset == name].n_train.iloc[0])
            lines.append(f"| {name} | {n:,} | {ref[name]:.3f} | {h:.3f} | {r:.3f} | {h - r:+.3f} | " + " | ".join(cells) + " |")
        hw = priv[priv.config == "huber_factory"].groupby("epsilon").score.min()
        names = list(dict.fromkeys(priv.dataset))
        short = [f"{n} ({g:+.3f})" for n, g in zip(names, gaps) if g < -0.05]
        lines += ["", f"Worst huber fit over the {half} sets: " + ", ".join(
            f"eps {e:g}: {hw[e]:.3f}" for e in eps) + f". Smallest huber - ridge gap at eps 1: {min(gaps):+.3f}.",
            "", f"Acceptance at eps 1 ({half} half): never below R^2 -1: "
            f"{'met' if hw[1.0] >= -1 else 'NOT met'} (worst {hw[1.0]:.3f}); within 0.05 normalized of ridge_range "
            f"on every set: {'met' if not short else 'NOT met, ' + ', '.join(short)}.", ""]
    return "\n".join(lines)


def main(argv=None):
    """Replace the Huber section of the results file with the report of the given runs."""
    import argparse
    from pathlib import Path

    parser = argparse.ArgumentParser()
    parser.add_argument("--run", action="append", required=True, help="half=prefix=command (a suite run's --out)")
    parser.add_argument("--out", default="benchmarks/results/family_issue21.md")
    args = parser.parse_args(argv)
    runs, commands = [], []
    for spec in args.run:
        half, prefix, command = spec.split("=", 2)
        runs.append((half, prefix))
        commands.append(command)
    path = Path(args.out)
    text = path.read_text()
    start = text.index(SECTION)
    end = text.index("\n## ", start + len(SECTION))
    path.write_text(text[:start] + report(runs, commands) + text[end:])


if __name__ == "__main__":
    main()
