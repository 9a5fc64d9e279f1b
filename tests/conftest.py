import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer, load_diabetes
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler


def _split(X, y):
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, random_state=0)
    sc = StandardScaler().fit(Xtr)
    return sc.transform(Xtr), sc.transform(Xte), ytr, yte


@pytest.fixture(scope="session")
def diabetes():
    return _split(*load_diabetes(return_X_y=True))


@pytest.fixture(scope="session")
def cancer():
    return _split(*load_breast_cancer(return_X_y=True))


@pytest.fixture
def noisy_gd_audit(monkeypatch):
    """audit(mechanism, D, D_prime): the audit passes at epsilon 1, then catches noisy_gd with 10x less noise.

    The negative control scales ``composed_gaussian_noise_multiplier`` (the noisy_gd calibration) down.
    """
    import dp_sklearn.solvers._common as common_mod
    from dp_sklearn.audit import audit_epsilon

    def audit(mechanism, D, D_prime, epsilon=1.0, delta=1e-5, n_samples=1000):
        res = audit_epsilon(mechanism, D, D_prime, n_samples=n_samples, delta=delta, random_state=0)
        assert res.epsilon_lower <= epsilon, res
        real = common_mod.composed_gaussian_noise_multiplier
        monkeypatch.setattr(common_mod, "composed_gaussian_noise_multiplier", lambda e, d, T: real(e, d, T) / 10)
        bad = audit_epsilon(mechanism, D, D_prime, n_samples=n_samples, delta=delta, random_state=1)
        assert bad.epsilon_lower > epsilon, bad

    return audit
