"""Bounds on smaller sizes' best values from one support's columns (:mod:`dpstats.bss.size_bounds`,
:meth:`FullModelBound.removal`), against brute force over every support of every size."""
import math

import numpy as np
import pytest

from dpstats.bss.blocks import BlockSearch, BlockSearchSettings
from dpstats.bss.engine import EngineSettings, OuterApproximationEngine
from dpstats.bss.full_model_bound import full_model_bound
from dpstats.bss.gram import GramSource

from test_engine import brute, instance

CASES = [
    # seed, n, p, s, rho, snr, lam, r, intercept
    (1, 80, 10, 5, 0.1, 10.0, 1e-3, 50.0, True),  # strong signal, loose ball: the bounds meet
    (2, 80, 10, 5, 0.5, 2.0, 1e-2, 1.1, False),
    (3, 60, 9, 4, 0.8, 1.0, 1e-3, 0.6, True),  # strong correlation, the ball binding
    (4, 80, 11, 6, 0.3, 0.2, 0.5, 1.1, False),  # a weak signal: outside columns win
]


def oracle(case):
    seed, n, p, s, rho, snr, lam, r, icpt = case
    stats, _, _ = instance(seed, n=n, p=p, s=s, rho=rho, snr=snr, intercept=icpt)
    every = {k: brute(stats, k, lam, r)[:2] for k in range(1, p + 1)}
    return stats, every


def anchors(case, every):
    """The best support of size s, a random set of s + 1 columns and the best support of size s - 2
    (candidate indices)."""
    seed, _, p, s = case[:4]
    best = lambda k: every[k][0][int(np.argmin(every[k][1]))]  # noqa: E731
    return [best(s), np.sort(np.random.default_rng(seed).choice(p, size=s + 1, replace=False)), best(s - 2)]


def close(value):
    return 1e-9 * (1.0 + abs(value))


def anchored(case, which):
    """(GramSource at the case's ridge and radius, the full anchor of ``anchors``' entry ``which``, offset)."""
    stats, every = oracle(case)
    lam, r, icpt = case[6], case[7], case[8]
    offset = 1 if icpt else 0
    A = anchors(case, every)[which]
    return GramSource(stats, lam, r), np.r_[np.arange(offset), np.asarray(A) + offset], offset


@pytest.mark.parametrize("case", CASES)
def test_full_model_removal_bound_holds_for_every_support_leaving_out_d_columns(case):
    """FullModelBound.removal(d) <= R(S) for every support S (every size) leaving out at least d of the
    anchor's columns; never below the separable prefix bound, and above it somewhere (the exact Schur
    form of the removed columns, not the 1 / lambda_max of the separable one)."""
    stats, every = oracle(case)
    lam, r, icpt = case[6], case[7], case[8]
    offset = 1 if icpt else 0
    sharper = False
    for A in anchors(case, every):
        bound = full_model_bound(GramSource(stats, lam, r), np.asarray(A) + offset, lam, 0.0)
        for d in range(0, len(A) + 2):
            value = bound.removal(d)
            if d > len(A):
                assert value == math.inf
                continue
            separable = bound.prefix(np.zeros(0, dtype=np.int64), np.arange(len(A)), d) if d else bound.base
            assert value >= separable - close(separable)
            sharper |= value > separable + 1e-6 * (1.0 + abs(separable))
            for k, (sups, vals) in every.items():
                left_out = np.array([len(set(A) - set(row)) for row in sups.tolist()])
                if np.any(left_out >= d):
                    smallest = float(vals[left_out >= d].min())
                    assert value <= smallest + close(smallest), (list(A), d, k)
    assert sharper


@pytest.mark.parametrize("case", CASES)
def test_size_bounds_hold_against_every_support_of_every_smaller_size(case):
    """size_bounds(A): lower <= the best value of size k <= upper, and upper is the best value among
    the k-subsets of A, for k < |A|; with the best support of size s on the strong case, the two meet
    (every smaller size known without a certificate of its own)."""
    from dpstats.bss.size_bounds import size_bounds

    stats, every = oracle(case)
    p, lam, r, icpt = case[2], case[6], case[7], case[8]
    offset = 1 if icpt else 0
    src = GramSource(stats, lam, r)
    for a, A in enumerate(anchors(case, every)):
        anchor = np.r_[np.arange(offset), np.asarray(A) + offset]
        obj, local = src.local_objective(anchor[None, :])
        own = float(obj.solve(local[0]).mu)  # the anchor's ball multiplier (0 inside the ball)
        for mu, full_on in ((0.0, True), (0.0, False), (own, True), (2.0, True)):
            floor = BlockSearch(src, anchor, offset, 1, mu, BlockSearchSettings()).floor()
            full = full_model_bound(src, anchor[offset:], lam + mu, mu * r * r) if full_on else None
            bounds = size_bounds(src, anchor, offset, range(0, p + 2), floor, full, mu)
            assert set(bounds) == set(range(1, len(A)))
            for k, (low, high) in bounds.items():
                sups, vals = every[k]
                best = float(vals.min())
                inside = np.array([set(row) <= set(A) for row in sups.tolist()])
                assert low <= best + close(best), (list(A), k, low, best)
                assert high == pytest.approx(float(vals[inside].min()), rel=1e-9)
                if case[0] == 1 and a == 0 and mu == own:  # strong signal, the best support of size s
                    assert low >= best - 1e-6 * (1.0 + abs(best)), (k, low, best)


def test_size_bounds_use_the_gain_of_outside_columns_where_they_win():
    """On the weak case with a random anchor, the best support of some smaller size holds outside
    columns: there the lower bound comes from the bound on what outside columns add (below the
    subsets' best), and it still holds."""
    from dpstats.bss.size_bounds import size_bounds

    case = CASES[3]
    stats, every = oracle(case)
    lam, r = case[6], case[7]
    src = GramSource(stats, lam, r)
    A = anchors(case, every)[1]
    floor = BlockSearch(src, np.asarray(A), 0, 1, 0.0, BlockSearchSettings()).floor()
    bounds = size_bounds(src, np.asarray(A), 0, range(1, len(A)), floor, full_model_bound(src, np.asarray(A), lam, 0.0))
    below_subsets = 0
    for k, (low, high) in bounds.items():
        best = float(every[k][1].min())
        assert low <= best + close(best)
        below_subsets += best < high - 1e-9 and low < high
    assert below_subsets > 0


@pytest.mark.parametrize("case", CASES[:2])
def test_engine_size_bounds_come_from_the_certified_support(case):
    """OuterApproximationEngine.size_bounds: nothing before the best support is certified or with the
    setting off; then (lower, upper) for every smaller size, widened by the evaluation error, holding
    against brute force; on the strong case every smaller size pinned down."""
    stats, every = oracle(case)
    p, s, lam, r = case[2], case[3], case[6], case[7]
    best = {k: float(every[k][1].min()) for k in every}
    for on in (True, False):
        eng = OuterApproximationEngine.from_stats(stats, s, lam, r, 1e-6, settings=EngineSettings(size_bounds=on))
        assert eng.size_bounds(range(1, p + 1)) == {}
        eng.top(1)
        found = eng.size_bounds(range(1, p + 1))
        if not on:
            assert found == {}
            continue
        assert set(found) == set(range(1, s))
        for k, (low, high) in found.items():
            assert low <= best[k] - eng.tau_eval + 1e-12
            assert best[k] <= high < math.inf
            if case[0] == 1:
                assert low >= best[k] - 1e-6 * (1.0 + best[k])


def test_size_bounds_at_the_anchors_ball_multiplier_where_the_ball_binds():
    """Where the ball binds (radius 0.6), the bounds at the anchor's own ball multiplier lie above the
    ones with the ball dropped (mu = 0) for some smaller size, and both hold (brute force)."""
    from dpstats.bss.size_bounds import size_bounds

    case = CASES[2]
    stats, every = oracle(case)
    s, lam, r = case[3], case[6], case[7]
    src = GramSource(stats, lam, r)
    A = anchors(case, every)[0]
    anchor = np.r_[0, np.asarray(A) + 1]
    obj, local = src.local_objective(anchor[None, :])
    own = float(obj.solve(local[0]).mu)
    assert own > 0
    found = {}
    for mu in (0.0, own):
        floor = BlockSearch(src, anchor, 1, 1, mu, BlockSearchSettings()).floor()
        full = full_model_bound(src, A + 1, lam + mu, mu * r * r)
        found[mu] = size_bounds(src, anchor, 1, range(1, s), floor, full, mu)
        for k, (low, _) in found[mu].items():
            best = float(every[k][1].min())
            assert low <= best + close(best)
    assert any(found[own][k][0] > found[0.0][k][0] + 1e-6 for k in found[own])


@pytest.mark.parametrize("case", CASES)
def test_screen_bounds_every_subsets_correlations(case, monkeypatch):
    """AnchorBounds' screens: for every subset T of the anchor (forced columns added), the largest
    alpha_b + beta_b |b_A - b_T| over the columns kept, and the largest alpha_b + kappa_b s(T), are each at
    least the largest |u_b(T)| over all outside columns, u_b(T) = c_b - G_bT b_T at the ridge lam + mu,
    computed directly by numpy; s(T) is at least ((b_A - b_T)' K_A (b_A - b_T))^1/2, and every
    alpha_b + kappa_b s(T) at least |u_b(T)| (every column's line); and the leaning columns' list (one
    column bounded by its line, the others computed) lies entrywise above the subset's own largest u_b^2 (and
    u_b^2 / d_b), equal to the leaning columns' own values ranked with that line (and somewhere led by them)."""
    from itertools import combinations

    from dpstats.bss import anchor_subsets
    from dpstats.bss.size_bounds import AnchorBounds

    stats, every = oracle(case)
    lam, r, icpt = case[6], case[7], case[8]
    offset = 1 if icpt else 0
    src = GramSource(stats, lam, r)
    G, c = np.asarray(stats.G), np.asarray(stats.c)
    A = anchors(case, every)[0]
    anchor = np.r_[np.arange(offset), np.asarray(A) + offset]
    O = np.setdiff1d(np.arange(offset, G.shape[0]), anchor)
    monkeypatch.setattr(anchor_subsets, "LEANING_COLUMNS", O.size - 1)  # one column bounded by its line, the others computed
    for mu in (0.0, 1.5):
        bounds = AnchorBounds(src, anchor, offset, lam + mu, None, mu).subsets
        alpha, beta = bounds.screen_lines()
        a, kappa = bounds.kappa_lines()
        a_every, kappa_every = bounds.kappa_lines(every=True)
        d = bounds.schur.anchor_diagonal()
        assert alpha.size <= O.size and a.size <= O.size and a_every.size == O.size
        K_A = G[np.ix_(anchor, anchor)] + (lam + mu) * np.eye(anchor.size)
        b_A = np.linalg.solve(K_A, c[anchor])
        met = 0
        for t in range(0, len(A)):
            _, moved, spread = bounds.fits_at(t)
            rows = np.arange(spread.size)
            listed = {scaled: bounds.leaning_top(t, rows, scaled)[rows] for scaled in (False, True)}
            for row, sub in enumerate(combinations(range(len(A)), t)):
                T = np.r_[anchor[:offset], np.asarray(A)[list(sub)] + offset].astype(np.int64)
                b = np.linalg.solve(G[np.ix_(T, T)] + (lam + mu) * np.eye(T.size), c[T]) if T.size else np.zeros(0)
                u = np.abs(c[O] - G[np.ix_(O, T)] @ b)
                assert float(np.max(alpha + beta * moved[row])) >= float(u.max()) * (1 - 1e-12)
                assert float(np.max(a + kappa * spread[row])) >= float(u.max()) * (1 - 1e-12)
                delta = b_A.copy()
                delta[np.searchsorted(anchor, T)] -= b
                assert spread[row] ** 2 >= float(delta @ K_A @ delta) * (1 - 1e-9) - 1e-9
                assert np.all(a_every + kappa_every * spread[row] >= u * (1 - 1e-12))
                for scaled, x in ((False, u ** 2), (True, u ** 2 / d)):
                    exact = np.sort(x)[::-1][:listed[scaled].shape[1]]
                    assert np.all(listed[scaled][row] >= exact * (1 - 1e-12) - 1e-12), (t, row, scaled)
                    # and no looser than its definition: the leaning columns' own, with the other column's line
                    leaning = bounds.leaning_of[(t, scaled)][0]
                    rest = np.setdiff1d(np.arange(O.size), leaning)
                    line = (a_every + kappa_every * spread[row]) ** 2 / (d if scaled else 1.0)
                    built = np.sort(np.r_[x[leaning], line[rest].max()])[::-1][:listed[scaled].shape[1]]
                    np.testing.assert_allclose(listed[scaled][row], built, rtol=1e-9, atol=1e-9 * float(built[0]))
                    met += bool(x[leaning].max() >= line[rest].max())
        assert met > 0


@pytest.mark.parametrize("case", CASES)
def test_size_bounds_with_a_need_hold_and_reach_it_where_the_tight_bounds_do(case):
    """bounds(k, need): still a lower bound on the size's best value (brute force), the same upper end, and
    at least min(need, the tight lower end): asking less never loses a decision the tight bounds give."""
    from dpstats.bss.size_bounds import AnchorBounds

    stats, every = oracle(case)
    lam, r, icpt = case[6], case[7], case[8]
    offset = 1 if icpt else 0
    src = GramSource(stats, lam, r)
    reached = missed = 0
    for A in anchors(case, every):
        anchor = np.r_[np.arange(offset), np.asarray(A) + offset]
        floor = BlockSearch(src, anchor, offset, 1, 0.0, BlockSearchSettings()).floor()
        full = full_model_bound(src, anchor[offset:], lam, 0.0)
        for k in range(1, len(A)):
            tight = AnchorBounds(src, anchor, offset, floor, full).bounds(k)
            best = float(every[k][1].min())
            for need in (tight[0] - 1.0, 0.5 * (tight[0] + best), best, best + 0.5, tight[1] + 1.0):
                low, high = AnchorBounds(src, anchor, offset, floor, full).bounds(k, need)
                assert high == tight[1]
                assert low <= best + close(best), (list(A), k, need, low, best)
                assert low >= min(need, tight[0]) - close(need), (list(A), k, need, low, tight)
                reached += low >= need - close(need)
                missed += low < need - close(need)
    assert reached > 0 and missed > 0


def test_sizes_bounded_only_as_far_as_the_draw_needs_release_the_same(asked_needs):
    """The model-size stage first asks each size's bounds only for what would take it out of the draw
    (dpstats.bss.model_size.contender_need); the releases equal those of certifying every size, and the
    device is used (some size is bounded with a need and decided without its certificate)."""
    import dpstats

    asked = asked_needs
    for seed, eps in ((0, 10.0), (1, 20.0), (2, 50.0)):
        sim = dpstats.simulate(400, 30, 6, snr=5, random_state=seed)
        kwargs = dict(method="top_r", epsilon=eps, s="auto", s_max=6, bounds=(3, 3), random_state=seed,
                      max_enumerate=1)
        lazy = dpstats.dp_select("y ~ .", sim.data, **kwargs)
        assert lazy.release() == dpstats.dp_select("y ~ .", sim.data, size_certify="all", **kwargs).release()
    assert any(need is not None for need in asked)


@pytest.mark.parametrize("case", CASES)
def test_smaller_size_list_is_a_certified_top_list_by_brute_force(case):
    """OuterApproximationEngine.smaller_size_list(k, R, tau): where it gives a list, its supports are the R
    best of size k up to the certificate's slack (every support outside it at least v_R - tau_mip, brute force
    over every support of size k), its values exact, its bound holding; on the strong case it gives one."""
    stats, every = oracle(case)
    s, lam, r = case[3], case[6], case[7]
    eng = OuterApproximationEngine.from_stats(stats, s, lam, r, 1e-6)
    eng.top(1)
    given = 0
    for k in range(1, s):
        sups, vals = every[k]
        for R in (1, 3, 10, 40):
            tau = 1e-6 + 2.0 * eng.tau_eval
            cert = eng.smaller_size_list(k, R, tau)
            if cert is None:
                continue
            given += 1
            listed = {tuple(sorted(x)) for x in cert.supports}
            assert len(listed) == R == len(cert.values)
            assert np.all(np.diff(cert.values) >= 0)
            exact = {tuple(sorted(int(j) for j in row)): float(v) for row, v in zip(sups.tolist(), vals)}
            for support, value in zip(cert.supports, cert.values):
                assert value == pytest.approx(exact[tuple(sorted(support))], rel=1e-9, abs=1e-9)
            outside = [v for key, v in exact.items() if key not in listed]
            if outside:
                assert min(outside) >= cert.lower_bound - close(cert.lower_bound)
            assert cert.lower_bound >= float(cert.values[-1]) - cert.tolerance - close(float(cert.values[-1]))
    if case[0] == 1:
        assert given > 0


def test_released_size_list_from_a_larger_size_releases_the_same(monkeypatch):
    """s='auto' with top_r: the released size's top-R list certified from the larger certified size's best
    support (no engine of its own) releases what certifying every size releases; the route is used."""
    import dpstats
    from dpstats.bss import engine as E

    used = []
    original = E.OuterApproximationEngine.smaller_size_list

    def recording(self, k, R, tolerance):
        cert = original(self, k, R, tolerance)
        used.append(cert is not None)
        return cert

    monkeypatch.setattr(E.OuterApproximationEngine, "smaller_size_list", recording)
    routed = 0
    for seed, eps in ((0, 20.0), (1, 50.0), (2, 10.0), (3, 30.0)):
        sim = dpstats.simulate(400, 30, 6, snr=5, random_state=seed)
        kwargs = dict(method="top_r", epsilon=eps, s="auto", s_max=7, bounds=(3, 3), random_state=seed,
                      max_enumerate=1, R=10)
        lazy = dpstats.dp_select("y ~ .", sim.data, **kwargs)
        every = dpstats.dp_select("y ~ .", sim.data, size_certify="all", **kwargs)
        assert lazy.release() == every.release(), (seed, eps)
        # the second stage's exact law: the same list, values and probabilities as the size's own engine gives
        listed, own = lazy.curator["top_supports"], every.curator["top_supports"]
        assert [row["support"] for row in listed] == [row["support"] for row in own]
        for a, b in zip(listed, own):
            assert a["objective"] == pytest.approx(b["objective"], rel=1e-9, abs=1e-9)
            assert a["probability"] == pytest.approx(b["probability"], rel=1e-6, abs=1e-12)
        routed += "best support of size" in str(lazy.curator.get("certificate", {}).get("path", ""))
    assert any(used) and routed > 0



def test_added_columns_bounds_with_scaled_gains_screen_and_search_against_brute_force(monkeypatch):
    """AnchorBounds._added_columns_bound(t, j, target) with every route on (the gains scaled by each
    column's Schur diagonal with gamma_j, the per-subset screen, the block search's superset test, and with
    the full model, its bound at each subset): at
    most the best value over the supports with exactly j columns outside the anchor and t inside it
    (brute force), for targets below, at and above that value; and over the cases both the screen and
    the search and the full model place some subset at its target (so the checks exercise them)."""
    from dpstats.bss import size_bounds as sb

    placed = {"screen": 0, "search": 0, "full": 0}
    screen, search, full_at = sb.AnchorBounds._screen_subsets, sb.AnchorBounds._search_below, sb.AnchorBounds._full_model_at

    def counting(route, original):
        def wrapped(self, *args):
            target, bound = args[-2:]
            before = int(np.sum(bound >= target))
            original(self, *args)
            placed[route] += int(np.sum(bound >= target)) - before
        return wrapped

    monkeypatch.setattr(sb.AnchorBounds, "_screen_subsets", counting("screen", screen))
    monkeypatch.setattr(sb.AnchorBounds, "_search_below", counting("search", search))
    monkeypatch.setattr(sb.AnchorBounds, "_full_model_at", counting("full", full_at))
    for case in CASES:
        stats, every = oracle(case)
        lam, r, icpt = case[6], case[7], case[8]
        offset = 1 if icpt else 0
        src = GramSource(stats, lam, r)
        for A in anchors(case, every):
            anchor = np.r_[np.arange(offset), np.asarray(A) + offset]
            obj, local = src.local_objective(anchor[None, :])
            own = float(obj.solve(local[0]).mu)
            for mu in (0.0, own):
                floor = BlockSearch(src, anchor, offset, 1, mu, BlockSearchSettings()).floor()
                full = full_model_bound(src, anchor[offset:], lam + mu, mu * r * r)
                for k in range(2, len(A)):
                    sups, vals = every[k]
                    outside = np.array([len(set(row) - set(A)) for row in sups.tolist()])
                    for j in range(1, k + 1):
                        if not np.any(outside == j):
                            continue
                        best = float(vals[outside == j].min())
                        for target in (best - 1.0, best, best + 0.5, best + 50.0):
                            for with_full in (None, full):
                                bounds = sb.AnchorBounds(src, anchor, offset, floor, with_full, mu,
                                                         search=BlockSearchSettings())
                                got = bounds._added_columns_bound(k - j, j, target)
                                assert got <= min(target, best) + close(best), (case, list(A), k, j, target, got, best)
    assert placed["screen"] > 0 and placed["search"] > 0 and placed["full"] > 0, placed


@pytest.mark.parametrize("case", CASES)
def test_gamma_bounds_every_scaled_schur_block_at_every_subset_of_the_anchor(case):
    """OutsideSchur.gamma(j) and searched_gamma(j) (through AnchorBounds) <= lambda_min(D^-1/2 Sch_BB(T) D^-1/2) for every j-set B of outside
    columns and every subset T of the anchor (D = diag of anchor_diagonal(), itself <= Sch_bb(T)),
    Sch(T) = G_OO + lam' I - G_OT (G_TT + lam' I)^-1 G_TO computed directly by numpy."""
    from itertools import combinations

    from dpstats.bss.size_bounds import AnchorBounds

    stats, every = oracle(case)
    lam, r, icpt = case[6], case[7], case[8]
    offset = 1 if icpt else 0
    src = GramSource(stats, lam, r)
    G = np.asarray(stats.G)
    raised = 0
    for A in anchors(case, every)[:2]:
        anchor = np.r_[np.arange(offset), np.asarray(A) + offset]
        O = np.setdiff1d(np.arange(offset, G.shape[0]), anchor)
        for mu in (0.0, 1.5):
            lam2 = lam + mu
            floor = BlockSearch(src, anchor, offset, 1, mu, BlockSearchSettings()).floor()
            bounds = AnchorBounds(src, anchor, offset, floor, None, mu)
            d = bounds.schur.anchor_diagonal()
            for t in range(0, len(A) + 1):
                for sub in combinations(range(len(A)), t):
                    T = np.r_[anchor[:offset], np.asarray(A)[list(sub)] + offset].astype(np.int64)
                    S = G[np.ix_(O, O)] + lam2 * np.eye(O.size)
                    if T.size:
                        S -= G[np.ix_(O, T)] @ np.linalg.solve(G[np.ix_(T, T)] + lam2 * np.eye(T.size), G[np.ix_(T, O)])
                    assert np.all(d <= np.diag(S) * (1 + 1e-12))
                    M = S / np.sqrt(np.outer(d, d))
                    for j in range(2, min(O.size, 5) + 1):
                        smallest = min(float(np.linalg.eigvalsh(M[np.ix_(B, B)])[0]) for B in combinations(range(O.size), j))
                        plain = bounds.schur.gamma(j)
                        assert plain <= smallest + 1e-12, (list(A), t, j)
                        # raised by the search over j-sets (later gamma(j) calls return the raised value)
                        searched = bounds.schur.searched_gamma(j)
                        assert searched <= smallest + 1e-12, (list(A), t, j)
                        raised += searched > plain + 1e-9
    assert raised > 0


def test_screen_places_no_subset_whose_correlations_are_not_finite(monkeypatch):
    """A correlation that came out NaN or inf (overflow on degenerate columns) counts as reaching any need:
    the per-subset screen then places no subset (a NaN compared false would have dropped the column)."""
    from dpstats.bss import size_bounds as sb
    from dpstats.bss.anchor_subsets import AnchorSubsets

    src, anchor, offset = anchored(CASES[1], 0)
    floor = BlockSearch(src, anchor, offset, 1, 0.0, BlockSearchSettings()).floor()
    original = AnchorSubsets.correlations
    for poison in (np.nan, np.inf):
        bounds = sb.AnchorBounds(src, anchor, offset, floor, None, 0.0)
        monkeypatch.setattr(AnchorSubsets, "correlations",
                            lambda self, T, fit=None, columns=None, p=poison: np.full_like(original(self, T, fit, columns), p))
        value = bounds.subsets.fits_at(1)[0]
        bound = np.full(value.size, -np.inf)
        bounds._screen_subsets(1, 2, float(value.min()) - 1e6, bound)  # a need every finite screen would meet
        assert np.all(bound == -np.inf)
        monkeypatch.setattr(AnchorSubsets, "correlations", original)
        bounds = sb.AnchorBounds(src, anchor, offset, floor, None, 0.0)
        bounds._screen_subsets(1, 2, float(value.min()) - 1e6, bound)
        assert np.all(bound > -np.inf)  # the same call with the real correlations places them


def test_size_bounds_read_the_clock_between_batches():
    """With the engine's clock (``check_time``), the bounds call it between batches of subsets and superset
    tests, so a time limit stops them inside a size, not only between sizes."""
    from dpstats.bss.size_bounds import AnchorBounds

    src, anchor, offset = anchored(CASES[3], 1)
    m = anchor.size - offset

    class Stop(Exception):
        pass

    calls = []

    def clock():
        calls.append(1)
        if len(calls) > 3:
            raise Stop

    bounds = AnchorBounds.at_anchor(src, anchor, offset, BlockSearchSettings(), check_time=clock)
    with pytest.raises(Stop):
        for k in range(1, m):
            bounds.bounds(k)
    calls.clear()
    quiet = AnchorBounds.at_anchor(src, anchor, offset, BlockSearchSettings(), check_time=lambda: calls.append(1))
    for k in range(1, m):
        quiet.bounds(k)
    assert len(calls) > 3


@pytest.mark.parametrize("lam", [1e-30, 1e-3, 1.0])
def test_size_bounds_on_degenerate_columns_raise_nothing_the_engine_does_not_catch(lam):
    """Duplicate, constant, huge and all-zero columns (what clipping leaves of bad data), at a ridge near 0:
    every route of the bounds (j >= 2 included: scaled gains, screen, superset test) returns or raises
    LinAlgError, which SmallerSizes.bounds turns into the size's own certificate; nothing else escapes
    after the charge."""
    from dpstats.bss.objective import SufficientStats
    from dpstats.bss.size_bounds import AnchorBounds

    _, X, y = instance(3, n=80, p=10, s=5)
    X = np.hstack([X, X[:, :1], np.ones((80, 1)), 1e12 * X[:, 1:2], np.zeros((80, 1))])
    src = GramSource(SufficientStats.from_arrays(X, y, False), lam, 1.1)
    for anchor in ([0, 1, 2, 3, 4], [0, 10, 11, 12, 13], [10, 11, 12, 13, 1]):
        try:
            bounds = AnchorBounds.at_anchor(src, np.array(anchor), 0, BlockSearchSettings())
            for k in range(1, 5):
                low, high = bounds.bounds(k)
                assert not (low > high + close(high))
                bounds.bounds(k, need=1e9)
                for j in range(2, k + 1):
                    bounds._added_columns_bound(k - j, j, 1e9)
        except np.linalg.LinAlgError:
            pass


def test_searched_gamma_and_full_model_at_subsets_on_non_finite_numbers():
    """A scaled Schur complement with a NaN or inf entry (overflow on degenerate columns) leaves gamma_j at
    Gershgorin's without a search, and a removal form that is not finite counts as 0 (the full model's base),
    so neither raises after the charge nor claims more than it shows."""
    from dpstats.bss.size_bounds import AnchorBounds

    src, anchor, offset = anchored(CASES[0], 0)
    floor = BlockSearch(src, anchor, offset, 1, 0.0, BlockSearchSettings()).floor()
    full = full_model_bound(src, anchor[offset:], CASES[0][6], 0.0)
    for poison in (np.nan, np.inf):
        bounds = AnchorBounds(src, anchor, offset, floor, full, 0.0)
        bounds.schur._form_scaled()
        bounds.schur._scaled = bounds.schur._scaled.copy()
        bounds.schur._scaled[0, 1] = bounds.schur._scaled[1, 0] = poison
        assert bounds.schur.searched_gamma(3) == bounds.schur.gamma(3)
        assert bounds.schur._subsets is False
        poisoned = full_model_bound(src, anchor[offset:], CASES[0][6], 0.0)
        poisoned.coef = poisoned.coef.copy()
        poisoned.coef[0] = poison
        values = poisoned.removal_values(np.array([[0, 1], [1, 2]]))
        assert values[0] == poisoned.base and np.isfinite(values[1])


@pytest.mark.parametrize("case", CASES)
def test_elimination_values_are_values_of_nested_supports_above_each_sizes_best(case):
    """elimination_values(source, anchor, offset): for each k < m the value of a support of k of the anchor's
    columns (so at least the size's best, brute force), each reached from the next larger one by removing the
    column that raises the value least (brute force over the one-column removals, the path rebuilt from the
    values), and not decreasing as columns are removed."""
    from dpstats.bss.size_bounds import elimination_values

    stats, every = oracle(case)
    equal = 0
    for which in range(3):
        src, A, offset = anchored(case, which)
        got = elimination_values(src, A, offset)
        m = A.size - offset
        assert sorted(got) == list(range(1, m))
        kept = list(A[offset:])
        previous = float(src.values(A[None, :])[0])
        for k in range(m - 1, 0, -1):
            trials = [np.r_[A[:offset], kept[:i] + kept[i + 1:]].astype(np.int64) for i in range(len(kept))]
            values = np.asarray(src.values(np.array(trials)), dtype=np.float64)
            assert got[k] == pytest.approx(float(values.min()), rel=1e-12, abs=1e-12)
            del kept[int(np.argmin(values))]
            assert got[k] >= previous - close(previous)
            previous = got[k]
            best = float(every[k][1].min())
            assert got[k] >= best - close(best)
            equal += got[k] <= best + 1e-9 * (1.0 + abs(best))
    assert equal > 0


@pytest.mark.parametrize("case", CASES)
def test_more_outside_columns_bounded_by_enumeration_only_raise_the_bounds(case, monkeypatch):
    """MAX_ADDED, the most outside columns bounded by enumeration (beyond, the full model's bound, which fits
    every outside column at once): with fewer the bounds still hold but are never higher, and lower somewhere
    (the supports with many or all of their columns outside the anchor)."""
    from dpstats.bss import size_bounds as sb

    stats, every = oracle(case)
    lam, r, icpt = case[6], case[7], case[8]
    offset = 1 if icpt else 0
    src = GramSource(stats, lam, r)
    lowered = 0
    for A in anchors(case, every):
        anchor = np.r_[np.arange(offset), np.asarray(A) + offset]
        floor = BlockSearch(src, anchor, offset, 1, 0.0, BlockSearchSettings()).floor()
        full = full_model_bound(src, anchor[offset:], lam, 0.0)
        found = {}
        for most in (1, sb.MAX_ADDED):
            monkeypatch.setattr(sb, "MAX_ADDED", most)
            found[most] = sb.size_bounds(src, anchor, offset, range(1, len(A)), floor, full, 0.0)
        for k, (low, _) in found[sb.MAX_ADDED].items():
            best = float(every[k][1].min())
            assert found[1][k][0] <= low + close(low) and low <= best + close(best), (list(A), k)
            lowered += found[1][k][0] < low - 1e-6 * (1.0 + abs(low))
    if case[0] == 4:  # the weak signal: outside columns win, and the full model's bound is below the sizes'
        assert lowered > 0


@pytest.mark.parametrize("case", CASES)
def test_full_model_bound_skipped_only_where_it_cannot_reach(case, monkeypatch):
    """FullModelBound.removal_above(d) is at least removal(d) (one removed set's form against the smallest);
    the size bounds that skip the full model's enumeration where that falls short equal those that always
    compute it, need or not."""
    from dpstats.bss.full_model_bound import FullModelBound
    from dpstats.bss.size_bounds import AnchorBounds

    stats, every = oracle(case)
    lam, r, icpt = case[6], case[7], case[8]
    offset = 1 if icpt else 0
    src = GramSource(stats, lam, r)
    skipped = 0
    original = FullModelBound.removal_above
    for A in anchors(case, every):
        anchor = np.r_[np.arange(offset), np.asarray(A) + offset]
        floor = BlockSearch(src, anchor, offset, 1, 0.0, BlockSearchSettings()).floor()
        full = full_model_bound(src, anchor[offset:], lam, 0.0)
        for d in range(0, len(A) + 2):
            above, value = full.removal_above(d), full.removal(d)
            assert above >= value - (close(value) if math.isfinite(value) else 0.0), (list(A), d)
        found = {}
        for always in (False, True):
            monkeypatch.setattr(FullModelBound, "removal_above", (lambda self, d: math.inf) if always else original)
            bounds = AnchorBounds(src, anchor, offset, floor, full, 0.0)
            found[always] = [bounds.bounds(k, need) for k in range(1, len(A))
                             for need in (None, float(every[k][1].min()) - 1.0)]
            skipped += len(bounds._removal) if always else -len(bounds._removal)
        assert found[False] == found[True], list(A)
    assert skipped > 0
