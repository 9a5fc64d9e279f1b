"""dp_sklearn._accounting: the shared calibrations (analytic Gaussian, T Gaussian steps, zCDP, Poisson
sampling under replace-one) against closed forms, including huge epsilon (issue 8 item 9)."""

import math

import pytest
from dp_accounting import dp_event
from dp_accounting.pld import PLDAccountant
from dp_accounting.rdp import RdpAccountant
from scipy.stats import norm

from dp_sklearn._accounting import composed_gaussian_noise_multiplier, gaussian_noise_multiplier, zcdp_epsilon_upper_bound, zcdp_rho
from dp_sklearn.ledger import compose_epsilon

from solver_helpers import analytic_gaussian_delta


@pytest.mark.parametrize("eps, delta", [(0.1, 1e-5), (1.0, 1e-5), (1.0, 1e-8), (5.0, 1e-6), (20.0, 1e-5)])
def test_gaussian_multiplier_matches_analytic_gaussian(eps, delta):
    z = gaussian_noise_multiplier(eps, delta)
    assert analytic_gaussian_delta(eps, z) == pytest.approx(delta, rel=1e-4)
    assert analytic_gaussian_delta(eps, 0.99 * z) > delta  # tight: 1% less noise fails


@pytest.mark.parametrize("T", [1, 10, 100])
def test_composed_gaussian_is_sqrt_t_and_accountant_agrees(T):
    z = composed_gaussian_noise_multiplier(1.0, 1e-5, T)
    assert z == pytest.approx(math.sqrt(T) * gaussian_noise_multiplier(1.0, 1e-5))
    acc = PLDAccountant()
    acc.compose(dp_event.SelfComposedDpEvent(dp_event.GaussianDpEvent(z), T))
    assert acc.get_epsilon(1e-5) == pytest.approx(1.0, abs=0.01)


@pytest.mark.parametrize("eps, delta", [(0.5, 1e-5), (2.0, 1e-6), (8.0, 1e-2)])
def test_zcdp_rho_is_at_least_closed_form_and_private(eps, delta):
    rho = zcdp_rho(eps, delta)
    closed = (math.sqrt(math.log(1 / delta) + eps) - math.sqrt(math.log(1 / delta))) ** 2
    assert zcdp_epsilon_upper_bound(closed, delta) == pytest.approx(eps)
    assert rho >= closed
    acc = RdpAccountant()
    acc.compose(dp_event.ZCDpEvent(rho))
    assert acc.get_epsilon(delta) <= eps + 1e-9


@pytest.mark.parametrize("eps", [1e7, 1e200, 1e308])
def test_calibration_at_huge_epsilon(eps):
    """Issue 8 item 9: huge finite epsilon gives tiny but valid noise, never a scipy NaN failure."""
    z = gaussian_noise_multiplier(eps, 1e-5)
    assert 0 < z < 1e-3
    if eps < 1e10:  # sufficient condition of Balle & Wang's Theorem 8: Phi(1/(2z) - eps z) <= delta
        assert norm.cdf(1 / (2 * z) - eps * z) <= 1e-5 * (1 + 1e-6)
    else:  # there the root of eps z^2 - t z - 1/2 is 1/sqrt(2 eps) to float precision
        assert z * math.sqrt(2.0) * math.sqrt(eps) == pytest.approx(1.0, rel=1e-12)
    rho = zcdp_rho(eps, 1e-5)
    assert 0 < rho <= eps and math.isfinite(rho)
    if eps < 1e300:  # (the closed form's epsilon itself overflows near the largest float)
        assert zcdp_epsilon_upper_bound(rho, 1e-5) <= eps * (1 + 1e-12)
    for bad in (float("nan"), 0.0, -1.0):
        with pytest.raises(ValueError, match="epsilon"):
            gaussian_noise_multiplier(bad, 1e-5)
        with pytest.raises(ValueError, match="epsilon"):
            zcdp_rho(bad, 1e-5)


def test_huge_epsilon_closed_form_agrees_with_the_library_at_the_switch():
    from dp_accounting import gaussian_mechanism

    lib = gaussian_mechanism.get_sigma_gaussian(1e6, 1e-5)
    assert gaussian_noise_multiplier(1e6 * (1 + 1e-9), 1e-5) == pytest.approx(lib, rel=1e-5)


@pytest.mark.parametrize("q", [1.0, 0.1])
def test_poisson_noise_multiplier_replace_one(q):
    """Moved from the solver: same PLD discretization as composition; q = 1 is 2 z_full (sensitivity 2)."""
    from dp_sklearn._accounting import poisson_noise_multiplier

    zp = poisson_noise_multiplier(1.0, 1e-5, 10, q)
    ev = dp_event.SelfComposedDpEvent(dp_event.PoissonSampledDpEvent(q, dp_event.GaussianDpEvent(zp)), 10)
    assert compose_epsilon([ev], 1e-5) == pytest.approx(1.0, abs=5e-3)
    if q == 1.0:
        assert zp == pytest.approx(2 * composed_gaussian_noise_multiplier(1.0, 1e-5, 10), rel=2e-3)
