"""Feasible sets: projection, linear minimization oracle, hard thresholding (SPEC Part 4)."""

from __future__ import annotations

import numpy as np

__all__ = ["L1Ball", "L2Ball", "Unconstrained", "project_l1_ball"]


def project_l1_ball(v, radius):
    """Euclidean projection onto {w : ||w||_1 <= radius}.

    Sort-based algorithm of Duchi, Shalev-Shwartz, Singer & Chandra, "Efficient
    projections onto the l1-ball for learning in high dimensions", ICML 2008, Fig. 1.
    """
    a = np.abs(v)
    if a.sum() <= radius:
        return v.copy()
    u = np.sort(a)[::-1]
    css = np.cumsum(u)
    k = np.arange(1, u.size + 1)
    rho = np.nonzero(u * k > css - radius)[0][-1]
    tau = (css[rho] - radius) / (rho + 1.0)
    return np.sign(v) * np.maximum(a - tau, 0.0)


class Unconstrained:
    """R^d (used with an explicit l2 penalty)."""

    name = "none"
    radius = np.inf

    def project(self, v):
        return v

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
