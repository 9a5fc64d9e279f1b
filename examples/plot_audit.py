"""
=============================================
Auditing a mechanism, with a negative control
=============================================

:func:`~dp_sklearn.audit.audit_epsilon` runs a mechanism many times on two neighbouring
datasets, tries to tell the outputs apart with a threshold test, and turns the test's error
rates into a lower bound on epsilon that holds with 95% confidence (Clopper-Pearson). A
correctly calibrated ``epsilon``-DP mechanism must give a lower bound of at most
``epsilon``.

An audit that never fails proves nothing, so each audit comes with a **negative control**:
the same mechanism with too little noise, which the same audit must catch.

1. A Gaussian mechanism (a private mean) whose exact epsilon we know in closed form, with
   its noise scaled down step by step.
2. A real estimator: :class:`~dp_sklearn.DPLogisticRegression` claimed at ``epsilon = 1``,
   and the same estimator run at ``epsilon = 16`` but still *claimed* at 1.
"""

import matplotlib.pyplot as plt
import numpy as np
from scipy.optimize import brentq
from scipy.stats import norm

from dp_sklearn import DPLogisticRegression
from dp_sklearn.audit import audit_epsilon, glm_worst_case_pair

CLAIM, DELTA = 1.0, 1e-5

# A worst-case replace-one pair: 9 shared small records, and one record on the data bound
# that points one way in D and the other way in D'.
D, D_prime = glm_worst_case_pair(n=10, n_features=2, kind="classification", data_norm=1.0)


def gaussian_epsilon(z):
    """Exact epsilon at DELTA of one Gaussian release with noise multiplier z.

    The analytic Gaussian mechanism (Balle & Wang, ICML 2018, Theorem 8): noise of standard
    deviation z times the l2 sensitivity is (epsilon, delta)-DP exactly when
    delta >= Phi(1 / (2 z) - epsilon z) - exp(epsilon) Phi(-1 / (2 z) - epsilon z).
    """

    def delta_of(eps):
        return norm.cdf(0.5 / z - eps * z) - np.exp(eps) * norm.cdf(-0.5 / z - eps * z)

    return brentq(lambda eps: delta_of(eps) - DELTA, 0.0, 500.0)


z_claim = brentq(lambda z: gaussian_epsilon(z) - CLAIM, 0.3, 50)


def private_mean(z):
    def mechanism(X, y, rng):
        sensitivity = 2.0 / len(y)  # replace one row of l2 norm <= 1
        return X.mean(axis=0) + rng.normal(scale=z * sensitivity, size=X.shape[1])

    return mechanism


# %%
# Part 1: the noise multiplier calibrated for ``epsilon = 1``, then divided by 2, 4, 8, 16.

scales = [1, 2, 4, 8, 16]
true_eps = [gaussian_epsilon(z_claim / k) for k in scales]
audited = [
    audit_epsilon(private_mean(z_claim / k), D, D_prime, n_samples=2000, delta=DELTA,
                  random_state=k).epsilon_lower
    for k in scales
]
for k, t, a in zip(scales, true_eps, audited):
    print(f"noise / {k:2d}: true epsilon {t:6.2f}, audited lower bound {a:5.2f}")

# %%
# Part 2: the real estimator, calibrated, and under-noised behind the same claim.


def fit_coefficients(epsilon):
    def mechanism(X, y, rng):
        model = DPLogisticRegression(epsilon=epsilon, delta=DELTA, data_norm=1.0,
                                     fit_intercept=False, random_state=rng)
        return model.fit(X, y).coef_.ravel()

    return mechanism


calibrated = audit_epsilon(fit_coefficients(CLAIM), D, D_prime, n_samples=600, delta=DELTA,
                           random_state=0)
under_noised = audit_epsilon(fit_coefficients(16.0), D, D_prime, n_samples=600, delta=DELTA,
                             random_state=1)
print("calibrated:  ", calibrated)
print("under-noised:", under_noised)
assert calibrated.epsilon_lower <= CLAIM < under_noised.epsilon_lower

# %%
# Every audited lower bound stays below the true epsilon, as it must. With 2000 runs per
# dataset the audit catches the Gaussian mechanism once its noise is divided by 4 (true
# epsilon 4.75), not when it is only halved; and it catches the estimator fitted at
# ``epsilon = 16`` behind a claim of 1. An audit is a test, not a proof: a mechanism that
# passes may still be under-noised by less than the audit can see, which is why each one
# in the test suite is paired with a negative control of known strength.

fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 4))
ax1.plot(true_eps, true_eps, "k--", label="lower bound = true epsilon")
ax1.plot(true_eps, audited, "o-", label="audited lower bound (95%)")
ax1.axhline(CLAIM, color="tab:red", linestyle=":", label="claimed epsilon")
ax1.set_xscale("log")
ax1.set_xlabel("true epsilon of the under-noised Gaussian mechanism")
ax1.set_ylabel("epsilon")
ax1.set_title("Gaussian mean: noise divided by 1 to 16", fontsize="medium")
ax1.legend(fontsize="small")

names = ["DPLogisticRegression\nepsilon=1 (calibrated)", "DPLogisticRegression\nepsilon=16 (claimed 1)"]
bounds = [calibrated.epsilon_lower, under_noised.epsilon_lower]
ax2.bar(names, bounds, color=["tab:green", "tab:red"])
ax2.axhline(CLAIM, color="tab:red", linestyle=":", label="claimed epsilon")
ax2.set_ylabel("audited lower bound on epsilon (95%)")
ax2.set_title("A real estimator and its negative control", fontsize="medium")
ax2.legend(fontsize="small")
fig.tight_layout()
plt.show()
