"""What every per-example GLM loss declares and computes, and the registry of losses.

A loss is phi(<x, theta>, y) with public constants declared as class attributes (see
:class:`GLMLoss`); a solver lists the properties it requires (:data:`PROPERTIES`) and
:func:`check_attrs` refuses a loss that lacks one. Coefficients are a flat vector
``theta`` of size ``n_features * n_outputs`` (feature-major for several outputs). Every
method is vectorized and works for dense arrays and scipy.sparse CSR matrices.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["GLMLoss", "LOSSES", "PROPERTIES", "TYPICAL_MARGIN", "check_attrs", "clip_bounds", "register_loss",
           "typical_share"]

#: the losses by name (an estimator's ``_loss_names`` refer to them); filled by :func:`register_loss`
LOSSES: dict = {}


def register_loss(cls):
    """Class decorator: register the loss under its ``name``."""
    LOSSES[cls.name] = cls
    return cls


#: the properties a loss may declare and a solver may require (see :func:`check_attrs`)
PROPERTIES = {
    "smooth": "phi is differentiable with phi'' <= ``curvature`` (gradient steps of size 1 / curvature)",
    "twice_differentiable": "phi'' exists everywhere (objective perturbation's Jacobian argument)",
    "bounded_derivative": "sup |phi'| over all margins is finite (``lipschitz``); else a bounded domain is needed",
    "gram_path": "the objective is quadratic: sufficient statistics X^T X, X^T y determine it (closed form)",
    "bounded_value": "sup phi over a margin ball is known (``max_value``), as the exact samplers need",
    "single_output": "one coefficient vector (n_outputs = 1)",
    "value_at_zero": "a public bound on the mean loss at theta = 0 (``value_at_zero``)",
}


def check_attrs(loss, required, solver):
    """Raise a ValueError naming ``solver`` and every property of ``required`` that ``loss`` lacks.

    The declared counterpart of skglm's ``check_attrs``: a solver lists the properties
    its privacy proof or its algorithm needs (:data:`PROPERTIES`), a loss declares the
    ones it has (:meth:`GLMLoss.properties`); nothing branches on a loss's name.

    Raises
    ------
    ValueError
        If a required property is missing.
    """
    missing = [r for r in required if r not in loss.properties()]
    if missing:
        raise ValueError(f"solver={solver!r} requires a loss that is {', '.join(missing)} "
                         f"({'; '.join(PROPERTIES[m] for m in missing)}); the {loss.name} loss is not.")


class GLMLoss:
    """Shared plumbing: margins, gradients and per-example gradient norms, and the declarations.

    Declarations (class attributes, public constants of the loss in normalized units):
    ``curvature`` (sup phi'', the smoothness constant; ``inf`` if not smooth),
    ``lipschitz`` (sup |phi'| over every margin; ``None`` when it grows with the margin and
    a bounded domain is needed), ``needs_target_bound`` (phi' depends on an unbounded
    target, so targets are mapped from a public ``bounds_y``), ``gram_path`` (quadratic:
    closed form and sufficient statistics), ``twice_differentiable``, ``value_at_zero``
    (a public bound on the mean loss at theta = 0), ``typical_curvature_share`` (share of
    the curvature bound in effect near a fitted model), ``clip_scale`` (multiplier of the
    default clip fraction).
    """

    n_outputs = 1
    #: data-independent prior scale of ||theta||_2 (normalized units) used by the
    #: solvers that must pick a regularization strength before seeing the data
    prior_coef_norm = 1.0
    #: upper bound on phi'' (the per-example Hessian is phi'' x x^T, of rank ``hessian_rank``)
    curvature = 1.0
    hessian_rank = 1
    #: sup |phi'| over every margin and target (None: grows with the margin)
    lipschitz = None
    needs_target_bound = False
    gram_path = False
    twice_differentiable = True
    #: public bound on the mean loss at theta = 0 (None: unknown)
    value_at_zero = None
    typical_curvature_share = 1.0
    #: multiplier of ``CLIP_FRACTION`` in the default clip norm of the gradient solvers
    #: (:func:`dp_sklearn.solvers._common.default_clip_norm`)
    clip_scale = 1.0

    #: one coefficient vector (False: one per class)
    single_output = True

    @classmethod
    def properties(cls):
        """The set of :data:`PROPERTIES` this loss has (read from its class declarations)."""
        has = {
            "smooth": bool(np.isfinite(cls.curvature)),
            "twice_differentiable": cls.twice_differentiable,
            "bounded_derivative": cls.lipschitz is not None,
            "gram_path": cls.gram_path,
            "bounded_value": cls.max_value is not GLMLoss.max_value,
            "single_output": cls.single_output,
            "value_at_zero": cls.value_at_zero is not None,
        }
        return {k for k, v in has.items() if v}

    @property
    def step_curvature(self):
        """Curvature of the mean loss used for step sizes (utility only; never in a privacy proof)."""
        return self.curvature

    @property
    def needs_bounded_domain(self):
        """Whether a mechanism needs a bounded feasible set to bound the gradient (phi' unbounded)."""
        return self.lipschitz is None

    def derivative_bound(self, margin_bound=None):
        """sup |phi'(z, y)| (l2 over outputs) over |z| <= margin_bound (public)."""
        return float(self.lipschitz)

    def derivative_linf_bound(self, margin_bound=None):
        """sup over outputs k of |phi'_k(z, y)| over |z| <= margin_bound (public)."""
        return self.derivative_bound(margin_bound)

    def max_value(self, margin_bound):
        """sup phi(z, y) over |z| <= margin_bound (public); declared by the losses that know it."""
        raise NotImplementedError(f"the {self.name} loss does not declare max_value.")

    def implicit_margin(self, xv, y, k, a, bound):
        """The root s of s k + a clamp(phi'(s, y), -bound, bound) = xv (increasing in s), or None.

        Losses with a closed form return it; None makes the caller find the root numerically.
        """
        return None

    def margins(self, X, theta):
        return X @ theta.reshape(X.shape[1], -1) if self.n_outputs > 1 else X @ theta

    def value(self, X, y, theta):
        """Mean loss (1/n) sum_i phi(<x_i, theta>, y_i)."""
        return float(np.mean(self.phi(self.margins(X, theta), y)))

    def gradient(self, X, y, theta):
        """Gradient of the mean loss, flat, shape ``theta.shape``."""
        d = self.dphi(self.margins(X, theta), y)
        return np.asarray(X.T @ d).ravel() / X.shape[0]

    def value_and_gradient(self, X, y, theta):
        z = self.margins(X, theta)
        d = self.dphi(z, y)
        return float(np.mean(self.phi(z, y))), np.asarray(X.T @ d).ravel() / X.shape[0]

    def derivative_norms(self, X, y, theta):
        """Per-example ||phi'(z_i, y_i)||_2 (a scalar per row; l2 over classes for multinomial)."""
        d = self.dphi(self.margins(X, theta), y)
        return np.abs(d) if d.ndim == 1 else np.linalg.norm(d, axis=1)

    def dphi_inplace(self, z, y):
        """phi'(z, y), overwriting the margins ``z`` where the loss allows (same values as :meth:`dphi`)."""
        return self.dphi(z, y)

    def clipped_gradient_sum(self, X, y, theta, row_norms, clip_norm, bounds=None):
        """sum_i clip(grad l(theta; x_i, y_i), clip_norm), without forming per-example gradients.

        The per-example gradient is phi'_i x_i (an outer product for multinomial), whose
        l2 (Frobenius) norm is ||phi'_i|| * ||x_i||; clipping rescales phi'_i by
        ``min(1, clip_norm / (||phi'_i|| ||x_i||))``. For a scalar phi'_i that is
        ``phi'_i`` clipped to ``[-b_i, b_i]``, ``b_i = clip_norm / ||x_i||``
        (:func:`clip_bounds`; ``bounds``, if given, is its value for these rows, computed
        once per fit): one pass over the n derivatives. Besides the two products, one
        step allocates one n-sized buffer (the margins are overwritten in place).
        """
        d = self.dphi_inplace(self.margins(X, theta), y)
        if d.ndim == 1:
            lo, hi = clip_bounds(row_norms, clip_norm) if bounds is None else bounds
            np.minimum(d, hi, out=d)  # two ufunc passes (np.clip with array bounds is slower)
            np.maximum(d, lo, out=d)
            return np.asarray(X.T @ d).ravel()
        scale = np.linalg.norm(d, axis=1)
        scale *= row_norms
        np.maximum(scale, 1e-300, out=scale)
        np.divide(clip_norm, scale, out=scale)
        np.minimum(scale, 1.0, out=scale)
        d *= scale[:, None]
        return np.asarray(X.T @ d).ravel()

    def hessian_vector(self, X, y, theta, v):
        """Hessian of the mean loss applied to ``v`` (for Newton-CG polishing)."""
        z = self.margins(X, theta)
        xv = self.margins(X, v)
        hv = self.d2phi_times(z, y, xv)
        return np.asarray(X.T @ hv).ravel() / X.shape[0]


def clip_bounds(row_norms, clip_norm):
    """``(-b, b)`` with ``b_i = clip_norm / ||x_i||`` (inf for a zero row): the range a scalar phi'_i
    is clipped to so that ``||phi'_i x_i|| <= clip_norm`` (``GLMLoss.clipped_gradient_sum``)."""
    with np.errstate(divide="ignore"):
        hi = np.divide(clip_norm, row_norms)
    return np.negative(hi), hi


#: margin of a fitted classifier at which its curvature is measured (probability 0.95)
TYPICAL_MARGIN = 3.0


def typical_share():
    """sigma'(m) / sigma'(0) at the typical margin m = 3 (0.18): the logistic curvature bound
    1/4 holds at zero margin only."""
    e = math.exp(-TYPICAL_MARGIN)
    return 4.0 * e / (1.0 + e) ** 2


