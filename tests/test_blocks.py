"""Exact mistakes blocks by Schur-complement branch and bound against brute force (issue 3)."""
import numpy as np
import pytest

from dpstats.bss.blocks import BlockSearchSettings, minimise_block
from dpstats.bss.engine import OuterApproximationEngine
from dpstats.bss.gram import GramSource, MatrixFreeSource
from dpstats.bss.objective import RidgeBallObjective, SufficientStats

from test_engine import brute, instance


def declare(monkeypatch, **fields):
    """Declare block-search settings for this test (the defaults with ``fields`` replaced),
    on top of any declared earlier in the same test."""
    from dataclasses import replace

    from dpstats.bss import blocks

    monkeypatch.setattr(blocks, "DEFAULT_BLOCK_SETTINGS", replace(blocks.DEFAULT_BLOCK_SETTINGS, **fields))


def block_oracle(stats, s, lam, r, anchor):
    sups, vals, _ = brute(stats, s, lam, r)
    in0 = np.zeros(stats.candidates.size, dtype=bool)
    in0[list(anchor)] = True
    count = (~in0[sups]).sum(axis=1)
    return sups, vals, count


def anchored_oracle(stats, s, lam, r):
    """(sups, vals, count, evaluate, full anchor, anchor): block counts relative to the best support."""
    obj = RidgeBallObjective(stats, lam, r)
    sups, vals, order = brute(stats, s, lam, r)
    evaluate = lambda a: obj.values(obj.full_support(stats.candidates[np.asarray(a)]))  # noqa: E731
    offset = stats.forced.size
    anchor = tuple(sups[order[0]])
    _, _, count = block_oracle(stats, s, lam, r, anchor)
    full = np.concatenate([[0] * offset, np.array(anchor) + offset]).astype(np.int64)
    return sups, vals, count, evaluate, full, anchor


def anchored_case(case, n):
    """A PREFIX_CASES-style case at n rows: (stats, sups, vals, count, evaluate, full anchor,
    anchor, offset, GramSource at the case's ridge and radius)."""
    seed, p, s, rho, snr, lam, r, icpt = case
    stats, _, _ = instance(seed, n=n, p=p, s=s, rho=rho, snr=snr, intercept=icpt)
    sups, vals, count, evaluate, full, anchor = anchored_oracle(stats, s, lam, r)
    return stats, sups, vals, count, evaluate, full, anchor, (1 if icpt else 0), GramSource(stats, lam, r)


CASES = [
    # seed, p, s, rho, snr, lam, r, intercept
    (0, 10, 3, 0.1, 5.0, 20.0, 1.1, True),    # ball inactive near the optimum
    (1, 11, 4, 0.5, 1.0, 5.0, 0.4, False),    # ball active: the weak-duality bound with mu > 0
    (2, 12, 3, 0.8, 0.5, 1.0, 50.0, True),    # small ridge, strong correlation
    (3, 9, 4, 0.0, 10.0, 100.0, 0.3, False),
]


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("matrix_free", [False, True])
def test_block_minimum_matches_brute_force(case, matrix_free):
    seed, p, s, rho, snr, lam, r, icpt = case
    stats, Xf, y = instance(seed, p=p, s=s, rho=rho, snr=snr, intercept=icpt)
    source = MatrixFreeSource(Xf, y, lam, r, intercept=icpt) if matrix_free else GramSource(stats, lam, r)
    obj = RidgeBallObjective(stats, lam, r)
    sups, vals, _ = brute(stats, s, lam, r)
    rng = np.random.default_rng(seed)
    offset = 1 if icpt else 0
    evaluate = lambda a: obj.values(obj.full_support(stats.candidates[np.asarray(a)]))  # noqa: E731
    slack = 1e-7
    for anchor in [tuple(sups[np.argmin(vals)]), tuple(sorted(rng.choice(p, s, replace=False)))]:
        _, _, count = block_oracle(stats, s, lam, r, anchor)
        full = np.concatenate([[0] * offset, np.array(anchor) + offset]).astype(np.int64)
        for i in range(1, min(s, p - s) + 1):
            members = np.nonzero(count == i)[0]
            truth = vals[members].min()
            # a deliberately poor incumbent: the worst member of the block
            worst = members[np.argmax(vals[members])]
            for mu in (0.0, 3.0):
                res = minimise_block(source, full, offset, i, (tuple(sups[worst]), vals[worst]), slack,
                                     evaluate, mu=mu)
                assert res is not None
                assert len(set(res.support) - set(anchor)) == i
                assert res.value == pytest.approx(evaluate(np.array([res.support]))[0], abs=1e-9)
                assert res.value <= truth + slack + 1e-9
                assert res.lower_bound <= truth + 1e-9  # never above the exact block minimum
                assert res.lower_bound >= res.value - slack - 1e-9


def test_node_cap_gives_up_and_engine_falls_back():
    stats, _, _ = instance(4, p=12, s=4, rho=0.3, snr=0.5, intercept=True)
    lam, r = 2.0, 100.0
    sups, vals, order = brute(stats, 4, lam, r)
    anchor = tuple(sups[order[0]])
    full = np.concatenate([[0], np.array(anchor) + 1]).astype(np.int64)
    obj = RidgeBallObjective(stats, lam, r)
    evaluate = lambda a: obj.values(obj.full_support(stats.candidates[np.asarray(a)]))  # noqa: E731
    _, _, count = block_oracle(stats, 4, lam, r, anchor)
    worst = np.nonzero(count == 3)[0][np.argmax(vals[count == 3])]
    assert minimise_block(GramSource(stats, lam, r), full, 1, 3, (tuple(sups[worst]), vals[worst]), 1e-7,
                          evaluate, settings=BlockSearchSettings(max_nodes=1)) is None
    # the engine on the MILP path only (exact blocks off, and with a one-node cap) agrees
    for setting in ({"exact_blocks": False}, {"block_search": BlockSearchSettings(max_nodes=1)}):
        eng = OuterApproximationEngine.from_stats(stats, 4, lam, r, 1e-6, **setting)
        mis = eng.mistakes()
        for i, c in enumerate(mis, 1):
            assert c.value <= vals[count == i].min() + 1e-6
            assert c.lower_bound <= vals[count == i].min() + 1e-9
        assert all(not e.get("exact", False) for e in eng.stats.log if "block" in e)


# ------------------------------------------------------------ the coherence screen
@pytest.mark.parametrize("matrix_free", [False, True])
@pytest.mark.parametrize("intercept", [False, True])
def test_column_coherence_matches_brute_force(matrix_free, intercept):
    from dpstats.bss.coherence import column_coherence

    stats, Xf, y = instance(7, p=23, s=3, rho=0.6, snr=2.0, intercept=intercept)
    lam, k = 2.5, 4
    source = MatrixFreeSource(Xf, y, lam, 1.0, intercept=intercept) if matrix_free else GramSource(stats, lam, 1.0)
    # a tiny block size forces several row blocks and the transposed updates
    off = 1 if intercept else 0
    anchor = np.array([off + 2, off + 5])
    got = column_coherence(source, lam, k, exclude=anchor, block_bytes=8 * source.n_columns * 5)
    G = Xf.T @ Xf
    scale = 1.0 / np.sqrt(np.diag(G) + lam)
    N = np.abs(G) * np.outer(scale, scale)
    np.fill_diagonal(N, 0.0)
    N[:, :off] = 0.0
    N[:, anchor] = 0.0
    want = -np.sort(-N, axis=1)[:, :k]
    rows = np.setdiff1d(np.arange(off, source.n_columns), anchor)  # the columns a block can add
    assert np.all(got[rows] >= want[rows])  # an upper bound (rounding margin)
    np.testing.assert_allclose(got[rows], want[rows], atol=1e-9)
    # cached per (ridge, k); a smaller k is a prefix
    np.testing.assert_allclose(column_coherence(source, lam, 2, exclude=anchor), got[:, :2])
    # another anchor is another profile
    assert not np.allclose(column_coherence(source, lam, k, exclude=anchor[:1]), got)


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("matrix_free", [False, True])
def test_coherence_screen_keeps_blocks_exact(case, matrix_free, monkeypatch):
    """The screen by |v_B|^2 / gamma_0 (used above 64 columns) on every instance."""

    declare(monkeypatch, coherence_above=0)
    test_block_minimum_matches_brute_force(case, matrix_free)


def case_blocks(case):
    """A CASES case's (stats, sups, vals, evaluate, full anchor, anchor, offset, (ridge, radius),
    [(i, the block's members, their values sorted)] for the blocks i >= 2)."""
    seed, p, s, rho, snr, lam, r, icpt = case
    stats, _, _ = instance(seed, p=p, s=s, rho=rho, snr=snr, intercept=icpt)
    sups, vals, count, evaluate, full, anchor = anchored_oracle(stats, s, lam, r)
    per_block = []
    for i in range(2, min(s, p - s) + 1):
        members = np.nonzero(count == i)[0]
        per_block.append((i, members, np.sort(vals[members])))
    return stats, sups, vals, evaluate, full, anchor, (1 if icpt else 0), (lam, r), per_block


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("coherence", [False, True])
def test_block_supports_below_lists_every_support_under_the_threshold(case, coherence, monkeypatch):
    from dpstats.bss import blocks

    if coherence:
        declare(monkeypatch, coherence_above=0)
    stats, sups, vals, evaluate, full, anchor, offset, (lam, r), per_block = case_blocks(case)
    for i, members, ranked in per_block:
        for q in (0, 3, min(20, ranked.size - 1)):
            thr = float(ranked[q])
            for mu in (0.0, 2.0):
                res = blocks.block_supports_below(GramSource(stats, lam, r), full, offset, i, thr, evaluate, mu=mu)
                listed = set(res.supports)
                below = {tuple(int(j) for j in sups[m]) for m in members if vals[m] < thr}
                assert below <= listed
                assert all(len(set(t) - set(anchor)) == i for t in listed)
                np.testing.assert_allclose(res.values, evaluate(np.array(res.supports)) if listed else [], atol=1e-9)


@pytest.mark.parametrize("case", CASES)
def test_a_falling_threshold_lists_every_support_under_the_smallest_one_read(case):
    """A callable threshold read afresh per removed set (as the certified lists do): every
    support of the block below the smallest threshold read (the one returned) is listed,
    whether the threshold falls fast or not at all."""
    from dpstats.bss import blocks

    stats, sups, vals, evaluate, full, anchor, offset, (lam, r), per_block = case_blocks(case)
    for i, members, ranked in per_block:
        for step in (0, 1, 3):  # how many ranks the threshold falls per read
            reads = []

            def threshold():
                reads.append(float(ranked[max(min(20, ranked.size - 1) - step * len(reads), 0)]))
                return reads[-1]

            res = blocks.block_supports_below(GramSource(stats, lam, r), full, offset, i, threshold, evaluate)
            assert res.threshold == min(reads)
            below = {tuple(int(j) for j in sups[m]) for m in members if vals[m] < res.threshold}
            assert below <= set(res.supports)
            if step == 0:  # a constant threshold: the fixed-threshold call's list
                fixed = blocks.block_supports_below(GramSource(stats, lam, r), full, offset, i, reads[0], evaluate)
                assert set(fixed.supports) == set(res.supports) and fixed.threshold == res.threshold


def test_kth_smallest_reads_the_values_again_only_when_they_grew():
    from dpstats.bss.certificate_routes import KthSmallest

    values = {(0, 1): 5.0, (0, 2): 3.0, (1, 2): 4.0}
    third, first = KthSmallest(values, 3), KthSmallest(values, 1)
    assert third() == 5.0 and first() == 3.0
    values[(0, 3)] = 1.0
    assert third() == 4.0 and first() == 1.0
    values[(1, 3)] = 9.0
    assert third() == 4.0 and KthSmallest(values, 5)() == 9.0


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("design", ["hidden", "toeplitz"])
def test_coherence_gamma_bounds_every_subset(seed, design):
    """gamma_0 <= lambda_min(M_B) for every i-subset B, M the scaled Schur complement at T.

    "hidden": x0 = t + g, x1 = t - g are nearly orthogonal in G but nearly opposite once
    t (in T) is partialled out, so only the w_j w_k term of the bound sees the pair.
    "toeplitz": weakly correlated columns (rho = 0.2), where gamma_0 is positive.
    """
    from itertools import combinations

    from dpstats.bss.blocks import schur_scaling
    from dpstats.bss.coherence import coherence_gamma, column_coherence

    rng = np.random.default_rng(seed)
    p, n = 9, 400
    if design == "hidden":
        X = rng.standard_normal((n, p))
        t, g = X[:, 2].copy(), rng.standard_normal(n)
        X[:, 0] = t + g + 0.3 * X[:, 0]
        X[:, 1] = t - g + 0.3 * X[:, 1]
    else:
        Z = rng.standard_normal((n, p))
        X = Z.copy()
        for j in range(1, p):
            X[:, j] = 0.2 * X[:, j - 1] + np.sqrt(1 - 0.04) * Z[:, j]
    y = X[:, :3].sum(axis=1) + rng.standard_normal(n)
    ridge, mu = float(rng.uniform(0.5, 5.0)), float(rng.choice([0.0, 5.0]))
    source = MatrixFreeSource(X, y, ridge, 1.0)
    lam = ridge + mu
    G = X.T @ X
    anchor = np.array(sorted({2} | set(rng.choice(np.arange(3, p), 3, replace=False).tolist())))
    T = anchor[:3]  # D = the last anchor column
    O = np.setdiff1d(np.arange(p), anchor)
    K = G[np.ix_(T, T)] + lam * np.eye(T.size)
    Sch = G[np.ix_(O, O)] + lam * np.eye(O.size) - G[np.ix_(O, T)] @ np.linalg.solve(K, G[np.ix_(T, O)])
    sq = np.sqrt(np.diag(Sch))
    M = Sch / np.outer(sq, sq)
    d, f, e = schur_scaling(source, ridge, lam, O, G[np.ix_(O, T)], K)
    np.testing.assert_allclose(d, np.diag(Sch), rtol=1e-10)
    N = column_coherence(source, ridge, p - 1, exclude=anchor)
    # the entrywise bound |M_jk| <= f_j f_k N_jk + e_j e_k behind gamma_0
    scale = 1.0 / np.sqrt(np.diag(G) + ridge)
    Nfull = np.abs(G) * np.outer(scale, scale)
    bound = np.outer(f, f) * Nfull[np.ix_(O, O)] + np.outer(e, e)
    off = ~np.eye(O.size, dtype=bool)
    assert np.all(np.abs(M)[off] <= bound[off] + 1e-12)
    if design == "hidden":
        # the T-correction is what makes the pair (0, 1) nearly collinear
        assert abs(M[0, 1]) > 2 * f[0] * f[1] * Nfull[0, 1] + 0.3
    for i in (2, 3):
        ntop = N[O, :i - 1].sum(axis=1)
        gamma = coherence_gamma(f, e, ntop, i)
        rows = [np.sort(np.delete(bound[j], j))[::-1][:i - 1].sum() for j in range(O.size)]
        assert gamma <= 1.0 - max(rows) + 1e-9  # no sharper than the entrywise bound allows
        worst = min(np.linalg.eigvalsh(M[np.ix_(B, B)])[0] for B in map(list, combinations(range(O.size), i)))
        assert gamma <= worst + 1e-12
        if design == "toeplitz":
            assert gamma > 0.5 - 0.25 * i  # useful, not vacuous


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("matrix_free", [False, True])
def test_lazy_schur_columns_match_brute_force(seed, matrix_free):
    """Above max_columns the search forms a column of M only when it picks that column."""
    from dpstats.bss import blocks

    p, s = 16, 4
    stats, Xf, y = instance(seed, n=400, p=p, s=s, rho=0.1, snr=float([0.5, 2.0, 5.0, 10.0][seed]), intercept=bool(seed % 2))
    icpt = bool(seed % 2)
    lam, r = [1.0, 5.0, 20.0, 2.0][seed], [50.0, 1.1, 0.5, 10.0][seed]
    source = MatrixFreeSource(Xf, y, lam, r, intercept=icpt) if matrix_free else GramSource(stats, lam, r)
    sups, vals, count, evaluate, full, _ = anchored_oracle(stats, s, lam, r)
    offset = 1 if icpt else 0
    for i in range(2, s + 1):
        members = np.nonzero(count == i)[0]
        worst = members[np.argmax(vals[members])]
        res = minimise_block(source, full, offset, i, (tuple(sups[worst]), vals[worst]), 1e-7, evaluate,
                             settings=BlockSearchSettings(max_columns=1))
        assert res is not None
        assert res.value <= vals[members].min() + 1e-7 + 1e-9
        thr = float(np.sort(vals[members])[min(5, members.size - 1)])
        below = blocks.block_supports_below(source, full, offset, i, thr, evaluate,
                                            settings=BlockSearchSettings(max_columns=1))
        assert {tuple(int(j) for j in sups[m]) for m in members if vals[m] < thr} <= set(below.supports)


@pytest.mark.parametrize("k", [1, 2, 3, 7])
def test_later_top_sums_bound_every_suffix(k):
    from dpstats.bss.blocks import SUFFIX_STEP, _later_top_sums

    rng = np.random.default_rng(k)
    x = rng.exponential(size=77)
    count = x.size - 2
    upper = _later_top_sums(x, k, count)
    exact = np.array([np.sort(x[t + 1:])[::-1][:k].sum() for t in range(count)])
    assert np.all(upper >= exact - 1e-12)  # a valid bound at every position
    grid = np.arange(0, count, SUFFIX_STEP) if k > 1 else np.arange(count)
    np.testing.assert_allclose(upper[grid], exact[grid], rtol=1e-12)  # and exact where computed


@pytest.mark.parametrize("k", [0, 1, 3, 9])
def test_top_sums_after_every_start_equal_a_sort_of_the_suffix(k):
    from dpstats.bss.blocks import _top_sums_after

    rng = np.random.default_rng(40 + k)
    for x in (rng.exponential(size=50), np.round(rng.uniform(size=50), 1), np.array([2.0])):  # ties too
        for count in (1, max(1, x.size // 3)):  # a few starts (one partition each) and many (one sort)
            starts = np.sort(rng.choice(x.size, size=count, replace=False))
            got = _top_sums_after(x, k, starts)
            exact = np.array([np.sort(x[t + 1:])[::-1][:k].sum() for t in starts])
            np.testing.assert_allclose(got, exact, rtol=1e-12, atol=0)


# s = 6 and 7: removed sets D with many extensions, so the removal-prefix tree tests prefixes
PREFIX_CASES = [
    # seed, p, s, rho, snr, lam, r, intercept
    (5, 13, 6, 0.3, 8.0, 10.0, 1.1, True),
    (6, 13, 7, 0.6, 1.0, 2.0, 0.5, False),   # ball active, weaker signal: fewer prefixes pruned
    (7, 12, 6, 0.0, 20.0, 30.0, 50.0, False),
]


# The s = 7 case (the slowest) runs with the default prefix settings by default; its three other
# settings are exhaustive checks of the same tree (about 7 s): pytest -m slow.
REMOVAL_PREFIX_PARAMS = [pytest.param(case, test_from, test_nodes, lazy,
                                      marks=(pytest.mark.slow,) if case[2] == 7 and (test_from, test_nodes) != (4, 256) else ())
                         for test_from, test_nodes, lazy in [(1, 10**6, False), (4, 256, False), (1, 0, False),
                                                             (10**9, 256, False), (1, 10**6, True)]
                         for case in PREFIX_CASES]


@pytest.mark.parametrize("case, test_from, test_nodes, lazy", REMOVAL_PREFIX_PARAMS)
def test_removal_prefix_tree_keeps_blocks_exact(case, test_from, test_nodes, lazy, monkeypatch):
    """Superset bound on removal prefixes: both block queries equal brute force.

    (1, 10^6): every prefix tested to the end; (4, 256): the defaults; (1, 0): every test
    abandoned at once (children always expanded); (10^9, _): no prefix tested (flat loop);
    ``lazy``: every superset test and removed set's search on lazily formed Schur columns
    (prefix_test_max_columns = gram_max_columns = 0), the full model's bound off so that they decide.
    """
    from math import comb

    from dpstats.bss import blocks

    declare(monkeypatch, prefix_test_from=test_from, prefix_test_nodes=test_nodes,
            **({"prefix_test_max_columns": 0, "gram_max_columns": 0, "gram_lazy_below_nodes": 10**9,
                "full_model_bound": False} if lazy else {}))
    seed, p, s, rho, snr, lam, r, icpt = case
    stats, sups, vals, count, evaluate, full, anchor, offset, source = anchored_case(case, 80)
    rng = np.random.default_rng(seed)
    other = tuple(sorted(rng.choice(p, s, replace=False)))
    for anchor_k in (anchor, other):
        _, _, count_k = block_oracle(stats, s, lam, r, anchor_k)
        full_k = np.concatenate([[0] * offset, np.array(anchor_k) + offset]).astype(np.int64)
        for i in range(2, min(s, p - s) + 1):
            members = np.nonzero(count_k == i)[0]
            ranked = np.sort(vals[members])
            for q in (0, min(10, ranked.size - 1)):
                thr = float(ranked[q])
                res = blocks.block_supports_below(source, full_k, offset, i, thr, evaluate, mu=1.0)
                below = {tuple(int(j) for j in sups[m]) for m in members if vals[m] < thr}
                assert below <= set(res.supports)
                assert all(len(set(t) - set(anchor_k)) == i for t in res.supports)
            worst = members[np.argmax(vals[members])]
            res = blocks.minimise_block(source, full_k, offset, i, (tuple(sups[worst]), vals[worst]),
                                        1e-7, evaluate)
            truth = vals[members].min()
            assert res.value <= truth + 1e-7 + 1e-9
            assert res.lower_bound <= truth + 1e-9
            assert res.dropped_sets == comb(s, i)  # every removed set D visited or skipped exactly once


def test_removal_prefix_tree_skips_removed_sets(monkeypatch):
    """With a strong signal, dropping one true column already costs more than any B recovers."""
    from math import comb

    from dpstats.bss import blocks

    declare(monkeypatch, full_model_bound=False)  # it would decide these blocks before any prefix test

    stats, _, _ = instance(8, n=200, p=16, s=7, rho=0.2, snr=30.0, intercept=True)
    lam, r = 5.0, 100.0
    sups, vals, count, evaluate, full, anchor = anchored_oracle(stats, 7, lam, r)
    calls = []
    search_at = blocks.BlockSearch.schur_at

    def counting(self, T, threshold):
        calls.append(T.size)
        return search_at(self, T, threshold)

    blocks.BlockSearch.schur_at = counting
    try:
        for i in (3, 4, 5):
            calls.clear()
            thr = float(np.sort(vals)[5])
            res = blocks.block_supports_below(GramSource(stats, lam, r), full, 1, i, thr, evaluate)
            members = np.nonzero(count == i)[0]
            assert {tuple(int(j) for j in sups[m]) for m in members if vals[m] < thr} <= set(res.supports)
            assert len(calls) < 0.7 * comb(7, i)  # the flat loop makes C(7, i) calls
            assert max(calls) > full.size - i  # prefixes, not only whole removed sets
    finally:
        blocks.BlockSearch.schur_at = search_at


@pytest.mark.parametrize("case", [
    # seed, p, s, rho, snr, lam, r, intercept: strong signal, so removing true columns costs more
    # than new columns recover and prefixes are pruned
    (11, 18, 6, 0.2, 20.0, 1.0, 5.0, False),
    (12, 18, 7, 0.5, 10.0, 0.5, 2.0, True),
])
@pytest.mark.parametrize("descending", [True, False])
def test_prefixes_pruned_in_larger_blocks_keep_smaller_blocks_exact(case, descending, monkeypatch):
    """One ``pruned_prefixes`` dict shared by every block of an anchor, at one threshold,
    blocks in either order (the engine goes from the largest down): each block still lists
    every support below the threshold, and going down the shared prefixes save nodes."""
    from dpstats.bss import blocks

    # test many prefixes; the full model's bound would decide these strong blocks before any prefix test
    declare(monkeypatch, prefix_test_from=1, full_model_bound=False)
    seed, p, s, rho, snr, lam, r, icpt = case
    stats, _, _ = instance(seed, n=200, p=p, s=s, rho=rho, snr=snr, intercept=icpt)
    sups, vals, count, evaluate, full, anchor = anchored_oracle(stats, s, lam, r)
    offset = 1 if icpt else 0
    source = GramSource(stats, lam, r)
    sizes = list(range(2, min(s, p - s) + 1))
    if descending:
        sizes = sizes[::-1]
    searches = [0]
    leaves_at = blocks.BlockSearch.leaves_at

    def counted(self, *args, **kwargs):
        searches[0] += 1
        return leaves_at(self, *args, **kwargs)

    monkeypatch.setattr(blocks.BlockSearch, "leaves_at", counted)
    # thresholds with supports below them in the smaller blocks and none in the largest ones
    fourth = [float(np.sort(vals[count == i])[3]) for i in range(2, min(s, p - s) + 1)]
    for thr in (fourth[0], fourth[len(fourth) // 2]):
        shared, searches_shared, searches_alone = {}, 0, 0
        for i in sizes:
            members = np.nonzero(count == i)[0]
            below = {tuple(int(j) for j in sups[m]) for m in members if vals[m] < thr}
            searches[0] = 0
            res = blocks.block_supports_below(source, full, offset, i, thr, evaluate, mu=1.0,
                                              pruned_prefixes=shared)
            assert below <= set(res.supports)
            searches_shared += searches[0]
            searches[0] = 0
            blocks.block_supports_below(source, full, offset, i, thr, evaluate, mu=1.0)
            searches_alone += searches[0]
        assert shared  # some prefix was pruned
        assert searches_shared <= searches_alone
        if descending:  # larger blocks first: their pruned prefixes are not searched again
            assert searches_shared < searches_alone
    if descending:
        return
    # the rule itself: an entry counts for blocks up to its own size, not beyond
    movable = np.array(anchor)
    i = 3
    mem = np.nonzero(count == i)[0]
    drops_first = np.array([movable[0] not in set(sups[m]) for m in mem])
    thr = float(vals[mem[drops_first]].min()) + 1e-9  # one support removing anchor[0] lies below
    target = {tuple(int(j) for j in sups[m]) for m in mem[drops_first] if vals[m] < thr}
    res = blocks.block_supports_below(source, full, offset, i, thr, evaluate, mu=1.0,
                                      pruned_prefixes={(0,): i - 1})  # pruned in a smaller block only
    assert target <= set(res.supports)
    recorded = 0
    for i in sizes:
        fresh = {}
        blocks.block_supports_below(source, full, offset, i, fourth[0], evaluate, mu=1.0, pruned_prefixes=fresh)
        assert set(fresh.values()) <= {i}  # recorded at the size of the block that pruned
        recorded += len(fresh)
    assert recorded


@pytest.mark.parametrize("case", [(11, 18, 6, 0.2, 20.0, 1.0, 5.0, False), (12, 18, 7, 0.5, 10.0, 0.5, 2.0, True)])
@pytest.mark.parametrize("budgets", [(1, 1), (1, 4), (256, 256)])
def test_prefix_budgets_change_the_work_not_the_lists(case, budgets, monkeypatch):
    """The superset tests' node budget adapts per prefix length (halved after a test that
    gave up, doubled after a late prune) and is shared by the blocks of an anchor: at any
    budget, down to tests that give up after one node, each block still lists every support
    below the threshold, and a test that gives up is recorded as a smaller budget."""
    from dpstats.bss import blocks

    low, high = budgets
    # test many prefixes (the full model's bound, which would decide most of them first, off)
    declare(monkeypatch, prefix_test_from=1, prefix_test_min_nodes=low, prefix_test_nodes=high, full_model_bound=False)
    outcomes = []
    test_prefix = blocks.BlockSearch.try_prefix

    def recorded(self, T_, threshold, depth):
        before = dict(self.prefix_budgets)
        pruned = test_prefix(self, T_, threshold, depth)
        outcomes.append((before.get(depth, high), self.prefix_budgets.get(depth, high), pruned))
        return pruned

    monkeypatch.setattr(blocks.BlockSearch, "try_prefix", recorded)
    p, s = case[1], case[2]
    stats, sups, vals, count, evaluate, full, anchor, offset, source = anchored_case(case, 200)
    sizes = list(range(min(s, p - s), 1, -1))
    fourth = [float(np.sort(vals[count == i])[3]) for i in sorted(sizes)]
    for thr in (fourth[0], fourth[len(fourth) // 2]):
        shared_prefixes, shared_budgets = {}, {}
        for i in sizes:
            members = np.nonzero(count == i)[0]
            below = {tuple(int(j) for j in sups[m]) for m in members if vals[m] < thr}
            res = blocks.block_supports_below(source, full, offset, i, thr, evaluate, mu=1.0,
                                              pruned_prefixes=shared_prefixes, prefix_budgets=shared_budgets)
            assert below <= set(res.supports)
            assert all(low <= b <= high for b in shared_budgets.values())
    assert outcomes and any(pruned for _, _, pruned in outcomes)
    if low < high:  # some test gave up, and its length's budget went down
        assert any(after < before for before, after, pruned in outcomes if not pruned)


# The larger PREFIX_CASES run with the ball bound by default; the other two bounds on them are
# exhaustive checks of the same block code (about 13 s): pytest -m slow.
EITHER_BRANCH_PARAMS = [pytest.param(case, bound, marks=(pytest.mark.slow,) if case in PREFIX_CASES and bound != "ball" else ())
                        for case in CASES + PREFIX_CASES for bound in ("ridge", "eigen", "ball")]


@pytest.mark.parametrize("case, bound", EITHER_BRANCH_PARAMS)
def test_either_branch_bound_keeps_blocks_exact(case, bound, monkeypatch):
    """Delta(Q | P) <= sum(gains) / gamma, <= sum(gains * kappa) and <= g(|u~_Q|) (the ball
    bound): each alone is exact."""
    from dpstats.bss import blocks

    declare(monkeypatch, force_bound=bound)
    if case in CASES:
        test_block_minimum_matches_brute_force(case, False)
        test_block_supports_below_lists_every_support_under_the_threshold(case, False, monkeypatch)
    else:
        test_removal_prefix_tree_keeps_blocks_exact(case, 1, 10**6, False, monkeypatch)
    # thresholds high in the block: supports whose gain is barely above h_D must be listed
    seed, p, s, rho, snr, lam, r, icpt = case
    stats, _, _ = instance(seed, n=80 if case in PREFIX_CASES else 60, p=p, s=s, rho=rho, snr=snr, intercept=icpt)
    for lam_k in (lam, 50.0 * lam):  # a large ridge makes the ridge bound nearly tight
        sups, vals, count, evaluate, full, anchor = anchored_oracle(stats, s, lam_k, r)
        for i in range(2, min(s, p - s) + 1):
            members = np.nonzero(count == i)[0]
            ranked = np.sort(vals[members])
            for thr in (ranked[ranked.size // 2], ranked[-1]):
                res = blocks.block_supports_below(GramSource(stats, lam_k, r), full, 1 if icpt else 0, i, float(thr),
                                                  evaluate)
                below = {tuple(int(j) for j in sups[m]) for m in members if vals[m] < thr}
                assert below <= set(res.supports)


@pytest.mark.parametrize("seed", range(3))
def test_lazy_search_without_usable_gamma_uses_the_ridge_bound(seed, monkeypatch):
    """More candidates than rows (n < p): the coherence gamma_0 is <= 0, and the large-set
    search still certifies with the ridge bound instead of giving up."""
    from dpstats.bss import blocks

    declare(monkeypatch, coherence_above=0)
    stats, Xf, y = instance(seed, n=12, p=14, s=4, rho=0.5, snr=5.0, intercept=True)
    lam, r = 3.0, 100.0
    sups, vals, count, evaluate, full, anchor = anchored_oracle(stats, 4, lam, r)
    source = MatrixFreeSource(Xf, y, lam, r, intercept=True)
    for i in (2, 3, 4):
        members = np.nonzero(count == i)[0]
        worst = members[np.argmax(vals[members])]
        res = blocks.minimise_block(source, full, 1, i, (tuple(sups[worst]), vals[worst]), 1e-7, evaluate,
                                    settings=BlockSearchSettings(coherence_above=0, max_columns=0))  # lazy path
        assert res is not None
        truth = vals[members].min()
        assert res.value <= truth + 1e-7 + 1e-9 and res.lower_bound <= truth + 1e-9


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("icpt", [False, True])
def test_fewer_rows_than_columns_needs_no_eigenvalue(seed, icpt, monkeypatch):
    """n < p with the Gram matrix at hand: Sch - lam' I is singular, so the floor is lam' and
    no search over more candidates than rows computes an eigenvalue (lambda_min(M_C) could
    not beat the ridge bound); gamma (with its free bound lam' / max(d)) lies below
    lambda_min(M_B) for every i-subset B, and every block still lists every support below
    the threshold."""
    from dpstats.bss import blocks

    calls = []
    floor_fn = blocks.eigenvalue_floor

    def counted(M, hint=None):
        calls.append(M.shape[0])
        return floor_fn(M, hint)

    monkeypatch.setattr(blocks, "eigenvalue_floor", counted)
    smallest_fn = blocks.smallest_eigenvalue

    def counted_smallest(M):
        calls.append(M.shape[0])
        return smallest_fn(M)

    monkeypatch.setattr(blocks, "smallest_eigenvalue", counted_smallest)  # the anchor's floor
    gammas = []
    dense = blocks.BlockSearch.dense_matrix

    def checked(self, T, GOT, K, u_all, C, h):
        out = dense(self, T, GOT, K, u_all, C, h)
        if out is not None:
            gamma, cols = out[0], out[2]
            M = out[6](slice(None), slice(None))
            from itertools import combinations
            smallest = min(float(np.linalg.eigvalsh(M[np.ix_(B, B)])[0])
                           for B in map(list, combinations(range(cols.size), min(self.i, cols.size))))
            gammas.append((gamma, smallest, cols.size))
        return out

    monkeypatch.setattr(blocks.BlockSearch, "dense_matrix", checked)
    p, s, lam, r = 16, 4, 2.0, 3.0
    stats, _, _ = instance(seed, n=10, p=p, s=s, rho=0.4, snr=5.0, intercept=icpt)
    sups, vals, count, evaluate, full, anchor = anchored_oracle(stats, s, lam, r)
    offset = 1 if icpt else 0
    source = GramSource(stats, lam, r)
    for i in range(2, s + 1):
        members = np.nonzero(count == i)[0]
        ranked = np.sort(vals[members])
        for thr in (ranked[min(3, ranked.size - 1)], ranked[ranked.size // 2], ranked[-1]):
            res = blocks.block_supports_below(source, full, offset, i, float(thr), evaluate, mu=0.0)
            below = {tuple(int(j) for j in sups[m]) for m in members if vals[m] < thr}
            assert below <= set(res.supports)
        search = blocks.BlockSearch(source, full, offset, i, 0.0, BlockSearchSettings(max_nodes=10**6))
        assert search.floor() == search.lam
    assert all(size <= 10 for size in calls)  # an eigenvalue only where C has at most n columns
    assert gammas and any(size > 10 for _, _, size in gammas)
    for gamma, smallest, size in gammas:
        assert gamma <= smallest + 1e-9


def schur_inside_anchor(G, full, offset, O, lam2):
    """Sch over the columns O at every T inside the anchor ``full`` (the forced columns always in)."""
    from itertools import combinations

    movable = full[offset:]
    for k in range(0, movable.size + 1):
        for D in combinations(range(movable.size), k):
            T = np.concatenate([full[:offset], np.delete(movable, D)]).astype(np.int64)
            Sch = G[np.ix_(O, O)] + lam2 * np.eye(O.size)
            if T.size:
                Sch -= G[np.ix_(O, T)] @ np.linalg.solve(G[np.ix_(T, T)] + lam2 * np.eye(T.size), G[np.ix_(T, O)])
            yield Sch


@pytest.mark.parametrize("case", CASES + PREFIX_CASES)
def test_spectral_floor_bounds_every_schur_complement_inside_the_anchor(case):
    """floor() <= lambda_min(Sch at T) over O for every T inside the anchor, and >= lam'."""
    from dpstats.bss import blocks

    seed, p, s, rho, snr, lam, r, icpt = case
    stats, _, _ = instance(seed, n=80 if case in PREFIX_CASES else 60, p=p, s=s, rho=rho, snr=snr, intercept=icpt)
    sups, vals, count, evaluate, full, anchor = anchored_oracle(stats, s, lam, r)
    offset = 1 if icpt else 0
    G = stats.G
    for mu in (0.0, 2.5):
        search = blocks.BlockSearch(GramSource(stats, lam, r), full, offset, 2, mu, BlockSearchSettings(max_nodes=10**6))
        floor, lam2 = search.floor(), lam + mu
        assert floor >= lam2
        O = search.O
        smallest = min(float(np.linalg.eigvalsh(Sch)[0]) for Sch in schur_inside_anchor(G, full, offset, O, lam2))
        assert floor <= smallest + 1e-9 * smallest
        assert floor >= 0.999 * smallest or floor == lam2  # the whole anchor attains it (up to the margin)


FULL_MODEL_CASES = CASES + PREFIX_CASES + [
    (9, 12, 5, 0.5, 10.0, 1e-3, 50.0, True),    # a ridge near 0, the ball loose
    (10, 12, 5, 0.9, 5.0, 1e-2, 0.6, False),    # strong correlation, the ball binding
]


@pytest.mark.parametrize("case", FULL_MODEL_CASES)
def test_full_model_bound_holds_under_every_removal_prefix(case):
    """FullModelBound.prefix(D', i) <= R of every support of block i whose removed set starts
    with D' (brute force over every support), for ball multipliers mu = 0 and mu > 0; and it is
    informative: on some case it exceeds the anchor's value (a whole block decided at once)."""
    from itertools import combinations

    from dpstats.bss import blocks

    seed, p, s, rho, snr, lam, r, icpt = case
    stats, _, _ = instance(seed, n=80, p=p, s=s, rho=rho, snr=snr, intercept=icpt)
    sups, vals, count, evaluate, full, anchor = anchored_oracle(stats, s, lam, r)
    offset = 1 if icpt else 0
    position = {j: k for k, j in enumerate(anchor)}
    removed = [tuple(sorted(position[j] for j in anchor if j not in set(sup))) for sup in sups.tolist()]
    decided = 0
    for mu in (0.0, 1.5):
        for i in range(1, min(s, p - s) + 1):
            search = blocks.BlockSearch(GramSource(stats, lam, r), full, offset, i, mu, BlockSearchSettings())
            bound = search.full_bound()
            assert bound is not None
            members = [k for k, D in enumerate(removed) if len(D) == i]
            rng = np.random.default_rng(i)
            for length in range(0, i + 1):
                for prefix in combinations(range(s), length):
                    others = [k for k in range(s) if k not in prefix]
                    # the tree's later columns in the given order, and a random part of the others
                    for later in (range(prefix[-1] + 1 if prefix else 0, s),
                                  sorted(rng.choice(others, size=rng.integers(0, len(others) + 1), replace=False))):
                        later = set(int(k) for k in later)
                        under = [k for k in members
                                 if set(prefix) <= set(removed[k]) and set(removed[k]) - set(prefix) <= later]
                        value = bound.prefix(prefix, sorted(later), i)
                        if not under:
                            continue
                        smallest = float(vals[under].min())
                        assert value <= smallest + 1e-9 * (1.0 + abs(smallest)), (mu, i, prefix, later)
                        decided += value > float(vals[count == 0].min())
    if snr >= 5 and r >= 1:  # a strong signal and a loose ball: whole removals decided
        assert decided > 0


@pytest.mark.parametrize("case", FULL_MODEL_CASES)
def test_full_model_conditional_prefix_bound_against_the_exact_form(case):
    """The conditional prefix bound (FullModelBound._conditional): at a whole removed set D it is
    f* - mu r^2 + b*_D' [(K^-1)_DD]^-1 b*_D from an independent inverse (up to its rounding margin);
    at a prefix it is at most that form for every completion; lam_max_of(e) is at least
    lambda_max(C_EE) of every e-set (brute force); and on some case it is above the separable
    bound of the same prefix (the correlations the separable bound forgets)."""
    from itertools import combinations

    from dpstats.bss import blocks

    seed, p, s, rho, snr, lam, r, icpt = case
    stats, _, _ = instance(seed, n=80, p=p, s=s, rho=rho, snr=snr, intercept=icpt)
    _, _, _, _, full, _ = anchored_oracle(stats, s, lam, r)
    offset = 1 if icpt else 0
    src = GramSource(stats, lam, r)
    above = 0
    for mu in (0.0, 1.5):
        search = blocks.BlockSearch(src, full, offset, 1, mu, BlockSearchSettings())
        bound = search.full_bound()
        lam2 = lam + mu
        K = src.G + lam2 * np.eye(src.n_columns)
        Kinv = np.linalg.inv(K)
        bstar = Kinv @ src.c
        fstar = float(src.yy - src.c @ bstar) - mu * r * r
        movable = full[offset:]
        corr = Kinv[np.ix_(movable, movable)] / np.sqrt(np.outer(np.diag(Kinv)[movable], np.diag(Kinv)[movable]))
        m = movable.size
        for e in range(1, m + 1):
            worst = max(float(np.linalg.eigvalsh(corr[np.ix_(E, E)])[-1]) for E in combinations(range(m), e))
            assert bound.lam_max_of(e) >= worst - 1e-12
        for size in range(1, m + 1):
            for D in combinations(range(m), size):
                cols = movable[list(D)]
                form = float(bstar[cols] @ np.linalg.solve(Kinv[np.ix_(cols, cols)], bstar[cols]))
                value = bound._conditional(np.array(D), np.zeros(0, dtype=np.int64), 0)
                tol = 1e-8 * (1.0 + abs(fstar) + form)
                assert value <= fstar + form + tol
                assert value >= fstar + form - 1e-6 * (1.0 + abs(fstar) + form)
                # a prefix (its first column) with the rest of D among the later columns
                if size >= 2:
                    later = np.array([k for k in range(m) if k > D[0]], dtype=np.int64)
                    value = bound._conditional(np.array(D[:1]), later, size - 1)
                    completions = [fstar + float(bstar[movable[[D[0], *E]]] @ np.linalg.solve(
                        Kinv[np.ix_(movable[[D[0], *E]], movable[[D[0], *E]])], bstar[movable[[D[0], *E]]]))
                        for E in combinations(later.tolist(), size - 1)]
                    assert value <= min(completions) + tol
                    gain = float(bound.cost[D[0]] + np.sort(bound.cost[later])[:size - 1].sum())
                    above += value > bound.base + gain / bound.lam_max_of(size) + 1e-9
    if rho >= 0.5:
        assert above > 0


def test_full_model_bound_needs_more_rows_than_columns_and_the_gram_matrix(monkeypatch):
    """None where the full model interpolates (n <= p), matrix-free, or switched off."""
    from dpstats.bss import blocks

    for n, p, free, on, expect in ((30, 40, False, True, False), (60, 10, True, True, False),
                                   (60, 10, False, False, False), (60, 10, False, True, True)):
        stats, X, y = instance(1, n=n, p=p, s=3)
        src = MatrixFreeSource(X, y, 1.0, 1.1) if free else GramSource(stats, 1.0, 1.1)
        search = blocks.BlockSearch(src, np.array([0, 1, 2]), 0, 2, 0.0, BlockSearchSettings(full_model_bound=on))
        assert (search.full_bound() is not None) == expect


def test_full_model_bound_steps_aside_where_the_factorisation_fails():
    """Collinear columns at a ridge near 0: the Cholesky factor fails in floating point, and the
    bound is not used (None) instead of raising inside the charged call."""
    from dpstats.bss import blocks

    _, X, y = instance(3, n=60, p=6, s=3)
    stats = SufficientStats.from_arrays(np.hstack([X, X[:, :2]]), y, False)
    search = blocks.BlockSearch(GramSource(stats, 1e-30, 1.1), np.array([0, 1, 2]), 0, 2, 0.0, BlockSearchSettings())
    assert search.full_bound() is None


@pytest.mark.parametrize("shift", [0.0, 3.0])
def test_column_coherence_of_a_centred_matrix_free_source(shift):
    """centre=True (the profiled intercept): coherence of the centred columns, row by row.

    ``shift`` moves the columns' means away from 0 (real data mapped to [0, 1], say): the
    uncentred X'X would then overstate some entries and understate others.
    """
    from dpstats.bss.coherence import column_coherence

    _, X, y = instance(9, p=19, s=3, rho=0.7, snr=2.0, intercept=False)
    X = X + shift * np.linspace(-1.0, 1.0, X.shape[1])
    lam, k = 1.5, 3
    source = MatrixFreeSource(X, y, lam, 1.0, centre=True)
    anchor = np.array([4, 11])
    Xc = X - X.mean(axis=0)
    G = Xc.T @ Xc
    scale = 1.0 / np.sqrt(np.diag(G) + lam)
    N = np.abs(G) * np.outer(scale, scale)
    np.fill_diagonal(N, 0.0)
    N[:, anchor] = 0.0
    want = -np.sort(-N, axis=1)[:, :k]
    first = np.array([0, 7, 8])
    got = column_coherence(source, lam, k, exclude=anchor, rows=first, block_bytes=8 * 19 * 2)
    assert np.all(np.isnan(np.delete(got, first, axis=0)))  # only the rows asked for
    rows = np.setdiff1d(np.arange(19), anchor)
    got = column_coherence(source, lam, k, exclude=anchor, rows=rows)  # fills the rest, from the cache
    assert np.all(got[rows] >= want[rows])
    np.testing.assert_allclose(got[rows], want[rows], atol=1e-9)


@pytest.mark.parametrize("shift", [0.0, 2.0])
@pytest.mark.parametrize("lazy", [False, True])
def test_centred_matrix_free_blocks_match_brute_force(shift, lazy, monkeypatch):
    """The profiled intercept on a matrix-free source (centre=True, what dp_select uses above
    3000 terms): dense and lazy searches, coherence screen on, against brute force."""
    from dpstats.bss import blocks

    declare(monkeypatch, coherence_above=0)
    _, X, y = instance(10, n=70, p=12, s=4, rho=0.5, snr=3.0, intercept=False)
    X = X + shift * np.linspace(-1.0, 1.0, X.shape[1])  # means far from 0
    stats = SufficientStats.centred_from_arrays(X, y)
    lam, r = 4.0, 2.0
    sups, vals, count, evaluate, full, anchor = anchored_oracle(stats, 4, lam, r)
    source = MatrixFreeSource(X, y, lam, r, centre=True)
    for i in range(1, 5):
        members = np.nonzero(count == i)[0]
        worst = members[np.argmax(vals[members])]
        res = blocks.minimise_block(source, full, 0, i, (tuple(sups[worst]), vals[worst]), 1e-7, evaluate,
                                    mu=0.5, settings=BlockSearchSettings(coherence_above=0, max_columns=0 if lazy else 3000))
        truth = vals[members].min()
        assert res.value <= truth + 1e-7 + 1e-9 and res.lower_bound <= truth + 1e-9
        thr = float(np.sort(vals[members])[-1])
        listed = blocks.block_supports_below(source, full, 0, i, thr, evaluate,
                                             settings=BlockSearchSettings(coherence_above=0, max_columns=0 if lazy else 3000))
        assert {tuple(int(j) for j in sups[m]) for m in members if vals[m] < thr} <= set(listed.supports)


def test_box_gain_is_the_maximum_over_the_box():
    # the closed form against a fine grid of t in [-cap, cap] (the box every bound keeps)
    from dpstats.bss.blocks import box_gain

    rng = np.random.default_rng(5)
    v, a, cap = rng.normal(size=300) * 5, rng.uniform(0.05, 3, 300), rng.uniform(0.1, 2, 300)
    t = np.linspace(-1.0, 1.0, 40001)[None, :] * cap[:, None]
    brute = np.max(2 * v[:, None] * t - a[:, None] * t * t, axis=1)
    got = box_gain(v, a, cap)
    assert np.all(got >= brute - 1e-12)  # an upper bound on the grid's maximum ...
    assert np.allclose(got, brute, atol=1e-6)  # ... and the maximum itself
    assert np.all(got <= v * v / a + 1e-12) and np.any(got < 0.5 * v * v / a)  # the box bites


@pytest.mark.parametrize("m", [0, 1, 2, 5])
def test_bordered_inverse_equals_the_inverse(m):
    from dpstats.bss.blocks import bordered_inverse

    rng = np.random.default_rng(m)
    Z = rng.normal(size=(40, m + 1)) + rng.normal(size=(40, 1))  # correlated columns
    C = np.corrcoef(Z, rowvar=False).reshape(m + 1, m + 1)  # unit diagonal, SPD
    M, a = C[:m, :m], C[:m, m]
    Minv = np.linalg.inv(M) if m else None
    b = Minv @ a if m else None
    d = 1.0 - (a @ b if m else 0.0)
    np.testing.assert_allclose(bordered_inverse(Minv, b, d), np.linalg.inv(C), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("case", CASES + PREFIX_CASES)
def test_eigenvalue_hints_keep_blocks_exact(case, monkeypatch):
    """The nodes' lambda_min bounds certified from the previous node's eigenvalue by a
    Cholesky test (objective.eigenvalue_floor; from 200 columns on in use) keep every block
    exact: here every matrix takes that route, against brute force."""
    from dpstats.bss import blocks, objective

    calls = []
    floor = objective.eigenvalue_floor

    def counted(M, hint=None):
        out = floor(M, hint)
        calls.append(out[1])
        return out

    monkeypatch.setattr(objective, "HINT_MIN_SIZE", 2)
    monkeypatch.setattr(blocks, "HINT_MIN_SIZE", 2)
    monkeypatch.setattr(blocks, "eigenvalue_floor", counted)
    declare(monkeypatch, force_bound="eigen")
    if case in CASES:
        test_block_minimum_matches_brute_force(case, False)
        test_block_supports_below_lists_every_support_under_the_threshold(case, False, monkeypatch)
    else:
        test_removal_prefix_tree_keeps_blocks_exact(case, 1, 10**6, False, monkeypatch)
    assert False in calls or len(calls) < 2  # the hinted route ran wherever a node followed another


@pytest.mark.parametrize("seed", range(6))
def test_eigenvalue_floor_is_a_lower_bound_within_its_slack(seed):
    """Against numpy's eigenvalues: from a hint at or below lambda_min, the Cholesky route's
    bound is within HINT_SLACK of it and never above; from a hint above, the eigenvalue."""
    from dpstats.bss.objective import HINT_SLACK, eigenvalue_floor

    rng = np.random.default_rng(seed)
    m = 250
    X = rng.standard_normal((m + 20 if seed % 2 else m // 2, m))  # full rank, or singular
    G = X.T @ X + (1e-3 if seed % 2 == 0 else 0.0) * np.eye(m)
    d = np.sqrt(np.diag(G))
    M = G / d[:, None] / d[None, :]
    lam = float(np.linalg.eigvalsh(M)[0])
    for hint in (lam, 0.995 * lam, 1.5 * lam + 0.01):
        bound, computed = eigenvalue_floor(M, hint)
        assert bound <= lam
        if hint <= lam and lam > 1e-6:
            assert not computed and bound >= (1 - HINT_SLACK) * hint - 1e-9
        if hint > lam / (1 - HINT_SLACK):
            assert computed and bound == pytest.approx(lam, abs=1e-8)
    # numpy's Cholesky returns NaN factors without raising: no bound may come from them
    M[3, 7] = M[7, 3] = np.nan
    with pytest.raises(ValueError):  # the eigenvalue route refuses a non-finite matrix
        eigenvalue_floor(M, 0.5 * lam)


#: Strongly correlated AR(1) designs for the ball bound: seed, p, s, rho, ridge, radius (small
#: radius: the ball binds at the good supports; 50: it does not), intercept.
BALL_CASES = [
    (11, 12, 3, 0.95, 1e-3, 0.6, False),
    (12, 14, 4, 0.99, 0.5, 50.0, True),
    (13, 16, 5, 0.95, 0.05, 0.8, False),
    (14, 13, 4, 0.99, 1e-3, 50.0, False),
    (15, 15, 3, 0.99, 0.2, 0.5, True),
]


def test_ball_need_inverts_the_ball_gain():
    # g(sqrt(ball_need(need))) = need on both branches of g, and a larger sum of squares exceeds it
    from dpstats.bss.blocks import ball_need, box_gain

    rng = np.random.default_rng(3)
    for _ in range(200):
        f, cap = rng.uniform(1e-3, 5), rng.uniform(0.1, 3)
        need = rng.uniform(0, 4) * f * cap * cap  # below and above the kink at f cap^2
        s2 = ball_need(need, f, cap)
        assert box_gain(np.sqrt(s2), f, cap) == pytest.approx(need, rel=1e-10, abs=1e-12)
        assert box_gain(np.sqrt(s2 * 1.001), f, cap) > need
    assert ball_need(-1.0, 1.0, 1.0) < 0  # nothing passes a negative need


# The p = 16, s = 5 case (the slowest) runs on the Gram source by default; on the two other sources
# it is an exhaustive check of the same bound (about 8 s): pytest -m slow.
BALL_BOUND_PARAMS = [pytest.param(case, bound, path, marks=(pytest.mark.slow,) if case[1] == 16 and path != "gram" else ())
                     for case in BALL_CASES for bound in (None, "ball") for path in ("gram", "matrix_free", "lazy")]


@pytest.mark.parametrize("case, bound, path", BALL_BOUND_PARAMS)
def test_ball_bound_keeps_correlated_blocks_exact(case, bound, path, monkeypatch):
    """rho 0.95 and 0.99, ridges 1e-3 to 0.5, the ball binding or not: every support of each
    block below a threshold (low, middle and top of the block) is listed, alone ("ball") and
    with the other bounds, with the anchor's multiplier 0 and > 0 (weak duality); with the
    Gram matrix, matrix-free (floor lam'), and with M's columns formed lazily."""
    from dpstats.bss import blocks

    declare(monkeypatch, force_bound=bound)
    seed, p, s, rho, lam, r, icpt = case
    stats, Xf, y = instance(seed, n=40, p=p, s=s, rho=rho, snr=5.0, intercept=icpt)
    sups, vals, count, evaluate, full, anchor = anchored_oracle(stats, s, lam, r)
    offset = 1 if icpt else 0
    source = GramSource(stats, lam, r) if path == "gram" else MatrixFreeSource(Xf, y, lam, r, intercept=icpt)
    if path == "lazy":  # every candidate set takes the large-set path
        declare(monkeypatch, max_columns=0)
    for i in range(2, min(s, p - s) + 1):
        members = np.nonzero(count == i)[0]
        ranked = np.sort(vals[members])
        for thr in (ranked[min(3, ranked.size - 1)], ranked[ranked.size // 2], ranked[-1]):
            for mu in (0.0, 1.0):
                res = blocks.block_supports_below(source, full, offset, i, float(thr), evaluate, mu=mu)
                below = {tuple(int(j) for j in sups[m]) for m in members if vals[m] < thr}
                assert below <= set(res.supports)
        worst = members[np.argmax(vals[members])]
        res = blocks.minimise_block(source, full, offset, i, (tuple(sups[worst]), vals[worst]), 1e-7, evaluate)
        assert res.value <= vals[members].min() + 1e-7 + 1e-9


@pytest.mark.parametrize("seed", range(4))
def test_gershgorin_row_sample_gives_the_full_pass_value(seed):
    """block_gamma looks at a few rows first and skips the full pass when one reaches 1; its value
    equals the full pass's, max(1 - max_j (sum of the i - 1 largest |M_jk|), 1e-12), whether
    the bound is usable or not."""
    from dpstats.bss import blocks

    rng = np.random.default_rng(seed)
    for m, scale in ((5, 0.05), (40, 0.02), (40, 0.3), (200, 0.05), (200, 0.01)):
        A = rng.standard_normal((m, m)) * scale
        M = np.eye(m) + (A + A.T) / 2.0
        off = np.abs(M)
        np.fill_diagonal(off, 0.0)
        for i in (2, 3, 6, 20):
            k = min(i - 1, m - 1)
            full = max(1.0 - float(np.sort(off, axis=1)[:, m - k:].sum(axis=1).max()), 1e-12)
            assert blocks.block_gamma(M, i, eigen=False) == pytest.approx(full, rel=1e-12, abs=1e-15)


SUBSET_FLOOR_CASES = CASES + PREFIX_CASES + [
    (11, 12, 5, 0.5, 0.05, 4.0, 2.0, True),    # AR(1) neighbours: gamma_i far above the floor
    (12, 13, 5, 0.7, 0.02, 2.0, 50.0, False),
    (13, 12, 5, 0.5, 0.05, 0.05, 0.3, True),   # the ball binding: its bound decides
    (14, 13, 5, 0.4, 0.1, 0.01, 0.2, False),
]


def subset_floor_on(monkeypatch):
    """The subset floor from the first node, wherever gamma_i > 0 (its default gates only change the work)."""
    from dpstats.bss import blocks

    declare(monkeypatch, subset_floor_after_nodes=0)
    monkeypatch.setattr(blocks, "SUBSET_FLOOR_WORTH", 0.0)


@pytest.mark.parametrize("case", SUBSET_FLOOR_CASES)
def test_subset_floor_bounds_every_schur_block_inside_the_anchor(case, monkeypatch):
    """Sch_BB(T) >= gamma_i diag(d_B) for every i-set B of the outside columns and every T inside the anchor
    (brute force over both), and at a node P the conditional Sch_{Q|P}(T) >= gamma_i diag(d_Q) for |P + Q| = i;
    in some case gamma_i d_b exceeds the spectral floor (the bound adds something)."""
    from itertools import combinations

    from dpstats.bss import blocks

    subset_floor_on(monkeypatch)
    seed, p, s, rho, snr, lam, r, icpt = case
    stats, _, _ = instance(seed, n=80, p=p, s=s, rho=rho, snr=snr, intercept=icpt)
    sups, vals, count, evaluate, full, anchor = anchored_oracle(stats, s, lam, r)
    offset = 1 if icpt else 0
    G = stats.G
    above_floor = 0
    for mu in (0.0, 1.5):
        lam2 = lam + mu
        for i in range(3, min(s, p - s) + 1):
            search = blocks.BlockSearch(GramSource(stats, lam, r), full, offset, i, mu, blocks.DEFAULT_BLOCK_SETTINGS)
            sub = search.subset_floor()
            if sub is None:
                continue
            gamma, d = sub
            O = search.O
            assert np.all(d[O] > 0) and not np.any(d[np.setdiff1d(np.arange(d.size), O)])
            above_floor += gamma * float(d[O].max()) > search.floor()
            for Sch in schur_inside_anchor(G, full, offset, O, lam2):
                for B in combinations(range(O.size), i):
                    B = list(B)
                    low = Sch[np.ix_(B, B)] - gamma * np.diag(d[O[B]])
                    assert np.linalg.eigvalsh(low)[0] >= -1e-9 * float(np.abs(Sch).max())
                    # one column of B already chosen (P), the rest conditional on it
                    P, Q = B[:1], B[1:]
                    cond = Sch[np.ix_(Q, Q)] - np.outer(Sch[Q, P[0]], Sch[P[0], Q]) / Sch[P[0], P[0]]
                    low = cond - gamma * np.diag(d[O[Q]])
                    assert np.linalg.eigvalsh(low)[0] >= -1e-9 * float(np.abs(Sch).max())
    if case in SUBSET_FLOOR_CASES[-4:]:
        assert above_floor


@pytest.mark.parametrize("case", SUBSET_FLOOR_CASES)
def test_subset_floor_keeps_blocks_exact(case, monkeypatch):
    """With the subset floor in the screens, the branches' bounds and the ball bound from the first node, the
    block minimum and every support below thresholds up to the block's largest value are as by brute force."""
    from dpstats.bss import blocks

    subset_floor_on(monkeypatch)
    seed, p, s, rho, snr, lam, r, icpt = case
    stats, _, _ = instance(seed, n=80, p=p, s=s, rho=rho, snr=snr, intercept=icpt)
    sups, vals, count, evaluate, full, anchor = anchored_oracle(stats, s, lam, r)
    offset = 1 if icpt else 0
    used = 0
    for i in range(3, min(s, p - s) + 1):
        members = np.nonzero(count == i)[0]
        ranked = np.sort(vals[members])
        for mu in (0.0, 1.5):
            for thr in (ranked[0], ranked[ranked.size // 4], ranked[ranked.size // 2], ranked[-1]):
                source = GramSource(stats, lam, r)
                res = blocks.block_supports_below(source, full, offset, i, float(thr), evaluate, mu=mu)
                below = {tuple(int(j) for j in sups[m]) for m in members if vals[m] < thr}
                assert below <= set(res.supports)
                used += source._outside_schur_cache is not None
            best = int(members[np.argmin(vals[members])])
            inc = (tuple(int(j) for j in sups[members[-1]]), float(vals[members[-1]]))
            got = minimise_block(GramSource(stats, lam, r), full, offset, i, inc, 0.0, evaluate, mu=mu)
            assert got.value == pytest.approx(float(vals[best]), rel=1e-9, abs=1e-9)
    if min(s, p - s) >= 3:
        assert used


def test_subset_floor_waits_for_its_nodes_and_prunes_on_correlated_neighbours(monkeypatch):
    """An AR(1) design with 40 columns: with the default gate the subset floor is not formed before the anchor's
    blocks spent that many nodes; formed from the first node it leaves the lists of supports below the
    thresholds unchanged and takes fewer nodes."""
    from dataclasses import replace

    from dpstats.bss import blocks

    stats, _, _ = instance(3, n=400, p=40, s=8, rho=0.4, snr=3.0, intercept=True)
    lam, r = 0.5, 1.1
    obj = RidgeBallObjective(stats, lam, r)
    evaluate = lambda a: obj.values(obj.full_support(stats.candidates[np.asarray(a)]))  # noqa: E731
    anchor = []  # forward selection's support of 8
    while len(anchor) < 8:
        rest = [j for j in range(40) if j not in anchor]
        scores = evaluate(np.array([sorted(anchor + [j]) for j in rest]))
        anchor = sorted(anchor + [rest[int(np.argmin(scores))]])
    full = np.concatenate([[0], np.asarray(anchor) + 1]).astype(np.int64)
    best = float(evaluate(np.array([anchor]))[0])
    off = replace(blocks.DEFAULT_BLOCK_SETTINGS, subset_floor_after_nodes=None)
    on = replace(blocks.DEFAULT_BLOCK_SETTINGS, subset_floor_after_nodes=0)
    gated = replace(blocks.DEFAULT_BLOCK_SETTINGS, subset_floor_after_nodes=10**9)
    fewer = 0
    for i in (3, 4):
        for gap in (2.0, 20.0):
            runs = {}
            for name, settings in (("off", off), ("on", on), ("gated", gated)):
                source = GramSource(stats, lam, r)
                res = blocks.block_supports_below(source, full, 1, i, best + gap, evaluate, settings=settings)
                runs[name] = (sorted(res.supports), res.nodes, source._outside_schur_cache)
            assert runs["on"][0] == runs["off"][0] == runs["gated"][0]
            assert runs["gated"][2] is None and runs["off"][2] is None
            fewer += runs["on"][1] < runs["off"][1]
    assert fewer
