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

import math

import numpy as np
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
    margins updated one vertex at a time (one product with X per step instead of two;
    sparse and dask designs take both products): the same scores.
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
    else:  # sparse (a column costs a pass) or blockwise (dask): full products
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


def _run_gram_exp(gram, dim, T, R, scale, rng):
    """The Gram-path loop of :func:`run_frank_wolfe` with exponential-mechanism steps, O(dim) per step.

    Same mechanism and scores: ``G theta`` is updated with the step,
    ``G theta_{t+1} = (1 - mu) G theta_t + mu (+-R) G e_k`` (one column of G instead of a
    product), and each step's selection is exact (``dp_sklearn._noise.em_stream``: the
    uniform integers behind the Gumbel noise of many steps drawn in one call, the same
    distribution: each step still uses 2 dim fresh i.i.d. uniforms).
    """
    if T <= 0:
        return np.zeros(dim)
    G, b, n = gram.gram, gram.xty, gram.n
    theta, g_theta = np.zeros(dim), np.zeros(dim)
    logits = np.empty(2 * dim)
    c = R * scale / n  # logits of +R e_j: -R g_j scale with g = (G theta - b) / n
    stream = _noise.em_stream(rng, 2 * dim, T)
    for t in steps(T):
        np.subtract(g_theta, b, out=logits[:dim])
        logits[:dim] *= -c
        np.negative(logits[:dim], out=logits[dim:])
        k = stream.argmax(logits)  # the float64 logits, read exactly
        value = R if k < dim else -R
        mu = 2.0 / (t + 2.0)
        j = k % dim
        theta *= 1.0 - mu
        theta[j] += mu * value
        g_theta *= 1.0 - mu
        g_theta += (mu * value) * G[:, j]
    return theta


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
