"""Private online learning whose kept state is itself a release (Thakurta 2013, Chapter 5).

Source: A. G. Thakurta, PhD dissertation (Penn State, 2013), Chapter 5 (with Jain, Kothari
and Thakurta, COLT 2012): the POCP framework (Algorithm 5.1) instantiated with GIGA,
projected online gradient descent (PGIGA, Algorithm 5.3), and the one-pass offline learner
POffL (Algorithm 5.4: average the iterates, add Gaussian noise, project).

Model. Record t of the stream gives f_t(theta) = l_C(theta; x_t, y_t) + (Psi / 2)||theta||^2
on the l2 ball C of public radius R, where l_C is the GLM loss (squared or logistic) with
per-example gradients clipped to the public norm c. For a GLM, clipping replaces phi' by
clamp(phi', -c/||x||, c/||x||), still the derivative of a convex function whose curvature is
at most phi''_max, so l_C is convex and beta-smooth with beta = phi''_max x_norm^2. Records
are processed in batches of at most b (``batch_size``); a batch of b_k records that starts
at stream position t_k takes the projected step

    theta <- Proj_C((1 - eta_k Psi) theta - (eta_k / b_k) sum_{i in batch} grad l_C),
    eta_k = b_k / (Psi (t_k + b_k + s0)),   s0 = b beta / (2 Psi),

so 1 - eta_k Psi = (t_k + s0) / (t_k + b_k + s0) and eta_k <= 1 / (Psi (t + s0)) per record.

What is kept and why (the design decision). Algorithm 5.1 keeps the non-private iterate
between steps and only perturbs the outputs; an estimator that is pickled between
``partial_fit`` calls would then publish that iterate. Here nothing non-private survives a
call: each call starts from the previous *release* (zero for a new stream), runs the steps
over its records, and releases ``Proj_C(v + N(0, sigma^2 I))`` where v is the last iterate
(or, with ``average=True``, the record-weighted average of the call's iterates, as POffL
does). The release is what the estimator keeps; the generator is not kept either (P6).

Sensitivity (replace-one neighbours, docs/privacy.md P1), derived here:

1. Contraction. For a GLM, grad f(a) - grad f(a') = kappa x x^T (a - a') + Psi (a - a') with
   kappa in [0, phi''_max] (monotone, Lipschitz clamp of phi'), so the gradient-step map
   has Jacobian-like factor (1 - eta Psi) I - eta kappa x x^T (averaged over a batch), of
   norm <= max(1 - eta Psi, |1 - eta (Psi + beta)|) = 1 - eta Psi whenever
   eta (beta + 2 Psi) <= 2, which holds for every batch because b_k beta <= 2 Psi (t_k + s0).
   Projection onto C is non-expansive. A step from two points therefore shrinks their
   distance by (t_k + s0) / (t_k + b_k + s0).
2. One step. Replacing one record of a batch changes the clipped gradient sum by at most
   Delta_g = 2 min(c, x_norm sup|phi'|) (the Psi theta terms of both records cancel), hence
   the iterate after the batch by eta_k Delta_g / b_k = Delta_g / (Psi (t_k + b_k + s0)).
3. The factors telescope: after the stream position T (end of the call), the iterate moves by
   at most Delta_g / (Psi (T + s0)), whichever record of the call was replaced, given the
   call's (public) starting point. The record-weighted average of the call's iterates moves
   by at most (Delta_g / (Psi m)) sum_k b_k / (t_{k+1} + s0) (m records, t_{k+1} the end of
   batch k): a record of the first batch is the worst case.

Against PGIGA as printed (Algorithm 5.3, Lemma 5.12): its step 2 / (Psi t) moves the iterate by
eta 2 G = 4 G / (Psi t) when a gradient of norm at most G is replaced, twice the lemma's
2 G / (Psi t); and its burn-in of t_q = 2 L_G^2 / Psi^2 random outputs (quadratic in the
condition number) is replaced here by the offset s0 = b beta / (2 Psi) in the step size.

PIGD (Algorithm 5.2, ``update="implicit"``, one record per step): theta <- Proj_C(argmin
||theta - v||^2 / 2 + eta_t f_t(theta)) with eta_t = 1 / (Psi t), t the record's stream
position. The proximal map of the (eta Psi)-strongly convex eta f_t is 1 / (1 + eta Psi) =
t / (t + 1) Lipschitz, and (Lemma 5.9's argument, with the loss alone since the ridge terms
cancel) a replaced record moves it by at most eta Delta_g / (1 + eta Psi) =
Delta_g / (Psi (t + 1)); so step 3 holds with s0 = 1, whatever the smoothness.

Privacy of the whole stream. Each record enters exactly one call. Given all earlier
releases, the call holding the replaced record is a Gaussian mechanism with sensitivity at
most the bound of step 3 and noise sigma = z times that bound; every other call is the same
function of earlier releases and the same records on both neighbours (zero privacy loss).
By adaptive composition the stream, however it is split into calls and however long it
is, is exactly one ``GaussianDpEvent(z)``, with z the analytic Gaussian multiplier for
(epsilon, delta) (Balle & Wang 2018). This is tighter than Theorem 5.5's (3 epsilon,
2 delta) for Algorithm 5.1, whose noise does not enter the state and so composes over the
horizon; with one record per call both give noise of order z Delta_g / (Psi sqrt(T)) on the
final model, and larger calls give ours order z Delta_g / (Psi T).

The printed POffL constant (Algorithm 5.4, eq. 5.23). Lemma 5.9 gives the implicit step's
sensitivity 2 L / (Psi t), but eq. 5.23 bounds the average by 2 L' log T / T without the
1 / Psi (with Psi = epsilon_g / ||theta*||^2, usually far below 1), so the printed beta is
under-calibrated by about 1 / Psi; :func:`poffl_printed_sensitivity` keeps it for the tests,
which exhibit a neighbouring pair whose averages differ by more than it. Re-derived, the
average of T iterates has sensitivity (Delta_g / (Psi T)) sum_t 1 / (t + s0) <=
Delta_g (1 + ln T) / (Psi T) (step 3), with the Lipschitz constant of the loss alone: the
ridge term's Psi ||theta*|| in L' = L + Psi ||theta*|| cancels between neighbours.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from dp_accounting import dp_event
from scipy.optimize import brentq

from .._accounting import gaussian_noise_multiplier
from .._progress import steps
from .._sets import L2Ball
from .. import _noise

__all__ = ["OnlinePlan", "auto_alpha", "plan_online", "batch_ends", "release_sensitivity", "run_online",
           "poffl_printed_sensitivity"]


@dataclass(frozen=True)
class OnlinePlan:
    """Public constants of a private stream (never computed from the data)."""

    alpha: float
    radius: float
    clip_norm: float
    grad_sensitivity: float
    smoothness: float
    offset: float
    batch_size: int
    update: str
    noise_multiplier: float
    event: dp_event.DpEvent
    epsilon: float
    delta: float


def auto_alpha(loss, x_norm, grad_sensitivity, noise_multiplier, n_ref):
    """The default strength Psi of the ridge term, from public values only.

    The released model is theta + N(0, sigma^2 I) with sigma = z Delta_g / (Psi n) (step 3).
    To second order the noise costs E[l(theta + b)] - l(theta) = tr(H) sigma^2 / 2 <=
    phi''_max x_norm^2 sigma^2 / 2 (a GLM's Hessian phi'' x x^T has trace phi'' ||x||^2,
    whatever the dimension), and the ridge term biases the loss by Psi ||theta*||^2 / 2.
    With the prior ||theta*|| = 1 (normalized units), the sum is smallest at
    Psi = (2 K / n^2)^(1/3), K = phi''_max x_norm^2 z^2 Delta_g^2. Without noise (z = 0):
    Psi = 1 / n.
    """
    if noise_multiplier == 0:
        return 1.0 / n_ref
    K = loss.curvature * x_norm**2 * noise_multiplier**2 * grad_sensitivity**2
    return float((2.0 * K / float(n_ref) ** 2) ** (1.0 / 3.0))


def plan_online(loss, x_norm, *, epsilon, delta, alpha, radius, clip_norm=None, batch_size=1, update="gradient",
                n_ref=None):
    """The stream's step schedule, gradient sensitivity and noise multiplier from public values.

    ``clip_norm=None`` clips at ``x_norm`` (no clipping for the logistic loss, residuals
    beyond one half-range of ``bounds_y`` for the squared loss). A loss with several
    outputs (the multinomial loss, ``(softmax(z) - y) x^T`` of Frobenius norm at most
    ``sqrt(2) ||x||``) is never clipped: ``None`` means ``x_norm`` times its derivative
    bound, a smaller ``clip_norm`` raises a ``ValueError`` (a clipped vector of derivatives
    is not the gradient of a convex function, which the contraction of step 1 needs; the
    unclipped multinomial loss is convex and ``x_norm^2 / 2``-smooth, so step 1 holds), and
    so does ``update="implicit"`` (no closed-form proximal step for K outputs). ``epsilon = inf`` plans
    the same algorithm without noise (``NonPrivateDpEvent``). ``update="implicit"``
    (PIGD, one record per step) has offset s0 = 1 whatever the smoothness.
    ``alpha="auto"`` is :func:`auto_alpha` for ``n_ref`` records (public).
    """
    if update not in ("gradient", "implicit"):
        raise ValueError(f"update must be 'gradient' or 'implicit', got {update!r}.")
    if update == "implicit" and batch_size != 1:
        raise ValueError(f"update='implicit' takes one record per step: batch_size must be 1, got {batch_size!r}.")
    if epsilon != np.inf and not (0 < delta < 1):
        raise ValueError(f"delta must be in (0, 1) for the online estimators (Gaussian noise); got delta={delta!r}.")
    if loss.n_outputs > 1:
        # vector-valued derivatives: clipping them below their bound is not the derivative of a convex
        # function (step 1 needs one), so they are never clipped; None means that bound
        full = x_norm * loss.derivative_bound()
        if update == "implicit":
            raise ValueError("update='implicit' takes one output: a loss with several outputs (more than two "
                             "classes) has no closed-form proximal step; use update='gradient'.")
        if clip_norm is not None and clip_norm < full * (1 - 1e-12):
            raise ValueError(f"clip_norm must be None or at least {full:.6g} (the derivative bound times the row "
                             f"bound) for a loss with several outputs (more than two classes), got {clip_norm!r}.")
        clip_norm = full if clip_norm is None else clip_norm
    c = float(x_norm if clip_norm is None else clip_norm)
    grad_sensitivity = 2.0 * min(c, x_norm * loss.derivative_bound(radius * x_norm))
    beta = loss.curvature * x_norm**2
    if epsilon == np.inf:
        z, event = 0.0, dp_event.NonPrivateDpEvent()
    else:
        z = gaussian_noise_multiplier(float(epsilon), float(delta))
        event = dp_event.GaussianDpEvent(z)
    if isinstance(alpha, str):
        alpha = auto_alpha(loss, x_norm, grad_sensitivity, z, n_ref)
    return OnlinePlan(alpha=float(alpha), radius=float(radius), clip_norm=c, grad_sensitivity=grad_sensitivity,
                      smoothness=beta, batch_size=int(batch_size), update=update,
                      offset=1.0 if update == "implicit" else batch_size * beta / (2.0 * alpha),
                      noise_multiplier=z, event=event, epsilon=float(epsilon), delta=float(delta))


def batch_ends(t0, m, batch_size):
    """Stream positions at which the batches of a call of ``m`` records starting at ``t0`` end."""
    return np.append(np.arange(t0 + batch_size, t0 + m, batch_size, dtype=np.int64), t0 + m)


def release_sensitivity(plan, t0, m, average):
    """l2 sensitivity of a call's release before noise (module docstring, step 3).

    Parameters
    ----------
    plan : OnlinePlan
    t0 : int
        Records of the stream before this call (public).
    m : int
        Records in this call (public).
    average : bool
        Release the record-weighted average of the call's iterates (POffL) instead of
        the last iterate.

    Returns
    -------
    sensitivity : float
    """
    ends = batch_ends(t0, m, plan.batch_size).astype(float)
    scale = plan.grad_sensitivity / plan.alpha
    if not average:
        return scale / (t0 + m + plan.offset)
    sizes = np.diff(np.concatenate(([float(t0)], ends)))
    return scale * float(np.sum(sizes / (ends + plan.offset))) / m


def poffl_printed_sensitivity(lipschitz, alpha, radius, T):
    """Eq. 5.23 as printed: 2 (L + Psi ||theta*||) log T / T (missing Lemma 5.9's 1 / Psi)."""
    return 2.0 * (lipschitz + alpha * radius) * math.log(T) / T


def _row_norms(X):
    if sp.issparse(X):
        return np.sqrt(np.asarray(X.multiply(X).sum(axis=1)).ravel())
    return np.linalg.norm(X, axis=1)


def _clamped_dphi(loss, s, y, bound):
    return float(np.clip(loss.dphi(np.array([s]), np.array([y]))[0], -bound, bound))


def _implicit_step(plan, loss, x, y, x_norm, v, pos):
    """argmin_theta ||theta - v||^2 / 2 + eta (l_C(<x, theta>; y) + Psi ||theta||^2 / 2), eta = 1 / (Psi (pos + 1)).

    The minimizer is (v - eta d x) / (1 + eta Psi), where d = phi_C'(s) is the clipped
    derivative at s = <x, theta>, i.e. the fixed point d = phi_C'(s(d)) with
    s(d) = (<x, v> - eta ||x||^2 d) / (1 + eta Psi). For the (clipped) squared loss it is
    closed form (the loss's ``implicit_margin``). Otherwise d lies in [-m, m], m = min(c / ||x||, sup |phi'|), and
    g(d) = d - phi_C'(s(d)) is increasing; the step is total (defined for every finite input):
    if g(-m) >= 0 or g(m) <= 0 the derivative is saturated and d = -m or m in closed form
    (this is the case c < ||x|| with |phi'(s)| >= c / ||x|| at the solution); otherwise
    g(-m) < 0 < g(m) as evaluated, a valid bracket for Brent's method, run to floating-point
    precision without raising. Every returned d has |d| ||x|| <= min(c, ||x|| sup |phi'|), so
    the one-step bound Delta_g / (Psi (t + 1)) holds for the computed step, not only the
    exact one (docs/user_guide/online.md).
    """
    eta = 1.0 / (plan.alpha * (pos + 1))
    k = 1.0 + eta * plan.alpha
    if x_norm == 0.0:
        return v / k
    xv = float(np.asarray(x @ v).ravel()[0])
    bound = plan.clip_norm / x_norm  # phi_C' = clamp(phi', -bound, bound)
    w = eta * x_norm**2
    s = loss.implicit_margin(xv, y, k, w, bound)  # the loss's closed form, if it has one
    if s is not None:
        d = _clamped_dphi(loss, s, y, bound)
    else:
        m = min(bound, loss.derivative_bound())

        def g(d):
            return d - _clamped_dphi(loss, (xv - w * d) / k, y, m)

        lo, hi = g(-m), g(m)
        if lo >= 0.0:
            d = -m
        elif hi <= 0.0:
            d = m
        else:
            d = brentq(g, -m, m, xtol=1e-300, rtol=4 * np.finfo(float).eps, maxiter=2000, disp=False)
    return (v - eta * d * np.asarray(x.T @ np.array([1.0])).ravel()) / k


def run_online(plan, loss, X, y, theta, t0, rng, *, average=False, return_iterates=False):
    """One call: the steps over the records of (X, y) from the released ``theta``, then the release.

    Parameters
    ----------
    plan : OnlinePlan
    loss : SquaredLoss, LogisticLoss or MultinomialLoss
    X : {ndarray, csr_matrix} of shape (m, dim)
        Normalized records (rows of norm at most the planned ``x_norm``), in stream order.
    y : ndarray of shape (m,) or (m, K)
        Normalized targets in [-1, 1], labels in {-1, +1}, or one-hot labels (multinomial).
    theta : ndarray of shape (dim * n_outputs,)
        The previous release (zero for a new stream): public given earlier releases.
    t0 : int
        Records of the stream before this call.
    rng : numpy.random.Generator
        The call's only source of noise.
    average : bool, default=False
        Release the record-weighted average of the iterates (POffL, Algorithm 5.4).
    return_iterates : bool, default=False
        Also return the noiseless vector (for tests only; never stored).

    Returns
    -------
    release : ndarray of shape (dim,)
        ``Proj_C(v + N(0, sigma^2 I))`` with ``sigma = z * release_sensitivity``.
    """
    m = X.shape[0]
    ball = L2Ball(plan.radius)
    norms = _row_norms(X)
    theta = ball.project(np.array(theta, dtype=float))
    total = np.zeros_like(theta)
    start = 0
    ends = batch_ends(t0, m, plan.batch_size) - t0
    for k in steps(len(ends)):
        end = ends[k]
        b, pos = end - start, t0 + start
        if plan.update == "implicit":
            theta = ball.project(_implicit_step(plan, loss, X[start:end], y[start], norms[start], theta, pos))
            total += theta
            start = end
            continue
        shrink = (pos + plan.offset) / (pos + b + plan.offset)  # 1 - eta Psi
        eta_over_b = 1.0 / (plan.alpha * (pos + b + plan.offset))  # eta / b
        g = loss.clipped_gradient_sum(X[start:end], y[start:end], theta, norms[start:end], plan.clip_norm)
        theta = ball.project(shrink * theta - eta_over_b * g)
        if average:
            total += b * theta
        start = end
    v = total / m if average else theta
    sens = release_sensitivity(plan, t0, m, average)
    sigma = plan.noise_multiplier * sens
    release = ball.project(_noise.add_gaussian(rng, v, sigma, sens)) if sigma > 0 else v
    return (release, v) if return_iterates else release
