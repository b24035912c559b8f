"""dpstats.simulate: the Toeplitz design in O(n p), identical to the Cholesky product."""
import numpy as np
import pytest

import dpstats
from dpstats.simulate import ar1_columns, toeplitz_covariance


@pytest.mark.parametrize("rho", [0.0, 0.1, 0.7, -0.5, 0.95])
def test_ar1_columns_equal_the_cholesky_product(rho):
    Z = np.random.default_rng(0).normal(size=(50, 40))
    expected = Z @ np.linalg.cholesky(toeplitz_covariance(40, rho)).T
    np.testing.assert_allclose(ar1_columns(Z, rho), expected, rtol=1e-10, atol=1e-12)
    assert not np.shares_memory(ar1_columns(Z, rho), Z)


def test_simulated_columns_have_the_toeplitz_correlation():
    sim = dpstats.simulate(n=40000, p=6, s=2, rho=0.6, snr=5, random_state=3)
    C = np.corrcoef(sim.data.drop(columns="y").to_numpy().T)
    np.testing.assert_allclose(C, toeplitz_covariance(6, 0.6), atol=0.02)


def test_wide_design_without_a_p_by_p_matrix():
    sim = dpstats.simulate(n=20, p=200_000, s=3, rho=0.3, snr=5, random_state=1)  # 320 GB as a p x p matrix
    assert sim.data.shape == (20, 200_001)
