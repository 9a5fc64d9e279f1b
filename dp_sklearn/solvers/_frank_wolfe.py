"""Private Frank-Wolfe over the l1 ball.

Talwar, Thakurta & Zhang, "Nearly-optimal private LASSO", NeurIPS 2015,
Algorithm 2 (polytope case) with T from Theorem 2.5. Each step selects a vertex
+-R e_j by the exponential mechanism on u(s) = <s, grad L(theta_t)>, whose
sensitivity under replace-one neighbours is 2 R G_inf / n, sampled exactly with the
Gumbel-max trick. An exponential mechanism with parameter eps0 has bounded range
eps0, hence is eps0^2/8-zCDP (Cesar & Rogers, "Bounding, concentrating, and
truncating: unifying privacy loss composition for data analytics", ALT 2021);
T steps compose to T eps0^2 / 8-zCDP (``accounting="tight"``, converted to
(epsilon, delta) by the RDP accountant; with very few steps, basic composition
eps0 = epsilon / T is used when it is larger). ``accounting="paper"`` is TTZ's own
calibration: Laplace report-noisy-min with scale L1 ||C||_1 sqrt(8 T log(1/delta)) / (n epsilon)
(advanced composition), with the advanced composition theorem solved exactly so that
it stays private when the per-step epsilon is not small
(:func:`advanced_composition_epsilon0`). With delta = 0, eps0 = epsilon / T (basic composition).
``epsilon=np.inf`` runs the non-private Frank-Wolfe iteration (exact vertex choice).
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import scipy.sparse as sp
from scipy.linalg.blas import daxpy as _blas_axpy
from dp_accounting import dp_event

from .._accounting import EpsilonDeltaDpEvent, zcdp_rho
from .._gram import GramGradient, gram_worthwhile
from .._progress import steps
from ._base import Plan, register
from .. import _noise


#: floor and cap on the default number of Frank-Wolfe steps (each is a full gradient)
MIN_ITER = 100
MAX_ITER = 3000


def gradient_linf_bound(problem, constraint):
    """G_inf: bound on ||grad l(theta; x, y)||_inf over the l1 ball (Holder)."""
    margin = constraint.margin_bound(problem.x_norm, problem.x_inf)
    return problem.x_inf * problem.loss.derivative_linf_bound(margin)


def default_n_iter(problem, constraint, epsilon):
    """TTZ Theorem 2.5: T = Gamma^(2/3) (n eps)^(2/3) / (L1 ||C||_1)^(2/3).

    Curvature bound Gamma = phi''_max (2 R x_inf)^2 (the diameter of the l1 ball in the
    dual norm of ||x||_inf), L1 = G_inf. At least ``MIN_ITER`` steps: when noisy
    vertex picks dominate, the variance of the final iterate decays like 1/T, so few
    steps leave a noisier model than the theory's constant suggests.
    """
    R = constraint.radius
    gamma = problem.loss.curvature * (2 * R * problem.x_inf) ** 2
    L1 = gradient_linf_bound(problem, constraint)
    epsilon = min(float(epsilon), 1e6)  # epsilon = inf (non-private run): the cap below applies
    T = (gamma * problem.n * epsilon) ** (2 / 3) / (L1 * R) ** (2 / 3)
    return int(min(max(math.ceil(T), MIN_ITER), MAX_ITER))


def advanced_composition_epsilon0(epsilon, delta, T):
    """Per-step epsilon of TTZ's calibration, made exact.

    TTZ (Algorithm 2) set the Laplace scale to L1 ||C||_1 sqrt(8 T log(1/delta)) / (n eps),
    i.e. eps0 = eps / sqrt(2 T log(1/delta)) per report-noisy-min, the first-order term of
    the advanced composition theorem (Dwork, Rothblum & Vadhan 2010, Theorem III.3):
    T-fold composition of eps0-DP is (sqrt(2 T log(1/delta)) eps0 + T eps0 (e^eps0 - 1), delta)-DP.
    Dropping the second term overshoots epsilon when eps0 is not small (e.g. eps = 10,
    T = 10, delta = 0.01). We solve the theorem exactly, and use basic composition
    eps0 = eps / T when that is larger, so the paper calibration is private at every
    epsilon; for small eps0 it coincides with TTZ's scale.
    """
    L = math.log(1.0 / delta)

    def total(e0):
        return math.sqrt(2 * T * L) * e0 + T * e0 * math.expm1(e0)

    lo, hi = 0.0, epsilon / math.sqrt(2 * T * L)
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if total(mid) <= epsilon:
            lo = mid
        else:
            hi = mid
    return max(lo, epsilon / T)


def _step_mechanism(epsilon, delta, T, accounting):
    """Per-step parameter eps0, mode and event of the T vertex selections (public)."""
    if epsilon == np.inf:  # the non-private Frank-Wolfe iteration (exact linear minimization oracle)
        return float("inf"), "exact", dp_event.NonPrivateDpEvent()
    if delta == 0:
        eps0 = epsilon / T
        return eps0, "exp", dp_event.SelfComposedDpEvent(EpsilonDeltaDpEvent(float(eps0), 0.0), T)
    if accounting == "paper":
        # TTZ's Laplace report-noisy-min with its advanced-composition scale; see
        # advanced_composition_epsilon0.
        eps0 = advanced_composition_epsilon0(float(epsilon), float(delta), T)
        return eps0, "laplace", dp_event.SelfComposedDpEvent(EpsilonDeltaDpEvent(float(eps0), 0.0), T)
    rho = zcdp_rho(float(epsilon), float(delta))
    eps0 = math.sqrt(8.0 * rho / T)
    if epsilon / T > eps0:  # very few steps: basic composition of pure steps is tighter
        eps0 = epsilon / T
        return eps0, "exp", dp_event.SelfComposedDpEvent(EpsilonDeltaDpEvent(float(eps0), 0.0), T)
    return eps0, "exp", dp_event.ZCDpEvent(rho)


def plan_frank_wolfe(public, constraint, *, epsilon, delta, max_iter=None, accounting="tight"):
    """T, the score sensitivity and the per-step mechanism of :func:`frank_wolfe` (public values only)."""
    T = int(max_iter) if max_iter is not None else default_n_iter(public, constraint, epsilon)
    sens = 2.0 * constraint.radius * gradient_linf_bound(public, constraint) / public.n  # of u(s) = <s, grad>
    eps0, mode, event = _step_mechanism(epsilon, delta, T, accounting)
    # passes over the data (public): one to form the Gram matrix, else one product per step
    info = {"score_sensitivity": sens, "mode": mode, "passes": 1 if gram_worthwhile(public) else T}
    if mode == "laplace":
        info["laplace_scale"] = 2 * sens / eps0  # report-noisy-min with Laplace(b) is (2 sens / b)-DP
    return Plan(event, float(epsilon), float(delta), T, eps0, constraint, info)


class _VertexMargins:
    """Exact mean gradient of a GLM loss along Frank-Wolfe iterates, margins updated per vertex.

    Every Frank-Wolfe iterate is ``theta_{t+1} = (1 - mu) theta_t + mu s_t`` with a vertex
    ``s_t = +-R e_k``, so the margins ``X theta`` obey ``z_{t+1} = (1 - mu) z_t + mu (+-R) X e_k``:
    one column of X (O(n)) instead of a full product. Only ``X^T phi'(z)`` remains a pass
    over the data, which halves the cost of a step. Same gradient as
    ``loss.gradient(X, y, theta)`` up to floating-point rounding. Dense X only: a
    column of a CSR matrix costs a pass, and a CSC copy would double the fit's memory
    (issue 11: at most one copy of X), so sparse designs take the two products.
    """

    def __init__(self, problem):
        self.X, self.y, self.loss = problem.X, problem.y, problem.loss
        self.K = self.loss.n_outputs
        n = self.X.shape[0]
        self.z = np.zeros((n, self.K)) if self.K > 1 else np.zeros(n)

    def gradient(self, theta):
        d = self.loss.dphi(self.z, self.y)
        return np.asarray(self.X.T @ d).ravel() / self.X.shape[0]

    def step(self, mu, index, value):
        """Margins of ``(1 - mu) theta + mu value e_index`` (flat, feature-major index)."""
        self.z *= 1.0 - mu
        j, c = divmod(index, self.K)
        z = self.z[:, c] if self.K > 1 else self.z
        z += (mu * value) * self.X[:, j]


class _CSRVertexMargins:
    """:class:`_VertexMargins` for a CSR design, without a copy of X.

    Column j of X is found by one scan of X's column indices (the rows whose entries hold
    j, and their values): O(nnz) integer comparisons instead of a product with X. For the
    squared loss (one output) the gradient is linear in theta, ``(X^T X theta - X^T y) / n``,
    and ``X^T X theta`` moves with the step along ``X^T (X e_j)``, formed from the rows that
    hold column j: no product with X at all after the first ``X^T y``. Other losses keep
    their margins the same way and take one product ``X^T phi'(z)`` per step. The same
    gradient as ``loss.gradient(X, y, theta)`` up to floating-point rounding.
    """

    def __init__(self, problem):
        self.X, self.y, self.loss = problem.X, problem.y, problem.loss
        self.K = self.loss.n_outputs
        n, dim = self.X.shape
        self.linear = bool(self.loss.gram_path) and self.K == 1
        if self.linear:
            self.xty = np.asarray(self.X.T @ self.y, dtype=np.float64).ravel()
            self.xtx_theta = np.zeros(dim)
        else:
            self.z = np.zeros((n, self.K)) if self.K > 1 else np.zeros(n)

    def gradient(self, theta):
        n = self.X.shape[0]
        if self.linear:
            return (self.xtx_theta - self.xty) / n
        d = self.loss.dphi(self.z, self.y)
        return np.asarray(self.X.T @ d).ravel() / n

    def step(self, mu, index, value):
        """Margins (or ``X^T X theta``) of ``(1 - mu) theta + mu value e_index`` (flat, feature-major index)."""
        j, c = divmod(index, self.K)
        X = self.X
        pos = np.flatnonzero(X.indices == j)
        rows = np.searchsorted(X.indptr, pos, side="right") - 1
        vals = X.data[pos]
        if self.linear:
            # X e_j has entry sum(vals of row i) at each row i holding j (duplicate entries of a row
            # add up, as in a product); X^T (X e_j) from each such row once (rows is sorted)
            first = np.flatnonzero(np.r_[True, rows[1:] != rows[:-1]]) if rows.size else rows
            column = np.add.reduceat(vals, first) if rows.size else vals
            self.xtx_theta *= 1.0 - mu
            self.xtx_theta += (mu * value) * np.asarray(X[rows[first]].T @ column).ravel()  # X^T (X e_j)
            return
        self.z *= 1.0 - mu
        z = self.z[:, c] if self.K > 1 else self.z
        np.add.at(z, rows, (mu * value) * vals)  # duplicate entries of a row add up, as in a product


def gumbel_argmax(logits, rng):
    """Index k with probability exactly softmax(logits)_k (``dp_sklearn._noise.exponential_mechanism``).

    Gumbel-max with Gumbel noise drawn from uniform integers and decided exactly; the
    float64 ``logits`` are read as exact numbers.
    """
    return int(_noise.exponential_mechanism(rng, logits, 1.0))


def run_frank_wolfe(problem, plan, rng):
    """Frank-Wolfe steps with noisy vertex selection; the last iterate.

    The scores use the exact (unclipped) mean gradient, so for the squared loss it is
    computed from the Gram matrix (:class:`dp_sklearn._gram.GramGradient`, one pass over
    X, then O(dim^2) per step) whenever dim is small enough, otherwise, for dense X, with
    margins updated one vertex at a time (one product with X per step instead of two), for
    CSR X with margins (or, for the squared loss, ``X^T X theta``) updated from one column
    found by a scan of the column indices (:class:`_CSRVertexMargins`); dask designs take
    both products: the same scores.
    """
    R, eps0, sens, mode = plan.constraint.radius, plan.noise_scale, plan.info["score_sensitivity"], plan.info["mode"]
    dim = problem.dim
    X, y, loss = problem.X, problem.y, problem.loss
    margins = None
    if gram_worthwhile(problem) and mode == "exp":
        return _run_gram_exp(GramGradient(X, y), dim, plan.n_iter, R, eps0 / (2.0 * sens), rng)
    if gram_worthwhile(problem):
        gradient = GramGradient(X, y).gradient
    elif isinstance(X, np.ndarray):
        margins = _VertexMargins(problem)
        gradient = margins.gradient
    elif sp.issparse(X) and X.format == "csr":
        margins = _CSRVertexMargins(problem)
        gradient = margins.gradient
    else:  # other sparse formats or blockwise (dask): full products
        gradient = lambda th: loss.gradient(X, y, th)  # noqa: E731
    theta = np.zeros(dim)
    scores = np.empty(2 * dim)
    stream = _noise.em_stream(rng, 2 * dim, plan.n_iter) if mode == "exp" else None
    for t in steps(plan.n_iter):
        g = gradient(theta)
        np.multiply(-R, g, out=scores[:dim])  # u(+R e_j) = R g_j; we maximize -u
        np.multiply(R, g, out=scores[dim:])
        if mode == "exp":
            k = stream.argmax(scores, eps0 / (2.0 * sens))
        elif mode == "exact":
            k = int(np.argmax(scores))
        else:
            k = int(np.argmax(_noise.add_laplace(rng, scores, plan.info["laplace_scale"], sens, norm=np.inf)))
        value = R if k < dim else -R
        mu = 2.0 / (t + 2.0)
        theta *= 1.0 - mu
        theta[k % dim] += mu * value
        if margins is not None:
            margins.step(mu, k % dim, value)
    return theta


#: Largest dim for which the Gram-path loop keeps the (2 dim x 2 dim) table of the score change
#: toward each vertex (one BLAS call per step instead of three; 2 MiB at this dim).
_TABLE_MAX_DIM = 256


def _run_gram_exp(gram, dim, T, R, scale, rng):
    """The Gram-path loop of :func:`run_frank_wolfe` with exponential-mechanism steps.

    The same mechanism and scores as the per-step loop (the logits of step t are
    ``[l_t, -l_t]``, ``l_t = -c (G theta_t - b)``, ``c = R scale / n``, for the vertices
    ``+R e_j`` then ``-R e_j``), each selection exact: see :func:`_gram_exp_selections`.
    The iterate is a function of the selections only, ``T (T+1) theta_T = sum_t 2 (t+1) v_t``
    (:func:`_iterate_of`).
    """
    if T <= 0:
        return np.zeros(dim)
    return _iterate_of(_gram_exp_selections(gram, dim, T, R, scale, rng), dim, T, R)


def _iterate_of(ks, dim, T, R):
    """theta_T of Frank-Wolfe steps ``mu_t = 2 / (t + 2)`` toward the vertices ``k_t`` (``+R e_k``, or ``-R e_(k-dim)``).

    ``(t+1)(t+2) theta_(t+1) = t (t+1) theta_t + 2 (t+1) v_t`` telescopes to
    ``T (T+1) theta_T = sum_t 2 (t+1) v_t``: integer weights, summed exactly in float64
    (below 2**53), then one rounding for ``R`` and one for the division.
    """
    weights = np.bincount(ks, weights=2.0 * np.arange(1, T + 1), minlength=2 * dim)
    return (weights[:dim] - weights[dim:]) * R / (T * (T + 1.0))


def _gram_exp_selections(gram, dim, T, R, scale, rng):
    """The T vertex indices of the Gram-path Frank-Wolfe run, each drawn by the exact exponential mechanism.

    Step t's logits are ``[l_t, -l_t]`` with ``l_0 = c b`` and, for t >= 1,
    ``l_t = -(c R / (t (t+1))) P_t``, where ``P_t = sum_(s<t) 2 (s+1) E_(k_s)`` (summed in
    order) and ``E_k = +-G e_j - b / R`` is the gradient sum at vertex k over R: in exact
    arithmetic ``P_t = t (t+1) (G theta_t - b) / R``, so ``l_t = -c (G theta_t - b)``, the
    scores of the per-step loop; in float64 they differ from its incremental ``G theta``
    by rounding of the same order. The selections are exact for these float64 logits:

    * the uniforms of a block of steps are drawn ahead and their Gumbel upper bounds ``hi``
      computed in one call (:meth:`dp_sklearn._noise._EMStream.next_block`, the draws of
      the per-step stream);
    * a loop picks each step's winner from the keys scaled by ``t (t+1) / (c R) > 0``,
      ``[-P_t, P_t] + t (t+1) hi_t / (c R)``, kept up to date with two BLAS ``axpy`` calls
      per step (``P`` moves by one precomputed row per step; above ``_TABLE_MAX_DIM``, four
      calls without the table);
    * the block's logits are then formed from the selections in one pass and every choice
      certified as the exact winner (the float enclosure of ``_EMStream.argmax``), and a step
      the bounds do not decide is decided exactly (:meth:`~dp_sklearn._noise._EMStream.settle`).
      If its exact winner is not the loop's, the block is resumed from the next step.

    The float path does the same work for every dataset of a shape; the exact slow path
    and a resumption happen with the probability of the enclosure failing (``docs/privacy.md``).
    """
    G, b, n = gram.gram, gram.xty, gram.n
    d2 = 2 * dim
    c = R * scale / n
    cR = c * R
    GT = np.ascontiguousarray(G.T)  # row j: column j of G
    bR = b / R
    L0 = np.concatenate([c * b, -(c * b)])  # theta_0 = 0: -c (0 - b)
    table = dim <= _TABLE_MAX_DIM
    if table:
        E = np.concatenate([GT - bR, -GT - bR])  # E_k, k < dim: +R e_k; k >= dim: -R e_(k-dim)
        E2f = np.concatenate([-E, E], axis=1).ravel()  # the change of [-P, P]
    else:
        GTf = GT.ravel()
    axpy = _blas_axpy
    ks = np.empty(T, dtype=np.intp)
    stream = _noise.em_stream(rng, d2, T)
    P = np.zeros(dim)  # P_t at the block's first step t0
    ticks = iter(steps(T))
    t0 = 0
    while t0 < T:
        hi = stream.next_block()
        rows = hi.shape[0]
        tt = np.arange(t0, t0 + rows, dtype=np.float64)
        kappa = tt * (tt + 1.0) / cR
        kb = ks[t0:t0 + rows]
        coef = -cR / np.maximum(tt * (tt + 1.0), 1.0)  # t0 = 0: row 0 is set below
        w_inc = 2.0 * (tt + 1.0)
        Pc = np.empty((rows + 1, dim))  # P_t0 .. P_(t0 + rows)
        L = np.empty((rows, d2))
        start = 0
        while True:
            V = np.multiply(hi, kappa[:, None])  # rows < start: unused
            Vf = V.ravel()
            r = start
            if t0 + r == 0:  # step 0: the logits at theta_0 = 0 (kappa_0 = 0)
                kb[0] = int((L0 + hi[0]).argmax())
                r = 1
            sel = []
            if table:
                F = np.concatenate([-Pc[start], Pc[start]]) if start else np.concatenate([-P, P])
                if r > start:
                    F = axpy(E2f, F, d2, 2.0, int(kb[0]) * d2)
                for r in range(r, rows):
                    o = r * d2
                    Vf = axpy(F, Vf, d2, 1.0, 0, 1, o)
                    k = int(Vf[o:o + d2].argmax())
                    sel.append(k)
                    F = axpy(E2f, F, d2, 2.0 * (t0 + r + 1), k * d2)
            else:
                Q = Pc[start].copy() if start else P.copy()
                if r > start:
                    k = int(kb[0])
                    Q = axpy(GTf, Q, dim, 2.0 if k < dim else -2.0, (k % dim) * dim)
                    Q = axpy(bR, Q, dim, -2.0)
                for r in range(r, rows):
                    o = r * d2
                    Vf = axpy(Q, Vf, dim, -1.0, 0, 1, o)
                    Vf = axpy(Q, Vf, dim, 1.0, 0, 1, o + dim)
                    k = int(Vf[o:o + d2].argmax())
                    sel.append(k)
                    w = 2.0 * (t0 + r + 1)
                    Q = axpy(GTf, Q, dim, w if k < dim else -w, (k % dim) * dim)
                    Q = axpy(bR, Q, dim, -w)
            if sel:
                kb[rows - len(sel):] = sel
            _chain(Pc, P, GT, bR, kb, w_inc, dim)
            np.multiply(Pc[:rows], coef[:, None], out=L[:, :dim])
            if t0 == 0:
                L[0, :dim] = L0[:dim]
            np.negative(L[:, :dim], out=L[:, dim:])
            res = stream.settle(L, kb, start)
            if res is None:
                break
            r, kb[r] = res  # the exact winner; the steps after it are redone from P_(t0 + r + 1)
            start = r + 1
            _chain(Pc, P, GT, bR, kb, w_inc, dim)
        P = Pc[rows].copy()
        for _ in itertools.islice(ticks, rows):
            pass
        t0 += rows
    return ks


def _chain(Pc, P, GT, bR, kb, w_inc, dim):
    """``Pc[0] = P``, ``Pc[i + 1] = Pc[i] + w_inc[i] (+-G e_j - b / R)`` for the block's selections ``kb`` (in order)."""
    Pc[0] = P
    inc = Pc[1:]
    np.take(GT, kb % dim, axis=0, out=inc)
    inc *= np.where(kb < dim, 1.0, -1.0)[:, None]
    inc -= bR
    inc *= w_inc[:, None]
    np.cumsum(Pc, axis=0, out=Pc)  # sequential sums (add.accumulate)


@register("frank_wolfe", plan=plan_frank_wolfe, pure_dp=True, constraints=("l1",), requires=("smooth",))
def frank_wolfe(problem, constraint, *, epsilon, delta, rng, max_iter=None, accounting="tight", plan=None):
    """Private Frank-Wolfe (TTZ Algorithm 2); see the module docstring for the calibration.

    Parameters
    ----------
    problem : Problem
        Normalized data.
    constraint : L1Ball
        Feasible set; its vertices are +-radius e_j.
    epsilon, delta : float
        Target; ``delta = 0`` uses pure exponential mechanisms with basic composition.
    rng : numpy.random.Generator
        Source of the Gumbel (or Laplace) noise.
    max_iter : int, default=None
        T; ``None`` uses :func:`default_n_iter`.
    accounting : {"tight", "paper"}, default="tight"
        Calibration, see the module docstring.
    plan : Plan, default=None
        A plan from :func:`plan_frank_wolfe` (computed if ``None``).

    Returns
    -------
    SolverResult
        ``coef`` = theta_T.
    """
    if plan is None:
        plan = plan_frank_wolfe(problem, constraint, epsilon=epsilon, delta=delta, max_iter=max_iter,
                                accounting=accounting)
    return plan.result(run_frank_wolfe(problem, plan, rng))
