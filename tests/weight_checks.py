"""scikit-learn's sample_weight and class_weight checks that a private fit cannot pass, by reason (shared by the check suites)."""

from dp_sklearn.solvers import SOLVERS

#: the refusing solvers: they release sufficient statistics or sample the unweighted objective exactly
_REFUSING = {name for name, spec in SOLVERS.items() if {"gram_path", "bounded_value"} & set(spec.requires)}


def sample_weight_failures(estimator):
    """``{check: reason}`` for the sample_weight and class_weight checks ``estimator`` cannot pass."""
    params = estimator.get_params()
    out = {}
    if "class_weight" in params:  # compares "balanced" with the dict of the exact balanced weights
        out["check_class_weight_balanced_linear_classifier"] = "balanced weights come from private counts"
    if "max_sample_weight" not in params:
        return out
    out.update({
        "check_sample_weight_equivalence_on_dense_data": "a weighted private fit and a fit of repeated records are "
                                                         "different releases (n and the noise differ)",
        "check_sample_weight_equivalence_on_sparse_data": "a weighted private fit and a fit of repeated records are "
                                                          "different releases (n and the noise differ)",
        "check_sample_weights_list": "weights 3 exceed the default public bound max_sample_weight=1: refused",
        "check_sample_weights_not_overwritten": "a weight 10 exceeds the default public bound max_sample_weight=1: "
                                                "refused",
    })
    refusal = (f"solver={params['solver']!r} refuses sample_weight" if params.get("solver") in _REFUSING
               else "update='implicit' refuses sample_weight" if params.get("update") == "implicit" else None)
    if refusal:
        for check in ("check_sample_weights_shape", "check_sample_weights_pandas_series",
                      "check_sample_weights_not_an_array"):
            out[check] = refusal
    return out
