"""Feasible sets: projection, linear minimization oracle, hard thresholding.

Also :func:`bounded_domain`, the one place that decides which l2 ball replaces
:class:`Unconstrained` where a mechanism needs a bounded domain.
"""

from __future__ import annotations

import numbers

import numpy as np

__all__ = ["L0Set", "L1Ball", "L1Penalty", "L2Ball", "Unconstrained", "SQUARED_BALL_SCALE", "bounded_domain", "project_l1_ball",
           "l1_threshold"]


def project_l1_ball(v, radius):
    """Euclidean projection onto {w : ||w||_1 <= radius}.

    ``sign(v) max(|v| - tau, 0)`` with the threshold tau of :func:`l1_threshold`
    (Duchi, Shalev-Shwartz, Singer & Chandra, "Efficient projections onto the l1-ball
    for learning in high dimensions", ICML 2008).
    """
    a = np.abs(v)
    if a.sum() <= radius:
        return v.copy()
    return np.sign(v) * np.maximum(a - l1_threshold(a, radius), 0.0)


def l1_threshold(a, radius, max_rounds=30):
    """The tau > 0 with ``sum(max(a - tau, 0)) = radius``, for ``a >= 0`` with ``sum(a) > radius``.

    Michelot's pivot iteration (J. Optim. Theory Appl. 1986; Condat, Math. Program.
    2016, Algorithm 2): tau_0 = (sum(a) - radius) / len(a) is a lower bound; drop the
    entries at or below the current bound and recompute it on the rest, until none is
    dropped. The bound increases to the exact tau; each round is O(remaining), and the
    rounds shrink the candidates quickly (a few rounds instead of a full sort). After
    ``max_rounds`` the remaining candidates are finished by the sort-based algorithm of
    Duchi et al. (Fig. 1), which gives the same tau.
    """
    w = a
    tau = (w.sum() - radius) / w.size
    for _ in range(max_rounds):
        keep = w[w > tau]
        if keep.size == w.size:
            return tau
        w = keep
        tau = (w.sum() - radius) / w.size
    u = np.sort(w)[::-1]
    css = np.cumsum(u)
    rho = np.nonzero(u * np.arange(1, u.size + 1) > css - radius)[0][-1]
    return (css[rho] - radius) / (rho + 1.0)


class Unconstrained:
    """R^d (used with an explicit l2 penalty)."""

    name = "none"
    radius = np.inf

    def project(self, v):
        return v

    def prox(self, v, step):
        """Proximal map of the indicator: the projection (for every step size)."""
        return self.project(v)

    def l2_radius(self):
        return np.inf


class L2Ball:
    """{theta : ||theta||_2 <= radius}."""

    name = "l2"

    def __init__(self, radius):
        self.radius = float(radius)

    def project(self, v):
        nrm = np.linalg.norm(v)
        return v if nrm <= self.radius else v * (self.radius / nrm)

    def prox(self, v, step):
        """Proximal map of the indicator: the projection."""
        return self.project(v)

    def lmo(self, g):
        """argmin_{s in C} <s, g> = -radius g / ||g||."""
        nrm = np.linalg.norm(g)
        return np.zeros_like(g) if nrm == 0 else -self.radius * g / nrm

    def l2_radius(self):
        return self.radius

    def margin_bound(self, x_norm, x_inf):
        """sup |<x, theta>| over theta in C and ||x||_2 <= x_norm."""
        return self.radius * x_norm


class L1Ball:
    """{theta : ||theta||_1 <= radius}, the convex hull of the 2d vertices +-radius e_j."""

    name = "l1"

    def __init__(self, radius):
        self.radius = float(radius)

    def project(self, v):
        return project_l1_ball(v, self.radius)

    def prox(self, v, step):
        """Proximal map of the indicator: the projection."""
        return self.project(v)

    def lmo(self, g):
        """argmin_{s in C} <s, g> = -radius sign(g_j) e_j with j = argmax |g_j|."""
        j = int(np.argmax(np.abs(g)))
        s = np.zeros_like(g)
        s[j] = -self.radius * np.sign(g[j]) if g[j] != 0 else self.radius
        return s

    def l2_radius(self):
        return self.radius

    def margin_bound(self, x_norm, x_inf):
        """sup |<x, theta>| over ||theta||_1 <= radius and ||x||_inf <= x_inf (Holder)."""
        return self.radius * x_inf


class L0Set:
    """The l0 "ball" {theta : ||theta_head||_0 <= s}, with free trailing coordinates.

    A non-convex feasible set: its Euclidean projection is hard thresholding H_s
    (Wang & Gu 2019, eq. 4.1): keep the ``n_nonzero_coefs`` entries of largest
    magnitude among the first ``dim - n_free`` coordinates and zero the others.

    The last ``n_free`` coordinates are never thresholded and do not count toward s.
    dp_sklearn puts the intercept in the last column of the normalized design
    (:func:`dp_sklearn._data.normalize_X`), so ``n_free=1`` when ``fit_intercept``:
    ``n_nonzero_coefs`` counts features, as in scikit-learn's
    :class:`~sklearn.linear_model.OrthogonalMatchingPursuit`, where the intercept is
    not one of the ``n_nonzero_coefs`` atoms.

    Parameters
    ----------
    n_nonzero_coefs : int
        Sparsity level s (>= 1).
    n_free : int, default=0
        Number of trailing coordinates that are kept unconditionally.
    """

    name = "l0"
    radius = np.inf

    def __init__(self, n_nonzero_coefs, n_free=0):
        if not isinstance(n_nonzero_coefs, numbers.Integral) or n_nonzero_coefs < 1:
            raise ValueError(f"n_nonzero_coefs must be an int >= 1, got {n_nonzero_coefs!r}.")
        self.n_nonzero_coefs = int(n_nonzero_coefs)
        self.n_free = int(n_free)

    def n_head(self, dim):
        """Number of thresholded coordinates."""
        return dim - self.n_free

    def support(self, v):
        """Indices of the kept head coordinates (the s largest magnitudes), sorted."""
        m = v.size - self.n_free
        s = self.n_nonzero_coefs
        if s >= m:
            return np.arange(m)
        idx = np.argpartition(np.abs(v[:m]), m - s)[m - s:]
        return np.sort(idx)

    def hard_threshold(self, v):
        """H_s(v): zero every head coordinate outside the top-s magnitudes (O(dim))."""
        m = v.size - self.n_free
        if self.n_nonzero_coefs >= m:
            return v.copy()
        out = np.zeros_like(v)
        idx = self.support(v)
        out[idx] = v[idx]
        out[m:] = v[m:]
        return out

    project = hard_threshold

    def prox(self, v, step):
        """The (non-convex) projection H_s."""
        return self.hard_threshold(v)

    def l2_radius(self):
        return np.inf


class L1Penalty:
    """The penalty ``strength * ||theta_head||_1`` (not a set): its proximal map is soft thresholding.

    The last ``n_free`` coordinates (the intercept) are not penalized. ``strength`` is in
    normalized units and may be set after the targets' public scale is known (the
    estimator sets it before the mechanism runs; the prox is post-processing of each
    noisy step, so it never enters the privacy proof).

    Parameters
    ----------
    strength : float
        lambda >= 0.
    n_free : int, default=0
        Number of trailing unpenalized coordinates.
    """

    name = "l1_penalty"
    radius = np.inf
    is_penalty = True

    def __init__(self, strength, n_free=0):
        self.strength = float(strength)
        self.n_free = int(n_free)

    def prox(self, v, step):
        """argmin_u ||u - v||^2 / 2 + step * strength * ||u_head||_1 (soft thresholding)."""
        m = v.size - self.n_free
        out = v.copy()
        out[:m] = np.sign(v[:m]) * np.maximum(np.abs(v[:m]) - step * self.strength, 0.0)
        return out

    def project(self, v):
        return v

    def l2_radius(self):
        return np.inf


#: radius of the l2 ball of the squared loss, in units of 1 / x_norm (see :func:`bounded_domain`)
SQUARED_BALL_SCALE = 2.0


def bounded_domain(constraint, loss, x_norm, radius=None):
    """The feasible set a mechanism uses when it needs a bounded one (the one place this is decided).

    Parameters
    ----------
    constraint : feasible set
        Returned unchanged unless it is :class:`Unconstrained` (an estimator with an
        explicit l2 penalty).
    loss : loss object from :mod:`dp_sklearn._losses`
        Its declaration ``needs_bounded_domain`` (an unbounded derivative) decides.
    x_norm : float
        Public bound on the l2 norm of a normalized row.
    radius : float, default=None
        A public radius (a hyperparameter, e.g. ``DPLogisticRegression(radius=...)`` or
        objective perturbation's ``coef_radius``).

    Returns
    -------
    constraint : feasible set
        ``L2Ball(radius)`` when ``radius`` is given; for a loss with an unbounded derivative (the squared loss) without a
        radius, ``L2Ball(SQUARED_BALL_SCALE / x_norm)`` with ``SQUARED_BALL_SCALE = 2``:
        every row of norm at most half the public bound then predicts inside the
        public target range (targets are mapped to [-1, 1]), which leaves room for
        rows well inside the bound (e.g. min-max scaled data) while stopping
        noise-driven drift; predictions are clipped to ``bounds_y`` afterwards
        (post-processing). Otherwise ``constraint`` unchanged (the logistic losses
        have bounded gradients and need no ball). Data-independent.
    """
    if not isinstance(constraint, Unconstrained):
        return constraint
    if radius is not None:
        return L2Ball(radius)
    if loss.needs_bounded_domain:
        return L2Ball(SQUARED_BALL_SCALE / x_norm)
    return constraint
