"""
==========================================
What cross-validation spends: the ledger
==========================================

``cross_val_score`` fits an estimator once per fold, and **every fit is a private release**
of the training data. A :class:`~dp_sklearn.PrivacyLedger` passed as ``ledger=`` sees every
one of them (also inside ``clone``, pipelines and joblib workers), composes their
``dp_accounting`` events with the accountant (never by adding epsilons) and can cap the
total.

Cross-validation scores are also computed on private data without noise, so they are not
covered by any guarantee: use them to learn about a public or synthetic dataset, or select
privately with :class:`~dp_sklearn.DPGridSearchCV`.
"""

import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_digits
from sklearn.model_selection import cross_val_score

from dp_sklearn import BudgetExceededError, DPLogisticRegression, PrivacyLedger


X, y = load_digits(return_X_y=True)
X, y = X / 16.0, (y >= 5).astype(int)  # public constant: pixels lie in [0, 16]

# %%
# One 5-fold cross-validation at ``epsilon = 1`` per fit.

ledger = PrivacyLedger(delta=1e-5)
est = DPLogisticRegression(epsilon=1.0, delta=1e-7, data_norm=8.0, ledger=ledger,
                           random_state=0)
scores = cross_val_score(est, X, y, cv=5)
print("fold accuracies:", np.round(scores, 3))
print(f"{len(ledger)} releases, total epsilon {ledger.total_epsilon():.2f} at delta=1e-5")
print(ledger.summary())

# %%
# How the total grows with the number of folds: composed by the accountant it grows like
# the square root of the number of Gaussian releases, far below the sum of the epsilons,
# but it always grows.

folds = range(2, 11)
totals = []
for k in folds:
    led = PrivacyLedger(delta=1e-5)
    cross_val_score(est.set_params(ledger=led), X, y, cv=k)
    totals.append(led.total_epsilon())

# %%
# With a cap, the fit that would exceed it is refused before it touches the data, and the
# ``BudgetExceededError`` stops the whole cross-validation. (``error_score="raise"`` makes
# sure of it: with scikit-learn's default, a failed fit becomes a NaN score.)

capped = PrivacyLedger(max_epsilon=2.0, delta=1e-5)
try:
    cross_val_score(est.set_params(ledger=capped), X, y, cv=10, error_score="raise")
except BudgetExceededError as exc:
    print("refused:", exc)
print(f"{len(capped)} folds ran before the cap; total {capped.total_epsilon():.2f}")

fig, ax = plt.subplots(figsize=(6, 4))
ax.plot(list(folds), [k * 1.0 for k in folds], "s--", color="gray",
        label="sum of epsilons (basic composition)")
ax.plot(list(folds), totals, "o-", label="ledger.total_epsilon() (accountant)")
ax.axhline(2.0, color="tab:red", linestyle=":", label="a cap of max_epsilon=2")
ax.set_xlabel("number of folds (one private fit each, epsilon = 1)")
ax.set_ylabel("total epsilon at delta = 1e-5")
ax.set_title("What cross_val_score spends")
ax.legend()
fig.tight_layout()
plt.show()
