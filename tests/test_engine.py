"""The certified MIP engine against brute force (spec 02; issue 3 oracle tests)."""
import dataclasses
import math
from pathlib import Path

import numpy as np
import pytest

from dpstats.bss import checked_cbc
from dpstats.bss import engine as engine_module
from dpstats.bss.engine import OuterApproximationEngine
from dpstats.bss.exhaustive import enumerate_supports
from dpstats.bss.gram import GramSource, MatrixFreeSource, swap_neighbour_values
from dpstats.bss.objective import RidgeBallObjective, SufficientStats
from dpstats.errors import InvalidArgumentError, SolverError


def instance(seed, n=60, p=10, s=3, rho=0.3, snr=2.0, intercept=False, bx=1.0, by=2.0):
    rng = np.random.default_rng(seed)
    cov = rho ** np.abs(np.subtract.outer(np.arange(p), np.arange(p)))
    X = np.clip(rng.multivariate_normal(np.zeros(p), cov, size=n), -bx, bx)
    beta = np.zeros(p)
    beta[rng.choice(p, s, replace=False)] = 1.0
    signal = X @ beta
    noise = rng.normal(size=n)
    noise *= np.linalg.norm(signal) / (np.linalg.norm(noise) * math.sqrt(snr))
    y = np.clip(signal + noise, -by, by)
    Xf = np.hstack([np.full((n, 1), min(1.0, bx)), X]) if intercept else X
    return SufficientStats.from_arrays(Xf, y, intercept), Xf, y


def brute(stats, s, lam, r):
    obj = RidgeBallObjective(stats, lam, r)
    p = stats.candidates.size
    sups = enumerate_supports(p, s)
    vals = obj.values(obj.full_support(stats.candidates[sups]))
    order = np.lexsort((np.arange(vals.size), vals))
    return sups, vals, order


def check_against_brute(stats, s, lam, r, R, tau=1e-6, exact_blocks=True):
    sups, vals, order = brute(stats, s, lam, r)
    # exact_blocks=False: the MILP certifies top-R and the blocks
    eng = OuterApproximationEngine.from_stats(stats, s, lam, r, tau, exact_blocks=exact_blocks)
    best = eng.best()
    assert best.value <= vals[order[0]] + tau
    assert best.lower_bound <= vals[order[0]] + 1e-9  # never above an exact feasible value
    assert best.value == pytest.approx(RidgeBallObjective(stats, lam, r).values(
        RidgeBallObjective(stats, lam, r).full_support(stats.candidates[np.array([best.support])]))[0], abs=1e-9)
    R = min(R, vals.size - 1)
    top = eng.top(R)
    assert np.allclose(top.values, vals[order[:R]], atol=tau)
    assert top.lower_bound <= vals[order[R]] + 1e-9
    listed = {tuple(x) for x in top.supports}
    outside = np.array([tuple(x) not in listed for x in sups.tolist()])
    assert vals[outside].min() >= top.values[-1] - tau  # the certificate holds
    assert top.lower_bound >= top.values[-1] - tau  # what it claims ...
    assert vals[outside].min() >= top.lower_bound - 1e-9  # ... is a true bound outside the list
    assert any("best_block" in e for e in eng.stats.log) == exact_blocks
    far_by_blocks = [e for e in eng.stats.log if "top_block" in e]
    assert bool(far_by_blocks) == (exact_blocks and s >= 2 and stats.candidates.size - s >= 2)
    assert all(e["exact"] for e in far_by_blocks)
    anchor = set(best.support)
    count = np.array([len(set(row) - anchor) for row in sups.tolist()])
    mis = eng.mistakes()
    assert len(mis) == min(s, stats.candidates.size - s)
    for i, c in enumerate(mis, 1):
        assert len(set(c.support) - anchor) == i
        assert c.value <= vals[count == i].min() + tau
        assert c.lower_bound <= vals[count == i].min() + 1e-9
    return eng


FAST_CASES = [
    # seed, p, s, rho, snr, lam, r, intercept
    (0, 8, 2, 0.1, 5.0, 20.0, 1.1, False),   # ball active (r small vs coefficients)
    (1, 10, 3, 0.5, 1.0, 10.0, 10.0, True),  # ball inactive
    (2, 12, 1, 0.1, 5.0, 5.0, 0.5, False),
    (3, 9, 4, 0.7, 0.5, 30.0, 2.0, True),
    (4, 14, 2, 0.0, 10.0, 50.0, 0.3, True),
    (5, 11, 3, 0.3, 2.0, 8.0, 100.0, False),
]


@pytest.mark.parametrize("case", FAST_CASES)
@pytest.mark.parametrize("exact_blocks", [True, False])
def test_engine_matches_brute_force(case, exact_blocks):
    seed, p, s, rho, snr, lam, r, icpt = case
    stats, _, _ = instance(seed, p=p, s=s, rho=rho, snr=snr, intercept=icpt)
    check_against_brute(stats, s, lam, r, R=10, exact_blocks=exact_blocks)


@pytest.mark.parametrize("case", FAST_CASES)
def test_top_asked_first_certifies_the_best_from_its_list(case):
    """top_r asks for the list before the best: the block search around the local optimum
    certifies the list, and the best is the list's first (no separate pass of blocks)."""
    seed, p, s, rho, snr, lam, r, icpt = case
    stats, _, _ = instance(seed, p=p, s=s, rho=rho, snr=snr, intercept=icpt)
    sups, vals, order = brute(stats, s, lam, r)
    tau, R = 1e-6, min(10, vals.size - 1)
    eng = OuterApproximationEngine.from_stats(stats, s, lam, r, tau, exact_blocks=True)
    top = eng.top(R)
    assert np.allclose(top.values, vals[order[:R]], atol=tau)
    listed = {tuple(x) for x in top.supports}
    outside = np.array([tuple(x) not in listed for x in sups.tolist()])
    assert top.lower_bound >= top.values[-1] - tau
    assert vals[outside].min() >= top.lower_bound - 1e-9
    best = eng.best()
    assert best.value <= vals[order[0]] + tau
    assert vals.min() >= best.lower_bound - 1e-9 and best.lower_bound >= best.value - tau
    far_by_blocks = s >= 2 and p - s >= 2
    # the best came from the list exactly when the list's far region went to the block search
    assert any("best_block" in e for e in eng.stats.log) == (not far_by_blocks)
    mis = eng.mistakes()  # around the best, as when it was certified first
    anchor = set(best.support)
    count = np.array([len(set(row) - anchor) for row in sups.tolist()])
    for i, c in enumerate(mis, 1):
        assert c.value <= vals[count == i].min() + tau


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(30))
def test_engine_matches_brute_force_many(seed):
    rng = np.random.default_rng(1000 + seed)
    p = int(rng.integers(5, 17))
    s = int(rng.integers(1, min(4, p - 1) + 1))
    stats, _, _ = instance(seed, p=p, s=s, rho=float(rng.choice([0.0, 0.3, 0.8])),
                           snr=float(rng.choice([0.5, 2.0, 10.0])), intercept=bool(seed % 2))
    check_against_brute(stats, s, float(rng.choice([1.0, 10.0, 100.0])), float(rng.choice([0.3, 1.1, 50.0])), R=20,
                        exact_blocks=bool(seed % 3))


def test_cuts_are_under_estimators():
    stats, _, _ = instance(7, p=9, s=3, intercept=True)
    lam, r = 3.0, 1.1
    sups, vals, _ = brute(stats, 3, lam, r)
    eng = OuterApproximationEngine.from_stats(stats, 3, lam, r, 1e-6)
    for k in [0, 5, 40]:
        const, coef = eng.cut(tuple(sups[k]))
        z = np.zeros((sups.shape[0], 9))
        np.put_along_axis(z, sups, 1.0, axis=1)
        lower = const + z @ coef
        assert np.all(lower <= vals + 1e-8 * (1 + np.abs(vals)))
        assert lower[k] == pytest.approx(vals[k], rel=1e-10)  # tight at its own support


CURVATURE_CASES = [
    # seed, p, s, rho, lam, r, intercept: small ridges (the default's size), correlated columns
    (11, 9, 3, 0.9, 1e-3, 1.1, True),   # forced intercept, ball active at collinear supports
    (12, 10, 2, 0.95, 1e-2, 0.5, False),
    (13, 8, 4, 0.3, 1e-3, 50.0, True),  # ball inactive
    (14, 10, 3, 0.7, 0.5, 1.1, False),
]


@pytest.mark.parametrize("case", CURVATURE_CASES)
def test_curvature_cuts_are_under_estimators_and_tight(case):
    # The cuts after use_curvature (lam + d_j instead of lam) against every support's exact
    # value: a valid under-estimator of R at every binary z, tight at its own support, and
    # stronger than the ridge-only cut on average (d > 0 because n > p).
    seed, p, s, rho, lam, r, icpt = case
    stats, _, _ = instance(seed, p=p, s=s, rho=rho, intercept=icpt)
    sups, vals, _ = brute(stats, s, lam, r)
    source = GramSource(stats, lam, r)
    offset = 1 if icpt else 0
    z = np.zeros((sups.shape[0], p))
    np.put_along_axis(z, sups, 1.0, axis=1)
    plain = [source.cut_at(np.r_[np.arange(offset), sup + offset]) for sup in sups[:20]]
    assert source.use_curvature() and np.all(source._curvature > 0)
    assert not source.use_curvature()  # once
    gain = []
    for k, sup in enumerate(sups[:20]):
        value, const, coef = source.cut_at(np.r_[np.arange(offset), sup + offset])
        lower = const + z @ coef
        assert np.all(lower <= vals + 1e-8 * (1 + np.abs(vals)))
        assert lower[k] == pytest.approx(vals[k], rel=1e-10)
        gain.append(np.mean(lower - (plain[k][1] + z @ plain[k][2])))
    assert np.mean(gain) > 0


@pytest.mark.parametrize("case", CURVATURE_CASES + [(15, 10, 4, 0.1, 1e-3, 1.1, True), (16, 10, 5, 0.0, 1e-3, 50.0, False)])
def test_lower_bounds_for_other_sizes_hold_against_brute_force(case):
    # engine.lower_bounds(k): what one size's cut pool says about the best value of every size k (the
    # model-size stage's sizes not certified).  Oracle: every support of every size, exactly.  Each bound
    # must lie below the best value of its size, and with the data's curvature and a strong signal the
    # bounds must say something (above the best value of the engine's own size for the smaller sizes).
    seed, p, s, rho, lam, r, icpt = case
    stats, _, _ = instance(seed, p=p, s=s, rho=rho, snr=10.0, intercept=icpt)
    best = {k: float(brute(stats, k, lam, r)[1].min()) for k in range(1, p + 1)}
    eng = OuterApproximationEngine.from_stats(stats, s, lam, r, 1e-6)
    assert eng.lower_bounds([1]) == {1: -math.inf}  # nothing certified yet: an empty pool says nothing
    eng.top(5)
    bounds = eng.lower_bounds(range(1, p + 1))
    assert set(bounds) == set(range(1, p + 1))
    naive = {k: max(c + np.sort(g)[:k].sum() for c, g in zip(eng.pool.const, eng.pool.coef)) for k in range(1, p + 1)}
    for chunk in (1, 3, 256):  # the pool read in chunks: the same bounds as cut by cut
        assert eng.pool.lower_bounds(range(1, p + 1), chunk=chunk) == pytest.approx(naive, rel=1e-12, abs=1e-12)
    for k in range(1, p + 1):
        assert bounds[k] <= best[k] - eng.tau_eval + 1e-12, (k, bounds[k], best[k])
    assert all(bounds[k] > best[s] for k in range(1, s))  # a smaller size shown to fit worse, uncertified


@pytest.mark.parametrize("case", CURVATURE_CASES + [(15, 10, 4, 0.1, 1e-3, 1.1, True), (16, 10, 5, 0.0, 1e-3, 50.0, False)])
def test_block_lower_bounds_hold_and_the_list_is_unchanged(case):
    # engine.block_lower_bounds(anchor, i): the pool's bound over the supports with exactly i mistakes from
    # the anchor, which lets the block search skip a block.  Oracle: every support, exactly.  The bounds
    # must lie below every block's smallest value; the top-R list certified with the skips must be brute
    # force's, and with the strong signal some blocks must have been skipped.
    seed, p, s, rho, lam, r, icpt = case
    stats, _, _ = instance(seed, p=p, s=s, rho=rho, snr=10.0, intercept=icpt)
    sups, vals, order = brute(stats, s, lam, r)
    R = 5
    eng = OuterApproximationEngine.from_stats(stats, s, lam, r, 1e-6, block_cut_bounds_after_nodes=0)
    top = eng.top(R)
    assert np.allclose(top.values, vals[order[:R]], atol=1e-6)
    anchor = tuple(int(j) for j in sups[order[0]])
    blocks = range(1, min(s, p - s) + 1)
    bounds = eng.block_lower_bounds(anchor, blocks)
    mistakes = np.array([len(set(row) - set(anchor)) for row in sups.tolist()])
    naive = {i: max(c + np.sort(g[list(anchor)])[:s - i].sum() + np.sort(np.delete(g, list(anchor)))[:i].sum()
                    for c, g in zip(eng.pool.const, eng.pool.coef)) for i in blocks}
    for chunk in (1, 256):
        assert eng.pool.block_lower_bounds(anchor, blocks, chunk=chunk) == pytest.approx(naive, rel=1e-12, abs=1e-12)
    for i in blocks:
        assert bounds[i] <= vals[mistakes == i].min() - eng.tau_eval + 1e-12, (i, bounds[i], vals[mistakes == i].min())
    skipped = [e for e in eng.stats.log if e.get("by_cuts")]
    assert skipped and all(e["nodes"] == 0 for e in skipped)
    plain = OuterApproximationEngine.from_stats(stats, s, lam, r, 1e-6, block_cut_bounds=False)
    assert [tuple(x) for x in plain.top(R).supports] == [tuple(x) for x in top.supports]
    assert not any(e.get("by_cuts") for e in plain.stats.log)


def test_block_cut_bounds_follow_the_design_shape():
    # the cut pool's block bounds are asked only where (1 - sqrt(p / n))^2 (the Marchenko-Pastur lower edge)
    # reaches block_cut_bounds_min_edge: at p = n / 2 (edge 0.086) not, at p = n / 4 (0.25) yes; the list is
    # the same either way (the bounds are a speed device)
    answers = []
    for n, p, expected in ((40, 20, False), (80, 20, True)):
        stats, _, _ = instance(3, n=n, p=p, s=3, rho=0.1, snr=10.0)
        eng = OuterApproximationEngine.from_stats(stats, 3, 1e-3, 1.1, 1e-6, block_cut_bounds_after_nodes=0)
        assert eng.block_cut_bounds_apply() is expected
        forced = OuterApproximationEngine.from_stats(stats, 3, 1e-3, 1.1, 1e-6, block_cut_bounds_after_nodes=0,
                                                     block_cut_bounds_min_edge=0.0)
        assert forced.block_cut_bounds_apply()
        off = OuterApproximationEngine.from_stats(stats, 3, 1e-3, 1.1, 1e-6, block_cut_bounds=False)
        assert not off.block_cut_bounds_apply()
        answers.append(([tuple(x) for x in eng.top(5).supports], [tuple(x) for x in forced.top(5).supports]))
    assert all(a == b for a, b in answers)


@pytest.mark.parametrize("case", CURVATURE_CASES)
@pytest.mark.parametrize("exact_blocks", [False, True])
def test_small_ridges_match_brute_force(case, exact_blocks):
    # both routes at the default's ridge sizes: the MILP with curvature and box cuts, the block
    # search with box-capped gains (the ball's |b_j| <= r), against every support's value
    seed, p, s, rho, lam, r, icpt = case
    stats, _, _ = instance(seed, p=p, s=s, rho=rho, intercept=icpt)
    eng = check_against_brute(stats, s, lam, r, R=10, exact_blocks=exact_blocks)
    if not exact_blocks:
        assert eng.source._curvature is not None and np.all(eng.source._curvature > 0)


def test_curvature_is_a_certified_diagonal_under_the_gram_matrix():
    from dpstats.bss.gram import candidate_curvature

    for seed, icpt in [(0, False), (1, True)]:
        stats, _, _ = instance(seed, n=40, p=12, rho=0.8, intercept=icpt)
        G, offset, lam = np.asarray(stats.G), int(icpt), 1e-3
        d = candidate_curvature(G, offset, lam)
        A = G + np.diag(np.r_[np.full(offset, lam), -d])
        assert np.linalg.eigvalsh(A)[0] >= -1e-9 * np.abs(G).max()
        assert np.all(d > 0)
        # at most a few percent below the largest scalar multiple of diag(G~) that stays PSD
        bigger = candidate_curvature(G, offset, lam) * 1.1
        B = G + np.diag(np.r_[np.full(offset, lam), -bigger])
        assert np.linalg.eigvalsh(B)[0] < 0
    # fewer rows than columns: no curvature
    stats, _, _ = instance(2, n=8, p=12)
    assert not np.any(candidate_curvature(np.asarray(stats.G), 0, 1e-3) > 0)
    # degenerate data (after the charge) give no shift, never an error: a zero Gram matrix, a
    # singular forced block at ridge 0, a constant (zero-variance) candidate column
    assert not np.any(candidate_curvature(np.zeros((3, 3)), 1, 0.0))
    G = np.eye(4) * 5.0
    G[0, 0] = 0.0
    assert not np.any(candidate_curvature(G, 1, 0.0))
    G[0, 0], G[2, 2] = 5.0, 0.0
    assert not np.any(candidate_curvature(G, 1, 1e-3))


def test_matrix_free_equals_gram():
    stats, Xf, y = instance(8, n=80, p=12, s=3, intercept=True)
    g, m = GramSource(stats, 2.0, 1.1), MatrixFreeSource(Xf, y, 2.0, 1.1, intercept=True)
    sup = np.array([0, 2, 5, 9])
    a = swap_neighbour_values(g, sup, [1, 2, 3], [1, 3, 4, 6])
    b = swap_neighbour_values(m, sup, [1, 2, 3], [1, 3, 4, 6])
    assert np.allclose(a[2], b[2], rtol=1e-10)
    # against the canonical objective
    obj = RidgeBallObjective(stats, 2.0, 1.1)
    full = np.broadcast_to(sup, (a[0].size, 4)).copy()
    full[np.arange(a[0].size), a[0]] = a[1]
    assert np.allclose(obj.values(full), a[2], rtol=1e-10)
    e1 = OuterApproximationEngine(g, 3, 1e-6).top(5)
    e2 = OuterApproximationEngine(m, 3, 1e-6).top(5)
    assert e1.supports == e2.supports


def test_time_limit_raises():
    stats, _, _ = instance(9, n=200, p=40, s=5, snr=0.2)
    eng = OuterApproximationEngine.from_stats(stats, 5, 0.1, 1.1, 1e-5, time_limit=0.05)
    with pytest.raises(SolverError, match="time_limit"):
        eng.best()
        eng.top(50)
        eng.mistakes()


def test_needs_positive_ridge():
    stats, _, _ = instance(10)
    with pytest.raises(InvalidArgumentError):
        OuterApproximationEngine.from_stats(stats, 3, 0.0, 1.0, 1e-6)


@pytest.mark.parametrize("bad", ["bound_too_high", "stuck", "unreliable", "status"])
def test_inconsistent_solver_output_falls_back_to_scoring_every_support(bad):
    """CBC (cbcbox 2.927) can report a bound above a feasible support's value, or return a
    support that already carries a cut with a bound below it, and CBC (cbcbox 2.935) a
    solution outside the binaries' bounds; a status other than optimal or infeasible before
    the time limit (an error) is the same kind of answer.  The engine then certifies by
    scoring every feasible support (before, a status raised a SolverError after the charge),
    and its answers equal brute force."""
    stats, _, _ = instance(3, p=9, s=3, intercept=True)
    lam, r = 3.0, 1.1
    sups, vals, _ = brute(stats, 3, lam, r)
    worst = tuple(int(j) for j in sups[np.argmax(vals)])  # a support far from optimal
    answers = []

    class BrokenCbc(checked_cbc.CheckedCbc):
        """CBC as it misbehaved, through the engine's declared solver setting."""

        def solve(self, m, z, **kwargs):
            answer = super().solve(m, z, **kwargs)
            answers.append(answer)
            if bad == "unreliable":
                raise checked_cbc.UnreliableSolve(kwargs.get("label", "MILP"))
            if bad == "status":
                return dataclasses.replace(answer, status="ERROR", solutions=[])
            if bad == "bound_too_high":
                return dataclasses.replace(answer, bound=answer.bound + 1e3, solutions=[])
            # stuck: the same support again and again (it carries a cut after the first
            # round), with a bound far below the target
            return dataclasses.replace(answer, bound=answer.bound - 1e3, solutions=[worst])

    settings = engine_module.EngineSettings(exact_blocks=False, milp_solver=BrokenCbc)  # the MILP certifies
    eng = OuterApproximationEngine.from_stats(stats, 3, lam, r, 1e-6, settings=settings)
    best = eng.best()
    assert tuple(best.support) == tuple(int(j) for j in sups[np.argmin(vals)])
    assert best.value == pytest.approx(vals.min(), rel=1e-10)
    assert best.lower_bound <= vals.min() + 1e-9
    assert answers  # the MILP ran (and misbehaved) before the fallback
    assert any("enumerated_fallback" in e for e in eng.stats.log if isinstance(e, dict))


def test_solutions_outside_the_binary_bounds_are_never_used():
    """A MILP from the fair data's hinge top-R query (30 binaries, s = 3, ten cuts) on which
    CBC (cbcbox 2.935) with preprocess=0 reports "optimal" with one binary at 2 and a bound
    far below the true minimum.  The engine checks every reported solution, re-solves with
    preprocessing toggled, and returns the true minimiser (brute force over C(30, 3))."""
    import itertools

    import mip

    fixture = np.load(Path(__file__).parent / "data" / "cbc_binary_at_two.npz")
    A, sense, rhs = fixture["A"], fixture["sense"], fixture["rhs"]
    p, s = A.shape[1] - 1, 3
    # brute force: eta's smallest feasible value at each support
    best, arg = math.inf, None
    for sup in itertools.combinations(range(p), s):
        x = np.zeros(p)
        x[list(sup)] = 1.0
        if x @ A[1, :p] > rhs[1] + 1e-9:
            continue
        eta = max((rhs[k] - A[k, :p] @ x) / A[k, p] for k in range(2, A.shape[0]))
        if eta < best:
            best, arg = eta, sup
    m = mip.Model(sense=mip.MINIMIZE, solver_name=mip.CBC)
    m.verbose = 0
    z = [m.add_var(var_type=mip.BINARY) for _ in range(p)]
    eta = m.add_var(lb=-mip.INF)
    m.objective = mip.minimize(eta)
    m += mip.xsum(z) == s
    m += mip.xsum(z[j] for j in np.nonzero(A[1, :p])[0]) <= rhs[1]
    for k in range(2, A.shape[0]):
        m.add_constr(mip.LinExpr(variables=z + [eta], coeffs=list(A[k]), const=-rhs[k], sense=str(sense[k])))
    solver = checked_cbc.CheckedCbc(s, cbc_settings={"cuts": 0, "preprocess": 0}, gap_abs=float(fixture["gap_abs"]))
    solver.configure(m)
    answer = solver.solve(m, z, label="fixture")
    assert answer.status == "optimal"
    lb, sols = answer.bound, answer.solutions
    assert sols[0] == arg
    assert best - float(fixture["gap_abs"]) - 1e-9 <= lb <= best + 1e-9


@pytest.mark.parametrize("centre", [False, True])
def test_matrix_free_column_cache_returns_the_exact_cross_products(centre):
    from dpstats.bss.gram import MatrixFreeSource

    rng = np.random.default_rng(8)
    X, y = rng.normal(size=(60, 40)), rng.normal(size=60)
    src = MatrixFreeSource(X, y, 1.0, 1.0, centre=centre)
    src._max_columns = 5  # force evictions
    Xc = X - X.mean(axis=0) if centre else X
    G = Xc.T @ Xc
    for cols in ([1, 2, 3], [3, 4, 5, 6, 7, 8], [2, 9, 1], [39, 0, 39], [1, 2, 3]):
        np.testing.assert_allclose(src.cross(cols), G[:, cols], rtol=1e-12, atol=1e-10)
    assert len(src._columns) <= 5


def test_wide_call_never_forms_the_full_gram_matrix(monkeypatch):
    """Matrix-free designs: neither the engine nor the curator's diagnostics build p x p statistics
    (the fit diagnostics once did, 20 GB at p = 5 x 10^4)."""
    import pandas as pd

    import dpstats
    from dpstats.bss.objective import SufficientStats
    from dpstats.bss.top_r import MATRIX_FREE_ABOVE

    real_centred, real_plain = SufficientStats.centred_from_arrays.__func__, SufficientStats.from_arrays.__func__

    def guard(real):
        def wrapped(cls, X, *a, **kw):
            assert np.asarray(X).shape[1] <= MATRIX_FREE_ABOVE, "p x p statistics on a matrix-free design"
            return real(cls, X, *a, **kw)
        return classmethod(wrapped)

    monkeypatch.setattr(SufficientStats, "centred_from_arrays", guard(real_centred))
    monkeypatch.setattr(SufficientStats, "from_arrays", guard(real_plain))
    rng = np.random.default_rng(1)
    p = MATRIX_FREE_ABOVE + 200
    X = rng.uniform(-1, 1, size=(200, p))
    df = pd.DataFrame(X, columns=[f"x{j}" for j in range(p)])
    df.insert(0, "y", np.clip(0.6 * X[:, 0] - 0.5 * X[:, 1] + 0.1 * rng.normal(size=200), -1, 1))
    # the engine (the cost rule would score all C(3200, 2) supports, forming the statistics itself)
    fit = dpstats.dp_select("y ~ .", df, method="top_r", epsilon=1.0, s=2, bounds=(1, 1), R=5, random_state=1,
                            max_enumerate=1)
    assert "radius_active_at_best" in fit.curator


def test_blas_thread_policy_changes_no_certificate():
    """EngineSettings.blas_one_thread (the default) runs the queries on one BLAS thread: same lists and blocks."""
    from threadpoolctl import threadpool_info

    stats, _, _ = instance(3, p=14, s=3, rho=0.6, snr=2.0, intercept=True)
    seen = []

    class Spy(OuterApproximationEngine):
        def _top(self, R):
            seen.append(max(i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"))
            return super()._top(R)

    out = []
    for one in (True, False):
        eng = Spy.from_stats(stats, 3, 2.0, 1.0, 1e-6, blas_one_thread=one)
        top, blocks = eng.top(6), eng.mistakes()
        out.append((top.supports, top.values.tolist(), [(c.support, c.value) for c in blocks]))
    assert out[0] == out[1]
    assert seen[0] == 1
