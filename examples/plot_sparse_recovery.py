"""
=======================================================
Support recovery: DP-IGHT against private Frank-Wolfe
=======================================================

Two private routes to a sparse linear model:

* :class:`~dp_sklearn.DPSparseLinearRegression` (``solver="ight"``): DP iterative gradient
  hard thresholding (Wang & Gu, IJCAI 2019, Algorithm 1), which keeps exactly
  ``n_nonzero_coefs`` coefficients;
* :class:`~dp_sklearn.DPLasso` (``solver="frank_wolfe"``): private Frank-Wolfe over an l1
  ball (Talwar, Thakurta & Zhang, NeurIPS 2015, Algorithm 2), whose iterates are sparse
  because each step moves toward one vertex of the ball.

On synthetic data with 5 relevant features out of 100, we follow each model's coefficients
as ``epsilon`` grows, like a Lasso path along the privacy budget, and count how many of the
5 true features are among the 5 largest coefficients.

Public bounds, known by construction: every feature lies in ``[-1, 1]`` (so
``data_norm=1`` with ``data_norm_ord=numpy.inf`` for Frank-Wolfe, and the l2 bound
``sqrt(100) = 10`` for IGHT), and ``|y| <= 6``. The l1 radius of Frank-Wolfe is set to the
true ``||theta*||_1`` in normalized units (an oracle value that favours Frank-Wolfe).
"""

import matplotlib.pyplot as plt
import numpy as np

from dp_sklearn import DPLasso, DPSparseLinearRegression


rng = np.random.default_rng(0)
n, p, s = 2000, 100, 5
support = rng.choice(p, size=s, replace=False)
theta = np.zeros(p)
theta[support] = rng.choice([-1.0, 1.0], size=s)
X = rng.uniform(-1, 1, size=(n, p))
y = np.clip(X @ theta + rng.normal(scale=0.1, size=n), -6, 6)

epsilons = [0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 50.0]
seeds = range(3)
models = {
    "DP-IGHT (DPSparseLinearRegression)": lambda eps, seed: DPSparseLinearRegression(
        n_nonzero_coefs=s, epsilon=eps, delta=1e-5, data_norm=np.sqrt(p), bounds_y=(-6, 6),
        fit_intercept=False, random_state=seed,
    ),
    "Frank-Wolfe (DPLasso)": lambda eps, seed: DPLasso(
        radius=np.abs(theta).sum() / 6, solver="frank_wolfe", epsilon=eps, delta=1e-5,
        data_norm=1.0, data_norm_ord=np.inf, bounds_y=(-6, 6), fit_intercept=False,
        random_state=seed,
    ),
}

paths, recovered = {}, {}
for name, make in models.items():
    coefs = np.array([[make(eps, seed).fit(X, y).coef_ for seed in seeds] for eps in epsilons])
    paths[name] = coefs[:, 0, :]  # the path of one fit per epsilon (seed 0)
    top = np.argsort(-np.abs(coefs), axis=2)[:, :, :s]
    recovered[name] = np.isin(top, support).sum(axis=2).mean(axis=1)
    print(name, "true features in the top 5:", np.round(recovered[name], 1))

# %%
# Left and centre: the coefficients of one fit per ``epsilon`` (true features in colour,
# the 95 others in grey). Right: how many of the 5 true features each method ranks in its
# top 5, averaged over 3 fits. IGHT, which spends its budget on a few gradient steps
# restricted to the current support, finds the support at a much smaller ``epsilon``.

fig, axes = plt.subplots(1, 3, figsize=(12, 3.8))
for ax, (name, coef) in zip(axes, paths.items()):
    others = np.setdiff1d(np.arange(p), support)
    ax.plot(epsilons, coef[:, others], color="lightgray", linewidth=0.8)
    ax.plot(epsilons, coef[:, support], linewidth=2)
    ax.set_xscale("log")
    ax.set_xlabel("epsilon")
    ax.set_ylabel("coefficient")
    ax.set_title(name, fontsize="medium")
for name, rec in recovered.items():
    axes[2].plot(epsilons, rec, "o-", label=name.split(" (")[0])
axes[2].set_xscale("log")
axes[2].set_ylim(0, s + 0.3)
axes[2].set_xlabel("epsilon (delta = 1e-5)")
axes[2].set_ylabel("true features in the top 5")
axes[2].legend()
fig.tight_layout()
plt.show()
