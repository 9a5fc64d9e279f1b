"""The "which estimator for which task" table, generated from the estimators' declarations and the registry.

Nothing here is written by hand per estimator: the task comes from scikit-learn's tags,
the loss and its properties from ``_loss_names`` and :data:`dp_sklearn._losses.LOSSES`,
the penalty or feasible set from ``_constraint_name`` (or the estimator's
``_penalty_description``), the solvers from
``_allowed_solvers()`` (the registry, read when the table is built) and the default
from the constructor. ``docs/conf.py`` writes the table into the user guide at build
time, so it cannot drift from the code.
"""

from __future__ import annotations

import inspect

from sklearn.base import is_classifier

from .._losses import LOSSES

__all__ = ["estimator_rows", "estimator_table_markdown"]

#: plain-language name of each penalty or feasible set
_PENALTY = {"none": "l2 penalty (or none)", "l1": "l1 ball", "l0": "l0 (at most s features)",
            "l1_penalty": "l1 penalty (+ l2 in the elastic net)"}


def _public_models():
    import dp_sklearn

    out = []
    for name in dp_sklearn.__all__:
        obj = getattr(dp_sklearn, name)
        if inspect.isclass(obj) and name.startswith("DP") and hasattr(obj, "fit") and (
                hasattr(obj, "_allowed_solvers") or hasattr(obj, "partial_fit")):
            out.append(obj)
    return out


def estimator_rows():
    """One dict per public model: estimator, task, loss, penalty, target_bound, solvers, default.

    Returns
    -------
    rows : list of dict
        In the order of ``dp_sklearn.__all__``.
    """
    rows = []
    for cls in _public_models():
        est = cls()
        task = "classification" if is_classifier(est) else "regression"
        if hasattr(est, "_allowed_solvers"):
            losses = est._loss_names
            penalty = getattr(est, "_penalty_description", None) or _PENALTY.get(est._constraint_name(),
                                                                                 est._constraint_name())
            solvers = est._allowed_solvers()
            default = est._resolved_solver()
        else:  # the online models: one mechanism, a stream of releases
            losses = ("logistic", "multinomial") if task == "classification" else ("squared",)
            penalty, solvers, default = "l2 penalty (online)", ["online (partial_fit)"], "online (partial_fit)"
        bound = any(LOSSES[loss].needs_target_bound for loss in losses if loss in LOSSES)
        rows.append({"estimator": cls.__name__, "task": task, "loss": ", ".join(losses), "penalty": penalty,
                     "target_bound": "bounds_y" if bound else "none needed", "solvers": list(solvers),
                     "default": default})
    return rows


def estimator_table_markdown():
    """The rows of :func:`estimator_rows` as a Markdown table (the user guide's include).

    Returns
    -------
    table : str
    """
    lines = ["| estimator | task | loss | penalty / set | target bound | default solver | solvers |",
             "|---|---|---|---|---|---|---|"]
    for r in estimator_rows():
        lines.append(f"| `{r['estimator']}` | {r['task']} | {r['loss']} | {r['penalty']} | {r['target_bound']} "
                     f"| `{r['default']}` | {', '.join(f'`{s}`' for s in r['solvers'])} |")
    return "\n".join(lines) + "\n"
