"""
===========================================
Comparing private solvers on a real dataset
===========================================

Every dp_sklearn estimator can be fitted by several private mechanisms (``solver=``). This
example compares them on scikit-learn's handwritten digits, as a binary task (digits 0-4
against 5-9), across a range of ``epsilon``.

The digits data has an exact public bound: each of the 64 pixels takes a value in
``[0, 16]``. Dividing by the constant 16 puts every pixel in ``[0, 1]``, so every row has
an l2 norm of at most 8 (``data_norm=8``) and every entry is at most 1 in absolute value
(``data_norm=1`` with ``data_norm_ord=numpy.inf``, the bound the l1-ball Frank-Wolfe uses).
No statistic of the data is used to scale it.
"""

import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_digits
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split

from dp_sklearn import DPLogisticRegression, DPSparseLogisticRegression


X, y = load_digits(return_X_y=True)
X = X / 16.0  # public constant: pixel values lie in [0, 16]
y = (y >= 5).astype(int)
X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.3, random_state=0)

solvers = {
    "noisy_gd (l2)": dict(solver="noisy_gd", data_norm=8.0),
    "mirror_descent (l2)": dict(solver="mirror_descent", data_norm=8.0),
    "output_perturbation (l2)": dict(solver="output_perturbation", data_norm=8.0),
    "objective_perturbation (l2)": dict(solver="objective_perturbation", data_norm=8.0),
    "frank_wolfe (l1)": dict(penalty="l1", solver="frank_wolfe", data_norm=1.0,
                             data_norm_ord=np.inf),
}
epsilons = [0.5, 1.0, 2.0, 5.0, 10.0]
seeds = range(3)


def mean_accuracy(make):
    return [
        np.mean([make(eps, seed).fit(X_train, y_train).score(X_test, y_test) for seed in seeds])
        for eps in epsilons
    ]


results = {
    name: mean_accuracy(
        lambda eps, seed, kw=kw: DPLogisticRegression(epsilon=eps, delta=1e-5, random_state=seed, **kw)
    )
    for name, kw in solvers.items()
}
results["ight (l0, 10 pixels)"] = mean_accuracy(
    lambda eps, seed: DPSparseLogisticRegression(
        n_nonzero_coefs=10, epsilon=eps, delta=1e-5, data_norm=8.0, random_state=seed
    )
)
non_private = LogisticRegression().fit(X_train, y_train).score(X_test, y_test)
majority = max(np.mean(y_test), 1 - np.mean(y_test))

for name, accs in results.items():
    print(f"{name:30s}", " ".join(f"{a:.3f}" for a in accs))

# %%
# Iterative gradient methods (``noisy_gd``, ``mirror_descent``) make the best use of a
# small budget here; the one-shot mechanisms (output and objective perturbation) need a
# larger ``n * epsilon`` before their single noise draw stops dominating. The l1 and l0
# models trade some accuracy for a model that uses few pixels.

fig, ax = plt.subplots(figsize=(7, 4.5))
for name, accs in results.items():
    ax.plot(epsilons, accs, "o-", label=name)
ax.axhline(non_private, color="k", linestyle="--", label="LogisticRegression (non-private)")
ax.axhline(majority, color="gray", linestyle=":", label="majority class")
ax.set_xscale("log")
ax.set_xlabel("epsilon (delta = 1e-5)")
ax.set_ylabel("test accuracy (mean of 3 fits)")
ax.set_title("digits 0-4 vs 5-9: private solvers")
ax.legend(fontsize="small", loc="lower right")
fig.tight_layout()
plt.show()
