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


@pytest.mark.parametrize("family, link", [("gaussian", "sign"), ("binomial", "sign"), ("binomial", "logistic")])
@pytest.mark.parametrize("max_rows", [None, 0, 35])
def test_nested_draws_give_simulates_data_sets_value_for_value(family, link, max_rows):
    # One NestedDraws serves n up and down (rows kept, rows beyond max_rows drawn again): each
    # data set equals simulate's with the same seed, bit for bit and in the same layout.
    import pandas as pd
    from dpstats.simulate import NestedDraws

    draws = NestedDraws(30, 3, seed=987_654_321, rho=0.3, snr=2.0, family=family, link=link, max_rows=max_rows)
    for n in (40, 10, 100, 1, 99, 250, 30):
        got = draws.simulate(n)
        want = dpstats.simulate(n, 30, 3, rho=0.3, snr=2.0, random_state=987_654_321, family=family, link=link)
        pd.testing.assert_frame_equal(got.data, want.data, check_exact=True)
        assert got.data.to_numpy().flags.f_contiguous == want.data.to_numpy().flags.f_contiguous
        assert got.sigma == want.sigma and got.support == want.support
    assert draws.rows == (250 if max_rows is None else max_rows)


def test_nested_draws_skip_the_stream_exactly_and_return_fresh_arrays():
    from dpstats.simulate import NestedDraws, _skipping_matches

    assert _skipping_matches()
    draws = NestedDraws(8, 2, seed=5)
    a = draws.simulate(20).data
    a.iloc[:, 1:] = 0.0  # a caller's edits do not reach the kept rows
    assert draws.simulate(20).data.equals(dpstats.simulate(20, 8, 2, random_state=5).data)
