"""The bound on lambda_min over every j x j principal submatrix (:mod:`dpstats.bss.subset_eigen`), against
brute force over the subsets."""
from itertools import combinations

import numpy as np
import pytest

from dpstats.bss.subset_eigen import SubsetEigenFloor


def banded(n, rho, noise, seed):
    """A correlation matrix of an AR(1) design with rho, from n * 40 rows (sampling noise off the band),
    plus symmetric noise of size ``noise``, unit diagonal (not necessarily positive definite)."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n * 40, n))
    for k in range(1, n):
        X[:, k] = rho * X[:, k - 1] + np.sqrt(1 - rho ** 2) * X[:, k]
    C = np.corrcoef(X, rowvar=False)
    E = rng.uniform(-noise, noise, size=(n, n))
    C = C + (E + E.T) / 2
    np.fill_diagonal(C, 1.0)
    return C


def smallest(C, j):
    return min(float(np.linalg.eigvalsh(C[np.ix_(B, B)])[0]) for B in combinations(range(C.shape[0]), j))


CASES = [(13, 0.3, 0.0, 1), (13, 0.6, 0.02, 2), (12, 0.1, 0.05, 3), (11, 0.8, 0.0, 4)]


@pytest.mark.parametrize("n, rho, noise, seed", CASES)
def test_floor_bounds_every_subset_and_beats_gershgorin(n, rho, noise, seed):
    """floor(j) <= the smallest eigenvalue over every j-set (brute force), and at least Gershgorin's bound;
    on the banded cases it is strictly higher at some j (the search shows something)."""
    C = banded(n, rho, noise, seed)
    floor = SubsetEigenFloor(C)
    higher = 0
    for j in range(1, 7):
        truth = smallest(C, j)
        got = floor.floor(j)
        assert got <= truth + 1e-12, (j, got, truth)
        assert got >= floor.gershgorin(j)
        higher += got > floor.gershgorin(j) + 1e-6
    assert higher > 0


@pytest.mark.parametrize("n, rho, noise, seed", CASES)
def test_shows_is_exact_at_the_smallest_eigenvalue(n, rho, noise, seed):
    """shows(j, target) with a budget that lets the search finish: True a little below the smallest
    eigenvalue over the j-sets, False a little above it, and then the value it reports is some set's
    smallest eigenvalue below the target."""
    C = banded(n, rho, noise, seed)
    floor = SubsetEigenFloor(C, node_budget=10 ** 6)
    for j in (3, 4, 5):
        truth = smallest(C, j)
        floor.floor(j - 1)
        assert floor.shows(j, truth - 1e-3) == (True, None)
        ok, below = floor.shows(j, truth + 1e-3)
        assert not ok and below is not None and below < truth + 1e-3
        values = {round(float(np.linalg.eigvalsh(C[np.ix_(B, B)])[0]), 9)
                  for k in range(2, j + 1) for B in combinations(range(n), k)}
        assert round(below, 9) in values or any(abs(below - v) < 1e-9 for v in values)


def test_node_budget_ends_a_search_as_not_shown():
    C = banded(13, 0.3, 0.0, 1)
    floor = SubsetEigenFloor(C, node_budget=5)
    assert floor.shows(4, smallest(C, 4) - 1e-3) == (False, None)
    assert floor.floor(4) == floor.gershgorin(4)  # every target ran out of nodes: Gershgorin's is kept


def test_clock_is_read_during_a_search():
    calls = []
    C = banded(150, 0.3, 0.0, 5)
    SubsetEigenFloor(C, check_time=lambda: calls.append(1)).floor(6)
    assert calls
