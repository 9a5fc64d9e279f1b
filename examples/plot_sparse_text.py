"""
====================================================
High-dimensional sparse text classification
====================================================

Text data is high-dimensional and sparse: tens of thousands of words, a few dozen per
document. dp_sklearn works on ``scipy.sparse`` input without densifying it, and its noise
does not need to grow with the vocabulary when the solver suits the geometry.

We simulate a bag-of-words corpus (no download): 4000 documents of 60 words over a
vocabulary of 20000 words with Zipf-like frequencies; documents of the positive class use
60 "topic" words a little more often. Each document's counts are log-scaled and the row is scaled to unit l2 norm: a
per-record transform that uses no statistic of the other records, so it costs no privacy
and gives the public bound ``data_norm=1``.
"""

import time

import matplotlib.pyplot as plt
import numpy as np
import scipy.sparse as sp
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import roc_auc_score
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import normalize

from dp_sklearn import DPLogisticRegression, DPSparseLogisticRegression


rng = np.random.default_rng(0)
n_docs, vocabulary, words_per_doc = 4000, 20000, 60
frequency = 1.0 / np.arange(1, vocabulary + 1) ** 1.1
frequency /= frequency.sum()
topic = rng.choice(np.arange(200, vocabulary), size=60, replace=False)

y = rng.integers(0, 2, size=n_docs)
words = rng.choice(vocabulary, size=(n_docs, words_per_doc), p=frequency)
# Positive documents replace about 12% of their words with topic words.
swap = (rng.random((n_docs, words_per_doc)) < 0.12) & (y[:, None] == 1)
words[swap] = rng.choice(topic, size=swap.sum())
rows = np.repeat(np.arange(n_docs), words_per_doc)
counts = sp.csr_matrix((np.ones(rows.size), (rows, words.ravel())), shape=(n_docs, vocabulary))
counts.sum_duplicates()
X = normalize(counts.log1p(), norm="l2")  # per-record: each row has unit l2 norm
print(f"X: {X.shape}, {X.nnz / n_docs:.0f} non-zeros per row, density {X.nnz / np.prod(X.shape):.4f}")

X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.3, random_state=0)

models = {
    "noisy_gd (l2)": lambda eps: DPLogisticRegression(
        solver="noisy_gd", epsilon=eps, delta=1e-6, data_norm=1.0, random_state=0
    ),
    "mirror_descent (l2)": lambda eps: DPLogisticRegression(
        solver="mirror_descent", epsilon=eps, delta=1e-6, data_norm=1.0, random_state=0
    ),
    "ight (l0, 40 words)": lambda eps: DPSparseLogisticRegression(
        n_nonzero_coefs=40, epsilon=eps, delta=1e-6, data_norm=1.0, random_state=0
    ),
}
epsilons = [0.5, 1.0, 2.0, 5.0, 10.0]
auc = {}
for name, make in models.items():
    start = time.perf_counter()
    auc[name] = [
        roc_auc_score(y_test, make(eps).fit(X_train, y_train).decision_function(X_test))
        for eps in epsilons
    ]
    print(f"{name:22s} AUC {np.round(auc[name], 3)}  ({time.perf_counter() - start:.1f} s)")

non_private = LogisticRegression(C=10.0).fit(X_train, y_train)
non_private_auc = roc_auc_score(y_test, non_private.decision_function(X_test))
print(f"non-private LogisticRegression: AUC {non_private_auc:.3f}")

# %%
# On unit-norm sparse rows the l2 gradient methods give a useful ranking from
# ``epsilon = 1``, with a 20000-word vocabulary and 2800 training documents. The l0 model,
# restricted to 40 words, needs a larger budget, but its model is a short word list that is
# easy to inspect. All fits run on the CSR matrix directly.

fig, ax = plt.subplots(figsize=(6, 4))
for name, values in auc.items():
    ax.plot(epsilons, values, "o-", label=name)
ax.axhline(non_private_auc, color="k", linestyle="--", label="LogisticRegression (non-private)")
ax.axhline(0.5, color="gray", linestyle=":", label="chance")
ax.set_xscale("log")
ax.set_xlabel("epsilon (delta = 1e-6)")
ax.set_ylabel("test ROC AUC")
ax.set_title(f"synthetic text: {vocabulary} words, sparse CSR input")
ax.legend(fontsize="small")
fig.tight_layout()
plt.show()
