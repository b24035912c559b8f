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


def blocks(n, rho, noise, seed):
    """Two blocks of equicorrelated columns (rho inside each: lambda_min of k of them is 1 - rho for rho > 0,
    1 + (k - 1) rho for rho < 0) and independent columns, plus symmetric noise, unit diagonal."""
    rng = np.random.default_rng(seed)
    C = np.eye(n)
    for block in (range(0, n // 3), range(n // 3, 2 * n // 3)):
        idx = np.array(block)
        C[np.ix_(idx, idx)] = rho
    E = rng.uniform(-noise, noise, size=(n, n))
    C = C + (E + E.T) / 2
    np.fill_diagonal(C, 1.0)
    return C


def smallest(C, j):
    return min(float(np.linalg.eigvalsh(C[np.ix_(B, B)])[0]) for B in combinations(range(C.shape[0]), j))


CASES = [(banded, 13, 0.3, 0.0, 1), (banded, 13, 0.6, 0.02, 2), (banded, 12, 0.1, 0.05, 3),
         (banded, 11, 0.8, 0.0, 4), (blocks, 13, 0.35, 0.02, 5),
         # negative equicorrelation: lambda_min falls by 0.15 with each column, so a column coupled to
         # every column already chosen lowers it most (the node bound must count all of them)
         (blocks, 12, -0.15, 0.0, 6), (blocks, 14, -0.12, 0.02, 7)]


@pytest.mark.parametrize("make, n, rho, noise, seed", CASES)
def test_best_bounds_every_subset_and_beats_gershgorin(make, n, rho, noise, seed):
    """best(j) <= the smallest eigenvalue over every j-set (brute force) and >= Gershgorin's bound, for
    every j; floor(k) stays within the same limits for every k after each search (interlacing passes a
    larger size's bound down); and on the banded matrices the search raises some bound above Gershgorin's."""
    C = make(n, rho, noise, seed)
    floor = SubsetEigenFloor(C)
    truths = {j: smallest(C, j) for j in range(1, 8)}
    higher = 0
    for j in range(1, 8):
        got = floor.best(j)
        assert floor.gershgorin(j) <= got <= truths[j] + 1e-12, (j, got, truths[j])
        higher += got > floor.gershgorin(j) + 1e-6
        for k in range(1, 8):
            assert floor.gershgorin(k) <= floor.floor(k) <= truths[k] + 1e-12, (j, k)
    if make is banded:  # Gershgorin counts each AR neighbour fully; on equicorrelated blocks it can be exact
        assert higher > 0


@pytest.mark.parametrize("make, n, rho, noise, seed", CASES)
def test_shows_is_exact_at_the_smallest_eigenvalue(make, n, rho, noise, seed):
    """shows(j, target) with a budget that lets the search finish and the smaller sizes' bounds at their
    truth less 0.05: True a little below the smallest eigenvalue over the j-sets, False a little above it,
    and then the value it reports is some set's smallest eigenvalue, below the target."""
    C = make(n, rho, noise, seed)
    floor = SubsetEigenFloor(C, node_budget=10 ** 6, total_budget=10 ** 7)
    for j in (3, 4, 5):
        truth = smallest(C, j)
        for r in range(3, j):
            floor._shown[r] = max(floor.floor(r), smallest(C, r) - 0.05)  # as a search would show
        assert floor.shows(j, truth - 1e-3) == (True, None)
        ok, below = floor.shows(j, truth + 1e-3)
        assert not ok and below is not None and below < truth + 1e-3
        values = [float(np.linalg.eigvalsh(C[np.ix_(B, B)])[0]) for k in range(2, j + 1) for B in combinations(range(n), k)]
        assert min(abs(below - v) for v in values) < 1e-9


def test_budgets_end_a_search_as_not_shown():
    C = banded(13, 0.3, 0.0, 1)
    target = smallest(C, 4) - 1e-3
    assert SubsetEigenFloor(C, node_budget=5).shows(4, target) == (False, None)
    floor = SubsetEigenFloor(C, total_budget=5)
    assert floor.best(4) == floor.gershgorin(4) < target  # the budget ran out on the first target
    assert floor.nodes <= 10  # each search stops one node past what is left


def test_clock_is_read_during_a_search():
    calls = []
    C = banded(150, 0.3, 0.0, 5)
    floor = SubsetEigenFloor(C, check_time=lambda: calls.append(1))
    floor.best(6)
    assert calls


@pytest.mark.parametrize("make, n, rho, noise, seed", CASES)
def test_another_schedule_and_a_minimum_stay_between_gershgorin_and_the_truth(make, n, rho, noise, seed):
    """Coarser steps, smaller budgets (the block search's schedule) and a minimum change what is tried, never
    the guarantee: every bound lies between Gershgorin's and the truth.  A minimum no target can clear (the
    exact pair bound less one step per size) tries nothing; one below the truth lets a bound above it through."""
    C = make(n, rho, noise, seed)
    truths = {j: smallest(C, j) for j in range(2, 7)}
    for kw in ({"step": 0.05, "steps": (1, 2, 3), "node_budget": 300}, {"step": 0.1, "steps": (1,)}):
        floor = SubsetEigenFloor(C, **kw)
        for j in range(3, 7):
            got = floor.best(j, minimum=truths[6] - 0.3)
            assert floor.gershgorin(j) <= got <= truths[j] + 1e-12
    floor = SubsetEigenFloor(C)
    unreachable = floor.floor(2) - 4 * floor.step * min(floor.steps)  # j = 6
    assert floor.best(6, minimum=unreachable) == floor.gershgorin(6) and floor.nodes == 0
    # no target at or below the minimum is tried
    floor = SubsetEigenFloor(C)
    tried = []
    shows = floor.shows
    floor.shows = lambda j, target: (tried.append(target), shows(j, target))[1]
    low = truths[5] - 0.05
    got = floor.best(5, minimum=low)
    assert all(t > low for t in tried) and got <= truths[5] + 1e-12


@pytest.mark.parametrize("make, n, rho, noise, seed", CASES)
def test_ranking_a_few_columns_first_keeps_the_search_exact(make, n, rho, noise, seed, monkeypatch):
    """A node ranks its RANKED + r heaviest columns first and every column only where they do not reach the
    target: with RANKED = 0 or 1 nearly every node takes the second path, and best(j) still lies between
    Gershgorin's bound and the truth, and shows stays exact at the smallest eigenvalue; so with the nodes of a
    depth ranked one at a time (CHUNK_ENTRIES = 1)."""
    from dpstats.bss import subset_eigen

    for ranked, entries in ((0, subset_eigen.CHUNK_ENTRIES), (1, 1)):
        monkeypatch.setattr(subset_eigen, "RANKED", ranked)
        monkeypatch.setattr(subset_eigen, "CHUNK_ENTRIES", entries)
        test_best_bounds_every_subset_and_beats_gershgorin(make, n, rho, noise, seed)
        test_shows_is_exact_at_the_smallest_eigenvalue(make, n, rho, noise, seed)


def reference_nodes(C, j, target, remainder):
    """The branch and bound of the module docstring, one node at a time as written there (an independent
    oracle of the tree): the nodes it visits when every node reaches ``target``, or None when one does not."""
    n = C.shape[0]
    squares = C * C
    np.fill_diagonal(squares, 0.0)
    stack = [((b,), np.arange(b + 1, n)) for b in range(n - 1, -1, -1)]
    visited = 0
    while stack:
        P, allowed = stack.pop()
        visited += 1
        if len(P) > 1 and np.linalg.eigvalsh(C[np.ix_(P, P)])[0] < target:
            return None
        r = j - len(P)
        if r == 0 or allowed.size < r:
            continue
        weight = squares[list(P)][:, allowed].sum(axis=0)
        order = np.argsort(-weight, kind="stable")
        sums = np.concatenate(([0.0], np.cumsum(weight[order])))
        xi2 = sums[r:] - sums[:-r]
        alpha = 1.0 if len(P) == 1 else np.linalg.eigvalsh(C[np.ix_(P, P)])[0]
        bound = 0.5 * (alpha + remainder[r]) - np.sqrt(0.25 * (alpha - remainder[r]) ** 2 + xi2)
        reach = np.nonzero(bound >= target)[0]
        h = int(reach[0]) if reach.size else allowed.size - r + 1
        for i in range(h - 1, -1, -1):
            stack.append((P + (int(allowed[order[i]]),), allowed[order[i + 1:]]))
    return visited


@pytest.mark.parametrize("make, n, rho, noise, seed", [case for case in CASES if case[3] > 0])
def test_the_search_visits_the_tree_of_the_module_docstring(make, n, rho, noise, seed):
    """Searched one depth at a time, with a few columns ranked first, the search visits exactly the nodes of the
    tree the module docstring describes, one node at a time (targets it shows; distinct entries, so that the
    ranks have no ties)."""
    C = make(n, rho, noise, seed)
    for j in (3, 4, 5):
        floor = SubsetEigenFloor(C, node_budget=10 ** 6, total_budget=10 ** 7)
        for r in range(3, j):
            floor._shown[r] = max(floor.floor(r), smallest(C, r) - 0.05)
        target = smallest(C, j) - 0.05
        remainder = {r: floor.floor(r) for r in range(1, j)}
        expected = reference_nodes(C, j, target, remainder)
        assert expected is not None
        assert floor.shows(j, target) == (True, None)
        assert floor.nodes == expected
