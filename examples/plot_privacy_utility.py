"""
=========================================
Privacy-utility curve of a private Ridge
=========================================

How much accuracy does privacy cost? We fit :class:`~dp_sklearn.DPRidge` on scikit-learn's
diabetes data for a range of ``epsilon`` and compare its test R^2 with the non-private
Ridge of scikit-learn and with the trivial predictor (the mean of the training targets).

The public bounds are stated up front, never computed from the data. The features are used
as distributed: the dataset's documentation says each column is centred and scaled to a
unit sum of squares over its 442 rows, so a typical row of 10 features has an l2 norm near
``sqrt(10 / 442) = 0.15``; we take twice that, ``data_norm=0.3`` (longer rows are clipped).
The target, a disease-progression score, is taken to lie in ``(0, 400)``.
"""

import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_diabetes
from sklearn.linear_model import Ridge
from sklearn.model_selection import train_test_split

from dp_sklearn import DPRidge


X, y = load_diabetes(return_X_y=True)
X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.3, random_state=0)

epsilons = [0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0]
seeds = range(10)

scores = np.array(
    [
        [
            DPRidge(epsilon=eps, delta=1e-5, data_norm=0.3, bounds_y=(0, 400), random_state=seed)
            .fit(X_train, y_train)
            .score(X_test, y_test)
            for seed in seeds
        ]
        for eps in epsilons
    ]
)
non_private = Ridge(alpha=1e-3).fit(X_train, y_train).score(X_test, y_test)
trivial = 1 - np.mean((y_test - y_train.mean()) ** 2) / np.var(y_test)

for eps, row in zip(epsilons, scores):
    print(f"epsilon={eps:5.1f}: median R^2 = {np.median(row):.3f}")

# %%
# The median over 10 noise draws, with the 10-90% range shaded. Each point is a separate
# private release of its own ``epsilon``; the curve is an illustration, not something to
# compute on private data.

fig, ax = plt.subplots(figsize=(6, 4))
ax.plot(epsilons, np.median(scores, axis=1), "o-", label="DPRidge (noisy_gd)")
ax.fill_between(
    epsilons, np.quantile(scores, 0.1, axis=1), np.quantile(scores, 0.9, axis=1), alpha=0.25
)
ax.axhline(non_private, color="k", linestyle="--", label="Ridge (non-private)")
ax.axhline(trivial, color="gray", linestyle=":", label="trivial: training mean")
ax.set_xscale("log")
ax.set_xlabel("epsilon (delta = 1e-5)")
ax.set_ylabel("test R^2")
ax.set_title("diabetes: privacy-utility of DPRidge")
ax.legend(loc="lower right")
fig.tight_layout()
plt.show()
